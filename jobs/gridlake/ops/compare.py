"""Compare two copies of the warehouse's tables row for row: a cluster run against a local run
of the same input, a run before a change against one after it.

Two copies of a table agree when they hold the same rows: matched on the table's key (its grain,
``Table.keys``), every other column equal, floating-point columns to a relative tolerance (sums
of the same numbers in another order differ in the last bits: a cluster adds its partitions in
another order than one machine). Columns that only say when and in which run a row was written
(``RUN_COLUMNS``) are left out. A table without a key is compared as a multiset (``EXCEPT ALL``
both ways) with its floating-point columns rounded to the tolerance's significant digits.

The work is Spark's (joins and anti-joins); only one row per table reaches the driver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gridlake.tabledef import Table

FLOAT_TYPES = ("DOUBLE", "FLOAT")
# Columns that record when and in which run a row was written, not what it says: two runs of the
# same input differ there by design, so they are not compared.
RUN_COLUMNS = ("_refined_at", "_batch_id")


def _floats(table: Table) -> list[str]:
    return [c.name for c in table.columns if c.ddl_type.upper() in FLOAT_TYPES]


def _close(a: Column, b: Column, rel_tol: float) -> Column:
    """a and b agree: both null, both NaN, equal (infinities too), or within rel_tol of the
    larger magnitude (an absolute floor of rel_tol**2 lets a value of 1e-300 equal 0)."""
    return F.when(a.isNull() | b.isNull(), a.isNull() & b.isNull()).otherwise(
        (F.isnan(a) & F.isnan(b))
        | (a == b)
        | (F.abs(a - b) <= F.greatest(F.abs(a), F.abs(b)) * rel_tol + rel_tol * rel_tol)
    )


def differences(
    left: DataFrame, right: DataFrame, table: Table, rel_tol: float = 1e-9
) -> DataFrame:
    """The rows on which two copies of ``table`` disagree, with a ``difference`` column:
    ``only_left``, ``only_right`` or ``changed: col1,col2`` (keyed tables), ``only_left`` or
    ``only_right`` (tables without a key)."""
    cols = [c for c in table.column_names if c not in RUN_COLUMNS]
    floats = set(_floats(table))
    if not table.keys:
        digits = max(1, int(-math.log10(rel_tol)))

        def rounded(df: DataFrame) -> DataFrame:
            return df.select(
                *[
                    _significant(F.col(c), digits, rel_tol * rel_tol).alias(c)
                    if c in floats
                    else F.col(c)
                    for c in cols
                ]
            )

        lo, ro = rounded(left), rounded(right)
        return (
            lo.exceptAll(ro)
            .withColumn("difference", F.lit("only_left"))
            .unionByName(ro.exceptAll(lo).withColumn("difference", F.lit("only_right")))
        )
    lk = left.select(*cols).withColumn("_in_left", F.lit(True)).alias("l")
    rk = right.select(*cols).withColumn("_in_right", F.lit(True)).alias("r")
    on = [F.col(f"l.{k}").eqNullSafe(F.col(f"r.{k}")) for k in table.keys]
    cond = on[0]
    for c in on[1:]:
        cond = cond & c
    joined = lk.join(rk, cond, "full_outer")
    changed = [
        F.when(
            ~(
                _close(F.col(f"l.{c}"), F.col(f"r.{c}"), rel_tol)
                if c in floats
                else F.col(f"l.{c}").eqNullSafe(F.col(f"r.{c}"))
            ),
            F.lit(c),
        )
        for c in cols
        if c not in table.keys
    ]
    diff = (
        F.when(F.col("_in_right").isNull(), F.lit("only_left"))
        .when(F.col("_in_left").isNull(), F.lit("only_right"))
        .otherwise(
            F.concat(F.lit("changed: "), F.concat_ws(",", *changed))
            if changed
            else F.lit("changed: ")
        )
    )
    keys = [F.coalesce(F.col(f"l.{k}"), F.col(f"r.{k}")).alias(k) for k in table.keys]
    return joined.select(*keys, diff.alias("difference")).where(F.col("difference") != "changed: ")


def _significant(x: Column, digits: int, floor: float) -> Column:
    """x rounded to ``digits`` significant digits; below ``floor`` in magnitude, 0 (null, NaN and
    infinities kept)."""
    exponent = F.floor(F.log10(F.abs(x)))
    scale = F.pow(F.lit(10.0), exponent - (digits - 1))
    finite = x.isNotNull() & ~F.isnan(x) & (F.abs(x) != float("inf"))
    return (
        F.when(finite & (F.abs(x) < floor), F.lit(0.0))
        .when(finite, F.round(x / scale) * scale)
        .otherwise(x)
    )


@dataclass(frozen=True)
class Comparison:
    table: str
    rows_left: int
    rows_right: int
    differing: int
    example: str  # the first differing row, as JSON ("" when none)

    @property
    def same(self) -> bool:
        return self.differing == 0

    def as_dict(self) -> dict[str, object]:
        return {
            "table": self.table,
            "rows_here": self.rows_left,
            "rows_there": self.rows_right,
            "differing": self.differing,
            "same": self.same,
            "example": self.example,
        }


def compare(left: DataFrame, right: DataFrame, table: Table, rel_tol: float = 1e-9) -> Comparison:
    """Row counts of both copies, the number of differing rows and the first of them."""
    diff = differences(left, right, table, rel_tol)
    counts = (
        left.select(F.count(F.lit(1)).alias("n"), F.lit(0).alias("side"))
        .unionByName(right.select(F.count(F.lit(1)).alias("n"), F.lit(1).alias("side")))
        .unionByName(diff.select(F.count(F.lit(1)).alias("n"), F.lit(2).alias("side")))
        .collect()  # three rows
    )
    n = {r["side"]: r["n"] for r in counts}
    example = ""
    if n[2]:
        first = diff.limit(1).toJSON().first()
        example = first or ""
    return Comparison(table.full_name, n[0], n[1], n[2], example)
