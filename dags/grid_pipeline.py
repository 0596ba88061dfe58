"""grid_pipeline: Kafka -> bronze -> silver -> gold, one gridlake CLI call per layer.

The DAG only orders the calls; every rule lives in the gridlake package (``jobs/``), so what
runs here is exactly what ``gridlake ingest|refine|analyze`` runs by hand.

- Schedule ``@hourly``: ``ingest`` drains whatever Kafka holds (an ``availableNow`` stream with
  a checkpoint), so a run is cheap when little arrived and no run depends on its interval;
  ``catchup=False`` and ``max_active_runs=1`` keep runs from piling up on two cores.
- ``GRIDLAKE_CLI`` names the CLI of the main venv (``infra/airflow.sh`` sets it; default
  ``gridlake`` on PATH). Bash expands it when the task runs, not when the file is parsed.
- ``GRIDLAKE_RETRY_DELAY_SECONDS`` (default 60) shortens the wait between the two retries; the
  test suite sets it to 1 so that a failing run ends in seconds.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import Asset, dag, task

SILVER_JOBS = Asset("gridlake://silver/jobs")
GOLD_SITE_EFFICIENCY_WEEKLY = Asset("gridlake://gold/site_efficiency_weekly")

CLI = '"${GRIDLAKE_CLI:-gridlake}"'

DEFAULT_ARGS = {
    "owner": "grid-ops",
    "retries": 2,
    "retry_delay": timedelta(seconds=int(os.environ.get("GRIDLAKE_RETRY_DELAY_SECONDS", "60"))),
    "execution_timeout": timedelta(minutes=30),
}


@dag(
    dag_id="grid_pipeline",
    schedule="@hourly",
    start_date=datetime(2025, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["gridlake"],
    doc_md=__doc__,
)
def grid_pipeline() -> None:
    @task.bash
    def ingest() -> str:
        """Kafka topics -> bronze tables."""
        return f"{CLI} ingest"

    @task.bash(outlets=[SILVER_JOBS])
    def refine() -> str:
        """Bronze -> silver (typed, deduplicated)."""
        return f"{CLI} refine"

    @task.bash(outlets=[GOLD_SITE_EFFICIENCY_WEEKLY])
    def analyze() -> str:
        """Silver -> gold marts."""
        return f"{CLI} analyze"

    ingest() >> refine() >> analyze()


grid_pipeline()
