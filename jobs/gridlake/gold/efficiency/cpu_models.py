"""gold.cpu_model_efficiency."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.efficiency.state import (
    MEASURE_HS23_PER_EVENT,
    MEASURE_PER_EVENT,
    attach,
    measures_percentiles,
    models_state,
    values_state,
)

# --------------------------------------------------------------------------------------------
# gold.cpu_model_efficiency
# --------------------------------------------------------------------------------------------

KEYS = ("microarchitecture", "cpu_model_norm", "job_type")


def cpu_model_efficiency(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (microarchitecture, cpu_model_norm, job_type)."""
    values = values_state(jobs, (MEASURE_PER_EVENT, MEASURE_HS23_PER_EVENT))
    return cpu_model_efficiency_from(models_state(jobs), values)


def cpu_model_efficiency_from(models: DataFrame, values: DataFrame) -> DataFrame:
    """The state of any set of weeks (gold._state_efficiency_models and _values rows) -> one row
    per (microarchitecture, cpu_model_norm, job_type) over those weeks. Percentiles are
    nearest-rank over the values as the state keeps them (per event: rounded within 0.5 %)."""
    sums = models.groupBy(*KEYS).agg(
        F.sum("jobs").alias("jobs"),
        (F.sum("cores_wall_seconds") / 3600.0).alias("core_hours"),
        (F.sum("cpu_seconds") / 3600.0).alias("cpu_hours"),
        F.sum("jobs_with_events").alias("jobs_with_events"),
    )
    percentiles = measures_percentiles(
        values,
        KEYS,
        {
            MEASURE_PER_EVENT: {
                "median_cpu_seconds_per_event": 0.5,
                "p90_cpu_seconds_per_event": 0.9,
            },
            MEASURE_HS23_PER_EVENT: {"median_hs23_seconds_per_event": 0.5},
        },
    )
    out = attach(sums.where(F.col("jobs") > 0), percentiles, KEYS)
    return out.select(
        *KEYS,
        "jobs",
        "core_hours",
        "cpu_hours",
        F.try_divide(
            F.col("cpu_hours"), F.when(F.col("core_hours") > 0, F.col("core_hours"))
        ).alias("cpu_efficiency"),
        "jobs_with_events",
        "median_cpu_seconds_per_event",
        "p90_cpu_seconds_per_event",
        "median_hs23_seconds_per_event",
    )
