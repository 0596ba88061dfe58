"""Cost functions and workload placement (gridlake.gold.cost, gridlake.gold.whatif).

- the worked example of the methods (jobs/gridlake/gold/README.md, "Cost functions"),
  hand-computed, reproduced from small silver and gold frames: every term, the interval,
  prices, ranks and the placement advice;
- missing evidence stays missing (no speed factor, no path, no price);
- the simulated grid: the ranking of sites per job type against the planted true cost
  (truth.json ``true_cost``), and the slow-storage site last where the truth says so;
- ``gridlake whatif`` on two scenarios with hand-computed totals (pure function and CLI, which
  must leave the warehouse as it was).
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
from datetime import date

import pytest

from gridlake.gold import cost
from gridlake.gold.cost import GOLD_SITE_WORKFLOW_COST
from gridlake.gold.efficiency import GOLD_JOB_LENGTH_ADVICE
from gridlake.gold.speed_factors import GOLD_CPU_SPEED_FACTORS
from gridlake.gold.whatif import load_scenario, parse_scenario, whatif
from gridlake.settings import REPO_ROOT
from gridlake.spark import rows_frame

# --------------------------------------------------------------------------------------------
# The worked example of jobs/gridlake/gold/README.md (job type reco, sites A and B, one week)
# --------------------------------------------------------------------------------------------

WEEK = date(2026, 11, 16)
JOBS_DDL = (
    "job_id string, retry_of string, status string, is_outlier boolean, task_id string, "
    "week date, site string, job_type string, cpu_model string, cores bigint, "
    "wall_seconds double, cores_wall_seconds double, cpu_seconds double, events bigint, "
    "input_bytes bigint"
)


def _job(job_id, site, task, model, status, core_s, cpu, events, gb, retry_of=None):
    return (job_id, retry_of, status, False, task, WEEK, site, "reco", model, 1, float(core_s),
            float(core_s), float(cpu), events, int(gb * 1e9))  # fmt: skip


# Both tasks need 8 CPU seconds per event on M1 at a typical site. A runs M1 only; B runs M1 and
# M2 (1.25x faster) and its nodes are 10 % slow, so an event takes 8 x 1.1 s on M1 and
# 8 x 1.1 / 1.25 = 7.04 s on M2 there. Each successful job reads 10 MB per event.
EXAMPLE_JOBS = [
    _job("a1", "A", "t1", "M1", "success", 1000, 800, 100, 1.0),
    _job("a2", "A", "t2", "M1", "success", 2000, 1600, 200, 2.0),
    _job("a3", "A", "t1", "M1", "failed", 500, 300, None, 0.2),
    _job("a4", "A", "t1", "M1", "success", 1000, 800, 100, 1.0, retry_of="a3"),
    _job("b1", "B", "t1", "M1", "success", 1600, 880, 100, 1.0),
    _job("b2", "B", "t2", "M2", "success", 1600, 1408, 200, 2.0),
    _job("b3", "B", "t2", "M2", "failed", 800, 300, None, 0.1),
]
FACTORS_DDL = (
    "job_type string, cpu_model string, speed_factor double, ci_low double, ci_high double, "
    "group_id int, reference_model string"
)
EXAMPLE_FACTORS = [("reco", "M1", 1.0, 1.0, 1.0, 1, "M1"), ("reco", "M2", 1.25, 1.2, 1.3, 1, "M1")]
ANOMALIES_DDL = (
    "job_type string, site string, cpu_model string, slowdown double, ci_low double, "
    "ci_high double, n_jobs bigint"
)
EXAMPLE_ANOMALIES = [
    ("reco", "A", "ALL", 1.0, 0.98, 1.02, 3),
    ("reco", "B", "ALL", 1.1, 1.05, 1.15, 2),
]
PROFILE_DDL = (
    "week date, site string, job_type string, classified_core_hours double, "
    "lost_core_hours_io_wait_bound double, lost_core_hours_memory_bound double, "
    "lost_core_hours_remote_read_bound double, lost_core_hours_mixed double, "
    "lost_core_hours_init_dominated double"
)
# B has node data: 0.08 of its 0.8 classified core-hours lost to I/O wait; A has none.
EXAMPLE_PROFILE = [(WEEK, "B", "reco", 0.8, 0.08, 0.0, 0.0, 0.0, 0.05)]
MATRIX_DDL = "week date, src_site string, dst_site string, cost_seconds_per_gb double"
EXAMPLE_MATRIX = [(WEEK, "A", "B", 4.0), (WEEK, "B", "A", None)]  # B -> A: no throughput test
EXAMPLE_PRICES = [
    cost.Price(1, "*", 1.0, "default"),
    cost.Price(1, "B", 1.5, "first quote"),
    cost.Price(2, "B", 1.2, "new contract"),
]

# By hand (jobs/gridlake/gold/README.md, "Cost functions"):
# r = (3200 x 1 / 1.0 + 880 x 1 / 1.1 + 1408 x 1.25 / 1.1) / (400 + 300) = 5600 / 700 = 8
# A: v = 1.0; x = 8; e = 3200 / 4000 = 0.8; w = 4500 / 4000 = 1.125 (a3 failed and retried)
#    core-s/event = 8 / 0.8 x 1.125 = 11.25; cost = 11.25 x 1.0 / 3.6 = 3.125
# B: mix = 0.4 x 1 + 0.6 x 1.25 = 1.15 (core-hours 1600 on M1, 2400 on M2); v = 1.15 / 1.1
#    x = 8 x 1.1 / 1.15 = 7.652174; e = 2288 / 3200 = 0.715; lambda = 0.08 / 0.8 = 0.1
#    e_noio = 0.815; w = 4000 / 3200 = 1.25; core-s/event = x / e x w = 13.377926
#    cost = 13.377926 x 1.2 / 3.6 = 4.459309
X_B = 8 * 1.1 / 1.15
EXPECTED = {
    "A": dict(reference_cpu_seconds_per_event=8.0, cpu_mix_speed=1.0, site_slowdown=1.0,
              effective_speed=1.0, cpu_seconds_per_event=8.0, cpu_efficiency=0.8,
              io_limit_loss=None, efficiency_without_io_limits=None, waste_factor=1.125,
              speed_term=8.0, efficiency_term=2.0, io_limit_term=None, failure_term=1.25,
              core_seconds_per_event=11.25, price_per_core_hour=1.0, price_version=1,
              cost_per_1000_events=3.125, cost_rank=1, n_jobs=4, n_successful_jobs=3,
              n_tasks=2, events=400, badput_core_hours=500 / 3600,
              retry_waste_core_hours=500 / 3600, input_gb_per_event=0.01, mean_cores=1.0),
    "B": dict(reference_cpu_seconds_per_event=8.0, cpu_mix_speed=1.15, site_slowdown=1.1,
              effective_speed=1.15 / 1.1, cpu_seconds_per_event=X_B, cpu_efficiency=0.715,
              io_limit_loss=0.1, efficiency_without_io_limits=0.815, waste_factor=1.25,
              speed_term=X_B, efficiency_term=X_B / 0.815 - X_B,
              io_limit_term=X_B / 0.715 - X_B / 0.815, failure_term=X_B / 0.715 * 0.25,
              core_seconds_per_event=X_B / 0.715 * 1.25, price_per_core_hour=1.2,
              price_version=2, cost_per_1000_events=X_B / 0.715 * 1.25 * 1.2 / 3.6,
              cost_rank=2, n_jobs=3, n_successful_jobs=2, n_tasks=2, events=300,
              badput_core_hours=800 / 3600, retry_waste_core_hours=0.0),
}  # fmt: skip
# The figures the methods print (rounded), reproduced below.
README_FIGURES = {
    "A": {"core_seconds_per_event": "11.250", "cost_per_1000_events": "3.125"},
    "B": {"core_seconds_per_event": "13.378", "cost_per_1000_events": "4.459"},
}


def _sd(lo: float, hi: float) -> float:
    return math.log(hi / lo) / (2 * 1.96)


def _interval(cost_value: float, s: float) -> tuple[float, float]:
    return cost_value * math.exp(-1.96 * s), cost_value * math.exp(1.96 * s)


@pytest.fixture(scope="module")
def example(spark):
    jobs = rows_frame(spark, EXAMPLE_JOBS, JOBS_DDL)
    out = cost.compute(
        jobs,
        rows_frame(spark, EXAMPLE_FACTORS, FACTORS_DDL),
        rows_frame(spark, EXAMPLE_ANOMALIES, ANOMALIES_DDL),
        rows_frame(spark, EXAMPLE_PROFILE, PROFILE_DDL),
        rows_frame(spark, EXAMPLE_MATRIX, MATRIX_DDL),
        cost.prices_frame(spark, tuple(EXAMPLE_PRICES)),
    )
    assert set(out) == {t.full_name for t in cost.TABLES}
    return {name: df.collect() for name, df in out.items()}


def test_worked_example_every_term(example) -> None:
    rows = {r.site: r for r in example["gold.site_workflow_cost"]}
    assert set(rows) == {"A", "B"}
    for site, expected in EXPECTED.items():
        r = rows[site].asDict()
        for key, value in expected.items():
            if value is None:
                assert r[key] is None, (site, key)
            else:
                assert r[key] == pytest.approx(value, rel=1e-9), (site, key)
        terms = [r["speed_term"], r["efficiency_term"], r["io_limit_term"], r["failure_term"]]
        assert sum(t or 0.0 for t in terms) == pytest.approx(r["core_seconds_per_event"])
        assert r["week"] == WEEK and r["job_type"] == "reco"


def test_worked_example_interval(example) -> None:
    rows = {r.site: r for r in example["gold.site_workflow_cost"]}
    # A: M1 is the reference (no spread); e has no spread over its two tasks (0.8 each);
    # w: tasks t1 (2500 / 2000) and t2 (2000 / 2000): se = sqrt(2 x (250^2 + 250^2)) / 4000
    s_a = math.hypot(_sd(0.98, 1.02), 0.125 / 1.125)
    # B: the CPU mix's spread (M2 on 60 % of the core-hours) with the site's, e over tasks
    # t1 (880 / 1600) and t2 (1408 / 1600): se = sqrt(2 x 2 x 264^2) / 3200 = 0.165; w over
    # t1 (1600 / 1600) and t2 (2400 / 1600): se = sqrt(2 x 2 x 400^2) / 3200 = 0.25
    s_v = math.hypot(0.6 * _sd(1.2, 1.3), _sd(1.05, 1.15))
    s_b = math.sqrt(s_v**2 + (0.165 / 0.715) ** 2 + (0.25 / 1.25) ** 2)
    assert rows["A"].cpu_efficiency_se == pytest.approx(0.0, abs=1e-6)  # round-off only
    assert rows["A"].waste_factor_se == pytest.approx(0.125)
    assert rows["B"].cpu_efficiency_se == pytest.approx(0.165)
    assert rows["B"].waste_factor_se == pytest.approx(0.25)
    for site, s in (("A", s_a), ("B", s_b)):
        lo, hi = _interval(rows[site].cost_per_1000_events, s)
        assert rows[site].cost_low == pytest.approx(lo, rel=1e-7), site
        assert rows[site].cost_high == pytest.approx(hi, rel=1e-7), site


def test_worked_example_placement(example) -> None:
    adv = {(r.data_site, r.candidate_site): r for r in example["gold.placement_advice"]}
    assert set(adv) == {("A", "A"), ("A", "B"), ("B", "B"), ("B", "A")}
    cs_a, cs_b = 11.25, X_B / 0.715 * 1.25
    aa, ab, bb, ba = adv[("A", "A")], adv[("A", "B")], adv[("B", "B")], adv[("B", "A")]
    assert aa.is_current and aa.candidate_rank == 1 and aa.main_reason == "current"
    assert aa.gain_core_hours_per_week == 0.0 and aa.transfer_seconds_per_event == 0.0
    # input at A, run at B: 0.01 GB/event x 4 s/GB = 0.04 s, x 1 core held, at B's price 1.2
    assert ab.transfer_seconds_per_event == pytest.approx(0.04)
    assert ab.network_cost_per_1000_events == pytest.approx(0.04 * 1.2 / 3.6)
    assert ab.combined_cost_per_1000_events == pytest.approx((cs_b + 0.04) * 1.2 / 3.6)
    assert ab.candidate_rank == 2 and not ab.is_current
    assert ab.today_cost_per_1000_events == pytest.approx(3.125)
    assert ab.events_per_week == 400
    assert ab.gain_core_hours_per_week == pytest.approx(400 * (cs_a - cs_b - 0.04) / 3600)
    assert ab.gain_cost_per_week == pytest.approx(0.4 * (3.125 - (cs_b + 0.04) * 1.2 / 3.6))
    # B costs more: its price (13.418 core-s x 0.2 = 2.68 per event) outweighs its failures
    # (1.43), efficiency (1.05) and network (0.04), against its faster CPUs (0.35)
    assert ab.main_reason == "price"
    # input at B, run at A: the path B -> A was never measured: no combined cost, no rank
    assert ba.transfer_seconds_per_event is None and ba.combined_cost_per_1000_events is None
    assert ba.candidate_rank is None and ba.main_reason is None
    assert ba.compute_cost_per_1000_events == pytest.approx(3.125)
    assert bb.candidate_rank == 1


def test_methods_show_the_worked_example(example) -> None:
    text = (REPO_ROOT / "jobs" / "gridlake" / "gold" / "README.md").read_text()
    section = text.split("## Cost functions", 1)[1].split("\n## ", 1)[0]
    rows = {r.site: r for r in example["gold.site_workflow_cost"]}
    for site, figures in README_FIGURES.items():
        for column, shown in figures.items():
            assert f"{getattr(rows[site], column):.3f}" == shown, (site, column)
            assert shown in section, (site, column, shown)
    assert "core_seconds_per_event = x / e x w" in section


def test_prices_are_versioned_and_missing_prices_stay_missing(spark) -> None:
    sites = rows_frame(spark, [("A",), ("B",), ("C",)], "site string")
    prices = cost.prices_frame(spark, tuple(EXAMPLE_PRICES))
    got = {r.site: (r.price_per_core_hour, r.price_version)
           for r in cost.resolve_prices(prices, sites).collect()}  # fmt: skip
    assert got == {"A": (1.0, 1), "B": (1.2, 2), "C": (1.0, 1)}
    # an operator's new default applies to every site without its own row
    newer = prices.unionByName(cost.prices_frame(spark, (cost.Price(3, "*", 0.9, "cheaper"),)))
    got = {r.site: r.price_per_core_hour for r in cost.resolve_prices(newer, sites).collect()}
    assert got == {"A": 0.9, "B": 1.2, "C": 0.9}
    # no default: a site without a price has no price (never free)
    only_b = cost.prices_frame(spark, (cost.Price(1, "B", 2.0, "b only"),))
    got = {r.site: r.price_per_core_hour for r in cost.resolve_prices(only_b, sites).collect()}
    assert got == {"A": None, "B": 2.0, "C": None}


def test_missing_evidence_gives_nulls_never_zeros(spark) -> None:
    # C runs an unknown CPU model (no speed factor): no cost; D's only job failed: no efficiency
    extra = [
        _job("c1", "C", "t1", "M9", "success", 1000, 800, 100, 1.0),
        _job("d1", "D", "t1", "M1", "failed", 1000, 500, None, 0.5),
    ]
    jobs = rows_frame(spark, EXAMPLE_JOBS + extra, JOBS_DDL)
    anomalies = [
        *EXAMPLE_ANOMALIES,
        ("reco", "C", "ALL", 1.0, 0.9, 1.1, 1),
        ("reco", "D", "ALL", 1.0, 0.9, 1.1, 1),
    ]
    rows = {
        r.site: r
        for r in cost.site_workflow_cost(
            jobs,
            rows_frame(spark, EXAMPLE_FACTORS, FACTORS_DDL),
            rows_frame(spark, anomalies, ANOMALIES_DDL),
            None,
            cost.prices_frame(spark),
        ).collect()
    }
    c, d = rows["C"], rows["D"]
    assert c.speed_coverage == 0.0 and c.cpu_mix_speed is None
    assert c.cost_per_1000_events is None and c.cost_rank is None and c.cost_low is None
    assert c.cpu_efficiency == pytest.approx(0.8)  # measured, but the cost needs the speed
    assert d.cpu_efficiency is None and d.waste_factor is None and d.events is None
    assert d.cost_per_1000_events is None and d.cost_rank is None
    # without node data the I/O term is unknown and its share stays in the efficiency term
    b = rows["B"]
    assert b.io_limit_term is None and b.efficiency_term == pytest.approx(X_B / 0.715 - X_B)
    assert b.core_seconds_per_event == pytest.approx(X_B / 0.715 * 1.25)
    assert {r.cost_rank for r in rows.values()} == {1, 2, None}


# --------------------------------------------------------------------------------------------
# The simulated grid against the planted true cost
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim_cost(spark, sim_grid, sim_jobs, sim_io_frames):
    """site_workflow_cost of the shared simulated grid, from its own speed factors, I/O
    profile and network cost matrix (computed here as gridlake analyze does)."""
    from gridlake.gold import io_signatures as io
    from gridlake.gold import network, speed_factors
    from gridlake.silver.files import silver_network_from_jsonl

    folder, truth = sim_grid
    # 9 bootstrap replicates (analyze runs 39): the intervals are not what is checked here
    speed = speed_factors.compute(
        sim_jobs, reference_model=truth["reference_cpu_model"], bootstrap=9
    )
    # the signatures as job_io_signature made them (once a session: conftest's sim_io_frames)
    profile = io.workflow_io_profile(spark.read.parquet(sim_io_frames["gold.job_io_signature"]))
    matrix = network.network_cost_matrix(
        silver_network_from_jsonl(spark, str(folder / "network.jsonl"))
    )
    out = cost.compute(
        sim_jobs,
        speed["gold.cpu_speed_factors"],
        speed["gold.site_speed_anomalies"],
        profile,
        matrix,
    )
    return truth, {name: df.collect() for name, df in out.items()}


def _true(truth: dict, site: str, job_type: str) -> float:
    return truth["true_cost"][site]["core_seconds_per_event"][job_type]


def test_site_ranking_matches_the_planted_true_cost(sim_cost) -> None:
    truth, tables = sim_cost
    rows = [r for r in tables["gold.site_workflow_cost"] if r.cost_per_1000_events is not None]
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r.job_type, r.week), []).append(r)
    assert len(groups) == 12  # six job types, two weeks
    agree = total = 0
    for (jt, _), rs in sorted(groups.items()):
        assert len(rs) == len(truth["sites"]), jt  # every site has a cost for every job type
        for a, b in itertools.combinations(rs, 2):
            planted = _true(truth, a.site, jt) - _true(truth, b.site, jt)
            measured = a.cost_per_1000_events - b.cost_per_1000_events
            total += 1
            agree += (planted > 0) == (measured > 0)
    print(f"\nsite pairs ranked as the planted true cost: {agree} / {total} = {agree / total:.3f}")
    assert total == 12 * 28
    assert agree / total >= 0.9
    # the scale too: every cost within 15 % of the planted one (price 1: core-seconds / 3.6)
    ratios = [r.core_seconds_per_event / _true(truth, r.site, r.job_type) for r in rows]
    print(f"measured / planted cost: {min(ratios):.3f} .. {max(ratios):.3f}")
    assert all(0.85 < q < 1.15 for q in ratios)


def test_slow_storage_site_last_for_io_heavy_job_types_only(sim_cost) -> None:
    truth, tables = sim_cost
    slow = truth["planted"]["slow_storage_site"]
    rows = tables["gold.site_workflow_cost"]
    weeks = sorted({r.week for r in rows})
    n_sites = len(truth["sites"])
    for jt, spec in truth["job_types"].items():
        planted_order = sorted(truth["sites"], key=lambda s: _true(truth, s, jt))
        # the planted truth itself: slow storage is the dearest site for every I/O-heavy type
        # (pile included: the memory-restricted site's swapping costs less), never for the others
        assert (planted_order[-1] == slow) == spec["io_heavy"], (jt, planted_order)
        for week in weeks:
            rank = {r.site: r.cost_rank for r in rows if r.job_type == jt and r.week == week}
            if spec["io_heavy"]:
                assert rank[slow] == n_sites, (jt, week, rank)
            else:
                assert rank[slow] < n_sites, (jt, week, rank)
    # the I/O term is where the slow storage site's extra cost shows
    for r in rows:
        if r.site == slow and truth["job_types"][r.job_type]["io_heavy"]:
            assert r.io_limit_term > 0.3 * r.core_seconds_per_event, (r.job_type, r.week)


def test_placement_moves_io_heavy_work_away_from_slow_storage(sim_cost) -> None:
    truth, tables = sim_cost
    slow = truth["planted"]["slow_storage_site"]
    adv = [r for r in tables["gold.placement_advice"] if r.data_site == slow]
    for jt in ("reprocessing", "merge"):
        for r in adv:
            if r.job_type != jt:
                continue
            if r.is_current:
                assert r.candidate_rank == len(truth["sites"]), (jt, r)
            elif r.candidate_rank == 1:
                assert r.gain_core_hours_per_week > 0 and r.main_reason == "io", (jt, r)
    # every path was measured on the simulated grid: every candidate has a combined cost
    assert all(r.combined_cost_per_1000_events is not None for r in tables["gold.placement_advice"])


# --------------------------------------------------------------------------------------------
# gridlake whatif
# --------------------------------------------------------------------------------------------

# Hand-built gold rows: simul at A (3600 events at 100 core-s each: 100 core-hours) and at B
# (7200 events at 60: 120 core-hours, price 2: 240), merge at A (36000 at 0.5: 5); a row of an
# older week (outside the last 4 weeks) that must be left out. Baseline: 100 + 240 + 5 = 345.
WHATIF_COSTS = [
    dict(week=date(2026, 11, 9), site="A", job_type="simul", events=3600,
         reference_cpu_seconds_per_event=50.0, cpu_mix_speed=1.0, site_slowdown=1.0,
         cpu_seconds_per_event=50.0, cpu_efficiency=0.5, waste_factor=1.0,
         core_seconds_per_event=100.0, price_per_core_hour=1.0, input_gb_per_event=0.1,
         mean_cores=8.0, core_hours=100.0),
    dict(week=date(2026, 11, 9), site="B", job_type="simul", events=7200,
         reference_cpu_seconds_per_event=50.0, cpu_mix_speed=2.0, site_slowdown=1.25,
         cpu_seconds_per_event=31.25, cpu_efficiency=0.625, waste_factor=1.2,
         core_seconds_per_event=60.0, price_per_core_hour=2.0, input_gb_per_event=0.1,
         mean_cores=8.0, core_hours=120.0),
    dict(week=date(2026, 11, 2), site="A", job_type="merge", events=36000,
         reference_cpu_seconds_per_event=0.4, cpu_mix_speed=1.0, site_slowdown=1.0,
         cpu_seconds_per_event=0.4, cpu_efficiency=0.8, waste_factor=1.0,
         core_seconds_per_event=0.5, price_per_core_hour=1.0, input_gb_per_event=0.01,
         mean_cores=1.0, core_hours=5.0),
    dict(week=date(2026, 9, 28), site="A", job_type="simul", events=3600,
         reference_cpu_seconds_per_event=50.0, cpu_mix_speed=1.0, site_slowdown=1.0,
         cpu_seconds_per_event=50.0, cpu_efficiency=0.5, waste_factor=1.0,
         core_seconds_per_event=100.0, price_per_core_hour=1.0, core_hours=100.0),
    # work without a cost (no speed factor): counted apart, never as free
    dict(week=date(2026, 11, 9), site="C", job_type="simul", events=100, core_hours=7.5),
]  # fmt: skip
WHATIF_FACTORS = [
    dict(job_type="simul", cpu_model="M1", speed_factor=1.0, group_id=1, reference_model="M1"),
    dict(job_type="simul", cpu_model="X", speed_factor=2.5, group_id=1, reference_model="M1"),
]
WHATIF_ADVICE = [
    dict(job_type="simul", current_useful_fraction=0.75, expected_useful_fraction=0.9),
]
SCENARIO_1 = """
name: B buys X, simulation at the advised length
changes:
  - replace_cpus: {site: B, cpu_model: X}
  - job_length: {job_type: simul}
"""
# B: 60 x 2.0 / 2.5 = 48 core-s -> 96 core-hours x 2 = 192; then simul x 0.75 / 0.9 = 5/6:
# A 100 -> 83.333, B 192 -> 160; merge 5. Total 248.333.
SCENARIO_1_TOTAL = 100 * 5 / 6 + 192 * 5 / 6 + 5
SCENARIO_2 = """
name: half of simulation to a cloud
changes:
  - cloud_site:
      name: CLOUD
      price_per_core_hour: 0.5
      cpu_model: X
      network:
        cost_seconds_per_gb: {A: 5.0, B: 10.0}
      move: {job_types: [simul], share: 0.5}
"""
# Cloud simul: x = 50 / 2.5 = 20; e = sum(ev x) / sum(ev x / e) = (3600 x 50 + 7200 x 31.25) /
# (3600 x 100 + 7200 x 50) = 405000 / 720000 = 0.5625; w = (360000 x 1 + 360000 x 1.2) /
# 720000 = 1.1; compute 20 / 0.5625 x 1.1 = 352/9 core-s; network 0.1 GB x 5 s x 8 cores = 4
# from A, 0.1 x 10 x 8 = 8 from B. Staying: A 50, B 120; moved: 1800 x (352/9 + 4) / 3600 x 0.5
# = 97/9 and 3600 x (352/9 + 8) / 3600 x 0.5 = 212/9; merge 5.
SCENARIO_2_TOTAL = 50 + 120 + 97 / 9 + 212 / 9 + 5


def _conformed(spark, table, rows):
    schema = ", ".join(f"`{c.name}` {c.ddl_type}" for c in table.columns)
    data = [
        tuple(
            float(d[c.name]) if c.ddl_type == "DOUBLE" and d.get(c.name) is not None
            else d.get(c.name)
            for c in table.columns
        )
        for d in rows
    ]  # fmt: skip
    return rows_frame(spark, data, schema)


@pytest.fixture(scope="module")
def whatif_tables(spark):
    return (
        _conformed(spark, GOLD_SITE_WORKFLOW_COST, WHATIF_COSTS),
        _conformed(spark, GOLD_CPU_SPEED_FACTORS, WHATIF_FACTORS),
        _conformed(spark, GOLD_JOB_LENGTH_ADVICE, WHATIF_ADVICE),
    )


@pytest.mark.parametrize(
    ("text", "total", "simul"),
    [
        (SCENARIO_1, SCENARIO_1_TOTAL, (340.0, 292 * 5 / 6)),
        (SCENARIO_2, SCENARIO_2_TOTAL, (340.0, 170 + 309 / 9)),
    ],
    ids=["replace-cpus-and-job-length", "cloud-site"],
)
def test_whatif_hand_computed_totals(whatif_tables, text, total, simul) -> None:
    import yaml

    costs, factors, advice = whatif_tables
    result = whatif(costs, parse_scenario(yaml.safe_load(text)), factors, advice, weeks=4)
    assert result.weeks == (date(2026, 10, 19), date(2026, 10, 26), date(2026, 11, 2),
                            date(2026, 11, 9))  # fmt: skip
    assert result.rows == 3 and result.events == 3600 + 7200 + 36000
    assert result.baseline_total == pytest.approx(345.0)
    assert result.scenario_total == pytest.approx(total)
    assert result.change == pytest.approx(total - 345.0)
    assert result.uncosted_core_hours == pytest.approx(7.5)
    assert result.by_job_type["simul"] == pytest.approx(simul)
    assert result.by_job_type["merge"] == pytest.approx((5.0, 5.0))


def test_whatif_scenario_errors_are_clear(whatif_tables, tmp_path) -> None:
    import yaml

    costs, factors, advice = whatif_tables
    bad = {
        "changes: []": "non-empty list",
        "changes: [{replace_cpus: {site: B}}]": "missing 'cpu_model'",
        "changes: [{teleport: {site: B}}]": "unknown change",
        "changes: [{price: {site: B, price_per_core_hour: -1}}]": "outside",
        "changes: [{cloud_site: {name: C, price_per_core_hour: 1, cpu_model: X, "
        "move: {share: 2}}}]": "outside",
    }
    for text, message in bad.items():
        with pytest.raises(ValueError, match=message):
            parse_scenario(yaml.safe_load(text))
    with pytest.raises(ValueError, match="no speed factor of 'Y'"):
        whatif(costs, parse_scenario({"changes": [{"replace_cpus": {"site": "B",
               "cpu_model": "Y"}}]}), factors, advice)  # fmt: skip
    no_net = {"changes": [{"cloud_site": {"name": "C", "price_per_core_hour": 1,
              "cpu_model": "X", "network": {"cost_seconds_per_gb": {"A": 1}},
              "move": {"share": 0.5, "job_types": ["simul"]}}}]}  # fmt: skip
    with pytest.raises(ValueError, match=r"no network figure from \['B'\]"):
        whatif(costs, parse_scenario(no_net), factors, advice)
    path = tmp_path / "bad.yaml"
    path.write_text("changes: [unclosed")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_scenario(path)


def _tree(root) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def test_whatif_cli_reads_the_warehouse_and_never_writes(spark, whatif_tables, tmp_path) -> None:
    root = tmp_path / "warehouse"
    for df, table in zip(
        whatif_tables,
        (GOLD_SITE_WORKFLOW_COST, GOLD_CPU_SPEED_FACTORS, GOLD_JOB_LENGTH_ADVICE),
        strict=True,
    ):
        df.write.format("delta").save(str(root / "gold" / table.name))
    before = _tree(root)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO_1)
    exe = REPO_ROOT / ".gridlake" / "venv" / "bin" / "gridlake"
    env = {**os.environ, "GRIDLAKE_STORAGE_ROOT": str(root)}
    out = subprocess.run([str(exe), "whatif", str(scenario)], capture_output=True, text=True,
                         env=env, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "baseline total: 345.000" in out.stdout
    assert f"scenario total: {SCENARIO_1_TOTAL:.3f}" in out.stdout
    assert f"change: {SCENARIO_1_TOTAL - 345:+.3f}" in out.stdout
    assert _tree(root) == before  # nothing written, not even a Delta log entry
    # a warehouse without the cost table: a clear error, exit 2
    empty = tmp_path / "empty"
    empty.mkdir()
    out = subprocess.run([str(exe), "whatif", str(scenario)], capture_output=True, text=True,
                         env={**env, "GRIDLAKE_STORAGE_ROOT": str(empty)}, timeout=600)  # fmt: skip
    assert out.returncode == 2 and "gold.site_workflow_cost not found" in out.stderr
    assert not any(empty.iterdir())


def test_job_type_without_its_own_fit_takes_the_all_fit(spark) -> None:
    # "gen" has no fit of its own: the ALL fit (same reference M1) gives its factors and site
    # terms; B's node runs M2 only (1.25x) and is 1.1x slow, A's M1 at a typical speed
    gen = [("g1", None, "success", False, "t9", WEEK, "A", "gen", "M1", 1, 100.0, 100.0, 80.0,
            10, None),
           ("g2", None, "success", False, "t9", WEEK, "B", "gen", "M2", 1, 100.0, 100.0, 70.4,
            10, None)]  # fmt: skip
    factors = [
        *EXAMPLE_FACTORS,
        ("ALL", "M1", 1.0, 1.0, 1.0, 1, "M1"),
        ("ALL", "M2", 1.25, 1.2, 1.3, 1, "M1"),
    ]
    anomalies = [
        *EXAMPLE_ANOMALIES,
        ("ALL", "A", "ALL", 1.0, 0.98, 1.02, 5),
        ("ALL", "B", "ALL", 1.1, 1.05, 1.15, 4),
    ]
    rows = {
        (r.site, r.job_type): r
        for r in cost.site_workflow_cost(
            rows_frame(spark, EXAMPLE_JOBS + gen, JOBS_DDL),
            rows_frame(spark, factors, FACTORS_DDL),
            rows_frame(spark, anomalies, ANOMALIES_DDL),
            None,
            cost.prices_frame(spark),
        ).collect()
    }
    a, b = rows[("A", "gen")], rows[("B", "gen")]
    # r = (80 x 1 / 1 + 70.4 x 1.25 / 1.1) / 20 = 8; B's mix this week: its reco and gen jobs
    assert a.reference_cpu_seconds_per_event == pytest.approx(8.0)
    assert a.cpu_mix_speed == pytest.approx(1.0) and a.site_slowdown == pytest.approx(1.0)
    assert b.cpu_mix_speed == pytest.approx((1600 + 2500 * 1.25) / 4100)
    assert b.site_slowdown == pytest.approx(1.1)
    assert a.core_seconds_per_event == pytest.approx(8.0 / 0.8)
    assert rows[("B", "reco")].cost_per_1000_events is not None
