"""``gridlake maintain``: weekly Delta housekeeping of every warehouse table.

- OPTIMIZE (bin-packing compaction): streaming ingest and MERGE batches leave many small files;
  compaction rewrites them into few large ones with ``dataChange = false``, so the streaming
  readers of a table (refine reads bronze as a stream) skip the rewrite and nothing is re-read.
- VACUUM with a retention of at least ``MIN_RETAIN_HOURS`` (7 days): files no longer referenced
  by a version younger than the retention are deleted, so time travel keeps working for a week
  (``VERSION AS OF`` / ``TIMESTAMP AS OF`` back to seven days) and a stream or reader that
  started within the retention never loses a file under it. A shorter retention is refused here,
  on top of Delta's own ``retentionDurationCheck``. A bronze table keeps, beyond that, every
  version its refine stream still has to read: a refine stalled by a refused batch (which waits
  for an operator) resumes from the offset in its checkpoint, and VACUUM must not delete the
  files of the versions between it and now (``stream_retention``).

Tables are maintained one at a time; each gets its own line of figures. A table's failure is
reported and the others still run; the command then exits non-zero (Airflow retries the task).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

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
    retained_hours: float = 0.0  # the retention VACUUM ran with (longer for a stalled stream)
    retained_for: str = ""  # why longer than asked: the stream and the version it still needs
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


def _checkpoint_files(spark: SparkSession, folder: str) -> dict[int, str]:
    """{batch number: path} of a streaming checkpoint's sub-folder (offsets/ or commits/), on
    any file system Hadoop reads (local, HDFS, S3A)."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(folder)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return {}
    out = {}
    for status in fs.listStatus(path):
        name = status.getPath().getName()
        if name.isdigit():
            out[int(name)] = status.getPath().toString()
    return out


def stream_start_version(spark: SparkSession, checkpoint: str) -> int | None:
    """The first version of its Delta source a stream's checkpoint has not read to its end: where
    its next batch starts (the end offset of its last committed batch, Delta's
    ``reservoirVersion``; 0 when no batch was committed yet). The files added from that version
    on must stay. None when there is no checkpoint (no stream to protect)."""
    offsets = _checkpoint_files(spark, f"{checkpoint}/offsets")
    if not offsets:
        return None
    commits = _checkpoint_files(spark, f"{checkpoint}/commits")
    done = [n for n in commits if n in offsets]
    if not done:
        return 0
    lines = spark.sparkContext.textFile(offsets[max(done)]).collect()  # a 3-line file
    for line in lines:
        if '"reservoirVersion"' in line:
            import json

            return int(json.loads(line)["reservoirVersion"])
    return 0


def stream_retention(
    spark: SparkSession,
    table: Table,
    retain_hours: float,
    settings: Settings,
    now: datetime | None = None,
) -> tuple[float, str]:
    """The retention VACUUM of ``table`` needs: ``retain_hours``, or, for a bronze table whose
    refine stream still has to read a version older than that, the hours back to that version's
    commit plus a day; and why (empty when not extended)."""
    from delta.tables import DeltaTable

    if table.database != "bronze":
        return retain_hours, ""
    checkpoint = f"{settings.checkpoint_root}/silver_{table.name}"
    version = stream_start_version(spark, checkpoint)
    if version is None:
        return retain_hours, ""
    # The files the stream has yet to read were added at or after that version's commit, so
    # removed (by OPTIMIZE) after it: a retention back to that commit keeps them all.
    row = (
        DeltaTable.forPath(spark, table.path(settings)).history()
        .where(f"version >= {version}").orderBy("version")
        .select("version", "timestamp").limit(1).collect()
    )  # fmt: skip
    if not row:  # nothing committed since the stream's last batch: it needs no old file
        return retain_hours, ""
    since = row[0]["timestamp"]
    now = now or datetime.now()
    needed = (now - since).total_seconds() / 3600 + 24
    if needed <= retain_hours:
        return retain_hours, ""
    why = (f"silver_{table.name} refine stream still reads from version {version} of "
           f"{since:%Y-%m-%d %H:%M}")  # fmt: skip
    return round(needed, 1), why


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
                hours, why = stream_retention(spark, table, retain_hours, settings)
                if why:
                    log.warning("VACUUM of %s keeps %.1f h instead of %.1f h: %s",
                                table.full_name, hours, retain_hours, why)  # fmt: skip
                result.retained_hours, result.retained_for = hours, why
                result.vacuum_mode = _vacuum(spark, path, hours, mode)
                result.files_vacuumed = _last_metric(spark, path, "VACUUM END",
                                                     "numDeletedFiles")  # fmt: skip
            result.files_after = _file_count(spark, path)
        except Exception as exc:  # one table's trouble must not stop the others
            result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            log.exception("maintenance of %s failed", table.full_name)
        yield result
