"""gold.failure_cause_rules and gold.failure_causes_weekly: why jobs fail, per site and week.

The rules (shipped in ``reference/failure_causes.csv`` with their sources, see
``gridlake.reference.failure_causes``) map each failed attempt's batch state, hold reason,
signal or payload exit code to a cause. The operator edits them here, as versioned rows: the
site_efficiency group writes the table (the operator's rows plus any shipped version it lacks)
and classifies every week with the latest enabled version of each rule, so an edited rule
reclassifies all of gold.failure_causes_weekly at the next analyze (silver.jobs.failure_cause
keeps the shipped rules' answer at refine time).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gridlake.reference.failure_causes import (
    CAUSES,
    active_rules,
    cause_column,
    rules_frame,
    validate_rules,
)
from gridlake.tabledef import Check, Column, Table

__all__ = [
    "GOLD_FAILURE_CAUSES_WEEKLY",
    "GOLD_FAILURE_CAUSE_RULES",
    "TABLES",
    "causes_from_cells",
    "failure_causes_weekly",
    "rules_frame",
    "with_cause",
]

GOLD_FAILURE_CAUSE_RULES = Table(
    database="gold",
    name="failure_cause_rules",
    keys=("rule_id", "rule_version"),
    question="Which exit codes, signals, batch states and hold reasons mean which failure cause?",
    example=(
        "SELECT rule_id, rule_version, priority, failure_mode, exit_code_min, exit_code_max, vo, "
        "cause FROM gold.failure_cause_rules ORDER BY priority, rule_id"
    ),
    grain="one row per rule_id and rule_version.",
    description=(
        "Editable failure-cause rules: a failed attempt takes the cause of the first rule "
        "(lowest priority, then rule_id) whose non-null conditions all hold; none: unknown. Add "
        "a row with a higher rule_version to change a rule, enabled = false to retire it; the "
        "shipped rules cite their source in reference."
    ),
    columns=(
        Column("rule_version", "INT", "Version of the rule; the highest applies"),
        Column("rule_id", "STRING", "Rule name, e.g. htcondor-hold-out-of-resources"),
        Column(
            "priority",
            "INT",
            "Order of trial: lower first (payload 10, batch states 20-30, "
            "signals 40, shell 50, other exits 90)",
        ),
        Column("source_format", "STRING", "Records of this source format only (null: any)"),
        Column(
            "failure_mode",
            "STRING",
            "The adapter's failure_mode label (timeout, memory, held:34, ...; null: any)",
        ),
        Column("exit_code_min", "BIGINT", "Lowest exit_code matched (null: no lower bound)"),
        Column("exit_code_max", "BIGINT", "Highest exit_code matched (null: no upper bound)"),
        Column("vo", "STRING", "Jobs of this VO only (payload exit codes; null: any)"),
        Column("cause", "STRING", "The failure cause the rule gives"),
        Column("enabled", "BOOLEAN", "false retires the rule (as a new version)"),
        Column("reference", "STRING", "Public source of the code's meaning"),
        Column("description", "STRING", "What the codes mean"),
    ),
    checks=(
        Check("not_null", "rule_id"),
        Check("not_null", "rule_version"),
        Check("in_set", "cause", {"value_set": list(CAUSES)}),
    ),
)

GOLD_FAILURE_CAUSES_WEEKLY = Table(
    database="gold",
    name="failure_causes_weekly",
    keys=("week", "site", "cause"),
    question="Why do jobs fail at a site, and which cause wastes the most core-hours?",
    example=(
        "SELECT site, cause, sum(jobs) AS jobs, round(sum(badput_core_hours)) AS badput_h FROM "
        "gold.failure_causes_weekly WHERE cause <> 'success' GROUP BY site, cause ORDER BY "
        "badput_h DESC LIMIT 10"
    ),
    grain="one row per week, site and cause with at least one attempt (cause success included).",
    description=(
        "Job attempts per site, ISO week and failure cause (the rules of "
        "gold.failure_cause_rules in force at the last analyze), with the core-hours they used "
        "and the badput (core-hours of failed attempts); the share of the site's weekly badput "
        "gives, for evicted_or_preempted, the eviction share of badput."
    ),
    columns=(
        Column("week", "DATE", "Monday of the ISO week of the attempts' end_time (UTC)"),
        Column("site", "STRING", "Grid site"),
        Column("cause", "STRING", "success or the failure cause (gold.failure_cause_rules)"),
        Column("jobs", "BIGINT", "Attempts with this cause"),
        Column("core_hours", "DOUBLE", "Their core-hours (wall x cores / 3600)"),
        Column("badput_core_hours", "DOUBLE", "Core-hours of those that failed (0 for success)"),
        Column("site_jobs", "BIGINT", "Every attempt of the site in the week"),
        Column(
            "site_badput_core_hours",
            "DOUBLE",
            "Core-hours of every failed attempt of the site in the week",
        ),
        Column(
            "share_of_badput",
            "DOUBLE",
            "badput_core_hours / site_badput_core_hours (null when the site wasted nothing)",
        ),
    ),
    checks=(
        Check("not_null", "week"),
        Check("not_null", "site"),
        Check("in_set", "cause", {"value_set": list(CAUSES)}),
        Check("between", "jobs", {"min_value": 1}),
        Check("between", "share_of_badput", {"min_value": 0, "max_value": 1.000001}),
    ),
)

TABLES: tuple[Table, ...] = (GOLD_FAILURE_CAUSE_RULES, GOLD_FAILURE_CAUSES_WEEKLY)


def checked_rules(rules: DataFrame) -> list:
    """The rows of a rules DataFrame (a few), or a ValueError naming every bad rule."""
    rows = rules.collect()  # a few rules
    problems = validate_rules(rows)
    problems += [f"rule {r.rule_id}: priority is null" for r in rows if r.priority is None]
    if problems:
        raise ValueError("gold.failure_cause_rules: " + "; ".join(problems))
    return active_rules(rows)


def with_cause(jobs: DataFrame, rules: DataFrame | None = None) -> DataFrame:
    """Add ``cause``: the attempt's failure cause by the rules (the shipped ones when None),
    'success' for a successful one."""
    active = checked_rules(rules) if rules is not None else None
    return jobs.withColumn("cause", cause_column(active))


def causes_from_cells(cells: DataFrame) -> DataFrame:
    """Cells of attempts (week, site, cause and status among their keys; ``_n`` attempts and
    ``_cws`` their core-seconds, as ``gridlake.gold.site_efficiency.attempt_cells`` gives them)
    -> one row per week, site, cause."""
    failed = F.col("status") == "failed"
    per_cause = cells.groupBy("week", "site", "cause").agg(
        F.sum("_n").alias("jobs"),
        (F.sum("_cws") / 3600.0).alias("core_hours"),
        (F.coalesce(F.sum(F.when(failed, F.col("_cws"))), F.lit(0.0)) / 3600.0).alias(
            "badput_core_hours"
        ),
    )
    site_week = Window.partitionBy("week", "site")  # a few rows per site and week
    site_badput = F.sum("badput_core_hours").over(site_week)
    return (
        per_cause.withColumn("site_jobs", F.sum("jobs").over(site_week))
        .withColumn("site_badput_core_hours", site_badput)
        .withColumn(
            "share_of_badput",
            F.when(
                F.col("site_badput_core_hours") > 0,
                F.col("badput_core_hours") / F.col("site_badput_core_hours"),
            ),
        )
    )


def failure_causes_weekly(jobs: DataFrame, rules: DataFrame | None = None) -> DataFrame:
    """silver.jobs (+ the rules; the shipped ones when None) -> one row per week, site, cause."""
    cells = (
        with_cause(jobs, rules)
        .groupBy("week", "site", "cause", "status")
        .agg(F.count(F.lit(1)).alias("_n"), F.sum("cores_wall_seconds").alias("_cws"))
    )
    return causes_from_cells(cells)
