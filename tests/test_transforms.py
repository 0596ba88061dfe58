"""Pure transforms on small DataFrames, against hand-worked answers."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from gridlake.catalog import GOLD_SITE_EFFICIENCY_WEEKLY
from gridlake.gold.site_efficiency import site_efficiency_weekly
from gridlake.silver.jobs import derive_job_columns, latest_per_key
from gridlake.spark import rows_frame

SILVER_COLS = "site string, vo string, week date, status string, is_outlier boolean, cores_wall_seconds double, cpu_seconds double"  # noqa: E501


def _silver(spark, rows):
    """SILVER_COLS rows plus the other inputs of the gold measures (distinct job ids, no
    retries, no events, no HS23): tests/test_gold_efficiency.py covers those."""
    return (
        rows_frame(spark, rows, SILVER_COLS)
        .withColumn("job_id", F.monotonically_increasing_id().cast("string"))
        .withColumn("retry_of", F.lit(None).cast("string"))
        .withColumn("events", F.lit(None).cast("bigint"))
        .withColumn("hs23_core_hours", F.lit(None).cast("double"))
    )


def test_site_efficiency_weekly_matches_hand_computation(spark) -> None:
    w46, w47 = date(2026, 11, 9), date(2026, 11, 16)
    rows = [
        # site A, atlas, week 47: three attempts
        ("A", "atlas", w47, "success", False, 8 * 3600.0, 7 * 3600.0),  # 8 core-h, 7 cpu-h
        ("A", "atlas", w47, "failed", False, 2 * 3600.0, 0.5 * 3600.0),  # 2 core-h wasted
        ("A", "atlas", w47, "success", True, 1 * 3600.0, 1.5 * 3600.0),  # outlier, still counted
        # site A, cms, week 47: one attempt
        ("A", "cms", w47, "success", False, 4 * 3600.0, 2 * 3600.0),
        # site B, atlas, week 46: only a failure
        ("B", "atlas", w46, "failed", False, 10 * 3600.0, 9 * 3600.0),
    ]
    jobs = _silver(spark, rows)
    out = {
        (r.site, r.vo, r.week): r
        for r in GOLD_SITE_EFFICIENCY_WEEKLY.conform(site_efficiency_weekly(jobs)).collect()
    }
    assert set(out) == {("A", "atlas", w47), ("A", "cms", w47), ("B", "atlas", w46)}

    a = out[("A", "atlas", w47)]
    assert (a.jobs, a.failed_jobs, a.outlier_jobs) == (3, 1, 1)
    assert a.core_hours == pytest.approx(11.0)  # 8 + 2 + 1
    assert a.cpu_hours == pytest.approx(9.0)  # 7 + 0.5 + 1.5
    assert a.cpu_efficiency == pytest.approx(9.0 / 11.0)  # ratio of sums, not mean of ratios
    assert a.good_cpu_over_all_wall == pytest.approx(8.5 / 11.0)  # (7 + 1.5) / 11
    assert a.wasted_core_hours == pytest.approx(2.0)

    c = out[("A", "cms", w47)]
    assert (c.jobs, c.failed_jobs, c.outlier_jobs) == (1, 0, 0)
    assert c.cpu_efficiency == pytest.approx(0.5)
    assert c.wasted_core_hours == pytest.approx(0.0)

    b = out[("B", "atlas", w46)]
    assert b.cpu_efficiency == pytest.approx(0.9)
    assert b.good_cpu_over_all_wall == pytest.approx(0.0)  # no successful job
    assert b.wasted_core_hours == pytest.approx(10.0)


def test_zero_wall_time_gives_null_efficiency_not_an_error(spark) -> None:
    jobs = _silver(spark, [("A", "atlas", date(2026, 11, 16), "failed", False, 0.0, 0.0)])
    (row,) = site_efficiency_weekly(jobs).collect()
    assert row.cpu_efficiency is None
    assert row.core_hours == 0.0


def test_derived_job_columns(spark) -> None:
    schema = (
        "job_id string, cores long, wall_seconds double, cpu_user_seconds double, "
        "cpu_system_seconds double, end_time timestamp"
    )
    df = rows_frame(
        spark,
        [
            # Sunday 23:59 belongs to the ISO week starting Monday 2026-11-16
            ("normal", 8, 1000.0, 6000.0, 400.0, datetime(2026, 11, 22, 23, 59)),
            # exactly at the 5% tolerance: not an outlier
            ("edge", 1, 1000.0, 1050.0, 0.0, datetime(2026, 11, 23, 0, 0)),
            # above it: outlier
            ("over", 1, 1000.0, 1000.0, 51.0, datetime(2026, 11, 16, 0, 0)),
            ("zero", 4, 0.0, 0.0, 0.0, datetime(2026, 11, 16, 0, 0)),
        ],
        schema,
    )
    out = {r.job_id: r for r in derive_job_columns(df).collect()}
    assert out["normal"].cpu_seconds == 6400.0
    assert out["normal"].cores_wall_seconds == 8000.0
    assert out["normal"].cpu_efficiency == pytest.approx(0.8)
    assert out["normal"].week == date(2026, 11, 16)
    assert out["edge"].week == date(2026, 11, 23)
    assert out["edge"].is_outlier is False
    assert out["over"].is_outlier is True
    assert out["zero"].cpu_efficiency is None


def test_latest_per_key_keeps_the_highest_offset_of_the_keys_partition(spark) -> None:
    t0, t1 = datetime(2026, 11, 16, 8), datetime(2026, 11, 16, 9)
    row = Row("job_id", "_kafka_partition", "_kafka_timestamp", "_kafka_offset", "v")
    df = spark.createDataFrame(
        [
            row("j1", 0, t0, 1, "old"),
            row("j1", 0, t0, 7, "newest: highest offset, from a host with a slow clock"),
            row("j1", 0, t1, 5, "a newer clock, an earlier offset"),
            row("j2", 1, t0, 2, "only"),
            # a key in two partitions (the topic was re-partitioned): the clock, then the offset
            row("j3", 0, t1, 3, "newest by time"),
            row("j3", 1, t0, 9, "higher offset of another partition"),
        ],
    )
    out = {r.job_id: r.v for r in latest_per_key(df, "job_id").collect()}
    assert out == {"j1": "newest: highest offset, from a host with a slow clock", "j2": "only",
                   "j3": "newest by time"}  # fmt: skip


def test_benchmark_precedence_declared_then_reference(spark) -> None:
    from gridlake.reference.cpu_models import classify
    from gridlake.silver.jobs import with_benchmark

    haswell = "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz"
    reference_hs23 = classify(haswell).hs23_per_core
    assert reference_hs23 is not None and reference_hs23 > 5
    df = rows_frame(
        spark,
        [
            ("declared23", haswell, "hs23", 12.5, 7200.0),
            ("declared06", haswell, "hs06", 10.0, 3600.0),
            ("reference", haswell, None, None, 3600.0),
            ("family-only", "Intel(R) Xeon(R) CPU E5-2699 v3 @ 2.30GHz", None, None, 3600.0),
            ("unknown", "QEMU Virtual CPU version 2.5+", None, None, 3600.0),
        ],
        "job_id string, cpu_model string, benchmark_type string, benchmark_per_core double, "
        "cores_wall_seconds double",
    )
    out = {r.job_id: r for r in with_benchmark(df).collect()}
    assert out["declared23"].hs23_per_core == 12.5
    assert out["declared23"].hs23_core_hours == pytest.approx(12.5 * 2)
    assert out["declared23"].hs23_source == "declared-hs23"
    assert out["declared06"].hs23_per_core == 10.0
    assert out["declared06"].hs23_source == "declared-hs06"
    assert out["reference"].hs23_per_core == pytest.approx(reference_hs23)
    assert out["reference"].hs23_source == "reference"
    assert out["reference"].microarchitecture == "Haswell"
    assert out["family-only"].microarchitecture == "Haswell"
    assert out["family-only"].cpu_match in ("exact", "family")
    assert out["unknown"].microarchitecture is None
    assert out["unknown"].hs23_per_core is None
    assert out["unknown"].cpu_match == "unknown"


def test_rows_frame_equals_create_data_frame_for_every_kind_of_row(spark) -> None:
    """gridlake.spark.rows_frame (Arrow, no Python worker) gives the rows and types that
    createDataFrame of a list gives: tuples, Rows by name in another order, mappings, nulls,
    naive timestamps (local time either way), dates, arrays, structs, maps."""
    from datetime import timedelta, timezone

    ddl = (
        "s string, n bigint, i int, x double, b boolean, t timestamp, d date, "
        "a array<string>, st struct<k:int,v:string>, m map<string,double>"
    )
    t = datetime(2026, 11, 16, 8, 30, 15, 123456)
    aware = datetime(2026, 11, 16, 9, 0, tzinfo=timezone(timedelta(hours=2)))
    rows = [
        ("a", 2**40, 7, 0.25, True, t, date(2026, 11, 16), ["p", None], (1, "z"), {"k": 1.5}),
        ("b", -1, None, -0.5, False, aware, None, [], None, {}),
        (None,) * 10,
    ]
    named = [Row(n=3, s="c", i=1, x=1.0, b=None, t=None, d=None, a=None, st=Row(k=2, v="w"),
                 m=None)]  # fmt: skip
    mapped = [{"s": "d", "x": 2.0}]  # a mapping's missing columns are null
    ours = rows_frame(spark, rows + named + mapped, ddl)
    theirs = spark.createDataFrame([*rows, tuple(named[0][c] for c in ours.columns)], ddl)
    assert ours.schema == theirs.schema
    got, want = ours.collect(), theirs.collect()
    assert got[:-1] == want
    assert got[-1].asDict() == {**{c: None for c in ours.columns}, "s": "d", "x": 2.0}
    assert rows_frame(spark, [], ddl).schema == theirs.schema
    assert rows_frame(spark, [], ddl).count() == 0
    with pytest.raises(ValueError, match="2 values for 10 columns"):
        rows_frame(spark, [("a", 1)], ddl)
