"""Why a job attempt failed: the shipped failure-cause rules and the classifier.

A rule maps what the record says about its end (the adapter's ``failure_mode`` label, which
carries Slurm states, Torque/PBS negative exit codes, HTCondor JobStatus and ``HoldReasonCode``
as ``held:N``; the ``exit_code``, where 128 + N is signal N; the payload's own exit codes of a
VO) to one of :data:`CAUSES`. The rules ship in ``reference/failure_causes.csv``, each with the
public source it was written from; operators edit them as versioned rows of
``gold.failure_cause_rules`` (a higher ``rule_version`` of a rule_id replaces it, ``enabled =
false`` retires it).

Matching: a rule applies to a failed attempt when each of its non-null conditions holds
(``source_format`` and ``failure_mode`` equal, ``exit_code`` in [exit_code_min, exit_code_max],
``vo`` equal case-insensitively). Among the rules that apply, the lowest ``priority`` wins (then
the rule_id); a failed attempt no rule covers is ``unknown``, a successful one ``success``.
Priorities of the shipped rules: 10-11 a VO's payload codes, 20-21 HTCondor hold and remove,
30 batch-system states, 40 signals (128 + N), 50 shell conventions, 90-91 other non-zero exits.

The classifier is one Spark ``CASE WHEN`` built from the (few) active rules: no join, no UDF,
no shuffle. The pure-Python :func:`classify` is the same decision for one record (tests, CLI).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

RULES_CSV = "failure_causes.csv"

CAUSES: tuple[str, ...] = (
    "success",
    "application_error",
    "memory_exceeded",
    "walltime_exceeded",
    "evicted_or_preempted",
    "input_read_failure",
    "stage_out_failure",
    "node_or_infrastructure",
    "cancelled",
    "unknown",
)

RULES_DDL = (
    "rule_version int, rule_id string, priority int, source_format string, failure_mode string, "
    "exit_code_min bigint, exit_code_max bigint, vo string, cause string, enabled boolean, "
    "reference string, description string"
)


class FailureRule(NamedTuple):
    rule_version: int
    rule_id: str
    priority: int
    source_format: str | None
    failure_mode: str | None
    exit_code_min: int | None
    exit_code_max: int | None
    vo: str | None
    cause: str
    enabled: bool
    reference: str
    description: str


def _opt_int(text: str) -> int | None:
    return int(text) if text.strip() else None


def _opt_str(text: str) -> str | None:
    return text.strip() or None


@lru_cache(maxsize=1)
def default_rules() -> tuple[FailureRule, ...]:
    """The shipped rules (``failure_causes.csv``), validated."""
    text = resources.files("gridlake.reference").joinpath(RULES_CSV).read_text(encoding="utf-8")
    rules = tuple(
        FailureRule(
            rule_version=int(row["rule_version"]),
            rule_id=row["rule_id"],
            priority=int(row["priority"]),
            source_format=_opt_str(row["source_format"]),
            failure_mode=_opt_str(row["failure_mode"]),
            exit_code_min=_opt_int(row["exit_code_min"]),
            exit_code_max=_opt_int(row["exit_code_max"]),
            vo=_opt_str(row["vo"]),
            cause=row["cause"],
            enabled=True,
            reference=row["reference"],
            description=row["description"],
        )
        for row in csv.DictReader(io.StringIO(text))
    )
    problems = validate_rules(rules)
    if problems:
        raise ValueError(f"{RULES_CSV}: " + "; ".join(problems))
    return rules


def validate_rules(rules: Iterable[Any]) -> list[str]:
    """What is wrong with a rule set (rows with the rule columns): unknown causes, inverted
    exit-code ranges, rules with no condition, one rule_id and version twice."""
    problems: list[str] = []
    seen: set[tuple[str, int]] = set()
    for r in rules:
        key = (r.rule_id, r.rule_version)
        if key in seen:
            problems.append(f"rule {r.rule_id} version {r.rule_version} appears twice")
        seen.add(key)
        if r.cause not in CAUSES:
            problems.append(f"rule {r.rule_id}: cause {r.cause!r} is not one of {CAUSES}")
        lo, hi = r.exit_code_min, r.exit_code_max
        if lo is not None and hi is not None and lo > hi:
            problems.append(f"rule {r.rule_id}: exit_code_min {lo} > exit_code_max {hi}")
        if all(v is None for v in (r.source_format, r.failure_mode, lo, hi, r.vo)):
            problems.append(f"rule {r.rule_id}: no condition (it would match every failure)")
    return problems


def active_rules(rules: Iterable[Any]) -> list[Any]:
    """The latest version of each rule_id, if enabled (null counts as enabled), in the order
    they are tried: priority, then rule_id."""
    latest: dict[str, Any] = {}
    for r in rules:
        if r.rule_id not in latest or r.rule_version > latest[r.rule_id].rule_version:
            latest[r.rule_id] = r
    live = [r for r in latest.values() if r.enabled is not False]
    return sorted(live, key=lambda r: (r.priority, r.rule_id))


def _matches(rule: Any, record: Mapping[str, Any]) -> bool:
    code = record.get("exit_code")
    vo = record.get("vo")
    return (
        (rule.source_format is None or record.get("source_format") == rule.source_format)
        and (rule.failure_mode is None or record.get("failure_mode") == rule.failure_mode)
        and (rule.exit_code_min is None or (code is not None and code >= rule.exit_code_min))
        and (rule.exit_code_max is None or (code is not None and code <= rule.exit_code_max))
        and (rule.vo is None or (vo is not None and vo.lower() == rule.vo.lower()))
    )


def classify(record: Mapping[str, Any], rules: Sequence[Any] | None = None) -> tuple[str, str]:
    """(cause, rule_id) of one record (status, source_format, failure_mode, exit_code, vo);
    rule_id '' for success and for an unknown failure."""
    if record.get("status") == "success":
        return "success", ""
    for rule in active_rules(default_rules() if rules is None else rules):
        if _matches(rule, record):
            return rule.cause, rule.rule_id
    return "unknown", ""


# --------------------------------------------------------------------------------------------
# Spark


def _sql_text(value: str) -> str:
    """A SQL string literal (the rules are an operator's table: quoted, never pasted)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _condition(rule: Any) -> str:
    """The rule's test as SQL (null, e.g. no exit code, counts as no match)."""
    terms = ["true"]
    if rule.source_format is not None:
        terms.append(f"source_format = {_sql_text(rule.source_format)}")
    if rule.failure_mode is not None:
        terms.append(f"failure_mode = {_sql_text(rule.failure_mode)}")
    if rule.exit_code_min is not None:
        terms.append(f"exit_code >= {int(rule.exit_code_min)}")
    if rule.exit_code_max is not None:
        terms.append(f"exit_code <= {int(rule.exit_code_max)}")
    if rule.vo is not None:
        terms.append(f"lower(vo) = {_sql_text(rule.vo.lower())}")
    return f"coalesce({' AND '.join(terms)}, false)"


def cause_column(rules: Sequence[Any] | None = None, *, rule_id: bool = False) -> Column:
    """The cause of each row (needs status, source_format, failure_mode, exit_code, vo) as one
    CASE WHEN over the active rules; ``rule_id=True`` gives the deciding rule's id instead.

    Built as one SQL expression: a Column per term over py4j was ~20,000 calls for the shipped
    rules (2 s on two busy cores, in every refine and analyze)."""
    from pyspark.sql import functions as F

    active = active_rules(default_rules() if rules is None else rules)
    success = "NULL" if rule_id else "'success'"
    branches = [f"WHEN status = 'success' THEN {success}"]
    for rule in active:
        value = rule.rule_id if rule_id else rule.cause
        branches.append(f"WHEN {_condition(rule)} THEN {_sql_text(value)}")
    otherwise = "NULL" if rule_id else "'unknown'"
    return F.expr(f"CASE {' '.join(branches)} ELSE {otherwise} END")


def with_failure_cause(jobs: DataFrame, rules: Sequence[Any] | None = None) -> DataFrame:
    """Add ``failure_cause`` by the given rules (the shipped ones when None)."""
    return jobs.withColumn("failure_cause", cause_column(rules))


def rules_frame(spark: SparkSession, rules: Sequence[FailureRule] | None = None) -> DataFrame:
    """The rules as a DataFrame with the columns of gold.failure_cause_rules."""
    from gridlake.spark import rows_frame

    return rows_frame(
        spark, [tuple(r) for r in (default_rules() if rules is None else rules)], RULES_DDL
    )
