"""CPU speed factors from real jobs: synthetic grid with a planted truth.

Ten CPU models in two groups that share no task (eight Intel/AMD models; two ARM models at two
sites of their own), three job types, ~270 informative tasks on 2-4 models each, log-normal
noise sd 0.05 on CPU time per event. Planted: every model's speed equals its declared HS23 per
core except the Ivy Bridge model, 20 % slower than its benchmark in simulation only; the nodes of
site SLOW run 15 % slower than the same models elsewhere.
"""

from __future__ import annotations

import math
import random
from statistics import median

import pytest
from pyspark.sql import functions as F

from gridlake.gold import speed_factors as sf
from gridlake.spark import rows_frame

JOBS_DDL = (
    "job_id string, task_id string, job_type string, site string, cpu_model string, "
    "microarchitecture string, status string, events bigint, cpu_seconds double, "
    "cores_wall_seconds double, hs23_per_core double, is_outlier boolean"
)
MODELS = {  # model: (microarchitecture, planted speed = declared HS23 / 10, group)
    "Xeon E5-2630 v3": ("Haswell", 1.00, 1),
    "Xeon E5-2650 v2": ("Ivy Bridge", 0.85, 1),
    "Xeon E5-2660 v4": ("Broadwell", 1.10, 1),
    "Xeon Gold 6130": ("Skylake", 1.30, 1),
    "EPYC 7302": ("Zen 2", 1.45, 1),
    "Xeon X5650": ("Westmere", 0.55, 1),
    "Xeon E5-2670": ("Sandy Bridge", 0.80, 1),
    "EPYC 7763": ("Zen 3", 1.70, 1),
    "Ampere Altra": ("Neoverse N1", 1.00, 2),
    "Kunpeng 920": ("TaiShan v110", 0.75, 2),
}
MISMATCH_MODEL, MISMATCH_TYPE, MISMATCH_SPEED = "Xeon E5-2650 v2", "simul", 0.80
SITES = {
    "Xeon E5-2630 v3": ["CERN", "FZK"],
    "Xeon E5-2650 v2": ["CERN", "RAL"],
    "Xeon E5-2660 v4": ["FZK", "RAL"],
    "Xeon Gold 6130": ["CERN", "FZK", "RAL", "SLOW"],
    "EPYC 7302": ["CERN", "BNL", "SLOW"],
    "Xeon X5650": ["RAL", "BNL"],
    "Xeon E5-2670": ["FZK", "BNL"],
    "EPYC 7763": ["BNL", "CERN"],
    "Ampere Altra": ["ARM1", "ARM2"],
    "Kunpeng 920": ["ARM1", "ARM2"],
}
SLOW_SITE, SLOWDOWN, SLOW_SHARE = "SLOW", 1.15, 0.05
JOB_TYPES = ("evgen", "pile", "simul")
NOISE = 0.05
BOOTSTRAP = 39  # type-6 percentiles: the 1st and 39th of 39 replicates are exact 95 % limits


def planted(model: str, job_type: str) -> float:
    speed = MODELS[model][1]
    return speed * MISMATCH_SPEED if (model, job_type) == (MISMATCH_MODEL, MISMATCH_TYPE) else speed


def synthetic_jobs(seed: int = 5, tasks_per_type: int = 90) -> list[tuple]:
    rnd = random.Random(seed)
    group1 = [m for m, v in MODELS.items() if v[2] == 1]
    group2 = [m for m, v in MODELS.items() if v[2] == 2]
    rows: list[tuple] = []

    def emit(task: str, job_type: str, model: str, n: int, base: float, **over: object) -> None:
        for _ in range(n):
            sites = SITES[model]
            if SLOW_SITE in sites and rnd.random() < SLOW_SHARE:
                site = SLOW_SITE
            else:
                site = rnd.choice([s for s in sites if s != SLOW_SITE])
            events = rnd.randint(50, 500)
            per_event = base / planted(model, job_type) * math.exp(rnd.gauss(0.0, NOISE))
            if site == SLOW_SITE:
                per_event *= SLOWDOWN
            cpu = events * per_event
            row = {
                "job_id": f"j{len(rows)}",
                "task_id": task,
                "job_type": job_type,
                "site": site,
                "cpu_model": model,
                "microarchitecture": MODELS[model][0],
                "status": "success",
                "events": events,
                "cpu_seconds": cpu,
                "cores_wall_seconds": cpu / rnd.uniform(0.75, 0.95),
                "hs23_per_core": 10.0 * MODELS[model][1],
                "is_outlier": False,
            }
            row.update(over)
            rows.append(tuple(row.values()))

    def base() -> float:
        return math.exp(rnd.uniform(math.log(5.0), math.log(300.0)))

    for job_type in JOB_TYPES:
        for t in range(tasks_per_type):
            task, b = f"{job_type}-{t}", base()
            for model in rnd.sample(group1, rnd.randint(2, 4)):
                emit(task, job_type, model, rnd.randint(5, 12), b)
    for t in range(15):  # the second group: ARM models only, never with group 1 on a task
        task, b = f"arm-{t}", base()
        for model in group2:
            emit(task, JOB_TYPES[t % 3], model, rnd.randint(5, 12), b)
    for t in range(9):  # single-model tasks: no information, must not appear
        emit(f"solo-{t}", JOB_TYPES[t % 3], "Xeon E5-2670", 5, base())
    # rows the fit must ignore: failed, no events, CPU above wall x cores
    emit("simul-0", "simul", "Xeon X5650", 3, 1000.0, status="failed")
    emit("simul-0", "simul", "Xeon X5650", 3, 1000.0, events=None)
    emit("simul-0", "simul", "Xeon X5650", 3, 1000.0, is_outlier=True)
    return rows


def with_junk(rows: list[tuple], share: float = 0.02, seed: int = 5) -> list[tuple]:
    """2 % more jobs that are junk: stuck (CPU and wall x 50, not flagged) or events = 1."""
    rnd = random.Random(seed)
    good = [r for r in rows if r[6] == "success" and r[7] and not r[11]]
    junk = []
    for i, r in enumerate(rnd.sample(good, int(len(rows) * share))):
        r = list(r)
        r[0] = f"junk{i}"
        if i % 2:
            r[8] *= 50.0
            r[9] *= 50.0
        else:
            r[7] = 1
        junk.append(tuple(r))
    return rows + junk


@pytest.fixture(scope="module")
def jobs_rows() -> list[tuple]:
    return synthetic_jobs()


@pytest.fixture(scope="module")
def result(spark, jobs_rows):
    jobs = rows_frame(spark, jobs_rows, JOBS_DDL)
    out = sf.compute(jobs, bootstrap=BOOTSTRAP, seed=1)
    return {name: df.collect() for name, df in out.items()}


@pytest.fixture(scope="module")
def factors(result) -> dict[tuple[str, str], object]:
    return {(r.job_type, r.cpu_model): r for r in result["gold.cpu_speed_factors"]}


def job_counts(rows: list[tuple]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for r in rows:
        for jt in (r[2], sf.ALL):
            out[(jt, r[4])] = out.get((jt, r[4]), 0) + 1
    return out


def truth(job_type: str, model: str, reference: str) -> float | None:
    """Planted factor relative to the reference; None where the truth is a mixture (the
    mismatching model in ALL, where a third of its jobs are 20 % slower)."""
    if job_type == sf.ALL:
        if model == MISMATCH_MODEL or reference == MISMATCH_MODEL:
            return None
        return MODELS[model][1] / MODELS[reference][1]
    return planted(model, job_type) / planted(reference, job_type)


def test_tables_have_their_columns(result) -> None:
    for table in sf.TABLES:
        assert table.grain and table.description
        assert all(c.comment for c in table.columns)
        rows = result[table.full_name]
        assert rows, table.full_name
        assert list(rows[0].asDict()) == table.column_names


def test_poisson_weights_have_mean_and_variance_one(spark) -> None:
    df = spark.range(20000).select(
        sf.poisson1(
            F.pmod(F.xxhash64(F.col("id"), F.lit(7)), F.lit(1 << 53)) / float(1 << 53)
        ).alias("k")
    )
    row = df.agg(F.avg("k").alias("m"), F.var_pop("k").alias("v")).first()
    assert row.m == pytest.approx(1.0, abs=0.03)
    assert row.v == pytest.approx(1.0, abs=0.05)


def test_connected_groups_by_label_propagation(spark) -> None:
    edges = rows_frame(
        spark,
        [
            ("x", "t1", "A"), ("x", "t1", "B"), ("x", "t2", "B"), ("x", "t2", "C"),
            ("x", "t3", "C"), ("x", "t3", "D"),  # A-B-C-D chain: 3 hops
            ("x", "t4", "E"), ("x", "t4", "F"),
            ("y", "t1", "C"), ("y", "t1", "A"),
        ],
        "job_type string, task string, cpu_model string",
    )  # fmt: skip
    out = {(r.job_type, r.cpu_model): r.group for r in sf.connected_groups(edges).collect()}
    assert out == {
        ("x", "A"): "A", ("x", "B"): "A", ("x", "C"): "A", ("x", "D"): "A",
        ("x", "E"): "E", ("x", "F"): "E",
        ("y", "A"): "A", ("y", "C"): "A",
    }  # fmt: skip


def test_model_components_of_a_fit_against_a_graph_search() -> None:
    """The fit's own components (numpy label propagation) equal a breadth-first search's, on
    random sparse bipartite graphs (some models left alone, long chains)."""
    import random
    from collections import deque

    import numpy as np

    rnd = random.Random(5)
    for _ in range(30):
        n_tasks, n_models = rnd.randint(1, 40), rnd.randint(1, 25)
        cells = {(rnd.randrange(n_tasks), rnd.randrange(n_models))
                 for _ in range(rnd.randint(1, 60))}  # fmt: skip
        t_raw, m_raw = zip(*sorted(cells), strict=True)
        # indexes from 0 in order of appearance, as pd.factorize gives them
        t = np.unique(t_raw, return_inverse=True)[1]
        m = np.unique(m_raw, return_inverse=True)[1]
        labels = sf.model_components(t, m)
        adj: dict = {}
        for ti, mi in zip(t, m, strict=True):
            adj.setdefault(("t", ti), set()).add(("m", mi))
            adj.setdefault(("m", mi), set()).add(("t", ti))
        for mi in range(int(m.max()) + 1):
            seen, todo = {("m", mi)}, deque([("m", mi)])
            while todo:
                for nxt in adj[todo.popleft()] - seen:
                    seen.add(nxt)
                    todo.append(nxt)
            assert labels[mi] == min(k for kind, k in seen if kind == "m"), (cells, mi)


def test_a_replicate_started_from_the_data_terms_reaches_the_cold_fit_in_fewer_sweeps() -> None:
    """The bootstrap's warm start (fit_replicates): a replicate's fit started from the data's
    model and site terms ends at the terms a fit from zero reaches (within the tolerance's
    reach), in fewer sweeps; and the data's own terms, as start, are already its fixed point."""
    import numpy as np

    rng = np.random.default_rng(3)
    n_tasks, n_models, n_sites = 300, 12, 6
    a = rng.normal(0, 1, n_tasks)
    b = np.concatenate([[0.0], rng.normal(0, 0.3, n_models - 1)])  # model 0: the reference
    c = rng.normal(0, 0.1, n_sites)
    t = np.repeat(np.arange(n_tasks), 4)
    m = rng.integers(0, n_models, t.size)
    s = (m + rng.integers(0, 2, t.size)) % n_sites  # sites partly aligned with models
    m[:: n_tasks // 10] = 0  # the reference has cells
    y = a[t] + b[m] + c[s] + rng.normal(0, 0.05, t.size)
    w = rng.integers(1, 20, t.size).astype(float)
    ref = m == 0
    tol = 1e-8
    _, b0, c0, _, ok0 = sf._fit_terms(t, m, s, ref, y, w, tol, 200)
    assert ok0 and abs(b0[0]) < 1e-12
    again = sf._fit_terms(t, m, s, ref, y, w, tol, 200, start=(b0, c0))
    assert again[4] and again[3] <= 2 and np.allclose(again[1], b0, atol=1e-7)
    # a replicate: every task weighted by a Poisson(1) draw, those drawn 0 left out
    tw = rng.poisson(1.0, n_tasks).astype(float)
    keep = np.flatnonzero(tw[t] > 0)
    rt = np.unique(t[keep], return_inverse=True)[1]
    models, rm = np.unique(m[keep], return_inverse=True)
    sites, rs = np.unique(s[keep], return_inverse=True)
    args = (rt, rm, rs, ref[keep], y[keep], w[keep] * tw[t[keep]], tol, 200)
    _, b_cold, c_cold, n_cold, ok_cold = sf._fit_terms(*args)
    _, b_warm, c_warm, n_warm, ok_warm = sf._fit_terms(*args, start=(b0[models], c0[sites]))
    assert ok_cold and ok_warm and n_warm < n_cold, (n_warm, n_cold)
    assert np.allclose(b_warm, b_cold, atol=1e-6) and np.allclose(c_warm, c_cold, atol=1e-6)
    assert not np.allclose(b_warm, b0[models], atol=1e-4)  # the replicate moved the terms


def test_reference_models_prefer_configured_then_all_then_core_hours(spark) -> None:
    groups = rows_frame(
        spark,
        [("ALL", m, "A") for m in "ABC"]
        + [("pile", m, "B") for m in "BC"]
        + [("simul", m, "A") for m in "AB"],
        "job_type string, cpu_model string, group string",
    )
    hours = {"A": 10.0, "B": 30.0, "C": 20.0}
    cells = rows_frame(
        spark,
        [(jt, f"t-{m}", m, 1, hours[m] * (3.0 if (jt, m) == ("pile", "C") else 1.0))
         for jt, ms in (("ALL", "ABC"), ("pile", "BC"), ("simul", "AB")) for m in ms],
        "job_type string, task string, cpu_model string, n_jobs bigint, core_hours double",
    )  # fmt: skip

    def refs(configured: str | None) -> dict[str, str]:
        rows = sf.reference_models(groups, cells, configured).collect()
        return {r.job_type: r.reference_model for r in rows}

    # default: most core-hours in ALL (B); pile has more hours on C but shares B with ALL
    assert refs(None) == {"ALL": "B", "pile": "B", "simul": "B"}
    # configured A: wherever A is; pile has no A: the ALL reference (A) is absent, most hours: C
    assert refs("A") == {"ALL": "A", "pile": "C", "simul": "A"}


def test_connected_groups_are_found(factors) -> None:
    for (jt, model), r in factors.items():
        group = MODELS[model][2]
        assert r.group_id == group, (jt, model)
        assert MODELS[r.reference_model][2] == group
    for jt in (*JOB_TYPES, sf.ALL):
        assert {m for (j, m) in factors if j == jt} == set(MODELS), jt
    refs = {(r.job_type, r.group_id): r.reference_model for r in factors.values()}
    # default reference: the model with most core-hours in the group (the slowest, here)
    assert refs[(sf.ALL, 1)] == "Xeon X5650"
    assert refs[(sf.ALL, 2)] == "Kunpeng 920"
    # the reference of a job type's group is the ALL group's one: factors are comparable
    for jt in JOB_TYPES:
        assert refs[(jt, 1)] == refs[(sf.ALL, 1)]
        assert refs[(jt, 2)] == refs[(sf.ALL, 2)]
    for r in factors.values():
        if r.cpu_model == r.reference_model:
            assert r.speed_factor == pytest.approx(1.0)
            assert (r.ci_low, r.ci_high) == pytest.approx((1.0, 1.0))
        assert r.converged and 1 <= r.iterations < 100
        assert r.n_replicates >= BOOTSTRAP - 2


def test_factors_match_planted_truth(factors, jobs_rows) -> None:
    counts = job_counts(jobs_rows)
    checked = 0
    for (jt, model), r in factors.items():
        expected = truth(jt, model, r.reference_model)
        if expected is None or counts[(jt, model)] < 200:
            continue
        assert r.speed_factor == pytest.approx(expected, rel=0.02), (jt, model)
        checked += 1
    assert checked >= 20


def test_intervals_cover_the_planted_truth(factors) -> None:
    covered = []
    for (jt, model), r in factors.items():
        expected = truth(jt, model, r.reference_model)
        if expected is None or model == r.reference_model:
            continue
        assert r.ci_low <= r.speed_factor <= r.ci_high
        covered.append(r.ci_low <= expected <= r.ci_high)
    assert len(covered) >= 30
    assert sum(covered) / len(covered) >= 0.90


def test_benchmark_mismatch_flags_only_the_planted_model(result) -> None:
    rows = result["gold.benchmark_mismatch"]
    flagged = {(r.job_type, r.cpu_model) for r in rows if r.flagged}
    assert flagged == {(MISMATCH_TYPE, MISMATCH_MODEL)}
    (row,) = [r for r in rows if (r.job_type, r.cpu_model) == (MISMATCH_TYPE, MISMATCH_MODEL)]
    assert row.ratio == pytest.approx(MISMATCH_SPEED, rel=0.03)
    assert row.ratio_ci_high < 0.9
    assert row.benchmark_factor == pytest.approx(
        MODELS[MISMATCH_MODEL][1] / MODELS[row.reference_model][1]
    )


def test_job_types_agree_except_the_planted_model(result) -> None:
    rows = {(r.job_type_a, r.job_type_b): r for r in result["gold.speed_factor_agreement"]}
    assert set(rows) == {("evgen", "pile"), ("evgen", "simul"), ("pile", "simul"), ("ALL", "ALL")}
    assert rows[("evgen", "pile")].mean_abs_rel_diff < 0.02
    assert rows[("evgen", "pile")].max_abs_rel_diff < 0.04
    for pair in (("evgen", "simul"), ("pile", "simul")):
        r = rows[pair]
        assert r.max_diff_model == MISMATCH_MODEL
        assert r.max_abs_rel_diff == pytest.approx(0.2 / 0.9, abs=0.03)  # |1 - 0.8| / 0.9
        assert r.n_models == 8  # 7 + 1 shared models, references excluded
    assert rows[("ALL", "ALL")].n_models == 24


def test_slow_site_is_flagged_and_no_other(result) -> None:
    rows = result["gold.site_speed_anomalies"]
    flagged = {(r.job_type, r.site, r.cpu_model) for r in rows if r.flagged}
    assert {s for (_, s, _) in flagged} == {SLOW_SITE}
    for jt in (*JOB_TYPES, sf.ALL):
        assert (jt, SLOW_SITE, sf.ALL) in flagged
    by_key = {(r.job_type, r.site, r.cpu_model): r for r in rows}
    slow = by_key[(sf.ALL, SLOW_SITE, sf.ALL)]
    assert slow.slowdown == pytest.approx(SLOWDOWN, rel=0.03)
    assert slow.ci_low <= SLOWDOWN <= slow.ci_high
    for model in ("Xeon Gold 6130", "EPYC 7302"):
        assert by_key[(sf.ALL, SLOW_SITE, model)].slowdown == pytest.approx(SLOWDOWN, rel=0.04)
    for (jt, site, model), r in by_key.items():
        if site != SLOW_SITE and model == sf.ALL and jt == sf.ALL:
            assert r.slowdown == pytest.approx(1.0, abs=0.02), site
    # both groups have their sites, each relative to its own median site
    assert {r.site for r in rows if r.group_id == 2} == {"ARM1", "ARM2"}


def test_junk_jobs_move_no_factor(spark, jobs_rows, factors) -> None:
    junk = rows_frame(spark, with_junk(jobs_rows), JOBS_DDL)
    out = sf.compute(junk, bootstrap=0, seed=1)["gold.cpu_speed_factors"].collect()
    moved = {
        (r.job_type, r.cpu_model): abs(
            r.speed_factor / factors[(r.job_type, r.cpu_model)].speed_factor - 1
        )
        for r in out
    }
    assert set(moved) == set(factors)
    assert max(moved.values()) < 0.005, max(moved.items(), key=lambda kv: kv[1])


def test_the_window_keeps_the_latest_13_weeks_whichever_way_it_is_found(spark) -> None:
    """The fit's window, computed in the query (a full analyze) or from a latest week the
    caller found (an incremental analyze reads only the window's week partitions): the same
    rows, the 13 weeks ending with the latest, and the rows of a null week."""
    import datetime as dt

    latest = dt.date(2026, 8, 3)
    weeks = [latest - dt.timedelta(weeks=k) for k in range(16)] + [None]
    cells = rows_frame(
        spark,
        [(w, "model", "A", f"A/{i}", "m", "*", 0.5, 1, 0.1) for i, w in enumerate(weeks)],
        "week DATE, variant STRING, job_type STRING, task STRING, cpu_model STRING, "
        "site STRING, y DOUBLE, n_jobs BIGINT, core_hours DOUBLE",
    )
    models = rows_frame(
        spark, [(w, "m", "x", 10.0, 1) for w in weeks],
        "week DATE, cpu_model STRING, microarchitecture STRING, hs23_per_core DOUBLE, "
        "n_jobs BIGINT",
    )  # fmt: skip
    expected = sorted(weeks[: sf.WINDOW_WEEKS])  # the latest and the 12 weeks before it
    for known in (None, latest):
        kept_cells, kept_models = sf.in_window(cells, models, latest_week=known)
        for kept in (kept_cells, kept_models):
            got = [r.week for r in kept.collect()]
            assert sorted(w for w in got if w) == expected
            assert got.count(None) == 1
    # a shorter window from a known latest week
    short, _ = sf.in_window(cells, models, window_weeks=2, latest_week=latest)
    assert {r.week for r in short.collect()} == {latest, latest - dt.timedelta(weeks=1), None}


def test_synthetic_data_is_what_the_docstring_says(jobs_rows) -> None:
    cells: dict[tuple[str, str], set[str]] = {}
    for r in jobs_rows:
        cells.setdefault((r[2], r[1]), set()).add(r[4])
    informative = [len(m) for m in cells.values() if len(m) >= 2]
    assert 250 <= len(informative) <= 300
    assert median(informative) >= 2
    assert 5000 <= len(jobs_rows) <= 9000


# --------------------------------------------------------------------------------------------
# Real HEPiX strings: the declared benchmark the fit uses is the table's value
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_fit_uses_the_hepix_table_benchmark_for_real_cpu_strings(spark, tmp_path) -> None:
    """CPU strings measured once in HS23scores.csv (their reference value is that measurement),
    in jobs that declare no benchmark: silver takes HS23 per core from the reference table and
    gold.benchmark_mismatch reports, per model, exactly the table's Score/Ncores."""
    import csv
    import json

    from gridlake.silver.files import silver_jobs_from_jsonl

    from .conftest import REALDATA

    table = REALDATA / "hepix-benchmark-scores" / "HS23scores.csv"
    if not table.is_file():
        pytest.skip(f"real samples not found at {table}")
    with table.open() as f:
        rows = list(csv.DictReader(f))
    by_cpu: dict[str, list[float]] = {}
    for r in rows:
        by_cpu.setdefault(r["CPU"], []).append(float(r["Score/Ncores"]))
    probes = (REALDATA / "hepix-benchmark-scores" / "jobprobes_withHS23.csv").read_text()
    # measured once, not in the job-probe table the reference also takes medians over, and a
    # physical model (the reference leaves out hypervisor names such as "Intel Core Processor
    # (Haswell, no TSX, IBRS)": the host behind them may be any later generation)
    from gridlake.reference.cpu_models import normalise

    from .test_cpu_models import load_build_script

    virtual = load_build_script().EXCLUDE
    once = {cpu: v[0] for cpu, v in by_cpu.items()
            if len(v) == 1 and cpu not in probes
            and not virtual.search(normalise(cpu))}  # fmt: skip
    assert len(once) >= 20, len(once)

    path = tmp_path / "jobs.jsonl"
    with path.open("w") as out:
        for i, cpu in enumerate(sorted(once)):
            for k in range(3):  # one task on every model: one connected group
                out.write(json.dumps({
                    "job_id": f"hepix-{i}-{k}", "attempt": 1, "vo": "atlas", "site": "S",
                    "host": f"wn{i}.s.example.org", "task_id": "t1", "job_type": "simul",
                    "cpu_model": cpu, "cores": 1, "start_time": "2026-11-16T00:00:00Z",
                    "submit_time": "2026-11-15T23:00:00Z", "end_time": "2026-11-16T01:00:00Z",
                    "wall_seconds": 3600,
                    "cpu_user_seconds": 3000.0 / once[cpu] * (1 + k / 100),
                    "cpu_system_seconds": 0.0, "events": 100, "status": "success",
                    "source_format": "canonical",
                }) + "\n")  # fmt: skip
    jobs = silver_jobs_from_jsonl(spark, str(path))
    used = {r.cpu_model: r.hs23_per_core for r in jobs.select("cpu_model", "hs23_per_core")
            .distinct().collect()}  # fmt: skip
    assert used == pytest.approx(once, abs=0.051)  # the reference keeps one decimal place
    frames = sf.compute(jobs, bootstrap=3)
    mismatch = {r.cpu_model: r.hs23_per_core for r in frames["gold.benchmark_mismatch"].collect()
                if r.job_type == "simul"}  # fmt: skip
    assert mismatch.keys() == once.keys()
    assert mismatch == pytest.approx(used, rel=1e-9)
