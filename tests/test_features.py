"""silver.job_node_features: the bucketed interval join against hand-worked answers."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from gridlake.silver.features import job_buckets, job_node_features

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
    jobs = spark.createDataFrame(
        [
            ("j1", "S", "wn1", t(10, 30), t(12, 30), date(2026, 11, 16)),
            ("j2", "S", "wn2", t(10), t(11), date(2026, 11, 16)),  # no samples on wn2
        ],
        JOBS,
    )
    vm = spark.createDataFrame(
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
    disks = spark.createDataFrame(
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
    jobs = spark.createDataFrame([("j", "S", "h", t(10, 59), t(13, 0), date(2026, 11, 16))], JOBS)
    assert job_buckets(jobs).count() == 4  # 10h, 11h, 12h, 13h


@pytest.mark.integration
@pytest.mark.slow
def test_slow_storage_site_jobs_see_iowait_and_busy_disks(spark, gold_demo) -> None:
    from pyspark.sql import functions as F

    from gridlake.tables import SILVER_JOB_NODE_FEATURES

    slow = gold_demo.truth["slow_storage_site"]
    feats = spark.read.format("delta").load(SILVER_JOB_NODE_FEATURES.path())
    with_samples = feats.filter(F.col("vmstat_samples") > 0)
    assert with_samples.count() > 20
    by_site = {
        r.is_slow: r
        for r in with_samples.groupBy((F.col("site") == slow).alias("is_slow"))
        .agg(F.avg("wa_mean").alias("wa"), F.avg("disk_util_p95").alias("util"))
        .collect()
    }
    assert by_site[True].wa > 3 * by_site[False].wa
    assert by_site[True].util > 2 * by_site[False].util
    assert feats.count() == feats.select("job_id").distinct().count()
