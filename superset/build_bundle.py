"""Build (and optionally import) the Superset asset bundle of gridlake.

    python superset/build_bundle.py --thrift-port 10100 --out bundle.zip [--schema grid]
    python superset/build_bundle.py --thrift-port 10100 --out bundle.zip \\
        --import-url http://127.0.0.1:8188 --user admin      # password: $SUPERSET_ADMIN_PASSWORD

The bundle is a ZIP with one top folder holding the YAML of superset/assets/ (metadata.yaml,
databases/, datasets/<db>/, charts/, dashboards/), linked by fixed uuids; the YAML is generated
from jobs/gridlake/serving/superset_assets.py by ``gridlake superset assets``. While building:
- ``${GRIDLAKE_THRIFT_PORT}`` becomes the Thrift port of the instance (demo 10000, test 10100) and
  ``${GRIDLAKE_SCHEMA}`` the database of the views the datasets read (``grid``);
- every chart's ``query_context`` must be a JSON string; its ``form_data`` is set to the chart's
  params when the YAML leaves it out (that is what Superset's explore view saves);
- references between the files are checked, so a broken uuid fails here and not in Superset.

The import goes through ``POST /api/v1/assets/import/`` (metadata type ``assets``), which overwrites
databases, datasets, charts and dashboards matched by uuid: importing twice changes nothing.
Runs with the Superset venv's or the main venv's python: stdlib + PyYAML only.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import io
import json
import os
import re
import sys
import urllib.error
import urllib.request
import uuid
import zipfile
from pathlib import Path

import yaml

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
TOP_FOLDER = "gridlake_assets"
DEFAULT_SCHEMA = "grid"
PLACEHOLDER = re.compile(r"\$\{([A-Z_]+)\}")


class BundleError(Exception):
    pass


def _substitute(text: str, values: dict[str, str], name: str) -> str:
    def repl(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise BundleError(f"{name}: unknown placeholder ${{{key}}}")
        return values[key]

    return PLACEHOLDER.sub(repl, text)


def load_assets(
    thrift_port: int, assets_dir: Path = ASSETS_DIR, schema: str = DEFAULT_SCHEMA
) -> dict[str, dict]:
    """Read every YAML under assets_dir, placeholders filled in: {relative path: content}."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", schema):
        raise BundleError(f"not a database name: {schema!r}")
    values = {"GRIDLAKE_THRIFT_PORT": str(int(thrift_port)), "GRIDLAKE_SCHEMA": schema}
    configs: dict[str, dict] = {}
    for path in sorted(assets_dir.rglob("*.yaml")):
        rel = path.relative_to(assets_dir).as_posix()
        text = _substitute(path.read_text(encoding="utf-8"), values, rel)
        content = yaml.safe_load(text)
        if not isinstance(content, dict):
            raise BundleError(f"{rel}: not a YAML mapping")
        configs[rel] = content
    if "metadata.yaml" not in configs:
        raise BundleError(f"{assets_dir}: metadata.yaml is missing")
    _prepare_and_check(configs)
    return configs


def _prepare_and_check(configs: dict[str, dict]) -> None:
    def uuids(prefix: str) -> set[str]:
        found = set()
        for rel, content in configs.items():
            if rel.startswith(prefix):
                try:
                    found.add(str(uuid.UUID(str(content["uuid"]))))
                except (KeyError, ValueError) as exc:
                    raise BundleError(f"{rel}: missing or invalid uuid") from exc
        return found

    databases, datasets, charts = uuids("databases/"), uuids("datasets/"), uuids("charts/")
    dashboards = uuids("dashboards/")
    if not (databases and datasets and charts and dashboards):
        raise BundleError("the bundle needs a database, a dataset, charts and a dashboard")
    meta = configs["metadata.yaml"]
    if meta.get("version") != "1.0.0" or meta.get("type") != "assets":
        raise BundleError("metadata.yaml: want version 1.0.0 and type assets (overwriting import)")

    for rel, content in configs.items():
        if rel.startswith("datasets/") and str(content.get("database_uuid")) not in databases:
            raise BundleError(f"{rel}: database_uuid names no database of the bundle")
        if rel.startswith("charts/"):
            if str(content.get("dataset_uuid")) not in datasets:
                raise BundleError(f"{rel}: dataset_uuid names no dataset of the bundle")
            raw = content.get("query_context")
            if not isinstance(raw, str):
                raise BundleError(f"{rel}: query_context must be a JSON string")
            try:
                query_context = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise BundleError(f"{rel}: query_context is not JSON: {exc}") from exc
            if not query_context.get("queries"):
                raise BundleError(f"{rel}: query_context has no queries")
            params = content.get("params") or {}
            if params.get("viz_type") != content.get("viz_type"):
                raise BundleError(f"{rel}: params.viz_type differs from viz_type")
            query_context.setdefault("form_data", dict(params))
            content["query_context"] = json.dumps(query_context, separators=(",", ":"))
        if rel.startswith("dashboards/"):
            for node in (content.get("position") or {}).values():
                if isinstance(node, dict) and node.get("type") == "CHART":
                    if str(node.get("meta", {}).get("uuid")) not in charts:
                        raise BundleError(f"{rel}: chart node {node.get('id')} names no chart")
                    if "chartId" not in node["meta"]:
                        raise BundleError(f"{rel}: chart node {node.get('id')} lacks chartId")
            for flt in (content.get("metadata") or {}).get("native_filter_configuration", []):
                for target in flt.get("targets", []):
                    if str(target.get("datasetUuid")) not in datasets:
                        raise BundleError(f"{rel}: filter {flt.get('id')} names no dataset")


def build_bundle(
    thrift_port: int, out: Path, assets_dir: Path = ASSETS_DIR, schema: str = DEFAULT_SCHEMA
) -> Path:
    """Write the bundle ZIP (one top folder) and return its path."""
    configs = load_assets(thrift_port, assets_dir, schema)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, content in configs.items():
            text = yaml.safe_dump(content, sort_keys=False, allow_unicode=True)
            zf.writestr(f"{TOP_FOLDER}/{rel}", text)
    os.replace(tmp, out)
    return out


# --- import over the REST API ---------------------------------------------------------------------
def _multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = f"gridlake-{uuid.uuid4().hex}"
    buf = io.BytesIO()
    for name, value in fields.items():
        buf.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode())
        buf.write(value.encode() + b"\r\n")
    for name, (filename, data) in files.items():
        buf.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
            f'filename="{filename}"\r\nContent-Type: application/zip\r\n\r\n'.encode()
        )
        buf.write(data + b"\r\n")
    buf.write(f"--{boundary}--\r\n".encode())
    return buf.getvalue(), f"multipart/form-data; boundary={boundary}"


def import_bundle(
    bundle: Path,
    base_url: str,
    user: str,
    password: str,
    timeout: float = 120,
    db_password: str | None = None,
) -> dict:
    """Log in (JWT + session cookie for CSRF) and POST the bundle to /api/v1/assets/import/."""
    base_url = base_url.rstrip("/")
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )

    def call(method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        req = urllib.request.Request(
            base_url + path, data=body, method=method, headers=headers or {}
        )
        try:
            with opener.open(req, timeout=timeout) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:2000]
            raise BundleError(f"{method} {path}: HTTP {exc.code}: {detail}") from exc

    login = json.dumps(
        {"username": user, "password": password, "provider": "db", "refresh": False}
    ).encode()
    token = call("POST", "/api/v1/security/login", login, {"Content-Type": "application/json"})
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    csrf = call("GET", "/api/v1/security/csrf_token/", None, auth)["result"]
    # the database's password (its URI in the bundle holds Superset's mask, XXXXXXXXXX)
    passwords = {"databases/gridlake.yaml": db_password} if db_password else {}
    body, content_type = _multipart(
        {"passwords": json.dumps(passwords)}, {"bundle": (bundle.name, bundle.read_bytes())}
    )
    headers = {**auth, "X-CSRFToken": csrf, "Referer": base_url + "/", "Content-Type": content_type}
    return call("POST", "/api/v1/assets/import/", body, headers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--thrift-port", type=int, required=True, help="Spark Thrift Server port")
    parser.add_argument("--out", type=Path, required=True, help="bundle ZIP to write")
    parser.add_argument("--schema", default=DEFAULT_SCHEMA, help="database of the grid views")
    parser.add_argument("--assets", type=Path, default=ASSETS_DIR, help="folder of the YAML assets")
    parser.add_argument("--import-url", help="Superset base URL: import the bundle there")
    parser.add_argument("--user", default=os.environ.get("SUPERSET_ADMIN_USER", "admin"))
    parser.add_argument(
        "--thrift-password-file",
        type=Path,
        help="Thrift Server password of user superset (or $GRIDLAKE_THRIFT_SUPERSET_PASSWORD)",
    )
    args = parser.parse_args(argv)
    try:
        bundle = build_bundle(args.thrift_port, args.out, args.assets, args.schema)
        print(f"bundle: {bundle}", file=sys.stderr)
        if args.import_url:
            password = os.environ.get("SUPERSET_ADMIN_PASSWORD", "")
            if not password:
                raise BundleError("set SUPERSET_ADMIN_PASSWORD to import")
            db_password = os.environ.get("GRIDLAKE_THRIFT_SUPERSET_PASSWORD", "")
            if not db_password and args.thrift_password_file:
                db_password = args.thrift_password_file.read_text(encoding="utf-8").strip()
            if not db_password:
                raise BundleError("no Thrift Server password for superset: --thrift-password-file")
            result = import_bundle(
                bundle, args.import_url, args.user, password, db_password=db_password
            )
            print(f"import: {json.dumps(result)}", file=sys.stderr)
    except (BundleError, OSError, yaml.YAMLError) as exc:
        print(f"build_bundle: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
