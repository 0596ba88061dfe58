"""The data-quality gate: a table's checks (tables.py) run by great_expectations.

A failed ``fail`` check raises QualityGateError naming every failed expectation, so the batch is
not written and the calling task fails with the reason in its log; ``warn`` checks are logged.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from pyspark.sql import DataFrame

from gridlake.tabledef import Check, Table

log = logging.getLogger(__name__)


class QualityGateError(RuntimeError):
    """A batch broke a circuit-breaker check; nothing of it was written."""


@dataclass(frozen=True)
class CheckResult:
    check: Check
    success: bool
    detail: str


def _expectation(check: Check):  # noqa: ANN202 - returns a great_expectations Expectation
    import great_expectations.expectations as gxe

    a = dict(check.args)
    match check.kind:
        case "not_null":
            return gxe.ExpectColumnValuesToNotBeNull(column=check.column)
        case "unique":
            return gxe.ExpectColumnValuesToBeUnique(column=check.column)
        case "between":
            return gxe.ExpectColumnValuesToBeBetween(column=check.column, **a)
        case "in_set":
            return gxe.ExpectColumnValuesToBeInSet(column=check.column, **a)
        case "pair_greater_or_equal":
            return gxe.ExpectColumnPairValuesAToBeGreaterThanB(or_equal=True, **a)
        case _:
            raise ValueError(f"unknown check kind {check.kind!r}")


def run_checks(table: Table, df: DataFrame) -> list[CheckResult]:
    """Validate ``df`` against the table's checks; returns one result per check."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx

    if not table.checks:
        return []
    context = gx.get_context(mode="ephemeral")
    source = context.data_sources.add_spark(name="gridlake")
    asset = source.add_dataframe_asset(name=table.full_name.replace(".", "_"))
    batch_def = asset.add_batch_definition_whole_dataframe("whole")
    suite = context.suites.add(gx.ExpectationSuite(name=table.full_name))
    for check in table.checks:
        suite.add_expectation(_expectation(check))
    batch = batch_def.get_batch(batch_parameters={"dataframe": df})
    outcome = batch.validate(suite)
    results = []
    for check, res in zip(table.checks, outcome.results, strict=True):
        info = res.result or {}
        detail = ", ".join(
            f"{k}={info[k]}"
            for k in ("unexpected_count", "unexpected_percent", "observed_value")
            if k in info and info[k] is not None
        )
        results.append(CheckResult(check, bool(res.success), detail))
    return results


def gate(table: Table, df: DataFrame) -> list[CheckResult]:
    """Run the checks; raise on any failed ``fail`` check, log failed ``warn`` checks."""
    results = run_checks(table, df)
    failed = [r for r in results if not r.success and r.check.severity == "fail"]
    for r in results:
        if not r.success and r.check.severity == "warn":
            log.warning(
                "quality warning on %s: %s %s (%s)",
                table.full_name,
                r.check.kind,
                r.check.column,
                r.detail,
            )
    if failed:
        lines = "; ".join(
            f"{r.check.kind}({r.check.column or r.check.args}) {r.detail}" for r in failed
        )
        raise QualityGateError(f"quality gate failed for {table.full_name}: {lines}")
    return results
