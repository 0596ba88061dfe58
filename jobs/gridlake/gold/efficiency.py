"""Gold tables of the job-efficiency analysis, each defined beside its transform.

- gold.cpu_model_efficiency: CPU efficiency and CPU time per event by CPU model and job type;
- gold.failure_vs_duration: failure probability (Wilson interval) and hazard by job type, failure
  mode and log-spaced wall-clock bin;
- gold.job_length_advice: the job length that maximises useful work per wall-clock hour;
- gold.multicore_scaling and gold.multicore_fit: efficiency by core count, Amdahl fit;
- gold.efficiency_outlier_rules and gold.efficiency_outliers: the editable rules and the weekly
  list of entities (site, CPU model, task) that depart from their peers or their own history.

Transforms are pure DataFrame -> DataFrame functions on silver.jobs. Only small per-job-type
aggregates are ever collected to the driver (job_length_advice optimises one number per job type
there). Efficiencies are ratios of sums, never means of ratios.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import reduce
from itertools import pairwise
from operator import add
from typing import NamedTuple

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.silver.tables import SILVER_JOBS
from gridlake.tabledef import Check, Column, Table

__all__ = [
    "DEFAULT_OUTLIER_RULES",
    "DURATION_BIN_EDGES_SECONDS",
    "GOLD_CPU_MODEL_EFFICIENCY",
    "GOLD_EFFICIENCY_OUTLIERS",
    "GOLD_EFFICIENCY_OUTLIER_RULES",
    "GOLD_FAILURE_VS_DURATION",
    "GOLD_JOB_LENGTH_ADVICE",
    "GOLD_MULTICORE_FIT",
    "GOLD_MULTICORE_SCALING",
    "START_FAILURE_MODES",
    "TABLES",
    "AmdahlFit",
    "AmdahlPoint",
    "OutlierRule",
    "amdahl_fit",
    "compute",
    "cpu_model_efficiency",
    "efficiency_outliers",
    "failure_vs_duration",
    "init_intercepts",
    "job_length_advice",
    "multicore_fit",
    "multicore_scaling",
    "optimal_job_length",
    "outlier_metrics",
    "outlier_rules_frame",
    "site_model_effects",
    "two_way_effects",
    "useful_fraction",
    "wilson_interval",
]

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

WILSON_Z = 1.96  # 95% two-sided

# Failure modes that strike at the start of an attempt, whatever its planned length: they are
# not part of the duration-dependent hazard of the job-length model.
START_FAILURE_MODES: tuple[str, ...] = ("stage-in",)

# Wall-clock bin edges: 12 log-spaced bins from 10 min to 96 h (each edge x 576^(1/12) ~ 1.70),
# rounded to whole seconds; below 10 min and from 96 h on are open-ended first and last bins.
DURATION_BIN_EDGES_SECONDS: tuple[int, ...] = tuple(round(600 * 576 ** (i / 12)) for i in range(13))

# Job-length optimisation: search range of the payload length T, in hours.
JOB_LENGTH_SEARCH_HOURS = (1 / 60, 200.0)
DAYS_PER_YEAR = 365.0

# Outliers: window of the own-history comparison, and MAD -> standard deviation of a normal.
HISTORY_WEEKS = 8
MAD_TO_SD = 1.4826

# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------

_JOB_TYPE = Column("job_type", "STRING", "Job type (evgen, simul, pile, reprocessing, ...)")

GOLD_CPU_MODEL_EFFICIENCY = Table(
    database="gold",
    name="cpu_model_efficiency",
    keys=("microarchitecture", "cpu_model_norm", "job_type"),
    question=(
        "Which CPU models are slow or inefficient for a given job type, per event and per HS23?"
    ),
    example=(
        "SELECT microarchitecture, job_type, round(cpu_efficiency, 3) AS eff, "
        "round(median_hs23_seconds_per_event, 1) AS hs23_s_per_event FROM "
        "gold.cpu_model_efficiency ORDER BY job_type, hs23_s_per_event DESC"
    ),
    grain="one row per microarchitecture, cpu_model_norm and job_type.",
    description=(
        "CPU efficiency and CPU seconds per event by CPU model and job type, over every attempt "
        "in silver (per-event figures from successful attempts with events > 0)."
    ),
    columns=(
        Column("microarchitecture", "STRING", "e.g. Haswell, Zen 2; null when unknown"),
        Column("cpu_model_norm", "STRING", "Normalised CPU model (silver cpu_model_norm)"),
        _JOB_TYPE,
        Column("jobs", "BIGINT", "Job attempts"),
        Column("core_hours", "DOUBLE", "sum(wall_seconds x cores) / 3600"),
        Column("cpu_hours", "DOUBLE", "sum(cpu_seconds) / 3600"),
        Column("cpu_efficiency", "DOUBLE", "cpu_hours / core_hours (ratio of sums)"),
        Column("jobs_with_events", "BIGINT", "Successful attempts with events > 0"),
        Column(
            "median_cpu_seconds_per_event",
            "DOUBLE",
            "Median of cpu_seconds / events over successful attempts with events > 0 "
            "(percentile_approx)",
        ),
        Column(
            "p90_cpu_seconds_per_event",
            "DOUBLE",
            "90th percentile of cpu_seconds / events, same attempts (percentile_approx)",
        ),
        Column(
            "median_hs23_seconds_per_event",
            "DOUBLE",
            "Median of cpu_seconds x hs23_per_core / events (HS23-normalised CPU seconds per "
            "event), same attempts with a known HS23 (percentile_approx)",
        ),
    ),
    checks=(Check("not_null", "job_type"), Check("between", "jobs", {"min_value": 1})),
)

GOLD_FAILURE_VS_DURATION = Table(
    database="gold",
    name="failure_vs_duration",
    keys=("job_type", "failure_mode", "bin_index"),
    question="Do long jobs fail more, and which failure modes grow with duration?",
    example=(
        "SELECT job_type, duration_bin, attempts, round(failure_probability, 3) AS p_fail, "
        "round(wilson_low, 3) AS lo, round(wilson_high, 3) AS hi FROM gold.failure_vs_duration "
        "WHERE failure_mode = 'ALL' ORDER BY job_type, bin_index"
    ),
    grain=(
        "one row per job_type, failure_mode (each mode seen for the job type, plus 'ALL') and "
        "wall-clock bin holding at least one attempt."
    ),
    description=(
        "Failure probability and hazard as a function of wall-clock duration, by job type and "
        "failure mode. Bins: log-spaced from 10 min to 96 h (DURATION_BIN_EDGES_SECONDS) with "
        "open-ended first (< 10 min) and last (>= 96 h) bins."
    ),
    columns=(
        _JOB_TYPE,
        Column(
            "failure_mode",
            "STRING",
            "Failure mode counted in failures; 'ALL' = any failure; 'unknown' = failed without one",
        ),
        Column("bin_index", "INT", "0 (< 10 min) to 13 (>= 96 h)"),
        Column("duration_bin", "STRING", "Readable bin label, e.g. 49m-1.4h"),
        Column("bin_low_hours", "DOUBLE", "Lower edge of the bin, hours (inclusive)"),
        Column("bin_high_hours", "DOUBLE", "Upper edge of the bin, hours (exclusive); null: open"),
        Column("attempts", "BIGINT", "Attempts of the job type whose wall_seconds fall in the bin"),
        Column("failures", "BIGINT", "Of those, attempts failed with this failure mode"),
        Column("failure_probability", "DOUBLE", "failures / attempts"),
        Column("wilson_low", "DOUBLE", "Lower end of the 95% Wilson score interval"),
        Column("wilson_high", "DOUBLE", "Upper end of the 95% Wilson score interval"),
        Column(
            "exposure_wall_hours",
            "DOUBLE",
            "Wall-hours at risk in the bin: over all attempts of the job type, the part of each "
            "attempt's run time that falls inside the bin (life table)",
        ),
        Column(
            "hazard_per_hour",
            "DOUBLE",
            "failures / exposure_wall_hours: cause-specific hazard in the bin",
        ),
        Column("wasted_core_hours", "DOUBLE", "Core-hours of the failed attempts counted"),
    ),
    checks=(
        Check("not_null", "job_type"),
        Check("not_null", "failure_mode"),
        Check("between", "attempts", {"min_value": 1}),
        Check("between", "failure_probability", {"min_value": 0, "max_value": 1}),
    ),
)

GOLD_JOB_LENGTH_ADVICE = Table(
    database="gold",
    name="job_length_advice",
    keys=("job_type",),
    question="How long should jobs of each type be, and how many core-hours would that save?",
    example=(
        "SELECT job_type, round(init_seconds) AS init_s, round(optimal_hours, 1) AS optimal_h, "
        "round(current_median_hours, 1) AS today_h, round(core_hours_saved_per_year) AS "
        "saved_per_year FROM gold.job_length_advice ORDER BY saved_per_year DESC"
    ),
    grain="one row per job_type.",
    description=(
        "Optimal job length per job type under the model: initialisation I, then payload T; "
        "duration-dependent failures at constant hazard h over I+T (START_FAILURE_MODES "
        "excluded). Useful work per wall-clock U(T) = h T / (exp(h (I+T)) - 1), "
        "-> T / (I+T) as h -> 0."
    ),
    columns=(
        _JOB_TYPE,
        Column("n_jobs", "BIGINT", "Job attempts of the job type"),
        Column(
            "n_init_groups",
            "BIGINT",
            "(task_id, cpu_model, site) groups with >= 3 successful attempts and varying events "
            "that gave an intercept",
        ),
        Column(
            "init_seconds",
            "DOUBLE",
            "I: weighted mean over the groups of the intercept of wall_seconds vs events "
            "(successful attempts, events > 0), weights = the group's information on its "
            "intercept / its task's mean wall-clock squared; floored at 0; null when no group "
            "qualifies",
        ),
        Column("hazard_failures", "BIGINT", "Failed attempts of non-start failure modes"),
        Column(
            "hazard_per_hour",
            "DOUBLE",
            "h: hazard_failures / wall-hours of all attempts of the job type",
        ),
        Column(
            "optimal_hours",
            "DOUBLE",
            "T* maximising U, searched in [1 min, 200 h] (200 h when h = 0)",
        ),
        Column("expected_useful_fraction", "DOUBLE", "U(T*)"),
        Column(
            "current_median_hours",
            "DOUBLE",
            "Median of (wall_seconds - I) over successful attempts, hours",
        ),
        Column("current_useful_fraction", "DOUBLE", "U at current_median_hours"),
        Column(
            "core_hours_per_year",
            "DOUBLE",
            "Core-hours of the job type scaled to 365 days by the span of end_time of the input",
        ),
        Column(
            "core_hours_saved_per_year",
            "DOUBLE",
            "core_hours_per_year x (1 - current_useful_fraction / expected_useful_fraction)",
        ),
    ),
    checks=(Check("not_null", "job_type"), Check("unique", "job_type")),
)

GOLD_MULTICORE_SCALING = Table(
    database="gold",
    name="multicore_scaling",
    keys=("job_type", "cores"),
    question="How does CPU efficiency change with the number of cores a job uses?",
    example=(
        "SELECT job_type, cores, jobs, round(cpu_efficiency, 3) AS eff, round(memory_per_core_mb)"
        " AS mb_per_core FROM gold.multicore_scaling ORDER BY job_type, cores"
    ),
    grain="one row per job_type and cores.",
    description=(
        "Efficiency, throughput and memory by number of cores, over successful attempts only "
        "(failed attempts would mix failure effects into scaling)."
    ),
    columns=(
        _JOB_TYPE,
        Column("cores", "BIGINT", "Cores allocated"),
        Column("jobs", "BIGINT", "Successful attempts"),
        Column("tasks", "BIGINT", "Distinct task_id (an attempt without one counts alone)"),
        Column("core_hours", "DOUBLE", "sum(wall_seconds x cores) / 3600"),
        Column("cpu_hours", "DOUBLE", "sum(cpu_seconds) / 3600"),
        Column("cpu_efficiency", "DOUBLE", "cpu_hours / core_hours (ratio of sums)"),
        Column(
            "cpu_efficiency_se",
            "DOUBLE",
            "Standard error of cpu_efficiency, ratio-estimator linearisation clustered by task "
            "(null with fewer than 2 tasks)",
        ),
        Column(
            "events_per_core_hour",
            "DOUBLE",
            "sum(events) / core-hours over attempts reporting events (ratio of sums)",
        ),
        Column("memory_per_core_mb", "DOUBLE", "Mean of max_rss_mb / cores"),
    ),
    checks=(Check("not_null", "job_type"), Check("between", "cores", {"min_value": 1})),
)

GOLD_MULTICORE_FIT = Table(
    database="gold",
    name="multicore_fit",
    keys=("job_type",),
    question=(
        "What is each job type's serial fraction, and above how many cores does it stop paying?"
    ),
    example=(
        "SELECT job_type, round(serial_fraction, 4) AS s, round(serial_fraction_se, 4) AS se, "
        "cores_below_90pct FROM gold.multicore_fit ORDER BY s DESC"
    ),
    grain="one row per job_type.",
    description=(
        "Amdahl fit per job type: eff(n) = e1 / (1 + s (n-1)), i.e. 1/eff(n) = a + b (n-1) "
        "with e1 = 1/a and s = b/a, by weighted least squares over the core counts run at one "
        "site (weights = core-hours), the site estimates combined by inverse variance. Core "
        "counts are compared within a site because sites differ in efficiency and in their "
        "mix of core counts; a pooled fit reads a slow site running mostly 8-core jobs as "
        "serial fraction."
    ),
    columns=(
        _JOB_TYPE,
        Column("serial_fraction", "DOUBLE", "s = b / a; null with fewer than 2 core counts"),
        Column(
            "serial_fraction_se",
            "DOUBLE",
            "Standard error of s: delta method on the WLS sandwich covariance of (a, b), each "
            "point's variance from the task-clustered variance of its 1/eff, per site; "
            "combined as sqrt(1 / sum(1/se^2)); null when a contributing site has none",
        ),
        Column("e1", "DOUBLE", "Fitted single-core efficiency 1/a, core-hour mean over sites"),
        Column(
            "cores_below_90pct",
            "BIGINT",
            "Smallest n with parallel efficiency 1/(1 + s (n-1)) < 0.9; null when s <= 0",
        ),
        Column("n_core_counts", "BIGINT", "Distinct core counts in the fit"),
    ),
    checks=(Check("not_null", "job_type"), Check("unique", "job_type")),
)

_RULE_COLUMNS = (
    Column("rule_version", "INT", "Version of the rule; the highest version of a rule_id applies"),
    Column("rule_id", "STRING", "Stable name of the rule"),
    Column("entity", "STRING", "What is scored: site | cpu_model | task"),
    Column(
        "metric",
        "STRING",
        "cpu_efficiency (successful attempts, ratio of sums) | hs23_seconds_per_event "
        "(HS23-normalised CPU s/event relative to the same tasks elsewhere; 1.0 = typical)",
    ),
    Column(
        "comparison",
        "STRING",
        "own_history: vs the entity's previous 8 weeks | peers: vs the same job type at the "
        "other entities in the same week",
    ),
    Column("direction", "STRING", "Which side is flagged: low | high | both"),
    Column("threshold", "DOUBLE", "|robust z| at or above which a row is flagged"),
    Column("min_jobs", "INT", "Minimum attempts behind a value (scored row and baseline points)"),
    Column("min_baseline_points", "INT", "Minimum peers or previous weeks behind the baseline"),
    Column(
        "min_scale",
        "DOUBLE",
        "Floor of the robust standard deviation (log scale, 0.03 ~ 3%): a MAD of 0 never divides",
    ),
    Column("enabled", "BOOLEAN", "false retires the rule (as a new version)"),
    Column("description", "STRING", "What the rule is for"),
)

GOLD_EFFICIENCY_OUTLIER_RULES = Table(
    database="gold",
    name="efficiency_outlier_rules",
    keys=("rule_id", "rule_version"),
    question="Which rules decide what counts as an efficiency outlier (editable, versioned)?",
    example=(
        "SELECT rule_id, rule_version, entity, metric, comparison, threshold, enabled FROM "
        "gold.efficiency_outlier_rules ORDER BY rule_id, rule_version"
    ),
    grain="one row per rule_id and rule_version.",
    description=(
        "Editable rules of gold.efficiency_outliers: add a row with a higher rule_version to "
        "change a rule; every week is re-scored with the latest enabled version of each rule."
    ),
    columns=_RULE_COLUMNS,
    checks=(Check("not_null", "rule_id"), Check("not_null", "rule_version")),
)

GOLD_EFFICIENCY_OUTLIERS = Table(
    database="gold",
    name="efficiency_outliers",
    stable_rows=False,
    keys=("week", "rule_id", "entity_value", "job_type"),
    question="Which sites, CPU models and tasks should I look at this week, and why?",
    example=(
        "SELECT week, entity, entity_value, job_type, round(deviation_pct, 1) AS dev_pct, "
        "round(robust_z, 1) AS z, rule_id FROM gold.efficiency_outliers ORDER BY week DESC, z "
        "LIMIT 20"
    ),
    grain="one row per week, rule_id, entity_value and job_type flagged by the rule.",
    description=(
        "The list an operator starts the week with: sites, CPU models and tasks whose CPU "
        "efficiency or HS23-normalised CPU time per event departs from their peers or their "
        "own history (robust z on the log of the metric: median and MAD)."
    ),
    columns=(
        Column("week", "DATE", "Monday of the ISO week scored"),
        Column("entity", "STRING", "site | cpu_model | task"),
        Column("entity_value", "STRING", "The site, normalised CPU model or task_id"),
        _JOB_TYPE,
        Column("metric", "STRING", "cpu_efficiency | hs23_seconds_per_event"),
        Column("value", "DOUBLE", "The metric for the entity, job type and week"),
        Column("baseline", "DOUBLE", "Median of the baseline (peers or previous weeks)"),
        Column("deviation_pct", "DOUBLE", "100 x (value / baseline - 1)"),
        Column(
            "robust_z",
            "DOUBLE",
            "(ln value - median ln baseline) / sqrt(max(1.4826 x MAD, min_scale)^2 + "
            "log_se^2), log_se the sampling error of ln value over the entity's jobs",
        ),
        Column("comparison", "STRING", "peers | own_history"),
        Column("baseline_points", "INT", "Peers or previous weeks behind the baseline"),
        Column("rule_id", "STRING", "Rule that flagged the row"),
        Column("rule_version", "INT", "Version of that rule"),
        Column("n_jobs", "BIGINT", "Successful attempts behind value"),
        Column("evidence", "STRING", "One readable sentence with the figures"),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "rule_id")),
)

TABLES: tuple[Table, ...] = (
    GOLD_CPU_MODEL_EFFICIENCY,
    GOLD_FAILURE_VS_DURATION,
    GOLD_JOB_LENGTH_ADVICE,
    GOLD_MULTICORE_SCALING,
    GOLD_MULTICORE_FIT,
    GOLD_EFFICIENCY_OUTLIER_RULES,
    GOLD_EFFICIENCY_OUTLIERS,
)

# --------------------------------------------------------------------------------------------
# Pure-python references (also used on the driver for the few per-job-type numbers)
# --------------------------------------------------------------------------------------------


def wilson_interval(k: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials."""
    if n <= 0:
        raise ValueError("n must be positive")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def useful_fraction(t_hours: float, init_hours: float, hazard_per_hour: float) -> float:
    """U(T) = T exp(-h(I+T)) / E[wall] with E[wall] = (1 - exp(-h(I+T))) / h.

    Equivalently h T / (exp(h(I+T)) - 1); the limit h -> 0 is T / (I+T).
    """
    if t_hours <= 0:
        return 0.0
    x = hazard_per_hour * (init_hours + t_hours)
    if hazard_per_hour <= 0 or x < 1e-12:
        return t_hours / (init_hours + t_hours)
    return hazard_per_hour * t_hours / math.expm1(x)


def optimal_job_length(
    init_hours: float,
    hazard_per_hour: float,
    lo_hours: float = JOB_LENGTH_SEARCH_HOURS[0],
    hi_hours: float = JOB_LENGTH_SEARCH_HOURS[1],
) -> float:
    """T* maximising ``useful_fraction``: golden-section search on log T in [lo, hi].

    U is unimodal in T (its first-order condition h T = 1 - exp(-h(I+T)) has one root), so the
    search converges to the optimum, or to a bound when the optimum lies outside.
    """

    def u(log_t: float) -> float:
        return useful_fraction(math.exp(log_t), init_hours, hazard_per_hour)

    inv_phi = (math.sqrt(5) - 1) / 2
    a, b = math.log(lo_hours), math.log(hi_hours)
    c, d = b - inv_phi * (b - a), a + inv_phi * (b - a)
    uc, ud = u(c), u(d)
    while b - a > 1e-10:
        if uc >= ud:
            b, d, ud = d, c, uc
            c = b - inv_phi * (b - a)
            uc = u(c)
        else:
            a, c, uc = c, d, ud
            d = a + inv_phi * (b - a)
            ud = u(d)
    return math.exp((a + b) / 2)


class AmdahlPoint(NamedTuple):
    cores: int
    efficiency: float
    weight: float
    variance: float | None = None  # variance of 1/efficiency, for the standard error


class AmdahlFit(NamedTuple):
    serial_fraction: float | None
    serial_fraction_se: float | None
    e1: float | None
    cores_below_90pct: int | None
    n_core_counts: int


def cores_below_90pct(serial_fraction: float | None) -> int | None:
    """Smallest n with 1 / (1 + s (n-1)) < 0.9, i.e. n - 1 > 1 / (9 s)."""
    if serial_fraction is None or serial_fraction <= 0:
        return None
    return math.floor(1 / (9 * serial_fraction)) + 2


def amdahl_fit(points: Sequence[AmdahlPoint | tuple[int, float, float]]) -> AmdahlFit:
    """Weighted least squares of 1/eff = a + b (n-1); s = b/a, e1 = 1/a.

    The standard error of s (when every point has a variance) is the delta method on the
    sandwich covariance of (a, b): (X'WX)^-1 X'W V W X (X'WX)^-1.
    """
    pts = [AmdahlPoint(*p) for p in points]
    n_counts = len({p.cores for p in pts})
    sw = swx = swy = swxx = swxy = m11 = m12 = m22 = 0.0
    for p in pts:
        x, y, w = p.cores - 1.0, 1.0 / p.efficiency, p.weight
        sw, swx, swy = sw + w, swx + w * x, swy + w * y
        swxx, swxy = swxx + w * x * x, swxy + w * x * y
        if p.variance is not None:
            m11, m12, m22 = (
                m11 + w * w * p.variance,
                m12 + w * w * p.variance * x,
                m22 + w * w * p.variance * x * x,
            )
    det = sw * swxx - swx * swx
    if n_counts < 2 or det <= 0:
        return AmdahlFit(None, None, None, None, n_counts)
    b = (sw * swxy - swx * swy) / det
    a = (swy - b * swx) / sw
    s = b / a
    se = None
    if all(p.variance is not None for p in pts):
        # (X'WX)^-1 = [[p, q], [q, r]] / det
        p_, q_, r_ = swxx, -swx, sw
        var_a = (p_ * p_ * m11 + 2 * p_ * q_ * m12 + q_ * q_ * m22) / det**2
        var_b = (q_ * q_ * m11 + 2 * q_ * r_ * m12 + r_ * r_ * m22) / det**2
        cov = (p_ * q_ * m11 + (p_ * r_ + q_ * q_) * m12 + q_ * r_ * m22) / det**2
        var_s = var_b / a**2 + b * b * var_a / a**4 - 2 * b * cov / a**3
        se = math.sqrt(max(var_s, 0.0))
    return AmdahlFit(s, se, 1 / a, cores_below_90pct(s), n_counts)


# --------------------------------------------------------------------------------------------
# Column helpers
# --------------------------------------------------------------------------------------------


def _wilson_columns(
    k: SparkColumn, n: SparkColumn, z: float = WILSON_Z
) -> tuple[SparkColumn, SparkColumn]:
    """The Wilson score interval as Spark column expressions (same formula as wilson_interval)."""
    p = k / n
    z2 = F.lit(z * z)
    denom = F.lit(1.0) + z2 / n
    centre = (p + z2 / (F.lit(2.0) * n)) / denom
    half = F.lit(z) * F.sqrt(p * (F.lit(1.0) - p) / n + z2 / (F.lit(4.0) * n * n)) / denom
    return F.greatest(centre - half, F.lit(0.0)), F.least(centre + half, F.lit(1.0))


def _success() -> SparkColumn:
    return F.col("status") == "success"


def _failed() -> SparkColumn:
    return F.col("status") == "failed"


# --------------------------------------------------------------------------------------------
# gold.cpu_model_efficiency
# --------------------------------------------------------------------------------------------


def cpu_model_efficiency(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (microarchitecture, cpu_model_norm, job_type)."""
    with_events = _success() & (F.col("events") > 0)
    per_event = F.when(with_events, F.col("cpu_seconds") / F.col("events"))
    hs23_per_event = per_event * F.col("hs23_per_core")
    agg = jobs.groupBy("microarchitecture", "cpu_model_norm", "job_type").agg(
        F.count(F.lit(1)).alias("jobs"),
        (F.sum("cores_wall_seconds") / 3600.0).alias("core_hours"),
        (F.sum("cpu_seconds") / 3600.0).alias("cpu_hours"),
        F.count(per_event).alias("jobs_with_events"),
        F.percentile_approx(per_event, [0.5, 0.9], 10000).alias("_pct"),
        F.percentile_approx(hs23_per_event, 0.5, 10000).alias("median_hs23_seconds_per_event"),
    )
    return agg.select(
        "microarchitecture",
        "cpu_model_norm",
        "job_type",
        "jobs",
        "core_hours",
        "cpu_hours",
        F.try_divide(
            F.col("cpu_hours"), F.when(F.col("core_hours") > 0, F.col("core_hours"))
        ).alias("cpu_efficiency"),
        "jobs_with_events",
        F.col("_pct")[0].alias("median_cpu_seconds_per_event"),
        F.col("_pct")[1].alias("p90_cpu_seconds_per_event"),
        "median_hs23_seconds_per_event",
    )


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
    keys = ("job_type", "task_id", "cpu_model", "site")
    task = Window.partitionBy("job_type", "task_id")
    sums = (
        jobs.where(ok)
        .groupBy(*keys)
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(x).alias("sx"),
            F.sum(y).alias("sy"),
            F.sum(x * y).alias("sxy"),
            F.sum(x * x).alias("sxx"),
        )
        .withColumn("task_wall", F.sum("sy").over(task) / F.sum("n").over(task))
    )
    n, sx, sy, sxy, sxx = (F.col(c) for c in ("n", "sx", "sy", "sxy", "sxx"))
    sxx_c = n * sxx - sx * sx  # n^2 var(x); relative guard against round-off of equal events
    slope = F.try_divide(n * sxy - sx * sy, sxx_c)
    return sums.where((n >= MIN_INIT_GROUP_JOBS) & (sxx_c > F.lit(1e-9) * n * sxx)).select(
        *keys,
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
    """silver.jobs -> one row per job_type: I, h, T*, U(T*), U(current), core-hours at stake.

    Runs the per-job-type aggregation and collects it (one row per job type); T* is found on
    the driver by ``optimal_job_length``.
    """
    init = (
        init_intercepts(jobs)
        .groupBy("job_type")
        .agg(
            F.count(F.lit(1)).alias("n_init_groups"),
            F.try_divide(
                F.sum(F.col("intercept_seconds") * F.col("weight")), F.sum("weight")
            ).alias("init_seconds"),
        )
    )
    mode = F.coalesce(F.col("failure_mode"), F.lit(""))
    stats = jobs.groupBy("job_type").agg(
        F.count(F.lit(1)).alias("n_jobs"),
        (F.sum("cores_wall_seconds") / 3600.0).alias("core_hours"),
        (F.sum("wall_seconds") / 3600.0).alias("wall_hours"),
        F.count(F.when(_failed() & ~mode.isin(*START_FAILURE_MODES), 1)).alias("hazard_failures"),
        F.percentile_approx(F.when(_success(), F.col("wall_seconds")), 0.5, 10000)
        .cast("double")
        .alias("median_success_wall"),
    )
    span = jobs.agg(
        (F.unix_seconds(F.max("end_time")) - F.unix_seconds(F.min("end_time"))).alias(
            "span_seconds"
        )
    )
    rows = stats.join(init, "job_type", "left").crossJoin(span).orderBy("job_type").collect()
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
            r.core_hours * DAYS_PER_YEAR * 86400.0 / r.span_seconds
            if r.span_seconds and r.core_hours is not None
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
    return jobs.sparkSession.createDataFrame(out, _ADVICE_DDL)


# --------------------------------------------------------------------------------------------
# gold.multicore_scaling and gold.multicore_fit
# --------------------------------------------------------------------------------------------


def _multicore_points(jobs: DataFrame, strata: tuple[str, ...] = ()) -> DataFrame:
    """Per (job_type, *strata, cores): the measures of multicore_scaling plus the fit inputs
    (y = 1/eff, its task-clustered variance), from per-task partial sums."""
    events_known = F.col("events").isNotNull()
    per_task = (
        jobs.where(_success())
        .withColumn("_cluster", F.coalesce(F.col("task_id"), F.concat(F.lit("job:"), "job_id")))
        .groupBy("job_type", *strata, "cores", "_cluster")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum("cpu_seconds").alias("c"),
            F.sum("cores_wall_seconds").alias("w"),
            F.sum(F.when(events_known, F.col("events"))).alias("ev"),
            F.sum(F.when(events_known, F.col("cores_wall_seconds"))).alias("ev_w"),
            F.sum(F.col("max_rss_mb") / F.col("cores")).alias("rss"),
            F.count(F.col("max_rss_mb")).alias("rss_n"),
        )
    )
    pts = per_task.groupBy("job_type", *strata, "cores").agg(
        F.sum("n").alias("jobs"),
        F.count(F.lit(1)).alias("tasks"),
        F.sum("c").alias("c"),
        F.sum("w").alias("w"),
        F.sum(F.col("c") * F.col("c")).alias("cc"),
        F.sum(F.col("w") * F.col("w")).alias("ww"),
        F.sum(F.col("c") * F.col("w")).alias("cw"),
        F.sum("ev").alias("ev"),
        F.sum("ev_w").alias("ev_w"),
        F.sum("rss").alias("rss"),
        F.sum("rss_n").alias("rss_n"),
    )
    c, w, t = F.col("c"), F.col("w"), F.col("tasks")
    y = F.try_divide(w, F.when(c > 0, c))
    # Linearised variance of the ratio W/C, tasks as clusters.
    resid_ss = F.col("ww") - F.lit(2.0) * y * F.col("cw") + y * y * F.col("cc")
    var_y = F.when(t >= 2, F.try_divide(t / (t - 1) * F.greatest(resid_ss, F.lit(0.0)), c * c))
    eff = F.try_divide(c, F.when(w > 0, w))
    return pts.select(
        "job_type",
        *strata,
        F.col("cores").cast("bigint").alias("cores"),
        "jobs",
        "tasks",
        (w / 3600.0).alias("core_hours"),
        (c / 3600.0).alias("cpu_hours"),
        eff.alias("cpu_efficiency"),
        (F.sqrt(var_y) * eff * eff).alias("cpu_efficiency_se"),
        F.try_divide(F.col("ev"), F.when(F.col("ev_w") > 0, F.col("ev_w") / 3600.0)).alias(
            "events_per_core_hour"
        ),
        F.try_divide(F.col("rss"), F.when(F.col("rss_n") > 0, F.col("rss_n"))).alias(
            "memory_per_core_mb"
        ),
        y.alias("_y"),
        var_y.alias("_var_y"),
    )


def multicore_scaling(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (job_type, cores), successful attempts."""
    return _multicore_points(jobs).drop("_y", "_var_y")


def multicore_fit(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per job_type: Amdahl fit within each site, combined over sites.

    Core counts are compared inside a site (the same storage, network and CPUs), because sites
    differ in efficiency and in their mix of core counts: a pooled fit would read a slow site
    that runs mostly 8-core jobs as serial fraction. Per (job_type, site) the maths of
    ``amdahl_fit`` (WLS of 1/eff on n-1, weights = core-hours, delta-method standard error from
    task-clustered point variances) runs as Spark aggregates; the site estimates of s are then
    combined by inverse variance (by core-hours when some site has no standard error).
    """
    pts = _multicore_points(jobs, ("site",)).where(
        F.col("_y").isNotNull() & (F.col("core_hours") > 0)
    )
    x, y, w, v = F.col("cores") - 1.0, F.col("_y"), F.col("core_hours"), F.col("_var_y")
    s = pts.groupBy("job_type", "site").agg(
        F.count(F.lit(1)).alias("n_core_counts"),
        F.count(v).alias("n_var"),
        F.sum(w).alias("sw"),
        F.sum(w * x).alias("swx"),
        F.sum(w * y).alias("swy"),
        F.sum(w * x * x).alias("swxx"),
        F.sum(w * x * y).alias("swxy"),
        F.sum(w * w * v).alias("m11"),
        F.sum(w * w * v * x).alias("m12"),
        F.sum(w * w * v * x * x).alias("m22"),
    )
    sw, swx, swy, swxx, swxy = (F.col(c) for c in ("sw", "swx", "swy", "swxx", "swxy"))
    m11, m12, m22 = F.col("m11"), F.col("m12"), F.col("m22")
    det = sw * swxx - swx * swx
    ok = (F.col("n_core_counts") >= 2) & (det > 0)
    det2 = F.when(ok, det * det)
    b = F.try_divide(sw * swxy - swx * swy, F.when(ok, det))
    a = F.try_divide(swy - b * swx, sw)
    p, q, r = swxx, -swx, sw
    var_a = F.try_divide(p * p * m11 + 2 * p * q * m12 + q * q * m22, det2)
    var_b = F.try_divide(q * q * m11 + 2 * q * r * m12 + r * r * m22, det2)
    cov = F.try_divide(p * q * m11 + (p * r + q * q) * m12 + q * r * m22, det2)
    var_s = (
        F.try_divide(var_b, a * a)
        + F.try_divide(b * b * var_a, F.pow(a, 4))
        - F.try_divide(2 * b * cov, F.pow(a, 3))
    )
    per_site = s.select(
        "job_type",
        F.try_divide(b, a).alias("s"),
        F.when(
            ok & (F.col("n_var") == F.col("n_core_counts")) & var_s.isNotNull(),
            F.greatest(var_s, F.lit(0.0)),
        ).alias("var_s"),
        F.try_divide(F.lit(1.0), a).alias("e1"),
        sw.alias("core_hours"),
    ).where(F.col("s").isNotNull())
    inv = F.when(F.col("var_s") > 0, F.lit(1.0) / F.col("var_s"))
    exact = F.col("var_s") == 0  # a site whose points lie exactly on the curve
    ch = F.col("core_hours")
    comb = per_site.groupBy("job_type").agg(
        F.count(F.lit(1)).alias("n_sites"),
        F.count("var_s").alias("n_var"),
        F.sum(inv).alias("sinv"),
        F.sum(inv * F.col("s")).alias("sinv_s"),
        F.sum(F.when(exact, ch)).alias("sex"),
        F.sum(F.when(exact, ch * F.col("s"))).alias("sex_s"),
        F.sum(ch).alias("sch"),
        F.sum(ch * F.col("s")).alias("sch_s"),
        F.sum(ch * F.col("e1")).alias("sch_e1"),
    )
    all_var = F.col("n_var") == F.col("n_sites")
    sf = (
        F.when(F.col("sex") > 0, F.col("sex_s") / F.col("sex"))
        .when(all_var & (F.col("sinv") > 0), F.col("sinv_s") / F.col("sinv"))
        .otherwise(F.col("sch_s") / F.col("sch"))
    )
    se = F.when(all_var & (F.col("sex") > 0), F.lit(0.0)).when(
        all_var & (F.col("sinv") > 0), F.sqrt(F.lit(1.0) / F.col("sinv"))
    )
    counts = pts.groupBy("job_type").agg(F.countDistinct("cores").alias("n_core_counts"))
    fit = comb.select(
        "job_type",
        sf.alias("serial_fraction"),
        se.alias("serial_fraction_se"),
        (F.col("sch_e1") / F.col("sch")).alias("e1"),
    )
    return counts.join(fit, "job_type", "left").select(
        "job_type",
        "serial_fraction",
        "serial_fraction_se",
        "e1",
        F.when(F.col("serial_fraction") > 0, F.floor(1.0 / (9.0 * F.col("serial_fraction"))) + 2)
        .cast("bigint")
        .alias("cores_below_90pct"),
        F.col("n_core_counts").cast("bigint").alias("n_core_counts"),
    )


# --------------------------------------------------------------------------------------------
# gold.efficiency_outlier_rules and gold.efficiency_outliers
# --------------------------------------------------------------------------------------------


class OutlierRule(NamedTuple):
    rule_version: int
    rule_id: str
    entity: str  # site | cpu_model | task
    metric: str  # cpu_efficiency | hs23_seconds_per_event
    comparison: str  # own_history | peers
    direction: str  # low | high | both
    threshold: float  # robust z
    min_jobs: int
    min_baseline_points: int
    min_scale: float  # floor of the robust sd, log scale
    enabled: bool
    description: str


DEFAULT_OUTLIER_RULES: tuple[OutlierRule, ...] = (
    OutlierRule(1, "site-efficiency-peers", "site", "cpu_efficiency", "peers", "low", 3.5, 20, 3,
                0.03, True, "Site less CPU-efficient than the other sites for the same job type "
                "(I/O, storage or network limits)"),
    OutlierRule(1, "site-efficiency-history", "site", "cpu_efficiency", "own_history", "low",
                3.5, 20, 4, 0.03, True, "Site less CPU-efficient than in its previous 8 weeks"),
    OutlierRule(1, "site-hs23-peers", "site", "hs23_seconds_per_event", "peers", "high", 3.5,
                20, 3, 0.03, True, "Site's nodes need more HS23-normalised CPU time per event "
                "than the same CPU models elsewhere (throttling, overcommit, VM steal)"),
    OutlierRule(1, "site-hs23-history", "site", "hs23_seconds_per_event", "own_history", "high",
                3.5, 20, 4, 0.03, True, "Site's nodes slower per event than in the previous "
                "8 weeks"),
    OutlierRule(1, "cpu-model-hs23-peers", "cpu_model", "hs23_seconds_per_event", "peers",
                "high", 3.5, 20, 3, 0.03, True, "CPU model slower for a job type than its HS23 "
                "score predicts, relative to the other models"),
    # v2 of the task rules: tasks of one job type differ honestly (events per job, init share),
    # so the scale floor is 0.08 (a task must be >= 24% below its peers at z 3.5); v1 (0.05)
    # flagged ordinary short-event analysis tasks on a grid with no planted effect
    OutlierRule(2, "task-efficiency-peers", "task", "cpu_efficiency", "peers", "low", 3.5, 10,
                5, 0.08, True, "Task less CPU-efficient than the other tasks of its job type"),
    OutlierRule(2, "task-efficiency-history", "task", "cpu_efficiency", "own_history", "low",
                3.5, 10, 4, 0.08, True, "Task less CPU-efficient than in its previous weeks"),
)  # fmt: skip

_RULES_DDL = (
    "rule_version int, rule_id string, entity string, metric string, comparison string, "
    "direction string, threshold double, min_jobs int, min_baseline_points int, "
    "min_scale double, enabled boolean, description string"
)


def outlier_rules_frame(
    spark: SparkSession, rules: Sequence[OutlierRule] = DEFAULT_OUTLIER_RULES
) -> DataFrame:
    """The rules as a DataFrame with the columns of gold.efficiency_outlier_rules."""
    return spark.createDataFrame([tuple(r) for r in rules], _RULES_DDL)


def _active_rules(rules: DataFrame) -> DataFrame:
    """Latest version of each rule_id, if enabled."""
    latest = Window.partitionBy("rule_id").orderBy(F.col("rule_version").desc())
    return (
        rules.withColumn("_rank", F.row_number().over(latest))
        .where((F.col("_rank") == 1) & F.coalesce(F.col("enabled"), F.lit(True)))
        .drop("_rank", "description", "enabled")
    )


def two_way_effects(
    cells: Sequence[tuple[str, str, float, float]], tol: float = 1e-10, max_rounds: int = 20_000
) -> tuple[dict[str, float], dict[str, float]]:
    """Weighted least squares of y ~ a[row] + b[col] over cells (row, col, weight, y), by
    backfitting to convergence. Returns (a, b); the split of a common constant between them is
    arbitrary (comparisons between rows, or between columns, are not affected)."""
    rows = {r for r, _, _, _ in cells}
    cols = {c for _, c, _, _ in cells}
    a = dict.fromkeys(rows, 0.0)
    b = dict.fromkeys(cols, 0.0)

    def sweep(target: dict[str, float], other: dict[str, float], own_is_row: bool) -> float:
        num = dict.fromkeys(target, 0.0)
        den = dict.fromkeys(target, 0.0)
        for r, c, w, y in cells:
            own, oth = (r, c) if own_is_row else (c, r)
            num[own] += w * (y - other[oth])
            den[own] += w
        change = 0.0
        for k in target:
            new = num[k] / den[k] if den[k] > 0 else 0.0
            change = max(change, abs(new - target[k]))
            target[k] = new
        return change

    sweep(b, a, own_is_row=False)
    for _ in range(max_rounds):
        if max(sweep(a, b, own_is_row=True), sweep(b, a, own_is_row=False)) < tol:
            break
    return a, b


def site_model_effects(rel: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per job type, ln(HS23 cost per event / task reference) ~ site effect + CPU-model effect.

    ``rel`` has site, _cpu, job_type and _lrel (one row per successful job). Each cell (job
    type, site, model) is summarised by its median and job count; only that cell table (one row
    per job type, site and CPU model in the fleet, never the jobs) is collected, and the
    effects are fitted exactly on the driver (``two_way_effects``, weights = jobs). Returns
    (site effects _s by site and job_type, model effects _m by _cpu and job_type). Without
    this, a CPU model installed mostly at a slow site looks slow, and a site with many
    slow-for-this-workload models looks slow.
    """
    cells = (
        rel.where(F.col("_lrel").isNotNull())
        .groupBy("job_type", "site", "_cpu")
        .agg(
            F.count(F.lit(1)).alias("_n"),
            F.percentile_approx("_lrel", 0.5, 10000).alias("_y"),
        )
        .collect()
    )
    per_type: dict[str, list[tuple[str, str, float, float]]] = {}
    for c in cells:
        per_type.setdefault(c.job_type, []).append((c.site, c._cpu, float(c._n), c._y))
    site_rows, model_rows = [], []
    for job_type, type_cells in per_type.items():
        a, b = two_way_effects(type_cells)
        site_rows += [(site, job_type, v) for site, v in a.items()]
        model_rows += [(model, job_type, v) for model, v in b.items()]
    spark = rel.sparkSession
    return (
        spark.createDataFrame(site_rows, "site string, job_type string, _s double"),
        spark.createDataFrame(model_rows, "_cpu string, job_type string, _m double"),
    )


def outlier_metrics(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (week, entity, entity_value, job_type, metric): value, n_jobs,
    log_se (standard error of ln value, ratio-of-sums linearisation over the jobs).

    Successful attempts only. cpu_efficiency = sum(cpu) / sum(wall x cores). The
    hs23_seconds_per_event metric is relative, as a ratio of sums: sum(cpu x hs23) / sum(events
    x expected), where expected is the task's median HS23-seconds per event over all weeks and
    entities (the job type's when task_id is null), times, for a site, the effect of the job's
    CPU model, and for a CPU model, the effect of the job's site (``site_model_effects``): a
    site is compared with the same CPU models elsewhere, a model with the same sites.
    """
    ok_events = (
        (F.col("events") > 0) & F.col("hs23_per_core").isNotNull() & (F.col("cpu_seconds") > 0)
    )
    hs23_per_event = F.when(
        ok_events, F.col("cpu_seconds") * F.col("hs23_per_core") / F.col("events")
    )
    succ = (
        jobs.where(_success())
        .withColumn(
            "_norm_key",
            F.coalesce(F.col("task_id"), F.concat(F.lit("job_type:"), F.col("job_type"))),
        )
        .withColumn("_cpu", F.coalesce(F.col("cpu_model_norm"), F.col("cpu_model")))
        .withColumn("_x", hs23_per_event)
    )
    ref = succ.groupBy("_norm_key").agg(F.percentile_approx("_x", 0.5, 10000).alias("_ref"))
    succ = succ.join(ref, "_norm_key", "left").withColumn(
        "_lrel", F.log(F.try_divide(F.col("_x"), F.when(F.col("_ref") > 0, F.col("_ref"))))
    )
    site_eff, model_eff = site_model_effects(succ)
    succ = succ.join(F.broadcast(site_eff), ["site", "job_type"], "left").join(
        F.broadcast(model_eff), ["_cpu", "job_type"], "left"
    )
    expected = F.col("events") * F.col("_ref")
    entities = F.array(
        F.struct(
            F.lit("site").alias("entity"),
            F.col("site").alias("entity_value"),
            (expected * F.exp("_m")).alias("_expected"),
        ),
        F.struct(
            F.lit("cpu_model").alias("entity"),
            F.col("_cpu").alias("entity_value"),
            (expected * F.exp("_s")).alias("_expected"),
        ),
        F.struct(
            F.lit("task").alias("entity"),
            F.col("task_id").alias("entity_value"),
            expected.alias("_expected"),
        ),
    )
    exploded = succ.select(
        "week",
        "job_type",
        "cpu_seconds",
        "cores_wall_seconds",
        "_x",
        "hs23_per_core",
        F.inline(entities),
    ).where(F.col("entity_value").isNotNull())
    has_expected = F.col("_x").isNotNull() & (F.col("_expected") > 0)
    hs_a = F.when(has_expected, F.col("cpu_seconds") * F.col("hs23_per_core"))
    hs_e = F.when(has_expected, F.col("_expected"))
    cpu, cw = F.col("cpu_seconds"), F.col("cores_wall_seconds")
    agg = exploded.groupBy("week", "entity", "entity_value", "job_type").agg(
        F.count(F.lit(1)).alias("_n_eff"),
        F.sum(cpu).alias("_cpu_s"),
        F.sum(cw).alias("_cw"),
        F.sum(cpu * cpu).alias("_eff_aa"),
        F.sum(cpu * cw).alias("_eff_ae"),
        F.sum(cw * cw).alias("_eff_ee"),
        F.count(hs_a).alias("_n_hs"),
        F.sum(hs_a).alias("_hs_a"),
        F.sum(hs_e).alias("_hs_e"),
        F.sum(hs_a * hs_a).alias("_hs_aa"),
        F.sum(hs_a * hs_e).alias("_hs_ae"),
        F.sum(hs_e * hs_e).alias("_hs_ee"),
    )

    def ratio(prefix: str, a: str, e: str, n: str) -> tuple[SparkColumn, SparkColumn]:
        """Ratio of sums A/E and the standard error of its log (linearised, over jobs)."""
        r = F.try_divide(F.col(a), F.when(F.col(e) > 0, F.col(e)))
        aa, ae, ee = (F.col(f"_{prefix}_{x}") for x in ("aa", "ae", "ee"))
        k = F.col(n)
        ss = F.greatest(aa - F.lit(2.0) * r * ae + r * r * ee, F.lit(0.0))
        var_r = F.when(k >= 2, k / (k - 1) * ss / (F.col(e) * F.col(e)))
        return r, F.try_divide(F.sqrt(var_r), F.when(r > 0, r))

    eff, eff_se = ratio("eff", "_cpu_s", "_cw", "_n_eff")
    hs, hs_se = ratio("hs", "_hs_a", "_hs_e", "_n_hs")
    metrics = F.array(
        F.struct(
            F.lit("cpu_efficiency").alias("metric"),
            eff.alias("value"),
            F.col("_n_eff").cast("bigint").alias("n_jobs"),
            eff_se.alias("log_se"),
        ),
        F.struct(
            F.lit("hs23_seconds_per_event").alias("metric"),
            hs.alias("value"),
            F.col("_n_hs").cast("bigint").alias("n_jobs"),
            hs_se.alias("log_se"),
        ),
    )
    return agg.select("week", "entity", "entity_value", "job_type", F.inline(metrics))


def efficiency_outliers(jobs: DataFrame, rules: DataFrame) -> DataFrame:
    """silver.jobs + rules -> the flagged rows of every week (history re-scored on each run).

    For each active rule (latest enabled version per rule_id), rows of its entity and metric
    with n_jobs >= min_jobs are scored on the log scale: baseline = median of the peers' values
    (same week and job type, the entity itself left out) or of the entity's own previous
    HISTORY_WEEKS weeks; scale = sqrt(max(1.4826 x MAD, min_scale)^2 + log_se^2), where log_se
    is the sampling error of the entity's own value (ratio-of-sums linearisation over its
    jobs), so an entity with few, varied jobs needs a larger departure; robust_z = (ln value -
    baseline) / scale. Medians are exact; baseline points come from two equi-joins of the
    (small) scored table with itself, no arrays. A row is kept when it has >=
    min_baseline_points baseline points and its z passes the threshold on the rule's side.

    Runs one small Spark job when called: the (job type, site, CPU model) cell table of
    ``site_model_effects`` is collected and fitted on the driver.
    """
    scored = (
        outlier_metrics(jobs)
        .join(F.broadcast(_active_rules(rules)), ["entity", "metric"])
        .where((F.col("n_jobs") >= F.col("min_jobs")) & (F.col("value") > 0))
        .withColumn("_log", F.log(F.col("value")))
        .withColumn("_day", F.datediff(F.col("week"), F.lit("1970-01-05").cast("date")))
    )
    key = ["rule_id", "week", "entity_value", "job_type"]
    points = scored.select(
        *(F.col(c).alias(f"_p_{c}") for c in (*key, "_day")), F.col("_log").alias("_v")
    )
    target = scored.select(*key, "comparison", "_day")
    peers = target.where(F.col("comparison") == "peers").join(
        points,
        (F.col("rule_id") == F.col("_p_rule_id"))
        & (F.col("week") == F.col("_p_week"))
        & (F.col("job_type") == F.col("_p_job_type"))
        & (F.col("entity_value") != F.col("_p_entity_value")),
    )
    history = target.where(F.col("comparison") == "own_history").join(
        points,
        (F.col("rule_id") == F.col("_p_rule_id"))
        & (F.col("entity_value") == F.col("_p_entity_value"))
        & (F.col("job_type") == F.col("_p_job_type"))
        & (F.col("_p__day") < F.col("_day"))
        & (F.col("_p__day") >= F.col("_day") - 7 * HISTORY_WEEKS),
    )
    baseline = peers.select(*key, "_v").unionByName(history.select(*key, "_v"))
    centre = baseline.groupBy(*key).agg(
        F.median("_v").alias("_med"), F.count(F.lit(1)).cast("int").alias("baseline_points")
    )
    spread = (
        baseline.join(centre, key)
        .groupBy(*key)
        .agg(F.median(F.abs(F.col("_v") - F.col("_med"))).alias("_mad"))
    )
    peer_scale = F.greatest(F.lit(MAD_TO_SD) * F.col("_mad"), F.col("min_scale"), F.lit(1e-9))
    own_se = F.coalesce(F.col("log_se"), F.lit(0.0))
    scale = F.sqrt(peer_scale * peer_scale + own_se * own_se)
    scored = (
        scored.join(centre, key)
        .join(spread, key)
        .withColumn("robust_z", (F.col("_log") - F.col("_med")) / scale)
    )
    z, thr = F.col("robust_z"), F.col("threshold")
    flagged = (F.col("baseline_points") >= F.col("min_baseline_points")) & (
        ((F.col("direction") == "low") & (z <= -thr))
        | ((F.col("direction") == "high") & (z >= thr))
        | ((F.col("direction") == "both") & (F.abs(z) >= thr))
    )
    out = scored.where(flagged).withColumn("baseline", F.exp("_med"))
    deviation = (F.col("value") / F.col("baseline") - 1.0) * 100.0
    against = F.when(F.col("comparison") == "peers", F.concat(F.lit("other "), F.col("entity")))
    against = against.otherwise(F.lit("previous weeks"))
    evidence = F.format_string(
        "%s %s, %s, week %s: %s %.3f vs %.3f (%+.1f%%), robust z %.1f over %d jobs; "
        "baseline: median of %d %s (rule %s v%d)",
        F.col("entity"),
        F.col("entity_value"),
        F.col("job_type"),
        F.col("week").cast("string"),
        F.col("metric"),
        F.col("value"),
        F.col("baseline"),
        deviation,
        z,
        F.col("n_jobs"),
        F.col("baseline_points"),
        against,
        F.col("rule_id"),
        F.col("rule_version"),
    )
    return out.select(
        "week",
        "entity",
        "entity_value",
        "job_type",
        "metric",
        "value",
        "baseline",
        deviation.alias("deviation_pct"),
        "robust_z",
        "comparison",
        "baseline_points",
        "rule_id",
        "rule_version",
        "n_jobs",
        evidence.alias("evidence"),
    )


# --------------------------------------------------------------------------------------------
# All tables of the module
# --------------------------------------------------------------------------------------------

_TRANSFORMS: dict[str, Callable[[DataFrame], DataFrame]] = {
    GOLD_CPU_MODEL_EFFICIENCY.full_name: cpu_model_efficiency,
    GOLD_FAILURE_VS_DURATION.full_name: failure_vs_duration,
    GOLD_JOB_LENGTH_ADVICE.full_name: job_length_advice,
    GOLD_MULTICORE_SCALING.full_name: multicore_scaling,
    GOLD_MULTICORE_FIT.full_name: multicore_fit,
}


def compute(jobs: DataFrame, rules: DataFrame | None = None) -> dict[str, DataFrame]:
    """silver.jobs (and the outlier rules; DEFAULT_OUTLIER_RULES when None) -> every table of
    this module by full name, conformed to its definition. The site_efficiency tables are not
    included (gridlake.gold.site_efficiency). job_length_advice and efficiency_outliers run their
    small aggregations now (per job type; per job type, site and CPU model).
    """
    if rules is None:
        rules = outlier_rules_frame(jobs.sparkSession)
    out = {name: fn(jobs) for name, fn in _TRANSFORMS.items()}
    out[GOLD_EFFICIENCY_OUTLIER_RULES.full_name] = rules
    out[GOLD_EFFICIENCY_OUTLIERS.full_name] = efficiency_outliers(jobs, rules)
    tables = {t.full_name: t for t in TABLES}
    return {name: tables[name].conform(df) for name, df in out.items()}


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    rules = inputs.rules(GOLD_EFFICIENCY_OUTLIER_RULES, outlier_rules_frame)
    return compute(inputs.read(SILVER_JOBS), rules)


GROUP = GoldGroup(
    "efficiency", TABLES, reads=(SILVER_JOBS,), build=_build, rules=GOLD_EFFICIENCY_OUTLIER_RULES
)
