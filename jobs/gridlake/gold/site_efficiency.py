"""gold.site_efficiency_weekly and gold.site_jobtype_efficiency_weekly: CPU efficiency, events,
badput and retry waste per week and site (ratios of sums, never means of ratios); and
gold.site_failure_modes_weekly: the failed attempts behind the badput, by failure mode. The
group also writes gold.failure_cause_rules and gold.failure_causes_weekly
(``gridlake.gold.failure_causes``): the same attempts by classified cause.

The two efficiency tables share one aggregation (``efficiency_measures``) and one set of measure
columns (``MEASURE_COLUMNS``); they differ only in their grain.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.failure_causes import (
    GOLD_FAILURE_CAUSE_RULES,
    GOLD_FAILURE_CAUSES_WEEKLY,
    causes_from_cells,
    rules_frame,
    with_cause,
)
from gridlake.gold.group import GoldGroup, Inputs
from gridlake.silver.tables import SILVER_JOBS
from gridlake.tabledef import Check, Column, Table

__all__ = [
    "CELL_KEYS",
    "GOLD_FAILURE_CAUSES_WEEKLY",
    "GOLD_FAILURE_CAUSE_RULES",
    "GOLD_SITE_EFFICIENCY_WEEKLY",
    "GOLD_SITE_FAILURE_MODES_WEEKLY",
    "GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY",
    "MEASURE_COLUMNS",
    "TABLES",
    "attempt_cells",
    "compute",
    "efficiency_measures",
    "failure_modes_from_cells",
    "measures_from_cells",
    "site_efficiency_weekly",
    "site_failure_modes_weekly",
    "site_jobtype_efficiency_weekly",
    "with_retried_flag",
]

# The measures of both tables, in order. New measures go at the end: existing Delta tables gain
# them by ALTER TABLE ADD COLUMNS, which appends.
MEASURE_COLUMNS: tuple[Column, ...] = (
    Column("jobs", "BIGINT", "Job attempts that ended in the week"),
    Column("failed_jobs", "BIGINT", "Attempts with status failed"),
    Column("outlier_jobs", "BIGINT", "Attempts flagged is_outlier (CPU > wall x cores x 1.05)"),
    Column("core_hours", "DOUBLE", "sum(wall_seconds x cores) / 3600"),
    Column("cpu_hours", "DOUBLE", "sum(cpu_user_seconds + cpu_system_seconds) / 3600"),
    Column("cpu_efficiency", "DOUBLE", "cpu_hours / core_hours (ratio of sums)"),
    Column(
        "good_cpu_over_all_wall",
        "DOUBLE",
        "CPU hours of successful attempts / core-hours of all attempts (ATLAS definition)",
    ),
    Column("wasted_core_hours", "DOUBLE", "Core-hours of failed attempts"),
    Column(
        "hs23_core_hours",
        "DOUBLE",
        "sum(hs23_per_core x wall_seconds x cores) / 3600 over attempts with a known HS23 "
        "(null when none has one)",
    ),
    Column(
        "events",
        "BIGINT",
        "Events of successful attempts (null when no successful attempt reports events)",
    ),
    Column(
        "core_seconds_per_event",
        "DOUBLE",
        "Core-seconds (wall x cores) of successful attempts with events > 0 / their events "
        "(ratio of sums)",
    ),
    Column(
        "badput_core_hours",
        "DOUBLE",
        "Core-hours of failed attempts (badput; equals wasted_core_hours, kept under the name "
        "used in job-efficiency reports)",
    ),
    Column(
        "retry_waste_core_hours",
        "DOUBLE",
        "Core-hours of attempts that were retried (their job_id is another attempt's retry_of), "
        "whatever their status",
    ),
)


def _table(
    name: str, keys: tuple[Column, ...], grain: str, description: str, question: str, example: str
) -> Table:
    return Table(
        database="gold",
        name=name,
        question=question,
        example=example,
        grain=grain,
        description=description,
        columns=(*keys, *MEASURE_COLUMNS),
        keys=tuple(k.name for k in keys),
        checks=(
            *(Check("not_null", k.name) for k in keys if k.name in ("week", "site")),
            Check("between", "jobs", {"min_value": 1}),
        ),
    )


_WEEK = Column("week", "DATE", "Monday of the ISO week of the jobs' end_time (UTC)")
_SITE = Column("site", "STRING", "Grid site")
_VO = Column("vo", "STRING", "Virtual organisation")
_JOB_TYPE = Column("job_type", "STRING", "Job type (evgen, simul, pile, reprocessing, ...)")

GOLD_SITE_EFFICIENCY_WEEKLY = _table(
    "site_efficiency_weekly",
    (_WEEK, _SITE, _VO),
    "one row per week, site and vo.",
    "CPU efficiency, events, badput and retry waste per site, VO and ISO week (ratios of sums "
    "over every job in silver, outliers included).",
    "Which sites waste CPU this week, and how much of it is failed or retried work?",
    (
        "SELECT site, round(sum(cpu_hours) / sum(core_hours), 3) AS eff, "
        "round(sum(badput_core_hours)) AS badput_h FROM gold.site_efficiency_weekly GROUP BY site"
        " ORDER BY eff"
    ),
)

GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY = _table(
    "site_jobtype_efficiency_weekly",
    (_WEEK, _SITE, _VO, _JOB_TYPE),
    "one row per week, site, vo and job_type.",
    "The measures of gold.site_efficiency_weekly split by job type (ratios of sums over every "
    "job in silver, outliers included).",
    "Is a site's low efficiency one job type's, or all of them?",
    (
        "SELECT site, job_type, round(cpu_efficiency, 3) AS eff, jobs FROM "
        "gold.site_jobtype_efficiency_weekly WHERE week = (SELECT max(week) FROM "
        "gold.site_jobtype_efficiency_weekly) ORDER BY eff LIMIT 10"
    ),
)

GOLD_SITE_FAILURE_MODES_WEEKLY = Table(
    database="gold",
    name="site_failure_modes_weekly",
    keys=("week", "site", "job_type", "failure_mode"),
    question="How do a site's jobs fail, and which failure mode wastes the most core-hours?",
    grain="one row per week, site, job_type and failure_mode with at least one failed attempt.",
    description=(
        "Failed attempts and the core-hours they wasted per site, job type and failure mode per "
        "ISO week (every attempt in silver, outliers included), beside the attempts of the same "
        "site, job type and week."
    ),
    columns=(
        _WEEK,
        _SITE,
        _JOB_TYPE,
        Column(
            "failure_mode",
            "STRING",
            "Failure class (stage-in, lost-heartbeat, memory, app-crash, ...); 'unknown' when a "
            "failed attempt names none",
        ),
        Column("failed_jobs", "BIGINT", "Failed attempts with this failure mode"),
        Column("wasted_core_hours", "DOUBLE", "Core-hours (wall x cores) of those attempts"),
        Column("retried_jobs", "BIGINT", "Of those, attempts retried (another attempt's retry_of)"),
        Column("attempts", "BIGINT", "Every attempt of the site, job type and week"),
        Column("failure_rate", "DOUBLE", "failed_jobs / attempts"),
    ),
    checks=(
        Check("not_null", "week"),
        Check("not_null", "site"),
        Check("between", "failed_jobs", {"min_value": 1}),
    ),
    example=(
        "SELECT site, failure_mode, sum(failed_jobs) AS failed, round(sum(wasted_core_hours)) "
        "AS wasted_h FROM gold.site_failure_modes_weekly WHERE week = (SELECT max(week) FROM "
        "gold.site_failure_modes_weekly) GROUP BY site, failure_mode ORDER BY wasted_h DESC "
        "LIMIT 10"
    ),
)

TABLES: tuple[Table, ...] = (
    GOLD_SITE_EFFICIENCY_WEEKLY,
    GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY,
    GOLD_SITE_FAILURE_MODES_WEEKLY,
    GOLD_FAILURE_CAUSE_RULES,
    GOLD_FAILURE_CAUSES_WEEKLY,
)


def with_retried_flag(jobs: DataFrame, retries: DataFrame | None = None) -> DataFrame:
    """Add ``was_retried``: true when the attempt's job_id is the retry_of of another row of
    ``retries`` (default ``jobs`` itself; all of silver.jobs when ``jobs`` is some weeks of it:
    a retry can come weeks later)."""
    retried = (
        (jobs if retries is None else retries)
        .where(F.col("retry_of").isNotNull())
        .select(F.col("retry_of").alias("_retried_id"))
        .distinct()
        .withColumn("_retried", F.lit(True))
    )
    return (
        jobs.join(retried, jobs["job_id"] == retried["_retried_id"], "left")
        .withColumn("was_retried", F.coalesce(F.col("_retried"), F.lit(False)))
        .drop("_retried_id", "_retried")
    )


def _sum_hours_when(cond: SparkColumn, value: str = "cores_wall_seconds") -> SparkColumn:
    return F.coalesce(F.sum(F.when(cond, F.col(value))), F.lit(0.0)) / 3600.0


# The grain of the attempts' cells of the group's compute: each of its four weekly tables is a
# roll-up of them (``cause``: the failure cause by the rules, :func:`with_cause`).
CELL_KEYS = ("week", "site", "vo", "job_type", "failure_mode", "status", "cause")


def attempt_cells(
    jobs: DataFrame, keys: Sequence[str], retries: DataFrame | None = None
) -> DataFrame:
    """silver.jobs -> one row per ``keys`` and status (a few thousand a week at
    ``CELL_KEYS``) with the sums and counts that the tables roll up (sums of sums: exact for
    counts, to rounding for floats). The jobs are read, and flagged as retried
    (:func:`with_retried_flag`, a shuffle of every attempt), once for every table rolled up
    from the cells rather than once each. A sum over no non-null value stays null, as it is
    over the attempts.
    """
    with_events = F.col("events") > 0
    retried = F.col("was_retried")
    return (
        with_retried_flag(jobs, retries)
        .groupBy(*keys, *(() if "status" in keys else ("status",)))
        .agg(
            F.count(F.lit(1)).alias("_n"),
            F.count(F.when(F.col("is_outlier"), 1)).alias("_outliers"),
            F.sum("cores_wall_seconds").alias("_cws"),
            F.sum("cpu_seconds").alias("_cpu"),
            F.sum("hs23_core_hours").alias("_hs23"),
            F.sum("events").alias("_events"),
            F.sum(F.when(with_events, F.col("cores_wall_seconds"))).alias("_event_cws"),
            F.sum(F.when(with_events, F.col("events"))).alias("_event_events"),
            F.count(F.when(retried, 1)).alias("_retried"),
            F.sum(F.when(retried, F.col("cores_wall_seconds"))).alias("_retried_cws"),
        )
    )


def measures_from_cells(cells: DataFrame, keys: Sequence[str]) -> DataFrame:
    """:func:`attempt_cells` -> one row per ``keys`` with the columns of ``MEASURE_COLUMNS``."""
    failed = F.col("status") == "failed"
    success = F.col("status") == "success"
    agg = cells.groupBy(*keys).agg(
        F.sum("_n").alias("jobs"),
        F.coalesce(F.sum(F.when(failed, F.col("_n"))), F.lit(0)).alias("failed_jobs"),
        F.sum("_outliers").alias("outlier_jobs"),
        (F.sum("_cws") / 3600.0).alias("core_hours"),
        (F.sum("_cpu") / 3600.0).alias("cpu_hours"),
        _sum_hours_when(success, "_cpu").alias("_good_cpu_hours"),
        _sum_hours_when(failed, "_cws").alias("wasted_core_hours"),
        F.sum("_hs23").alias("hs23_core_hours"),
        F.sum(F.when(success, F.col("_events"))).alias("events"),
        F.sum(F.when(success, F.col("_event_cws"))).alias("_event_core_seconds"),
        F.sum(F.when(success, F.col("_event_events"))).alias("_event_events"),
        (F.coalesce(F.sum("_retried_cws"), F.lit(0.0)) / 3600.0).alias("retry_waste_core_hours"),
    )
    core_hours = F.when(F.col("core_hours") > 0, F.col("core_hours"))
    return agg.select(
        *keys,
        "jobs",
        "failed_jobs",
        "outlier_jobs",
        "core_hours",
        "cpu_hours",
        F.try_divide(F.col("cpu_hours"), core_hours).alias("cpu_efficiency"),
        F.try_divide(F.col("_good_cpu_hours"), core_hours).alias("good_cpu_over_all_wall"),
        "wasted_core_hours",
        "hs23_core_hours",
        F.col("events").cast("bigint").alias("events"),
        F.try_divide(F.col("_event_core_seconds"), F.col("_event_events")).alias(
            "core_seconds_per_event"
        ),
        F.col("wasted_core_hours").alias("badput_core_hours"),
        "retry_waste_core_hours",
    )


def efficiency_measures(
    jobs: DataFrame, keys: Sequence[str], retries: DataFrame | None = None
) -> DataFrame:
    """silver.jobs -> one row per ``keys`` with the columns of ``MEASURE_COLUMNS``.

    Every attempt counts, outliers included. Needs job_id and retry_of (retry waste), status,
    is_outlier, cores_wall_seconds, cpu_seconds, hs23_core_hours and events. ``retries``: see
    :func:`with_retried_flag`.
    """
    return measures_from_cells(attempt_cells(jobs, keys, retries), keys)


def site_efficiency_weekly(jobs: DataFrame, retries: DataFrame | None = None) -> DataFrame:
    """silver.jobs -> one row per (week, site, vo). Every job counts, outliers included."""
    return efficiency_measures(jobs, ("week", "site", "vo"), retries)


def site_jobtype_efficiency_weekly(jobs: DataFrame, retries: DataFrame | None = None) -> DataFrame:
    """silver.jobs -> one row per (week, site, vo, job_type). Every job counts."""
    return efficiency_measures(jobs, ("week", "site", "vo", "job_type"), retries)


def failure_modes_from_cells(cells: DataFrame) -> DataFrame:
    """:func:`attempt_cells` -> one row per (week, site, job_type, failure_mode) with failed
    attempts (a failed attempt naming no mode: 'unknown')."""
    keys = ("week", "site", "job_type")
    attempts = cells.groupBy(*keys).agg(F.sum("_n").alias("attempts"))
    failed = (
        cells.where(F.col("status") == "failed")
        .withColumn("failure_mode", F.coalesce(F.col("failure_mode"), F.lit("unknown")))
        .groupBy(*keys, "failure_mode")
        .agg(
            F.sum("_n").alias("failed_jobs"),
            (F.sum("_cws") / 3600.0).alias("wasted_core_hours"),
            F.sum("_retried").alias("retried_jobs"),
        )
    )
    return failed.join(attempts, list(keys)).withColumn(
        "failure_rate", F.col("failed_jobs") / F.col("attempts")
    )


def site_failure_modes_weekly(jobs: DataFrame, retries: DataFrame | None = None) -> DataFrame:
    """silver.jobs -> one row per (week, site, job_type, failure_mode) with failed attempts."""
    keys = ("week", "site", "job_type", "failure_mode")
    return failure_modes_from_cells(attempt_cells(jobs, keys, retries))


def compute(
    jobs: DataFrame, retries: DataFrame | None = None, rules: DataFrame | None = None
) -> dict[str, DataFrame]:
    """silver.jobs -> the tables of this group by full name, conformed to their definitions.
    ``retries``: all of silver.jobs when ``jobs`` is some weeks of it (:func:`with_retried_flag`);
    ``rules``: the failure-cause rules (the shipped ones when None).
    """
    if rules is None:
        rules = rules_frame(jobs.sparkSession)
    # the attempts' cells, computed once (materialised: small) for the four tables they give
    cells = attempt_cells(with_cause(jobs, rules), CELL_KEYS, retries).localCheckpoint(eager=True)
    return {
        GOLD_FAILURE_CAUSE_RULES.full_name: GOLD_FAILURE_CAUSE_RULES.conform(rules),
        GOLD_FAILURE_CAUSES_WEEKLY.full_name: GOLD_FAILURE_CAUSES_WEEKLY.conform(
            causes_from_cells(cells)
        ),
        GOLD_SITE_FAILURE_MODES_WEEKLY.full_name: GOLD_SITE_FAILURE_MODES_WEEKLY.conform(
            failure_modes_from_cells(cells)
        ),
        GOLD_SITE_EFFICIENCY_WEEKLY.full_name: GOLD_SITE_EFFICIENCY_WEEKLY.conform(
            measures_from_cells(cells, ("week", "site", "vo"))
        ),
        GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY.full_name: GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY.conform(
            measures_from_cells(cells, ("week", "site", "vo", "job_type"))
        ),
    }


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    rules = inputs.rules(GOLD_FAILURE_CAUSE_RULES, rules_frame)
    return compute(inputs.read(SILVER_JOBS), rules=rules)


# How far before its original's week a retry's week may lie and still be seen as its retry by
# an incremental analyze: a retry is submitted after its original failed, so it ends later and
# its week is the same or a later one; one week of slack for clocks that disagree at a week's
# edge.
RETRY_LOOKBACK = timedelta(weeks=1)


def _build_weeks(inputs: Inputs, weeks: Sequence[date]) -> dict[str, DataFrame]:
    """The rows of ``weeks`` only: their jobs, the retry flags from the retries of those weeks
    and every later one (``RETRY_LOOKBACK``: a retry ends after its original), read from those
    week partitions only, not from all of history; the rule table is written whole."""
    jobs = inputs.read(SILVER_JOBS)
    rules = inputs.rules(GOLD_FAILURE_CAUSE_RULES, rules_frame)
    retries = jobs.where(F.col("week") >= F.lit(min(weeks) - RETRY_LOOKBACK))
    return compute(jobs.where(F.col("week").isin(list(weeks))), retries=retries, rules=rules)


GROUP = GoldGroup(
    "site_efficiency",
    TABLES,
    reads=(SILVER_JOBS,),
    build=_build,
    build_weeks=_build_weeks,
    rules=GOLD_FAILURE_CAUSE_RULES,
    retries=True,
    weight=287,
)
