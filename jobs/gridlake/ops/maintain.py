"""``gridlake maintain``: weekly Delta housekeeping of every warehouse table.

- OPTIMIZE (bin-packing compaction): streaming ingest and MERGE batches leave many small files;
  compaction rewrites them into few large ones with ``dataChange = false``, so the streaming
  readers of a table (refine reads bronze as a stream) skip the rewrite and nothing is re-read.
- VACUUM with a retention of at least ``MIN_RETAIN_HOURS`` (7 days): files no longer referenced
  by a version younger than the retention are deleted, so time travel keeps working for a week
  (``VERSION AS OF`` / ``TIMESTAMP AS OF`` back to seven days) and a stream or reader that
  started within the retention never loses a file under it. A shorter retention is refused here,
  on top of Delta's own ``retentionDurationCheck``.

Tables are maintained one at a time; each gets its own line of figures. A table's failure is
reported and the others still run; the command then exits non-zero (Airflow retries the task).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from pyspark.sql import SparkSession

from gridlake.settings import Settings, get_settings
from gridlake.tabledef import Table

__all__ = ["MIN_RETAIN_HOURS", "MaintenanceResult", "maintain", "maintained_tables"]

log = logging.getLogger(__name__)

MIN_RETAIN_HOURS = 168


@dataclass
class MaintenanceResult:
    table: str
    files_before: int = 0
    files_after: int = 0
    files_compacted: int = 0  # small files OPTIMIZE replaced
    files_vacuumed: int = 0  # unreferenced files VACUUM deleted
    vacuum_mode: str = ""  # "lite" (from the Delta log) or "full" (listing the table's folder)
    error: str | None = None


def maintained_tables() -> tuple[Table, ...]:
    """Every bronze, silver and gold table of the catalog."""
    from gridlake.catalog import ALL_TABLES

    return ALL_TABLES


def _file_count(spark: SparkSession, path: str) -> int:
    return int(spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["numFiles"] or 0)


def _last_metric(spark: SparkSession, path: str, operation: str, metric: str) -> int:
    from delta.tables import DeltaTable

    rows = (
        DeltaTable.forPath(spark, path)
        .history(5)
        .where(f"operation = '{operation}'")
        .select("operationMetrics")
        .collect()
    )  # bounded: the last 5 commits
    return int((rows[0]["operationMetrics"] or {}).get(metric, 0)) if rows else 0


def vacuum_mode(today: date | None = None) -> str:
    """``lite`` on most runs; ``full`` in the first seven days of a month (the weekly DAG runs
    on Sundays: one full VACUUM a month) or with ``GRIDLAKE_VACUUM=full``."""
    forced = os.environ.get("GRIDLAKE_VACUUM", "")
    if forced in ("lite", "full"):
        return forced
    return "full" if (today or date.today()).day <= 7 else "lite"


def _vacuum(spark: SparkSession, path: str, retain_hours: float, mode: str = "lite") -> str:
    """VACUUM LITE: the files to delete are found in the Delta log (the remove actions older than
    the retention), not by listing every file of the table's folder and joining the listing with
    the snapshot, which is what a full VACUUM does, a Spark job or two per table even when
    nothing is to be deleted. LITE cannot see files the log never named (a crashed writer's
    leftovers: the monthly full VACUUM takes those) and is refused when the log entries of
    removes were cleaned up: the full VACUUM then runs instead."""
    hours = float(retain_hours)
    if mode == "lite":
        try:
            spark.sql(f"VACUUM delta.`{path}` LITE RETAIN {hours} HOURS")
            return "lite"
        except Exception as exc:
            if "LITE" not in str(exc).upper():
                raise
            log.info("VACUUM LITE refused for %s, running the full VACUUM: %s", path,
                     str(exc).splitlines()[0])  # fmt: skip
    spark.sql(f"VACUUM delta.`{path}` RETAIN {hours} HOURS")
    return "full"


def maintain(
    spark: SparkSession,
    tables: Sequence[Table] | None = None,
    optimize: bool = True,
    vacuum: bool = True,
    retain_hours: float = MIN_RETAIN_HOURS,
    settings: Settings | None = None,
) -> Iterable[MaintenanceResult]:
    """OPTIMIZE and/or VACUUM each table; yields one result per table as it finishes."""
    if retain_hours < MIN_RETAIN_HOURS:
        raise ValueError(
            f"VACUUM retention {retain_hours} h is below {MIN_RETAIN_HOURS} h: time travel must "
            "keep at least 7 days"
        )
    from delta.tables import DeltaTable

    settings = settings or get_settings()
    mode = vacuum_mode()
    for table in tables or maintained_tables():
        path = table.path(settings)
        result = MaintenanceResult(table.full_name)
        try:
            if not DeltaTable.isDeltaTable(spark, path):
                table.ensure(spark, settings)
            result.files_before = _file_count(spark, path)
            if optimize:
                metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction()
                row = metrics.select("metrics.numFilesRemoved").first()
                result.files_compacted = int(row[0] or 0) if row else 0
            if vacuum:
                result.vacuum_mode = _vacuum(spark, path, retain_hours, mode)
                result.files_vacuumed = _last_metric(spark, path, "VACUUM END",
                                                     "numDeletedFiles")  # fmt: skip
            result.files_after = _file_count(spark, path)
        except Exception as exc:  # one table's trouble must not stop the others
            result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            log.exception("maintenance of %s failed", table.full_name)
        yield result
