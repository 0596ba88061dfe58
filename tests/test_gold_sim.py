"""Gold analytics against the simulator's planted truth (the efficiency issue's acceptance)."""

from __future__ import annotations

from datetime import date

import pytest

from gridlake.gold import efficiency
from gridlake.gold.site_efficiency import site_jobtype_efficiency_weekly
from gridlake.silver.files import silver_jobs_from_jsonl
from gridlake.sources.simulate import SimConfig, simulate


@pytest.fixture(scope="module")
def gold_eff(sim_jobs) -> dict:
    frames = efficiency.compute(sim_jobs)
    return {name: df.collect() for name, df in frames.items()}


def test_site_and_job_type_efficiency_equal_the_truth(sim_grid, sim_jobs) -> None:
    _, truth = sim_grid
    expected = {
        (r["week"], r["site"], r["vo"], r["job_type"]): r
        for r in truth["efficiency_sums"]
        if r["job_type"] != "ALL"
    }
    got = {
        (r.week.isoformat(), r.site, r.vo, r.job_type): r
        for r in site_jobtype_efficiency_weekly(sim_jobs).collect()
    }
    assert set(got) == set(expected)
    for key, e in expected.items():
        g = got[key]
        assert (g.jobs, g.failed_jobs) == (e["jobs"], e["failed_jobs"]), key
        assert abs(g.cpu_efficiency - e["cpu_efficiency"]) < 1e-9, key
        assert g.events == e["events"], key


def test_amdahl_serial_fraction_within_20_percent(sim_grid, gold_eff) -> None:
    _, truth = sim_grid
    fits = {r.job_type: r for r in gold_eff["gold.multicore_fit"]}
    checked = 0
    for jt, spec in truth["job_types"].items():
        if len(spec["cores"]) < 2 or spec["serial_fraction"] == 0:
            continue
        fit, s = fits[jt], spec["serial_fraction"]
        se = fit.serial_fraction_se
        print(f"{jt}: serial fraction {fit.serial_fraction:.4f} +- {se} (planted {s})")
        assert fit.serial_fraction == pytest.approx(s, rel=0.2), jt
        if se is not None:  # and its interval is honest: the planted value within 3 se
            assert abs(fit.serial_fraction - s) < 3 * se, jt
        checked += 1
    assert checked == 4  # evgen, simul, pile, reprocessing run on several core counts


def _se(low: float, high: float) -> float:
    return (high - low) / (2 * 1.959963984540054)


def test_memory_per_thread_within_10_percent_and_covered(sim_grid, gold_eff) -> None:
    _, truth = sim_grid
    fits = {r.job_type: r for r in gold_eff["gold.memory_per_thread_fit"]}
    checked = 0
    for jt, spec in truth["job_types"].items():
        planted, fit = spec["memory_mb"], fits[jt]
        print(f"{jt}: base {fit.base_mb:.0f} MB [{fit.base_mb_low:.0f}, {fit.base_mb_high:.0f}]"
              f" per thread {fit.per_thread_mb} (planted {planted})")  # fmt: skip
        assert fit.base_mb == pytest.approx(planted["base"], rel=0.1), jt
        # The interval is honest: the planted value within 3 standard errors (10 estimates are
        # checked, so one 95 % interval in 10 missing would be no surprise).
        assert abs(fit.base_mb - planted["base"]) < 3 * _se(fit.base_mb_low, fit.base_mb_high), jt
        if len(spec["cores"]) < 2:
            assert fit.per_thread_mb is None, jt
            continue
        per_thread = planted["per_extra_thread"]
        assert fit.per_thread_mb == pytest.approx(per_thread, rel=0.1), jt
        se = _se(fit.per_thread_mb_low, fit.per_thread_mb_high)
        assert abs(fit.per_thread_mb - per_thread) < 3 * se, jt
        checked += 1
    assert checked == 4  # evgen, simul, pile, reprocessing run on several core counts


def test_recommended_job_length_within_15_percent(sim_grid, gold_eff) -> None:
    _, truth = sim_grid
    advice = {r.job_type: r for r in gold_eff["gold.job_length_advice"]}
    for jt, spec in truth["job_types"].items():
        a = advice[jt]
        assert a.optimal_hours == pytest.approx(spec["optimal_payload_hours"], rel=0.15), (
            jt, a.init_seconds, spec["init_seconds"], a.hazard_per_hour, spec["hazard_per_hour"],
        )  # fmt: skip


def test_outliers_name_the_planted_sites(sim_grid, gold_eff) -> None:
    _, truth = sim_grid
    sites = {r.entity_value for r in gold_eff["gold.efficiency_outliers"] if r.entity == "site"}
    planted = truth["planted"]
    assert planted["slow_storage_site"] in sites
    assert planted["misconfigured_site"] in sites
    normal = {s for s, v in truth["sites"].items() if not v["roles"]}
    assert not sites & normal, sites & normal


@pytest.mark.slow
def test_clean_control_grid_has_no_outliers(spark, tmp_path) -> None:
    config = SimConfig(start=date(2026, 10, 19), days=14, sites=8, cpu_models=12, jobs=15_000,
                       seed=12, effects=False, monitored_hosts_per_site=0,
                       latency_interval=86_400)  # fmt: skip
    simulate(config, tmp_path, progress=False)
    jobs = silver_jobs_from_jsonl(spark, str(tmp_path / "jobs.jsonl"))
    rules = efficiency.outlier_rules_frame(spark)
    flagged = efficiency.efficiency_outliers(jobs, rules).collect()
    assert flagged == [], [(r.entity, r.entity_value, r.job_type, r.rule_id) for r in flagged]


# --------------------------------------------------------------------------------------------
# CPU speed factors against the planted model speeds (the speed-factor issue's acceptance)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim_speed(spark, tmp_path_factory) -> tuple[dict, dict]:
    """The speed-factor fit on its own grid: the shared one's seed and sites with twice the jobs
    (no node or network samples, not needed here), so that more CPU models and job types reach
    the acceptance's 200 jobs. Returns (truth, {table: rows})."""
    from gridlake.gold import speed_factors

    from .conftest import SIM_CONFIG

    out = tmp_path_factory.mktemp("sim_speed")
    config = dict(SIM_CONFIG, jobs=60_000, monitored_hosts_per_site=0, latency_interval=86_400,
                  bad_share=0.0, resend_share=0.0)  # fmt: skip
    truth = simulate(SimConfig(**config), out, progress=False)
    jobs = silver_jobs_from_jsonl(spark, str(out / "jobs.jsonl")).cache()
    frames = speed_factors.compute(jobs, reference_model=truth["reference_cpu_model"])
    yield truth, {name: df.collect() for name, df in frames.items()}
    jobs.unpersist()


def _planted_factor(truth: dict, model: str, job_type: str) -> float:
    return truth["cpu_models"][model]["speed_factor_vs_reference"][job_type]


def test_speed_factors_within_2_percent_and_intervals_cover(sim_speed) -> None:
    truth, tables = sim_speed
    rows = [r for r in tables["gold.cpu_speed_factors"]
            if r.job_type != "ALL" and r.n_jobs >= 200]  # fmt: skip
    assert len(rows) >= 50  # most of the 72 (model, job type) pairs of the 12 models
    off = [
        (r.cpu_model, r.job_type, r.speed_factor, _planted_factor(truth, r.cpu_model, r.job_type))
        for r in rows
        if abs(r.speed_factor / _planted_factor(truth, r.cpu_model, r.job_type) - 1) > 0.02
    ]
    assert not off, off
    covered = [r.ci_low <= _planted_factor(truth, r.cpu_model, r.job_type) <= r.ci_high
               for r in rows]  # fmt: skip
    assert sum(covered) >= 0.9 * len(covered), (sum(covered), len(covered))


def test_benchmark_mismatch_flags_only_the_planted_microarchitecture(sim_speed) -> None:
    truth, tables = sim_speed
    misleading = truth["planted"]["misleading"]
    flagged = {(r.job_type, r.microarchitecture) for r in tables["gold.benchmark_mismatch"]
               if r.flagged and r.job_type != "ALL"}  # fmt: skip
    assert flagged == {(misleading["job_type"], misleading["microarchitecture"])}


def test_site_speed_anomalies_name_only_the_misconfigured_site(sim_speed) -> None:
    truth, tables = sim_speed
    flagged = {r.site for r in tables["gold.site_speed_anomalies"] if r.flagged}
    assert flagged == {truth["planted"]["misconfigured_site"]}
    slow = [r for r in tables["gold.site_speed_anomalies"]
            if r.site == truth["planted"]["misconfigured_site"] and r.cpu_model == "ALL"
            and r.job_type == "ALL"]  # fmt: skip
    assert slow and slow[0].slowdown == pytest.approx(1 / truth["planted"]["misconfigured_speed"],
                                                      rel=0.03)  # fmt: skip
