"""gold.failure_vs_duration: failure rate by wall-clock bin, with Wilson intervals."""

from __future__ import annotations

from functools import reduce
from itertools import pairwise
from operator import add

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.efficiency.columns import _failed, _wilson_columns
from gridlake.gold.efficiency.params import DURATION_BIN_EDGES_SECONDS

# --------------------------------------------------------------------------------------------
# gold.failure_vs_duration
# --------------------------------------------------------------------------------------------


def _fmt_duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{round(seconds / 60)}m"
    hours = seconds / 3600
    return f"{hours:.1f}h" if hours < 10 else f"{round(hours)}h"


_EDGES = DURATION_BIN_EDGES_SECONDS
_BIN_LOW: tuple[float, ...] = (0.0, *map(float, _EDGES))
_BIN_HIGH: tuple[float | None, ...] = (*map(float, _EDGES), None)
_BIN_LABELS: tuple[str, ...] = (
    f"<{_fmt_duration(_EDGES[0])}",
    *(f"{_fmt_duration(lo)}-{_fmt_duration(hi)}" for lo, hi in pairwise(_EDGES)),
    f">={_fmt_duration(_EDGES[-1])}",
)


def _bin_index(wall: SparkColumn) -> SparkColumn:
    """Number of edges at or below wall: 0 (< first edge) .. len(edges) (>= last edge)."""
    return reduce(add, [F.when(wall >= F.lit(float(e)), 1).otherwise(0) for e in _EDGES]).cast(
        "int"
    )


def _exposure_in_bin(wall: SparkColumn, b: int) -> SparkColumn:
    """Seconds of an attempt's run time inside bin b: clamp(wall - low, 0, high - low)."""
    low, high = _BIN_LOW[b], _BIN_HIGH[b]
    inside = wall - F.lit(low) if high is None else F.least(wall, F.lit(high)) - F.lit(low)
    return F.greatest(inside, F.lit(0.0))


def failure_vs_duration(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (job_type, failure_mode incl. 'ALL', wall-clock bin)."""
    wall = F.col("wall_seconds").cast("double")
    binned = jobs.select(
        "job_type",
        "status",
        "cores_wall_seconds",
        F.coalesce(F.col("failure_mode"), F.lit("unknown")).alias("_mode"),
        _bin_index(wall).alias("bin_index"),
    )
    attempts = binned.groupBy("job_type", "bin_index").agg(F.count(F.lit(1)).alias("attempts"))
    failed = binned.where(_failed()).withColumn(
        "failure_mode", F.explode(F.array(F.col("_mode"), F.lit("ALL")))
    )
    failures = failed.groupBy("job_type", "failure_mode", "bin_index").agg(
        F.count(F.lit(1)).alias("failures"),
        (F.sum("cores_wall_seconds") / 3600.0).alias("wasted_core_hours"),
    )
    modes = (
        failed.select("job_type", "failure_mode")
        .unionByName(jobs.select("job_type", F.lit("ALL").alias("failure_mode")))
        .distinct()
    )
    exposure = jobs.groupBy("job_type").agg(
        *[F.sum(_exposure_in_bin(wall, b)).alias(f"_exp{b}") for b in range(len(_BIN_LOW))]
    )
    exposure = exposure.select(
        "job_type",
        F.inline(
            F.array(
                *[
                    F.struct(
                        F.lit(b).alias("bin_index"), (F.col(f"_exp{b}") / 3600.0).alias("exposure")
                    )
                    for b in range(len(_BIN_LOW))
                ]
            )
        ),
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
