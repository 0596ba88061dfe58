"""silver.job_node_features: the bucketed interval join against hand-worked answers."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from gridlake.silver.features import job_buckets, job_node_features
from gridlake.spark import rows_frame

JOBS = (
    "job_id string, site string, host string, start_time timestamp, end_time timestamp, week date"
)
VM = (
    "host string, ts timestamp, kind string, us double, wa double, b double, si double, "
    "so double, cache_kb double, interval_seconds double"
)
DISK = (
    "host string, ts timestamp, device string, util_pct double, r_await_ms double, "
    "rkb_s double, wkb_s double"
)


def t(h: int, m: int = 0) -> datetime:
    return datetime(2026, 11, 18, h, m)


def test_interval_edges_buckets_and_aggregates(spark) -> None:
    jobs = rows_frame(
        spark,
        [
            ("j1", "S", "wn1", t(10, 30), t(12, 30), date(2026, 11, 16)),
            ("j2", "S", "wn2", t(10), t(11), date(2026, 11, 16)),  # no samples on wn2
        ],
        JOBS,
    )
    vm = rows_frame(
        spark,
        [
            ("wn1", t(10, 29), "vmstat", 99.0, 99.0, 9.0, 9.0, 9.0, 1.0, 60.0),  # before start
            ("wn1", t(10, 30), "vmstat", 80.0, 5.0, 0.0, 0.0, 0.0, 1000.0, 60.0),  # at start
            ("wn1", t(11, 0), "vmstat", 60.0, 20.0, 2.0, 10.0, 4.0, 900.0, 60.0),  # next bucket
            ("wn1", t(12, 30), "vmstat", 40.0, 35.0, 4.0, 0.0, 1.0, 400.0, 60.0),  # at end
            ("wn1", t(12, 31), "vmstat", 99.0, 99.0, 9.0, 9.0, 9.0, 1.0, 60.0),  # after end
            ("wn9", t(11, 0), "vmstat", 99.0, 99.0, 9.0, 9.0, 9.0, 1.0, 60.0),  # other host
            ("wn1", t(11, 0), "iostat", None, None, None, None, None, None, 60.0),  # not vmstat
        ],
        VM,
    )
    disks = rows_frame(
        spark,
        [
            ("wn1", t(11, 0), "sda", 90.0, 30.0, 100.0, 10.0),
            ("wn1", t(11, 0), "sdb", 10.0, 50.0, 20.0, 5.0),  # busiest = 90, slowest = 50
            ("wn1", t(12, 0), "sda", 70.0, 10.0, 50.0, 0.0),
            ("wn1", t(13, 0), "sda", 100.0, 99.0, 1.0, 1.0),  # after end
        ],
        DISK,
    )
    out = {r.job_id: r for r in job_node_features(jobs, vm, disks).collect()}
    j1 = out["j1"]
    assert j1.vmstat_samples == 3
    assert j1.us_mean == pytest.approx(60.0)
    assert j1.wa_mean == pytest.approx(20.0)
    assert j1.wa_p95 == pytest.approx(35.0)
    assert j1.b_mean == pytest.approx(2.0)
    assert j1.swap_in_kb == pytest.approx(10.0 * 60)
    assert j1.swap_out_kb == pytest.approx(5.0 * 60)
    assert j1.cache_trend_kb == pytest.approx(400.0 - 1000.0)
    assert j1.iostat_samples == 2
    assert j1.disk_util_p95 == pytest.approx(90.0)
    assert j1.r_await_ms_p95 == pytest.approx(50.0)
    assert j1.read_kb_s_mean == pytest.approx((120.0 + 50.0) / 2)
    j2 = out["j2"]
    assert (j2.vmstat_samples, j2.iostat_samples) == (0, 0)
    assert j2.wa_mean is None


def test_a_job_spans_one_bucket_per_hour_it_touches(spark) -> None:
    jobs = rows_frame(spark, [("j", "S", "h", t(10, 59), t(13, 0), date(2026, 11, 16))], JOBS)
    assert job_buckets(jobs).count() == 4  # 10h, 11h, 12h, 13h


@pytest.mark.integration
@pytest.mark.slow
def test_refresh_catches_up_with_every_batch_and_recomputes_only_touched_jobs(
    spark, settings, tmp_path
) -> None:
    """The incremental refresh against a from-scratch computation: new jobs are inserted, a job
    whose host got late samples is updated, the others are left alone; a refine whose refresh
    never ran (killed in between) is caught up by the next refresh; a rerun commits nothing."""
    import dataclasses
    from datetime import timedelta

    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from gridlake.catalog import (
        BATCH_AUDIT,
        SILVER_JOB_NODE_FEATURES,
        SILVER_JOBS,
        SILVER_NODE_DISK_SAMPLES,
        SILVER_NODE_SAMPLES,
    )
    from gridlake.silver.refine import refresh_job_node_features

    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    for table in (SILVER_JOBS, SILVER_NODE_SAMPLES, SILVER_NODE_DISK_SAMPLES, BATCH_AUDIT,
                  SILVER_JOB_NODE_FEATURES):  # fmt: skip
        ddl = ", ".join(f"`{c.name}` {c.ddl_type}" for c in table.columns)
        empty = rows_frame(spark, [], ddl).write.format("delta")
        empty.partitionBy(*table.partition_by).save(table.path(local))

    def append(table, df) -> None:
        missing = [F.lit(None).alias(c) for c in table.column_names if c not in df.columns]
        table.conform(df.select("*", *missing)).write.format("delta").mode("append").save(
            table.path(local)
        )

    finished = datetime(2026, 11, 18, 23, 0)

    def batch(batch_id: str, jobs=None, vm=None, disks=None) -> None:
        nonlocal finished
        if jobs is not None:
            append(SILVER_JOBS, jobs.withColumn("_batch_id", F.lit(batch_id)))
        for table, df in ((SILVER_NODE_SAMPLES, vm), (SILVER_NODE_DISK_SAMPLES, disks)):
            if df is not None:
                dated = df.withColumn("sample_date", F.to_date("ts"))
                append(table, dated.withColumn("_batch_id", F.lit(batch_id)))
        finished += timedelta(minutes=15)
        audit = rows_frame(
            spark,
            [(batch_id, batch_id.split("-")[0], finished)],
            "batch_id string, input string, finished_at timestamp",
        )
        append(BATCH_AUDIT, audit)

    week = date(2026, 11, 16)
    jobs = lambda *rows: rows_frame(spark, list(rows), JOBS)  # noqa: E731

    def vm(*rows):
        vm_rows = [(h, ts, "vmstat", us, wa, 0.0, 0.0, 0.0, 100.0, 60.0) for h, ts, us, wa in rows]
        return rows_frame(spark, vm_rows, VM)

    def disks(*rows):
        return rows_frame(spark, [(h, ts, "sda", u, 5.0, 10.0, 1.0) for h, ts, u in rows], DISK)

    def features() -> dict[str, tuple]:
        df = spark.read.format("delta").load(SILVER_JOB_NODE_FEATURES.path(local))
        cols = ["vmstat_samples", "us_mean", "wa_mean", "iostat_samples", "disk_util_p95"]
        return {r.job_id: tuple(r[c] for c in cols) for r in df.collect()}

    def from_scratch() -> dict[str, tuple]:
        read = lambda t: spark.read.format("delta").load(t.path(local))  # noqa: E731
        df = job_node_features(
            read(SILVER_JOBS), read(SILVER_NODE_SAMPLES), read(SILVER_NODE_DISK_SAMPLES)
        )
        cols = ["vmstat_samples", "us_mean", "wa_mean", "iostat_samples", "disk_util_p95"]
        return {r.job_id: tuple(r[c] for c in cols) for r in df.collect()}

    def version() -> int:
        table = DeltaTable.forPath(spark, SILVER_JOB_NODE_FEATURES.path(local))
        return table.history(1).first()["version"]

    batch("nodes-0", vm=vm(("wn1", t(10), 50.0, 10.0), ("wn1", t(11), 70.0, 30.0)),
          disks=disks(("wn1", t(10), 40.0)))  # fmt: skip
    batch("jobs-0", jobs=jobs(("j1", "S", "wn1", t(9, 30), t(11, 30), week),
                              ("j2", "S", "wn2", t(9), t(12), week)))  # fmt: skip
    first = refresh_job_node_features(spark, local)
    # the samples' week, and the next one (a job ending there may have run over them)
    assert sorted(first.batches) == ["jobs-0", "nodes-0"]
    assert first.weeks == ["2026-11-16", "2026-11-23"]
    assert (first.inserted, first.updated) == (2, 0)
    assert features() == {
        "j1": (2, 60.0, 20.0, 1, 40.0),
        "j2": (0, None, None, 0, None),
    }
    assert features() == from_scratch()

    v = version()
    again = refresh_job_node_features(spark, local)  # nothing new since: no commit
    assert (again.batches, again.inserted, again.updated, version()) == ([], 0, 0, v)

    # Late samples of wn1 inside j1, then a new job on wn3 whose refine was killed before its
    # refresh; then a refine on wn2 outside j2's run. One refresh catches up with all three.
    batch("nodes-1", vm=vm(("wn1", t(11, 15), 90.0, 60.0), ("wn2", t(13), 10.0, 0.0)))
    batch("jobs-1", jobs=jobs(("j3", "S", "wn3", t(12), t(13), week)))
    batch("nodes-2", vm=vm(("wn3", t(12, 30), 20.0, 80.0)), disks=disks(("wn3", t(12, 30), 99.0)))
    caught = refresh_job_node_features(spark, local)
    assert sorted(caught.batches) == ["jobs-1", "nodes-1", "nodes-2"]
    assert (caught.inserted, caught.updated) == (1, 1)  # j3 new, j1 changed, j2 left alone
    assert features() == {
        "j1": (3, 70.0, pytest.approx(100.0 / 3), 1, 40.0),
        "j2": (0, None, None, 0, None),
        "j3": (1, 20.0, 80.0, 1, 99.0),
    }
    assert features() == from_scratch()
