"""gridlake.ops.compare: two copies of a table agree when they hold the same rows, floating
columns to a relative tolerance (what `gridlake compare` and the cluster test rely on)."""

from __future__ import annotations

import pytest

from gridlake.ops.compare import compare, differences
from gridlake.spark import rows_frame
from gridlake.tabledef import Column, Table

KEYED = Table(
    database="gold",
    name="t",
    grain="one row per (site, vo)",
    description="test",
    columns=(
        Column("site", "STRING", ""),
        Column("vo", "STRING", ""),
        Column("jobs", "BIGINT", ""),
        Column("cpu_efficiency", "DOUBLE", ""),
    ),
    keys=("site", "vo"),
)
UNKEYED = Table(
    database="gold",
    name="u",
    grain="one row per alarm",
    description="test",
    columns=(Column("link", "STRING", ""), Column("value", "DOUBLE", "")),
)
SCHEMA = "site string, vo string, jobs bigint, cpu_efficiency double"


def _diff(spark, left, right, table=KEYED, schema=SCHEMA):
    rows = differences(rows_frame(spark, left, schema), rows_frame(spark, right, schema),
                       table).collect()  # fmt: skip
    return sorted((tuple(r)[:-1], r["difference"]) for r in rows)


def test_sums_in_another_order_agree_and_a_real_change_does_not(spark):
    a = [("CERN", "atlas", 10, 0.1 + 0.2 + 0.3), ("RAL", None, 3, 0.5), ("FNAL", "cms", 1, None)]
    b = [("CERN", "atlas", 10, 0.3 + 0.2 + 0.1), ("RAL", None, 3, 0.5), ("FNAL", "cms", 1, None)]
    assert (0.1 + 0.2 + 0.3) != (0.3 + 0.2 + 0.1)  # the test's premise: the last bits differ
    assert _diff(spark, a, b) == []
    c = [("CERN", "atlas", 10, 0.6 * (1 + 1e-7)), ("RAL", None, 4, 0.5), ("FNAL", "cms", 1, 0.0)]
    assert _diff(spark, a, c) == [
        (("CERN", "atlas"), "changed: cpu_efficiency"),
        (("FNAL", "cms"), "changed: cpu_efficiency"),  # null against 0: not the same
        (("RAL", None), "changed: jobs"),  # a null key matches a null key
    ]


def test_rows_on_one_side_only(spark):
    a = [("CERN", "atlas", 10, 0.5), ("RAL", "lhcb", 3, 0.5)]
    b = [("CERN", "atlas", 10, 0.5), ("PIC", "cms", 3, 0.5)]
    assert _diff(spark, a, b) == [
        (("PIC", "cms"), "only_right"),
        (("RAL", "lhcb"), "only_left"),
    ]


@pytest.mark.parametrize(
    ("right", "same"),
    [
        ([("a", 1.0 + 1e-12), ("a", 1.0), ("b", 2e-300)], True),  # 2e-300 against 0.0: equal
        ([("a", 1.0), ("b", 0.0)], False),  # one of the two ("a", 1.0) rows is gone
        ([("a", 1.0), ("a", 1.0001), ("b", 0.0)], False),
    ],
)
def test_a_table_without_a_key_is_a_multiset(spark, right, same):
    schema = "link string, value double"
    left = [("a", 1.0), ("a", 1.0), ("b", 0.0)]
    result = compare(rows_frame(spark, left, schema), rows_frame(spark, right, schema), UNKEYED)
    assert result.same is same, result
    assert result.rows_left == 3 and result.rows_right == len(right)
    assert (result.example == "") is same
