"""What the gridlake DAGs share: the CLI they call, their default arguments, table assets and the
manifest (``gridlake_manifest.json``, written by ``gridlake docs`` from the code: which silver
tables each refine input writes, which gold tables each gold group writes and what it runs after).

Airflow runs in its own venv without pyspark, so the DAGs never import gridlake; they call its
CLI (``GRIDLAKE_CLI``, set by ``infra/airflow.sh`` to the main venv's, expanded by bash when a
task runs) and read the manifest. ``GRIDLAKE_RETRY_DELAY_SECONDS`` (default 60) shortens the wait
between retries; the tests set it to 1.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow.sdk import Asset

CLI = '"${GRIDLAKE_CLI:-gridlake}"'
OWNER = "grid-ops"
START = datetime(2025, 1, 1, tzinfo=UTC)
MANIFEST = json.loads((Path(__file__).with_name("gridlake_manifest.json")).read_text())


def default_args(timeout_minutes: int) -> dict:
    return {
        "owner": OWNER,
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
