"""Who may do what on Kafka (issue 25): SASL/SCRAM-SHA-512 principals and their ACLs.

``infra/kafka.sh`` runs the brokers with one SASL listener on loopback (clients authenticate with
SCRAM-SHA-512; the brokers themselves and the set-up below with PLAIN as ``admin``, whose password
only the 0600 ``server.properties`` holds) and Kafka's ``StandardAuthorizer``: without an ACL
nothing is allowed. The principals, each with a password generated once per instance into
``secrets/kafka/<user>.password`` (0600):

=========  ==========================================================================
principal  may
=========  ==========================================================================
admin      everything (super user): topics, ACLs, the tests' checks
jobs       write ``grid.jobs`` and ``grid.accounting_summaries`` (+ ``grid.deadletter``)
nodes      write ``grid.nodes`` (+ ``grid.deadletter``): the node agents
network    write ``grid.network`` (+ ``grid.deadletter``)
ingest     read every ``grid.*`` topic (Spark's Kafka source; its consumer groups)
=========  ==========================================================================

``gridlake publish`` signs in as the producer of the topic it writes, ``gridlake agent`` as
``nodes``, ``gridlake ingest`` as ``ingest``; ``GRIDLAKE_KAFKA_USER`` with
``GRIDLAKE_KAFKA_PASSWORD`` (or ``GRIDLAKE_KAFKA_PASSWORD_FILE``, a 0600 file) sign a process's
Kafka clients in as someone else (a site's own credentials, a site's own Kafka).
``GRIDLAKE_KAFKA_SECURITY=none`` is for a site's own Kafka without authentication (plaintext, no
credentials sent).

    python -m gridlake.sources.kafka_auth passwords   # generate what is missing (kafka.sh)
    python -m gridlake.sources.kafka_auth setup       # SCRAM users and ACLs (brokers up)
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Any

from gridlake.settings import TOPICS, Settings, get_settings

MECHANISM = "SCRAM-SHA-512"
USERS = ("admin", "jobs", "nodes", "network", "ingest")
# The principal that writes each source topic; every producer may also write the dead letters.
PRODUCER_OF = {
    TOPICS["jobs"]: "jobs",
    TOPICS["accounting_summaries"]: "jobs",
    TOPICS["nodes"]: "nodes",
    TOPICS["network"]: "network",
}
TOPIC_PREFIX = "grid."
# Spark's Kafka source names its consumer groups spark-kafka-source-<uuid>-... (groupIdPrefix)
SPARK_GROUP_PREFIX = "spark-kafka-source"
SCRAM_ITERATIONS = 8192


class KafkaAuthError(RuntimeError):
    """Kafka refused a sign-in or an operation: what, for whom, and where the password is."""


def secure(settings: Settings) -> bool:
    security = os.environ.get("GRIDLAKE_KAFKA_SECURITY", "sasl") or "sasl"
    if security not in ("sasl", "none"):
        raise ValueError(f"GRIDLAKE_KAFKA_SECURITY={security!r}: one of sasl, none")
    return security == "sasl"


def password_file(settings: Settings, user: str) -> Path:
    return settings.state / "secrets" / "kafka" / f"{user}.password"


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def ensure_passwords(settings: Settings) -> None:
    """Generate the password of every principal that has none yet (0600 files)."""
    for user in USERS:
        path = password_file(settings, user)
        if not path.is_file():
            _write_private(path, secrets.token_urlsafe(24) + "\n")


def password(settings: Settings, user: str) -> str:
    path = password_file(settings, user)
    if not path.is_file():
        raise KafkaAuthError(f"{path}: no Kafka password yet (infra/kafka.sh start makes it)")
    return path.read_text(encoding="utf-8").strip()


def credentials(settings: Settings, default_user: str) -> tuple[str, str, str]:
    """(user, password, where it came from) for a client: the environment's, else the
    instance's password of ``default_user``."""
    user = os.environ.get("GRIDLAKE_KAFKA_USER", "")
    if user:
        pw = os.environ.get("GRIDLAKE_KAFKA_PASSWORD", "")
        where = "GRIDLAKE_KAFKA_PASSWORD"
        pw_file = os.environ.get("GRIDLAKE_KAFKA_PASSWORD_FILE", "")
        if not pw and pw_file:
            pw, where = Path(pw_file).read_text(encoding="utf-8").strip(), pw_file
        if not pw:
            raise KafkaAuthError(
                "GRIDLAKE_KAFKA_USER is set: set GRIDLAKE_KAFKA_PASSWORD or "
                "GRIDLAKE_KAFKA_PASSWORD_FILE too"
            )
        return user, pw, where
    where = str(password_file(settings, default_user))
    return default_user, password(settings, default_user), where


def client_conf(settings: Settings, user: str, pw: str | None = None) -> dict[str, Any]:
    """librdkafka (confluent_kafka) settings of a client signed in as ``user``."""
    conf: dict[str, Any] = {"bootstrap.servers": settings.kafka_bootstrap}
    if secure(settings):
        conf.update(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": MECHANISM,
                "sasl.username": user,
                "sasl.password": pw if pw is not None else password(settings, user),
            }
        )
    return conf


def admin_conf(bootstrap: str | None = None) -> dict[str, Any]:
    """The instance's admin client settings (operations' checks and the tests)."""
    settings = get_settings()
    conf = client_conf(settings, "admin")
    if bootstrap:
        conf["bootstrap.servers"] = bootstrap
    return conf


def _jaas(module: str, user: str, pw: str) -> str:
    return f'{module} required username="{user}" password="{pw}";'


def spark_options(settings: Settings, user: str = "ingest") -> dict[str, str]:
    """Options of Spark's Kafka source (``kafka.``-prefixed client settings). Spark redacts
    them in plans and logs (``spark.sql.redaction.options.regex`` covers ``jaas``)."""
    options = {"kafka.bootstrap.servers": settings.kafka_bootstrap}
    if secure(settings):
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule"
        name, pw, _ = credentials(settings, user)
        options.update(
            {
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": MECHANISM,
                "kafka.sasl.jaas.config": _jaas(scram, name, pw),
            }
        )
    return options


def java_client_properties(settings: Settings, user: str) -> Path:
    """A 0600 properties file for Kafka's Java tools (``--command-config``,
    ``--producer.config``) signed in as ``user``."""
    lines = [f"bootstrap.servers={settings.kafka_bootstrap}"]
    if secure(settings):
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule"
        jaas = _jaas(scram, user, password(settings, user))
        lines += [
            "security.protocol=SASL_PLAINTEXT",
            f"sasl.mechanism={MECHANISM}",
            f"sasl.jaas.config={jaas}",
        ]
    path = settings.state / "kafka" / "clients" / f"{user}.properties"
    _write_private(path, "\n".join(lines) + "\n")
    return path


def describe_error(err: Any, user: str, topic: str | None = None, where: str = "") -> str:
    """A sentence for a Kafka error met by ``user`` (a confluent_kafka KafkaError)."""
    from confluent_kafka import KafkaError

    code = err.code() if hasattr(err, "code") else None
    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return (
            f"Kafka refused user {user!r} on topic {topic or '?'}: not authorized (each source "
            f"kind's principal writes its own topic: {PRODUCER_OF.get(topic or '', 'admin')!r} "
            f"writes {topic})"
        )
    if code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
        hint = f" (password from {where})" if where else ""
        return f"Kafka refused to sign in user {user!r}: wrong user name or password{hint}"
    return f"Kafka: {err}"


def is_auth_error(err: Any) -> bool:
    from confluent_kafka import KafkaError

    return err.code() in (
        KafkaError._AUTHENTICATION,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    )


def _acls() -> list[Any]:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    allow = AclPermissionType.ALLOW
    out = []

    def grant(user: str, rtype: Any, name: str, pattern: Any, *ops: Any) -> None:
        for op in ops:
            out.append(AclBinding(rtype, name, pattern, f"User:{user}", "*", op, allow))

    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    write, describe, read = AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.READ
    for topic, user in PRODUCER_OF.items():
        grant(user, ResourceType.TOPIC, topic, literal, write, describe)
    for user in sorted(set(PRODUCER_OF.values())):
        grant(user, ResourceType.TOPIC, TOPICS["deadletter"], literal, write, describe)
    grant("ingest", ResourceType.TOPIC, TOPIC_PREFIX, prefixed, read, describe)
    grant("ingest", ResourceType.GROUP, SPARK_GROUP_PREFIX, prefixed, read)
    return out


def setup(settings: Settings, timeout: float = 60.0) -> dict[str, int]:
    """Create or update every principal's SCRAM credentials and the ACLs (idempotent), signed
    in as admin with PLAIN (the brokers' own user, valid before any SCRAM user exists)."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    ensure_passwords(settings)
    admin = AdminClient(
        {
            "bootstrap.servers": settings.kafka_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": password(settings, "admin"),
        }
    )
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
    upserts = [UserScramCredentialUpsertion(u, info, password(settings, u).encode()) for u in USERS]
    for fut in admin.alter_user_scram_credentials(upserts, request_timeout=timeout).values():
        fut.result()
    acls = _acls()
    for fut in admin.create_acls(acls, request_timeout=timeout).values():
        fut.result()
    return {"users": len(USERS), "acls": len(acls)}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    settings = get_settings()
    if args == ["passwords"]:
        ensure_passwords(settings)
        print(f"kafka passwords in {password_file(settings, 'x').parent}/", file=sys.stderr)
        return 0
    if args == ["setup"]:
        done = setup(settings)
        print(f"kafka: {done['users']} SCRAM users, {done['acls']} ACLs", file=sys.stderr)
        return 0
    print("usage: python -m gridlake.sources.kafka_auth passwords|setup", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
