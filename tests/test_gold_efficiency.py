"""Gold transforms of the job-efficiency analysis on small hand-made silver.jobs frames.

Expected values are worked out by hand (or by an independent computation written in the test:
a bisection on the first-order condition, the quadratic of the Wilson score test), never taken
from the code under test.
"""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta
from itertools import pairwise

import pytest

from gridlake.gold import site_efficiency
from gridlake.gold.efficiency import (
    DEFAULT_OUTLIER_RULES,
    DURATION_BIN_EDGES_SECONDS,
    TABLES,
    AmdahlPoint,
    OutlierRule,
    amdahl_fit,
    compute,
    cpu_model_efficiency,
    efficiency_outliers,
    failure_vs_duration,
    job_length_advice,
    memory_per_thread_fit,
    multicore_fit,
    multicore_scaling,
    optimal_job_length,
    outlier_metrics,
    outlier_rules_frame,
    two_way_effects,
    useful_fraction,
    wilson_interval,
)
from gridlake.gold.site_efficiency import (
    GOLD_SITE_EFFICIENCY_WEEKLY,
    GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY,
    site_efficiency_weekly,
    site_jobtype_efficiency_weekly,
)
from gridlake.spark import rows_frame

# The silver.jobs columns the gold transforms read, in tuple order.
JOB_COLUMNS = (
    ("job_id", "string"),
    ("retry_of", "string"),
    ("vo", "string"),
    ("site", "string"),
    ("task_id", "string"),
    ("job_type", "string"),
    ("cpu_model", "string"),
    ("cpu_model_norm", "string"),
    ("microarchitecture", "string"),
    ("cores", "bigint"),
    ("end_time", "timestamp"),
    ("week", "date"),
    ("wall_seconds", "double"),
    ("cpu_seconds", "double"),
    ("cores_wall_seconds", "double"),
    ("events", "bigint"),
    ("max_rss_mb", "double"),
    ("status", "string"),
    ("failure_mode", "string"),
    ("is_outlier", "boolean"),
    ("hs23_per_core", "double"),
    ("hs23_core_hours", "double"),
    ("source_format", "string"),
    ("exit_code", "bigint"),
)
JOBS_DDL = ", ".join(f"{name} {ddl}" for name, ddl in JOB_COLUMNS)
END = datetime(2026, 11, 18, 12, 0)


def job(
    job_id: str,
    *,
    site: str = "A",
    vo: str = "atlas",
    job_type: str = "simul",
    task_id: str | None = "t1",
    cpu_model: str = "M",
    micro: str = "Haswell",
    cores: int = 1,
    wall: float = 3600.0,
    cpu: float | None = None,
    eff: float = 0.8,
    events: int | None = None,
    status: str = "success",
    failure_mode: str | None = None,
    retry_of: str | None = None,
    end: datetime = END,
    hs23: float | None = 10.0,
    rss: float | None = 1000.0,
) -> tuple:
    """One silver.jobs row as a tuple in JOB_COLUMNS order, derived columns filled in."""
    cpu = eff * wall * cores if cpu is None else cpu
    cw = wall * cores
    week = end.date() - timedelta(days=end.weekday())
    return (
        job_id,
        retry_of,
        vo,
        site,
        task_id,
        job_type,
        cpu_model,
        cpu_model,
        micro,
        cores,
        end,
        week,
        float(wall),
        float(cpu),
        float(cw),
        events,
        None if rss is None else float(rss),
        status,
        failure_mode,
        cpu > cw * 1.05,
        None if hs23 is None else float(hs23),
        None if hs23 is None else hs23 * cw / 3600.0,
        "canonical",
        0 if status == "success" else None,
    )


def jobs_df(spark, rows):
    return rows_frame(spark, rows, JOBS_DDL)


# --------------------------------------------------------------------------------------------
# gold.site_efficiency_weekly / site_jobtype_efficiency_weekly: new measures
# --------------------------------------------------------------------------------------------


def test_site_measures_events_badput_and_retry_waste(spark) -> None:
    next_week = END + timedelta(days=7)
    rows = [
        # simul: a success, a memory failure retried by a success, a success without events/HS23
        job("j1", cores=8, wall=3600, eff=0.9, events=100),
        job("j2", cores=8, wall=1800, eff=0.5, status="failed", failure_mode="memory"),
        job("j3", cores=8, wall=3600, eff=0.7, events=200, retry_of="j2"),
        job("j7", cores=1, wall=7200, eff=0.8, events=None, hs23=None),
        # pile: stage-in failure, retried, failed again (app-crash), retried next week at site B
        job("j4", job_type="pile", cores=8, wall=600, eff=0.05, status="failed",
            failure_mode="stage-in"),
        job("j5", job_type="pile", cores=8, wall=7200, eff=0.6, status="failed",
            failure_mode="app-crash", retry_of="j4"),
        job("j6", job_type="pile", site="B", cores=8, wall=3600, eff=0.6, events=0,
            retry_of="j5", end=next_week),
        # a failure nobody retried: badput, not retry waste
        job("j8", job_type="pile", cores=1, wall=3600, eff=0.3, status="failed",
            failure_mode="lost-heartbeat"),
    ]  # fmt: skip
    jobs = jobs_df(spark, rows)
    week = date(2026, 11, 16)

    out = {
        (r.site, r.week): r
        for r in GOLD_SITE_EFFICIENCY_WEEKLY.conform(site_efficiency_weekly(jobs)).collect()
    }
    a = out[("A", week)]
    assert a.jobs == 7 and a.failed_jobs == 4
    # core-hours: j1 8, j2 4, j3 8, j7 2, j4 8/6, j5 16, j8 1
    core_h = 8 + 4 + 8 + 2 + 8 / 6 + 16 + 1
    cpu_h = 0.9 * 8 + 0.5 * 4 + 0.7 * 8 + 0.8 * 2 + 0.05 * 8 / 6 + 0.6 * 16 + 0.3 * 1
    assert a.core_hours == pytest.approx(core_h)
    assert a.cpu_efficiency == pytest.approx(cpu_h / core_h)  # ratio of sums
    assert a.events == 300  # j1 + j3; j7 has none; failures never count
    assert a.core_seconds_per_event == pytest.approx((28800 + 28800) / 300)
    assert a.badput_core_hours == pytest.approx(4 + 8 / 6 + 16 + 1)
    assert a.wasted_core_hours == pytest.approx(a.badput_core_hours)
    assert a.retry_waste_core_hours == pytest.approx(4 + 8 / 6 + 16)  # j2, j4, j5 (not j8)
    assert a.hs23_core_hours == pytest.approx(10 * (core_h - 2))  # j7 has no HS23

    b = out[("B", week + timedelta(days=7))]
    assert b.events == 0  # a success with 0 events
    assert b.core_seconds_per_event is None
    assert b.retry_waste_core_hours == 0.0

    by_type = {
        (r.site, r.job_type): r
        for r in GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY.conform(
            site_jobtype_efficiency_weekly(jobs)
        ).collect()
    }
    assert set(by_type) == {("A", "simul"), ("A", "pile"), ("B", "pile")}
    simul, pile = by_type[("A", "simul")], by_type[("A", "pile")]
    assert simul.jobs == 4 and pile.jobs == 3
    assert simul.cpu_efficiency == pytest.approx((7.2 + 2 + 5.6 + 1.6) / 22)
    assert simul.retry_waste_core_hours == pytest.approx(4.0)
    assert pile.retry_waste_core_hours == pytest.approx(8 / 6 + 16)
    assert pile.badput_core_hours == pytest.approx(8 / 6 + 16 + 1)
    assert pile.events is None  # no successful pile attempt at A

    # the group's compute: the three tables rolled up from one set of attempt cells (and the
    # causes from the same cells) give the hand-computed values too
    frames = site_efficiency.compute(jobs)
    assert set(frames) == {t.full_name for t in site_efficiency.TABLES}
    for table in site_efficiency.TABLES:
        assert frames[table.full_name].columns == table.column_names
    assert frames[GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY.full_name].count() == 3
    grouped = {(r.site, r.week): r for r in frames[GOLD_SITE_EFFICIENCY_WEEKLY.full_name].collect()}
    assert set(grouped) == set(out)
    for key, row in out.items():
        for name, value in row.asDict().items():
            want = pytest.approx(value, rel=1e-12) if isinstance(value, float) else value
            assert grouped[key][name] == want, (key, name)
    assert grouped[("A", week)].retry_waste_core_hours == pytest.approx(4 + 8 / 6 + 16)
    typed = {
        (r.site, r.job_type): r
        for r in frames[GOLD_SITE_JOBTYPE_EFFICIENCY_WEEKLY.full_name].collect()
    }
    assert typed[("A", "pile")].badput_core_hours == pytest.approx(8 / 6 + 16 + 1)
    assert typed[("A", "pile")].events is None
    assert typed[("A", "simul")].retry_waste_core_hours == pytest.approx(4.0)
    modes = {
        (r.site, r.job_type, r.failure_mode): (r.failed_jobs, r.retried_jobs, r.attempts)
        for r in frames["gold.site_failure_modes_weekly"].collect()
    }
    assert modes == {
        ("A", "simul", "memory"): (1, 1, 4),  # j2, retried by j3
        ("A", "pile", "stage-in"): (1, 1, 3),  # j4, retried by j5
        ("A", "pile", "app-crash"): (1, 1, 3),  # j5, retried by j6 the next week
        ("A", "pile", "lost-heartbeat"): (1, 0, 3),  # j8
    }
    causes = {
        r.cause: (r.jobs, r.badput_core_hours)
        for r in frames["gold.failure_causes_weekly"].where("site = 'A'").collect()
    }
    assert causes == {
        "success": (3, 0.0),
        "memory_exceeded": (1, pytest.approx(4.0)),  # j2
        "input_read_failure": (1, pytest.approx(8 / 6)),  # j4: stage-in
        "application_error": (1, pytest.approx(16.0)),  # j5: app-crash
        "node_or_infrastructure": (1, pytest.approx(1.0)),  # j8: lost heartbeat
    }


# --------------------------------------------------------------------------------------------
# Wilson interval and gold.failure_vs_duration
# --------------------------------------------------------------------------------------------


def test_wilson_interval_textbook_values() -> None:
    # 3 of 10, 95%: the Wilson score interval is 0.1078 to 0.6032 (roots of the score test
    # (p_hat - p)^2 = z^2 p (1 - p) / n).
    low, high = wilson_interval(3, 10)
    assert low == pytest.approx(0.107789, abs=1e-6)
    assert high == pytest.approx(0.603227, abs=1e-6)
    # 0 of 10: lower end 0, upper z^2/(n + z^2) = 3.8416 / 13.8416
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.277540), abs=1e-6)
    assert wilson_interval(10, 10) == pytest.approx((1 - 0.277540, 1.0), abs=1e-6)


def test_duration_bins_are_log_spaced_from_10_min_to_96_h() -> None:
    edges = DURATION_BIN_EDGES_SECONDS
    assert edges[0] == 600 and edges[-1] == 96 * 3600
    ratios = [b / a for a, b in pairwise(edges)]
    assert max(ratios) / min(ratios) == pytest.approx(1.0, abs=1e-3)
    assert edges[3:5] == (2939, 4992)


def test_failure_vs_duration_counts_wilson_and_hazard(spark) -> None:
    rows = [
        # bin 4 = [2939 s, 4992 s): ten 1-hour attempts, 3 failures (2 app-crash, 1 memory)
        *(job(f"ok{i}", cores=2, wall=3600) for i in range(7)),
        job("c1", cores=2, wall=3600, status="failed", failure_mode="app-crash"),
        job("c2", cores=2, wall=3600, status="failed", failure_mode="app-crash"),
        job("m1", cores=2, wall=3600, status="failed", failure_mode="memory"),
        # bin 0 (< 10 min): one stage-in failure, one success
        job("s1", cores=2, wall=300, status="failed", failure_mode="stage-in"),
        job("s2", cores=2, wall=300),
        # last bin (>= 96 h): one 100-hour success
        job("long", cores=2, wall=100 * 3600),
        # another job type, untouched by the above
        job("other", job_type="merge", wall=3600, status="failed", failure_mode=None),
    ]
    out = {
        (r.job_type, r.failure_mode, r.bin_index): r
        for r in failure_vs_duration(jobs_df(spark, rows)).collect()
    }
    modes = {"ALL", "app-crash", "memory", "stage-in"}
    assert {k for k in out if k[0] == "simul"} == {
        ("simul", m, b) for m in modes for b in (0, 4, 13)
    }
    assert {k for k in out if k[0] == "merge"} == {("merge", "ALL", 4), ("merge", "unknown", 4)}

    # exposure in bin 4: ten attempts x (3600 - 2939) s + the 100 h one x (4992 - 2939) s
    exposure_4 = (10 * 661 + 2053) / 3600
    all4 = out[("simul", "ALL", 4)]
    assert (all4.attempts, all4.failures) == (10, 3)
    assert all4.failure_probability == pytest.approx(0.3)
    assert all4.wilson_low == pytest.approx(0.107789, abs=1e-6)
    assert all4.wilson_high == pytest.approx(0.603227, abs=1e-6)
    assert all4.exposure_wall_hours == pytest.approx(exposure_4)
    assert all4.hazard_per_hour == pytest.approx(3 / exposure_4)
    assert all4.wasted_core_hours == pytest.approx(3 * 2.0)
    assert all4.bin_low_hours == pytest.approx(2939 / 3600)
    assert all4.bin_high_hours == pytest.approx(4992 / 3600)
    crash4 = out[("simul", "app-crash", 4)]
    assert (crash4.attempts, crash4.failures) == (10, 2)
    assert crash4.hazard_per_hour == pytest.approx(2 / exposure_4)

    # bin 0: exposure = 2 x 300 s + 11 attempts x 600 s = 2 h; the stage-in hazard is 1 / 2 h
    stage0 = out[("simul", "stage-in", 0)]
    assert (stage0.attempts, stage0.failures) == (2, 1)
    assert stage0.exposure_wall_hours == pytest.approx(2.0)
    assert stage0.hazard_per_hour == pytest.approx(0.5)
    assert stage0.duration_bin == "<10m" and stage0.bin_low_hours == 0.0
    mem0 = out[("simul", "memory", 0)]
    assert (mem0.failures, mem0.failure_probability, mem0.wilson_low) == (0, 0.0, 0.0)
    assert mem0.wilson_high == pytest.approx(3.8416 / (2 + 3.8416))
    assert mem0.wasted_core_hours == 0.0

    last = out[("simul", "ALL", 13)]
    assert last.bin_high_hours is None and last.duration_bin == ">=96h"
    assert last.attempts == 1 and last.failures == 0
    assert last.exposure_wall_hours == pytest.approx(4.0)  # 100 h - 96 h


# --------------------------------------------------------------------------------------------
# Job length
# --------------------------------------------------------------------------------------------


def _foc_root(init_h: float, h: float) -> float:
    """Independent reference: dU/dT = 0 <=> h T = 1 - exp(-h (I + T)), solved by bisection."""
    lo, hi = 1e-6, 1e4
    for _ in range(200):
        mid = (lo + hi) / 2
        if h * mid - (1 - math.exp(-h * (init_h + mid))) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _u(t: float, init_h: float, h: float) -> float:
    """The stated model, written out: T exp(-h(I+T)) / E[wall], E[wall] = (1-exp(-h(I+T)))/h."""
    return t * math.exp(-h * (init_h + t)) / ((1 - math.exp(-h * (init_h + t))) / h)


def test_optimal_job_length_against_first_order_condition_and_sqrt_rule() -> None:
    init_h, h = 600 / 3600, 0.01
    t_opt = optimal_job_length(init_h, h)
    assert t_opt == pytest.approx(5.662930, rel=1e-6)  # bisection on the FOC (run by hand)
    assert t_opt == pytest.approx(_foc_root(init_h, h), rel=1e-6)
    approx = math.sqrt(2 * init_h / h)  # small-h approximation: 5.7735 h
    assert approx == pytest.approx(5.773503, rel=1e-6)
    assert t_opt < approx < t_opt * 1.03  # the next-order term shortens the optimum by ~2%
    assert useful_fraction(t_opt, init_h, h) == pytest.approx(0.943371, rel=1e-5)
    assert useful_fraction(t_opt, init_h, h) > max(
        useful_fraction(t_opt * 0.8, init_h, h), useful_fraction(t_opt * 1.25, init_h, h)
    )
    # the approximation becomes exact as h -> 0
    t_small = optimal_job_length(init_h, 1e-5)
    assert t_small == pytest.approx(math.sqrt(2 * init_h / 1e-5), rel=2e-3)
    # no failures: U = T / (I + T), the longest job allowed wins
    assert useful_fraction(2.0, 1.0, 0.0) == pytest.approx(2 / 3)
    assert optimal_job_length(init_h, 0.0) == pytest.approx(200.0)


def test_job_length_advice_estimates_init_and_hazard(spark) -> None:
    day0 = datetime(2026, 11, 16)
    rows = [
        # task A on model M: wall = 600 + 30 x events exactly -> intercept 600 s
        *(job(f"a{e}", task_id="A", wall=600 + 30 * e, events=e, end=day0 + timedelta(minutes=e))
          for e in range(100, 800, 100)),
        # task B: wall = 1200 + 60 x events, 3 jobs -> intercept 1200 s
        *(job(f"b{e}", task_id="B", wall=1200 + 60 * e, events=e, end=day0 + timedelta(hours=1))
          for e in (100, 200, 300)),
        # task C: intercept 5000 s but only 2 jobs: excluded (n >= 3)
        *(job(f"c{e}", task_id="C", wall=5000 + 10 * e, events=e, end=day0 + timedelta(days=1))
          for e in (100, 200)),
        # task E: 5 jobs with the same events: var(x) = 0, excluded
        *(job(f"e{i}", task_id="E", wall=8000, events=300, end=day0 + timedelta(days=2))
          for i in range(5)),
        # failures: two app-crash (duration-dependent), one stage-in (at the start)
        *(job(f"f{i}", task_id="F", wall=9000 + i, events=None, status="failed",
              failure_mode="app-crash" if i < 2 else "stage-in",
              end=day0 + timedelta(days=7 if i == 0 else 0))
          for i in range(3)),
    ]  # fmt: skip
    out = {r.job_type: r for r in job_length_advice(jobs_df(spark, rows)).collect()}
    r = out["simul"]
    assert r.n_jobs == 7 + 3 + 2 + 5 + 3
    assert r.n_init_groups == 2
    # weights: information on the intercept, n - (sum x)^2 / sum x^2, / (task mean wall)^2
    w_a = (7 - 2800**2 / 1_400_000) / 12_600**2  # A: sum x 2800, sum x^2 1.4e6, mean wall 12600
    w_b = (3 - 600**2 / 140_000) / 13_200**2  # B: sum x 600, sum x^2 1.4e5, mean wall 13200
    init = (600 * w_a + 1200 * w_b) / (w_a + w_b)
    assert r.init_seconds == pytest.approx(init)
    assert 700 < init < 750  # A (more jobs, wider range of events) counts 3.6 times B
    # hazard: 2 non-start failures / wall-hours of every attempt (stage-in included)
    wall = sum(600 + 30 * e for e in range(100, 800, 100)) + 7200 + 13200 + 19200
    wall += 6000 + 7000 + 5 * 8000 + 9000 + 9001 + 9002
    h = 2 / (wall / 3600)
    assert r.hazard_failures == 2
    assert r.hazard_per_hour == pytest.approx(h)
    init_h = init / 3600
    t_opt = _foc_root(init_h, h)
    assert r.optimal_hours == pytest.approx(t_opt, rel=1e-6)
    assert r.expected_useful_fraction == pytest.approx(_u(t_opt, init_h, h), rel=1e-6)
    # 17 successful walls: 3600..21600 step 3000 (A), 7200, 13200, 19200 (B), 6000, 7000 (C)
    # and 5 x 8000 (E): the 9th is 8000, as the state keeps it (rounded on the log scale)
    from gridlake.gold.efficiency.state import LOG_STEP

    median = math.exp(round(math.log(8000) / LOG_STEP) * LOG_STEP)
    assert abs(median / 8000 - 1) <= LOG_STEP / 2
    current = (median - init) / 3600
    assert r.current_median_hours == pytest.approx(current)
    assert r.current_useful_fraction == pytest.approx(_u(current, init_h, h), rel=1e-9)
    # end_time spans exactly 7 days; every job has 1 core
    per_year = (wall / 3600) * 365 / 7
    assert r.core_hours_per_year == pytest.approx(per_year)
    assert r.core_hours_saved_per_year == pytest.approx(
        per_year * (1 - _u(current, init_h, h) / _u(t_opt, init_h, h)), rel=1e-6
    )


# --------------------------------------------------------------------------------------------
# Multicore scaling and the Amdahl fit
# --------------------------------------------------------------------------------------------


def _amdahl_eff(e1: float, s: float, n: int) -> float:
    return e1 / (1 + s * (n - 1))


@pytest.mark.parametrize(("s", "below_90"), [(0.008, 15), (0.05, 4)])
def test_amdahl_fit_recovers_serial_fraction_from_exact_points(s: float, below_90: int) -> None:
    # smallest n with 1/(1 + s(n-1)) < 0.9: s = 0.008 -> n = 15 (14: 0.9058, 15: 0.8993);
    # s = 0.05 -> n = 4 (3: 0.909, 4: 0.870)
    points = [AmdahlPoint(n, _amdahl_eff(0.9, s, n), w, 0.0)
              for n, w in ((1, 50.0), (2, 3.0), (4, 20.0), (8, 400.0), (16, 7.0))]  # fmt: skip
    fit = amdahl_fit(points)
    assert fit.serial_fraction == pytest.approx(s, abs=1e-12)
    assert fit.e1 == pytest.approx(0.9, abs=1e-12)
    assert fit.cores_below_90pct == below_90
    assert fit.n_core_counts == 5
    assert fit.serial_fraction_se == pytest.approx(0.0, abs=1e-12)
    assert amdahl_fit([(8, 0.8, 1.0)]).serial_fraction is None  # one core count: no fit


def test_multicore_fit_in_spark_recovers_serial_fraction(spark) -> None:
    rows = []
    for job_type, s, e1 in (("reco", 0.008, 0.85), ("sim", 0.05, 0.95)):
        for n in (1, 4, 8):
            for t in range(3):
                for k in range(2):
                    rows.append(
                        job(f"{job_type}-{n}-{t}-{k}", job_type=job_type, task_id=f"{job_type}{t}",
                            cores=n, wall=1800.0 * (1 + t + k), eff=_amdahl_eff(e1, s, n))
                    )  # fmt: skip
    out = {r.job_type: r for r in multicore_fit(jobs_df(spark, rows)).collect()}
    assert out["reco"].serial_fraction == pytest.approx(0.008, abs=1e-9)
    assert out["reco"].e1 == pytest.approx(0.85, abs=1e-9)
    assert out["reco"].cores_below_90pct == 15
    assert out["sim"].serial_fraction == pytest.approx(0.05, abs=1e-9)
    assert out["sim"].cores_below_90pct == 4
    assert out["sim"].n_core_counts == 3
    # exact points: zero up to the round-off of the one-pass sums of squares
    assert out["sim"].serial_fraction_se == pytest.approx(0.0, abs=1e-6)


def test_multicore_fit_compares_core_counts_within_a_site(spark) -> None:
    # Same software (s = 0.02) at a fast site running mostly 1-core jobs and a slow site (half
    # the efficiency: slow storage) running mostly 8-core jobs. Pooling the core counts over
    # sites mistakes the slow site for serial fraction; comparing within sites does not.
    s = 0.02
    plan = {"FAST": (0.9, {1: 40, 8: 4}), "SLOW": (0.45, {1: 4, 8: 40})}  # e1, jobs per core count
    rows = [
        job(f"{site}-{n}-{i}", site=site, task_id=f"{site}-{n}-{i % 4}", cores=n, wall=3600.0,
            eff=_amdahl_eff(e1, s, n))
        for site, (e1, mix) in plan.items()
        for n, k in mix.items()
        for i in range(k)
    ]  # fmt: skip
    pooled_eff = {  # ratio of sums over both sites (equal wall per job)
        n: sum(_amdahl_eff(e1, s, n) * mix[n] for e1, mix in plan.values())
        / sum(mix[n] for _, mix in plan.values())
        for n in (1, 8)
    }
    pooled = amdahl_fit([AmdahlPoint(n, e, 1.0) for n, e in pooled_eff.items()])
    assert pooled.serial_fraction > 2 * s  # the confounded answer
    (r,) = multicore_fit(jobs_df(spark, rows)).collect()
    assert r.serial_fraction == pytest.approx(s, rel=1e-9)
    assert r.e1 == pytest.approx((0.9 * (40 + 32) + 0.45 * (4 + 320)) / (72 + 324), rel=1e-9)
    assert r.n_core_counts == 2


def test_multicore_fit_standard_error_from_task_clusters(spark) -> None:
    # Two tasks per core count whose efficiencies differ: the variance of each point's 1/eff is
    # the ratio-estimator variance over tasks, worked out here from the task sums.
    plan = {1: [(0.95, 10.0), (0.85, 30.0)], 8: [(0.90, 80.0), (0.80, 40.0)]}  # (eff, core-h)
    rows = [
        job(f"j{n}-{i}", task_id=f"t{n}-{i}", cores=n, wall=ch * 3600 / n, eff=eff)
        for n, tasks in plan.items()
        for i, (eff, ch) in enumerate(tasks)
    ]
    points = []
    for n, tasks in plan.items():
        c = [eff * ch for eff, ch in tasks]  # CPU hours per task
        w = [ch for _, ch in tasks]
        y = sum(w) / sum(c)
        var_y = 2 / (2 - 1) * sum((wi - y * ci) ** 2 for wi, ci in zip(w, c, strict=True))
        var_y /= sum(c) ** 2
        points.append(AmdahlPoint(n, 1 / y, sum(w), var_y))
    ref = amdahl_fit(points)
    assert ref.serial_fraction_se is not None and ref.serial_fraction_se > 0
    (r,) = multicore_fit(jobs_df(spark, rows)).collect()
    assert r.serial_fraction == pytest.approx(ref.serial_fraction, rel=1e-9)
    assert r.serial_fraction_se == pytest.approx(ref.serial_fraction_se, rel=1e-6)
    # the 1-core point: 1/eff = 40 / (9.5 + 25.5), the 8-core point: 120 / (72 + 32); two
    # points: a = 40/35, b = (120/104 - 40/35) / 7, s = b / a
    a = 40 / 35
    assert r.serial_fraction == pytest.approx((120 / 104 - a) / 7 / a, rel=1e-9)


def test_multicore_scaling_measures(spark) -> None:
    rows = [
        job("a", job_type="pile", task_id="p1", cores=4, wall=3600, eff=0.9, events=40, rss=4000),
        job("b", job_type="pile", task_id="p1", cores=4, wall=3 * 3600, eff=0.5, events=200,
            rss=6000),
        job("c", job_type="pile", task_id="p2", cores=4, wall=3600, eff=0.7, events=None,
            rss=2000),
        job("f", job_type="pile", task_id="p2", cores=4, wall=3600, eff=0.1, status="failed",
            failure_mode="memory", rss=9000),
    ]  # fmt: skip
    (r,) = multicore_scaling(jobs_df(spark, rows)).collect()
    assert (r.cores, r.jobs, r.tasks) == (4, 3, 2)  # the failed attempt is left out
    assert r.core_hours == pytest.approx(4 + 12 + 4)
    # ratio of sums: (3.6 + 6 + 2.8) / 20 = 0.62, not the mean of ratios 0.7
    assert r.cpu_efficiency == pytest.approx(0.62)
    assert r.events_per_core_hour == pytest.approx(240 / 16)  # "c" reports no events
    assert r.memory_per_core_mb == pytest.approx((1000 + 1500 + 500) / 3)


# --------------------------------------------------------------------------------------------
# gold.memory_per_thread_fit
# --------------------------------------------------------------------------------------------


def _cluster_robust_ols(xs, ys, clusters):
    """(alpha, beta, se_alpha, se_beta) by the textbook matrices, written independently of the
    code under test: (X'X)^-1 (sum_g X_g' e_g e_g' X_g) (X'X)^-1 x G / (G - 1)."""
    import numpy as np

    X = np.column_stack([np.ones(len(xs)), np.asarray(xs, float)])
    y = np.asarray(ys, float)
    inv = np.linalg.inv(X.T @ X)
    coef = inv @ X.T @ y
    e = y - X @ coef
    meat = np.zeros((2, 2))
    for g in set(clusters):
        idx = [i for i, c in enumerate(clusters) if c == g]
        s = X[idx].T @ e[idx]
        meat += np.outer(s, s)
    G = len(set(clusters))
    cov = inv @ meat @ inv * G / (G - 1)
    return coef[0], coef[1], math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])


def test_memory_per_thread_fit_against_the_matrix_formula(spark) -> None:
    rnd = random.Random(7)
    rows, xs, ys, cl = [], [], [], []
    for t in range(12):  # 12 tasks, each on one core count, RSS = 1500 + 180 (n-1) + noise
        cores = (1, 2, 4, 8)[t % 4]
        for j in range(5):
            rss = (1500 + 180 * (cores - 1)) * rnd.uniform(0.9, 1.1)
            rows.append(job(f"t{t}j{j}", job_type="simul", task_id=f"t{t}", cores=cores, rss=rss))
            xs.append(cores - 1)
            ys.append(rss)
            cl.append(t)
    # Screened before the fit: a 10x leak; left out: a failed attempt and one without RSS.
    rows.append(job("leak", job_type="simul", task_id="t0", cores=1, rss=15000.0))
    rows.append(job("f", job_type="simul", task_id="t1", cores=2, rss=99999.0, status="failed",
                    failure_mode="memory"))  # fmt: skip
    rows.append(job("none", job_type="simul", task_id="t1", cores=2, rss=None))
    # One core count: the mean RSS, no slope.
    rows += [job(f"m{i}", job_type="merge", task_id=f"m{i}", rss=800.0 + 100 * i) for i in range(3)]
    out = {r.job_type: r for r in memory_per_thread_fit(jobs_df(spark, rows)).collect()}

    a, b, se_a, se_b = _cluster_robust_ols(xs, ys, cl)
    r = out["simul"]
    assert (r.jobs, r.tasks, r.screened_jobs, r.n_core_counts, r.max_cores) == (60, 12, 1, 4, 8)
    assert r.base_mb == pytest.approx(a, rel=1e-9)
    assert r.per_thread_mb == pytest.approx(b, rel=1e-9)
    z = 1.959963984540054
    assert r.base_mb_high - r.base_mb == pytest.approx(z * se_a, rel=1e-9)
    assert r.per_thread_mb - r.per_thread_mb_low == pytest.approx(z * se_b, rel=1e-9)
    assert r.per_thread_mb_low < 180 < r.per_thread_mb_high  # the planted slope is covered
    assert r.saved_mb_8_threads == pytest.approx(7 * (a - b), rel=1e-9)
    assert r.saved_fraction_8_threads == pytest.approx(7 * (a - b) / (8 * a), rel=1e-9)

    m = out["merge"]
    assert (m.base_mb, m.per_thread_mb, m.saved_mb_8_threads) == (pytest.approx(900.0), None, None)
    # The mean's standard error over 3 single-job tasks: sd / sqrt(3) x sqrt(3/2) (G/(G-1))
    se = math.sqrt(sum((v - 900.0) ** 2 for v in (800, 900, 1000)) / 9 * 3 / 2)
    assert m.base_mb_high - m.base_mb == pytest.approx(z * se, rel=1e-9)


# --------------------------------------------------------------------------------------------
# gold.cpu_model_efficiency
# --------------------------------------------------------------------------------------------


def test_cpu_model_efficiency_percentiles_per_event(spark) -> None:
    per_event = [1.0, 2.0, 3.0, 4.0, 10.0]  # CPU seconds per event of the 5 usable jobs
    rows = [
        job(f"e{i}", cpu_model="Haswell-1", cores=1, wall=2000, cpu=100 * v, events=100, hs23=12.0)
        for i, v in enumerate(per_event)
    ] + [
        job("zero", cpu_model="Haswell-1", wall=2000, cpu=1000, events=0, hs23=12.0),
        job("fail", cpu_model="Haswell-1", wall=2000, cpu=50, events=5, status="failed",
            failure_mode="app-crash", hs23=12.0),
        job("amd", cpu_model="EPYC", micro="Zen 2", wall=1000, cpu=900, events=10, hs23=15.0),
    ]  # fmt: skip
    out = {r.cpu_model_norm: r for r in cpu_model_efficiency(jobs_df(spark, rows)).collect()}
    h = out["Haswell-1"]
    assert (h.microarchitecture, h.job_type, h.jobs, h.jobs_with_events) == (
        "Haswell",
        "simul",
        7,
        5,
    )
    assert h.cpu_efficiency == pytest.approx((100 * sum(per_event) + 1000 + 50) / (7 * 2000))
    # per-event values are kept rounded to 1 % on the log scale (within 0.5 %), so that the
    # weeks' value counts add up: nearest-rank percentiles of the rounded values
    rel = 5e-3
    assert h.median_cpu_seconds_per_event == pytest.approx(3.0, rel=rel)
    assert h.p90_cpu_seconds_per_event == pytest.approx(10.0, rel=rel)  # 4.0 covers only 80%
    assert h.median_hs23_seconds_per_event == pytest.approx(36.0, rel=rel)
    amd = out["EPYC"]
    assert amd.median_hs23_seconds_per_event == pytest.approx(90 * 15.0, rel=rel)


def test_percentiles_over_weeks_are_the_nearest_rank_of_every_job(spark) -> None:
    """Three weeks whose jobs repeat values across weeks: the percentiles, added up from each
    week's value counts, are those of all the jobs at once (nearest rank, worked out here)."""
    rnd = random.Random(3)
    rows, per_event, walls = [], [], []
    for w in range(3):
        for i in range(41 + w):
            v = rnd.choice((0.5, 1.0, 1.5, 2.0, 7.0)) * rnd.choice((1, 1, 3))
            wall = float(rnd.choice((600, 900, 1200, 5000)))
            rows.append(job(f"w{w}-{i}", wall=wall, cpu=100 * v, events=100,
                            end=END - timedelta(weeks=w)))  # fmt: skip
            per_event.append(v)
            walls.append(wall)
    df = jobs_df(spark, rows)

    def nearest_rank(values: list[float], p: float) -> float:
        return sorted(values)[math.ceil(p * len(values)) - 1]

    (r,) = cpu_model_efficiency(df).collect()
    assert r.median_cpu_seconds_per_event == pytest.approx(nearest_rank(per_event, 0.5), rel=5e-3)
    assert r.p90_cpu_seconds_per_event == pytest.approx(nearest_rank(per_event, 0.9), rel=5e-3)
    (a,) = job_length_advice(df).collect()
    assert a.n_jobs == len(walls)  # the weeks' attempts added up
    from gridlake.gold.efficiency.state import rank_percentiles, values_state

    (m,) = rank_percentiles(
        values_state(df).where("measure = 'success_wall_seconds'"), ["job_type"], {"m": 0.5}
    ).collect()
    assert m.m == pytest.approx(nearest_rank(walls, 0.5), rel=5e-3)  # rounded like the rest
    # several measures at once (one window over the values): each measure's percentiles as
    # asked alone, on its own keys (the wall-clock measure's have no CPU model), null elsewhere
    from gridlake.gold.efficiency.state import measures_percentiles

    keys = ["microarchitecture", "cpu_model_norm", "job_type"]
    asked = {"cpu_seconds_per_event": {"pe50": 0.5, "pe90": 0.9},
             "success_wall_seconds": {"w50": 0.5}}  # fmt: skip
    together = {
        tuple(row[k] for k in keys): row
        for row in measures_percentiles(values_state(df), keys, asked).collect()
    }
    model, wall = (r.microarchitecture, r.cpu_model_norm, "simul"), (None, None, "simul")
    assert set(together) == {model, wall}
    assert together[model].pe50 == pytest.approx(nearest_rank(per_event, 0.5), rel=5e-3)
    assert together[model].pe90 == pytest.approx(nearest_rank(per_event, 0.9), rel=5e-3)
    assert together[wall].w50 == pytest.approx(nearest_rank(walls, 0.5), rel=5e-3)
    assert (together[model].w50, together[wall].pe50, together[wall].pe90) == (None, None, None)
    # a table computed straight from jobs asks for its measures only: the same rows as those
    # measures' rows of the whole state, and no other measure's
    some = ("cpu_seconds_per_event", "hs23_seconds_per_event")
    cols = ["week", "measure", "microarchitecture", "cpu_model_norm", "job_type", "value", "n"]
    only = values_state(df, some).select(*cols)
    assert {r.measure for r in only.collect()} == set(some)
    those = values_state(df).where("measure <> 'success_wall_seconds'").select(*cols)
    assert only.exceptAll(those).isEmpty() and those.exceptAll(only).isEmpty()
    with pytest.raises(ValueError, match="measures must be some of"):
        values_state(df, ("cpu_seconds",))


# --------------------------------------------------------------------------------------------
# gold.efficiency_outliers
# --------------------------------------------------------------------------------------------

WEEKS = [date(2026, 10, 5) + timedelta(weeks=i) for i in range(5)]
SITES = ["S1", "S2", "S3", "S4", "S5", "S6"]
MODELS = {"M8": 8.0, "M10": 10.0, "M12": 12.0, "M14": 14.0}  # HS23 per core
TASKS = {"pile": (0.70, (200.0, 300.0, 450.0)), "simul": (0.90, (1000.0, 1500.0, 2200.0))}
# ordinary site-to-site noise: a couple of percent either way
SITE_EFF = dict(zip(SITES, (1.00, 0.99, 1.01, 0.985, 1.015, 1.0), strict=True))
SITE_SPEED = dict(zip(SITES, (1.0, 1.01, 0.99, 1.0, 1.015, 0.985), strict=True))


def _outlier_grid(weeks=WEEKS, model_for=None) -> list[tuple]:
    """5 weeks x 6 sites x 2 job types x 24 successful 8-core jobs, 2% noise per job, with
    planted: S2 runs pile at 70% of the others' efficiency (every week); S3's nodes need 18%
    more HS23 CPU seconds per event for every job type (every week); S5's simul efficiency
    drops to 80% in the last week only."""
    rng = random.Random(5)
    models = list(MODELS)
    model_for = model_for or (lambda si, i: models[(i + si) % 3])
    rows = []
    for wi, week in enumerate(weeks):
        for si, site in enumerate(SITES):
            for job_type, (base_eff, cpe) in TASKS.items():
                for i in range(24):
                    eff = base_eff * SITE_EFF[site] * rng.gauss(1.0, 0.02)
                    if site == "S2" and job_type == "pile":
                        eff *= 0.70
                    if site == "S5" and job_type == "simul" and wi == len(weeks) - 1:
                        eff *= 0.80
                    model = model_for(si, i)
                    events = 100 + 10 * i
                    hs23_seconds = events * cpe[i % 3] * SITE_SPEED[site] * rng.gauss(1.0, 0.02)
                    if site == "S3":
                        hs23_seconds *= 1.18
                    cpu = hs23_seconds / MODELS[model]
                    rows.append(
                        job(f"{week}-{site}-{job_type}-{i}", site=site, job_type=job_type,
                            task_id=f"{job_type}-{i % 3}", cpu_model=model, cores=8,
                            wall=cpu / (8 * eff), cpu=cpu, events=events, hs23=MODELS[model],
                            end=datetime.combine(week, datetime.min.time()) + timedelta(days=2))
                    )  # fmt: skip
    return rows


@pytest.fixture(scope="module")
def outlier_jobs(spark):
    df = jobs_df(spark, _outlier_grid()).cache()
    yield df
    df.unpersist()


def _flags(df) -> set[tuple]:
    return {(r.week, r.rule_id, r.entity_value, r.job_type) for r in df.collect()}


def test_outliers_flag_planted_sites_and_not_noise(spark, outlier_jobs) -> None:
    rules = outlier_rules_frame(spark)
    out = efficiency_outliers(outlier_jobs, rules)
    expected = (
        {(w, "site-efficiency-peers", "S2", "pile") for w in WEEKS}
        | {(w, "site-hs23-peers", "S3", jt) for w in WEEKS for jt in TASKS}
        | {(WEEKS[-1], "site-efficiency-peers", "S5", "simul")}
        | {(WEEKS[-1], "site-efficiency-history", "S5", "simul")}
    )
    rows = out.collect()
    assert {(r.week, r.rule_id, r.entity_value, r.job_type) for r in rows} == expected
    s2 = next(r for r in rows if r.entity_value == "S2" and r.week == WEEKS[0])
    assert s2.metric == "cpu_efficiency" and s2.entity == "site" and s2.rule_version == 1
    assert s2.deviation_pct == pytest.approx(-30, abs=3)
    assert s2.robust_z < -3.5 and s2.n_jobs == 24 and s2.baseline_points == 5
    assert "S2" in s2.evidence and "median of 5 other site" in s2.evidence
    s3 = next(r for r in rows if r.entity_value == "S3" and r.week == WEEKS[2])
    assert s3.value / s3.baseline == pytest.approx(1.18, abs=0.03)
    drop = next(r for r in rows if r.rule_id == "site-efficiency-history")
    assert drop.baseline_points == 4 and drop.deviation_pct == pytest.approx(-20, abs=3)


def test_outliers_rescored_with_new_rule_versions(spark, outlier_jobs) -> None:
    by_id = {r.rule_id: r for r in DEFAULT_OUTLIER_RULES}
    edited = [
        *DEFAULT_OUTLIER_RULES,
        by_id["site-hs23-peers"]._replace(rule_version=2, threshold=8.0),  # 18% is z ~ 5.5
        by_id["site-efficiency-history"]._replace(rule_version=2, enabled=False),
    ]
    out = efficiency_outliers(outlier_jobs, outlier_rules_frame(spark, edited))
    rows = out.collect()
    assert _flags(out) == {(w, "site-efficiency-peers", "S2", "pile") for w in WEEKS} | {
        (WEEKS[-1], "site-efficiency-peers", "S5", "simul")
    }
    assert {r.rule_version for r in rows} == {1}


def test_two_way_effects_separate_a_slow_site_from_its_cpu_model() -> None:
    # S3 is 18% slower and runs only M12; M12 runs elsewhere only at S1 (6 jobs of 24); M8
    # is 5% slower for this workload everywhere. Backfitting stopped early would still blame
    # M12 (after 6 rounds: +3.8%); the converged fit puts everything where it was planted.
    cells = []
    for site in ("S1", "S2", "S3", "S4"):
        if site == "S3":
            cells.append((site, "M12", 24.0, math.log(1.18)))
            continue
        models = ("M8", "M10", "M12") if site == "S1" else ("M8", "M10")
        for model in models:
            cells.append((site, model, 8.0, math.log(1.05) if model == "M8" else 0.0))
    a, b = two_way_effects(cells)
    assert a["S3"] - a["S1"] == pytest.approx(math.log(1.18), abs=1e-8)
    assert a["S2"] - a["S1"] == pytest.approx(0.0, abs=1e-8)
    assert b["M12"] - b["M10"] == pytest.approx(0.0, abs=1e-8)
    assert b["M8"] - b["M10"] == pytest.approx(math.log(1.05), abs=1e-8)


def test_cpu_model_installed_at_the_slow_site_is_not_blamed(spark) -> None:
    """S3 (18% slower nodes) runs only M12; M12 runs elsewhere only on a sixth of S1's jobs.
    Unadjusted, M12 would look ~14% slower than the other models; the site x model
    decomposition puts the slowness on S3 and leaves M12 alone."""

    def model_for(si: int, i: int) -> str:
        if SITES[si] == "S3":
            return "M12"
        if SITES[si] == "S1" and i % 4 == 0:
            return "M12"
        return ("M8", "M10", "M14")[i % 3]

    rules = [
        r._replace(min_baseline_points=2)
        for r in DEFAULT_OUTLIER_RULES
        if r.rule_id in ("site-hs23-peers", "cpu-model-hs23-peers")
    ]
    jobs = jobs_df(spark, _outlier_grid(WEEKS[:1], model_for))
    out = efficiency_outliers(jobs, outlier_rules_frame(spark, rules))
    assert _flags(out) == {(WEEKS[0], "site-hs23-peers", "S3", jt) for jt in TASKS}


def test_outlier_zero_mad_is_floored(spark) -> None:
    """Identical peers (MAD 0): the scale is the rule's floor, 0.03 on the log scale."""
    effs = {"A": 0.8, "B": 0.8, "C": 0.8, "D": 0.784, "E": 0.64}  # D 2% low, E 20% low
    rows = [
        job(f"{site}{i}", site=site, task_id=None, wall=3600, eff=eff)
        for site, eff in effs.items()
        for i in range(20)
    ]
    rule = OutlierRule(1, "r", "site", "cpu_efficiency", "peers", "low", 3.5, 20, 3, 0.03, True,
                       "test")  # fmt: skip
    (r,) = efficiency_outliers(jobs_df(spark, rows), outlier_rules_frame(spark, [rule])).collect()
    assert r.entity_value == "E"
    assert r.baseline == pytest.approx(0.8)
    assert r.robust_z == pytest.approx(-7.438118, rel=1e-6)  # ln(0.8) / 0.03
    assert r.deviation_pct == pytest.approx(-20.0)
    assert r.baseline_points == 4


def test_outlier_scale_includes_the_entitys_own_sampling_error(spark) -> None:
    """E and F are both 15% below their peers: F over 20 alike jobs (flagged), E over 20 jobs
    alternating 0.40 and 0.96 (its own standard error explains the gap: not flagged)."""
    effs = {s: [0.8] * 40 for s in "ABCD"} | {"E": [0.40, 0.96] * 10, "F": [0.68] * 20}
    rows = [
        job(f"{site}{i}", site=site, task_id=None, wall=3600, eff=eff)
        for site, jobs in effs.items()
        for i, eff in enumerate(jobs)
    ]
    rule = OutlierRule(1, "r", "site", "cpu_efficiency", "peers", "low", 3.5, 20, 3, 0.03, True,
                       "test")  # fmt: skip
    (r,) = efficiency_outliers(jobs_df(spark, rows), outlier_rules_frame(spark, [rule])).collect()
    assert r.entity_value == "F"
    assert r.robust_z == pytest.approx(math.log(0.85) / 0.03, rel=1e-6)
    # E: R = 0.68, var(R) = n/(n-1) sum((c - R w)^2) / (sum w)^2 = 0.28^2 / 19
    (e,) = [
        m
        for m in outlier_metrics(jobs_df(spark, rows)).collect()
        if m.entity == "site" and m.entity_value == "E" and m.metric == "cpu_efficiency"
    ]
    assert e.value == pytest.approx(0.68)
    assert e.log_se == pytest.approx(0.28 / math.sqrt(19) / 0.68, rel=1e-6)


def test_peer_baselines_equal_the_median_and_mad_of_every_rows_peers(spark) -> None:
    """peer_baselines (order statistics, one sort per group) against the definition: for each
    row, the median of the other rows' values in its group and the median of their absolute
    deviations from it. Groups of 1 to 9 rows (odd and even peer counts), ties, and a group of
    one (no peers: no row)."""
    import random
    import statistics

    from gridlake.gold.efficiency.outliers import peer_baselines

    rng = random.Random(7)
    rows = []
    for g in range(40):
        size = 1 + g % 9
        values = [round(rng.gauss(0, 1), 1 if g % 3 == 0 else 6) for _ in range(size)]  # ties
        rows += [("r", f"w{g % 4}", f"jt{g}", f"e{i}", v) for i, v in enumerate(values)]
    df = rows_frame(
        spark,
        rows,
        "rule_id string, week string, job_type string, entity_value string, _log double",
    )
    got = {
        (r.job_type, r.entity_value): r
        for r in peer_baselines(df, ["rule_id", "week", "job_type"]).collect()
    }
    want = {}
    for _, _, jt, ev, _ in rows:
        peers = [x[4] for x in rows if x[2] == jt and x[3] != ev]
        if peers:
            med = statistics.median(peers)
            want[(jt, ev)] = (med, statistics.median(abs(x - med) for x in peers), len(peers))
    assert set(got) == set(want)
    for k, (med, mad, n) in want.items():
        assert got[k]._med == pytest.approx(med, rel=1e-12, abs=1e-15), k
        assert got[k]._mad == pytest.approx(mad, rel=1e-12, abs=1e-15), k
        assert got[k].baseline_points == n, k


# --------------------------------------------------------------------------------------------
# compute(): every table of the module, conformed
# --------------------------------------------------------------------------------------------


def test_compute_returns_every_table_conformed(spark, outlier_jobs) -> None:
    out = compute(outlier_jobs)
    assert set(out) == {t.full_name for t in TABLES}
    for table in TABLES:
        assert out[table.full_name].columns == table.column_names
    advice = {r.job_type: r for r in out["gold.job_length_advice"].collect()}
    assert set(advice) == set(TASKS)
    assert out["gold.efficiency_outlier_rules"].count() == len(DEFAULT_OUTLIER_RULES)
    assert out["gold.efficiency_outliers"].count() == 17
