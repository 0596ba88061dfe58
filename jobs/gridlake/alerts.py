"""Alerts: what failed and needs a person, in one table (``ops.alerts``) the operations dashboard
and ``gridlake alerts`` read.

Two writers:

- the DAGs' failure callback (``dags/gridlake_common.py``, in Airflow's venv, without pyspark):
  when a task has failed after its retries it appends one JSON line to the instance's pending
  file (``<state>/alerts/pending.jsonl``, 0600) and runs ``gridlake alerts --flush``. The line is
  written first, so that an alert survives Spark, the metastore or the disk's warehouse being the
  thing that failed; a later flush (``gridlake alerts --flush``, ``gridlake maintain``) picks it
  up;
- ``gridlake refine`` when its gate refuses a batch (kind ``batch_refused``, with the gate's
  reason), in its own session.

A flush MERGEs the pending lines on ``alert_id`` (a hash of what identifies the alert), then
removes the lines it merged: a crash between the two leaves them pending and the next flush
finds them already there, so an alert is never lost and never doubled.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gridlake.settings import Settings, get_settings
from gridlake.spark import rows_frame
from gridlake.tabledef import Column, Table, ensure_tables

KINDS = ("task_failed", "batch_refused")

ALERTS = Table(
    database="ops",
    name="alerts",
    grain=(
        "one row per alert: a task of a gridlake DAG that failed after its retries, or a batch "
        "the refine gate refused."
    ),
    description=(
        "Written by the DAGs' failure callback (through a pending file, so that an alert survives "
        "Spark being what failed) and by gridlake refine when its gate refuses a batch; the same "
        "alert recorded twice is one row (alert_id)."
    ),
    columns=(
        Column(
            "alert_id",
            "STRING",
            "sha256 (16 hex) of kind, dag_id, task_id, run_id, try_number (not for a refused "
            "batch: its task's retries refuse it again), subject and message",
            nullable=False,
        ),
        Column("raised_at", "TIMESTAMP", "When it was raised (UTC)", nullable=False),
        Column("kind", "STRING", "task_failed | batch_refused", nullable=False),
        Column("dag_id", "STRING", "The DAG whose task failed (null: a command run by hand)"),
        Column("task_id", "STRING", "The failed task"),
        Column("run_id", "STRING", "The DAG run"),
        Column("try_number", "INT", "The task's try that failed last"),
        Column(
            "subject",
            "STRING",
            "What failed: the silver table a refused batch was for, or dag_id.task_id",
        ),
        Column("message", "STRING", "The reason: the gate's message, or the task's error"),
        Column("log", "STRING", "Where the details are: the task's log file"),
    ),
    keys=("alert_id",),
    stable_rows=False,
    question="What failed in the pipeline lately, and why?",
    example=(
        "SELECT raised_at, kind, subject, message FROM grid.alerts "
        "WHERE raised_at >= current_timestamp() - INTERVAL 7 DAYS ORDER BY raised_at DESC"
    ),
)

TABLES: tuple[Table, ...] = (ALERTS,)


@dataclass(frozen=True)
class Alert:
    kind: str
    subject: str
    message: str
    raised_at: datetime
    dag_id: str | None = None
    task_id: str | None = None
    run_id: str | None = None
    try_number: int | None = None
    log: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"alert kind {self.kind!r}: one of {KINDS}")

    @property
    def alert_id(self) -> str:
        # A refused batch is refused again by each retry of its task: one alert, not one a try.
        try_number = None if self.kind == "batch_refused" else self.try_number
        parts = (self.kind, self.dag_id, self.task_id, self.run_id, try_number, self.subject,
                 self.message)  # fmt: skip
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]

    def row(self) -> dict[str, object]:
        return {"alert_id": self.alert_id, **self.__dict__}

    @classmethod
    def from_json(cls, line: str) -> Alert:
        d = json.loads(line)
        d["raised_at"] = datetime.fromisoformat(d["raised_at"])
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})


def pending_path(settings: Settings | None = None) -> Path:
    return (settings or get_settings()).state / "alerts" / "pending.jsonl"


def alert_frame(spark: SparkSession, alerts: Iterable[Alert]) -> DataFrame:
    """Alerts as rows of ops.alerts (a handful per run: built on the driver)."""
    rows = [a.row() for a in alerts]
    schema = ", ".join(f"`{c.name}` {c.ddl_type}" for c in ALERTS.columns)
    df = rows_frame(spark, rows, schema)
    return df.select(*ALERTS.column_names)


def record(spark: SparkSession, alerts: Iterable[Alert], settings: Settings | None = None) -> int:
    """MERGE alerts into ops.alerts on alert_id; the number inserted (0 for ones already there)."""
    from delta.tables import DeltaTable

    settings = settings or get_settings()
    ensure_tables(spark, TABLES, settings)
    new = alert_frame(spark, alerts).dropDuplicates(["alert_id"])
    target = DeltaTable.forPath(spark, ALERTS.path(settings))
    # The MERGE's own metrics (one row: num_affected_rows, num_inserted_rows, ...), rather than
    # counting the table before and after it (two more scans of a table that only grows).
    metrics = (
        target.alias("t")
        .merge(new.alias("s"), "t.alert_id = s.alert_id")
        .whenNotMatchedInsertAll()
        .execute()
        .first()
    )
    return int(metrics["num_inserted_rows"]) if metrics is not None else 0


def flush(spark: SparkSession, settings: Settings | None = None) -> tuple[int, int]:
    """Merge the pending file's alerts into ops.alerts, then drop the lines merged.
    (lines read, alerts inserted). A line that is not an alert is kept aside in
    ``pending.rejected`` (never silently dropped)."""
    settings = settings or get_settings()
    path = pending_path(settings)
    if not path.is_file():
        return 0, 0
    # Take the file first (atomic rename): lines the callback appends meanwhile go to a new one.
    taking = path.with_name(f"flushing-{os.getpid()}.jsonl")
    leftovers = sorted(path.parent.glob("flushing-*.jsonl"))  # a crashed flush's
    os.replace(path, taking)
    alerts, bad = [], []
    for file in [*leftovers, taking]:
        for line in file.read_text(errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                alerts.append(Alert.from_json(line))
            except (ValueError, TypeError, KeyError) as exc:
                bad.append(json.dumps({"line": line, "error": f"{type(exc).__name__}: {exc}"}))
    inserted = record(spark, alerts, settings)
    if bad:
        with open(path.with_name("pending.rejected"), "a") as out:
            out.write("\n".join(bad) + "\n")
    for file in [*leftovers, taking]:
        file.unlink()
    return len(alerts), inserted


def recent(spark: SparkSession, days: int, settings: Settings | None = None) -> DataFrame:
    """The alerts of the last ``days`` days, newest first."""
    settings = settings or get_settings()
    ensure_tables(spark, TABLES, settings)
    since = F.current_timestamp() - F.expr(f"INTERVAL {int(days)} DAYS")
    return (
        spark.read.format("delta")
        .load(ALERTS.path(settings))
        .where(F.col("raised_at") >= since)
        .orderBy(F.col("raised_at").desc())
    )


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def from_airflow_env(kind: str, subject: str, message: str) -> Alert:
    """An alert raised inside an Airflow task (its AIRFLOW_CTX_* variables), or by hand."""
    env = os.environ
    try_number = env.get("AIRFLOW_CTX_TRY_NUMBER")
    return Alert(
        kind=kind,
        subject=subject,
        message=message,
        raised_at=now(),
        dag_id=env.get("AIRFLOW_CTX_DAG_ID"),
        task_id=env.get("AIRFLOW_CTX_TASK_ID"),
        run_id=env.get("AIRFLOW_CTX_DAG_RUN_ID"),
        try_number=int(try_number) if try_number and try_number.isdigit() else None,
    )
