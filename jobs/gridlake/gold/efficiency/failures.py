"""gold.failure_vs_duration: failure rate by wall-clock bin, with Wilson intervals."""

from __future__ import annotations

from itertools import pairwise

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.efficiency.columns import _wilson_columns
from gridlake.gold.efficiency.params import DURATION_BIN_EDGES_SECONDS
from gridlake.gold.efficiency.state import ALL_ATTEMPTS, BIN_HIGH, BIN_LOW, durations_state

# --------------------------------------------------------------------------------------------
# gold.failure_vs_duration
# --------------------------------------------------------------------------------------------


def _fmt_duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{round(seconds / 60)}m"
    hours = seconds / 3600
    return f"{hours:.1f}h" if hours < 10 else f"{round(hours)}h"


_EDGES = DURATION_BIN_EDGES_SECONDS
_BIN_LOW, _BIN_HIGH = BIN_LOW, BIN_HIGH
_BIN_LABELS: tuple[str, ...] = (
    f"<{_fmt_duration(_EDGES[0])}",
    *(f"{_fmt_duration(lo)}-{_fmt_duration(hi)}" for lo, hi in pairwise(_EDGES)),
    f">={_fmt_duration(_EDGES[-1])}",
)


def failure_vs_duration(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (job_type, failure_mode incl. 'ALL', wall-clock bin)."""
    return failure_vs_duration_from(durations_state(jobs))


def failure_vs_duration_from(durations: DataFrame) -> DataFrame:
    """The state of any set of weeks (gold._state_efficiency_durations rows) -> one row per
    (job_type, failure_mode incl. 'ALL', wall-clock bin) over those weeks."""
    star = F.col("failure_mode") == ALL_ATTEMPTS
    per_bin = (
        durations.where(star)
        .groupBy("job_type", "bin_index")
        .agg(
            F.sum("attempts").alias("attempts"),
            (F.sum("exposure_seconds") / 3600.0).alias("exposure"),
        )
    )
    attempts = per_bin.where(F.col("attempts") > 0).drop("exposure")
    exposure = per_bin.drop("attempts")
    by_mode = durations.where(~star)
    failed = by_mode.unionByName(by_mode.withColumn("failure_mode", F.lit("ALL")))
    failures = failed.groupBy("job_type", "failure_mode", "bin_index").agg(
        F.sum("attempts").alias("failures"),
        (F.sum("cores_wall_seconds") / 3600.0).alias("wasted_core_hours"),
    )
    modes = (
        by_mode.select("job_type", "failure_mode")
        .unionByName(attempts.select("job_type", F.lit("ALL").alias("failure_mode")))
        .distinct()
    )
    grid = (
        attempts.join(modes, "job_type")
        .join(failures, ["job_type", "failure_mode", "bin_index"], "left")
        .join(exposure, ["job_type", "bin_index"], "left")
    )
    k = F.coalesce(F.col("failures"), F.lit(0)).cast("bigint")
    n = F.col("attempts").cast("double")
    low, high = _wilson_columns(k.cast("double"), n)
    idx = F.col("bin_index") + 1
    return grid.select(
        "job_type",
        "failure_mode",
        "bin_index",
        F.element_at(F.array(*[F.lit(x) for x in _BIN_LABELS]), idx).alias("duration_bin"),
        (F.element_at(F.array(*[F.lit(x) for x in _BIN_LOW]), idx) / 3600.0).alias("bin_low_hours"),
        (
            F.element_at(
                F.array(*[F.lit(x).cast("double") for x in _BIN_HIGH]),
                idx,
            )
            / 3600.0
        ).alias("bin_high_hours"),
        "attempts",
        k.alias("failures"),
        (k / n).alias("failure_probability"),
        low.alias("wilson_low"),
        high.alias("wilson_high"),
        F.col("exposure").alias("exposure_wall_hours"),
        F.try_divide(k.cast("double"), F.when(F.col("exposure") > 0, F.col("exposure"))).alias(
            "hazard_per_hour"
        ),
        F.coalesce(F.col("wasted_core_hours"), F.lit(0.0)).alias("wasted_core_hours"),
    )
