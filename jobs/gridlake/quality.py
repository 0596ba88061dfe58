"""The data-quality gate of silver and gold: a table's checks, run before anything is written.

The checks of a table are those its declaration lists (great_expectations expectations,
evaluated natively in one Spark pass with great_expectations' semantics, see ``run_checks``) plus
two that follow from it: its key (``Table.keys``, the grain as columns) is unique, and,
when the table is replaced whole (gold), the new frame does not shrink below a share of the
previous version's rows (``GRIDLAKE_GOLD_MIN_ROW_SHARE``, 0.5) or to nothing. ``gate`` runs them
all, hands the results to the caller's recorder (``silver.quality_results``), then raises
QualityGateError naming every failed ``fail`` check, so the batch or the gold table is not
written and the task fails with the reason in its log; failed ``warn`` checks are logged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

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
        case "unique_key":  # the table's key (Table.keys), checked natively by gate
            columns = list(a["columns"])
            if len(columns) == 1:
                return gxe.ExpectColumnValuesToBeUnique(column=columns[0])
            return gxe.ExpectCompoundColumnsToBeUnique(column_list=columns)
        case "pair_greater_or_equal":
            return gxe.ExpectColumnPairValuesAToBeGreaterThanB(or_equal=True, **a)
        case _:
            raise ValueError(f"unknown check kind {check.kind!r}")


def run_checks(table: Table, df: DataFrame) -> list[CheckResult]:
    """Validate ``df`` against the table's declared checks; one result per check.

    Evaluated natively in one Spark aggregation (plus one grouping per ``unique`` check), with
    great_expectations' semantics (nulls are ignored except by ``not_null``; ``mostly``; the
    unexpected share over the non-null values): ``run_checks_gx`` runs the same suite through
    great_expectations, which issues several Spark jobs per expectation, and the tests hold the
    two to the same answers. great_expectations still renders the Data Docs of the results."""
    if not table.checks:
        return []
    return checks_and_rows(table, df)[0]


def checks_and_rows(table: Table, df: DataFrame) -> tuple[list[CheckResult], int]:
    """:func:`run_checks`'s results and ``df``'s row count, from the same aggregation (a gate
    needs both: one Spark job rather than two)."""
    results, rows, _ = _checks_rows_keys(table, df, distinct_keys=False)
    return results, rows


def _checks_rows_keys(
    table: Table, df: DataFrame, distinct_keys: bool
) -> tuple[list[CheckResult], int, int | None]:
    """The declared checks' results, the row count and (``distinct_keys``, for a table with a
    key) the count of distinct keys, nulls equal as in GROUP BY, else None: one aggregation.
    It is written as SQL, one py4j call: Column objects cost a dozen calls a check (~1 ms each
    on two busy cores)."""
    aggs = ["count(1) AS _rows"]
    keyed = distinct_keys and bool(table.keys)
    if keyed:  # a struct is never null, whatever its fields: nulls count as one value
        aggs.append(f"count(DISTINCT struct({', '.join(f'`{k}`' for k in table.keys)})) AS _keys")
    for i, check in enumerate(table.checks):
        if check.kind == "unique":
            continue
        unexpected, counted = _unexpected_and_counted(check)
        aggs.append(f"sum(CASE WHEN {unexpected} THEN 1 ELSE 0 END) AS _u{i}")
        aggs.append(f"sum(CASE WHEN {counted} THEN 1 ELSE 0 END) AS _c{i}")
    row = df.selectExpr(*aggs).first()  # aggregates only: one row
    assert row is not None
    results = []
    for i, check in enumerate(table.checks):
        if check.kind == "unique":
            unexpected, counted = _unique_counts(df, check.column or "")
        else:
            unexpected, counted = int(row[f"_u{i}"] or 0), int(row[f"_c{i}"] or 0)
        results.append(_result(check, unexpected, counted))
    return results, int(row["_rows"]), int(row["_keys"]) if keyed else None


def _sql_value(value: object) -> str:
    """A check's argument as a SQL literal (the declarations' numbers and strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"no SQL literal for {value!r}")
        return repr(value) + "D"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"a check argument of type {type(value).__name__}: {value!r}")


def _unexpected_and_counted(check: Check) -> tuple[str, str]:
    """(row breaks the check, row is counted by it) as SQL boolean expressions."""
    a = dict(check.args)
    if check.kind == "pair_greater_or_equal":
        col_a, col_b = f"`{a['column_A']}`", f"`{a['column_B']}`"
        counted = f"({col_a} IS NOT NULL OR {col_b} IS NOT NULL)"  # ignore_row_if both missing
        ok = f"{col_a} >= {col_b}" if a.get("or_equal", True) else f"{col_a} > {col_b}"
        return f"NOT coalesce({ok}, true)", counted  # one value missing: not unexpected
    col = f"`{check.column}`"
    match check.kind:
        case "not_null":
            return f"{col} IS NULL", "true"
        case "between":
            ok = ["true"]
            if a.get("min_value") is not None:
                ok.append(
                    f"{col} {'>' if a.get('strict_min') else '>='} {_sql_value(a['min_value'])}"
                )
            if a.get("max_value") is not None:
                ok.append(
                    f"{col} {'<' if a.get('strict_max') else '<='} {_sql_value(a['max_value'])}"
                )
            return f"({col} IS NOT NULL AND NOT ({' AND '.join(ok)}))", f"{col} IS NOT NULL"
        case "in_set":
            values = ", ".join(_sql_value(v) for v in a["value_set"])  # type: ignore[attr-defined]
            inside = f"{col} IN ({values})" if values else "false"
            return f"({col} IS NOT NULL AND NOT ({inside}))", f"{col} IS NOT NULL"
        case _:
            raise ValueError(f"unknown check kind {check.kind!r}")


def _unique_counts(df: DataFrame, column: str) -> tuple[int, int]:
    """(rows whose non-null value another row shares, non-null rows)."""
    groups = df.where(F.col(column).isNotNull()).groupBy(column).count()
    row = groups.agg(
        F.sum(F.when(F.col("count") > 1, F.col("count")).otherwise(0)).alias("dup"),
        F.sum("count").alias("n"),
    ).first()
    return (int(row["dup"] or 0), int(row["n"] or 0)) if row is not None else (0, 0)


def _result(check: Check, unexpected: int, counted: int) -> CheckResult:
    mostly = check.args.get("mostly")
    if counted == 0:
        success = True
    elif mostly is None:
        success = unexpected == 0
    else:
        success = (counted - unexpected) / counted >= float(mostly)  # type: ignore[arg-type]
    detail = f"unexpected_count={unexpected}"
    if counted:
        detail += f", unexpected_percent={100.0 * unexpected / counted}"
    return CheckResult(check, success, detail)


def run_checks_gx(table: Table, df: DataFrame) -> list[CheckResult]:
    """The table's declared checks run by great_expectations (the reference ``run_checks``
    is held to; slower: several Spark jobs per expectation)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx

    if not table.checks:
        return []
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    # No "Calculating Metrics" bars in task logs and CLI output (a line per check and table).
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_spark(name="gridlake")
    asset = source.add_dataframe_asset(name=table.full_name.replace(".", "_"))
    batch_def = asset.add_batch_definition_whole_dataframe("whole")
    suite = context.suites.add(gx.ExpectationSuite(name=table.full_name))
    ids = [suite.add_expectation(_expectation(check)).id for check in table.checks]
    batch = batch_def.get_batch(batch_parameters={"dataframe": df})
    outcome = batch.validate(suite)
    # great_expectations does not keep the suite's order in its results: match them by id
    by_id = {res.expectation_config.id: res for res in outcome.results}
    results = []
    for check, res in zip(table.checks, (by_id[i] for i in ids), strict=True):
        info = res.result or {}
        detail = ", ".join(
            f"{k}={info[k]}"
            for k in ("unexpected_count", "unexpected_percent", "observed_value")
            if k in info and info[k] is not None
        )
        results.append(CheckResult(check, bool(res.success), detail))
    return results


def key_check(table: Table) -> Check | None:
    """The check the table's key implies (None without a key)."""
    if not table.keys:
        return None
    return Check("unique_key", ",".join(table.keys), {"columns": list(table.keys)})


def _key_checks(
    table: Table, df: DataFrame, rows: int | None = None, distinct: int | None = None
) -> list[CheckResult]:
    """No two rows share the key (nulls compare equal here, as in GROUP BY); the first
    duplicate found is the evidence. Not-null columns are the declared checks' business.
    ``rows`` and ``distinct`` (its distinct keys), when the caller counted them: equal, the
    check passes with no query; else the duplicate is looked for."""
    check = key_check(table)
    if check is None:
        return []
    if rows is not None and distinct is not None and rows == distinct:
        return [CheckResult(check, True, "unexpected_count=0")]
    keys = list(table.keys)
    dup = df.groupBy(*keys).count().where(F.col("count") > 1).limit(1).collect()  # <= 1 row
    detail = "unexpected_count=0"
    if dup:
        row = dup[0].asDict()
        detail = f"{row.pop('count')} rows with " + ", ".join(f"{k}={v}" for k, v in row.items())
    return [CheckResult(check, not dup, detail)]


def min_row_share() -> float:
    """GRIDLAKE_GOLD_MIN_ROW_SHARE (0.5), read at each check (a served command brings its own
    environment)."""
    return float(os.environ.get("GRIDLAKE_GOLD_MIN_ROW_SHARE", "0.5"))


def _row_count_check(rows: int, previous_rows: int | None) -> list[CheckResult]:
    """A replaced table keeps at least min_row_share() of its previous rows, and is not
    emptied."""
    if not previous_rows:
        return []
    share = min_row_share()
    ok = rows > 0 and rows >= share * previous_rows
    detail = f"observed_value={rows} rows, previous version {previous_rows}"
    return [CheckResult(Check("row_count_vs_previous", None, {"min_share": share}), ok,
                        detail)]  # fmt: skip


def gate(
    table: Table,
    df: DataFrame,
    *,
    previous_rows: int | None = None,
    rows: int | None = None,
    record: Callable[[list[CheckResult]], None] | None = None,
) -> list[CheckResult]:
    """Run every check of ``table`` on ``df`` (see the module docstring); hand the results to
    ``record``; raise QualityGateError on any failed ``fail`` check, log failed ``warn`` ones.

    ``previous_rows``: the row count of the version ``df`` would replace (gold), for the
    row-count check; ``rows``: ``df``'s row count when the caller already has it."""
    return gate_counted(table, df, previous_rows=previous_rows, rows=rows, record=record)[0]


def gate_counted(
    table: Table,
    df: DataFrame,
    *,
    previous_rows: int | None = None,
    rows: int | None = None,
    record: Callable[[list[CheckResult]], None] | None = None,
) -> tuple[list[CheckResult], int]:
    """:func:`gate`, also returning ``df``'s row count (counted with the checks)."""
    results, counted, distinct = _checks_rows_keys(table, df, distinct_keys=True)
    results += _key_checks(table, df, counted, distinct)
    rows = counted if rows is None else rows
    if previous_rows is not None:
        results += _row_count_check(rows, previous_rows)
    if record is not None:
        record(results)
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
    return results, rows
