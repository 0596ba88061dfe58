"""CPU speed factors fitted from real jobs (domain.md, "CPU speed from real jobs").

Model. For successful jobs with events > 0, ``y = log(cpu_seconds / events)`` and

    y = a_task + b_cpu_model + e                      (variant "model")
    y = a_task + b_cpu_model + c_site + e             (variant "site")

fitted for each job type and for all job types together (job_type ``ALL``; a task has one job
type, so there the task term absorbs the job type). The speed factor of a CPU model is
``exp(-b)``: speed is taken as inversely proportional to CPU time per event.

Method, in Spark aggregations, window aggregates and joins, with the fits themselves in numpy
inside pandas grouped maps (each over a fit's cells, never over the jobs; nothing is collected
to the driver):

1. ``prepare``: successful attempts with events > 0 and cpu_seconds > 0, not ``is_outlier``
   (CPU above wall x cores is physically impossible), with task, CPU model, site and job type.
2. ``screen_outliers``: a first, rough fit of the site variant per week and job type; a job
   whose residual exceeds ``max(5 robust sigmas, log 2)`` is dropped (stuck or crashed jobs, CPU
   time x 50, events = 1). The scale is 1.4826 x the median absolute residual of the week and
   job type (``percentile_approx``: a residual within 1/10,000 of the median's rank; the exact
   median of a week's ~3 M residuals at grid scale cost a quarter of the screening). Screening
   residuals come from the richest model per job type, so a genuinely slow site or a
   workload-specific CPU model effect is not mistaken for junk.
3. ``cells``: a week's jobs aggregated to (task, cpu_model) cells (and (task, cpu_model, site)
   cells for the site variant) with the median y, the job count and the core-hours. A task that
   ran on one CPU model carries no information on models and is left out.
4. ``task_weights``: the bootstrap's weights: replicate 0 is the data; in replicate r each
   task gets a Poisson(1) weight drawn deterministically from ``xxhash64(task, r, seed)``
   (inverse CDF with built-in functions), kept as one array per task. Cell weight = job count
   x task weight.
5. ``connected_groups``: connected components of the bipartite task-model graph of the data,
   per job type, by min-label propagation until no label changes (numpy, one grouped-map call
   per job type: the graph is bounded by tasks and models): the groups. In a replicate a model
   counts only when it is still connected to its group's reference model (else its factor is
   not identified and is left out of the interval): the fit finds that from the replicate's
   own cells (``model_components``).
6. ``reference_models``: per group, the configured ``reference_model`` when it is in the group,
   else the reference of the enclosing ``ALL`` group when present (so that job types share a
   reference and can be compared), else the model with most core-hours in the group.
7. ``fit_replicates``: alternating (Gauss-Seidel) weighted means over the cells (weight = jobs
   x the task's bootstrap weight): task terms, then model terms (normalised so that the
   group's reference model is 0), then site terms (per group, relative to the median site).
   Sweeps run in pairs followed by an Irons-Tuck extrapolation (as fixest does for fixed
   effects). Every (job type, group) is shipped once to a pandas grouped map with its tasks'
   weights, and its replicates are fitted one after the other, vectorised in numpy (cells are
   bounded by tasks x models x sites, not by jobs); only the terms the tables read come back
   (per replicate: each model's term, each site's term, and the mean residual of a
   multi-site model at each of its sites). A fit stops when the largest change of a model or
   site term in a sweep is below ``tolerance`` (1e-6 on the log scale), or after
   ``max_iterations`` sweeps; ``iterations`` is the most sweeps any replicate or group of the
   job type needed. (``fit_effects`` is the same fit returning every cell, for the screening.)
8. Intervals: the 2.5 and 97.5 percentiles of the replicates' normalised factors, as order
   statistics at p(n+1) (Hyndman-Fan type 6): with few replicates the usual interpolation at
   p(n-1) gives intervals that are too short (about 89 % rather than 95 % at B = 30). With
   B = 39 (the default) the limits are the smallest and largest replicate.

Incremental state. Steps 1-3 run per ISO week (screening fits each week's jobs on their own, a
cell is the median of a week's jobs of a task on a model, at a site), and their outcome is kept
in ``gold._state_speed_cells`` (with the models' microarchitectures and declared HS23 in
``gold._state_speed_models``), partitioned by week. The fit (steps 4-8) reads the state of the
last ``WINDOW_WEEKS`` weeks (a quarter, ending with the latest week that has jobs), never the
jobs: an incremental ``analyze`` rebuilds the state of the weeks whose jobs changed and refits,
and its cost follows the window's cells, not the history's jobs nor its weeks (it reads the
state's week partitions of the window only). A full analyze rebuilds every
week's state and gives the same tables (tests/test_incremental_gold.py).

Robustness comes from three layers: is_outlier jobs are out, the screening drops jobs more than
2x (or 5 robust sigmas) off the fit, and a cell is the median of its jobs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, timedelta

import numpy as np
import pandas as pd
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.silver.tables import SILVER_JOBS
from gridlake.tabledef import Check, Column, Table

ALL = "ALL"
VARIANT_MODEL = "model"
VARIANT_SITE = "site"
# The fit whose model term gives the speed factors: with the site term, a site whose nodes run
# slow (misconfigured, throttled) is not read as slowness of the models installed there.
FACTOR_VARIANT = VARIANT_SITE
NO_SITE = "*"
LOG2 = math.log(2.0)

GOLD_CPU_SPEED_FACTORS = Table(
    database="gold",
    name="cpu_speed_factors",
    keys=("job_type", "cpu_model"),
    question="How fast is each CPU model for real jobs, relative to the reference model?",
    example=(
        "SELECT cpu_model, job_type, round(speed_factor, 3) AS speed, round(ci_low, 3) AS lo, "
        "round(ci_high, 3) AS hi, n_jobs FROM gold.cpu_speed_factors WHERE job_type = 'ALL' ORDER"
        " BY speed DESC"
    ),
    grain="one row per job_type (or 'ALL') and cpu_model in a connected group of that fit.",
    description=(
        "Relative CPU speed of each CPU model fitted from real jobs: log(CPU seconds per event) "
        "= task term + model term over successful jobs, speed factor = exp(-model term), 1.0 "
        "for the reference model of each connected group; bootstrap intervals over tasks."
    ),
    columns=(
        Column("cpu_model", "STRING", "CPU model string as reported by the jobs (/proc/cpuinfo)"),
        Column(
            "microarchitecture", "STRING", "Most frequent microarchitecture of the model's jobs"
        ),
        Column("job_type", "STRING", "Job type of the fit, or ALL for all job types together"),
        Column("speed_factor", "DOUBLE", "exp(-b): speed relative to the group's reference model"),
        Column("ci_low", "DOUBLE", "2.5 percentile of the bootstrap replicates' speed factor"),
        Column("ci_high", "DOUBLE", "97.5 percentile of the bootstrap replicates' speed factor"),
        Column("n_jobs", "BIGINT", "Jobs of the model in the fit (informative tasks, screened)"),
        Column("n_tasks", "BIGINT", "Tasks that ran on this model and at least one other model"),
        Column("core_hours", "DOUBLE", "Core-hours of those jobs (chooses the default reference)"),
        Column("group_id", "INT", "Connected group of the task-model graph (1 = most core-hours)"),
        Column("reference_model", "STRING", "The group's reference model (speed factor 1.0)"),
        Column("iterations", "INT", "Iterations of the alternating fit until convergence"),
        Column("converged", "BOOLEAN", "False when the fit stopped at max_iterations"),
        Column("n_replicates", "INT", "Bootstrap replicates in which the factor was identified"),
    ),
    checks=(
        Check("not_null", "cpu_model"),
        Check("not_null", "job_type"),
        Check("between", "speed_factor", {"min_value": 0}),
    ),
)

GOLD_SPEED_FACTOR_AGREEMENT = Table(
    database="gold",
    name="speed_factor_agreement",
    keys=("job_type_a", "job_type_b"),
    question="Do job types agree on the relative speed of CPU models (is one benchmark enough)?",
    example=(
        "SELECT job_type_a, job_type_b, n_models, round(mean_abs_rel_diff, 3) AS mean_diff, "
        "max_diff_model FROM gold.speed_factor_agreement ORDER BY mean_diff DESC"
    ),
    grain=(
        "one row per pair of job types (job_type_a < job_type_b), plus one row ALL/ALL pooling "
        "every pair."
    ),
    description=(
        "How well the speed factors measured with different job types agree, over the CPU "
        "models both fits share with the same reference model (the reference itself excluded). "
        "The seeds report ~4 % mean difference between job types in ATLAS and CMS."
    ),
    columns=(
        Column("job_type_a", "STRING", "First job type of the pair (ALL on the pooled row)"),
        Column("job_type_b", "STRING", "Second job type of the pair (ALL on the pooled row)"),
        Column("n_models", "BIGINT", "CPU models compared (shared, same reference, not it)"),
        Column(
            "mean_abs_rel_diff",
            "DOUBLE",
            "Mean of the symmetric relative difference |f_a - f_b| / ((f_a + f_b) / 2)",
        ),
        Column("rms_rel_diff", "DOUBLE", "Root mean square of the relative differences"),
        Column("max_abs_rel_diff", "DOUBLE", "Largest absolute relative difference"),
        Column("max_diff_model", "STRING", "CPU model with the largest difference"),
    ),
    checks=(Check("between", "n_models", {"min_value": 1}),),
)

GOLD_BENCHMARK_MISMATCH = Table(
    database="gold",
    name="benchmark_mismatch",
    keys=("job_type", "cpu_model"),
    question="Where does the declared HS23 benchmark mispredict real speed?",
    example=(
        "SELECT job_type, cpu_model, round(benchmark_factor, 3) AS bench, round(speed_factor, 3) "
        "AS real, round(ratio, 3) AS ratio, flagged FROM gold.benchmark_mismatch ORDER BY "
        "abs(ratio - 1) DESC LIMIT 10"
    ),
    grain="one row per job_type (or 'ALL') and cpu_model with a speed factor and a declared HS23.",
    description=(
        "Measured speed factor against the declared benchmark (median HS23 per core of the "
        "model's jobs), both relative to the group's reference model; flagged when the "
        "bootstrap interval of their ratio lies entirely outside [1 - margin, 1 + margin]."
    ),
    columns=(
        Column("job_type", "STRING", "Job type of the fit, or ALL"),
        Column("cpu_model", "STRING", "CPU model"),
        Column("microarchitecture", "STRING", "Microarchitecture of the model"),
        Column("reference_model", "STRING", "The group's reference model"),
        Column("hs23_per_core", "DOUBLE", "Median declared HS23 per core of the model's jobs"),
        Column("benchmark_factor", "DOUBLE", "hs23_per_core / hs23_per_core of the reference"),
        Column("speed_factor", "DOUBLE", "Measured speed factor (gold.cpu_speed_factors)"),
        Column("ratio", "DOUBLE", "speed_factor / benchmark_factor (1 = benchmark predicts jobs)"),
        Column("ratio_ci_low", "DOUBLE", "ci_low / benchmark_factor"),
        Column("ratio_ci_high", "DOUBLE", "ci_high / benchmark_factor"),
        Column("margin", "DOUBLE", "Tolerated relative mismatch"),
        Column("flagged", "BOOLEAN", "Interval entirely below 1 - margin or above 1 + margin"),
        Column("n_jobs", "BIGINT", "Jobs of the model in the fit"),
    ),
    checks=(Check("not_null", "cpu_model"),),
)

GOLD_SITE_SPEED_ANOMALIES = Table(
    database="gold",
    name="site_speed_anomalies",
    keys=("job_type", "reference_model", "site", "cpu_model"),
    question=(
        "Which sites run slower than the same CPU models elsewhere (misconfiguration, throttling)?"
    ),
    example=(
        "SELECT site, cpu_model, job_type, round(slowdown, 3) AS slowdown, flagged FROM "
        "gold.site_speed_anomalies WHERE cpu_model = 'ALL' ORDER BY slowdown DESC"
    ),
    grain=(
        "one row per job_type (or 'ALL'), reference_model (connected group), site and cpu_model;"
        " cpu_model 'ALL' is the site term over all models."
    ),
    description=(
        "Sites whose nodes run slower than the same CPU model elsewhere, from log(CPU seconds "
        "per event) = task + model + site terms. Site term relative to the median site of the "
        "group; a (site, model) term is the model's residual at that site (site term included), "
        "given only for models that ran at two sites or more."
    ),
    columns=(
        Column("job_type", "STRING", "Job type of the fit, or ALL"),
        Column("site", "STRING", "Grid site"),
        Column("cpu_model", "STRING", "CPU model, or ALL for the site term over all models"),
        Column("reference_model", "STRING", "Reference model of the connected group"),
        Column("group_id", "INT", "Connected group (as in gold.cpu_speed_factors)"),
        Column("site_term", "DOUBLE", "Site term on log(CPU s/event), median site of group = 0"),
        Column("slowdown", "DOUBLE", "exp(site_term): CPU time per event relative to elsewhere"),
        Column("ci_low", "DOUBLE", "2.5 percentile of the bootstrap replicates' slowdown"),
        Column("ci_high", "DOUBLE", "97.5 percentile of the bootstrap replicates' slowdown"),
        Column("n_jobs", "BIGINT", "Jobs behind the term"),
        Column("n_tasks", "BIGINT", "Tasks behind the term"),
        Column("margin", "DOUBLE", "Slowdown tolerated before flagging"),
        Column("flagged", "BOOLEAN", "ci_low > 1 and slowdown > 1 + margin"),
    ),
    checks=(Check("not_null", "site"),),
)

WINDOW_WEEKS = 13  # the fit's window: the latest week with jobs and the 12 before it

GOLD_STATE_SPEED_CELLS = Table(
    database="gold",
    name="_state_speed_cells",
    keys=("week", "variant", "job_type", "task", "cpu_model", "site"),
    partition_by=("week",),
    stable_rows=False,  # internal state: a week can lose every cell (its jobs moved away)
    question="What does the speed-factor fit read (the screened cells of each week)?",
    example=(
        "SELECT week, variant, count(*) AS cells, sum(n_jobs) AS jobs FROM "
        "gold._state_speed_cells GROUP BY week, variant ORDER BY week, variant"
    ),
    grain=(
        "one row per ISO week, fit variant, job type, task, CPU model and site ('*' in the "
        "model variant) with a successful job of events > 0 that the screening kept."
    ),
    description=(
        "Internal state of gold.cpu_speed_factors and gold.site_speed_anomalies (no grid view):"
        " each week's jobs screened (a rough task + model + site fit of the week and job type; "
        "residuals beyond max(5 robust sigmas, log 2) dropped) and reduced to cells, the median "
        "log(CPU seconds per event) of a task on a CPU model (at a site). The fit reads the "
        f"last {WINDOW_WEEKS} weeks of it. Incremental analyze replaces the weeks whose jobs "
        "changed."
    ),
    columns=(
        Column("week", "DATE", "Monday of the ISO week of the jobs' end_time"),
        Column("variant", "STRING", "'model' (task + model) or 'site' (task + model + site)"),
        Column("job_type", "STRING", "Job type of the task"),
        Column("task", "STRING", "job_type/task_id"),
        Column("cpu_model", "STRING", "CPU model string"),
        Column("site", "STRING", "Grid site, or '*' in the model variant"),
        Column("y", "DOUBLE", "Median log(CPU seconds per event) of the cell's jobs"),
        Column("n_jobs", "BIGINT", "Jobs in the cell"),
        Column("core_hours", "DOUBLE", "Core-hours of the cell's jobs"),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "task"), Check("not_null", "y")),
)

GOLD_STATE_SPEED_MODELS = Table(
    database="gold",
    name="_state_speed_models",
    partition_by=("week",),
    stable_rows=False,
    question="Which microarchitecture and declared HS23 did each CPU model's jobs report, by week?",
    example=(
        "SELECT cpu_model, microarchitecture, hs23_per_core, sum(n_jobs) AS jobs FROM "
        "gold._state_speed_models GROUP BY ALL ORDER BY jobs DESC LIMIT 10"
    ),
    grain=(
        "one row per ISO week, CPU model, microarchitecture and declared HS23 per core of the "
        "week's jobs (nulls included)."
    ),
    description=(
        "Internal state of gold.cpu_speed_factors and gold.benchmark_mismatch (no grid view): "
        "job counts from which the window's most frequent microarchitecture and median declared "
        "HS23 per core of every CPU model are computed exactly."
    ),
    columns=(
        Column("week", "DATE", "Monday of the ISO week of the jobs' end_time"),
        Column("cpu_model", "STRING", "CPU model string"),
        Column("microarchitecture", "STRING", "Microarchitecture the jobs reported"),
        Column("hs23_per_core", "DOUBLE", "Declared HS23 per core of the jobs"),
        Column("n_jobs", "BIGINT", "Jobs of the week with these values"),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "cpu_model")),
)

TABLES: tuple[Table, ...] = (
    GOLD_STATE_SPEED_CELLS,
    GOLD_STATE_SPEED_MODELS,
    GOLD_CPU_SPEED_FACTORS,
    GOLD_SPEED_FACTOR_AGREEMENT,
    GOLD_BENCHMARK_MISMATCH,
    GOLD_SITE_SPEED_ANOMALIES,
)


# --------------------------------------------------------------------------------------------
# Input, screening, cells
# --------------------------------------------------------------------------------------------


def week_column(jobs: DataFrame) -> SparkColumn:
    """The ISO week of a job: silver.jobs' ``week``; else the Monday of ``end_time``'s week;
    else null (frames of tests without times: one week)."""
    if "week" in jobs.columns:
        return F.col("week")
    if "end_time" in jobs.columns:
        return F.to_date(F.date_trunc("week", F.col("end_time")))
    return F.lit(None).cast("date")


def prepare(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> the jobs a fit may use: one row per job with y = log(cpu_seconds / events).

    Keeps successful attempts with events > 0, cpu_seconds > 0, not ``is_outlier`` and with
    task, job type and CPU model. ``task`` is ``job_type/task_id`` (a task has one job type).
    """
    ok = (
        (F.col("status") == "success")
        & (F.col("events") > 0)
        & (F.col("cpu_seconds") > 0)
        & ~F.coalesce(F.col("is_outlier"), F.lit(False))
        & F.col("task_id").isNotNull()
        & F.col("job_type").isNotNull()
        & F.col("cpu_model").isNotNull()
    )
    return jobs.where(ok).select(
        week_column(jobs).alias("week"),
        "job_id",
        "job_type",
        F.concat_ws("/", "job_type", "task_id").alias("task"),
        "cpu_model",
        F.coalesce(F.col("site"), F.lit("unknown")).alias("site"),
        F.log(F.col("cpu_seconds") / F.col("events")).alias("y"),
        F.coalesce(F.col("cores_wall_seconds"), F.lit(0.0)).alias("core_seconds"),
    )


CELL_COLUMNS = ("week", "job_type", "task", "cpu_model", "site", "y", "n_jobs", "core_hours")


def week_cells(prepared: DataFrame, by_site: bool = False) -> DataFrame:
    """Prepared jobs -> one row per (week, job_type, task, cpu_model) or, with ``by_site``,
    (week, job_type, task, cpu_model, site): y (median), n_jobs, core_hours; ``site`` is ``*``
    without ``by_site``. Every cell (informative or not), job types only (no ``ALL``)."""
    site = F.col("site") if by_site else F.lit(NO_SITE)
    return prepared.groupBy("week", "job_type", "task", "cpu_model", site.alias("site")).agg(
        F.median("y").alias("y"),
        F.count(F.lit(1)).alias("n_jobs"),
        (F.sum("core_seconds") / 3600.0).alias("core_hours"),
    )


def informative_cells(
    cells_df: DataFrame, by_site: bool = False, per_week: bool = False
) -> DataFrame:
    """Cells of :func:`week_cells` -> those of informative tasks, for every job type and for
    ``ALL``: a task on two CPU models or more (without ``by_site``), on two (CPU model, site)
    pairs or more (with). ``per_week``: a task counts within each week on its own (the
    screening's fits), else over every week of the frame (the window's fit)."""
    task = Window.partitionBy(*(["week"] if per_week else []), "job_type", "task")
    pair = F.struct("cpu_model", "site") if by_site else F.col("cpu_model")
    per_type = cells_df.withColumn(
        "_informative", F.size(F.collect_set(pair).over(task)) >= 2
    ).where("_informative")
    both = per_type.unionByName(per_type.withColumn("job_type", F.lit(ALL)))
    return both.select(*CELL_COLUMNS)


def cells(prepared: DataFrame, by_site: bool = False) -> DataFrame:
    """Prepared jobs -> the informative cells of each week, for every job type and for ``ALL``
    (:func:`week_cells`, :func:`informative_cells` over all the frame's weeks)."""
    return informative_cells(week_cells(prepared, by_site), by_site)


def screen_outliers(
    prepared: DataFrame,
    clip_sigmas: float = 5.0,
    clip_floor: float = LOG2,
    tolerance: float = 1e-3,
    max_iterations: int = 4,
) -> DataFrame:
    """Prepared jobs -> the same jobs without junk (stuck, crashed, wrong event counts).

    A rough site-variant fit per week and job type (median cells, weighted means, a few
    accelerated sweeps: residuals need not be precise to tell a 2x outlier); a job whose
    residual exceeds ``max(clip_sigmas x 1.4826 x median |residual|, clip_floor)`` of its week
    and job type is dropped. Jobs of tasks the week's fit cannot use (one cell) are kept: later
    steps drop them anyway. A week's outcome depends on that week's jobs alone (incremental
    state: gold._state_speed_cells).
    """
    site_cells = informative_cells(
        week_cells(prepared, by_site=True), by_site=True, per_week=True
    ).where(F.col("job_type") != ALL)
    fit_in = site_cells.select(
        F.lit(VARIANT_SITE).alias("variant"),
        "job_type",
        F.lit(0).alias("rep"),
        "task",
        "cpu_model",
        "site",
        F.coalesce(F.col("week").cast("string"), F.lit("")).alias("gkey"),
        F.lit(None).cast("string").alias("reference_model"),
        "y",
        F.col("n_jobs").cast("double").alias("w"),
    )
    fitted = fit_effects(fit_in, tolerance=tolerance, max_iterations=max_iterations).select(
        F.col("gkey").alias("_wk"),
        "job_type",
        "task",
        "cpu_model",
        "site",
        (F.col("a") + F.col("b") + F.col("c")).alias("_fit"),
    )
    keyed = prepared.withColumn("_wk", F.coalesce(F.col("week").cast("string"), F.lit("")))
    res = keyed.join(fitted, ["_wk", "job_type", "task", "cpu_model", "site"], "left").withColumn(
        "_r", F.col("y") - F.col("_fit")
    )
    scale = res.groupBy("_wk", "job_type").agg(
        # approximate (rank within 1e-4): the exact median keeps every residual of the week and
        # job type in one buffer; at the bench's full scale (a week of 3 M screened jobs, by
        # hand, 2026-12-06) the screening took 21.6 s with it, 16.6 s with this
        (F.lit(1.4826) * F.percentile_approx(F.abs("_r"), 0.5, 10000)).alias("_scale")
    )
    limit = F.greatest(F.lit(clip_sigmas) * F.col("_scale"), F.lit(clip_floor))
    kept = res.join(F.broadcast(scale), ["_wk", "job_type"], "left").where(
        F.col("_r").isNull() | (F.abs("_r") <= limit)
    )
    return kept.select(*prepared.columns)


# --------------------------------------------------------------------------------------------
# Bootstrap, connected groups, references
# --------------------------------------------------------------------------------------------


def poisson1(u: SparkColumn) -> SparkColumn:
    """A Poisson(1) draw from a uniform u in [0, 1) by the inverse CDF (built-in functions)."""
    cdf, term = 0.0, math.exp(-1.0)
    out: SparkColumn | None = None
    for k in range(12):
        cdf += term
        term /= k + 1
        out = F.when(u < cdf, F.lit(k)) if out is None else out.when(u < cdf, F.lit(k))
    assert out is not None
    return out.otherwise(F.lit(12))


def task_weights(tasks: DataFrame, replicates: int, seed: int) -> DataFrame:
    """Rows with a ``task`` -> the same rows with ``tw``: the task's bootstrap weights, an array
    of ``replicates`` + 1 integers indexed by replicate. Replicate 0 is the data (weight 1); in
    replicate r the weight is a Poisson(1) draw, a deterministic function of (task, r, seed),
    so a task weighs the same in the per-job-type and the ALL fits of a replicate, and in a
    full and an incremental run. Weight 0 leaves the task out of the replicate."""

    def weight(rep: SparkColumn) -> SparkColumn:
        h = F.xxhash64(F.col("task"), rep, F.lit(seed))
        u = F.pmod(h, F.lit(1 << 53)) / float(1 << 53)
        return F.when(rep == 0, F.lit(1)).otherwise(poisson1(u))

    return tasks.withColumn("tw", F.transform(F.sequence(F.lit(0), F.lit(replicates)), weight))


def connected_groups(edges: DataFrame, keys: Sequence[str] = ("job_type",)) -> DataFrame:
    """Task-model edges -> one row per (keys..., cpu_model) with ``group``: the smallest model
    name of its connected component in the bipartite task-model graph of those keys.

    The graph of a key (a job type) is bounded by its tasks and models, not its jobs: Spark
    groups the distinct edges by key and each graph's components come from numpy min-label
    propagation in one task (:func:`model_components`, over models numbered in name order, so
    the smallest label is the smallest name). (As Spark jobs, a shuffle and two window
    aggregates per round, the propagation took 20 s on the 688,820 cells of 1 M jobs.)
    """
    k = list(keys)
    schema = T.StructType(
        [edges.schema[c] for c in k]
        + [T.StructField("cpu_model", T.StringType()), T.StructField("group", T.StringType())]
    )

    def components(pdf: pd.DataFrame) -> pd.DataFrame:
        t = pd.factorize(pdf["task"])[0]
        m, names = pd.factorize(pdf["cpu_model"], sort=True)
        labels = model_components(t, m)
        out = {c: np.repeat(pdf[c].iloc[0], len(names)) for c in k}
        return pd.DataFrame(
            {**out, "cpu_model": names.to_numpy(), "group": names.to_numpy()[labels]}
        )

    return (
        edges.select(*k, "task", "cpu_model")
        .distinct()
        .groupBy(*k)
        .applyInPandas(components, schema)
    )


def reference_models(
    groups: DataFrame, model_cells: DataFrame, reference_model: str | None = None
) -> DataFrame:
    """Groups (job_type, cpu_model, group) of the data and its model cells -> one row per
    (job_type, cpu_model) with group_id, reference_model, core_hours, n_jobs and n_tasks.

    Reference of a group: the configured model when in the group; else the reference of the
    enclosing ALL group when in the group; else the model with most core-hours (then name).
    group_id numbers a fit's groups by core-hours, 1 = the largest.
    """
    stats = model_cells.groupBy("job_type", "cpu_model").agg(
        F.sum("n_jobs").alias("n_jobs"),
        F.countDistinct("task").alias("n_tasks"),
        F.sum("core_hours").alias("core_hours"),
    )
    g = groups.select("job_type", "cpu_model", "group").join(stats, ["job_type", "cpu_model"])
    configured = F.lit(reference_model).isNotNull() & (F.col("cpu_model") == F.lit(reference_model))
    in_group = Window.partitionBy("job_type", "group")
    order = [F.desc("_configured"), F.desc("core_hours"), F.asc("cpu_model")]
    all_ref = (
        g.where(F.col("job_type") == ALL)
        .withColumn("_configured", configured.cast("int"))
        .withColumn("_rank", F.row_number().over(in_group.orderBy(*order)))
        .where(F.col("_rank") == 1)
        .select(F.col("cpu_model"), F.lit(1).alias("_all_ref"))
    )
    ranked = (
        g.join(F.broadcast(all_ref), "cpu_model", "left")
        .withColumn("_configured", configured.cast("int"))
        .withColumn("_all_ref", F.coalesce("_all_ref", F.lit(0)))
        .withColumn(
            "_rank",
            F.row_number().over(
                in_group.orderBy(F.desc("_configured"), F.desc("_all_ref"), *order[1:])
            ),
        )
        .withColumn(
            "reference_model",
            F.first(F.when(F.col("_rank") == 1, F.col("cpu_model")), ignorenulls=True).over(
                in_group.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
            ),
        )
        .withColumn("_group_hours", F.sum("core_hours").over(in_group))
    )
    group_rank = (
        ranked.select("job_type", "group", "_group_hours")
        .distinct()
        .withColumn(
            "group_id",
            F.row_number().over(
                Window.partitionBy("job_type").orderBy(F.desc("_group_hours"), F.asc("group"))
            ),
        )
        .drop("_group_hours")
    )
    return ranked.join(group_rank, ["job_type", "group"]).select(
        "job_type",
        "cpu_model",
        "group",
        F.col("group_id").cast("int").alias("group_id"),
        "reference_model",
        "core_hours",
        "n_jobs",
        "n_tasks",
    )


# --------------------------------------------------------------------------------------------
# The alternating fit
# --------------------------------------------------------------------------------------------

FIT_PARTITION = ("variant", "job_type", "rep", "gkey")


def fit_effects(
    cells_df: DataFrame, tolerance: float = 1e-6, max_iterations: int = 100
) -> DataFrame:
    """Fit y = a_task + b_cpu_model (+ c_site) by alternating weighted means, for every
    (variant, job_type, rep, gkey) of the input at once.

    Input: one row per cell with variant ('model' | 'site'), job_type, rep, gkey (the connected
    group), task, cpu_model, site ('*' for the model variant), reference_model (b is normalised
    to 0 for it; null: not normalised), y and weight w (> 0).

    Output: the same cells with the fitted ``a`` (task), ``b`` (model) and ``c`` (site) terms,
    ``iterations`` (Gauss-Seidel sweeps until the fit's largest change of b or c in a sweep fell
    below ``tolerance``: the most any replicate or group of the (variant, job_type) needed; the
    last sweep when one did not get there) and ``converged``.

    Each (variant, job_type, rep, gkey) is one independent fit whose cells are bounded by its
    tasks x models x sites (cells, not jobs): Spark groups the cells by fit (one shuffle) and
    each fit runs in one task as vectorised numpy (:func:`_fit_arrays`), a few milliseconds
    for a fit of thousands of cells. (It ran as window aggregates once, a Spark job per pair of
    sweeps: on two cores about 100 s for the 40 replicates of the simulated grid, now ~5 s.)
    """
    out_schema = T.StructType(
        [cells_df.schema[c] for c in (*FIT_PARTITION, "task", "cpu_model", "site")]
        + [
            T.StructField("reference_model", T.StringType()),
            T.StructField("y", T.DoubleType()),
            T.StructField("w", T.DoubleType()),
            T.StructField("a", T.DoubleType()),
            T.StructField("b", T.DoubleType()),
            T.StructField("c", T.DoubleType()),
            T.StructField("_n", T.IntegerType()),
            T.StructField("_converged", T.BooleanType()),
            T.StructField("ref_connected", T.BooleanType()),
        ]
    )
    names = [f.name for f in out_schema.fields]

    def fit_group(pdf: pd.DataFrame) -> pd.DataFrame:
        # cells in one order whatever order they arrived in (sums of floats depend on it): the
        # fit of the same cells is the same to the last bit (incremental == full)
        pdf = pdf.sort_values(["task", "cpu_model", "site", "y", "w"], kind="stable")
        ref = (pdf["cpu_model"] == pdf["reference_model"]).fillna(False).to_numpy(bool)
        t = pd.factorize(pdf["task"])[0]
        m = pd.factorize(pdf["cpu_model"])[0]
        a, b, c, n, converged = _fit_arrays(
            t,
            m,
            pd.factorize(pdf["site"])[0],
            ref,
            pdf["y"].to_numpy(float),
            pdf["w"].to_numpy(float),
            tolerance,
            max_iterations,
        )
        if pdf["reference_model"].isna().all():
            connected = None  # a fit without a reference: nothing to be connected to
        elif ref.any():
            labels = model_components(t, m)
            connected = labels[m] == labels[m[ref][0]]
        else:  # the reference model has no cell in this fit (its tasks drew weight 0)
            connected = False
        return pdf.assign(a=a, b=b, c=c, _n=n, _converged=converged,
                          ref_connected=connected)[names]  # fmt: skip

    fits = cells_df.select(
        *FIT_PARTITION,
        "task",
        "cpu_model",
        "site",
        F.col("reference_model").cast("string"),
        F.col("y").cast("double"),
        F.col("w").cast("double"),
    )
    per_fit = Window.partitionBy("variant", "job_type")
    return (
        fits.groupBy(*FIT_PARTITION)
        .applyInPandas(fit_group, out_schema)
        .select(
            *FIT_PARTITION, "task", "cpu_model", "site", "reference_model", "y", "w", "a", "b", "c",
            "ref_connected",
            F.max("_n").over(per_fit).cast("int").alias("iterations"),
            F.bool_and("_converged").over(per_fit).alias("converged"),
        )
    )  # fmt: skip


REPLICATE_KEYS = ("job_type", "gkey")


def fit_replicates(
    cells_df: DataFrame, weights: DataFrame, tolerance: float = 1e-6, max_iterations: int = 100
) -> DataFrame:
    """The site variant's fit of every bootstrap replicate of every (job_type, gkey), with the
    terms the gold tables read.

    Input: ``cells_df``, one row per cell of the data (job_type, gkey: the connected group,
    task, cpu_model, site, reference_model, y, n_jobs), and ``weights``, one row per (job_type,
    gkey, task) with ``tw``, the task's weight in each replicate (:func:`task_weights`).

    Output: one row per (job_type, gkey, rep) and
    - model (``site`` null): ``term`` = b, and ``ref_connected``: whether the model is
      connected to the reference model in the replicate's own task-model graph (else its
      factor is not identified there);
    - site (``cpu_model`` ``ALL``): ``term`` = c, the site term;
    - site and model, for models that ran at two sites or more in the data: ``term`` = the
      weighted mean residual y - a - b of the model's cells at the site;
    with the fit's sweeps ``_n`` and ``_converged`` on every row.

    Each (job_type, gkey) ships its cells once, with its tasks' weights, and its replicates
    are fitted one after the other in numpy (a replicate: the cells whose task weighs > 0,
    weight n_jobs x the task's weight; :func:`_fit_terms`). Replicate 0 (the data) starts from
    zero, the others from its terms: a replicate's terms are near the data's, so it converges
    in fewer sweeps (at the bench's full scale ~14 instead of ~21; the same fixed point, reached
    within the tolerance). The cells are sorted the same way
    whatever order they arrived in, so a fit of the same cells gives the same bits. (As one
    grouped-map call per replicate, over 40 copies of every cell, the fit and the aggregation
    of its fitted cells took about 170 of the group's 180 s on 1,043,976 jobs.)
    """
    schema = T.StructType(
        [cells_df.schema[c] for c in REPLICATE_KEYS]
        + [
            T.StructField("rep", T.IntegerType()),
            T.StructField("cpu_model", T.StringType()),
            T.StructField("site", T.StringType()),
            T.StructField("term", T.DoubleType()),
            T.StructField("ref_connected", T.BooleanType()),
            T.StructField("_n", T.IntegerType()),
            T.StructField("_converged", T.BooleanType()),
        ]
    )
    names = [f.name for f in schema.fields]

    def fit_group(cells: pd.DataFrame, tw: pd.DataFrame) -> pd.DataFrame:
        if cells.empty:
            return pd.DataFrame({c: [] for c in names})
        cells = cells.sort_values(["task", "cpu_model", "site", "y", "n_jobs"], kind="stable")
        t_all, tasks = pd.factorize(cells["task"])
        m_all, models = pd.factorize(cells["cpu_model"])
        s_all, sites = pd.factorize(cells["site"])
        ref_all = (cells["cpu_model"] == cells["reference_model"]).fillna(False).to_numpy(bool)
        y_all = cells["y"].to_numpy(float)
        n_all = cells["n_jobs"].to_numpy(float)
        by_task = tw.drop_duplicates("task").set_index("task")["tw"].reindex(tasks)
        if by_task.isna().any():
            raise ValueError(f"tasks without bootstrap weights: {list(tasks[by_task.isna()])[:5]}")
        task_w = np.stack(by_task.to_numpy()).astype(float)  # tasks x replicates
        pairs = np.unique(m_all * len(sites) + s_all)
        multi_site = np.bincount(pairs // len(sites), minlength=len(models)) >= 2
        key = {c: cells[c].iloc[0] for c in REPLICATE_KEYS}
        parts = []
        start_b = start_c = None  # the data's terms (replicate 0), by model and site index
        for rep in range(task_w.shape[1]):
            w_all = n_all * task_w[t_all, rep]
            keep = np.flatnonzero(w_all > 0)
            if keep.size == 0:
                continue
            t = pd.factorize(t_all[keep])[0]
            m, m_codes = pd.factorize(m_all[keep])
            s, s_codes = pd.factorize(s_all[keep])
            ref, y, w = ref_all[keep], y_all[keep], w_all[keep]
            at, bm, cs, n_sweeps, converged = _fit_terms(
                t, m, s, ref, y, w, tolerance, max_iterations,
                start=None if start_b is None else (start_b[m_codes], start_c[s_codes]),
            )  # fmt: skip
            if start_b is None and converged:
                start_b, start_c = np.zeros(len(models)), np.zeros(len(sites))
                start_b[m_codes], start_c[s_codes] = bm, cs
            if ref.any():
                labels = model_components(t, m)
                connected = labels == labels[m[ref][0]]
            else:  # the reference model has no cell in this replicate (its tasks drew 0)
                connected = np.zeros(len(m_codes), bool)
            # the residuals of the multi-site models' cells, summed per (site, model)
            mine = np.flatnonzero(multi_site[m_codes[m]])
            pair, pair_of = np.unique(s[mine] * len(m_codes) + m[mine], return_inverse=True)
            resid = w[mine] * (y[mine] - at[t[mine]] - bm[m[mine]])
            pair_term = np.bincount(pair_of, weights=resid, minlength=len(pair)) / np.bincount(
                pair_of, weights=w[mine], minlength=len(pair)
            )
            n_rows = len(m_codes) + len(s_codes) + len(pair)
            parts.append(
                pd.DataFrame(
                    {
                        "rep": np.full(n_rows, rep, dtype=np.int32),
                        "cpu_model": np.concatenate([
                            models.to_numpy()[m_codes], np.full(len(s_codes), ALL, object),
                            models.to_numpy()[m_codes[pair % len(m_codes)]],
                        ]),
                        "site": np.concatenate([
                            np.full(len(m_codes), None, object), sites.to_numpy()[s_codes],
                            sites.to_numpy()[s_codes[pair // len(m_codes)]],
                        ]),
                        "term": np.concatenate([bm, cs, pair_term]),
                        "ref_connected": np.concatenate([
                            connected, np.full(len(s_codes) + len(pair), None, object)
                        ]),
                        "_n": np.full(n_rows, n_sweeps, dtype=np.int32),
                        "_converged": np.full(n_rows, converged, dtype=bool),
                    }
                )
            )  # fmt: skip
        out = pd.concat(parts, ignore_index=True)
        for c, v in key.items():
            out[c] = v
        return out[names]

    cells = cells_df.select(
        *REPLICATE_KEYS,
        "task",
        "cpu_model",
        "site",
        F.col("reference_model").cast("string"),
        F.col("y").cast("double"),
        F.col("n_jobs").cast("double"),
    )
    return (
        cells.groupBy(*REPLICATE_KEYS)
        .cogroup(weights.select(*REPLICATE_KEYS, "task", "tw").groupBy(*REPLICATE_KEYS))
        .applyInPandas(fit_group, schema)
    )


def model_components(t: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Connected components of the bipartite task-model graph of a fit's cells (task and model
    indexes from 0, one pair per cell): per model, the smallest model index of its component.
    Min-label propagation, vectorised: a task takes the smallest label of its models, a model
    the smallest label of its tasks, until no label changes (rounds ~ the graph's diameter)."""
    nt, nm = int(t.max()) + 1, int(m.max()) + 1
    labels = np.arange(nm)
    while True:
        task_label = np.full(nt, nm)
        np.minimum.at(task_label, t, labels[m])
        new = labels.copy()
        np.minimum.at(new, m, task_label[t])
        if np.array_equal(new, labels):
            return labels
        labels = new


def _fit_arrays(
    t: np.ndarray,
    m: np.ndarray,
    s: np.ndarray,
    ref: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    tolerance: float,
    max_iterations: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """One fit over its cells (task, model and site indexes from 0, reference-model flags, y,
    w): per-cell a, b, c, the sweep at which it converged (or the last) and whether it did
    (:func:`_fit_terms`, its terms read at each cell)."""
    at, bm, cs, n, converged = _fit_terms(t, m, s, ref, y, w, tolerance, max_iterations)
    return at[t], bm[m], cs[s], n, converged


def _fit_terms(
    t: np.ndarray,
    m: np.ndarray,
    s: np.ndarray,
    ref: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    tolerance: float,
    max_iterations: int,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """One fit over its cells (task, model and site indexes from 0, reference-model flags, y,
    w): the terms of each task, model and site (by index), the sweep at which it converged (or
    the last) and whether it did. ``start``: the model and site terms to start from (else 0).

    Sweeps run in pairs from X0 = (b, c); after the pair X = X2 - (<dG, d2> / <d2, d2>) dG with
    dG = X2 - X1 and d2 = X2 - 2 X1 + X0 (Irons-Tuck, the acceleration fixest uses for fixed
    effects; inner products over the fit's parameters, each model and site once). A sweep:
    task terms, model terms (normalised so the reference model is 0), site terms centred on
    the median site."""
    nt, nm, ns = t.max() + 1, m.max() + 1, s.max() + 1
    wt, wm, ws = (np.bincount(i, weights=w, minlength=k) for i, k in ((t, nt), (m, nm), (s, ns)))
    has_ref = bool(ref.any())
    ref_model = int(m[ref][0]) if has_ref else -1

    def sweep(bm: np.ndarray, cs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        at = np.bincount(t, weights=w * (y - bm[m] - cs[s]), minlength=nt) / wt
        braw = np.bincount(m, weights=w * (y - at[t] - cs[s]), minlength=nm) / wm
        b_new = braw - (braw[ref_model] if has_ref else 0.0)
        craw = np.bincount(s, weights=w * (y - at[t] - b_new[m]), minlength=ns) / ws
        return at, b_new, craw - np.median(craw)

    bm, cs = (np.zeros(nm), np.zeros(ns)) if start is None else (start[0].copy(), start[1].copy())
    at = np.zeros(nt)
    sweeps, done = 0, -1
    while sweeps < max_iterations and done < 0:
        b0, c0 = bm, cs
        _, b1, c1 = sweep(b0, c0)
        d1 = max(np.abs(b1 - b0).max(), np.abs(c1 - c0).max())
        at, b2, c2 = sweep(b1, c1)
        d2 = max(np.abs(b2 - b1).max(), np.abs(c2 - c1).max())
        db, dc = b2 - b1, c2 - c1
        sb, sc = b2 - 2 * b1 + b0, c2 - 2 * c1 + c0
        ssq = float(sb @ sb + sc @ sc)
        coef = float(db @ sb + dc @ sc) / ssq if ssq > 0 else 0.0
        bm, cs = b2 - coef * db, c2 - coef * dc
        if d1 < tolerance:
            done = sweeps + 1
        elif d2 < tolerance:
            done = sweeps + 2
        sweeps += 2
    return at, bm, cs, (done if done > 0 else sweeps), done > 0


# --------------------------------------------------------------------------------------------
# Intervals and gold tables
# --------------------------------------------------------------------------------------------


def _percentile6(values: SparkColumn, p: float) -> SparkColumn:
    """Percentile p of an array aggregate: the order statistic at p(n+1), interpolated and
    clamped to [1, n] (Hyndman-Fan type 6). Null for an empty array."""
    arr = F.sort_array(values)
    n = F.size(arr)
    h = F.least(F.greatest(F.lit(p) * (n + 1), F.lit(1.0)), n.cast("double"))
    lo = F.floor(h).cast("int")
    hi = F.least(lo + 1, n)
    v_lo = F.element_at(arr, lo)
    v_hi = F.element_at(arr, hi)
    return F.when(n > 0, v_lo + (h - lo) * (v_hi - v_lo))


def interval(replicates: DataFrame, keys: Sequence[str], value: str) -> DataFrame:
    """Replicate values (rep >= 1) -> one row per keys with ci_low, ci_high, n_replicates."""
    return (
        replicates.where(F.col("rep") >= 1)
        .where(F.col(value).isNotNull())
        .groupBy(*keys)
        .agg(F.collect_list(value).alias("_v"))
        .select(
            *keys,
            _percentile6(F.col("_v"), 0.025).alias("ci_low"),
            _percentile6(F.col("_v"), 0.975).alias("ci_high"),
            F.size("_v").cast("int").alias("n_replicates"),
        )
    )


def model_replicates(terms: DataFrame) -> DataFrame:
    """The replicates' terms (:func:`fit_replicates`) -> one row per (job_type, rep, cpu_model)
    with the normalised ``factor`` = exp(-b), null in a replicate where the model is not
    connected to its group's reference model (its factor is not identified there); and the
    job type's ``iterations`` (the most sweeps any replicate or group needed) and
    ``converged`` (whether they all did)."""
    per_type = Window.partitionBy("job_type")
    return (
        terms.withColumn("iterations", F.max("_n").over(per_type).cast("int"))
        .withColumn("converged", F.bool_and("_converged").over(per_type))
        .where(F.col("site").isNull())
        .select(
            "job_type",
            "rep",
            "cpu_model",
            F.when(F.col("ref_connected"), F.exp(-F.col("term"))).alias("factor"),
            "iterations",
            "converged",
        )
    )


def speed_factors(
    replicates: DataFrame, refs: DataFrame, microarchitectures: DataFrame
) -> DataFrame:
    """Per-replicate factors, references and microarchitectures -> gold.cpu_speed_factors."""
    point = replicates.where(F.col("rep") == 0).select(
        "job_type", "cpu_model", F.col("factor").alias("speed_factor"), "iterations", "converged"
    )
    ci = interval(replicates, ["job_type", "cpu_model"], "factor")
    return GOLD_CPU_SPEED_FACTORS.conform(
        point.join(refs, ["job_type", "cpu_model"])
        .join(ci, ["job_type", "cpu_model"], "left")
        .join(F.broadcast(microarchitectures), "cpu_model", "left")
        .withColumn("n_replicates", F.coalesce("n_replicates", F.lit(0)))
    )


def factor_agreement(factors: DataFrame) -> DataFrame:
    """gold.cpu_speed_factors -> gold.speed_factor_agreement (pairs of job types and pooled)."""
    f = factors.where(
        (F.col("job_type") != ALL) & (F.col("cpu_model") != F.col("reference_model"))
    ).select("job_type", "cpu_model", "reference_model", "speed_factor")
    a = f.select(
        F.col("job_type").alias("job_type_a"),
        "cpu_model",
        "reference_model",
        F.col("speed_factor").alias("fa"),
    )
    b = f.select(
        F.col("job_type").alias("job_type_b"),
        "cpu_model",
        "reference_model",
        F.col("speed_factor").alias("fb"),
    )
    pairs = (
        a.join(b, ["cpu_model", "reference_model"])
        .where(F.col("job_type_a") < F.col("job_type_b"))
        .withColumn("d", (F.col("fa") - F.col("fb")) / ((F.col("fa") + F.col("fb")) / 2.0))
    )
    pooled = pairs.withColumn("job_type_a", F.lit(ALL)).withColumn("job_type_b", F.lit(ALL))

    # Averages are rounded to 12 decimals: a sum of doubles depends on the order the rows arrive
    # in (the join's partitioning), and a re-run of the same week must give the same table.
    def summary(df: DataFrame) -> DataFrame:
        return df.groupBy("job_type_a", "job_type_b").agg(
            F.count(F.lit(1)).alias("n_models"),
            F.round(F.avg(F.abs("d")), 12).alias("mean_abs_rel_diff"),
            F.round(F.sqrt(F.avg(F.col("d") * F.col("d"))), 12).alias("rms_rel_diff"),
            F.max(F.abs("d")).alias("max_abs_rel_diff"),
            F.max_by("cpu_model", F.abs("d")).alias("max_diff_model"),
        )

    return GOLD_SPEED_FACTOR_AGREEMENT.conform(summary(pairs).unionByName(summary(pooled)))


def benchmark_mismatch(factors: DataFrame, hs23: DataFrame, margin: float = 0.10) -> DataFrame:
    """gold.cpu_speed_factors and the median declared HS23 per core of each model (cpu_model,
    hs23_per_core: :func:`model_attributes`) -> gold.benchmark_mismatch."""
    ref_hs23 = hs23.select(
        F.col("cpu_model").alias("reference_model"), F.col("hs23_per_core").alias("_ref_hs23")
    )
    bench = F.col("hs23_per_core") / F.col("_ref_hs23")
    out = (
        factors.join(F.broadcast(hs23), "cpu_model")
        .join(F.broadcast(ref_hs23), "reference_model")
        .withColumn("benchmark_factor", bench)
        .withColumn("ratio", F.col("speed_factor") / F.col("benchmark_factor"))
        .withColumn("ratio_ci_low", F.col("ci_low") / F.col("benchmark_factor"))
        .withColumn("ratio_ci_high", F.col("ci_high") / F.col("benchmark_factor"))
        .withColumn("margin", F.lit(margin))
        .withColumn(
            "flagged",
            F.coalesce(
                (F.col("ratio_ci_high") < 1.0 - margin) | (F.col("ratio_ci_low") > 1.0 + margin),
                F.lit(False),
            ),
        )
    )
    return GOLD_BENCHMARK_MISMATCH.conform(out)


def site_replicates(terms: DataFrame) -> DataFrame:
    """The replicates' terms (:func:`fit_replicates`) -> one row per (job_type, rep,
    reference_model, site, cpu_model) with ``term``: the site term c (cpu_model ALL) or the
    weighted mean residual y - a - b of the model's cells at the site (models that ran at two
    sites or more)."""
    return terms.where(F.col("site").isNotNull()).select(
        "job_type", "rep", F.col("gkey").alias("reference_model"), "site", "cpu_model", "term"
    )


def site_anomalies(
    replicates: DataFrame, data_cells: DataFrame, refs: DataFrame, site_margin: float = 0.05
) -> DataFrame:
    """Site replicates, the site variant's cells of the data (with their ``gkey``) and the
    references -> gold.site_speed_anomalies."""
    keys = ["job_type", "reference_model", "site", "cpu_model"]
    sc = data_cells.select(
        "job_type", F.col("gkey").alias("reference_model"), "site", "cpu_model", "task", "n_jobs"
    )
    counts = (
        sc.groupBy("job_type", "reference_model", "site", "cpu_model")
        .agg(F.sum("n_jobs").alias("n_jobs"), F.countDistinct("task").alias("n_tasks"))
        .unionByName(
            sc.groupBy("job_type", "reference_model", "site").agg(
                F.lit(ALL).alias("cpu_model"),
                F.sum("n_jobs").alias("n_jobs"),
                F.countDistinct("task").alias("n_tasks"),
            )
        )
    )
    slow = replicates.withColumn("slowdown", F.exp("term"))
    point = slow.where(F.col("rep") == 0).select(
        *keys, F.col("term").alias("site_term"), "slowdown"
    )
    ci = interval(slow, keys, "slowdown")
    group_ids = refs.select(
        "job_type", F.col("cpu_model").alias("reference_model"), "group_id"
    ).distinct()
    out = (
        point.join(ci, keys, "left")
        .join(counts, keys, "left")
        .join(F.broadcast(group_ids), ["job_type", "reference_model"], "left")
        .withColumn("margin", F.lit(site_margin))
        .withColumn(
            "flagged",
            F.coalesce(
                (F.col("ci_low") > 1.0) & (F.col("slowdown") > 1.0 + site_margin), F.lit(False)
            ),
        )
    )
    return GOLD_SITE_SPEED_ANOMALIES.conform(out)


def model_state(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> gold._state_speed_models: jobs per (week, cpu_model, microarchitecture,
    hs23_per_core)."""
    return (
        jobs.where(F.col("cpu_model").isNotNull())
        .groupBy(week_column(jobs).alias("week"), "cpu_model", "microarchitecture",
                 "hs23_per_core")
        .agg(F.count(F.lit(1)).alias("n_jobs"))
    )  # fmt: skip


def model_attributes(models: DataFrame) -> tuple[DataFrame, DataFrame]:
    """gold._state_speed_models rows -> (cpu_model, microarchitecture): the most frequent one
    (ties to the smallest name); (cpu_model, hs23_per_core): the exact median of the jobs'
    positive declared HS23 per core (as ``median`` over the jobs: the value at rank (n - 1) / 2,
    interpolated between the two ranks around it)."""
    arch = (
        models.where(F.col("microarchitecture").isNotNull())
        .groupBy("cpu_model", "microarchitecture")
        .agg(F.sum("n_jobs").alias("_n"))
        .withColumn("_top", F.max("_n").over(Window.partitionBy("cpu_model")))
        .where(F.col("_n") == F.col("_top"))
        .groupBy("cpu_model")
        .agg(F.min("microarchitecture").alias("microarchitecture"))
    )
    counts = (
        models.where(F.col("hs23_per_core") > 0)
        .groupBy("cpu_model", "hs23_per_core")
        .agg(F.sum("n_jobs").alias("_n"))
    )
    ordered = Window.partitionBy("cpu_model").orderBy("hs23_per_core")
    ranks = (
        counts.withColumn("_hi", F.sum("_n").over(ordered.rowsBetween(Window.unboundedPreceding,
                                                                      Window.currentRow)))
        .withColumn("_lo", F.col("_hi") - F.col("_n"))  # the values' 0-based ranks: [_lo, _hi)
        .withColumn("_pos", (F.sum("_n").over(Window.partitionBy("cpu_model")) - 1) / 2.0)
    )  # fmt: skip
    k_lo, k_hi = F.floor("_pos"), F.ceil("_pos")
    at = lambda k: F.max(F.when((F.col("_lo") <= k) & (k < F.col("_hi")), F.col("hs23_per_core")))  # noqa: E731
    hs23 = (
        ranks.groupBy("cpu_model")
        .agg(at(k_lo).alias("_v_lo"), at(k_hi).alias("_v_hi"), F.first("_pos").alias("_pos"))
        .select(
            "cpu_model",
            F.when(F.col("_v_lo") == F.col("_v_hi"), F.col("_v_lo"))
            .otherwise(
                (F.ceil("_pos") - F.col("_pos")) * F.col("_v_lo")
                + (F.col("_pos") - F.floor("_pos")) * F.col("_v_hi")
            )
            .alias("hs23_per_core"),
        )
    )
    return arch, hs23


def state(jobs: DataFrame) -> tuple[DataFrame, DataFrame]:
    """silver.jobs (any set of whole weeks) -> the rows of gold._state_speed_cells and
    gold._state_speed_models for those weeks (each week computed from its own jobs alone)."""
    kept = screen_outliers(prepare(jobs))
    cells_df = (
        week_cells(kept)
        .withColumn("variant", F.lit(VARIANT_MODEL))
        .unionByName(week_cells(kept, by_site=True).withColumn("variant", F.lit(VARIANT_SITE)))
    )
    return GOLD_STATE_SPEED_CELLS.conform(cells_df), GOLD_STATE_SPEED_MODELS.conform(
        model_state(jobs)
    )


def in_window(
    cells_state: DataFrame,
    models_state: DataFrame,
    window_weeks: int = WINDOW_WEEKS,
    latest_week: date | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The state of the fit's window: the latest week with a cell and the ``window_weeks`` - 1
    weeks before it (rows of a null week, frames without times, are always in).

    ``latest_week``: that latest week when the caller knows it (an incremental analyze finds it
    in the state's week partitions): the window is then a filter on a literal, so a read of the
    state tables skips the week partitions before the window (a year of state: 13 weeks read,
    not 52). Without it, the latest week is computed from ``cells_state`` in the query."""
    if latest_week is not None:
        cutoff_week = latest_week - timedelta(weeks=window_weeks - 1)
        keep = F.col("week").isNull() | (F.col("week") >= F.lit(cutoff_week))
        return cells_state.where(keep), models_state.where(keep)
    latest = cells_state.agg(F.max("week").alias("_latest"))
    cutoff = F.date_sub(F.col("_latest"), 7 * (window_weeks - 1))

    def window(df: DataFrame) -> DataFrame:
        inside = F.col("week").isNull() | F.col("_latest").isNull() | (F.col("week") >= cutoff)
        return df.crossJoin(F.broadcast(latest)).where(inside).drop("_latest")

    return window(cells_state), window(models_state)


def merge_weeks(cells_state: DataFrame) -> DataFrame:
    """The window's weekly cells of a (variant, job type, task, CPU model, site) merged into one:
    n_jobs and core_hours summed, y the n_jobs-weighted mean of the weeks' medians, added in
    week order (the same bits whichever order the rows arrive in); ``week`` null.

    The fit loses nothing: its terms are weighted means over cells (weight n_jobs x the task's
    bootstrap weight), to which cells sharing task, model and site contribute sum(n y) and
    sum(n) either way; so are the site residuals, and the counts are sums. The fit's cost is
    that of the window's distinct cells, not of its weeks x cells."""
    keys = ("variant", "job_type", "task", "cpu_model", "site")
    parts = F.array_sort(F.collect_list(F.struct("week", "n_jobs", "y", "core_hours")))
    zero_n, zero_f = F.lit(0).cast("bigint"), F.lit(0.0)
    merged = cells_state.groupBy(*keys).agg(parts.alias("_c"))
    n = F.aggregate("_c", zero_n, lambda acc, c: acc + c["n_jobs"])
    return merged.select(
        F.lit(None).cast("date").alias("week"),
        *keys,
        (F.aggregate("_c", zero_f, lambda acc, c: acc + c["n_jobs"] * c["y"]) / n).alias("y"),
        n.alias("n_jobs"),
        F.aggregate("_c", zero_f, lambda acc, c: acc + c["core_hours"]).alias("core_hours"),
    )


def fit(
    cells_state: DataFrame,
    models_state: DataFrame,
    reference_model: str | None = None,
    bootstrap: int = 39,  # with type-6 order statistics the limits are the extreme replicates
    margin: float = 0.10,
    seed: int = 1,
    site_margin: float = 0.05,
    tolerance: float = 1e-6,
    max_iterations: int = 100,
    window_weeks: int = WINDOW_WEEKS,
) -> dict[str, DataFrame]:
    """The state (gold._state_speed_cells and _state_speed_models rows) -> the four gold tables
    (full table name -> DataFrame, conformed), fitted over the window's weeks."""
    cells_state, models_state = window_state(cells_state, models_state, window_weeks)
    return fit_window(
        cells_state, models_state, reference_model, bootstrap, margin, seed, site_margin,
        tolerance, max_iterations,
    )  # fmt: skip


def window_state(
    cells_state: DataFrame,
    models_state: DataFrame,
    window_weeks: int = WINDOW_WEEKS,
    latest_week: date | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The state -> the fit's input: the window's cells merged over its weeks
    (:func:`in_window`, :func:`merge_weeks`) and the window's models."""
    cells_state, models_state = in_window(cells_state, models_state, window_weeks, latest_week)
    return merge_weeks(cells_state), models_state


def fit_window(
    cells_state: DataFrame,
    models_state: DataFrame,
    reference_model: str | None = None,
    bootstrap: int = 39,
    margin: float = 0.10,
    seed: int = 1,
    site_margin: float = 0.05,
    tolerance: float = 1e-6,
    max_iterations: int = 100,
) -> dict[str, DataFrame]:
    """The window's state (:func:`window_state`) -> the four gold tables (:func:`fit`)."""
    by_variant = lambda v: cells_state.where(F.col("variant") == v)  # noqa: E731
    model_cells = informative_cells(by_variant(VARIANT_MODEL)).localCheckpoint(eager=True)
    site_cells = informative_cells(by_variant(VARIANT_SITE), by_site=True)
    # The groups and references come from the model variant's cells of the data. Only the
    # factor variant is fitted (the site variant: its model terms give the factors, its site
    # terms the anomalies), with its bootstrap replicates; in a replicate, whether a model is
    # still connected to its group's reference comes out of the fit itself (model_components).
    assert FACTOR_VARIANT == VARIANT_SITE
    groups = connected_groups(model_cells).localCheckpoint(eager=True)  # read twice below
    refs = reference_models(groups, model_cells, reference_model).localCheckpoint(eager=True)
    data_cells = (
        site_cells.join(
            F.broadcast(refs.select("job_type", "cpu_model", "reference_model")),
            ["job_type", "cpu_model"],
        )
        .withColumn("gkey", F.col("reference_model"))
        .localCheckpoint(eager=True)
    )
    weights = task_weights(data_cells.select(*REPLICATE_KEYS, "task").distinct(), bootstrap, seed)
    terms = fit_replicates(data_cells, weights, tolerance, max_iterations)
    terms = terms.localCheckpoint(eager=True)
    microarchitectures, hs23 = model_attributes(models_state)
    factors = speed_factors(model_replicates(terms), refs, microarchitectures).localCheckpoint(
        eager=True
    )
    mismatch = benchmark_mismatch(factors, hs23, margin)
    agreement = factor_agreement(factors)
    anomalies = site_anomalies(site_replicates(terms), data_cells, refs, site_margin)
    return {
        GOLD_CPU_SPEED_FACTORS.full_name: factors,
        GOLD_SPEED_FACTOR_AGREEMENT.full_name: agreement,
        GOLD_BENCHMARK_MISMATCH.full_name: mismatch,
        GOLD_SITE_SPEED_ANOMALIES.full_name: anomalies,
    }


def compute(jobs: DataFrame, **params: object) -> dict[str, DataFrame]:
    """silver.jobs -> every table of the group (full table name -> DataFrame, conformed): every
    week's state, then the fit over the window (``params``: those of :func:`fit`)."""
    cells_state, models_state = state(jobs)
    cells_state = cells_state.localCheckpoint(eager=True)
    models_state = models_state.localCheckpoint(eager=True)
    return {
        GOLD_STATE_SPEED_CELLS.full_name: cells_state,
        GOLD_STATE_SPEED_MODELS.full_name: models_state,
        **fit(cells_state, models_state, **params),  # type: ignore[arg-type]
    }


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    return compute(inputs.read(SILVER_JOBS))


def _build_weeks(inputs: Inputs, weeks: Sequence[date]) -> dict[str, DataFrame]:
    """The state of ``weeks`` recomputed from their jobs (the state tables' rows of those weeks
    are replaced), the other weeks' state read back, and the fit over the window of both."""
    changed = F.col("week").isin(list(weeks))
    cells_new, models_new = state(inputs.read(SILVER_JOBS).where(changed))
    cells_new = cells_new.localCheckpoint(eager=True)
    models_new = models_new.localCheckpoint(eager=True)
    # the window's state, read (and materialised) before the state tables are rewritten with
    # the new weeks: its cells merged straight from the read (at the bench's full scale 3.8 M
    # weekly cells to 1.0 M; materialising the weekly cells first cost ~8 s, by hand 12-07).
    # The window ends with the latest week of the new state (the kept weeks' partitions and
    # the new cells); only its weeks' partitions are read.
    cells_kept = inputs.read(GOLD_STATE_SPEED_CELLS).where(~changed)
    latest_week = (
        cells_kept.select("week").unionByName(cells_new.select("week")).agg(F.max("week")).first()
    )[0]  # one row
    cells_window, models_window = window_state(
        cells_kept.unionByName(cells_new),
        inputs.read(GOLD_STATE_SPEED_MODELS).where(~changed).unionByName(models_new),
        latest_week=latest_week,
    )
    return {
        GOLD_STATE_SPEED_CELLS.full_name: cells_new,
        GOLD_STATE_SPEED_MODELS.full_name: models_new,
        **fit_window(
            cells_window.localCheckpoint(eager=True), models_window.localCheckpoint(eager=True)
        ),
    }


GROUP = GoldGroup(
    "speed_factors",
    TABLES,
    reads=(SILVER_JOBS,),
    build=_build,
    build_weeks=_build_weeks,
    weight=348,
)
