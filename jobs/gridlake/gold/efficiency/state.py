"""Per-week sufficient statistics of the efficiency tables: the state of incremental analyze.

Each ISO week's rows come from that week's jobs alone, and every table of the family (but the
outliers) is computed from the state of all weeks, never from the jobs: an incremental analyze
rebuilds the state of the weeks whose jobs changed and reads the other weeks' back, so its cost
follows the changed weeks' jobs and the state's rows (tasks, CPU models, bins and distinct
values per week), not the history's jobs. The sums are exact; the medians are exact over
values kept as counts (``success_wall_seconds`` as they are, the per-event measures rounded to
a step of ``LOG_STEP`` on the log scale, within 0.5 %). The memory fit screens its jobs within
each week (median and MAD per week, job type and core count), as the speed factors do.

- ``tasks_state``: gold._state_efficiency_tasks (multicore, memory, job-length intercepts);
- ``models_state``: gold._state_efficiency_models (cpu_model_efficiency's sums);
- ``values_state``: gold._state_efficiency_values (the percentiles);
- ``durations_state``: gold._state_efficiency_durations (failure_vs_duration, job length).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from operator import add

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gridlake.gold.efficiency.columns import _failed, _success
from gridlake.gold.efficiency.params import DURATION_BIN_EDGES_SECONDS
from gridlake.gold.efficiency.tables import (
    GOLD_STATE_EFFICIENCY_DURATIONS,
    GOLD_STATE_EFFICIENCY_MODELS,
    GOLD_STATE_EFFICIENCY_TASKS,
    GOLD_STATE_EFFICIENCY_VALUES,
)

# Per-event values are kept rounded to this step of their natural log (a relative step of
# 1 %: a value is within 0.5 % of its rounding), so that a (CPU model, job type) holds at most
# a few hundred distinct values a week however many jobs it ran. (A step of 0.001 kept 1.06 M
# rows a week per measure for 6.9 M jobs at the bench's full scale: the state's write, its
# read-back and the percentiles over every week were a third of an incremental analyze.)
LOG_STEP = 0.01
# The memory screening: a job beyond this many MADs x 1.4826 of its week's median is dropped.
SCREEN_MADS = 5.0
MEASURE_PER_EVENT = "cpu_seconds_per_event"
MEASURE_HS23_PER_EVENT = "hs23_seconds_per_event"
MEASURE_SUCCESS_WALL = "success_wall_seconds"
ALL_ATTEMPTS = "*"

_EDGES = DURATION_BIN_EDGES_SECONDS
BIN_LOW: tuple[float, ...] = (0.0, *map(float, _EDGES))
BIN_HIGH: tuple[float | None, ...] = (*map(float, _EDGES), None)


def cluster_column() -> SparkColumn:
    """A job's task (the cluster of the errors and of the per-task sums); a job without a
    task_id is a cluster of its own."""
    return F.coalesce(F.col("task_id"), F.concat(F.lit("job:"), F.col("job_id")))


def bin_index(wall: SparkColumn) -> SparkColumn:
    """Number of edges at or below wall: 0 (< first edge) .. len(edges) (>= last edge)."""
    return reduce(add, [F.when(wall >= F.lit(float(e)), 1).otherwise(0) for e in _EDGES]).cast(
        "int"
    )


def exposure_in_bin(wall: SparkColumn, b: int) -> SparkColumn:
    """Seconds of an attempt's run time inside bin b: clamp(wall - low, 0, high - low)."""
    low, high = BIN_LOW[b], BIN_HIGH[b]
    inside = wall - F.lit(low) if high is None else F.least(wall, F.lit(high)) - F.lit(low)
    return F.greatest(inside, F.lit(0.0))


def rounded(value: SparkColumn) -> SparkColumn:
    """A positive value rounded to a step of LOG_STEP on the log scale (others as they are)."""
    return F.when(
        value > 0, F.exp(F.round(F.log(value) / F.lit(LOG_STEP)) * F.lit(LOG_STEP))
    ).otherwise(value)


def tasks_state(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> gold._state_efficiency_tasks rows of the jobs' weeks (each week from its
    own jobs: the memory screening's median and MAD are per week, job type and core count)."""
    rss = F.col("max_rss_mb").cast("double")
    cores = F.col("cores").cast("bigint")
    succ = jobs.where(_success()).select(
        "week", "job_type", "site", "cpu_model", cores.alias("cores"),
        cluster_column().alias("cluster"), "task_id", "cpu_seconds", "cores_wall_seconds",
        "events", "wall_seconds", rss.alias("_rss"),
        ((rss > 0) & (F.col("cores") >= 1)).alias("_mem"),
    )  # fmt: skip
    by = ["week", "job_type", "cores"]
    med = succ.where("_mem").groupBy(*by).agg(F.median("_rss").alias("_med"))
    dev = succ.join(med, by, "left").withColumn(
        "_dev", F.when(F.col("_mem"), F.abs(F.col("_rss") - F.col("_med")))
    )
    mad = dev.where("_mem").groupBy(*by).agg(F.median("_dev").alias("_mad"))
    marked = dev.join(mad, by, "left").withColumn(
        "_kept", F.col("_mem") & (F.col("_dev") <= F.lit(SCREEN_MADS * 1.4826) * F.col("_mad"))
    )
    events_known = F.col("events").isNotNull()
    init = (F.col("events") > 0) & F.col("task_id").isNotNull()
    x, y = F.col("events").cast("double"), F.col("wall_seconds").cast("double")
    kept, screened = F.col("_kept"), F.col("_mem") & ~F.col("_kept")
    out = marked.groupBy("week", "job_type", "site", "cpu_model", "cores", "cluster").agg(
        F.max("task_id").alias("task_id"),
        F.count(F.lit(1)).alias("jobs"),
        F.sum("cpu_seconds").alias("cpu_seconds"),
        F.sum("cores_wall_seconds").alias("cores_wall_seconds"),
        F.sum(F.when(events_known, F.col("events"))).alias("events"),
        F.sum(F.when(events_known, F.col("cores_wall_seconds"))).alias("events_wall_seconds"),
        F.sum(F.col("_rss") / F.col("cores")).alias("rss_per_core_mb"),
        F.count(F.col("_rss")).alias("rss_jobs"),
        F.count(F.when(kept, 1)).alias("mem_jobs"),
        F.sum(F.when(kept, F.col("_rss"))).alias("mem_rss_mb"),
        F.count(F.when(screened, 1)).alias("mem_screened"),
        F.count(F.when(init, 1)).alias("init_n"),
        F.sum(F.when(init, x)).alias("init_sx"),
        F.sum(F.when(init, y)).alias("init_sy"),
        F.sum(F.when(init, x * y)).alias("init_sxy"),
        F.sum(F.when(init, x * x)).alias("init_sxx"),
    )
    return GOLD_STATE_EFFICIENCY_TASKS.conform(out)


def models_state(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> gold._state_efficiency_models rows of the jobs' weeks."""
    per_event = F.when(_success() & (F.col("events") > 0), F.col("cpu_seconds") / F.col("events"))
    out = jobs.groupBy("week", "microarchitecture", "cpu_model_norm", "job_type").agg(
        F.count(F.lit(1)).alias("jobs"),
        F.sum("cores_wall_seconds").alias("cores_wall_seconds"),
        F.sum("cpu_seconds").alias("cpu_seconds"),
        F.count(per_event).alias("jobs_with_events"),
    )
    return GOLD_STATE_EFFICIENCY_MODELS.conform(out)


ALL_MEASURES = (MEASURE_PER_EVENT, MEASURE_HS23_PER_EVENT, MEASURE_SUCCESS_WALL)


def values_state(jobs: DataFrame, measures: Sequence[str] = ALL_MEASURES) -> DataFrame:
    """silver.jobs -> gold._state_efficiency_values rows of the jobs' weeks: per (CPU model, job
    type) the CPU and HS23 seconds per event of successful attempts with events > 0, per job
    type the wall_seconds of successful attempts, each rounded (:func:`rounded`); attempts per
    value. ``measures``: only these (a table computed straight from jobs reads one or two)."""
    unknown = set(measures) - set(ALL_MEASURES)
    if unknown or not measures:
        raise ValueError(f"values_state: measures must be some of {ALL_MEASURES}, not {measures}")
    per_event = F.when(_success() & (F.col("events") > 0), F.col("cpu_seconds") / F.col("events"))
    none = F.lit(None).cast("string")

    def entry(
        measure: str, arch: SparkColumn, model: SparkColumn, value: SparkColumn
    ) -> SparkColumn:
        return F.struct(
            F.lit(measure).alias("measure"), arch.alias("microarchitecture"),
            model.alias("cpu_model_norm"), value.cast("double").alias("value"),
        )  # fmt: skip

    arch, model = F.col("microarchitecture"), F.col("cpu_model_norm")
    every = {
        MEASURE_PER_EVENT: entry(MEASURE_PER_EVENT, arch, model, rounded(per_event)),
        MEASURE_HS23_PER_EVENT: entry(
            MEASURE_HS23_PER_EVENT, arch, model, rounded(per_event * F.col("hs23_per_core"))
        ),
        MEASURE_SUCCESS_WALL: entry(
            MEASURE_SUCCESS_WALL, none, none, rounded(F.when(_success(), F.col("wall_seconds")))
        ),
    }
    entries = F.array(*[every[m] for m in ALL_MEASURES if m in measures])
    out = (
        jobs.select("week", "job_type", F.inline(entries))
        .where(F.col("value").isNotNull())
        .groupBy("week", "measure", "microarchitecture", "cpu_model_norm", "job_type", "value")
        .agg(F.count(F.lit(1)).alias("n"))
    )
    return GOLD_STATE_EFFICIENCY_VALUES.conform(out)


def durations_state(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> gold._state_efficiency_durations rows of the jobs' weeks: per wall-clock
    bin, every attempt ('*': every bin, with the exposure) and the failed ones by mode."""
    wall = F.col("wall_seconds").cast("double")
    binned = jobs.select(
        "week", "job_type", "status", "cores_wall_seconds", "end_time", wall.alias("_wall"),
        F.coalesce(F.col("failure_mode"), F.lit("unknown")).alias("_mode"),
        bin_index(wall).alias("bin_index"),
    )  # fmt: skip
    bins = range(len(BIN_LOW))
    every = binned.groupBy("week", "job_type").agg(
        *[F.sum(exposure_in_bin(F.col("_wall"), b)).alias(f"_exp{b}") for b in bins]
    )
    exposure = every.select(
        "week",
        "job_type",
        F.inline(
            F.array(*[F.struct(F.lit(b).alias("bin_index"),
                               F.col(f"_exp{b}").alias("exposure_seconds")) for b in bins])
        ),
    )  # fmt: skip
    attempts = binned.groupBy("week", "job_type", "bin_index").agg(
        F.count(F.lit(1)).alias("attempts"),
        F.sum("_wall").alias("wall_seconds"),
        F.sum("cores_wall_seconds").alias("cores_wall_seconds"),
        F.min("end_time").alias("first_end"),
        F.max("end_time").alias("last_end"),
    )
    star = (
        exposure.join(attempts, ["week", "job_type", "bin_index"], "left")
        .withColumn("attempts", F.coalesce(F.col("attempts"), F.lit(0)))
        .withColumn("failure_mode", F.lit(ALL_ATTEMPTS))
    )
    failed = (
        binned.where(_failed())
        .groupBy("week", "job_type", "bin_index", F.col("_mode").alias("failure_mode"))
        .agg(
            F.count(F.lit(1)).alias("attempts"),
            F.sum("cores_wall_seconds").alias("cores_wall_seconds"),
        )
    )
    return GOLD_STATE_EFFICIENCY_DURATIONS.conform(
        star.unionByName(failed, allowMissingColumns=True)
    )


def weekly_state(jobs: DataFrame) -> dict[str, DataFrame]:
    """silver.jobs (any set of whole weeks) -> the rows of the four state tables for those weeks
    (full table name -> DataFrame)."""
    return {
        GOLD_STATE_EFFICIENCY_TASKS.full_name: tasks_state(jobs),
        GOLD_STATE_EFFICIENCY_MODELS.full_name: models_state(jobs),
        GOLD_STATE_EFFICIENCY_VALUES.full_name: values_state(jobs),
        GOLD_STATE_EFFICIENCY_DURATIONS.full_name: durations_state(jobs),
    }


def rank_percentiles(
    values: DataFrame, keys: Sequence[str], percentiles: dict[str, float]
) -> DataFrame:
    """Rows of gold._state_efficiency_values (one measure, any set of weeks) -> one row per
    ``keys`` with a column per entry of ``percentiles`` (name -> p): the smallest value whose
    attempts, with those of every smaller value, make at least p of the attempts (the
    nearest-rank percentile: a value that occurred, as ``percentile_approx`` gives)."""
    k = list(keys)
    counts = values.groupBy(*k, "value").agg(F.sum("n").alias("_n"))
    upto = Window.partitionBy(*k).orderBy("value").rowsBetween(Window.unboundedPreceding, 0)
    ranked = counts.withColumn("_cum", F.sum("_n").over(upto)).withColumn(
        "_total", F.sum("_n").over(Window.partitionBy(*k))
    )
    return ranked.groupBy(*k).agg(
        *[F.min(F.when(F.col("_cum") >= F.lit(p) * F.col("_total"), F.col("value"))).alias(name)
          for name, p in percentiles.items()]
    )  # fmt: skip


def measures_percentiles(
    values: DataFrame, keys: Sequence[str], percentiles: dict[str, dict[str, float]]
) -> DataFrame:
    """:func:`rank_percentiles` of several measures at once: rows of
    gold._state_efficiency_values (any set of weeks) -> one row per ``keys`` with a column per
    entry of ``percentiles`` (measure -> {name -> p}). One aggregation, one sort and one window
    for all the measures (the measure a key of the window's partition), where a call per
    measure reads the values and sorts them once each."""
    k = list(keys)
    measure = F.col("measure")
    counts = (
        values.where(measure.isin(*percentiles))
        .groupBy(*k, "measure", "value")
        .agg(F.sum("n").alias("_n"))
    )
    part = [*k, "measure"]
    upto = Window.partitionBy(*part).orderBy("value").rowsBetween(Window.unboundedPreceding, 0)
    ranked = counts.withColumn("_cum", F.sum("_n").over(upto)).withColumn(
        "_total", F.sum("_n").over(Window.partitionBy(*part))
    )
    return ranked.groupBy(*k).agg(
        *[F.min(F.when((measure == m) & (F.col("_cum") >= F.lit(p) * F.col("_total")),
                       F.col("value"))).alias(name)
          for m, named in percentiles.items() for name, p in named.items()]
    )  # fmt: skip


def attach(left: DataFrame, right: DataFrame, keys: Sequence[str]) -> DataFrame:
    """``left`` with the other columns of ``right`` (at most one row per ``keys``), matched on
    ``keys`` with nulls equal (a CPU model without a microarchitecture is a key like any)."""
    r = right.select(*(F.col(c).alias(f"_r_{c}") if c in keys else F.col(c)
                       for c in right.columns))  # fmt: skip
    cond = [left[c].eqNullSafe(r[f"_r_{c}"]) for c in keys]
    return left.join(r, cond, "left").drop(*(f"_r_{c}" for c in keys))
