"""gold.site_efficiency_monthly: APEL monthly summaries side by side with the per-job path.

Sites that publish only APEL summaries (OSG via GRACC, most of EGI) still get a monthly CPU
efficiency; sites that publish both get a coverage check (how much of the summarised core-hours
the per-job records account for). Robot (service) certificates, whose DN carries ``CN=Robot:``
(e.g. ATLAS Data Management transfers holding a batch slot for wall-clock with almost no CPU),
are reported apart, since they drag a site's efficiency down without any payload being slow.
"""

from __future__ import annotations

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.silver.tables import SILVER_ACCOUNTING_SUMMARIES, SILVER_JOBS
from gridlake.tabledef import Check, Column, Table

__all__ = ["GOLD_SITE_EFFICIENCY_MONTHLY", "ROBOT_DN_MARK", "TABLES", "compute", "is_robot"]

ROBOT_DN_MARK = "CN=Robot:"

GOLD_SITE_EFFICIENCY_MONTHLY = Table(
    database="gold",
    name="site_efficiency_monthly",
    keys=("month", "site", "vo"),
    question=(
        "What is a site's monthly efficiency from APEL summaries, how much is robot (transfer) "
        "work, and does the per-job path account for it all?"
    ),
    example=(
        "SELECT month, site, vo, round(summary_cpu_efficiency, 3) AS eff, "
        "round(summary_cpu_efficiency_without_robots, 3) AS eff_no_robots, round(job_coverage, 2)"
        " AS coverage FROM gold.site_efficiency_monthly ORDER BY month DESC, eff LIMIT 20"
    ),
    grain="one row per month, site and vo (from either source or both).",
    description=(
        "Monthly CPU efficiency per site and VO from the APEL summaries (silver."
        "accounting_summaries) beside the same month from the per-job path (silver.jobs); "
        "ratios of sums. Robot-certificate work is also shown apart."
    ),
    columns=(
        Column("month", "DATE", "First day of the month (summary Month/Year; job end_time UTC)"),
        Column("site", "STRING", "Grid site"),
        Column("vo", "STRING", "Virtual organisation (null when the summary names none)"),
        Column("summary_records", "BIGINT", "APEL summary records in the group"),
        Column("summary_jobs", "BIGINT", "sum(NumberOfJobs) of the summaries"),
        Column(
            "summary_core_hours",
            "DOUBLE",
            "sum(WallDuration x Processors) / 3600 of the summaries (Processors 1 when unknown)",
        ),
        Column("summary_cpu_hours", "DOUBLE", "sum(CpuDuration) / 3600 of the summaries"),
        Column(
            "summary_cpu_efficiency",
            "DOUBLE",
            "summary_cpu_hours / summary_core_hours (ratio of sums)",
        ),
        Column(
            "summary_normalised_wall_hours",
            "DOUBLE",
            "sum(NormalisedWallDuration) / 3600 as APEL reports it (HS06-hours)",
        ),
        Column(
            "robot_core_hours",
            "DOUBLE",
            "summary_core_hours of records whose GlobalUserName contains 'CN=Robot:' (0 if none)",
        ),
        Column("robot_cpu_hours", "DOUBLE", "summary_cpu_hours of those robot records"),
        Column(
            "summary_cpu_efficiency_without_robots",
            "DOUBLE",
            "CPU efficiency of the summaries leaving the robot records out",
        ),
        Column("jobs", "BIGINT", "Per-job path: attempts in silver.jobs that ended in the month"),
        Column("core_hours", "DOUBLE", "Per-job path: sum(wall_seconds x cores) / 3600"),
        Column("cpu_hours", "DOUBLE", "Per-job path: sum(cpu_seconds) / 3600"),
        Column("cpu_efficiency", "DOUBLE", "Per-job path: cpu_hours / core_hours"),
        Column(
            "job_coverage",
            "DOUBLE",
            "core_hours / summary_core_hours: the share of the summarised work the per-job "
            "records account for (null when either side is missing)",
        ),
    ),
    checks=(
        Check("not_null", "month"),
        Check("not_null", "site"),
        Check("between", "summary_cpu_efficiency", {"min_value": 0}),
    ),
)

TABLES: tuple[Table, ...] = (GOLD_SITE_EFFICIENCY_MONTHLY,)


def is_robot(global_user_name: SparkColumn) -> SparkColumn:
    """True when the DN is a robot certificate's (the grid convention ``CN=Robot: <service>``)."""
    return F.coalesce(global_user_name.contains(ROBOT_DN_MARK), F.lit(False))


def _ratio(num: SparkColumn, den: SparkColumn) -> SparkColumn:
    return F.try_divide(num, F.when(den > 0, den))


def summary_measures(summaries: DataFrame) -> DataFrame:
    """silver.accounting_summaries -> one row per (month, site, vo) with the summary_* columns."""
    robot = is_robot(F.col("global_user_name"))
    core, cpu = F.col("core_wall_seconds"), F.col("cpu_duration_seconds").cast("double")
    month = F.make_date(F.col("year"), F.col("month"), F.lit(1))
    agg = (
        summaries.withColumn("month", month)
        .groupBy("month", "site", "vo")
        .agg(
            F.count(F.lit(1)).alias("summary_records"),
            F.sum("number_of_jobs").cast("bigint").alias("summary_jobs"),
            F.sum(core).alias("_core"),
            F.sum(cpu).alias("_cpu"),
            F.sum(F.col("normalised_wall_duration").cast("double")).alias("_norm"),
            F.sum(F.when(robot, core).otherwise(0.0)).alias("_rcore"),
            F.sum(F.when(robot, cpu).otherwise(0.0)).alias("_rcpu"),
        )
    )
    return agg.select(
        "month",
        "site",
        "vo",
        "summary_records",
        "summary_jobs",
        (F.col("_core") / 3600.0).alias("summary_core_hours"),
        (F.col("_cpu") / 3600.0).alias("summary_cpu_hours"),
        _ratio(F.col("_cpu"), F.col("_core")).alias("summary_cpu_efficiency"),
        (F.col("_norm") / 3600.0).alias("summary_normalised_wall_hours"),
        (F.col("_rcore") / 3600.0).alias("robot_core_hours"),
        (F.col("_rcpu") / 3600.0).alias("robot_cpu_hours"),
        _ratio(F.col("_cpu") - F.col("_rcpu"), F.col("_core") - F.col("_rcore")).alias(
            "summary_cpu_efficiency_without_robots"
        ),
    )


def job_measures(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (month, site, vo) with the per-job columns."""
    month = F.trunc(F.to_date(F.col("end_time")), "month")
    agg = (
        jobs.withColumn("month", month)
        .groupBy("month", "site", "vo")
        .agg(
            F.count(F.lit(1)).alias("jobs"),
            F.sum("cores_wall_seconds").alias("_core"),
            F.sum("cpu_seconds").alias("_cpu"),
        )
    )
    return agg.select(
        "month",
        "site",
        "vo",
        "jobs",
        (F.col("_core") / 3600.0).alias("core_hours"),
        (F.col("_cpu") / 3600.0).alias("cpu_hours"),
        _ratio(F.col("_cpu"), F.col("_core")).alias("cpu_efficiency"),
    )


def compute(summaries: DataFrame, jobs: DataFrame) -> dict[str, DataFrame]:
    """silver.accounting_summaries + silver.jobs -> {gold.site_efficiency_monthly: frame}.

    A full outer join on (month, site, vo), null-safe on vo: a month a site reported by one path
    only still has its row.
    """
    s = summary_measures(summaries).alias("s")
    j = job_measures(jobs).alias("j")
    cond = (
        (F.col("s.month") == F.col("j.month"))
        & (F.col("s.site") == F.col("j.site"))
        & F.col("s.vo").eqNullSafe(F.col("j.vo"))
    )
    joined = s.join(j, cond, "full_outer")
    keys = [F.coalesce(F.col(f"s.{k}"), F.col(f"j.{k}")).alias(k) for k in ("month", "site", "vo")]
    out = joined.select(
        *keys,
        *(F.col(f"s.{c.name}") for c in GOLD_SITE_EFFICIENCY_MONTHLY.columns[3:12]),
        F.col("j.jobs"),
        F.col("j.core_hours"),
        F.col("j.cpu_hours"),
        F.col("j.cpu_efficiency"),
        _ratio(F.col("j.core_hours"), F.col("s.summary_core_hours")).alias("job_coverage"),
    )
    return {GOLD_SITE_EFFICIENCY_MONTHLY.full_name: GOLD_SITE_EFFICIENCY_MONTHLY.conform(out)}


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    return compute(inputs.read(SILVER_ACCOUNTING_SUMMARIES), inputs.read(SILVER_JOBS))


GROUP = GoldGroup(
    "site_efficiency_monthly",
    TABLES,
    reads=(SILVER_ACCOUNTING_SUMMARIES, SILVER_JOBS),
    build=_build,
)
