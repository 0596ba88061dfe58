"""``make bench`` stage ``freshness``: how long a job that has just finished takes to show on the
dashboards, with Airflow scheduling the DAGs as in production.

**Set-up.** The bench instance runs what ``make up`` starts (Derby, Kafka, the gridlake Spark
server, the Thrift Server, Superset) and a scheduled Airflow with grid_ingest and grid_analytics
unpaused, exactly as deployed: grid_ingest every 5 minutes, its production schedule
(``GRIDLAKE_FRESHNESS_SCHEDULE_MINUTES`` sets another through ``GRIDLAKE_INGEST_CRON``, e.g. a
shorter one for quicker probes). Before Airflow starts,
a week of the grid's history (the scale's jobs a day) goes through publish, ingest, refine and
analyze by hand (the ``history`` figures).

**A probe.** At a chosen moment T a batch of one production period's new jobs (jobs a day /
288, their times moved to end just before T) is published to Kafka; one runs at a site of its own
(``FRESHNESS-PROBE-<k>``). Then the stage watches, every ``poll`` seconds: the operator's SQL
(``grid.site_efficiency_weekly`` through the Thrift Server, signed in as ``operator``) and the
"Grid operations" dashboard's *Jobs* chart through Superset's chart-data API (signed in as the
admin, the dashboard's default week filter, the probe's site), until both show the probe. The
Airflow task instances of the runs that carried it (from Airflow's metadata DB) give each
stage's part: waiting for the schedule, ingest, refine_jobs, waiting for grid_analytics,
analyze_site_efficiency, and the serving lag after it. The probes' moments are spread evenly over
the schedule's period (phase (k + 0.5) / probes): the schedule wait is sampled as arrivals see it.

**Figures.** ``end_to_end_p95_s`` is the production schedule's: the schedule wait of a
uniformly arriving job at its 95th percentile (0.95 x the production period) plus the 95th
percentile of what the probes measured after the wait (a sum of percentiles: an upper bound).
``pipeline_p95_s``: from the ingest task's start to the probe visible in the SQL view (ingest,
refine and the incremental analyze of the group that writes it, and the waits between the tasks).
``end_to_end_bench_schedule_p95_s``: T to visible in the dashboard, as measured under the
bench's schedule (the production one unless GRIDLAKE_FRESHNESS_SCHEDULE_MINUTES says otherwise).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gridlake.ops.orchestration import INGEST_PERIOD_MINUTES
from gridlake.settings import REPO_ROOT, get_settings

PRODUCTION_PERIOD_S = INGEST_PERIOD_MINUTES * 60  # grid_ingest's schedule in production
PROBE_SITE = "FRESHNESS-PROBE-{k}"


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def _infra(script: str, action: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        ["bash", str(REPO_ROOT / "infra" / script), action],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def _cli(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gridlake.ops.cli", *args], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return round(time.perf_counter() - t0, 1)


def _ts(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def split_history(lines: list[str], now: datetime) -> tuple[list[str], list[dict]]:
    """The simulated records that ended before ``now`` (history, as published) and the others
    (the pool the probes' batches are drawn from: records never published)."""
    past, pool = [], []
    for line in lines:
        rec = json.loads(line)
        (past.append(line) if _parse(rec["end_time"]) <= now else pool.append(rec))
    return past, pool


def probe_batch(
    pool: list[dict], size: int, k: int, now: datetime, rng: random.Random
) -> list[str]:
    """``size`` records from the pool as jobs that ended in the minute before ``now``: their
    submit, start and end times moved together (durations kept), new job ids; the first one at
    the probe's own site."""
    out = []
    for i in range(size):
        rec = dict(pool[rng.randrange(len(pool))])
        shift = now - timedelta(seconds=rng.uniform(1, 60)) - _parse(rec["end_time"])
        for key in ("submit_time", "start_time", "end_time"):
            if rec.get(key):
                rec[key] = _ts(_parse(rec[key]) + shift)
        rec["job_id"] = f"{rec['job_id']}-fresh{k}-{i}"
        rec["retry_of"], rec["attempt"] = None, 1
        if i == 0:
            rec["site"] = PROBE_SITE.format(k=k)
            rec["host"] = f"wn01.freshness-probe-{k}.example.org"
        out.append(json.dumps(rec))
    return out


def _airflow_db(settings: Any) -> Path:
    return settings.state / "airflow" / "airflow.db"


def _task_times(
    db: Path, dag_id: str, task_id: str, after: datetime
) -> tuple[datetime, datetime] | None:
    """(start, end) of the first finished run of ``dag_id.task_id`` that started after ``after``."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    try:
        rows = con.execute(
            "SELECT start_date, end_date FROM task_instance WHERE dag_id = ? AND task_id = ? "
            "AND start_date >= ? ORDER BY start_date LIMIT 1",
            (dag_id, task_id, after.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")),
        ).fetchall()
    finally:
        con.close()
    if not rows:
        return None

    def parse(v: str | None) -> datetime | None:
        return None if v is None else datetime.fromisoformat(v).replace(tzinfo=UTC)

    start = parse(rows[0][0])
    return None if start is None else (start, parse(rows[0][1]))


def _analytics_running(db: Path) -> bool:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    try:
        (n,) = con.execute(
            "SELECT count(*) FROM dag_run WHERE dag_id IN ('grid_analytics', 'grid_ingest') "
            "AND state IN ('queued', 'running')"
        ).fetchone()
    finally:
        con.close()
    return n > 0


class _Watch:
    """The two places a person sees the probe: the SQL view and the dashboard's chart."""

    def __init__(self, settings: Any) -> None:
        from gridlake.serving.superset_assets.grid_operations import GRID_OPERATIONS
        from gridlake.serving.superset_client import SupersetClient, dashboard_queries, read_login
        from gridlake.serving.thrift_auth import connect

        self.sql = connect("operator", settings).cursor()
        user, password = read_login(settings.state / "secrets" / "superset_admin.txt")
        self.api = SupersetClient(f"http://127.0.0.1:{settings.superset_port}", user, password)
        queries = dict(dashboard_queries(self.api, GRID_OPERATIONS))
        self.chart = queries["total_jobs"]
        self.chart["force"] = False  # as the browser asks when the dashboard opens

    def in_sql(self, site: str) -> bool:
        self.sql.execute(
            "SELECT sum(jobs) FROM grid.site_efficiency_weekly WHERE site = %(site)s",
            {"site": site},
        )
        (value,) = self.sql.fetchone()
        return bool(value)

    def in_dashboard(self, site: str) -> bool:
        qc = json.loads(json.dumps(self.chart))
        qc["queries"][0]["filters"].append({"col": "site", "op": "IN", "val": [site]})
        _, result = self.api.data(qc)
        if result.get("error"):
            raise RuntimeError(f"grid-operations/total_jobs: {result['error'][:300]}")
        values = [v for row in result.get("data") or [] for v in row.values()]
        return any(isinstance(v, int | float) and v > 0 for v in values)


def bench_freshness(
    scale_name: str, day_jobs: int, work: Path, simulate: Callable[..., Any]
) -> dict[str, Any]:
    """``simulate``: the bench's simulator runner (``bench._simulate``), passed in so that this
    module does not import the bench back."""
    from gridlake.sources.publish import publish_files

    settings = get_settings()
    minutes = os.environ.get("GRIDLAKE_FRESHNESS_SCHEDULE_MINUTES", str(INGEST_PERIOD_MINUTES))
    period_s = int(float(minutes) * 60)
    probes = int(os.environ.get("GRIDLAKE_FRESHNESS_PROBES", "5"))
    poll = float(os.environ.get("GRIDLAKE_FRESHNESS_POLL_SECONDS", "5"))
    rng = random.Random(24)
    now = datetime.now(UTC).replace(microsecond=0)
    start = (now - timedelta(days=6)).date()
    sim = work / "sim-freshness"
    simulate(sim, day_jobs * 8, 8, start, monitored_hosts=0, latency_interval=86400)
    history, pool = split_history((sim / "jobs.jsonl").read_text().splitlines(), now)
    history_file = work / "freshness-history.jsonl"
    history_file.write_text("\n".join(history) + "\n")
    batch = max(1, day_jobs * PRODUCTION_PERIOD_S // 86_400)
    out: dict[str, Any] = {
        "schedule_minutes_bench": period_s / 60,
        "schedule_minutes_production": PRODUCTION_PERIOD_S / 60,
        "history": {"jobs": len(history), "days": 7},
        "batch_jobs": batch,
        "probes": [],
    }
    started: list[str] = []
    cron = f"*/{period_s // 60} * * * *" if period_s % 60 == 0 else None
    if cron is None or period_s < 60:
        raise SystemExit("GRIDLAKE_FRESHNESS_SCHEDULE_MINUTES: a whole number of minutes")
    airflow_env = {
        "GRIDLAKE_INGEST_CRON": cron,
        "GRIDLAKE_AIRFLOW_UNPAUSE": "grid_ingest grid_analytics",
    }
    try:
        for script in ("spark_server.sh",):
            _infra(script, "start")
            started.append(script)
        _cli("init")
        for script in ("thrift.sh", "superset.sh"):
            _infra(script, "start")
            started.append(script)
        report = publish_files("grid.jobs", [history_file], progress=False)
        if not report.ok:
            raise RuntimeError(f"publish: {report.problems[:3]}")
        out["history"]["seconds"] = {
            "ingest": _cli("ingest"), "refine": _cli("refine"), "analyze": _cli("analyze"),
        }  # fmt: skip
        watch = _Watch(settings)
        _infra("airflow.sh", "start", airflow_env)
        started.append("airflow.sh")
        db = _airflow_db(settings)
        for k in range(probes):
            # wait for the pipeline to be idle, then for the probe's phase of the period
            while _analytics_running(db):
                time.sleep(poll)
            phase = (k + 0.5) / probes * period_s
            now_s = time.time()
            at = (now_s // period_s + 1) * period_s + phase
            if at - period_s > now_s + 5:
                at -= period_s
            time.sleep(max(0.0, at - time.time()))
            site = PROBE_SITE.format(k=k)
            t0 = datetime.now(UTC)
            lines = probe_batch(pool, batch, k, t0, rng)
            payload = work / f"probe-{k}.jsonl"
            payload.write_text("\n".join(lines) + "\n")
            report = publish_files("grid.jobs", [payload], progress=False)
            if not report.ok:
                raise RuntimeError(f"publish probe {k}: {report.problems[:3]}")
            seen_sql = seen_dash = None
            deadline = time.time() + max(3 * PRODUCTION_PERIOD_S, 1800) + period_s
            while seen_dash is None:
                if time.time() > deadline:
                    raise RuntimeError(f"probe {k} ({site}) not visible after {deadline} s")
                time.sleep(poll)
                if seen_sql is None and watch.in_sql(site):
                    seen_sql = datetime.now(UTC)
                if seen_sql is not None and watch.in_dashboard(site):
                    seen_dash = datetime.now(UTC)
            got = _probe_parts(db, k, t0, seen_sql, seen_dash)
            out["probes"].append(got)
            print(f"   probe {k}: {got['end_to_end_s']} s end to end, pipeline "
                  f"{got['pipeline_s']} s", file=sys.stderr, flush=True)  # fmt: skip
    finally:
        for script in reversed(started):
            _infra(script, "stop")
    return out | summarise(out["probes"], period_s)


def _probe_parts(db: Path, k: int, t0: datetime, sql: datetime, dash: datetime) -> dict[str, Any]:
    """Where a probe's time went, from the Airflow task instances of the runs that carried it.
    The probe shows in the SQL view when analyze_site_efficiency commits its tables, a few
    seconds before the task ends (it records its quality results after): so that part ends
    at the probe seen, and the task's own duration is reported beside."""
    found = None
    for _ in range(60):  # the refine task's end is written a moment after the asset event
        ingest = _task_times(db, "grid_ingest", "ingest", t0)
        refine = _task_times(db, "grid_ingest", "refine_jobs", t0)
        analyze = _task_times(db, "grid_analytics", "analyze_site_efficiency", t0)
        if ingest and ingest[1] and refine and refine[1] and analyze:
            found = (ingest, refine, analyze)
            break
        time.sleep(2)
    if found is None:
        raise RuntimeError(f"probe {k}: no ingest, refine_jobs and analyze run after {t0}")
    (i0, i1), (_, r1), (a0, a1) = found
    assert i1 is not None and r1 is not None

    def s(a: datetime, b: datetime) -> float:
        return round((b - a).total_seconds(), 1)

    return {
        "probe": k,
        "published_at": t0.isoformat(),
        "end_to_end_s": s(t0, dash),
        "visible_in_sql_s": s(t0, sql),
        "pipeline_s": s(i0, sql),
        "analyze_site_efficiency_task_s": s(a0, a1) if a1 else None,
        "parts_s": {
            "wait_for_schedule": s(t0, i0),
            "ingest": s(i0, i1),
            "refine_jobs": s(i1, r1),
            "wait_for_analytics": s(r1, a0),
            "analyze_site_efficiency": s(a0, sql),
            "to_dashboard": s(sql, dash),
        },
    }


def summarise(probes: list[dict[str, Any]], period_s: float) -> dict[str, Any]:
    """The stage's figures from its probes (see the module's docstring)."""
    after_wait = [p["end_to_end_s"] - p["parts_s"]["wait_for_schedule"] for p in probes]
    pipeline = [p["pipeline_s"] for p in probes]
    e2e = [p["end_to_end_s"] for p in probes]
    parts = {key: round(_pct([p["parts_s"][key] for p in probes], 0.5), 1)
             for key in probes[0]["parts_s"]}  # fmt: skip
    return {
        "end_to_end_p95_s": round(0.95 * PRODUCTION_PERIOD_S + _pct(after_wait, 0.95), 1),
        "end_to_end_p95_s_derivation": (
            f"0.95 x {PRODUCTION_PERIOD_S} s (the production schedule's wait, p95) + "
            f"{_pct(after_wait, 0.95)} s (p95 of the probes' time after the wait)"
        ),
        "pipeline_p95_s": round(_pct(pipeline, 0.95), 1),
        "pipeline_p50_s": round(_pct(pipeline, 0.5), 1),
        "end_to_end_bench_schedule_p50_s": round(_pct(e2e, 0.5), 1),
        "end_to_end_bench_schedule_p95_s": round(_pct(e2e, 0.95), 1),
        "bench_schedule_minutes": period_s / 60,
        "parts_p50_s": parts,
    }
