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
        by_week = "week" in t.column_names  # the rule table is written whole
        replaced = [str(W46), str(W47), str(W48)] if by_week else None
        assert _weeks_replaced(spark, t, local) == replaced, t.full_name
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
    timings: dict[str, float] = {}
    assert analyze(spark, local, ["site_efficiency"], skip_current=True, timings=timings) == {}
    assert list(timings) == ["site_efficiency"] and timings["site_efficiency"] >= 0.0
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


# CPU models and their planted seconds per event; a task runs on all three at two sites.
SPEED_MODELS = {
    "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz": 10.0,
    "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz": 7.0,
    "AMD EPYC 7302 16-Core Processor": 6.0,
}


def _speed_jobs(week: date, tag: str) -> list[str]:
    """Two tasks of a week (one simul, one reco), each on every model at sites S and T (T 20 %
    slower), jittered."""
    out = []
    for t in range(2):
        for m, (model, sec) in enumerate(SPEED_MODELS.items()):
            for s, (site, slow) in enumerate((("S", 1.0), ("T", 1.2))):
                for k in range(2):
                    day = (week + timedelta(days=1 + k + t)).isoformat()
                    events = 500 + 37 * m + 11 * k + 5 * t
                    cpu = events * sec * slow * (1 + 0.01 * ((m + 2 * s + 3 * k + t) % 5))
                    out.append(_job(f"{tag}-t{t}-m{m}-s{s}-k{k}", day, task_id=f"{tag}-t{t}",
                                    job_type=("simul", "reco")[t], cpu_model=model, site=site,
                                    events=events, cpu_user_seconds=round(cpu, 3),
                                    cpu_system_seconds=0))  # fmt: skip
    return out


def test_incremental_speed_factors_and_efficiency_equal_the_full_recompute(
    spark, settings, tmp_path, registered
) -> None:
    """The speed-factor fit, the efficiency tables and the outlier scores are recomputed from
    their per-week state: an incremental analyze after a late job for an old week, a job moved
    to another week and an identical re-send rebuilds the state of those weeks only, and every
    table equals the full recompute's (the outlier metrics of every week; these few jobs flag
    no outlier, whose scoring test_gold_efficiency covers)."""
    from gridlake.catalog import SILVER_JOBS
    from gridlake.gold import efficiency
    from gridlake.gold import speed_factors as sf
    from gridlake.gold.analyze import analyze, gold_frames
    from gridlake.ops.compare import differences

    local = _make_warehouse(spark, settings, tmp_path / "warehouse")
    props = ", ".join(f"'{k}' = '{v}'" for k, v in SILVER_JOBS.properties)
    spark.sql(f"ALTER TABLE delta.`{SILVER_JOBS.path(local)}` SET TBLPROPERTIES ({props})")
    records = [j for w, tag in ((W45, "a"), (W46, "b"), (W47, "c"), (W48, "d"))
               for j in _speed_jobs(w, tag)]  # fmt: skip
    _batch(spark, local, 0, [(r, n, T0) for n, r in enumerate(records)])
    groups = ["efficiency", "efficiency_outliers", "speed_factors"]
    first = analyze(spark, local, groups=groups, skip_current=True)
    assert first[sf.GOLD_CPU_SPEED_FACTORS.full_name] > 0
    state = sf.GOLD_STATE_SPEED_CELLS
    assert _weeks_replaced(spark, state, local) is None  # no previous write: whole

    late = json.loads(records[0])  # a week-45 job's twin, arriving late for week 46
    late.update(job_id="late", task_id="b-t0", end_time="2026-11-12T10:10:00Z",
                start_time="2026-11-12T08:10:00Z", submit_time="2026-11-12T08:00:00Z",
                cpu_user_seconds=late["cpu_user_seconds"] * 1.1)  # fmt: skip
    moved = json.loads(records[len(records) // 2 + 1])  # a week-47 job, re-sent in week 48
    moved.update(end_time="2026-11-25T10:10:00Z", start_time="2026-11-25T08:10:00Z",
                 submit_time="2026-11-25T08:00:00Z", task_id="d-t1")  # fmt: skip
    assert moved["job_id"].startswith("c-")
    # a week-48 attempt retrying a week-45 job: these groups never read retry_of (only the
    # retry waste of site_efficiency does), so week 45 is not recomputed
    retry = json.loads(records[-2])
    retry.update(job_id="retry", retry_of=json.loads(records[0])["job_id"])
    assert retry["end_time"] > "2026-11-23" and retry["retry_of"].startswith("a-")
    _batch(spark, local, 1, [(json.dumps(late), 1000, T0 + timedelta(hours=1)),
                             (json.dumps(moved), 1001, T0 + timedelta(hours=1)),
                             (records[-1], 1002, T0 + timedelta(hours=1)),
                             (json.dumps(retry), 1003, T0 + timedelta(hours=1))])  # fmt: skip
    again = analyze(spark, local, groups=groups, skip_current=True)
    states = (state, sf.GOLD_STATE_SPEED_MODELS, *efficiency.STATE_TABLES,
              efficiency.GOLD_STATE_OUTLIER_METRICS)  # fmt: skip
    for t in states:
        assert _weeks_replaced(spark, t, local) == [str(W46), str(W47), str(W48)], t.full_name
    for t in (sf.GOLD_CPU_SPEED_FACTORS, *efficiency.TABLES_FROM_STATE,
              efficiency.GOLD_EFFICIENCY_OUTLIERS):  # fmt: skip
        assert _weeks_replaced(spark, t, local) is None, t.full_name  # from the state: whole
    assert again[sf.GOLD_CPU_SPEED_FACTORS.full_name] > 0

    read = lambda t: spark.read.format("delta").load(t.path(local))  # noqa: E731
    for name, tables in (("speed_factors", sf.TABLES),
                         ("efficiency", efficiency.GROUP.tables),
                         ("efficiency_outliers", efficiency.OUTLIERS_GROUP.tables)):  # fmt: skip
        full = gold_frames(read(SILVER_JOBS), name)
        assert set(full) == {t.full_name for t in tables}
        for t in tables:  # (no peak RSS: no memory fit; 24 jobs a site-week: no outlier)
            empty_ok = ("memory_per_thread_fit", "efficiency_outliers")
            assert read(t).count() > 0 or t.name in empty_ok, t.full_name
            bad = differences(read(t), full[t.full_name], t).limit(5).collect()
            assert not bad, (t.full_name, bad)
    # The planted speeds come out (whichever model is the reference): EPYC 10/6 x the E5-2630.
    factors = {r.cpu_model: r.speed_factor for r in read(sf.GOLD_CPU_SPEED_FACTORS)
               .where("job_type = 'ALL'").collect()}  # fmt: skip
    epyc, e5 = "AMD EPYC 7302 16-Core Processor", next(iter(SPEED_MODELS))
    assert factors[epyc] / factors[e5] == pytest.approx(10.0 / 6.0, rel=0.05)

    written = (*sf.TABLES, *efficiency.GROUP.tables, *efficiency.OUTLIERS_GROUP.tables)
    versions = {t.full_name: _version(spark, t, local) for t in written}
    assert analyze(spark, local, groups=groups, skip_current=True) == {}
    assert {t.full_name: _version(spark, t, local) for t in written} == versions


def test_groups_side_by_side_submit_their_jobs_to_pools_of_their_own(
    spark, settings, monkeypatch
) -> None:
    """analyze runs its groups in threads of the one session under the fair scheduler, each
    group's Spark jobs in a pool of its own (a group's short gate and commit jobs do not queue
    behind the other's long stages); the caller's thread keeps its own pool."""
    from dataclasses import replace

    from gridlake.gold import analyze as A

    sc = spark.sparkContext
    assert sc.getConf().get("spark.scheduler.mode") == "FAIR"
    seen: dict[str, str] = {}

    def record(session, name, *rest):
        seen[name] = session.sparkContext.getLocalProperty("spark.scheduler.pool")
        session.range(3).count()  # a job: the scheduler creates the pool it is submitted to
        return {f"gold.{name}": 0}

    monkeypatch.setattr(A, "ensure_tables", lambda *args, **kwargs: None)
    monkeypatch.setattr(A, "_analyze_group", record)
    before = sc.getLocalProperty("spark.scheduler.pool")
    names = ["site_efficiency", "speed_factors"]
    A.analyze(spark, replace(settings, analyze_workers=2), names, skip_current=True)
    assert seen == {n: f"analyze-{n}" for n in names}
    assert all(sc._jsc.sc().getPoolForName(f"analyze-{n}").isDefined() for n in names)
    assert sc.getLocalProperty("spark.scheduler.pool") == before
