"""Incremental gold: ``analyze`` with skip_current (the CLI's default and Airflow's) replaces only
the ISO weeks whose jobs changed, and gives the same tables as a full recompute.

A warehouse of the test's own, filled by refine's process_batch (the path Kafka batches take):
jobs in four weeks, then a batch with a late job for an old week, a job moved to another week,
a retry of an old week's failed job (which changes the retry waste of that old week) and an
identical re-send. The untouched week must not be recomputed, every gold row must equal the full
recompute's (floats to 1e-9 relative, both ways), a run with nothing new and a version of
silver.jobs that changed no row must commit nothing, and a table an operator RESTOREd is
recomputed whole."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest

from .test_job_identity import T0, _batch, _job, _make_warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

W45, W46, W47, W48 = (date(2026, 11, 2) + timedelta(weeks=n) for n in range(4))


def _history(spark, table, local):
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, table.path(local)).history()


def _version(spark, table, local) -> int:
    return int(_history(spark, table, local).select("version").first()[0])


def _weeks_replaced(spark, table, local) -> list[str] | None:
    """The weeks the table's latest write replaced (its commit's metadata); None for a write
    of the whole table."""
    from gridlake.gold.analyze import WEEKS_KEY

    meta = _history(spark, table, local).select("userMetadata").first()[0]
    return json.loads(meta).get(WEEKS_KEY) if meta else None


@pytest.fixture
def registered(spark, settings):
    """The session warehouse's tables in the metastore, so that ensuring them for the test's
    own warehouse (same names, by path) registers nothing of it."""
    from gridlake.catalog import QUALITY_RESULTS, SILVER_JOBS
    from gridlake.gold import site_efficiency
    from gridlake.tabledef import ensure_tables

    ensure_tables(spark, [SILVER_JOBS, QUALITY_RESULTS, *site_efficiency.TABLES], settings)


def test_incremental_analyze_replaces_the_changed_weeks_and_equals_the_full_recompute(
    spark, settings, tmp_path, registered
) -> None:
    from gridlake.catalog import SILVER_JOBS
    from gridlake.gold import site_efficiency
    from gridlake.gold.analyze import analyze, gold_frames
    from gridlake.ops.compare import differences

    local = _make_warehouse(spark, settings, tmp_path / "warehouse")
    props = ", ".join(f"'{k}' = '{v}'" for k, v in SILVER_JOBS.properties)
    assert "enableChangeDataFeed" in props  # what the incremental path reads
    spark.sql(f"ALTER TABLE delta.`{SILVER_JOBS.path(local)}` SET TBLPROPERTIES ({props})")
    tables = site_efficiency.TABLES
    weekly = site_efficiency.GOLD_SITE_EFFICIENCY_WEEKLY
    _batch(spark, local, 0, [
        (_job("a1", "2026-11-05"), 0, T0),                                     # W45
        (_job("b1", "2026-11-12", status="failed", exit_code=1), 1, T0),       # W46
        (_job("c1", "2026-11-18", site="T"), 2, T0),                           # W47
        (_job("d1", "2026-11-19"), 3, T0),                                     # W47
        (_job("e1", "2026-11-24", site="T", status="failed", exit_code=2), 4, T0),  # W48
    ])  # fmt: skip
    first = analyze(spark, local, groups=["site_efficiency"], skip_current=True)
    assert first[weekly.full_name] == 5  # no previous write: the whole table (5 week x site)
    assert _weeks_replaced(spark, weekly, local) is None
    w45_version = {t.full_name: _version(spark, t, local) for t in tables}

    _batch(spark, local, 1, [
        (_job("f1", "2026-11-13", site="T"), 5, T0 + timedelta(hours=1)),     # late, for W46
        (_job("d1", "2026-11-25"), 6, T0 + timedelta(hours=1)),               # W47 -> W48
        (_job("r1", "2026-11-26", retry_of="b1"), 7, T0 + timedelta(hours=1)),  # retries W46's b1
        (_job("c1", "2026-11-18", site="T"), 8, T0 + timedelta(hours=1)),     # identical re-send
    ])  # fmt: skip
    again = analyze(spark, local, groups=["site_efficiency"], skip_current=True)
    for t in tables:
        assert _version(spark, t, local) == w45_version[t.full_name] + 1, t.full_name
        assert _weeks_replaced(spark, t, local) == [str(W46), str(W47), str(W48)], t.full_name
    # The weeks' rows only: W46 (S, T), W47 (T: d1 left, S has no job), W48 (S, T).
    assert again[weekly.full_name] == 5

    read = lambda t, **o: spark.read.format("delta").options(**o).load(t.path(local))  # noqa: E731
    full = gold_frames(read(SILVER_JOBS), "site_efficiency")
    for t in tables:
        bad = differences(read(t), full[t.full_name], t).limit(5).collect()
        assert not bad, (t.full_name, bad)
    rows = {(r.week, r.site): r for r in read(weekly).collect()}
    assert set(rows) == {(W45, "S"), (W46, "S"), (W46, "T"), (W47, "T"), (W48, "S"), (W48, "T")}
    # b1 (W46) is retried by r1 (W48): W46's retry waste is b1's two hours on 8 cores.
    assert rows[(W46, "S")].retry_waste_core_hours == pytest.approx(16.0)
    assert rows[(W48, "S")].jobs == 2  # d1 moved in, r1

    # Nothing new, then a version of silver.jobs that changed no row: nothing is committed.
    versions = {t.full_name: _version(spark, t, local) for t in tables}
    assert analyze(spark, local, groups=["site_efficiency"], skip_current=True) == {}
    spark.sql(f"ALTER TABLE delta.`{SILVER_JOBS.path(local)}` SET TBLPROPERTIES ('x' = '1')")
    assert analyze(spark, local, groups=["site_efficiency"], skip_current=True) == {}
    assert {t.full_name: _version(spark, t, local) for t in tables} == versions

    # (That the full recompute, `gridlake analyze --full`, writes what gold_frames computes is
    # what every other analyze of make test checks: the comparison with `full` above suffices.)

    # An operator's RESTORE of one table to the first write (W45's batch only): the last
    # fingerprint no longer describes its rows, so the group is recomputed whole, not skipped.
    from delta.tables import DeltaTable

    DeltaTable.forPath(spark, weekly.path(local)).restoreToVersion(w45_version[weekly.full_name])
    assert len(read(weekly).collect()) == 5
    again = analyze(spark, local, groups=["site_efficiency"], skip_current=True)
    assert again[weekly.full_name] == 6
    assert _weeks_replaced(spark, weekly, local) is None
    assert not differences(read(weekly), full[weekly.full_name], weekly).limit(5).collect()


@pytest.mark.nightly  # ~75 s: make test-nightly
def test_changes_not_readable_mean_a_whole_recompute(spark, settings, tmp_path, registered) -> None:
    """silver.jobs without its change data feed over the versions since the last write (a table
    created before the feed was turned on): the group is recomputed whole, never partly."""
    from gridlake.catalog import SILVER_JOBS
    from gridlake.gold import site_efficiency
    from gridlake.gold.analyze import analyze

    local = _make_warehouse(spark, settings, tmp_path / "warehouse")
    weekly = site_efficiency.GOLD_SITE_EFFICIENCY_WEEKLY
    _batch(spark, local, 0, [(_job("a1", "2026-11-05"), 0, T0), (_job("c1", "2026-11-18"), 1, T0)])
    analyze(spark, local, groups=["site_efficiency"], skip_current=True)
    _batch(spark, local, 1, [(_job("f1", "2026-11-13"), 2, T0)])
    again = analyze(spark, local, groups=["site_efficiency"], skip_current=True)
    assert _weeks_replaced(spark, weekly, local) is None  # whole, not by weeks
    assert again[weekly.full_name] == 3
    jobs = spark.read.format("delta").load(SILVER_JOBS.path(local))
    assert jobs.count() == 3
