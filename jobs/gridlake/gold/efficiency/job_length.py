"""gold.job_length_advice: initialisation cost, hazard and the optimal job length."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gridlake.gold.efficiency.columns import _success
from gridlake.gold.efficiency.params import DAYS_PER_YEAR, START_FAILURE_MODES
from gridlake.gold.efficiency.reference import optimal_job_length, useful_fraction
from gridlake.gold.efficiency.state import (
    ALL_ATTEMPTS,
    MEASURE_SUCCESS_WALL,
    attach,
    durations_state,
    rank_percentiles,
    tasks_state,
    values_state,
)
from gridlake.spark import rows_frame

# --------------------------------------------------------------------------------------------
# gold.job_length_advice
# --------------------------------------------------------------------------------------------

MIN_INIT_GROUP_JOBS = 3


def init_intercepts(jobs: DataFrame) -> DataFrame:
    """Per (job_type, task_id, cpu_model, site): intercept of wall_seconds vs events by least
    squares, from per-group sums (n, sum x, sum y, sum xy, sum x^2); successful attempts with
    events > 0, groups with n >= 3 and var(events) > 0 only. A group is one task on one CPU
    model at one site, so that its jobs share the seconds per event (sites differ in
    efficiency, CPU models in speed).

    ``weight`` = the group's information on its intercept, n - (sum x)^2 / sum x^2, divided by
    the square of its task's mean wall-clock: the intercept extrapolates to zero events, and
    wall-clock noise grows with the wall-clock, so a long task says little about a few minutes
    of initialisation. The scale is the task's, not the group's, so that a task's groups on
    fast and slow CPUs (whose initialisation differs) count alike.
    """
    ok = _success() & (F.col("events") > 0) & F.col("task_id").isNotNull()
    x, y = F.col("events").cast("double"), F.col("wall_seconds").cast("double")
    sums = (
        jobs.where(ok)
        .groupBy(*INIT_KEYS)
        .agg(
            F.count(F.lit(1)).alias("init_n"),
            F.sum(x).alias("init_sx"),
            F.sum(y).alias("init_sy"),
            F.sum(x * y).alias("init_sxy"),
            F.sum(x * x).alias("init_sxx"),
        )
    )
    return init_intercepts_from(sums)


INIT_KEYS = ("job_type", "task_id", "cpu_model", "site")


def init_intercepts_from(sums: DataFrame) -> DataFrame:
    """Least-squares sums (``init_n``, ``init_sx``, ``init_sy``, ``init_sxy``, ``init_sxx``) at
    any grain finer than (job_type, task_id, cpu_model, site), e.g. the rows of
    gold._state_efficiency_tasks -> the intercepts of :func:`init_intercepts`."""
    task = Window.partitionBy("job_type", "task_id")
    grouped = (
        sums.where(F.col("task_id").isNotNull() & (F.col("init_n") > 0))
        .groupBy(*INIT_KEYS)
        .agg(
            F.sum("init_n").alias("n"),
            F.sum("init_sx").alias("sx"),
            F.sum("init_sy").alias("sy"),
            F.sum("init_sxy").alias("sxy"),
            F.sum("init_sxx").alias("sxx"),
        )
        .withColumn("task_wall", F.sum("sy").over(task) / F.sum("n").over(task))
    )
    n, sx, sy, sxy, sxx = (F.col(c) for c in ("n", "sx", "sy", "sxy", "sxx"))
    sxx_c = n * sxx - sx * sx  # n^2 var(x); relative guard against round-off of equal events
    slope = F.try_divide(n * sxy - sx * sy, sxx_c)
    return grouped.where((n >= MIN_INIT_GROUP_JOBS) & (sxx_c > F.lit(1e-9) * n * sxx)).select(
        *INIT_KEYS,
        "n",
        slope.alias("seconds_per_event"),
        ((sy - slope * sx) / n).alias("intercept_seconds"),
        ((n - sx * sx / sxx) / (F.col("task_wall") * F.col("task_wall"))).alias("weight"),
    )


_ADVICE_DDL = (
    "job_type string, n_jobs bigint, n_init_groups bigint, init_seconds double, "
    "hazard_failures bigint, hazard_per_hour double, optimal_hours double, "
    "expected_useful_fraction double, current_median_hours double, "
    "current_useful_fraction double, core_hours_per_year double, core_hours_saved_per_year double"
)


def job_length_advice(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per job_type: I, h, T*, U(T*), U(current), core-hours at stake."""
    return job_length_advice_from(
        tasks_state(jobs), durations_state(jobs), values_state(jobs, (MEASURE_SUCCESS_WALL,))
    )


def job_length_advice_from(tasks: DataFrame, durations: DataFrame, values: DataFrame) -> DataFrame:
    """The state of any set of weeks (gold._state_efficiency_tasks, _durations and _values
    rows) -> one row per job_type over those weeks: I, h, T*, U(T*), U(current), core-hours at
    stake.

    Runs the per-job-type aggregation and collects it (one row per job type); T* is found on
    the driver by ``optimal_job_length``.
    """
    init = (
        init_intercepts_from(tasks)
        .groupBy("job_type")
        .agg(
            F.count(F.lit(1)).alias("n_init_groups"),
            F.try_divide(
                F.sum(F.col("intercept_seconds") * F.col("weight")), F.sum("weight")
            ).alias("init_seconds"),
        )
    )
    star = F.col("failure_mode") == ALL_ATTEMPTS
    hazard = ~star & ~F.col("failure_mode").isin(*START_FAILURE_MODES)
    stats = (
        durations.groupBy("job_type")
        .agg(
            F.sum(F.when(star, F.col("attempts"))).alias("n_jobs"),
            (F.sum(F.when(star, F.col("cores_wall_seconds"))) / 3600.0).alias("core_hours"),
            (F.sum(F.when(star, F.col("wall_seconds"))) / 3600.0).alias("wall_hours"),
            F.coalesce(F.sum(F.when(hazard, F.col("attempts"))), F.lit(0)).alias("hazard_failures"),
            F.unix_seconds(F.min("first_end")).alias("_first_end"),
            F.unix_seconds(F.max("last_end")).alias("_last_end"),
        )
        .where(F.col("n_jobs") > 0)
    )
    median_wall = rank_percentiles(
        values.where(F.col("measure") == MEASURE_SUCCESS_WALL),
        ["job_type"],
        {"median_success_wall": 0.5},
    )
    stats = attach(stats, median_wall, ["job_type"])
    rows = stats.join(init, "job_type", "left").orderBy("job_type").collect()
    # the history's span, over every job type (one row each)
    firsts = [r._first_end for r in rows if r._first_end is not None]
    lasts = [r._last_end for r in rows if r._last_end is not None]
    span_seconds = max(lasts) - min(firsts) if firsts and lasts else None
    out = []
    for r in rows:
        init_s = None if r.init_seconds is None else max(r.init_seconds, 0.0)
        h = r.hazard_failures / r.wall_hours if r.wall_hours else None
        opt = u_opt = cur = u_cur = saved = None
        if init_s is not None and h is not None:
            i_h = init_s / 3600.0
            opt = optimal_job_length(i_h, h)
            u_opt = useful_fraction(opt, i_h, h)
            if r.median_success_wall is not None:
                cur = (r.median_success_wall - init_s) / 3600.0
                u_cur = useful_fraction(cur, i_h, h)
        per_year = (
            r.core_hours * DAYS_PER_YEAR * 86400.0 / span_seconds
            if span_seconds and r.core_hours is not None
            else None
        )
        if per_year is not None and u_cur is not None and u_opt:
            saved = per_year * (1 - u_cur / u_opt)
        out.append(
            (
                r.job_type,
                r.n_jobs,
                r.n_init_groups or 0,
                init_s,
                r.hazard_failures,
                h,
                opt,
                u_opt,
                cur,
                u_cur,
                per_year,
                saved,
            )
        )
    return rows_frame(tasks.sparkSession, out, _ADVICE_DDL)
