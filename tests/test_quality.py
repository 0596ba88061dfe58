"""The great_expectations gate on silver.jobs, run for real on small DataFrames."""

from __future__ import annotations

import json
from datetime import date

import pytest

from gridlake.catalog import SILVER_JOBS
from gridlake.quality import QualityGateError, gate, run_checks
from gridlake.silver.jobs import clean_rows, validate_jobs
from gridlake.spark import rows_frame

from .test_validate import GOOD


def _silver(spark, records):
    rows = [(json.dumps(r), "grid.jobs", 0, i, None) for i, r in enumerate(records)]
    df = rows_frame(
        spark,
        rows,
        "value string, topic string, partition int, offset long, kafka_timestamp timestamp",
    )
    return clean_rows(validate_jobs(df), "b")


def test_gate_passes_clean_batch(spark) -> None:
    df = _silver(spark, [GOOD, {**GOOD, "job_id": "j2"}])
    results = gate(SILVER_JOBS, df)
    assert len(results) == len(SILVER_JOBS.checks) + 1  # the declared checks and the key's
    assert [r.check.kind for r in results][-1] == "unique_key"
    assert all(r.success for r in results)


def test_gate_rejects_duplicate_keys(spark) -> None:
    df = _silver(spark, [GOOD, GOOD])  # not deduplicated: a bug upstream of the MERGE
    with pytest.raises(QualityGateError, match=r"unique\(job_id\)"):
        gate(SILVER_JOBS, df)


def test_outlier_share_is_a_warning_not_a_failure(spark) -> None:
    outlier = {**GOOD, "cpu_user_seconds": 10 * 8 * 7200}
    df = _silver(spark, [{**outlier, "job_id": f"o{i}"} for i in range(3)])
    results = {(r.check.kind, r.check.column): r for r in run_checks(SILVER_JOBS, df)}
    assert results[("in_set", "is_outlier")].success is False
    gate(SILVER_JOBS, df)  # does not raise: severity warn


# --- the gate's derived checks: the key, and the row count against the previous version ------


def test_gate_finds_a_duplicate_key_and_names_it(spark) -> None:
    from gridlake.gold.site_efficiency import GOLD_SITE_EFFICIENCY_WEEKLY as T

    row = {c.name: None for c in T.columns} | {
        "week": date(2026, 11, 16), "site": "PIC", "vo": "atlas", "jobs": 3,
    }  # fmt: skip
    other = row | {"vo": "cms"}
    ddl = ", ".join(f"`{c.name}` {c.ddl_type}" for c in T.columns)
    recorded = []
    ok = gate(T, rows_frame(spark, [row, other], ddl), record=recorded.extend)
    assert [r.check.kind for r in ok if r.check.kind == "unique_key"] == ["unique_key"]
    assert all(r.success for r in ok) and recorded == ok
    with pytest.raises(QualityGateError, match=r"unique_key\(week,site,vo\) 2 rows with "
                       r"week=2026-11-16, site=PIC, vo=atlas"):  # fmt: skip
        gate(T, rows_frame(spark, [row, other, row], ddl))


def test_gate_refuses_a_collapsed_row_count_unless_the_table_follows_thresholds(spark) -> None:
    from gridlake.gold.network import GOLD_NETWORK_ALARMS
    from gridlake.gold.site_efficiency import GOLD_SITE_EFFICIENCY_WEEKLY as T

    ddl = ", ".join(f"`{c.name}` {c.ddl_type}" for c in T.columns)
    rows = [
        {"week": date(2026, 11, 16), "site": f"S{i}", "vo": "atlas", "jobs": 1} for i in range(4)
    ]
    df = rows_frame(spark, [{c.name: r.get(c.name) for c in T.columns} for r in rows], ddl)
    assert gate(T, df, previous_rows=8)  # half the previous rows: still accepted
    with pytest.raises(
        QualityGateError, match=r"row_count_vs_previous.*4 rows, previous version 9"
    ):
        gate(T, df, previous_rows=9)
    with pytest.raises(QualityGateError, match=r"0 rows, previous version 8"):
        gate(T, df.limit(0), previous_rows=8)
    assert GOLD_NETWORK_ALARMS.stable_rows is False  # analyze passes no previous count for it


# --- the native evaluation gives great_expectations' answers -------------------------------------


def test_native_checks_agree_with_great_expectations(spark) -> None:
    """Every check kind the catalog declares, on a frame with nulls, duplicates, boundary
    values and a ``mostly`` share: the one-pass evaluation and great_expectations agree on
    each check's outcome and unexpected count."""
    from gridlake.catalog import ALL_TABLES
    from gridlake.quality import run_checks_gx
    from gridlake.tabledef import Check, Column, Table

    checks = (
        Check("not_null", "a"),
        Check("unique", "a"),
        Check("unique", "c"),
        Check("between", "x", {"min_value": 0}),
        Check("between", "x", {"min_value": 0, "max_value": 1}),
        Check("between", "x", {"min_value": -5, "max_value": 5}),
        Check("in_set", "a", {"value_set": ["p", "q"]}),
        Check("in_set", "flag", {"value_set": [False], "mostly": 0.5}, severity="warn"),
        Check("in_set", "flag", {"value_set": [False], "mostly": 0.9}, severity="warn"),
        Check("pair_greater_or_equal", None, {"column_A": "end", "column_B": "start"}),
        Check("not_null", "empty"),
        Check("between", "empty", {"min_value": 0}),
    )
    declared = {c.kind for t in ALL_TABLES for c in t.checks}
    assert declared <= {c.kind for c in checks}, "a declared kind has no parity case"
    cols = ("a string", "c string", "x double", "flag boolean", "start int", "end int",
            "empty double")  # fmt: skip
    t = Table("t", "parity", "row", "parity frame",
              tuple(Column(*c.split(), "") for c in cols), checks=checks)  # fmt: skip
    rows = [
        ("p", "k1", 0.0, False, 1, 2, None),
        ("p", "k1", 1.0, False, 2, 2, None),
        ("q", "k2", 1.5, True, 3, 1, None),
        (None, None, None, None, None, 4, None),
        ("r", "k3", -0.5, False, 5, None, None),
        ("s", None, None, None, None, None, None),
    ]
    df = rows_frame(spark, rows, ", ".join(cols))
    native, reference = run_checks(t, df), run_checks_gx(t, df)
    for n, r in zip(native, reference, strict=True):
        assert n.check == r.check
        got = (n.success, n.detail.split(",")[0])
        want = (r.success, r.detail.split(",")[0] if r.detail else "unexpected_count=0")
        assert got == want, (n.check, n.detail, r.detail)
    # and the frame breaks most of them, so agreement is not agreement on "all passed"
    assert sum(not n.success for n in native) >= 7
