"""The analyst examples in sql/examples/: each runs through the Spark Thrift Server with PyHive on
the demo week and is checked against an answer worked out independently, in plain Python, from the
demo week's published records (``week.jobs``, ``week.network``) or from what the generator planted
(``week.truth``: the slow-storage site, the congested path, the swapping host, the true CPU speed
per job type). Nothing here re-runs the SQL under test to get its expectation.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest

from gridlake.serving.views import VIEW_DIR

EXAMPLES = Path(__file__).resolve().parent.parent / "sql" / "examples"
FOUR_HOURS = 4 * 3600


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.sql"))


def header(path: Path) -> dict[str, str]:
    """The leading comment block: 'Question:' (may wrap onto indented lines) and 'Views:'."""
    fields: dict[str, str] = {}
    key = None
    for line in path.read_text().splitlines():
        if not line.startswith("--"):
            break
        text = line[2:].strip()
        m = re.match(r"(Question|Views):\s*(.*)", text)
        if m:
            key = m.group(1)
            fields[key] = m.group(2)
        elif key == "Question" and line.startswith("--   "):
            fields[key] += " " + text
        else:
            key = None
    return fields


def referenced_tables(sql: str) -> set[str]:
    body = "\n".join(x.split("--", 1)[0] for x in sql.splitlines())
    return {m.lower() for m in re.findall(r"\b(?:FROM|JOIN)\s+([A-Za-z_][\w.]*)", body, re.I)}


# --- static checks (no services) --------------------------------------------------------------
def test_at_least_ten_examples_each_with_question_and_views() -> None:
    files = example_files()
    assert len(files) >= 10, files
    views = {f"grid.{p.stem}" for p in VIEW_DIR.glob("*.sql")}
    for path in files:
        head = header(path)
        assert head.get("Question", "").endswith("?"), f"{path.name}: no '-- Question: ...?'"
        listed = {v.strip() for v in head.get("Views", "").split(",") if v.strip()}
        assert listed, f"{path.name}: no '-- Views:' line"
        assert listed <= views, f"{path.name}: unknown views {listed - views}"
        # CTE names are local; every other table is a grid view, and the header lists them all.
        ctes = {m.lower() for m in re.findall(r"(\w+)\s+AS\s*\(", path.read_text(), re.I)}
        used = referenced_tables(path.read_text()) - ctes
        assert used == listed, f"{path.name}: uses {used}, header lists {listed}"


def test_every_example_has_a_known_answer() -> None:
    assert {p.stem for p in example_files()} == set(CHECKS)


def test_the_static_check_catches_a_gold_table() -> None:
    """The header check above would fail on a query that reads a physical table."""
    assert referenced_tables("SELECT * FROM gold.site_efficiency_weekly s JOIN grid.jobs j") == {
        "gold.site_efficiency_weekly",
        "grid.jobs",
    }


# --- independent answers from the demo week -----------------------------------------------------
def core_seconds(job: dict) -> float:
    return job["wall_seconds"] * job["cores"]


def cpu_seconds(job: dict) -> float:
    return job["cpu_user_seconds"] + job["cpu_system_seconds"]


def sums(jobs, key: Callable[[dict], object], keep: Callable[[dict], bool] = lambda j: True):
    """{key: {"cpu", "core", "bad", "jobs", "failed"}} over the jobs kept."""
    out: dict = defaultdict(lambda: defaultdict(float))
    for job in jobs:
        if not keep(job):
            continue
        s = out[key(job)]
        s["cpu"] += cpu_seconds(job)
        s["core"] += core_seconds(job)
        s["jobs"] += 1
        if job["status"] == "failed":
            s["bad"] += core_seconds(job)
            s["failed"] += 1
    return out


def near(a, b, tol: float) -> bool:
    return a is not None and b is not None and math.isclose(float(a), float(b), abs_tol=tol)


def parse_ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def naive_utc(value) -> datetime:
    """The Thrift Server returns TIMESTAMPs as strings in the session time zone (UTC here)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime.fromisoformat(str(value)[:19])


def check_site_efficiency_this_week(rows, week) -> None:
    per = sums(week.jobs, lambda j: j["site"])
    want = sorted(
        (
            (s["cpu"] / s["core"], site, s["bad"] / s["core"], s["core"] / 3600, s["jobs"])
            for site, s in per.items()
        ),
        key=lambda t: (round(t[0], 4), t[1]),
    )
    assert [r["site"] for r in rows] == [w[1] for w in want]
    for r, (eff, _site, bad, hours, n) in zip(rows, want, strict=True):
        assert near(r["cpu_efficiency"], eff, 1e-4), (r, eff)
        assert near(r["badput_share"], bad, 1e-4), (r, bad)
        assert near(r["core_hours"], hours, 0.06), (r, hours)
        assert r["jobs"] == n


def check_pile_efficiency_below_other_sites(rows, week) -> None:
    per = sums(week.jobs, lambda j: j["site"], lambda j: j["job_type"] == "pile")
    cpu_all = sum(s["cpu"] for s in per.values())
    core_all = sum(s["core"] for s in per.values())
    below = {}
    for site, s in per.items():
        others = (cpu_all - s["cpu"]) / (core_all - s["core"])
        gap = others - s["cpu"] / s["core"]
        if gap > 0.10:
            below[site] = (100 * s["cpu"] / s["core"], 100 * others, 100 * gap)
    assert below, "the demo week plants a slow-storage site: pile must lag somewhere"
    assert week.truth["slow_storage_site"] in below
    assert {r["site"] for r in rows} == set(below)
    for r in rows:
        eff, others, gap = below[r["site"]]
        assert near(r["efficiency_pct"], eff, 0.051)
        assert near(r["other_sites_pct"], others, 0.051)
        assert near(r["points_below"], gap, 0.051)


def _link_costs(week, dst: str) -> dict[str, float]:
    """cost of 1 GB into dst per source, from the raw perfSONAR records of the week (the
    documented formula; no path into dst is congested in the demo week, so the congestion term
    is 1)."""
    lat = defaultdict(list)
    loss = defaultdict(list)
    tput = defaultdict(list)
    for rec in week.network:
        path = (rec["src_site"], rec["dst_site"])
        if rec["test"] == "latency":
            lat[path].append(rec["delay_median_ms"])
            loss[path].append(rec["packet_loss"])
        elif rec["test"] == "throughput" and rec["throughput_bps"] is not None:
            tput[path].append(rec["throughput_bps"])
    congested = (week.truth["congested_path"]["src_site"], week.truth["congested_path"]["dst_site"])
    out = {}
    for (src, d), values in tput.items():
        if d != dst:
            continue
        assert (src, d) != congested
        rtt = statistics.median_low(lat[(src, d)]) + statistics.median_low(lat[(d, src)])
        mean_loss = min(statistics.fmean(loss[(src, d)]), 0.5)
        out[src] = 8e9 / statistics.median_low(values) / (1 - mean_loss) + 10 * rtt / 1000
    return out


def check_best_source_for_destination(rows, week) -> None:
    costs = _link_costs(week, "RAL-LCG2")
    assert len(costs) == len(week.truth["sites"]) - 1
    assert [r["src_site"] for r in rows] == sorted(costs, key=costs.get)
    assert [r["source_rank"] for r in rows] == list(range(1, len(costs) + 1))
    for r in rows:
        assert math.isclose(r["seconds_per_gb"], costs[r["src_site"]], rel_tol=0.01), (r, costs)


def check_congested_links(rows, week) -> None:
    planted = week.truth["congested_path"]
    assert [(r["src_site"], r["dst_site"]) for r in rows] == [
        (planted["src_site"], planted["dst_site"])
    ]
    # congested in the busy hours only: a real share, well below one
    assert 0.10 < rows[0]["congested_share"] < 0.75


def check_high_loss_links(rows, week) -> None:
    # 5-minute intervals whose latency samples lost more than 2% (complete outages excluded)
    per_interval = defaultdict(list)
    for rec in week.network:
        loss = rec["packet_loss"]
        if rec["test"] == "latency" and loss is not None and loss < 0.999:
            t = parse_ts(rec["ts"])
            start = t - timedelta(seconds=t.timestamp() % 300)
            per_interval[(rec["src_site"], rec["dst_site"], start)].append(loss)
    lossy = defaultdict(list)
    for (src, dst, start), values in per_interval.items():
        if statistics.fmean(values) > 0.02:
            lossy[(src, dst)].append((start, statistics.fmean(values)))
    planted = week.truth["congested_path"]
    assert set(lossy) == {(planted["src_site"], planted["dst_site"])}
    assert [(r["src_site"], r["dst_site"]) for r in rows] == list(lossy)
    (row,) = rows
    intervals = sorted(lossy[(planted["src_site"], planted["dst_site"])])
    runs = 1 + sum(1 for a, b in pairwise(intervals) if (b[0] - a[0]).total_seconds() > 300)
    assert row["episodes"] == runs
    assert naive_utc(row["first_start"]) == intervals[0][0].replace(tzinfo=None)
    assert naive_utc(row["last_end"]) == (intervals[-1][0] + timedelta(minutes=5)).replace(
        tzinfo=None
    )
    assert near(row["max_loss"], max(v for _, v in intervals), 1e-4)


def check_io_wait_losses_by_site(rows, week) -> None:
    assert [r["site"] for r in rows] == [week.truth["slow_storage_site"]]
    assert rows[0]["disk_saturated_share"] > 0.5


def check_memory_pressure_hosts(rows, week) -> None:
    planted = week.truth["memory_pressure"]
    site = next(s for s, hosts in week.truth["monitored_hosts"].items() if planted["host"] in hosts)
    assert [(r["site"], r["host"]) for r in rows] == [(site, planted["host"])]
    start, end = parse_ts(planted["start"]), parse_ts(planted["end"])
    (row,) = rows
    # samples stamp the end of their 5-minute interval: the last swapping one can fall in the
    # hour that starts at the planted end
    assert naive_utc(row["first_hour"]) == start.replace(tzinfo=None)
    assert end - timedelta(hours=1) <= naive_utc(row["last_hour"]).replace(tzinfo=UTC) <= end
    planted_hours = (end - start).total_seconds() / 3600
    assert planted_hours <= row["hours_under_pressure"] <= planted_hours + 1


def check_benchmark_mismatch_simulation(rows, week) -> None:
    truth = week.truth
    deviation = {
        m: truth["speed_factor"][m]["simul"] / truth["hs23_speed_factor"][m]
        for m in truth["cpu_models"]
        if m != truth["reference_cpu_model"]
    }
    assert {r["cpu_model"] for r in rows} == set(deviation)
    for r in rows:
        assert near(r["ratio"], deviation[r["cpu_model"]], 0.06), (r, deviation)
        assert near(r["hs23_speed"], truth["hs23_speed_factor"][r["cpu_model"]], 0.006)
    # the planted mismatch (Geant4 simulation on Ivy Bridge) comes first and alone is flagged
    worst = min(deviation, key=deviation.get)
    assert rows[0]["cpu_model"] == worst
    assert {r["cpu_model"] for r in rows if r["flagged"]} == {worst}


def check_speed_factors_event_generation(rows, week) -> None:
    truth = week.truth
    assert {r["cpu_model"] for r in rows} == set(truth["cpu_models"])
    for r in rows:
        true = truth["speed_factor"][r["cpu_model"]]["evgen"]
        assert r["ci_low"] * 0.99 <= true <= r["ci_high"] * 1.01, (r, true)
        assert r["reference_model"] == truth["reference_cpu_model"]
    order = sorted(truth["cpu_models"], key=lambda m: -truth["speed_factor"][m]["evgen"])
    assert [r["cpu_model"] for r in rows] == order


def check_failure_probability_long_vs_short(rows, week) -> None:
    counts: dict = defaultdict(lambda: [0, 0, 0, 0])  # short n, short failed, long n, long failed
    for job in week.jobs:
        c = counts[job["job_type"]]
        i = 0 if job["wall_seconds"] < FOUR_HOURS else 2
        c[i] += 1
        c[i + 1] += job["status"] == "failed"
    assert [r["job_type"] for r in rows] == sorted(counts)
    for r in rows:
        sn, sf, ln, lf = counts[r["job_type"]]
        assert (r["short_attempts"], r["long_attempts"]) == (sn, ln)
        assert near(r["short_failure_probability"], sf / sn, 1e-4)
        if ln:
            assert near(r["long_failure_probability"], lf / ln, 1e-4)
        else:
            assert r["long_failure_probability"] is None


def check_job_length_advice(rows, week) -> None:
    n: dict = defaultdict(int)
    fails: dict = defaultdict(int)
    hours: dict = defaultdict(float)
    for job in week.jobs:
        t = job["job_type"]
        n[t] += 1
        hours[t] += job["wall_seconds"] / 3600
        # start-up failures (stage-in) do not depend on the length of the job
        fails[t] += job["status"] == "failed" and job["failure_mode"] != "stage-in"
    hazard = {t: fails[t] / hours[t] for t in n}
    assert [r["job_type"] for r in rows] == sorted(n, key=lambda t: (-round(hazard[t], 5), t))
    for r in rows:
        t = r["job_type"]
        assert (r["n_jobs"], r["hazard_failures"]) == (n[t], fails[t])
        assert near(r["hazard_per_hour"], hazard[t], 1e-5)
    # an advice exists where the intercept of wall time vs events could be estimated
    assert any(r["optimal_hours"] for r in rows)


def check_badput_by_site_and_job_type(rows, week) -> None:
    per = sums(week.jobs, lambda j: (j["site"], j["job_type"]))
    want = sorted(per.items(), key=lambda kv: (-round(kv[1]["bad"] / 3600, 2), kv[0]))[:5]
    assert [(r["site"], r["job_type"]) for r in rows] == [k for k, _ in want]
    for r, (_, s) in zip(rows, want, strict=True):
        assert near(r["badput_core_hours"], s["bad"] / 3600, 0.006)
        assert near(r["badput_share"], s["bad"] / s["core"], 1e-4)
        assert r["failed_jobs"] == s["failed"]


def check_multicore_scaling(rows, week) -> None:
    per = sums(week.jobs, lambda j: (j["job_type"], j["cores"]), lambda j: j["status"] == "success")
    types = {t for t, _ in per}
    multi = {t for t in types if len({c for tt, c in per if tt == t}) > 1}
    want = sorted(k for k in per if k[0] in multi)
    assert [(r["job_type"], r["cores"]) for r in rows] == want
    for r in rows:
        s = per[(r["job_type"], r["cores"])]
        fewest = per[min(k for k in per if k[0] == r["job_type"])]
        assert r["jobs"] == s["jobs"]
        assert near(r["cpu_efficiency"], s["cpu"] / s["core"], 1e-4)
        ratio = (s["cpu"] / s["core"]) / (fewest["cpu"] / fewest["core"])
        assert near(r["relative_to_fewest_cores"], ratio, 1e-4)


def check_memory_per_thread(rows, week) -> None:
    import statistics

    import numpy as np

    ok = [j for j in week.jobs if j["status"] == "success" and (j.get("max_rss_mb") or 0) > 0]
    by_cores: dict = defaultdict(list)
    for j in ok:
        by_cores[(j["job_type"], j["cores"])].append(j["max_rss_mb"])
    limits = {}
    for k, v in by_cores.items():
        m = statistics.median(v)
        limits[k] = (m, 5 * 1.4826 * statistics.median(abs(x - m) for x in v))
    per_type: dict = defaultdict(list)
    for j in ok:
        m, lim = limits[(j["job_type"], j["cores"])]
        if abs(j["max_rss_mb"] - m) <= lim:
            per_type[j["job_type"]].append((j["cores"] - 1, j["max_rss_mb"]))
    multi = sorted(t for t, v in per_type.items() if len({x for x, _ in v}) > 1)
    assert [r["job_type"] for r in rows] == multi
    for r in rows:
        x, y = np.array(per_type[r["job_type"]], float).T
        slope, intercept = np.polyfit(x, y, 1)
        assert r["jobs"] == len(x)
        assert near(r["base_mb"], intercept, 0.051)
        assert near(r["per_thread_mb"], slope, 0.051)
        assert near(r["saved_mb_4_threads"], 3 * (intercept - slope), 0.051)
        assert r["per_thread_mb_low"] < r["per_thread_mb"] < r["per_thread_mb_high"]
        # (the demo week plants 1.25 x the single-core RSS for any multi-core job plus 200 MB a
        # thread, which a line does not follow: the planted per-thread figure is recovered on
        # the simulated grid, tests/test_gold_sim.py, not here)


def check_microarchitecture_mix(rows, week) -> None:
    arch = {m: v["microarchitecture"] for m, v in week.truth["cpu_models"].items()}
    per = sums(week.jobs, lambda j: arch[j["cpu_model"]])
    total = sum(s["core"] for s in per.values())
    assert [r["microarchitecture"] for r in rows] == sorted(per, key=lambda a: -per[a]["core"])
    for r in rows:
        s = per[r["microarchitecture"]]
        assert near(r["core_hours"], s["core"] / 3600, 0.06)
        assert near(r["core_hour_share"], s["core"] / total, 1e-4)
        assert near(r["cpu_efficiency"], s["cpu"] / s["core"], 1e-4)


def check_vo_usage_this_week(rows, week) -> None:
    per = sums(week.jobs, lambda j: j["vo"])
    sites = defaultdict(set)
    for job in week.jobs:
        sites[job["vo"]].add(job["site"])
    assert [r["vo"] for r in rows] == sorted(per, key=lambda v: -per[v]["core"])
    for r in rows:
        s = per[r["vo"]]
        assert (r["sites"], r["jobs"]) == (len(sites[r["vo"]]), s["jobs"])
        assert near(r["core_hours"], s["core"] / 3600, 0.06)
        assert near(r["cpu_efficiency"], s["cpu"] / s["core"], 1e-4)
        assert near(r["failure_rate"], s["failed"] / s["jobs"], 1e-4)


CHECKS: dict[str, Callable] = {
    name.removeprefix("check_"): fn for name, fn in globals().items() if name.startswith("check_")
}


# --- through the Thrift Server --------------------------------------------------------------------
@pytest.fixture(scope="module")
def pyhive_rows(thrift):
    from gridlake.serving import thrift_auth

    conn = thrift_auth.connect("operator")

    def run(sql: str) -> list[dict]:
        cur = conn.cursor()
        try:
            cur.execute(sql)
            names = [d[0].split(".")[-1] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        finally:
            cur.close()

    yield run
    conn.close()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in example_files()))
def test_example_answers_its_question(name, pyhive_rows, gold_demo) -> None:
    rows = pyhive_rows((EXAMPLES / f"{name}.sql").read_text())
    assert rows, f"{name}: no rows on the demo week"
    assert all(isinstance(r, dict) for r in rows)
    CHECKS[name](rows, gold_demo)
