"""Cost functions: what a unit of work (an event of a job type) costs at a site, and where to
place work (domain.md, question 5).

Tables
------
- gold.cost_prices: the price of a core-hour per site, editable and versioned (a rules table):
  the highest ``rule_version`` of a site applies; site ``*`` is every site without its own row.
  Shipped: ``*`` at 1.0, so costs are normalised core-hours.
- gold.site_workflow_cost (site x job type x week): expected core-seconds per event there, its
  terms, the price, the cost per 1,000 events with a 95 % interval and the rank of the site.
- gold.placement_advice (week x job type x data site x candidate site): the cost per 1,000 events
  of running the job type at the candidate with its input at the data site (network included),
  ranked, with the gain over today's placement and the main reason.

The cost formula (README "Cost functions")
------------------------------------------
For job type J at site S in week W::

    r      = reference CPU seconds per event of J: over J's successful attempts with events
             (CPU outliers out, all weeks), sum(cpu_seconds x f_model / slowdown_site) /
             sum(events): CPU time on the reference model at a typical site
    v      = S's effective speed for J: sum over CPU models m of share_m x f_m, share_m = S's
             core-hours on m in W (all job types: the site's CPU mix), f_m = J's speed factor of
             m (the ALL fit's when J's lacks m), then divided by S's slowdown for J
             (gold.site_speed_anomalies, cpu_model ALL; the ALL fit's when J's lacks S)
    x      = r / v                       CPU seconds per event at S
    e      = CPU efficiency of J's successful attempts at S in W (ratio of sums, outliers out)
    lambda = I/O-limit loss: core-hours lost by jobs classified io_wait_bound, memory_bound,
             remote_read_bound or mixed / classified core-hours (gold.workflow_io_profile);
             e_noio = min(1, e + lambda), the efficiency without I/O limits
    w      = waste factor: core-hours of all attempts / core-hours of useful attempts
             (successful and not retried): failures and retries
    core_seconds_per_event = x / e x w
                           = x                               speed term
                           + (x / e_noio - x)                efficiency term
                           + (x / e - x / e_noio)            I/O-limit term
                           + x / e x (w - 1)                 failure and retry term
    cost_per_1000_events = core_seconds_per_event x price / 3.6

Without node data (lambda unknown) the I/O term is null and its share stays in the efficiency
term; the total is the same. Missing evidence (no speed factor for most of the site's CPU mix,
no site term, no successful attempt) gives a null cost, never a zero.

Interval: relative standard errors in quadrature on the log scale,
``s^2 = s_v^2 + s_e^2 + s_w^2``, cost x exp(+-1.96 s). ``s_v``: each factor's bootstrap 95 %
interval read as +-1.96 sd of log f, averaged over the CPU mix with its shares (the factors come
from one fit: errors taken as fully correlated), in quadrature with the site slowdown's; ``s_e``
and ``s_w``: ratio-estimator linearisation with the tasks as clusters (as gold.multicore_scaling).
r's error is common to every site of a job type and is left out (the interval compares sites);
network terms are taken as exact. Any missing piece gives a null interval.

Placement: input data of J at site D, candidate C. The transfer time per event is
``input_gb_per_event x cost_seconds_per_gb(D -> C)`` (gold.network_cost_matrix, same week; 0 when
C = D, null when the path was not measured); the job holds its cores while its input streams in,
so the network term is that time x J's mean cores (core-seconds per event, at C's price). Today's
placement: the work of J that ran at D, reading its input there (jobs go to the data). Gain =
events of J at D in the week x (today's cost per event - the candidate's), in core-hours (and in
priced units). The main reason is the term (speed, efficiency, io, failures, network, price) that
contributes most to the difference, each difference of core-seconds priced at today's price and
the price difference applied to the candidate's core-seconds.

Every transform is Spark built-ins over aggregated tables: silver.jobs is reduced to (job type,
site, week[, task, CPU model]) sums before any join.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.gold.io_signatures import GOLD_WORKFLOW_IO_PROFILE
from gridlake.gold.network import GOLD_NETWORK_COST_MATRIX
from gridlake.gold.speed_factors import GOLD_CPU_SPEED_FACTORS, GOLD_SITE_SPEED_ANOMALIES
from gridlake.silver.tables import SILVER_JOBS
from gridlake.spark import rows_frame
from gridlake.tabledef import Check, Column, Table

__all__ = [
    "DEFAULT_PRICES",
    "GOLD_COST_PRICES",
    "GOLD_PLACEMENT_ADVICE",
    "GOLD_SITE_WORKFLOW_COST",
    "IO_LIMIT_SIGNATURES",
    "MAX_CANDIDATES",
    "TABLES",
    "Price",
    "compute",
    "placement_advice",
    "prices_frame",
    "resolve_prices",
    "site_workflow_cost",
]

ALL = "ALL"
ANY_SITE = "*"
Z95 = 1.96
MIN_SPEED_COVERAGE = 0.5  # share of the site's core-hours on CPU models with a known factor
MAX_CANDIDATES = 10  # candidate sites kept per job type, data site and week (plus today's)
# Signatures of gold.job_io_signature whose lost core-hours are an I/O (or memory, remote read)
# limit; init_dominated is a job-length matter and stays in the efficiency term.
IO_LIMIT_SIGNATURES = ("io_wait_bound", "memory_bound", "remote_read_bound", "mixed")
REASONS = ("speed", "efficiency", "io", "failures", "network", "price")

# --------------------------------------------------------------------------------------------
# Prices: an editable, versioned table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    rule_version: int
    site: str
    price_per_core_hour: float
    description: str


DEFAULT_PRICES: tuple[Price, ...] = (
    Price(1, ANY_SITE, 1.0, "Every site at 1 per core-hour: costs are normalised core-hours"),
)
_PRICES_DDL = "rule_version int, site string, price_per_core_hour double, description string"

GOLD_COST_PRICES = Table(
    database="gold",
    name="cost_prices",
    keys=("site", "rule_version"),
    question="What does a core-hour cost at each site (editable, versioned)?",
    example=(
        "SELECT site, rule_version, price_per_core_hour, description FROM gold.cost_prices "
        "ORDER BY site, rule_version"
    ),
    grain="one row per site (or '*') and rule_version.",
    description=(
        "Prices of a core-hour used by gold.site_workflow_cost and gold.placement_advice: the "
        "highest rule_version of a site applies; site '*' prices every site without its own "
        "row. Insert a row with a higher rule_version to change a price; the next gridlake "
        "analyze re-prices all history."
    ),
    columns=(
        Column("rule_version", "INT", "Version; the highest one of a site applies"),
        Column("site", "STRING", "Grid site, or * for every site without its own row"),
        Column("price_per_core_hour", "DOUBLE", "Price of one core-hour (any currency unit)"),
        Column("description", "STRING", "Where the price comes from"),
    ),
    checks=(
        Check("not_null", "site"),
        Check("not_null", "rule_version"),
        Check("between", "price_per_core_hour", {"min_value": 0}),
    ),
)


def prices_frame(spark: SparkSession, prices: tuple[Price, ...] = DEFAULT_PRICES) -> DataFrame:
    """Rows of gold.cost_prices (DEFAULT_PRICES when none are given)."""
    rows = [(p.rule_version, p.site, float(p.price_per_core_hour), p.description) for p in prices]
    return rows_frame(spark, rows, _PRICES_DDL)


def resolve_prices(prices: DataFrame, sites: DataFrame) -> DataFrame:
    """(site) rows -> (site, price_per_core_hour, price_version): the site's own latest row,
    else the latest '*' row; null when neither exists (the cost is then null, never free)."""
    ok = prices.where(F.col("site").isNotNull() & F.col("price_per_core_hour").isNotNull())
    own = ok.groupBy("site").agg(
        F.max_by("price_per_core_hour", "rule_version").alias("_own"),
        F.max("rule_version").alias("_own_v"),
    )
    # a global aggregate: exactly one row, nulls when no '*' price exists
    default = ok.where(F.col("site") == ANY_SITE).agg(
        F.max_by("price_per_core_hour", "rule_version").alias("_any"),
        F.max("rule_version").alias("_any_v"),
    )
    return (
        sites.select("site")
        .distinct()
        .join(F.broadcast(own), "site", "left")
        .crossJoin(F.broadcast(default))
        .select(
            "site",
            F.coalesce("_own", "_any").alias("price_per_core_hour"),
            F.when(F.col("_own").isNotNull(), F.col("_own_v"))
            .otherwise(F.col("_any_v"))
            .cast("int")
            .alias("price_version"),
        )
    )


# --------------------------------------------------------------------------------------------
# Table definitions
# --------------------------------------------------------------------------------------------

_WEEK = Column("week", "DATE", "Monday of the ISO week of the jobs' end_time (UTC)")
_JOB_TYPE = Column("job_type", "STRING", "Job type (evgen, simul, pile, reprocessing, ...)")

GOLD_SITE_WORKFLOW_COST = Table(
    database="gold",
    name="site_workflow_cost",
    keys=("week", "site", "job_type"),
    question="What does an event of each job type cost at each site, and why?",
    example=(
        "SELECT job_type, site, round(cost_per_1000_events, 3) AS cost, round(cost_low, 3) AS "
        "lo, round(cost_high, 3) AS hi, cost_rank, n_jobs FROM gold.site_workflow_cost WHERE "
        "week = (SELECT max(week) FROM gold.site_workflow_cost) ORDER BY job_type, cost_rank"
    ),
    grain="one row per week, site and job_type with job attempts.",
    description=(
        "Cost of an event of a job type at a site: reference CPU seconds per event / the site's "
        "effective speed for its CPU mix and that job type / the CPU efficiency reached there x "
        "the failure and retry waste there, split into speed, efficiency, I/O-limit and failure "
        "terms (core-seconds per event), priced per core-hour (gold.cost_prices; 1 = normalised "
        "core-hours per 1,000 events), with a 95 % interval propagated from the inputs. Missing "
        "evidence gives nulls, never zeros."
    ),
    columns=(
        _WEEK,
        Column("site", "STRING", "Grid site"),
        _JOB_TYPE,
        Column("n_jobs", "BIGINT", "Job attempts of the job type at the site in the week"),
        Column("n_successful_jobs", "BIGINT", "Successful attempts (not CPU outliers)"),
        Column("n_tasks", "BIGINT", "Tasks of those attempts (the clusters of the errors)"),
        Column("events", "BIGINT", "Events of the successful attempts (null when none reports)"),
        Column("core_hours", "DOUBLE", "Core-hours of all attempts"),
        Column(
            "reference_cpu_seconds_per_event",
            "DOUBLE",
            "r: CPU seconds per event of the job type on the reference CPU model at a typical "
            "site, sum(cpu x speed factor / site slowdown) / sum(events) over its successful "
            "attempts of every site and week",
        ),
        Column(
            "cpu_mix_speed",
            "DOUBLE",
            "Speed of the site's CPU mix for the job type: core-hour shares of the site's CPU "
            "models in the week (all job types) x their speed factors, over the models with one",
        ),
        Column(
            "speed_coverage",
            "DOUBLE",
            "Share of the site's core-hours on CPU models with a speed factor (below 0.5: no cost)",
        ),
        Column(
            "site_slowdown",
            "DOUBLE",
            "The site's slowdown for the job type (gold.site_speed_anomalies, else its ALL fit)",
        ),
        Column("effective_speed", "DOUBLE", "v = cpu_mix_speed / site_slowdown"),
        Column("cpu_seconds_per_event", "DOUBLE", "x = r / v: CPU seconds per event at the site"),
        Column(
            "cpu_efficiency",
            "DOUBLE",
            "e: CPU efficiency of the successful attempts (ratio of sums, outliers out)",
        ),
        Column(
            "cpu_efficiency_se",
            "DOUBLE",
            "Standard error of e (ratio linearisation, tasks as clusters; null with < 2 tasks)",
        ),
        Column(
            "io_limit_loss",
            "DOUBLE",
            "lambda: core-hours lost to I/O, memory and remote-read limits / classified "
            "core-hours (gold.workflow_io_profile; null without node data)",
        ),
        Column(
            "efficiency_without_io_limits", "DOUBLE", "min(1, e + lambda) (null without lambda)"
        ),
        Column(
            "waste_factor",
            "DOUBLE",
            "w: core-hours of all attempts / core-hours of useful ones (successful, not retried)",
        ),
        Column(
            "waste_factor_se",
            "DOUBLE",
            "Standard error of w (ratio linearisation, tasks as clusters; null with < 2 tasks)",
        ),
        Column("badput_core_hours", "DOUBLE", "Core-hours of failed attempts (part of the waste)"),
        Column(
            "retry_waste_core_hours",
            "DOUBLE",
            "Core-hours of attempts that were retried (part of the waste)",
        ),
        Column("speed_term", "DOUBLE", "x: core-seconds per event if every core-second computed"),
        Column(
            "efficiency_term",
            "DOUBLE",
            "x / e_noio - x (x / e - x when the I/O term is unknown), core-seconds per event",
        ),
        Column("io_limit_term", "DOUBLE", "x / e - x / e_noio, core-seconds per event"),
        Column("failure_term", "DOUBLE", "x / e x (w - 1): failures and retries, core-s per event"),
        Column(
            "core_seconds_per_event",
            "DOUBLE",
            "x / e x w = the sum of the four terms: expected core-seconds per event",
        ),
        Column("price_per_core_hour", "DOUBLE", "The site's price (gold.cost_prices)"),
        Column("price_version", "INT", "rule_version of the price applied"),
        Column(
            "cost_per_1000_events",
            "DOUBLE",
            "core_seconds_per_event x price / 3.6: with price 1, core-hours per 1,000 events",
        ),
        Column(
            "cost_low",
            "DOUBLE",
            "Lower end of the 95 % interval: cost x exp(-1.96 s), s^2 = the squared relative "
            "errors of v, e and w",
        ),
        Column("cost_high", "DOUBLE", "Upper end of the 95 % interval: cost x exp(1.96 s)"),
        Column(
            "cost_rank",
            "INT",
            "Rank of the site for the job type and week, 1 = cheapest (null without a cost)",
        ),
        Column(
            "input_gb_per_event",
            "DOUBLE",
            "Input read per event by the job type (all sites and weeks; null when unknown)",
        ),
        Column(
            "mean_cores",
            "DOUBLE",
            "Cores a job of the type holds on average (sum(wall x cores) / sum(wall))",
        ),
    ),
    checks=(
        Check("not_null", "week"),
        Check("not_null", "site"),
        Check("not_null", "job_type"),
        Check("between", "core_seconds_per_event", {"min_value": 0}),
    ),
)

GOLD_PLACEMENT_ADVICE = Table(
    database="gold",
    name="placement_advice",
    keys=("week", "job_type", "data_site", "candidate_site"),
    question="Where should a job type run, given where its input data is, and what would it save?",
    example=(
        "SELECT job_type, data_site, candidate_site, candidate_rank, round(combined_cost_per_1000"
        "_events, 3) AS cost, round(gain_core_hours_per_week, 1) AS gain_h, main_reason FROM "
        "gold.placement_advice WHERE week = (SELECT max(week) FROM gold.placement_advice) AND "
        "candidate_rank = 1 ORDER BY gain_h DESC"
    ),
    grain=(
        "one row per week, job_type, data_site (a site that ran the job type) and candidate_site"
        " (a site that ran it too: the best MAX_CANDIDATES = 10 ranks, the data site itself and"
        " candidates without a combined cost, shown as missing)."
    ),
    description=(
        "Candidate sites for the work of a job type whose input is at data_site: the candidate's "
        "compute cost (gold.site_workflow_cost) plus the network term (input GB per event x "
        "cost_seconds_per_gb from gold.network_cost_matrix x the cores held while it streams "
        "in), ranked; the gain over today's placement (the work that ran at data_site, reading "
        "its input there) and the term that explains most of the difference."
    ),
    columns=(
        _WEEK,
        _JOB_TYPE,
        Column("data_site", "STRING", "Site holding the input (where the work ran today)"),
        Column("candidate_site", "STRING", "Site that could run the work"),
        Column(
            "candidate_rank",
            "INT",
            "Rank by combined cost for the job type, data site and week (1 = cheapest; null "
            "without a combined cost)",
        ),
        Column("is_current", "BOOLEAN", "candidate_site = data_site (today's placement)"),
        Column("compute_cost_per_1000_events", "DOUBLE", "The candidate's cost_per_1000_events"),
        Column(
            "transfer_seconds_per_event",
            "DOUBLE",
            "input_gb_per_event x cost_seconds_per_gb(data_site -> candidate); 0 when local, "
            "null when the path or the input size is unknown",
        ),
        Column(
            "network_core_seconds_per_event",
            "DOUBLE",
            "transfer_seconds_per_event x the job type's mean cores (held while reading)",
        ),
        Column(
            "network_cost_per_1000_events",
            "DOUBLE",
            "network_core_seconds_per_event x the candidate's price / 3.6",
        ),
        Column(
            "combined_cost_per_1000_events",
            "DOUBLE",
            "compute + network cost per 1,000 events (null when either is unknown)",
        ),
        Column("combined_cost_low", "DOUBLE", "cost_low of the candidate + the network cost"),
        Column("combined_cost_high", "DOUBLE", "cost_high of the candidate + the network cost"),
        Column(
            "today_cost_per_1000_events",
            "DOUBLE",
            "cost_per_1000_events at data_site (today's placement, input local)",
        ),
        Column("events_per_week", "BIGINT", "Events of the job type at data_site in the week"),
        Column(
            "gain_core_hours_per_week",
            "DOUBLE",
            "events_per_week x (today's - the candidate's core-seconds per event incl. network) "
            "/ 3600 (positive: the candidate is cheaper)",
        ),
        Column(
            "gain_cost_per_week",
            "DOUBLE",
            "events_per_week / 1000 x (today_cost - combined_cost): the gain in priced units",
        ),
        Column(
            "main_reason",
            "STRING",
            "speed | efficiency | io | failures | network | price: the term contributing most "
            "to the difference from today (current for the data site itself)",
        ),
    ),
    checks=(
        Check("not_null", "week"),
        Check("not_null", "job_type"),
        Check("not_null", "data_site"),
        Check("not_null", "candidate_site"),
    ),
)

TABLES: tuple[Table, ...] = (GOLD_COST_PRICES, GOLD_SITE_WORKFLOW_COST, GOLD_PLACEMENT_ADVICE)


# --------------------------------------------------------------------------------------------
# Inputs, reduced to small aggregates
# --------------------------------------------------------------------------------------------


def _sigma(lo: str, hi: str) -> SparkColumn:
    """sd of the log of a quantity from its 95 % interval [lo, hi] (null when unknown)."""
    ok = (F.col(lo) > 0) & (F.col(hi) > 0)
    return F.when(ok, (F.log(F.col(hi)) - F.log(F.col(lo))) / (2 * Z95))


def job_type_factors(factors: DataFrame, job_types: DataFrame | None = None) -> DataFrame:
    """gold.cpu_speed_factors -> (job_type, cpu_model, f, sigma_f): the job type's own factor
    from its main connected group (group_id 1), else the ALL fit's when that has the same
    reference model (factors of different references cannot be mixed). Job types of
    ``job_types`` without a fit of their own take the ALL fit's main group: r and v of a job
    type then come from one set of factors, which is all the cost needs."""
    own = factors.where((F.col("job_type") != ALL) & (F.col("group_id") == 1)).select(
        "job_type",
        "cpu_model",
        F.col("speed_factor").alias("_f"),
        _sigma("ci_low", "ci_high").alias("_s"),
        "reference_model",
    )
    refs = own.select("job_type", "reference_model").distinct()
    if job_types is not None:
        pooled_ref = (
            factors.where((F.col("job_type") == ALL) & (F.col("group_id") == 1))
            .select("reference_model")
            .distinct()
        )
        lacking = job_types.join(refs.select("job_type"), "job_type", "left_anti")
        refs = refs.unionByName(lacking.crossJoin(pooled_ref))
    pooled = factors.where(F.col("job_type") == ALL).select(
        "cpu_model",
        F.col("speed_factor").alias("_fa"),
        _sigma("ci_low", "ci_high").alias("_sa"),
        F.col("reference_model").alias("_ra"),
    )
    fallback = refs.join(pooled, refs["reference_model"] == pooled["_ra"]).select(
        "job_type", "cpu_model", "_fa", "_sa"
    )
    return own.join(fallback, ["job_type", "cpu_model"], "full").select(
        "job_type",
        "cpu_model",
        F.coalesce("_f", "_fa").alias("f"),
        F.when(F.col("_f").isNotNull(), F.col("_s")).otherwise(F.col("_sa")).alias("sigma_f"),
    )


def site_slowdowns(anomalies: DataFrame, job_types: DataFrame) -> DataFrame:
    """gold.site_speed_anomalies -> (job_type, site, slowdown, sigma_d): the site term
    of the job type's fit (the group with most jobs at the site), else of the ALL fit."""
    terms = anomalies.where(F.col("cpu_model") == ALL).select(
        "job_type",
        "site",
        "slowdown",
        _sigma("ci_low", "ci_high").alias("sigma"),
        F.coalesce("n_jobs", F.lit(0)).alias("n"),
    )
    best = terms.groupBy("job_type", "site").agg(
        F.max_by(F.struct("slowdown", "sigma"), "n").alias("t")
    )
    own = best.where(F.col("job_type") != ALL).select(
        "job_type", "site", F.col("t.slowdown").alias("_d"), F.col("t.sigma").alias("_s")
    )
    pooled = best.where(F.col("job_type") == ALL).select(
        "site", F.col("t.slowdown").alias("_da"), F.col("t.sigma").alias("_sa")
    )
    grid = job_types.crossJoin(pooled)
    return grid.join(own, ["job_type", "site"], "full").select(
        "job_type",
        "site",
        F.coalesce("_d", "_da").alias("slowdown"),
        F.when(F.col("_d").isNotNull(), F.col("_s")).otherwise(F.col("_sa")).alias("sigma_d"),
    )


def _useful() -> SparkColumn:
    return (F.col("status") == "success") & ~F.col("_retried")


def _with_retried(jobs: DataFrame) -> DataFrame:
    retried = (
        jobs.where(F.col("retry_of").isNotNull())
        .select(F.col("retry_of").alias("_rid"))
        .distinct()
        .withColumn("_r", F.lit(True))
    )
    return (
        jobs.join(retried, jobs["job_id"] == retried["_rid"], "left")
        .withColumn("_retried", F.coalesce("_r", F.lit(False)))
        .drop("_rid", "_r")
    )


def task_sums(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (week, site, job_type, task): the sums of the estimators.

    ``c``/``g``: CPU and core-seconds of successful non-outlier attempts (efficiency);
    ``t``/``u``: core-seconds of all and of useful attempts (waste); events, badput, retries.
    """
    j = _with_retried(jobs)
    ok = (F.col("status") == "success") & ~F.coalesce(F.col("is_outlier"), F.lit(False))
    cw = F.col("cores_wall_seconds")
    return (
        j.withColumn("_task", F.coalesce("task_id", F.concat(F.lit("job:"), "job_id")))
        .groupBy("week", "site", "job_type", "_task")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.count(F.when(ok, 1)).alias("n_ok"),
            F.coalesce(F.sum(F.when(ok, F.col("cpu_seconds"))), F.lit(0.0)).alias("c"),
            F.coalesce(F.sum(F.when(ok, cw)), F.lit(0.0)).alias("g"),
            F.coalesce(F.sum(cw), F.lit(0.0)).alias("t"),
            F.coalesce(F.sum(F.when(_useful(), cw)), F.lit(0.0)).alias("u"),
            F.sum(F.when(ok & (F.col("events") > 0), F.col("events"))).alias("events"),
            F.coalesce(F.sum(F.when(F.col("status") == "failed", cw)), F.lit(0.0)).alias("bad"),
            F.coalesce(F.sum(F.when(F.col("_retried"), cw)), F.lit(0.0)).alias("retried"),
        )
    )


def _ratio_se(num: str, den: str, ratio: SparkColumn) -> SparkColumn:
    """Standard error of sum(num) / sum(den) with tasks as clusters (needs the sums of squares
    ``{num}{num}``, ``{den}{den}``, ``{num}{den}`` and the task count ``k``)."""
    k = F.col("k")
    ss = (
        F.col(f"{num}{num}")
        - F.lit(2.0) * ratio * F.col(f"{num}{den}")
        + ratio * ratio * F.col(f"{den}{den}")
    )
    return F.when(
        (k >= 2) & (F.col(den) > 0),
        F.sqrt(k / (k - 1) * F.greatest(ss, F.lit(0.0))) / F.col(den),
    )


def site_measures(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (week, site, job_type): efficiency, waste factor, their
    standard errors (tasks as clusters), events, core-hours."""
    s = task_sums(jobs)
    agg = s.groupBy("week", "site", "job_type").agg(
        F.sum("n").alias("n_jobs"),
        F.sum("n_ok").alias("n_successful_jobs"),
        F.count(F.when(F.col("n_ok") > 0, 1)).alias("n_tasks"),
        F.count(F.lit(1)).alias("k"),
        F.sum("c").alias("c"),
        F.sum("g").alias("g"),
        F.sum("t").alias("t"),
        F.sum("u").alias("u"),
        F.sum(F.col("c") * F.col("c")).alias("cc"),
        F.sum(F.col("g") * F.col("g")).alias("gg"),
        F.sum(F.col("c") * F.col("g")).alias("cg"),
        F.sum(F.col("t") * F.col("t")).alias("tt"),
        F.sum(F.col("u") * F.col("u")).alias("uu"),
        F.sum(F.col("t") * F.col("u")).alias("tu"),
        F.sum("events").alias("events"),
        F.sum("bad").alias("bad"),
        F.sum("retried").alias("retried"),
    )
    e = F.when(F.col("g") > 0, F.col("c") / F.col("g"))
    w = F.when(F.col("u") > 0, F.col("t") / F.col("u"))
    return agg.select(
        "week",
        "site",
        "job_type",
        "n_jobs",
        "n_successful_jobs",
        "n_tasks",
        F.col("events").cast("bigint").alias("events"),
        (F.col("t") / 3600.0).alias("core_hours"),
        e.alias("cpu_efficiency"),
        _ratio_se("c", "g", e).alias("cpu_efficiency_se"),
        w.alias("waste_factor"),
        _ratio_se("t", "u", w).alias("waste_factor_se"),
        (F.col("bad") / 3600.0).alias("badput_core_hours"),
        (F.col("retried") / 3600.0).alias("retry_waste_core_hours"),
    )


def site_speeds(jobs: DataFrame, factors: DataFrame, slowdowns: DataFrame) -> DataFrame:
    """silver.jobs + job-type factors + site slowdowns -> (week, site, job_type): cpu_mix_speed,
    speed_coverage, its sigma, site_slowdown and its sigma. The mix is the site's core-hours per
    CPU model in the week over all job types; every job type that ran there gets a row."""
    mix = jobs.groupBy("week", "site", "cpu_model").agg(F.sum("cores_wall_seconds").alias("ch"))
    ran = jobs.select("week", "site", "job_type").distinct()
    m = ran.join(mix, ["week", "site"]).join(factors, ["job_type", "cpu_model"], "left")
    known = F.col("f").isNotNull()
    agg = m.groupBy("week", "site", "job_type").agg(
        F.sum("ch").alias("_all"),
        F.sum(F.when(known, F.col("ch"))).alias("_known"),
        F.sum(F.when(known, F.col("ch") * F.col("f"))).alias("_cf"),
        F.sum(F.when(known, F.col("ch") * F.col("sigma_f"))).alias("_cs"),
        F.count(F.when(known & F.col("sigma_f").isNull(), 1)).alias("_no_sigma"),
    )
    coverage = F.col("_known") / F.col("_all")
    return agg.join(slowdowns, ["job_type", "site"], "left").select(
        "week",
        "site",
        "job_type",
        F.when(coverage >= MIN_SPEED_COVERAGE, F.col("_cf") / F.col("_known")).alias(
            "cpu_mix_speed"
        ),
        F.coalesce(coverage, F.lit(0.0)).alias("speed_coverage"),
        F.when(F.col("_no_sigma") == 0, F.col("_cs") / F.col("_known")).alias("sigma_mix"),
        F.col("slowdown").alias("site_slowdown"),
        "sigma_d",
    )


def job_type_constants(jobs: DataFrame, factors: DataFrame, slowdowns: DataFrame) -> DataFrame:
    """silver.jobs + factors + slowdowns -> one row per job_type over every site and week:
    reference CPU seconds per event, input GB per event and mean cores."""
    ok = (
        (F.col("status") == "success")
        & (F.col("events") > 0)
        & ~F.coalesce(F.col("is_outlier"), F.lit(False))
    )
    cells = (
        jobs.where(ok)
        .groupBy("job_type", "site", "cpu_model")
        .agg(F.sum("cpu_seconds").alias("cpu"), F.sum("events").alias("ev"))
        .join(factors, ["job_type", "cpu_model"])
        .join(slowdowns, ["job_type", "site"])
        .where(F.col("f").isNotNull() & (F.col("slowdown") > 0))
    )
    ref = cells.groupBy("job_type").agg(
        F.try_divide(
            F.sum(F.col("cpu") * F.col("f") / F.col("slowdown")), F.sum("ev").cast("double")
        ).alias("reference_cpu_seconds_per_event")
    )
    has_input = ok & F.col("input_bytes").isNotNull()
    other = jobs.groupBy("job_type").agg(
        F.try_divide(
            F.sum(F.when(has_input, F.col("input_bytes"))).cast("double") / 1e9,
            F.sum(F.when(has_input, F.col("events"))).cast("double"),
        ).alias("input_gb_per_event"),
        F.try_divide(
            F.sum("cores_wall_seconds"), F.when(F.sum("wall_seconds") > 0, F.sum("wall_seconds"))
        ).alias("mean_cores"),
    )
    return other.join(ref, "job_type", "left")


def io_limit_loss(profile: DataFrame) -> DataFrame:
    """gold.workflow_io_profile -> (week, site, job_type, io_limit_loss): lost core-hours of the
    I/O-limit signatures / classified core-hours (null without classified core-hours)."""
    lost = sum((F.col(f"lost_core_hours_{s}") for s in IO_LIMIT_SIGNATURES), F.lit(0.0))
    return profile.select(
        "week",
        "site",
        "job_type",
        F.when(F.col("classified_core_hours") > 0, lost / F.col("classified_core_hours")).alias(
            "io_limit_loss"
        ),
    )


# --------------------------------------------------------------------------------------------
# gold.site_workflow_cost
# --------------------------------------------------------------------------------------------


def site_workflow_cost(
    jobs: DataFrame,
    factors: DataFrame,
    anomalies: DataFrame,
    io_profile: DataFrame | None,
    prices: DataFrame,
) -> DataFrame:
    """silver.jobs, gold.cpu_speed_factors, gold.site_speed_anomalies, gold.workflow_io_profile
    (None: no node data) and gold.cost_prices -> gold.site_workflow_cost."""
    job_types = jobs.select("job_type").distinct()
    f = job_type_factors(factors, job_types)
    d = site_slowdowns(anomalies, job_types)
    consts = job_type_constants(jobs, f, d)
    out = (
        site_measures(jobs)
        .join(site_speeds(jobs, f, d), ["week", "site", "job_type"], "left")
        .join(F.broadcast(consts), "job_type", "left")
        .join(resolve_prices(prices, jobs), "site", "left")
    )
    if io_profile is not None:
        out = out.join(io_limit_loss(io_profile), ["week", "site", "job_type"], "left")
    else:
        out = out.withColumn("io_limit_loss", F.lit(None).cast("double"))

    v = F.col("cpu_mix_speed") / F.col("site_slowdown")
    out = out.withColumn("effective_speed", F.when(F.col("site_slowdown") > 0, v))
    out = out.withColumn(
        "cpu_seconds_per_event",
        F.try_divide(F.col("reference_cpu_seconds_per_event"), F.col("effective_speed")),
    )
    e = F.when(F.col("cpu_efficiency") > 0, F.col("cpu_efficiency"))
    lam = F.col("io_limit_loss")
    out = out.withColumn(
        "efficiency_without_io_limits",
        F.when(lam.isNotNull(), F.least(F.lit(1.0), e + F.greatest(lam, F.lit(0.0)))),
    )
    x = F.col("cpu_seconds_per_event")
    at_e = x / e
    at_noio = x / F.col("efficiency_without_io_limits")
    out = (
        out.withColumn("speed_term", x)
        .withColumn("efficiency_term", F.coalesce(at_noio, at_e) - x)
        .withColumn("io_limit_term", at_e - at_noio)
        .withColumn("failure_term", at_e * (F.col("waste_factor") - 1))
        .withColumn("core_seconds_per_event", at_e * F.col("waste_factor"))
        .withColumn(
            "cost_per_1000_events",
            F.col("core_seconds_per_event") * F.col("price_per_core_hour") / 3.6,
        )
    )
    s_v = F.sqrt(F.col("sigma_mix") ** 2 + F.col("sigma_d") ** 2)
    s = F.sqrt(
        s_v**2
        + (F.col("cpu_efficiency_se") / e) ** 2
        + (F.col("waste_factor_se") / F.col("waste_factor")) ** 2
    )
    cost = F.col("cost_per_1000_events")
    rank = F.rank().over(
        Window.partitionBy("week", "job_type").orderBy(
            F.col("cost_per_1000_events").asc_nulls_last()
        )
    )
    out = (
        out.withColumn("cost_low", cost * F.exp(-Z95 * s))
        .withColumn("cost_high", cost * F.exp(Z95 * s))
        .withColumn("cost_rank", F.when(cost.isNotNull(), rank))
    )
    return GOLD_SITE_WORKFLOW_COST.conform(out)


# --------------------------------------------------------------------------------------------
# gold.placement_advice
# --------------------------------------------------------------------------------------------


def placement_advice(
    costs: DataFrame, network: DataFrame, max_candidates: int = MAX_CANDIDATES
) -> DataFrame:
    """gold.site_workflow_cost + gold.network_cost_matrix -> gold.placement_advice."""
    terms = ("speed_term", "efficiency_term", "io_limit_term", "failure_term")
    today = costs.select(
        "week",
        "job_type",
        F.col("site").alias("data_site"),
        F.col("cost_per_1000_events").alias("today_cost_per_1000_events"),
        F.col("core_seconds_per_event").alias("_today_cs"),
        F.col("price_per_core_hour").alias("_today_price"),
        F.col("events").alias("events_per_week"),
        *[F.col(t).alias(f"_today_{t}") for t in terms],
    )
    cand = costs.select(
        "week",
        "job_type",
        F.col("site").alias("candidate_site"),
        F.col("cost_per_1000_events").alias("compute_cost_per_1000_events"),
        F.col("core_seconds_per_event").alias("_cand_cs"),
        F.col("price_per_core_hour").alias("_cand_price"),
        "cost_low",
        "cost_high",
        "input_gb_per_event",
        "mean_cores",
        *[F.col(t).alias(f"_cand_{t}") for t in terms],
    )
    paths = network.select(
        "week",
        F.col("src_site").alias("data_site"),
        F.col("dst_site").alias("candidate_site"),
        "cost_seconds_per_gb",
    )
    local = F.col("candidate_site") == F.col("data_site")
    m = (
        today.join(cand, ["week", "job_type"])
        .join(paths, ["week", "data_site", "candidate_site"], "left")
        .withColumn("is_current", local)
        .withColumn(
            "transfer_seconds_per_event",
            F.when(local, F.lit(0.0)).otherwise(
                F.col("input_gb_per_event") * F.col("cost_seconds_per_gb")
            ),
        )
        .withColumn(
            "network_core_seconds_per_event",
            F.col("transfer_seconds_per_event")
            * F.when(local, F.lit(1.0)).otherwise(F.col("mean_cores")),
        )
        .withColumn(
            "network_cost_per_1000_events",
            F.col("network_core_seconds_per_event") * F.col("_cand_price") / 3.6,
        )
    )
    net = F.col("network_cost_per_1000_events")
    m = (
        m.withColumn("combined_cost_per_1000_events", F.col("compute_cost_per_1000_events") + net)
        .withColumn("combined_cost_low", F.col("cost_low") + net)
        .withColumn("combined_cost_high", F.col("cost_high") + net)
    )
    cand_cs = F.col("_cand_cs") + F.col("network_core_seconds_per_event")
    m = m.withColumn(
        "gain_core_hours_per_week",
        F.col("events_per_week") * (F.col("_today_cs") - cand_cs) / 3600.0,
    ).withColumn(
        "gain_cost_per_week",
        F.col("events_per_week")
        / 1000.0
        * (F.col("today_cost_per_1000_events") - F.col("combined_cost_per_1000_events")),
    )
    # Reason: each core-second difference priced at today's price, the price difference on the
    # candidate's core-seconds; the largest contribution in the direction of the gain. When one
    # side lacks the I/O term, both sides' I/O share counts as efficiency.
    p0 = F.col("_today_price")
    both_io = F.col("_today_io_limit_term").isNotNull() & F.col("_cand_io_limit_term").isNotNull()

    def eff(side: str) -> SparkColumn:
        io = F.coalesce(F.col(f"_{side}_io_limit_term"), F.lit(0.0))
        return F.col(f"_{side}_efficiency_term") + F.when(both_io, F.lit(0.0)).otherwise(io)

    contrib = {
        "speed": (F.col("_today_speed_term") - F.col("_cand_speed_term")) * p0,
        "efficiency": (eff("today") - eff("cand")) * p0,
        "io": F.when(both_io, (F.col("_today_io_limit_term") - F.col("_cand_io_limit_term")) * p0),
        "failures": (F.col("_today_failure_term") - F.col("_cand_failure_term")) * p0,
        "network": -F.col("network_core_seconds_per_event") * p0,
        "price": cand_cs * (p0 - F.col("_cand_price")),
    }
    sign = F.when(F.col("gain_cost_per_week") < 0, F.lit(-1.0)).otherwise(F.lit(1.0))
    scored = F.array(
        *[
            F.struct(F.coalesce(c * sign, F.lit(float("-inf"))).alias("v"), F.lit(k).alias("k"))
            for k, c in contrib.items()
        ]
    )
    best = F.array_max(scored)
    m = m.withColumn(
        "main_reason",
        F.when(F.col("is_current"), F.lit("current")).when(
            F.col("gain_cost_per_week").isNotNull(), best["k"]
        ),
    )
    rank = F.rank().over(
        Window.partitionBy("week", "job_type", "data_site").orderBy(
            F.col("combined_cost_per_1000_events").asc_nulls_last()
        )
    )
    m = m.withColumn(
        "candidate_rank", F.when(F.col("combined_cost_per_1000_events").isNotNull(), rank)
    )
    # a candidate without a combined cost (path not measured) is kept: missing, not dropped
    rank = F.col("candidate_rank")
    keep = F.col("is_current") | rank.isNull() | (rank <= max_candidates)
    return GOLD_PLACEMENT_ADVICE.conform(m.where(keep))


# --------------------------------------------------------------------------------------------
# Everything
# --------------------------------------------------------------------------------------------


def compute(
    jobs: DataFrame,
    factors: DataFrame,
    anomalies: DataFrame,
    io_profile: DataFrame | None,
    network: DataFrame,
    prices: DataFrame | None = None,
) -> dict[str, DataFrame]:
    """silver.jobs and the gold inputs (speed factors, site anomalies, workflow I/O profile,
    network cost matrix, prices; DEFAULT_PRICES when None) -> the three tables by full name."""
    if prices is None:
        prices = prices_frame(jobs.sparkSession)
    costs = site_workflow_cost(jobs, factors, anomalies, io_profile, prices).localCheckpoint()
    return {
        GOLD_COST_PRICES.full_name: GOLD_COST_PRICES.conform(prices),
        GOLD_SITE_WORKFLOW_COST.full_name: costs,
        GOLD_PLACEMENT_ADVICE.full_name: placement_advice(costs, network),
    }


_READS = (
    SILVER_JOBS,
    GOLD_CPU_SPEED_FACTORS,
    GOLD_SITE_SPEED_ANOMALIES,
    GOLD_WORKFLOW_IO_PROFILE,
    GOLD_NETWORK_COST_MATRIX,
)


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    prices = inputs.rules(GOLD_COST_PRICES, prices_frame, "site")
    return compute(*(inputs.read(t) for t in _READS), prices)


# Reads the speed factors, site anomalies, I/O profiles and the network cost matrix: runs after
# the groups that write them.
GROUP = GoldGroup(
    "cost",
    TABLES,
    reads=_READS,
    build=_build,
    after=("speed_factors", "io_signatures", "network"),
    rules=GOLD_COST_PRICES,
)
