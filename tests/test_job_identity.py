"""The identity of a job in silver: one row per job_id, always, whichever ISO week its record
says; the newer record is the one with the higher Kafka offset in the key's partition (not the
producer's clock). Batches go through refine's process_batch into a warehouse of the test's own."""

from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import datetime, timedelta

import pytest

from gridlake.spark import rows_frame

from .test_validate import GOOD

pytestmark = [pytest.mark.integration, pytest.mark.slow]

T0 = datetime(2026, 11, 20, 12)  # Kafka time of the first batch
W47, W48 = "2026-11-16", "2026-11-23"


def _job(job_id: str, day: str, **kw) -> str:
    """GOOD, ending on ``day`` (its start and submit moved along)."""
    return json.dumps({**GOOD, "job_id": job_id, "submit_time": f"{day}T08:00:00Z",
                       "start_time": f"{day}T08:10:00Z", "end_time": f"{day}T10:10:00Z",
                       "wall_seconds": 7200, **kw})  # fmt: skip


def _make_warehouse(spark, settings, root):
    """Empty silver tables (and the refine's logs) of a warehouse of the test's own: a copy of
    one built once a session (five empty Delta tables: ~8 s of Spark per test under load; an
    empty table's log names no file, so a copied folder is the same table)."""
    template = root.parent.parent / "empty-silver-warehouse"
    if not (template / ".complete").is_file():
        shutil.rmtree(template, ignore_errors=True)
        _build_empty_warehouse(spark, dataclasses.replace(settings, storage_root=str(template)))
        (template / ".complete").touch()
    shutil.copytree(template, root, ignore=shutil.ignore_patterns(".complete"))
    return dataclasses.replace(settings, storage_root=str(root))


def _build_empty_warehouse(spark, local) -> None:
    from gridlake.catalog import BATCH_AUDIT, QUALITY_RESULTS, QUARANTINE_JOBS, SILVER_JOBS
    from gridlake.catalog import SILVER_JOB_NODE_FEATURES as FEATURES

    for t in (SILVER_JOBS, QUARANTINE_JOBS, BATCH_AUDIT, QUALITY_RESULTS, FEATURES):
        ddl = ", ".join(f"`{c.name}` {c.ddl_type}" for c in t.columns)
        writer = rows_frame(spark, [], ddl).write.format("delta")
        if t.partition_by:
            writer = writer.partitionBy(*t.partition_by)
        writer.save(t.path(local))


@pytest.fixture
def warehouse(spark, settings, tmp_path):
    return _make_warehouse(spark, settings, tmp_path / "warehouse")


def _batch(spark, local, n: int, records: list[tuple[str, int, datetime]]) -> None:
    """One refine batch of (json, offset, kafka_timestamp) records, all in partition 0."""
    from gridlake.silver.refine import SPECS, RefineStats, process_batch

    rows = [(value, "grid.jobs", 0, offset, ts) for value, offset, ts in records]
    bronze = rows_frame(
        spark,
        rows,
        "value string, topic string, partition int, offset long, kafka_timestamp timestamp",
    )
    process_batch(spark, SPECS["jobs"], bronze, n, local, RefineStats())


def _rows(spark, local, table) -> list[tuple]:
    df = spark.read.format("delta").load(table.path(local))
    return sorted((r.job_id, r.week.isoformat(), r.end_time.isoformat()) for r in
                  df.select("job_id", "week", "end_time").collect())  # fmt: skip


def test_a_resent_job_moved_to_another_week_keeps_one_row(spark, warehouse) -> None:
    from gridlake.catalog import SILVER_JOB_NODE_FEATURES, SILVER_JOBS

    local = warehouse
    _batch(spark, local, 0, [(_job("a", "2026-11-20"), 10, T0), (_job("b", "2026-11-20"), 11, T0)])
    assert _rows(spark, local, SILVER_JOBS) == [("a", W47, "2026-11-20T10:10:00"),
                                                ("b", W47, "2026-11-20T10:10:00")]  # fmt: skip
    # The features refresh had computed a row for job a in W47.
    feat = SILVER_JOB_NODE_FEATURES
    from pyspark.sql import functions as F

    one = rows_frame(spark, [("a", datetime(2026, 11, 16).date())], "job_id string, week date")
    planted = one.select(
        *[F.col(c.name) if c.name in ("job_id", "week")
          else F.lit(None).cast(c.ddl_type).alias(c.name) for c in feat.columns]
    )  # fmt: skip
    planted.write.format("delta").mode("append").save(feat.path(local))

    # Job a re-sent with a corrected end time in the next week, from a host whose clock is an
    # hour slow: its Kafka timestamp is older than the first record's, its offset higher.
    _batch(spark, local, 1, [(_job("a", "2026-11-24"), 12, T0 - timedelta(hours=1))])
    assert _rows(spark, local, SILVER_JOBS) == [("a", W48, "2026-11-24T10:10:00"),
                                                ("b", W47, "2026-11-20T10:10:00")]  # fmt: skip
    # Its features under the old week are gone (the refresh computes them for W48).
    left = spark.read.format("delta").load(feat.path(local)).collect()
    assert [(r.job_id, r.week.isoformat()) for r in left] == [], left

    # An older copy replayed (a lower offset, a newer clock) changes nothing.
    _batch(spark, local, 2, [(_job("a", "2026-11-20"), 10, T0 + timedelta(hours=5))])
    assert _rows(spark, local, SILVER_JOBS) == [("a", W48, "2026-11-24T10:10:00"),
                                                ("b", W47, "2026-11-20T10:10:00")]  # fmt: skip


def test_a_record_sent_after_the_row_was_refined_wins_at_a_lower_offset(spark, warehouse) -> None:
    """The topic was recreated (its offsets began again): a job re-sent after silver refined
    its row arrives at a lower offset, but its Kafka time is after the row's refinement."""
    from gridlake.catalog import SILVER_JOBS

    _batch(spark, warehouse, 0, [(_job("f", "2026-11-20"), 500, T0)])
    later = datetime.now() + timedelta(minutes=5)  # sent after the row was refined
    _batch(spark, warehouse, 1, [(_job("f", "2026-11-21"), 3, later)])
    assert _rows(spark, warehouse, SILVER_JOBS) == [("f", W47, "2026-11-21T10:10:00")]


def test_within_a_batch_the_higher_offset_wins_whatever_the_clocks(spark, warehouse) -> None:
    from gridlake.catalog import SILVER_JOBS

    late_clock = T0 - timedelta(days=1)
    _batch(spark, warehouse, 0, [(_job("c", "2026-11-20"), 20, T0),
                                 (_job("c", "2026-11-24"), 21, late_clock)])  # fmt: skip
    assert _rows(spark, warehouse, SILVER_JOBS) == [("c", W48, "2026-11-24T10:10:00")]


def test_a_job_twice_in_the_table_stops_the_batch(spark, warehouse) -> None:
    """The table-level uniqueness check: a job_id found twice after the MERGE (here planted in
    two weeks, as the code before this check could leave it) fails the batch with the job_id."""
    from gridlake.catalog import SILVER_JOBS
    from gridlake.quality import QualityGateError

    _batch(spark, warehouse, 0, [(_job("d", "2026-11-20"), 30, T0)])
    path = SILVER_JOBS.path(warehouse)
    df = spark.read.format("delta").load(path)
    from pyspark.sql import functions as F

    df.withColumn("week", F.lit(datetime(2026, 11, 23).date())).write.format("delta").mode(
        "append"
    ).save(path)
    with pytest.raises(QualityGateError, match=r"unique_key\(job_id\) on silver.jobs: job_id=d "
                       r"is in the table 2 times"):  # fmt: skip
        _batch(spark, warehouse, 1, [(_job("d", "2026-11-21"), 31, T0)])


def test_resends_leave_silver_and_gold_as_one_clean_send(spark, settings, tmp_path) -> None:
    """Acceptance 2: a job re-sent moved to another week, a correction from a host with a slow
    clock and an identical re-send leave silver.jobs (its content) and the gold tables built from
    it exactly as one clean send of the final records would."""
    import dataclasses as dc

    from gridlake.catalog import SILVER_JOBS
    from gridlake.gold.analyze import gold_frames, gold_tables
    from gridlake.ops.compare import differences

    clean = _make_warehouse(spark, settings, tmp_path / "clean")
    noisy = _make_warehouse(spark, settings, tmp_path / "noisy")
    final = {
        "g": _job("g", "2026-11-24", cpu_user_seconds=30000),  # moved from W47 to W48
        "h": _job("h", "2026-11-18"),  # re-sent unchanged
        "i": _job("i", "2026-11-19", cpu_user_seconds=20000, site="T"),  # corrected
        "j": _job("j", "2026-11-25", site="T"),
    }
    _batch(spark, clean, 0, [(v, n, T0) for n, v in enumerate(final.values())])
    slow = T0 - timedelta(hours=3)
    _batch(
        spark,
        noisy,
        0,
        [
            (_job("g", "2026-11-20"), 0, T0),
            (final["h"], 1, T0),
            (_job("i", "2026-11-19", site="T"), 2, T0),
            (final["j"], 3, T0),
        ],
    )
    _batch(spark, noisy, 1, [(final["g"], 4, slow), (final["h"], 5, T0 + timedelta(hours=1)),
                             (final["i"], 6, slow)])  # fmt: skip
    read = lambda w: spark.read.format("delta").load(SILVER_JOBS.path(w))  # noqa: E731
    content = dc.replace(
        SILVER_JOBS, columns=tuple(c for c in SILVER_JOBS.columns if not c.name.startswith("_"))
    )
    assert differences(read(clean), read(noisy), content).count() == 0
    assert read(noisy).count() == 4
    defs = {t.full_name: t for t in gold_tables()}
    for group in ("site_efficiency", "efficiency", "efficiency_outliers"):
        ours, theirs = gold_frames(read(clean), group), gold_frames(read(noisy), group)
        for name, df in ours.items():
            if name.endswith("efficiency_weekly"):  # the week and site tables hold the jobs
                assert df.count() > 0, name
            bad = differences(df, theirs[name], defs[name]).limit(3).collect()
            assert not bad, (name, bad)


def _bronze(spark, local, records: list[tuple[str, int]]) -> None:
    """Append (json, offset) records to bronze.jobs of the test's warehouse, as ingest would."""
    from pyspark.sql import functions as F

    from gridlake.catalog import BRONZE

    rows = [(v, "grid.jobs", 0, off, T0) for v, off in records]
    ddl = "value string, topic string, partition int, offset long, kafka_timestamp timestamp"
    df = rows_frame(spark, rows, ddl).select(
        "*", F.lit(None).cast("string").alias("key"), F.current_timestamp().alias("ingested_at"),
        F.current_date().alias("ingest_date"),
    )  # fmt: skip
    BRONZE["jobs"].conform(df).write.format("delta").mode("append").save(BRONZE["jobs"].path(local))


def test_a_reset_checkpoint_is_a_new_writer_and_loses_no_quarantine_or_audit(
    spark, warehouse
) -> None:
    """refine through its stream; the checkpoint is then reset (deleted) and bronze has new
    records, one of them bad: the new stream's batch 0 writes its audit row and quarantines the
    bad record (with txnAppId constant per table, Delta skipped both as already written)."""
    import shutil

    from gridlake.catalog import BATCH_AUDIT, QUARANTINE_JOBS, SILVER_JOBS, ensure_all
    from gridlake.silver.refine import refine

    ensure_all(spark)  # the names stay on the session's warehouse; this test works by path
    local = warehouse

    def bronze(records: list[tuple[str, int]]) -> None:
        _bronze(spark, local, records)

    def count(t) -> int:
        return spark.read.format("delta").load(t.path(local)).count()

    bronze([(_job("e1", "2026-11-20"), 1), (_job("e2", "2026-11-20"), 2)])
    refine(spark, "jobs", local)
    assert (count(SILVER_JOBS), count(BATCH_AUDIT), count(QUARANTINE_JOBS)) == (2, 1, 0)

    shutil.rmtree(f"{local.checkpoint_root}/silver_jobs")
    bronze([(_job("e3", "2026-11-21"), 3), (json.dumps({**GOOD, "job_id": "e4", "cores": 0}), 4)])
    refine(spark, "jobs", local)
    assert count(SILVER_JOBS) == 3  # e1, e2 absorbed again, e3 new
    audit = spark.read.format("delta").load(BATCH_AUDIT.path(local)).orderBy("finished_at")
    assert [(r.bronze_rows, r.quarantined_rows) for r in audit.collect()] == [(2, 0), (4, 1)]
    q = spark.read.format("delta").load(QUARANTINE_JOBS.path(local)).collect()
    assert [json.loads(r.raw)["job_id"] for r in q] == ["e4"], q


def test_vacuum_keeps_what_a_stalled_refine_still_has_to_read(spark, warehouse) -> None:
    """A refine stream that stopped (a refused batch waits for an operator) resumes from the
    bronze version in its checkpoint: VACUUM of bronze keeps every version since, however long
    ago, and says why; other tables keep the asked retention."""
    from datetime import timedelta

    from delta.tables import DeltaTable

    from gridlake.catalog import BRONZE, SILVER_JOBS, ensure_all
    from gridlake.ops.maintain import stream_retention, stream_start_version
    from gridlake.silver.refine import refine

    ensure_all(spark)  # the names stay on the session's warehouse; this test works by path
    local = warehouse
    checkpoint = f"{local.checkpoint_root}/silver_jobs"
    assert stream_start_version(spark, checkpoint) is None  # no stream yet
    _bronze(spark, local, [(_job("v1", "2026-11-20"), 1)])
    refine(spark, "jobs", local)
    read = DeltaTable.forPath(spark, BRONZE["jobs"].path(local)).history(1).first()["version"]
    assert stream_start_version(spark, checkpoint) == read + 1  # caught up: the next version
    # nothing committed since: nothing old to keep
    assert stream_retention(spark, BRONZE["jobs"], 168, local) == (168, "")
    _bronze(spark, local, [(_job("v2", "2026-11-20"), 2)])  # not refined: the stream waits
    unread = DeltaTable.forPath(spark, BRONZE["jobs"].path(local)).history(1).first()
    assert unread["version"] == read + 1 and stream_start_version(spark, checkpoint) == read + 1
    since = unread["timestamp"]
    fresh, why = stream_retention(spark, BRONZE["jobs"], 168, local, now=since + timedelta(days=2))
    assert (fresh, why) == (168, "")
    hours, why = stream_retention(spark, BRONZE["jobs"], 168, local, now=since + timedelta(days=30))
    assert hours == pytest.approx(30 * 24 + 24, abs=0.1)
    assert f"refine stream still reads from version {read + 1}" in why
    silver = stream_retention(spark, SILVER_JOBS, 168, local, now=since + timedelta(days=30))
    assert silver == (168, "")


def test_a_backlog_is_refined_in_bounded_batches_and_the_newest_record_still_wins(
    spark, warehouse
) -> None:
    """Three ingest commits waiting in bronze (a backlog after an outage) with a byte bound
    below one file: refine takes each file as a micro-batch of its own, not all as one (one
    unbounded batch of a 2-day backlog, 2 M jobs, ran a 6 GB driver out of heap), each
    reconciled; a job re-sent in a later commit still replaces its first record across
    batches; a bad record is quarantined."""
    from delta.tables import DeltaTable

    from gridlake.catalog import BATCH_AUDIT, BRONZE, QUARANTINE_JOBS, SILVER_JOBS, ensure_all
    from gridlake.silver.refine import refine

    ensure_all(spark)  # the names stay on the session's warehouse; this test works by path
    local = dataclasses.replace(warehouse, refine_max_bytes="1b")
    _bronze(spark, local, [(_job("g1", "2026-11-20"), 1), (_job("g2", "2026-11-20"), 2)])
    _bronze(spark, local, [(_job("g3", "2026-11-21"), 3), ("{not json", 4)])
    _bronze(spark, local, [(_job("g1", "2026-11-24"), 5)])  # g1 corrected: a later week
    files = DeltaTable.forPath(spark, BRONZE["jobs"].path(local)).detail().first()["numFiles"]
    assert files >= 3  # at least one per commit
    stats = refine(spark, "jobs", local)
    assert stats.batches == files, stats.audit  # one file a batch: each is over the bound
    assert sum(a["bronze_rows"] for a in stats.audit) == 5
    for a in stats.audit:
        assert a["bronze_rows"] == a["clean_rows"] + a["duplicate_rows"] + a["quarantined_rows"]
    assert sum(a["inserted_rows"] for a in stats.audit) == 3, stats.audit
    assert sum(a["updated_rows"] for a in stats.audit) == 1  # g1's correction, a later batch
    assert _rows(spark, local, SILVER_JOBS) == [("g1", W48, "2026-11-24T10:10:00"),
                                                ("g2", W47, "2026-11-20T10:10:00"),
                                                ("g3", W47, "2026-11-21T10:10:00")]  # fmt: skip
    quarantined = spark.read.format("delta").load(QUARANTINE_JOBS.path(local)).collect()
    assert [r.raw for r in quarantined] == ["{not json"]
    audit = spark.read.format("delta").load(BATCH_AUDIT.path(local)).count()
    assert audit == files
    # nothing new: a second run takes no batch
    assert refine(spark, "jobs", local).batches == 0
