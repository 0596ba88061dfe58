"""The Thrift Server's users and their passwords (issue 25).

Three users per instance, each with a role that ``infra/thrift/org/gridlake/thrift/AccessRules``
enforces on every statement:

========  ======  ===================================================================
user      role    may
========  ======  ===================================================================
gridlake  writer  everything the pipeline needs (no SQL on files, no reflection)
operator  reader  read every table and view; no writes, no settings
superset  views   read the ``grid`` views and ``gold`` tables only (Superset's login)
========  ======  ===================================================================

``ensure`` generates a password per user once, into ``secrets/thrift_users/<user>.password``
(0600, in a 0700 folder), and writes the server's user file (``thrift/users``, 0600): one line
per user with a fresh salt and a PBKDF2-SHA256 hash, never a password. A password set in the
environment (``GRIDLAKE_THRIFT_<USER>_PASSWORD``) wins over the file, for sites that inject
secrets. Only paths are printed.

    python -m gridlake.serving.thrift_auth ensure
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import sys
from pathlib import Path
from typing import Any

from gridlake.settings import Settings, get_settings

ROLES: dict[str, str] = {"gridlake": "writer", "operator": "reader", "superset": "views"}
ITERATIONS = 20_000  # per log-in: Superset opens a connection per query (tens of ms, not seconds)


def password_file(settings: Settings, user: str) -> Path:
    return settings.state / "secrets" / "thrift_users" / f"{user}.password"


def users_file(settings: Settings) -> Path:
    return settings.state / "thrift" / "users"


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def password(user: str, settings: Settings | None = None) -> str:
    """The user's password: the environment's, else the instance's secret file."""
    if user not in ROLES:
        raise KeyError(f"no Thrift Server user {user!r} (users: {', '.join(ROLES)})")
    env = os.environ.get(f"GRIDLAKE_THRIFT_{user.upper()}_PASSWORD")
    if env:
        return env
    settings = settings or get_settings()
    path = password_file(settings, user)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no password yet (infra/thrift.sh start generates it)")
    return path.read_text(encoding="utf-8").strip()


def hash_line(user: str, role: str, pw: str, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", pw.encode(), salt, ITERATIONS, 32)
    b64 = base64.b64encode
    return f"{user} {role} {ITERATIONS} {b64(salt).decode()} {b64(digest).decode()}"


def ensure(settings: Settings | None = None) -> Path:
    """Generate missing passwords; (re)write the server's user file. Returns its path."""
    settings = settings or get_settings()
    lines = ["# user role iterations salt pbkdf2-sha256 (written by gridlake.serving.thrift_auth)"]
    for user, role in ROLES.items():
        path = password_file(settings, user)
        if not os.environ.get(f"GRIDLAKE_THRIFT_{user.upper()}_PASSWORD") and not path.is_file():
            _write_private(path, secrets.token_urlsafe(24) + "\n")
        lines.append(hash_line(user, role, password(user, settings)))
    out = users_file(settings)
    _write_private(out, "\n".join(lines) + "\n")
    return out


def connect(
    user: str = "operator", settings: Settings | None = None, **kwargs: Any
) -> Any:  # pyhive.hive.Connection
    """A PyHive connection to the instance's Thrift Server as ``user``."""
    from pyhive import hive

    settings = settings or get_settings()
    return hive.connect(
        host="127.0.0.1",
        port=settings.thrift_port,
        username=user,
        password=password(user, settings),
        auth="CUSTOM",
        **kwargs,
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["ensure"]:
        print("usage: python -m gridlake.serving.thrift_auth ensure", file=sys.stderr)
        return 2
    settings = get_settings()
    out = ensure(settings)
    where = password_file(settings, "x").parent
    print(f"thrift users: {out}; passwords in {where}/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
