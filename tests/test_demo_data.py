"""Unit tests of the demo data source (no Spark): contracts, determinism and planted truths.

Expected values come from the schemas, from domain.md figures and from the planted truth; every
statistic is recomputed here from the records, never taken from the generator's own summaries.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter, defaultdict
from datetime import UTC, date, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from gridlake.sources import demo

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
WEEK = date(2026, 11, 16)  # a Monday (ISO week 2026-W47)
WEEK_START = datetime(2026, 11, 16, tzinfo=UTC)
WEEK_END = datetime(2026, 11, 23, tzinfo=UTC)
RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
RULE = re.compile(r"^\s*(\w+)\s*(>=|<=|>|<|=)\s*(\w+)\s*$")


def _load_schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"grid.{name}.schema.json").read_text(encoding="utf-8"))


def _t(value: str) -> datetime:
    assert RFC3339_Z.match(value), f"not RFC 3339 UTC with Z: {value!r}"
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _cpu(job: dict[str, Any]) -> float:
    return job["cpu_user_seconds"] + job["cpu_system_seconds"]


def _efficiency(jobs: list[dict[str, Any]]) -> float:
    """Ratio of sums, as domain.md defines aggregate efficiency."""
    return sum(_cpu(j) for j in jobs) / sum(j["wall_seconds"] * j["cores"] for j in jobs)


@pytest.fixture(scope="module")
def week() -> demo.DemoWeek:
    return demo.generate_week(WEEK, seed=7)


# ---------------------------------------------------------------- contracts


@pytest.mark.parametrize("topic", ["jobs", "nodes", "network"])
def test_every_record_validates_against_its_schema(week: demo.DemoWeek, topic: str) -> None:
    schema = _load_schema(topic)
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    records = getattr(week, topic)
    assert records, f"no {topic} records"
    for record in records:
        errors = sorted(validator.iter_errors(record), key=str)
        assert not errors, f"{topic} record {record} fails: {errors[0].message}"
        # every time field is canonical RFC 3339 UTC ending in Z (format checking is optional
        # in jsonschema, so check it here too)
        for key, prop in schema["properties"].items():
            if prop.get("format") == "date-time":
                _t(record[key])


@pytest.mark.parametrize("topic", ["jobs", "nodes", "network"])
def test_x_rules_hold(week: demo.DemoWeek, topic: str) -> None:
    rules = _load_schema(topic).get("x-rules", [])
    ops = {
        ">=": lambda a, b: a >= b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        "<": lambda a, b: a < b,
        "=": lambda a, b: a == b,
    }
    for rule in rules:
        match = RULE.match(rule["sql"])
        assert match, f"x-rule {rule['name']} is not a simple comparison; extend this test"
        left, op, right = match.groups()
        for record in getattr(week, topic):
            a, b = record[left], record[right]
            if isinstance(a, str):
                a, b = _t(a), _t(b)
            assert ops[op](a, b), f"{rule['reason']}: {record}"


def test_job_times_are_consistent(week: demo.DemoWeek) -> None:
    for job in week.jobs:
        start, end = _t(job["start_time"]), _t(job["end_time"])
        assert job["wall_seconds"] == (end - start).total_seconds()
        assert job["source_format"] == "canonical"
        assert job["benchmark_type"] == "hs23" and job["benchmark_per_core"] > 0


def test_every_job_ends_inside_the_iso_week(week: demo.DemoWeek) -> None:
    for job in week.jobs:
        assert WEEK_START <= _t(job["end_time"]) < WEEK_END, job
    for record in week.nodes + week.network:
        assert WEEK_START <= _t(record["ts"]) < WEEK_END, record


def test_any_day_of_the_week_gives_the_same_iso_week() -> None:
    wednesday = demo.generate_week(date(2026, 11, 18), seed=3, sites=2, jobs_per_site=30)
    monday = demo.generate_week(WEEK, seed=3, sites=2, jobs_per_site=30)
    assert wednesday.truth["iso_week"] == "2026-W47"
    assert wednesday.jobs == monday.jobs


# ---------------------------------------------------------------- determinism and files


def test_same_seed_same_bytes_and_other_seed_other_data(tmp_path: Path) -> None:
    paths_a = demo.write_week(tmp_path / "a", demo.generate_week(WEEK, seed=11))
    paths_b = demo.write_week(tmp_path / "b", demo.generate_week(WEEK, seed=11))
    paths_c = demo.write_week(tmp_path / "c", demo.generate_week(WEEK, seed=12))
    assert set(paths_a) == {"jobs", "nodes", "network", "truth"}
    for name in paths_a:
        assert paths_a[name].read_bytes() == paths_b[name].read_bytes(), name
    for name in ("jobs", "nodes", "network"):
        assert paths_a[name].read_bytes() != paths_c[name].read_bytes(), name


def test_written_files_are_one_sorted_object_per_line(tmp_path: Path, week: demo.DemoWeek) -> None:
    paths = demo.write_week(tmp_path, week)
    for name in ("jobs", "nodes", "network"):
        lines = paths[name].read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(getattr(week, name))
        for line in lines[:200]:
            obj = json.loads(line)
            assert list(obj) == sorted(obj)
    truth = json.loads(paths["truth"].read_text(encoding="utf-8"))
    assert truth["slow_storage_site"] in truth["sites"]


def test_sizes_are_small(week: demo.DemoWeek) -> None:
    first_attempts = [j for j in week.jobs if j["attempt"] == 1]
    assert len(first_attempts) == 4 * 300
    # vmstat, iostat and perf records of 3 hosts per site every 5 minutes, for a few days
    assert len(week.nodes) <= 14_000
    assert len(demo.generate_week(WEEK, sites=6).nodes) <= 14_000


# ---------------------------------------------------------------- job content


def test_job_mix_by_count_follows_domain(week: demo.DemoWeek) -> None:
    counts = Counter(j["job_type"] for j in week.jobs)
    assert set(counts) == {"evgen", "simul", "pile", "reprocessing", "merge", "analysis"}
    share = {k: v / len(week.jobs) for k, v in counts.items()}
    assert max(share, key=share.__getitem__) == "analysis"
    assert 0.45 <= share["analysis"] <= 0.65  # ~49% of 87% in domain.md
    for job_type in ("evgen", "merge"):
        assert 0.07 <= share[job_type] <= 0.2
    for job_type in ("simul", "pile", "reprocessing"):
        assert 0.02 <= share[job_type] <= 0.12


def test_job_types_have_their_efficiency_and_duration(week: demo.DemoWeek) -> None:
    slow = week.truth["slow_storage_site"]
    good = [j for j in week.jobs if j["status"] == "success" and j["site"] != slow]
    outliers = set(week.truth["outlier_job_ids"])
    good = [j for j in good if j["job_id"] not in outliers]
    by_type = defaultdict(list)
    for j in good:
        by_type[j["job_type"]].append(j)
    eff = {t: _efficiency(js) for t, js in by_type.items()}
    assert eff["simul"] >= 0.8 and eff["evgen"] >= 0.8  # CPU-intensive, ~0.9
    for job_type in ("pile", "reprocessing"):  # I/O-heavy, ~0.6-0.7
        assert 0.55 <= eff[job_type] <= 0.75
    assert eff["merge"] < 0.6  # short and I/O-bound
    median_wall = {t: statistics.median(j["wall_seconds"] for j in js) for t, js in by_type.items()}
    assert median_wall["analysis"] < median_wall["simul"] / 3
    assert median_wall["merge"] < median_wall["evgen"] / 3
    assert {j["cores"] for j in week.jobs} == {1, 8}


def test_slow_storage_site_has_lower_pile_efficiency(week: demo.DemoWeek) -> None:
    slow = week.truth["slow_storage_site"]
    pile = [j for j in week.jobs if j["job_type"] == "pile" and j["status"] == "success"]
    per_site = {
        site: _efficiency([j for j in pile if j["site"] == site])
        for site in week.truth["sites"]
        if any(j["site"] == site for j in pile)
    }
    others = [e for s, e in per_site.items() if s != slow]
    assert slow in per_site and len(others) >= 2
    assert per_site[slow] < 0.85 * min(others), per_site
    # and it is the storage, not the CPUs: CPU-bound simulation loses much less there
    simul = [j for j in week.jobs if j["job_type"] == "simul" and j["status"] == "success"]
    simul_ratio = _efficiency([j for j in simul if j["site"] == slow]) / _efficiency(
        [j for j in simul if j["site"] != slow]
    )
    pile_ratio = per_site[slow] / _efficiency([j for j in pile if j["site"] != slow])
    assert simul_ratio > 0.9 and pile_ratio < simul_ratio - 0.15, (simul_ratio, pile_ratio)


def test_outliers_are_about_one_percent_and_match_the_truth(week: demo.DemoWeek) -> None:
    found = {j["job_id"] for j in week.jobs if _cpu(j) > j["wall_seconds"] * j["cores"] * 1.05}
    assert 0.005 <= len(found) / len(week.jobs) <= 0.02
    assert found == set(week.truth["outlier_job_ids"])


def test_failures_retries_and_exit_codes(week: demo.DemoWeek) -> None:
    failed = [j for j in week.jobs if j["status"] == "failed"]
    assert 0.04 <= len(failed) / len(week.jobs) <= 0.12
    assert {j["failure_mode"] for j in failed} == {
        "stage-in",
        "lost-heartbeat",
        "memory",
        "app-crash",
    }
    for j in week.jobs:
        if j["status"] == "success":
            assert j["exit_code"] == 0 and j["failure_mode"] is None
        else:
            assert j["exit_code"] != 0 and j["output_bytes"] == 0
    by_id = {j["job_id"]: j for j in week.jobs}
    assert len(by_id) == len(week.jobs), "job_id must be unique per attempt"
    retries = [j for j in week.jobs if j["attempt"] > 1]
    assert len(retries) >= 10
    for retry in retries:
        base, number = retry["job_id"].rsplit(".", 1)
        assert int(number) == retry["attempt"]
        previous = by_id[base if retry["attempt"] == 2 else f"{base}.{retry['attempt'] - 1}"]
        assert previous["status"] == "failed"
        assert previous["task_id"] == retry["task_id"]
        assert _t(retry["submit_time"]) >= _t(previous["end_time"])


def test_memory_failures_hit_the_memory_limit(week: demo.DemoWeek) -> None:
    memory = [j for j in week.jobs if j["failure_mode"] == "memory"]
    assert memory
    for j in memory:
        assert j["max_rss_mb"] >= 2000 * j["cores"]
    others = [j for j in week.jobs if j["failure_mode"] != "memory"]
    assert max(j["max_rss_mb"] / j["cores"] for j in others) < 2000


def test_tasks_run_on_several_cpu_models(week: demo.DemoWeek) -> None:
    models_per_task = defaultdict(set)
    for j in week.jobs:
        models_per_task[j["task_id"]].add(j["cpu_model"])
    spread = sum(len(m) >= 2 for m in models_per_task.values())
    assert spread >= len(models_per_task) / 2
    assert len({j["cpu_model"] for j in week.jobs}) == 5


def _speed_from_jobs(
    week: demo.DemoWeek, job_type: str, model: str, reference: str
) -> tuple[float, int]:
    """Median over tasks of (CPU time per event on reference) / (on model)."""
    outliers = set(week.truth["outlier_job_ids"])
    per_event: dict[tuple[str, str], list[float]] = defaultdict(list)
    for j in week.jobs:
        if j["job_type"] == job_type and j["status"] == "success" and j["job_id"] not in outliers:
            per_event[(j["task_id"], j["cpu_model"])].append(_cpu(j) / j["events"])
    ratios = [
        statistics.median(per_event[(task, reference)]) / statistics.median(values)
        for (task, m), values in per_event.items()
        if m == model and (task, reference) in per_event
    ]
    return (statistics.median(ratios) if ratios else float("nan")), len(ratios)


@pytest.mark.parametrize("job_type", ["evgen", "simul", "pile"])
def test_cpu_speed_from_cpu_time_per_event_matches_planted_factors(
    week: demo.DemoWeek, job_type: str
) -> None:
    reference = week.truth["reference_cpu_model"]
    checked = 0
    for model in week.truth["cpu_models"]:
        if model == reference:
            continue
        measured, n_tasks = _speed_from_jobs(week, job_type, model, reference)
        if n_tasks < 2:
            continue
        checked += 1
        planted = week.truth["speed_factor"][model][job_type]
        assert measured == pytest.approx(planted, rel=0.08), (model, measured, planted)
    assert checked >= 1


def test_simulation_on_ivy_bridge_is_slower_than_the_benchmark_says() -> None:
    ivy = "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz"
    haswell = "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz"
    week = demo.generate_week(WEEK, seed=5, jobs_per_site=600)
    measured, n_tasks = _speed_from_jobs(week, "simul", ivy, haswell)
    assert n_tasks >= 3
    hs23_ratio = 8.3 / 10.0  # HS23scores.csv, Score/Ncores of the two models
    assert measured < 0.9 * hs23_ratio  # Geant4 on Ivy Bridge is much slower (domain.md)
    assert 1 / measured == pytest.approx(1.5, rel=0.1)  # ~50% faster on Haswell


# ---------------------------------------------------------------- node samples


def test_node_samples_show_the_slow_storage_signature(week: demo.DemoWeek) -> None:
    slow = week.truth["slow_storage_site"]
    vm = [r for r in week.nodes if r["kind"] == "vmstat"]
    io = [r for r in week.nodes if r["kind"] == "iostat"]
    for r in vm:
        assert r["us"] + r["sy"] + r["id"] + r["wa"] + r["st"] == 100
    for r in io:
        total = r["cpu_user"] + r["cpu_system"] + r["cpu_iowait"] + r["cpu_steal"] + r["cpu_idle"]
        assert total == pytest.approx(100, abs=0.1)
        assert 1 <= len(r["disks"]) <= 2
    mean_wa = {
        site: statistics.mean(r["wa"] for r in vm if r["site"] == site)
        for site in week.truth["sites"]
    }
    assert mean_wa[slow] > 3 * max(v for s, v in mean_wa.items() if s != slow), mean_wa

    def scratch_stat(site: str, key: str) -> float:
        return statistics.mean(
            d[key] for r in io if r["site"] == site for d in r["disks"] if d["device"] != "sda"
        )

    for site in week.truth["sites"]:
        if site != slow:
            assert scratch_stat(slow, "r_await_ms") > 10 * scratch_stat(site, "r_await_ms")
            assert scratch_stat(slow, "util_pct") > 2 * scratch_stat(site, "util_pct")
    hosts = {(r["site"], r["host"]) for r in week.nodes}
    assert len(hosts) == 3 * len(week.truth["sites"])


def test_memory_pressure_shows_swapping_only_in_its_window(week: demo.DemoWeek) -> None:
    planted = week.truth["memory_pressure"]
    start, end = _t(planted["start"]), _t(planted["end"])
    swapping = [r for r in week.nodes if r["kind"] == "vmstat" and (r["si"] > 0 or r["so"] > 0)]
    assert swapping
    for r in swapping:
        assert r["host"] == planted["host"]
        assert start < _t(r["ts"]) <= end  # ts is the end of the sampling interval
    host_vm = [r for r in week.nodes if r["kind"] == "vmstat" and r["host"] == planted["host"]]
    inside = [r for r in host_vm if start < _t(r["ts"]) <= end]
    outside = [r for r in host_vm if not start < _t(r["ts"]) <= end]
    assert statistics.mean(r["cache_kb"] for r in inside) < 0.5 * statistics.mean(
        r["cache_kb"] for r in outside
    )


# ---------------------------------------------------------------- network


def test_perfsonar_covers_every_ordered_pair(week: demo.DemoWeek) -> None:
    sites = week.truth["sites"]
    tests = defaultdict(list)
    for r in week.network:
        assert r["src_host"] == f"psonar1.{r['src_site'].lower()}.example.org"
        tests[(r["src_site"], r["dst_site"], r["test"])].append(_t(r["ts"]))
    for src in sites:
        for dst in sites:
            if src == dst:
                continue
            latency = sorted(tests[(src, dst, "latency")])
            gaps = [(b - a).total_seconds() for a, b in pairwise(latency)]
            assert 10 * 60 - 60 <= statistics.median(gaps) <= 30 * 60 + 60
            throughput = sorted(tests[(src, dst, "throughput")])
            assert len(throughput) == 7 * 4  # every 6 hours


def test_congested_path_has_higher_delay_and_loss(week: demo.DemoWeek) -> None:
    planted = week.truth["congested_path"]
    congested = (planted["src_site"], planted["dst_site"])
    latency = defaultdict(list)
    throughput = defaultdict(list)
    for r in week.network:
        key = (r["src_site"], r["dst_site"])
        (latency if r["test"] == "latency" else throughput)[key].append(r)

    def queueing(rs: list[dict[str, Any]]) -> float:
        return statistics.mean(r["delay_mean_ms"] - r["delay_min_ms"] for r in rs)

    def loss(rs: list[dict[str, Any]]) -> float:
        return statistics.mean(r["packet_loss"] for r in rs)

    others = [k for k in latency if k != congested]
    assert loss(latency[congested]) > 1e-3
    assert max(loss(latency[k]) for k in others) < 1e-4  # quiet paths pass filter 1
    assert queueing(latency[congested]) > 5 * max(queueing(latency[k]) for k in others)
    # throughput tests in the middle of the busy hours: the congested direction has little room
    lo, hi = planted["busy_hours_utc"]
    mid = (lo + (hi - lo) // 4, hi - (hi - lo) // 4)

    def busy(key: tuple[str, str]) -> list[dict[str, Any]]:
        return [r for r in throughput[key] if mid[0] <= _t(r["ts"]).hour < mid[1]]

    reverse = (congested[1], congested[0])
    assert len(busy(congested)) >= 5
    bps = {k: statistics.mean(r["throughput_bps"] for r in busy(k)) for k in (congested, reverse)}
    assert bps[congested] < 0.5 * bps[reverse], bps
    retransmits = {k: statistics.mean(r["retransmits"] for r in busy(k)) for k in bps}
    assert retransmits[congested] > 10 * retransmits[reverse], retransmits
