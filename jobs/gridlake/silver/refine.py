"""bronze -> silver for every input: validate, quarantine, gate, MERGE (the edge around transforms).

Each input reads its bronze table incrementally (a Delta stream with availableNow and its own
checkpoint). Each micro-batch:

1. row-level rules (from the JSON Schema contract) split records into valid and quarantined;
2. valid records are reduced to the newest per key and checked by the table's
   great_expectations suite, and the batch as a whole by two breakers: the quarantine share,
   and the volume (``arrival_volume``: records per hour of Kafka time against the previous
   batches, so that a producer outage stops the pipeline before gold is computed on a fraction
   of the grid); a failed check raises before anything of the batch is written (the checkpoint
   does not advance, so the batch is retried once the cause is fixed, or once an operator
   accepts a genuine drop with ``gridlake refine --accept-volume-drop``);
3. quarantined records are appended to ``silver.quarantine_<input>``; valid ones are MERGEd into
   the silver table(s) on their key, a matched row updated only by a newer record;
4. ``silver.batch_audit`` records bronze_rows = clean_rows + duplicate_rows + quarantined_rows,
   and ``silver.quality_results`` every check's outcome.

Appends carry Delta's idempotent-writer options (txnAppId = the checkpoint's query id,
txnVersion = stream batch number), so a batch replayed after a crash writes nothing twice, and a
reset checkpoint is a new writer; the MERGEs are idempotent by construction.
"""

from __future__ import annotations

import logging
import os
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gridlake import deltalog
from gridlake.bronze.tables import BRONZE
from gridlake.contracts import contract
from gridlake.quality import CheckResult, QualityGateError, gate
from gridlake.settings import Settings, get_settings
from gridlake.silver import jobs as jobs_tx
from gridlake.silver import network as net_tx
from gridlake.silver import nodes as nodes_tx
from gridlake.silver.common import (
    NEWER_SQL,
    latest_per_key,
    quarantine_rows,
    valid_rows,
    with_content_hash,
    with_lineage,
)
from gridlake.silver.tables import (
    BATCH_AUDIT,
    QUALITY_RESULTS,
    QUARANTINE_ACCOUNTING_SUMMARIES,
    QUARANTINE_JOBS,
    QUARANTINE_NETWORK,
    QUARANTINE_NODES,
    SILVER_ACCOUNTING_SUMMARIES,
    SILVER_JOB_NODE_FEATURES,
    SILVER_JOBS,
    SILVER_NETWORK,
    SILVER_NODE_DISK_SAMPLES,
    SILVER_NODE_SAMPLES,
)
from gridlake.silver.validate import parse_and_validate
from gridlake.spark import rows_frame
from gridlake.tabledef import Table

log = logging.getLogger(__name__)

# Inputs whose refine batches refresh silver.job_node_features (the jobs they touched).
FEATURE_INPUTS = ("jobs", "nodes")
# Node samples first: the features of the jobs refined next then see their samples at once
# (the other order computes the features of new jobs twice, once without their samples).
REFINE_AFTER: dict[str, tuple[str, ...]] = {"jobs": ("nodes",)}

APP_ID = "gridlake-refine"


# Batch-level breaker: a batch with more than this share quarantined is refused whole (a broken
# producer, not bad luck). Small batches are exempt: a handful of bad records is not a trend.
def max_quarantine_share() -> float:
    """GRIDLAKE_MAX_QUARANTINE_SHARE (0.5), read when a batch is checked (a served command
    brings its own environment)."""
    return float(os.environ.get("GRIDLAKE_MAX_QUARANTINE_SHARE", "0.5"))


BREAKER_MIN_ROWS = 100


# Batch-level volume rule: a batch whose arrival rate (records per hour of Kafka time since the
# previous batch's last record) is below this share of the median rate of the previous batches
# is refused. Rates over spans shorter than VOLUME_MIN_SPAN_SECONDS are not measured (a burst,
# e.g. a backfill published at once), and the rule waits for VOLUME_MIN_HISTORY measured batches.
def min_volume_share() -> float:
    """GRIDLAKE_MIN_VOLUME_SHARE (0.2), read when a batch is checked."""
    return float(os.environ.get("GRIDLAKE_MIN_VOLUME_SHARE", "0.2"))


VOLUME_HISTORY = 10
VOLUME_MIN_HISTORY = 5
VOLUME_MIN_SPAN_SECONDS = 600


@dataclass(frozen=True)
class Volume:
    """The arrival volume of a batch against the previous batches of its input."""

    kafka_ts_max: datetime | None
    rate_per_hour: float | None  # None when not measurable (first batch, burst, late records)
    history_median: float | None  # None with fewer than VOLUME_MIN_HISTORY measured batches
    dropped: bool


def arrival_volume(
    rows: int,
    kafka_ts_max: datetime | None,
    previous: Sequence[tuple[datetime | None, float | None]],
    min_share: float | None = None,
) -> Volume:
    """Rate of this batch and whether it dropped. ``previous``: (kafka_ts_max, rate_per_hour)
    of the input's earlier batches, newest first (from silver.batch_audit)."""
    min_share = min_volume_share() if min_share is None else min_share
    last = next((t for t, _ in previous if t is not None), None)
    rate = None
    if kafka_ts_max is not None and last is not None:
        span = (kafka_ts_max - last).total_seconds()
        if span >= VOLUME_MIN_SPAN_SECONDS:
            rate = rows * 3600.0 / span
    history = [r for _, r in previous if r is not None][:VOLUME_HISTORY]
    median = statistics.median(history) if len(history) >= VOLUME_MIN_HISTORY else None
    dropped = rate is not None and median is not None and rate < min_share * median
    return Volume(kafka_ts_max, rate, median, dropped)


def _previous_volumes(
    spark: SparkSession, input_name: str, settings: Settings
) -> list[tuple[datetime | None, float | None]]:
    """(kafka_ts_max, arrival_rate_per_hour) of the input's last batches, newest first."""
    rows = (
        spark.read.format("delta")
        .load(BATCH_AUDIT.path(settings))
        .where(F.col("input") == input_name)
        .orderBy(F.col("finished_at").desc())
        .select("kafka_ts_max", "arrival_rate_per_hour")
        .limit(VOLUME_HISTORY + 1)
        .collect()
    )
    return [(r.kafka_ts_max, r.arrival_rate_per_hour) for r in rows]


@dataclass(frozen=True)
class Output:
    """One silver table a batch is MERGEd into: how to derive its rows from the clean batch."""

    table: Table
    keys: tuple[str, ...]
    rows: Callable[[DataFrame], DataFrame] = lambda df: df
    # A key's partition can change: silver.jobs' week follows end_time, which is not part of the
    # key, so a corrected end_time can move a job to another week. The MERGE then also reads the
    # partitions where the batch's keys already are, and the table's uniqueness is checked.
    moves: bool = False


@dataclass(frozen=True)
class RefineSpec:
    input: str
    validate: Callable[[DataFrame], DataFrame]
    clean: Callable[[SparkSession, DataFrame, str, Settings], DataFrame]
    keys: tuple[str, ...]
    outputs: tuple[Output, ...]
    quarantine: Table

    @property
    def main(self) -> Table:
        return self.outputs[0].table


def _clean_jobs(spark: SparkSession, v: DataFrame, batch: str, _s: Settings) -> DataFrame:
    from gridlake.reference.cpu_models import reference_table

    return jobs_tx.clean_rows(v, batch, reference_table(spark))


def _clean_nodes(_spark: SparkSession, v: DataFrame, batch: str, _s: Settings) -> DataFrame:
    return nodes_tx.clean_node_rows(v, batch)


def _clean_summaries(_spark: SparkSession, v: DataFrame, batch: str, _s: Settings) -> DataFrame:
    alloc = F.col("wall_duration_seconds") * F.coalesce(F.col("processors"), F.lit(1))
    rows = (
        valid_rows(v)
        .withColumn("core_wall_seconds", alloc.cast("double"))
        .withColumn(
            "cpu_efficiency", F.try_divide(F.col("cpu_duration_seconds"), F.when(alloc > 0, alloc))
        )
    )
    return with_lineage(rows, batch)


def _clean_network(spark: SparkSession, v: DataFrame, batch: str, s: Settings) -> DataFrame:
    known = spark.read.format("delta").load(SILVER_NETWORK.path(s))
    directory = net_tx.site_directory(net_tx.valid_rows(v), known)
    return net_tx.clean_network_rows(v, batch, directory)


SPECS: dict[str, RefineSpec] = {
    "jobs": RefineSpec(
        "jobs",
        jobs_tx.validate_jobs,
        _clean_jobs,
        SILVER_JOBS.keys,
        (Output(SILVER_JOBS, SILVER_JOBS.keys, moves=True),),
        QUARANTINE_JOBS,
    ),
    "nodes": RefineSpec(
        "nodes",
        nodes_tx.validate_nodes,
        _clean_nodes,
        nodes_tx.NODE_KEYS,
        (
            Output(SILVER_NODE_SAMPLES, nodes_tx.NODE_KEYS),
            Output(SILVER_NODE_DISK_SAMPLES, nodes_tx.DISK_KEYS, nodes_tx.explode_disks),
        ),
        QUARANTINE_NODES,
    ),
    "accounting_summaries": RefineSpec(
        "accounting_summaries",
        lambda df: parse_and_validate(df, contract("accounting_summaries")),
        _clean_summaries,
        SILVER_ACCOUNTING_SUMMARIES.keys,
        (Output(SILVER_ACCOUNTING_SUMMARIES, SILVER_ACCOUNTING_SUMMARIES.keys),),
        QUARANTINE_ACCOUNTING_SUMMARIES,
    ),
    "network": RefineSpec(
        "network",
        net_tx.validate_network,
        _clean_network,
        net_tx.NETWORK_KEYS,
        (Output(SILVER_NETWORK, net_tx.NETWORK_KEYS),),
        QUARANTINE_NETWORK,
    ),
}


@dataclass
class RefineStats:
    input: str = ""
    batches: int = 0
    bronze_rows: int = 0
    clean_rows: int = 0
    duplicate_rows: int = 0
    quarantined_rows: int = 0
    audit: list[dict[str, object]] = field(default_factory=list)


def _merge(
    spark: SparkSession, out: Output, rows: DataFrame, settings: Settings
) -> tuple[int, int, list[str]]:
    """MERGE a batch's rows into ``out.table``: (inserted, updated, partitions a key left).

    Partition pruning: only the target partitions the batch touches are read, so the cost of a
    batch does not grow with history (the batch's distinct partition values are few: dates or
    weeks). Where a key's partition can change (``out.moves``), the partitions the batch's keys
    are in now are found first (a semi-join on the key columns), so a re-sent job whose corrected
    end_time moves it to another ISO week updates its row, which moves, instead of inserting a
    second one."""
    path = out.table.path(settings)
    target = DeltaTable.forPath(spark, path)
    on = " AND ".join(f"t.`{k}` = s.`{k}`" for k in out.keys)
    left: list[str] = []
    for col in out.table.partition_by:
        values = {r[0] for r in rows.select(col).distinct().collect() if r[0] is not None}
        if out.moves:
            existing = _in_key_range(spark.read.format("delta").load(path), rows, out.keys)
            where_now = (
                existing.select(*out.keys, col)
                .join(rows.select(*out.keys, F.col(col).alias("_new")), list(out.keys))
                .where(~F.col(col).eqNullSafe(F.col("_new")))
                .select(col).distinct().collect()
            )  # fmt: skip  # bounded: partitions (weeks)
            left = sorted(r[0].isoformat() for r in where_now if r[0] is not None)
            values |= {r[0] for r in where_now if r[0] is not None}
        if values:
            literals = ", ".join(f"DATE'{v.isoformat()}'" for v in sorted(values))
            on += f" AND t.`{col}` IN ({literals})"
    # A matched row changes only for a newer record (NEWER_SQL: the higher offset in the key's
    # partition) with different content: a re-sent copy or a replayed batch changes nothing.
    newer = f"({NEWER_SQL}) AND NOT (s._content_hash <=> t._content_hash)"
    before = deltalog.version(spark, path)
    (
        target.alias("t")
        .merge(rows.alias("s"), on)
        .whenMatchedUpdateAll(condition=newer)
        .whenNotMatchedInsertAll()
        .execute()
    )
    last = deltalog.commits(spark, path, 1)  # the MERGE's own commit: its metrics
    # A MERGE that changed nothing (a batch without clean rows) commits nothing: the latest
    # commit is then an earlier batch's, whose counts are not this batch's.
    if not last or last[0].operation != "MERGE" or last[0].version == before:
        return 0, 0, left
    m = last[0].metrics
    if out.moves:
        _check_unique(spark, out, rows, settings)
    return int(m.get("numTargetRowsInserted", 0)), int(m.get("numTargetRowsUpdated", 0)), left


def _in_key_range(table: DataFrame, rows: DataFrame, keys: Sequence[str]) -> DataFrame:
    """``table`` cut to the batch's key range (one key column): Delta skips the files whose
    min/max statistics lie outside it, which bounds the lookup where keys grow with time."""
    if len(keys) != 1:
        return table
    low, high = rows.agg(F.min(keys[0]), F.max(keys[0])).first()
    return table.where(F.col(keys[0]).between(low, high))


def _check_unique(spark: SparkSession, out: Output, rows: DataFrame, settings: Settings) -> None:
    """After the MERGE: no key of the batch is in the table twice (where a key can move, the
    MERGE alone does not guarantee it). Only the batch's keys can have become duplicates."""
    keys = list(out.keys)
    table = spark.read.format("delta").load(out.table.path(settings))
    twice = (
        _in_key_range(table, rows, out.keys).select(*keys)
        .join(rows.select(*keys).distinct(), keys, "left_semi")
        .groupBy(*keys).count().where("count > 1")
    )  # fmt: skip
    first = twice.limit(1).collect()
    if first:
        raise QualityGateError(
            f"unique_key({','.join(keys)}) on {out.table.full_name}: "
            f"{', '.join(f'{k}={first[0][k]}' for k in keys)} is in the table "
            f"{first[0]['count']} times after the batch's MERGE"
        )


def _drop_stale_features(
    spark: SparkSession, rows: DataFrame, weeks: list[str], settings: Settings
) -> None:
    """A job that moved to another week leaves its node features under the old week: delete the
    feature rows of the batch's jobs in ``weeks`` that silver.jobs no longer has there (the
    feature refresh computes them for the new week, as for any job of the batch)."""
    jobs = spark.read.format("delta").load(SILVER_JOBS.path(settings)).select("job_id", "week")
    in_weeks = ", ".join(f"DATE'{w}'" for w in weeks)
    stale = (
        spark.read.format("delta").load(SILVER_JOB_NODE_FEATURES.path(settings))
        .where(f"week IN ({in_weeks})").select("job_id", "week")
        .join(rows.select("job_id"), "job_id", "left_semi")
        .join(jobs, ["job_id", "week"], "left_anti")
    )  # fmt: skip
    on = f"t.job_id = s.job_id AND t.week = s.week AND t.week IN ({in_weeks})"
    (
        DeltaTable.forPath(spark, SILVER_JOB_NODE_FEATURES.path(settings)).alias("t")
        .merge(stale.alias("s"), on)
        .whenMatchedDelete()
        .execute()
    )  # fmt: skip


def _append(df: DataFrame, table: Table, app: str, version: int, settings: Settings) -> None:
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", app)
        .option("txnVersion", version)
        .save(table.path(settings))
    )


def _record_checks(
    spark: SparkSession,
    results: list[CheckResult],
    spec: RefineSpec,
    batch_id: str,
    batch_num: int,
    settings: Settings,
    writer: str = APP_ID,
) -> None:
    if not results:
        return
    rows = [
        (
            batch_id,
            spec.main.full_name,
            r.check.kind,
            r.check.column,
            r.check.severity,
            r.success,
            r.detail,
        )
        for r in results
    ]
    schema = (
        "batch_id string, table_name string, check_kind string, check_column string, "
        "severity string, success boolean, detail string"
    )
    df = rows_frame(spark, rows, schema).withColumn("checked_at", F.current_timestamp())
    _append(QUALITY_RESULTS.conform(df), QUALITY_RESULTS, f"{writer}-{spec.input}-quality",
            batch_num, settings)  # fmt: skip


_AUDIT_DDL = (
    "batch_id string, input string, bronze_rows long, clean_rows long, duplicate_rows long, "
    "quarantined_rows long, inserted_rows long, updated_rows long, kafka_ts_max timestamp, "
    "arrival_rate_per_hour double, volume_drop_accepted boolean"
)


def process_batch(
    spark: SparkSession,
    spec: RefineSpec,
    bronze: DataFrame,
    batch_num: int,
    settings: Settings,
    stats: RefineStats,
    accept_volume_drop: bool = False,
    writer: str = APP_ID,
) -> None:
    """Refine one micro-batch of bronze rows (see the module docstring). ``writer``: the
    idempotent appends' application id (refine: one per checkpoint, see ``refine``)."""
    batch_id = f"{spec.input}-{batch_num}"
    validated = spec.validate(bronze).persist()
    q = clean = None
    try:
        bronze_rows = validated.count()
        if bronze_rows == 0:
            # A micro-batch without rows: bronze got a commit with no new records (OPTIMIZE's
            # dataChange=false rewrite, a property change), which still moves the stream's
            # offset. Nothing to check, write or audit (an audit row of zeros would also pull
            # the volume rule's median down); the checkpoint advances past it.
            log.info("refine %s: no rows, nothing to do", batch_id)
            return
        # the raw record text stays out of the clean rows (no silver table has it, quarantine
        # takes it from ``validated``): cached twice it was half of a batch's memory
        candidates = spec.clean(spark, validated, batch_id, settings).drop("value")
        clean = latest_per_key(candidates, spec.keys).persist()
        valid_count = candidates.count()
        clean_rows = clean.count()
        # The quarantine frame is counted as it will be written, not derived from the others:
        # a record that is neither valid nor quarantined (or both) breaks the reconciliation
        # bronze_rows = clean_rows + duplicate_rows + quarantined_rows, and the batch is refused.
        q = spec.quarantine.conform(quarantine_rows(validated, batch_id)).persist()
        quarantined = q.count()
        if valid_count + quarantined != bronze_rows:
            raise QualityGateError(
                f"refine {batch_id}: {bronze_rows} bronze records but {valid_count} valid and "
                f"{quarantined} quarantined: {bronze_rows - valid_count - quarantined:+d} records "
                "unaccounted for; nothing written"
            )

        # Gate: the table's checks, then the batch-level breaker. Nothing written yet.
        gate(spec.main, clean, rows=clean_rows,
             record=lambda results: _record_checks(spark, results, spec, batch_id, batch_num,
                                                   settings, writer))  # fmt: skip
        share = quarantined / bronze_rows if bronze_rows else 0.0
        if bronze_rows >= BREAKER_MIN_ROWS and share > max_quarantine_share():
            raise QualityGateError(
                f"quality gate failed for {spec.main.full_name}: {quarantined} of {bronze_rows} "
                f"records ({share:.0%}) would be quarantined, above the limit "
                f"{max_quarantine_share():.0%} (GRIDLAKE_MAX_QUARANTINE_SHARE); see "
                f"{spec.quarantine.full_name} reasons by re-running with a higher limit"
            )

        volume = arrival_volume(
            bronze_rows,
            validated.agg(F.max("kafka_timestamp")).first()[0],
            _previous_volumes(spark, spec.input, settings),
        )
        if volume.dropped and not accept_volume_drop:
            raise QualityGateError(
                f"quality gate failed for {spec.main.full_name}: volume drop: "
                f"{bronze_rows} records at {volume.rate_per_hour:.1f} per hour, below "
                f"{min_volume_share():.0%} of the median {volume.history_median:.1f} per hour of "
                f"the previous batches (GRIDLAKE_MIN_VOLUME_SHARE); check the producers, or "
                f"accept a genuine drop with `gridlake refine --accept-volume-drop`"
            )

        if quarantined:  # an empty append would still be a commit (of no files)
            _append(q, spec.quarantine, f"{writer}-{spec.input}-quarantine", batch_num, settings)
        inserted = updated = 0
        for n, out in enumerate(spec.outputs):
            derived = out.rows(clean)
            content = [c for c in out.table.column_names if not c.startswith("_")]
            rows = out.table.conform(with_content_hash(derived, content))
            ins, upd, left = _merge(spark, out, rows, settings)
            if n == 0:
                inserted, updated = ins, upd
            if left:
                log.info("refine %s: keys moved out of %s %s", batch_id, out.table.full_name, left)
                if out.table == SILVER_JOBS:
                    _drop_stale_features(spark, rows, left, settings)
        audit = {
            "batch_id": batch_id,
            "input": spec.input,
            "bronze_rows": bronze_rows,
            "clean_rows": clean_rows,
            "duplicate_rows": valid_count - clean_rows,
            "quarantined_rows": quarantined,
            "inserted_rows": inserted,
            "updated_rows": updated,
            "kafka_ts_max": volume.kafka_ts_max,
            "arrival_rate_per_hour": volume.rate_per_hour,
            "volume_drop_accepted": volume.dropped,
        }
        audit_df = rows_frame(spark, [audit], _AUDIT_DDL).withColumn(
            "finished_at", F.current_timestamp()
        )
        _append(BATCH_AUDIT.conform(audit_df), BATCH_AUDIT, f"{writer}-{spec.input}-audit",
                batch_num, settings)  # fmt: skip
        stats.batches += 1
        stats.bronze_rows += bronze_rows
        stats.clean_rows += clean_rows
        stats.duplicate_rows += valid_count - clean_rows
        stats.quarantined_rows += quarantined
        stats.audit.append(audit)
        log.info("refine %s: %s", batch_id, audit)
    finally:
        validated.unpersist()
        if q is not None:
            q.unpersist()
        if clean is not None:
            clean.unpersist()


def refine(
    spark: SparkSession,
    input_name: str,
    settings: Settings | None = None,
    accept_volume_drop: bool = False,
) -> RefineStats:
    """Refine everything new in bronze.<input>; returns the reconciliation of this run.
    ``accept_volume_drop``: let batches through the volume rule (an operator's decision)."""
    settings = settings or get_settings()
    spec = SPECS[input_name]
    for t in (BRONZE[input_name], *(o.table for o in spec.outputs), spec.quarantine,
              BATCH_AUDIT, QUALITY_RESULTS):  # fmt: skip
        t.ensure(spark, settings)
    stats = RefineStats(input=input_name)
    # The appends' application id names the checkpoint (its query id, kept in the checkpoint):
    # a reset checkpoint is a new writer whose batch numbers start again at 0, and Delta would
    # otherwise skip its quarantine, audit and quality appends as already written until the old
    # batch number was passed. The first batch waits for the id (start() returns it).
    started = threading.Event()
    writer: dict[str, str] = {}

    def run(df: DataFrame, n: int) -> None:
        started.wait()
        process_batch(spark, spec, df, n, settings, stats, accept_volume_drop, writer["id"])

    stream = (
        spark.readStream.format("delta")
        # A batch is bounded (a backlog is refined in several): its rows are cached twice
        # (validated, clean) and MERGEd; unbounded, a 2-day backlog of 2 M jobs ran a 6 GB
        # driver out of heap (2026-12-02)
        .option("maxFilesPerTrigger", "64")
        .option("maxBytesPerTrigger", settings.refine_max_bytes)
        .load(BRONZE[input_name].path(settings))
    )
    query = (
        stream.writeStream.foreachBatch(run)
        .option("checkpointLocation", f"{settings.checkpoint_root}/silver_{input_name}")
        .queryName(f"silver_{input_name}")
        .trigger(availableNow=True)
        .start()
    )
    writer["id"] = f"{APP_ID}-{query.id}"
    started.set()
    query.awaitTermination()
    return stats


def refine_jobs(spark: SparkSession, settings: Settings | None = None) -> RefineStats:
    return refine(spark, "jobs", settings)


@dataclass(frozen=True)
class FeatureRefresh:
    """What a refresh of silver.job_node_features did."""

    batches: list[str]  # the refine batches it caught up with
    weeks: list[str]  # the ISO weeks (Mondays) whose jobs it could touch
    inserted: int
    updated: int


FEATURES_WATERMARK_KEY = "gridlake.features.batches_through"


def _features_watermark(spark: SparkSession, settings: Settings) -> datetime | None:
    """``finished_at`` of the last refine batch silver.job_node_features caught up with, from
    the user metadata of its latest refresh commit (OPTIMIZE/VACUUM commits carry none)."""
    import json

    path = SILVER_JOB_NODE_FEATURES.path(settings)
    for limit in (1, 100):  # the latest commit, unless OPTIMIZE/VACUUM came after it
        commits = deltalog.commits(spark, path, limit)
        for commit in commits:
            try:
                value = json.loads(commit.user_metadata or "").get(FEATURES_WATERMARK_KEY)
            except (ValueError, AttributeError):
                continue
            if value:
                return datetime.fromisoformat(value)
        if len(commits) < limit:
            break
    return None


def refresh_job_node_features(
    spark: SparkSession, settings: Settings | None = None
) -> FeatureRefresh:
    """Bring silver.job_node_features up to date with every refine batch of jobs and nodes.

    The batches are those of ``silver.batch_audit`` finished after the watermark the last
    refresh committed, so a refine that crashed (or was killed) before its refresh is caught up
    by the next one. A job is recomputed when its ``silver.jobs`` row was written by one of
    those batches, or when a node or disk sample they wrote falls on its host within
    [start_time, end_time]. Only those jobs are computed, from their host's samples during their
    run, and MERGEd by (job_id, week), a row updated only when a value changed: the cost follows
    the new data, not the history, and a rerun changes nothing.
    """
    import datetime as dt
    import json

    from gridlake.silver.features import job_node_features

    settings = settings or get_settings()
    # On a fresh warehouse the first refine (nodes, before jobs) finds no silver.jobs yet: the
    # join then has an empty side rather than failing after the node samples were committed.
    for table in (SILVER_JOB_NODE_FEATURES, BATCH_AUDIT, SILVER_JOBS, SILVER_NODE_SAMPLES,
                  SILVER_NODE_DISK_SAMPLES):  # fmt: skip
        if not DeltaTable.isDeltaTable(spark, table.path(settings)):
            table.ensure(spark, settings)
    read = lambda t: spark.read.format("delta").load(t.path(settings))  # noqa: E731
    since = _features_watermark(spark, settings)
    audit = read(BATCH_AUDIT).where(F.col("input").isin(*FEATURE_INPUTS))
    if since is not None:
        audit = audit.where(F.col("finished_at") > F.lit(since))
    pending = audit.select("batch_id", "finished_at").collect()  # bounded: batches since
    if not pending:
        return FeatureRefresh([], [], 0, 0)
    batch_ids = sorted({r.batch_id for r in pending})
    through = max(r.finished_at for r in pending)
    jobs, nodes, disks = (
        read(SILVER_JOBS),
        read(SILVER_NODE_SAMPLES),
        read(SILVER_NODE_DISK_SAMPLES),
    )
    new = F.col("_batch_id").isin(batch_ids)
    # Where the new samples are: per host and day, the first and last timestamp.
    spans = (
        nodes.where(new).select("host", "ts").unionByName(disks.where(new).select("host", "ts"))
        .groupBy("host", F.to_date("ts").alias("day"))
        .agg(F.min("ts").alias("lo"), F.max("ts").alias("hi"))
    )  # fmt: skip
    sample_weeks = spans.select(F.to_date(F.date_trunc("week", "day")).alias("week"))
    # Jobs last at most days: samples of week W can belong to jobs ending in W or W + 1.
    following = sample_weeks.select(F.date_add("week", 7).alias("week"))
    weeks = sorted(
        r.week
        for r in jobs.where(new).select("week").union(sample_weeks).union(following)
        .distinct().collect()
    )  # bounded: one row per week  # fmt: skip
    candidates = jobs.where(F.col("week").isin(weeks)) if weeks else jobs.limit(0)
    covering = (
        candidates.select("job_id", "week", "host", "start_time", "end_time")
        .join(spans, "host")
        .where((F.col("start_time") <= F.col("hi")) & (F.col("end_time") >= F.col("lo")))
        .select("job_id", "week")
    )
    touched = candidates.where(new).select("job_id", "week").union(covering).distinct()
    affected = candidates.join(touched, ["job_id", "week"], "left_semi").persist()
    try:
        lo, hi = affected.agg(F.min("start_time"), F.max("end_time")).first()
        if lo is None:
            # No job to compute: nothing is committed (Delta commits no MERGE of an empty
            # source), so these batches are looked at again next time, at the cost of a filter.
            return FeatureRefresh(batch_ids, [w.isoformat() for w in weeks], 0, 0)
        days = (lo.date() - dt.timedelta(days=1), hi.date() + dt.timedelta(days=1))
        out = SILVER_JOB_NODE_FEATURES.conform(
            job_node_features(
                affected,
                nodes.where(F.col("sample_date").between(*days)),
                disks.where(F.col("sample_date").between(*days)),
            )
        )
        target = DeltaTable.forPath(spark, SILVER_JOB_NODE_FEATURES.path(settings))
        in_weeks = ", ".join(f"DATE'{w.isoformat()}'" for w in weeks)
        on = f"t.job_id = s.job_id AND t.week = s.week AND t.week IN ({in_weeks})"
        values = [c for c in SILVER_JOB_NODE_FEATURES.column_names if c not in ("job_id", "week")]
        changed = " OR ".join(f"NOT (s.`{c}` <=> t.`{c}`)" for c in values)
        key = "spark.databricks.delta.commitInfo.userMetadata"
        spark.conf.set(key, json.dumps({FEATURES_WATERMARK_KEY: through.isoformat()}))
        try:
            (
                target.alias("t")
                .merge(out.alias("s"), on)
                .whenMatchedUpdateAll(condition=changed)
                .whenNotMatchedInsertAll()
                .execute()
            )
        finally:
            spark.conf.unset(key)
    finally:
        affected.unpersist()
    last = deltalog.commits(spark, SILVER_JOB_NODE_FEATURES.path(settings), 1)
    m = last[0].metrics if last else {}
    return FeatureRefresh(
        batch_ids,
        [w.isoformat() for w in weeks],
        int(m.get("numTargetRowsInserted", 0)),
        int(m.get("numTargetRowsUpdated", 0)),
    )
