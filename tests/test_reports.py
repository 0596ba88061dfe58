"""Weekly reports, their query layer and the pieces of orchestration that need no Airflow.

The report queries run here against hand-made rows of the gold views (as ``global_temp`` views
with the columns of the real ``grid`` views), so every figure and sentence is checked against a
value worked out by hand below. The DAG runs on real data: test_dag_runs.py (the demo week, in
make test) and test_orchestration.py (a simulated three-week grid, nightly).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import pytest

from gridlake.gold.efficiency import GOLD_EFFICIENCY_OUTLIERS, GOLD_JOB_LENGTH_ADVICE
from gridlake.gold.io_signatures import GOLD_NODE_SATURATION, GOLD_SITE_IO_STRESS_WEEKLY
from gridlake.gold.network import GOLD_NETWORK_ALARMS, GOLD_NETWORK_COST_MATRIX
from gridlake.gold.site_efficiency import (
    GOLD_FAILURE_CAUSES_WEEKLY,
    GOLD_SITE_EFFICIENCY_WEEKLY,
    GOLD_SITE_FAILURE_MODES_WEEKLY,
    GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY,
    site_failure_modes_weekly,
)
from gridlake.gold.speed_factors import GOLD_BENCHMARK_MISMATCH, GOLD_SITE_SPEED_ANOMALIES
from gridlake.ops.orchestration import MANIFEST_PATH, check_dependencies, render_manifest
from gridlake.serving.report import (
    SITE_SECTIONS,
    SUMMARY_SECTIONS,
    NoGoldDataError,
    build_site_report,
    build_summary_report,
    parse_week,
    render_html,
    site_file_stem,
    week_label,
)
from gridlake.serving.report import queries as rq
from gridlake.serving.views import view_columns
from gridlake.spark import rows_frame

from .test_gold_efficiency import job, jobs_df

W = date(2026, 11, 16)  # 2026-W47
W1, W2 = W - timedelta(days=7), W - timedelta(days=14)
VIEWS = "global_temp"


# --------------------------------------------------------------------------------------------
# Weeks
# --------------------------------------------------------------------------------------------


def test_parse_week_takes_iso_weeks_and_dates():
    assert parse_week("2026-W47") == date(2026, 11, 16)
    assert parse_week("2026-W01") == date(2025, 12, 29)  # ISO week 1 starts in December
    assert parse_week("2026-11-22") == date(2026, 11, 16)  # a Sunday: its week's Monday
    assert parse_week("2026-11-23T06:00:00+00:00") == date(2026, 11, 23)
    assert week_label(date(2026, 11, 16)) == "2026-W47"
    assert week_label(date(2021, 1, 4)) == "2021-W01"
    for bad in ("2026-W54", "46", "last week"):
        with pytest.raises(ValueError):
            parse_week(bad)


def test_site_file_stem_keeps_site_names_readable():
    assert site_file_stem("UKI-NORTHGRID-MAN-HEP") == "site-UKI-NORTHGRID-MAN-HEP"
    assert site_file_stem("a site/../x") == "site-a_site_.._x"


# --------------------------------------------------------------------------------------------
# Orchestration manifest
# --------------------------------------------------------------------------------------------


def test_manifest_is_current_and_lists_every_group_and_input():
    from gridlake.gold.analyze import GROUPS, gold_tables
    from gridlake.silver.refine import SPECS

    assert MANIFEST_PATH.read_text() == render_manifest(), "run `gridlake docs`"
    manifest = json.loads(MANIFEST_PATH.read_text())
    assert [g["group"] for g in manifest["gold_groups"]] == list(GROUPS)
    written = [t for g in manifest["gold_groups"] for t in g["writes"]]
    assert sorted(written) == sorted(t.full_name for t in gold_tables())
    assert {r["input"] for r in manifest["refine"]} == set(SPECS)
    order = [r["input"] for r in manifest["refine"]]
    assert order.index("nodes") < order.index("jobs")
    jobs = next(r for r in manifest["refine"] if r["input"] == "jobs")
    assert jobs["writes"] == ["silver.jobs", "silver.job_node_features"]


def test_group_dependencies_must_name_earlier_groups():
    check_dependencies(("a", "b", "c"), {"c": ("a", "b")})
    with pytest.raises(ValueError, match="unknown step 'x'"):
        check_dependencies(("a", "b"), {"b": ("x",)})
    with pytest.raises(ValueError, match="does not come before"):
        check_dependencies(("a", "b"), {"a": ("b",)})
    with pytest.raises(ValueError, match="unknown step 'z'"):
        check_dependencies(("a",), {"z": ("a",)})


# --------------------------------------------------------------------------------------------
# gold.site_failure_modes_weekly
# --------------------------------------------------------------------------------------------


def test_site_failure_modes_weekly_by_hand(spark):
    end_next = datetime(2026, 11, 25, 12)
    rows = [
        job("a1", cores=8, wall=3600, status="failed", failure_mode="app-crash"),
        job("a2", cores=8, wall=1800, status="failed", failure_mode="app-crash", retry_of="a1"),
        job("a3", cores=8, wall=3600, retry_of="a2"),
        job("a4", cores=1, wall=7200, status="failed", failure_mode=None),
        job("a5", job_type="pile", cores=4, wall=900, status="failed", failure_mode="stage-in"),
        job("a6", job_type="pile", cores=4, wall=900),
        job("b1", site="B", cores=2, wall=3600, status="failed", failure_mode="memory"),
        job("a7", cores=1, wall=3600, status="failed", failure_mode="app-crash", end=end_next),
    ]
    out = {
        (r.site, r.week, r.job_type, r.failure_mode): r
        for r in GOLD_SITE_FAILURE_MODES_WEEKLY.conform(
            site_failure_modes_weekly(jobs_df(spark, rows))
        ).collect()
    }
    week, nxt = date(2026, 11, 16), date(2026, 11, 23)
    assert set(out) == {
        ("A", week, "simul", "app-crash"),
        ("A", week, "simul", "unknown"),
        ("A", week, "pile", "stage-in"),
        ("B", week, "simul", "memory"),
        ("A", nxt, "simul", "app-crash"),
    }
    crash = out[("A", week, "simul", "app-crash")]
    assert crash.failed_jobs == 2
    assert crash.wasted_core_hours == pytest.approx(8 + 4)  # 8 x 1 h + 8 x 0.5 h
    assert crash.retried_jobs == 2  # a1 retried by a2, a2 by a3
    assert crash.attempts == 4  # a1..a4: the simul attempts of A that week
    assert crash.failure_rate == pytest.approx(2 / 4)
    unknown = out[("A", week, "simul", "unknown")]
    assert (unknown.failed_jobs, unknown.retried_jobs) == (1, 0)
    assert unknown.wasted_core_hours == pytest.approx(2.0)
    stage = out[("A", week, "pile", "stage-in")]
    assert stage.attempts == 2 and stage.wasted_core_hours == pytest.approx(1.0)
    assert out[("A", nxt, "simul", "app-crash")].attempts == 1


# --------------------------------------------------------------------------------------------
# The query layer and the report on hand-made gold rows
# --------------------------------------------------------------------------------------------


def _view(spark, table, rows):
    """A global temp view named like the grid view, with the view's columns (others null)."""
    cols = view_columns(table)
    unknown = {k for r in rows for k in r} - {c.name for c in cols}
    assert not unknown, f"{table.name} has no columns {unknown}"
    schema = ", ".join(f"`{c.name}` {c.ddl_type}" for c in cols)
    data = [tuple(r.get(c.name) for c in cols) for r in rows]
    rows_frame(spark, data, schema).createOrReplaceGlobalTempView(table.name)


def _eff(week, site, vo, core, cpu, jobs=10, failed=0, badput=0.0, retry=0.0):
    return {
        "week": week, "site": site, "vo": vo, "jobs": jobs, "failed_jobs": failed,
        "core_hours": core, "cpu_hours": cpu, "cpu_efficiency": cpu / core,
        "badput_core_hours": badput, "wasted_core_hours": badput,
        "retry_waste_core_hours": retry,
    }  # fmt: skip


def _jt(week, site, vo, job_type, core, cpu):
    return {**_eff(week, site, vo, core, cpu), "job_type": job_type}


T = datetime(2026, 11, 18, 10, 0)


@pytest.fixture(scope="module")
def hand_views(spark):
    """Site A (3 weeks) and B (this week only) with figures chosen so that every report figure
    has a distinct hand-worked value."""
    _view(spark, GOLD_SITE_EFFICIENCY_WEEKLY, [
        _eff(W2, "A", "atlas", 100.0, 60.0, jobs=10, failed=1, badput=5.0),
        _eff(W1, "A", "atlas", 100.0, 60.0, jobs=10, failed=1, badput=5.0),
        _eff(W, "A", "atlas", 60.0, 30.0, jobs=12, failed=3, badput=8.0, retry=9.0),
        _eff(W, "A", "cms", 40.0, 24.0, jobs=8, failed=1, badput=2.0),
        _eff(W, "B", "atlas", 300.0, 240.0, jobs=30, failed=0),
    ])  # fmt: skip
    _view(spark, GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY, [
        _jt(W1, "A", "atlas", "simul", 100.0, 60.0),
        _jt(W, "A", "atlas", "simul", 60.0, 30.0),
        _jt(W, "A", "cms", "pile", 40.0, 24.0),
        _jt(W, "B", "atlas", "simul", 200.0, 180.0),
        _jt(W, "B", "atlas", "pile", 100.0, 60.0),
    ])  # fmt: skip
    fm = lambda week, site, jt, mode, n, h: {  # noqa: E731
        "week": week, "site": site, "job_type": jt, "failure_mode": mode, "failed_jobs": n,
        "wasted_core_hours": h,
    }  # fmt: skip
    _view(spark, GOLD_SITE_FAILURE_MODES_WEEKLY, [
        fm(W2, "A", "simul", "app-crash", 1, 5.0),
        fm(W1, "A", "simul", "app-crash", 1, 5.0),
        fm(W, "A", "simul", "app-crash", 3, 8.0),
        fm(W, "A", "pile", "stage-in", 1, 2.0),
    ])  # fmt: skip
    fc = lambda week, site, cause, n, h: {  # noqa: E731
        "week": week, "site": site, "cause": cause, "jobs": n, "badput_core_hours": h,
    }  # fmt: skip
    _view(spark, GOLD_FAILURE_CAUSES_WEEKLY, [
        fc(W2, "A", "memory_exceeded", 1, 5.0), fc(W1, "A", "memory_exceeded", 1, 5.0),
        fc(W1, "A", "cancelled", 2, 0.5),
        fc(W, "A", "success", 16, 0.0),
        fc(W, "A", "memory_exceeded", 2, 6.0), fc(W, "A", "evicted_or_preempted", 1, 2.0),
        fc(W, "A", "unknown", 1, 0.0),
        fc(W, "B", "success", 30, 0.0),
    ])  # fmt: skip
    adv = lambda jt, now, opt, u_now, u_opt: {  # noqa: E731
        "job_type": jt, "current_median_hours": now, "optimal_hours": opt,
        "current_useful_fraction": u_now, "expected_useful_fraction": u_opt, "init_seconds": 300.0,
    }  # fmt: skip
    _view(spark, GOLD_JOB_LENGTH_ADVICE, [
        adv("simul", 2.0, 8.0, 0.8, 0.9), adv("pile", 5.0, 5.0, 0.9, 0.9),
        adv("evgen", 1.0, 9.0, 0.5, 0.9),  # not run at A this week: not in A's report
    ])  # fmt: skip
    ssa = lambda model, slow, flagged, lo=None, hi=None: {  # noqa: E731
        "job_type": "ALL", "site": "A", "cpu_model": model, "reference_model": "R",
        "group_id": 1, "slowdown": slow, "ci_low": lo, "ci_high": hi, "flagged": flagged,
        "n_jobs": 100 if model == "M1" else 50,
    }  # fmt: skip
    _view(spark, GOLD_SITE_SPEED_ANOMALIES, [
        ssa("ALL", 1.22, True), ssa("M1", 1.2, True, 1.1, 1.3), ssa("M2", 1.0, False, 0.95, 1.05),
    ])  # fmt: skip
    bm = lambda model, bench, speed, flagged, jt="ALL": {  # noqa: E731
        "job_type": jt, "cpu_model": model, "reference_model": "R", "benchmark_factor": bench,
        "speed_factor": speed, "ratio": speed / bench, "ratio_ci_low": speed / bench - 0.02,
        "ratio_ci_high": speed / bench + 0.02, "flagged": flagged, "n_jobs": 100,
    }  # fmt: skip
    _view(spark, GOLD_BENCHMARK_MISMATCH, [
        bm("M1", 1.0, 0.78, True), bm("M2", 1.2, 1.18, False),
        bm("M2", 1.2, 0.96, True, "simul"), bm("M2", 1.2, 1.2, False, "pile"),
    ])  # fmt: skip
    io = lambda week, io_share, mem, sat: {  # noqa: E731
        "site": "A", "week": week, "monitored_hosts": 2, "host_hours": 20,
        "share_cpu_bound": 1 - io_share - mem, "share_io_wait_bound": io_share,
        "share_memory_bound": mem, "saturated_share": sat, "lost_core_hours_io_wait_bound": 4.0,
        "lost_core_hours_memory_bound": 1.0, "lost_core_hours_remote_read_bound": 0.0,
        "lost_core_hours_init_dominated": 0.0, "lost_core_hours_mixed": 0.0,
    }  # fmt: skip
    _view(spark, GOLD_SITE_IO_STRESS_WEEKLY,
          [io(W2, 0.3, 0.0, 0.05), io(W1, 0.2, 0.0, 0.15), io(W, 0.4, 0.1, 0.2)])  # fmt: skip
    hour = lambda host, h, sat: {  # noqa: E731
        "site": "A", "host": host, "hour": T + timedelta(hours=h), "week": W, "saturated": sat,
        "disk_saturated": sat, "memory_pressure": False, "disk_util_p95": 90.0 if sat else 20.0,
    }  # fmt: skip
    hours = [hour("h1", h, h < 4) for h in range(10)] + [hour("h2", h, False) for h in range(10)]
    _view(spark, GOLD_NODE_SATURATION, hours)
    cost = lambda week, src, dst, c, congested=0.0: {  # noqa: E731
        "week": week, "src_site": src, "dst_site": dst, "cost_seconds_per_gb": c,
        "congested_share": congested, "loss_mean": 0.0,
    }  # fmt: skip
    _view(spark, GOLD_NETWORK_COST_MATRIX, [
        cost(W, "A", "B", 10.0), cost(W, "B", "A", 20.0), cost(W, "A", "C", 30.0, 0.2),
        cost(W1, "A", "B", 8.0), cost(W1, "B", "A", 25.0),
    ])  # fmt: skip
    alarm = lambda kind, src, dst, start, end: {  # noqa: E731
        "kind": kind, "src_site": src, "dst_site": dst, "start_ts": start, "end_ts": end,
        "value": 0.05,
    }  # fmt: skip
    _view(spark, GOLD_NETWORK_ALARMS, [
        alarm("high_loss", "B", "A", T, T + timedelta(hours=2)),
        alarm("clock_drift", "A", "C", T - timedelta(days=20), T - timedelta(days=10)),  # over
        alarm("complete_loss", "B", "C", T, T + timedelta(hours=1)),  # not A's path
    ])  # fmt: skip
    out = lambda week, site, jt, z, evidence: {  # noqa: E731
        "week": week, "entity": "site", "entity_value": site, "job_type": jt,
        "metric": "cpu_efficiency", "value": 0.5, "baseline": 0.8, "deviation_pct": -37.5,
        "robust_z": z, "comparison": "peers", "rule_id": "site_eff_peers", "n_jobs": 40,
        "evidence": evidence,
    }  # fmt: skip
    _view(spark, GOLD_EFFICIENCY_OUTLIERS, [
        out(W, "A", "simul", -3.0, "weaker"),
        out(W, "A", "pile", -5.0, "A pile efficiency 0.50 against a peer median of 0.80"),
        out(W1, "A", "simul", -4.0, "last week"),
        out(W, "B", "simul", -3.5, "B's"),
    ])  # fmt: skip
    return VIEWS


def _run(spark, name, **params):
    return rq.run(spark, name, VIEWS, **params)


def test_site_figures_are_ratios_of_sums(spark, hand_views):
    head = _run(spark, "site_headline", site="A", week=W)[0]
    assert head["efficiency"] == pytest.approx(54 / 100)  # mean of the VO ratios: 0.55
    assert head["previous_efficiency"] == pytest.approx(120 / 200)
    assert head["grid_efficiency"] == pytest.approx((54 + 240) / 400)
    assert head["efficiency_change"] == pytest.approx(0.54 - 0.6)
    assert head["badput_share"] == pytest.approx(10 / 100)
    assert head["previous_badput_share"] == pytest.approx(10 / 200)
    assert (head["jobs"], head["failed_jobs"], head["previous_weeks"]) == (20, 4, 2)

    types = _run(spark, "site_job_types", site="A", week=W)
    assert [t["job_type"] for t in types] == ["simul", "pile"]  # widest gap to the grid first
    simul, pile = types
    assert simul["grid_efficiency"] == pytest.approx(210 / 260)
    assert simul["previous_efficiency"] == pytest.approx(0.6)
    assert pile["previous_efficiency"] is None and pile["gap_to_grid"] == pytest.approx(0.0)

    modes = _run(spark, "site_failure_modes", site="A", week=W)
    assert [(m["failure_mode"], m["failed_jobs"]) for m in modes] == [
        ("app-crash", 3),
        ("stage-in", 1),
    ]
    assert modes[0]["wasted_share"] == pytest.approx(0.8)
    assert modes[0]["previous_failed_jobs_per_week"] == pytest.approx(1.0)  # (1 + 1) / 2 weeks
    assert modes[1]["previous_failed_jobs_per_week"] == pytest.approx(0.0)

    causes = _run(spark, "site_failure_causes", site="A", week=W)
    assert [(c["cause"], c["failed_jobs"]) for c in causes] == [
        ("memory_exceeded", 2),
        ("evicted_or_preempted", 1),
        ("unknown", 1),
        ("cancelled", 0),  # failed only in a previous week: its rate before is still shown
    ]
    assert [c["badput_share"] for c in causes[:2]] == [pytest.approx(0.75), pytest.approx(0.25)]
    assert causes[0]["previous_failed_jobs_per_week"] == pytest.approx(1.0)  # (1 + 1) / 2 weeks
    assert causes[3]["previous_failed_jobs_per_week"] == pytest.approx(1.0)  # 2 / 2 weeks
    assert _run(spark, "site_failure_causes", site="B", week=W) == []  # B never failed

    weeks = _run(spark, "site_weeks", site="B", week=W)
    assert [w["week"] for w in weeks] == [W2, W1, W]
    assert weeks[0]["site_efficiency"] is None  # B ran nothing then
    assert weeks[0]["grid_efficiency"] == pytest.approx(0.6)


def test_site_network_io_speed_and_outlier_figures(spark, hand_views):
    paths = _run(spark, "site_network_paths", site="A", week=W)
    got = {
        (p["direction"], p["peer"]): (p["cost_seconds_per_gb"], p["previous_cost_seconds_per_gb"])
        for p in paths
    }
    assert got == {
        ("incoming", "B"): (20.0, 25.0),
        ("outgoing", "B"): (10.0, 8.0),
        ("outgoing", "C"): (30.0, None),
    }
    net = _run(spark, "site_network_headline", site="A", week=W)[0]
    assert (net["incoming_cost"], net["previous_incoming_cost"]) == (20.0, 25.0)
    assert (net["outgoing_cost"], net["previous_outgoing_cost"]) == (20.0, 8.0)  # median 10, 30
    assert (net["congested_paths"], net["paths"]) == (1, 3)
    alarms = _run(spark, "site_network_alarms", site="A", week=W)
    assert [a["kind"] for a in alarms] == ["high_loss"]  # the drift ended before the week

    io = _run(spark, "site_io_headline", site="A", week=W)[0]
    assert io["io_wait_share"] == pytest.approx(0.4)
    assert io["previous_io_wait_share"] == pytest.approx(0.25)
    assert io["previous_saturated_share"] == pytest.approx(0.10)
    hosts = _run(spark, "site_saturated_hosts", site="A", week=W)
    assert [(h["host"], h["hours"], h["saturated_hours"]) for h in hosts] == [
        ("h1", 10, 4),
        ("h2", 10, 0),
    ]

    models = _run(spark, "site_cpu_models", site="A", week=W)
    assert [(m["cpu_model"], m["benchmark_mismatch"]) for m in models] == [
        ("M1", True),
        ("M2", False),
    ]
    assert models[0]["ratio"] == pytest.approx(0.78)
    assert (models[0]["mismatch_job_types"], models[1]["mismatch_job_types"]) == (None, "simul")
    advice = _run(spark, "site_job_length", site="A", week=W)
    assert [a["job_type"] for a in advice] == ["simul", "pile"]  # evgen did not run at A
    assert advice[0]["site_core_hours_saved"] == pytest.approx(60 * (1 - 0.8 / 0.9))
    assert advice[1]["site_core_hours_saved"] == pytest.approx(0.0)

    weeks = _run(spark, "site_outlier_weeks", site="A", week=W)
    assert [(w["week"], w["outliers"]) for w in weeks] == [(W2, 0), (W1, 1), (W, 2)]
    outliers = _run(spark, "site_outliers", site="A", week=W)
    assert [o["robust_z"] for o in outliers] == [-5.0, -3.0]  # strongest first, B's left out


def test_site_report_sentences_say_what_changed(spark, hand_views):
    report = build_site_report(spark, "A", W, views=VIEWS)
    assert [s.key for s in report.sections] == [k for k, _ in SITE_SECTIONS]
    said = {s.key: s.sentence for s in report.sections}
    assert said["efficiency"] == (
        "CPU efficiency was 54.0% this week, down 6.0 points from 60.0% over the previous 2 "
        "weeks, 19.5 points below the grid (73.5%); the widest gap to the grid is simul (50% "
        "here, 81% on the grid)."
    )
    assert said["failures"] == (
        "Failed attempts (4 of 20) wasted 10.0 core-hours, 10.0% of the site's core-hours (up "
        "5.0 points from 5.0% over the previous weeks); most of it to app-crash (80%, 3 "
        "attempts, 1.0 a week over the previous weeks)."
    )
    assert said["causes"] == (
        "4 attempts failed; the largest cause of badput was memory exceeded (75%, 2 attempts, "
        "1.0 a week over the previous weeks); evictions and preemptions held 25% of the badput; "
        "no rule knows the cause of 1 of them."
    )
    assert said["job_length"] == (
        "simul jobs would gain most from another length: their median payload is 2.0 h against "
        "an optimal 8.0 h, which would have saved 6.7 of the site's 60.0 simul core-hours this "
        "week."
    )
    assert said["cpu_speed"] == (
        "Jobs here need 22% more CPU time per event than the median site on the same CPU models "
        "(flagged); the benchmark mispredicts 1 of its 2 CPU models (M1 runs at 0.78 of its HS23 "
        "rating); for simul jobs it mispredicts M2 (down to 0.80 of its rating)."
    )
    assert said["io"] == (
        "40% of the classified core-hours were I/O-wait bound (25% in the previous weeks) and "
        "10% memory bound; 1 of 2 monitored hosts were saturated at some hour, 20% of the "
        "host-hours (10% before)."
    )
    assert said["network"] == (
        "Moving 1 GB to the site took a median 20.0 s (25.0 s the week before) and from it "
        "20.0 s (8.0 s); 1 of 3 paths were congested more than a tenth of the time, and 1 alarm "
        "was open (1 high loss)."
    )
    assert said["outliers"] == (
        "The site has 2 entries on this week's outlier list (1 the week before); the strongest: "
        "A pile efficiency 0.50 against a peer median of 0.80."
    )
    assert all(s.points > 0 for s in report.sections), [(s.key, s.points) for s in report.sections]
    # Nothing in a report depends on when it was built: the same rows give the same bytes.
    again = render_html(build_site_report(spark, "A", W, views=VIEWS))
    assert render_html(report) == again
    assert again.count('<section id="') == len(SITE_SECTIONS)


def test_site_without_history_and_summary(spark, hand_views):
    b = build_site_report(spark, "B", W, views=VIEWS)
    eff = next(s for s in b.sections if s.key == "efficiency").sentence
    assert eff.startswith("CPU efficiency was 80.0% this week, 6.5 points above the grid (73.5%)")
    io = next(s for s in b.sections if s.key == "io")
    assert io.sentence == "No node samples from this site this week: its I/O limits are unknown."
    assert io.points == 0  # and the plot says so instead of drawing nothing

    summary = build_summary_report(spark, W, views=VIEWS)
    assert [s.key for s in summary.sections] == [k for k, _ in SUMMARY_SECTIONS]
    assert summary.sections[0].sentence == (
        "Grid CPU efficiency was 73.5% over 400 core-hours at 2 sites, up 13.5 points from "
        "60.0% over the previous weeks; lowest: A at 54.0%, largest drop: A (down 6.0 points)."
    )


def test_report_without_gold_rows_fails_clearly(spark, hand_views):
    with pytest.raises(NoGoldDataError, match="no rows for 2026-W49"):
        build_site_report(spark, "A", date(2026, 11, 30), views=VIEWS)
    with pytest.raises(
        NoGoldDataError, match="site 'Z' ran no jobs in 2026-W47; sites with jobs: A, B"
    ):
        build_site_report(spark, "Z", W, views=VIEWS)


# --------------------------------------------------------------------------------------------
# infra/check_loopback.sh (run at the end of `make demo`)
# --------------------------------------------------------------------------------------------


def test_check_loopback_flags_a_listener_beyond_127_0_0_1(tmp_path):
    """A service of the instance listening on 127.0.0.2 (loopback range, so nothing is exposed,
    but not 127.0.0.1) is reported and fails the check; on 127.0.0.1 it passes."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from gridlake.settings import REPO_ROOT, get_settings

    run_dir = get_settings().state / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    script = REPO_ROOT / "infra" / "check_loopback.sh"
    for host, rc in (("127.0.0.2", 1), ("127.0.0.1", 0)):
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-c", f"import socket,time; s=socket.socket(); "
             f"s.bind(('{host}', {port})); s.listen(); time.sleep(60)"],
        )  # fmt: skip
        pid_file = run_dir / "zz-check-loopback-test.pid"
        pid_file.write_text(str(server.pid))
        try:
            for _ in range(50):
                if f"{host}:{port}" in subprocess.run(["ss", "-ltnH"], capture_output=True,
                                                      text=True).stdout:  # fmt: skip
                    break
                time.sleep(0.1)
            result = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                                    env=os.environ.copy())  # fmt: skip
            assert result.returncode == rc, result.stdout + result.stderr
            marker = "NOT LOCAL" if rc else "ok       "
            assert f"{marker} {host}:{port}" in result.stdout, result.stdout
        finally:
            server.kill()
            server.wait()
            pid_file.unlink()


# --------------------------------------------------------------------------------------------
# gridlake quality-docs
# --------------------------------------------------------------------------------------------


def test_quality_docs_show_the_suites_and_the_gate_results(tmp_path):
    from gridlake.catalog import SILVER_JOBS
    from gridlake.serving.quality_docs import write_quality_docs

    at = datetime(2026, 11, 20, 8, 0)
    from gridlake.quality import key_check

    checks = [(c.kind, c.column, c.severity) for c in (*SILVER_JOBS.checks, key_check(SILVER_JOBS))]

    def batch(batch_id, failed=(), minute=0):
        return [
            {"table_name": "silver.jobs", "batch_id": batch_id, "check_kind": kind,
             "check_column": col, "severity": sev, "success": (kind, col) not in failed,
             "detail": "unexpected_count=3, unexpected_percent=0.5" if (kind, col) in failed
             else "unexpected_count=0, unexpected_percent=0.0",
             "checked_at": at + timedelta(minutes=minute)}
            for kind, col, sev in checks
        ]  # fmt: skip

    rows = batch("jobs-0") + batch("jobs-1", failed={("not_null", "site")}, minute=5)
    rows += batch("jobs-2", failed={("in_set", "is_outlier")}, minute=9)  # a warn check only
    rows += batch("jobs-3", failed={("unique_key", "job_id")}, minute=12)  # the key's check
    rows.append({**rows[0], "check_kind": "retired_check", "batch_id": "jobs-0"})
    docs = write_quality_docs(rows, tmp_path / "quality-docs", tables=(SILVER_JOBS,))
    assert (docs.suites, docs.validations, docs.skipped_results) == (1, 4, 1)
    index = docs.index.read_text()
    assert "silver_jobs" in index
    store = tmp_path / "quality-docs" / "gx" / "uncommitted" / "validations" / "silver_jobs"
    verdicts = {p.parent.parent.name: json.loads(p.read_text()) for p in store.rglob("jobs-*.json")}
    assert {b: v["success"] for b, v in verdicts.items()} == {
        "jobs-0": True,
        "jobs-1": False,  # a circuit breaker failed: the gate refused the batch
        "jobs-2": True,  # only a warning failed
        "jobs-3": False,  # two rows shared a key
    }
    dup = [r for r in verdicts["jobs-3"]["results"] if not r["success"]]
    kinds = [r["expectation_config"]["type"] for r in dup]
    assert kinds == ["expect_column_values_to_be_unique"]  # a one-column key
    failed = [r for r in verdicts["jobs-1"]["results"] if not r["success"]]
    assert [(r["expectation_config"]["type"], r["result"]["unexpected_count"]) for r in failed] == [
        ("expect_column_values_to_not_be_null", 3)
    ]
    pages = sorted(p.name for p in docs.index.parent.rglob("jobs-*.html"))
    assert pages == ["jobs-0.html", "jobs-1.html", "jobs-2.html", "jobs-3.html"]
    suite_page = (docs.index.parent / "expectations" / "silver_jobs.html").read_text()
    assert "job_id" in suite_page and "status" in suite_page


def test_one_browser_prints_many_reports_and_fetches_nothing(tmp_path):
    """PdfPrinter: two HTML files through one Chromium, each an A4 landscape PDF with its own
    text (the report's @page rule); a page's request to the network is refused, not made."""
    import http.server
    import subprocess
    import threading

    from gridlake.serving.report import PdfPrinter

    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/pixel.png"
    style = "<style>@page { size: A4 landscape; margin: 12mm; }</style>"
    files = []
    for name in ("alpha", "beta"):
        html = tmp_path / f"{name}.html"
        html.write_text(f"<html><head>{style}</head><body><h1>site {name}</h1>"
                        f'<img src="{url}"></body></html>')  # fmt: skip
        files.append(html)
    try:
        with PdfPrinter() as printer:
            for html in files:
                printer.print(html, html.with_suffix(".pdf"))
    finally:
        server.shutdown()
    assert hits == []
    for html, name in zip(files, ("alpha", "beta"), strict=True):
        pdf = html.with_suffix(".pdf")
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip
        assert f"site {name}" in text and ("alpha" if name == "beta" else "beta") not in text
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip
        assert "841.92 x 595" in info.replace("594.96", "595"), info
    assert not list(tmp_path.glob(".*.tmp"))
