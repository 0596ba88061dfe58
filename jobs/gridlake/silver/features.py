"""silver.job_node_features: each job's node samples during [start_time, end_time], summarised.

An interval join at grid scale. Joining jobs to samples on host alone would pair every job with
every sample its host ever sent; instead both sides carry a time bucket (an hour by default): a
job is expanded into the buckets it spans (a 2-day job: 49 rows), a sample has one bucket, and
the equi-join on (host, bucket) is followed by the exact ts-in-interval filter. Work grows with
jobs x hours + samples, not jobs x samples. Pure DataFrame -> DataFrame; built-ins only.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

BUCKET_SECONDS = 3600


def _bucket(ts_col: str, seconds: int) -> F.Column:
    return F.floor(F.unix_timestamp(F.col(ts_col)) / seconds)


def job_buckets(jobs: DataFrame, seconds: int = BUCKET_SECONDS) -> DataFrame:
    """One row per (job, time bucket it overlaps)."""
    return jobs.select(
        "job_id",
        "host",
        "start_time",
        "end_time",
        F.explode(F.sequence(_bucket("start_time", seconds), _bucket("end_time", seconds))).alias(
            "bucket"
        ),
    )


def _in_interval(df: DataFrame) -> DataFrame:
    return df.filter((F.col("ts") >= F.col("start_time")) & (F.col("ts") <= F.col("end_time")))


def job_node_features(
    jobs: DataFrame,
    node_samples: DataFrame,
    disk_samples: DataFrame,
    seconds: int = BUCKET_SECONDS,
) -> DataFrame:
    """silver.jobs x node samples -> one row per job (jobs without samples: count 0, nulls)."""
    jb = job_buckets(jobs, seconds)

    rx = (
        F.col("net_rx_kb_s")
        if "net_rx_kb_s" in node_samples.columns
        else F.lit(None).cast("double")  # samples from before the network counters
    )
    vm = node_samples.filter(F.col("kind") == "vmstat").select(
        "host", "ts", "us", "wa", "b", "si", "so", "cache_kb", "interval_seconds",
        rx.alias("net_rx_kb_s"), _bucket("ts", seconds).alias("bucket"),
    )  # fmt: skip
    jv = _in_interval(jb.join(vm, ["host", "bucket"]))
    vm_agg = jv.groupBy("job_id").agg(
        F.count(F.lit(1)).alias("vmstat_samples"),
        F.avg("us").alias("us_mean"),
        F.percentile_approx("us", 0.95).alias("us_p95"),
        F.avg("wa").alias("wa_mean"),
        F.percentile_approx("wa", 0.95).alias("wa_p95"),
        F.avg("b").alias("b_mean"),
        F.percentile_approx("b", 0.95).alias("b_p95"),
        F.sum(F.col("si") * F.col("interval_seconds")).alias("swap_in_kb"),
        F.sum(F.col("so") * F.col("interval_seconds")).alias("swap_out_kb"),
        (F.max_by("cache_kb", "ts") - F.min_by("cache_kb", "ts")).alias("cache_trend_kb"),
        F.avg("net_rx_kb_s").alias("net_rx_kb_s_mean"),
    )

    # Per sample first (the busiest device, the total rate), then per job.
    per_sample = disk_samples.groupBy("host", "ts").agg(
        F.max("util_pct").alias("util_pct"),
        F.max("r_await_ms").alias("r_await_ms"),
        F.sum("rkb_s").alias("rkb_s"),
        F.sum("wkb_s").alias("wkb_s"),
    )
    ds = per_sample.withColumn("bucket", _bucket("ts", seconds))
    jd = _in_interval(jb.join(ds, ["host", "bucket"]))
    disk_agg = jd.groupBy("job_id").agg(
        F.count(F.lit(1)).alias("iostat_samples"),
        F.percentile_approx("util_pct", 0.95).alias("disk_util_p95"),
        F.percentile_approx("r_await_ms", 0.95).alias("r_await_ms_p95"),
        F.avg("rkb_s").alias("read_kb_s_mean"),
        F.avg("wkb_s").alias("write_kb_s_mean"),
    )

    base = jobs.select("job_id", "site", "host", "start_time", "end_time", "week")
    return (
        base.join(vm_agg, "job_id", "left")
        .join(disk_agg, "job_id", "left")
        .withColumn("vmstat_samples", F.coalesce("vmstat_samples", F.lit(0)))
        .withColumn("iostat_samples", F.coalesce("iostat_samples", F.lit(0)))
    )
