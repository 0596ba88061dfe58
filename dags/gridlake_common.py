"""What the gridlake DAGs share: the CLI they call, their default arguments, table assets and the
manifest (``gridlake_manifest.json``, written by ``gridlake docs`` from the code: which silver
tables each refine input writes, which gold tables each gold group writes and what it runs after),
and the failure callback that turns a task failed after its retries into an alert (``ops.alerts``,
see ``gridlake.alerts``): one JSON line in the instance's pending file, written before
anything else can fail, then ``gridlake alerts --flush`` to merge it into the table.

Airflow runs in its own venv without pyspark, so the DAGs never import gridlake; they call its
CLI (``GRIDLAKE_CLI``, set by ``infra/airflow.sh`` to the main venv's, expanded by bash when a
task runs; without Airflow's keys in its environment) and read the manifest.
``GRIDLAKE_RETRY_DELAY_SECONDS`` (default 60) shortens the wait between retries; the tests set
it to 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow.sdk import Asset

# Airflow's own keys (the API server's JWT and session secrets, the Fernet key) are in the
# scheduler's environment, and every task's inherits it; the jobs need none of them, so the CLI
# runs without them (``env -u``: only their names on a command line).
AIRFLOW_KEYS = (
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__API__SECRET_KEY",
    "AIRFLOW__CORE__FERNET_KEY",
)
CLI = "env " + " ".join(f"-u {key}" for key in AIRFLOW_KEYS) + ' "${GRIDLAKE_CLI:-gridlake}"'
OWNER = "grid-ops"
START = datetime(2025, 1, 1, tzinfo=UTC)
MANIFEST = json.loads((Path(__file__).with_name("gridlake_manifest.json")).read_text())
# grid_ingest's schedule: the manifest's (every five minutes, gridlake.ops.orchestration);
# ``GRIDLAKE_INGEST_CRON`` (in the scheduler's environment) changes it, e.g. the bench's
# freshness stage shortens it to take its probes faster.
INGEST_CRON = os.environ.get("GRIDLAKE_INGEST_CRON") or MANIFEST["ingest_cron"]


def alert_on_failure(context: dict) -> None:
    """on_failure_callback: the task failed after its retries (Airflow calls on_retry_callback
    for the tries before). Never raises: an alert that cannot be merged now stays pending."""
    from airflow.configuration import conf

    ti = context["ti"]
    exc = context.get("exception")
    log = (
        Path(conf.get("logging", "base_log_folder"))
        / f"dag_id={ti.dag_id}/run_id={ti.run_id}/task_id={ti.task_id}/attempt={ti.try_number}.log"
    )
    alert = {
        "kind": "task_failed",
        "subject": f"{ti.dag_id}.{ti.task_id}",
        "message": f"{type(exc).__name__}: {exc}" if exc else "failed",
        "raised_at": datetime.now(UTC).replace(tzinfo=None).isoformat(),
        "dag_id": ti.dag_id,
        "task_id": ti.task_id,
        "run_id": ti.run_id,
        "try_number": ti.try_number,
        "log": str(log),
    }
    pending = Path(os.environ["GRIDLAKE_STATE"]) / "alerts" / "pending.jsonl"
    pending.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(pending, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as out:
        out.write(json.dumps(alert) + "\n")
    cli = os.environ.get("GRIDLAKE_CLI") or "gridlake"
    # Should the flush fail, the line stays pending: the next flush (gridlake alerts --flush,
    # gridlake maintain) takes it.
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run([cli, "alerts", "--flush", "--limit", "0"], timeout=600, check=False,
                       env={k: v for k, v in os.environ.items() if k not in AIRFLOW_KEYS},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def default_args(timeout_minutes: int) -> dict:
    return {
        "owner": OWNER,
        "on_failure_callback": alert_on_failure,
        "retries": 2,
        "retry_delay": timedelta(seconds=int(os.environ.get("GRIDLAKE_RETRY_DELAY_SECONDS", "60"))),
        "execution_timeout": timedelta(minutes=timeout_minutes),
    }


def table_asset(full_name: str) -> Asset:
    """``silver.jobs`` -> the asset ``gridlake://silver/jobs`` (named silver.jobs)."""
    database, name = full_name.split(".", 1)
    return Asset(uri=f"gridlake://{database}/{name}", name=full_name)


def silver_assets() -> list[Asset]:
    """Every silver table grid_ingest publishes, once each, in manifest order."""
    names = dict.fromkeys(t for step in MANIFEST["refine"] for t in step["writes"])
    return [table_asset(t) for t in names]
