"""`make demo`, the main job, as a newcomer runs it (infra/demo.sh).

- The weeks it simulates and reports, for every day of the week and across a year with an ISO
  week 53 (``GRIDLAKE_DEMO_PLAN=1``: the plan only), against Python's own ISO calendar.
- ``make test-demo`` (marker ``demo``): ``make demo`` on an instance of its own with no state,
  "today" pinned to this week's Monday, then again pinned to a later day of the same week (the
  warm re-run); the summary it prints (the efficiency table, the report folders of the expected
  ISO weeks, URLs and login files), each "Try" command it prints, the scheduler left running
  with no failed run, every dashboard rendered in Chromium while the scheduled DAGs run, and
  ``make down`` leaving no process of the instance. The cold and warm times, and each
  dashboard's, go to ``$GRIDLAKE_HOME/bench-results/results-demo.json`` (``demo.cold_s``,
  ``demo.warm_s``, ``demo.dashboard_s``): figures for the README, not asserted here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from gridlake.settings import REPO_ROOT
from tests.airflow_helpers import AirflowAPI
from tests.demo_helpers import check_summary, record, steps
from tests.superset_helpers import render_dashboards

DEMO_SH = REPO_ROOT / "infra" / "demo.sh"
INSTANCE, OFFSET = "demo-ci", 600
# make test runs the short form (infra/test.sh): fewer weeks and jobs, everything else the same;
# make test-demo the demo as shipped (4 weeks, 16,000 jobs).
DEMO_SIZE = {
    k: os.environ[f"GRIDLAKE_TEST_{k}"]
    for k in ("DEMO_WEEKS", "DEMO_JOBS")
    if os.environ.get(f"GRIDLAKE_TEST_{k}")
}
# The PID of a process the dashboards wait for before they are timed (infra/test.sh: the other
# test shard), so that they compete with the scheduled DAGs, as in production, not with a suite.
QUIET_AFTER_PID = os.environ.get("GRIDLAKE_TEST_QUIET_AFTER_PID", "")


def plan(today: str, weeks: int = 4) -> dict[str, str]:
    out = subprocess.run(
        ["bash", str(DEMO_SH)], capture_output=True, text=True, timeout=60,
        env={**os.environ, "GRIDLAKE_DEMO_PLAN": "1", "GRIDLAKE_DEMO_TODAY": today,
             "GRIDLAKE_DEMO_WEEKS": str(weeks), "GRIDLAKE_INSTANCE": INSTANCE,
             "GRIDLAKE_PORT_OFFSET": str(OFFSET)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    fields = dict(part.split("=", 1) for part in out.stdout.split() if "=" in part)
    # runs= and weeks= hold lists: re-read them from the line
    fields["runs"] = re.search(r"runs=([\d\- ]+?) weeks=", out.stdout).group(1)
    fields["weeks"] = out.stdout.split("weeks=", 1)[1].strip()
    return fields


@pytest.mark.parametrize(
    "today",
    [
        *(date(2026, 11, 23) + timedelta(days=i) for i in range(7)),  # Monday .. Sunday of W48
        date(2027, 1, 3),  # Sunday of 2026-W53 (a 53-week year)
        date(2027, 1, 4),  # Monday of 2027-W01
        date(2021, 1, 3),  # Sunday of 2020-W53, the week before ISO 2021-W01
    ],
    ids=str,
)
def test_demo_plan_follows_the_iso_calendar(today: date):
    """The demo reports the three ISO weeks before today's and simulates the four before it."""
    got = plan(today.isoformat())
    monday = today - timedelta(days=today.isocalendar().weekday - 1)
    assert got["last_monday"] == monday.isoformat()
    assert got["first"] == (monday - timedelta(weeks=4)).isoformat()
    runs = [monday - timedelta(weeks=k) for k in (2, 1, 0)]
    assert got["runs"].split() == [d.isoformat() for d in runs]
    reported = []
    for run in runs:  # a Monday run reports the ISO week that ended the day before
        year, week, _ = (run - timedelta(days=1)).isocalendar()
        reported.append(f"{year}-W{week:02d}")
    assert got["weeks"].split() == reported
    assert today.isocalendar().week not in {int(w[-2:]) for w in reported}


def test_demo_plan_with_fewer_weeks_reports_fewer():
    got = plan("2026-11-26", weeks=2)
    assert got["weeks"].split() == ["2026-W46", "2026-W47"]
    assert got["first"] == "2026-11-09"


def test_demo_refuses_a_day_in_the_future_and_a_non_date():
    for bad in ((date.today() + timedelta(days=3)).isoformat(), "next tuesday-ish"):
        out = subprocess.run(
            ["bash", str(DEMO_SH)], capture_output=True, text=True, timeout=60,
            env={**os.environ, "GRIDLAKE_DEMO_TODAY": bad, "GRIDLAKE_INSTANCE": INSTANCE,
                 "GRIDLAKE_PORT_OFFSET": str(OFFSET)},
        )  # fmt: skip
        assert out.returncode != 0
        assert "GRIDLAKE_DEMO_TODAY" in out.stderr


# --- the whole demo: make test-demo ----------------------------------------------------------


def _env(today: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRIDLAKE_TEST_")}
    env.update({"GRIDLAKE_INSTANCE": INSTANCE, "GRIDLAKE_PORT_OFFSET": str(OFFSET),
                "GRIDLAKE_DEMO_TODAY": today})  # fmt: skip
    env.update({f"GRIDLAKE_{k}": v for k, v in DEMO_SIZE.items()})
    return env


def _wait_for_quiet(timeout: float = 2400) -> float:
    """Wait until the process QUIET_AFTER_PID names has exited; the seconds waited."""
    t0 = time.monotonic()
    if not QUIET_AFTER_PID:
        return 0.0
    proc = Path("/proc") / QUIET_AFTER_PID
    while proc.exists() and time.monotonic() - t0 < timeout:
        time.sleep(5)
    assert not proc.exists(), f"process {QUIET_AFTER_PID} still runs after {timeout} s"
    return round(time.monotonic() - t0, 1)


def _make(target: str, today: str, timeout: float) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    cmd = ["make", "--no-print-directory", "-C", str(REPO_ROOT), target]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(today))
    return proc, time.monotonic() - t0


def _instance_processes(state: Path) -> list[str]:
    """Live processes of the instance: its GRIDLAKE_INSTANCE or its state folder in their
    environment or command line."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(proc.name) == os.getpid():
            continue
        if f"GRIDLAKE_INSTANCE={INSTANCE}".encode() in environ or str(state) in cmdline:
            found.append(f"{proc.name}: {cmdline[:200]}")
    return found


def _airflow_runs(api: AirflowAPI) -> dict[str, list[dict]]:
    dags = ("grid_ingest", "grid_analytics", "grid_weekly_site_reports", "grid_maintenance")
    return {dag: api.runs(dag) for dag in dags}


@pytest.mark.demo
@pytest.mark.integration
@pytest.mark.slow
# Its own limits are the cold run's 3,600 s and the warm run's 1,800 s (make test's 1,800 s per
# test cut a cold demo short on a slower machine: 2,200 s for its DAGs under the suite's load).
@pytest.mark.timeout(7200)
def test_make_demo_cold_then_warm_then_down():
    from gridlake.settings import get_settings

    home = get_settings().home
    state = home / INSTANCE
    today = datetime.now(UTC).date()
    monday = today - timedelta(days=today.weekday())
    later = min(today, monday + timedelta(days=3))  # the Thursday, or today if earlier
    n_weeks = int(DEMO_SIZE.get("DEMO_WEEKS", 4))
    weeks = plan(monday.isoformat(), n_weeks)["weeks"].split()
    # the same ISO week: a warm re-run
    assert plan(later.isoformat(), n_weeks)["weeks"].split() == weeks

    _make("down", monday.isoformat(), 600)
    shutil.rmtree(state, ignore_errors=True)  # an instance without state: cold
    try:
        cold, cold_s = _make("demo", monday.isoformat(), 3600)
        assert cold.returncode == 0, (cold.stdout[-6000:], cold.stderr[-6000:])
        out = cold.stdout + cold.stderr
        record(cold_s=round(cold_s), cold_today=monday.isoformat(), size=DEMO_SIZE or "shipped",
                cold_steps=steps(state))  # fmt: skip
        check_summary(
            out, state, weeks, _env(monday.isoformat()), tries=False, offset=OFFSET, n_sites=8
        )

        warm, warm_s = _make("demo", later.isoformat(), 1800)
        assert warm.returncode == 0, (warm.stdout[-6000:], warm.stderr[-6000:])
        record(warm_s=round(warm_s), warm_today=later.isoformat(), warm_steps=steps(state))
        check_summary(
            warm.stdout + warm.stderr,
            state,
            weeks,
            _env(later.isoformat()),
            tries=True,
            offset=OFFSET,
            n_sites=8,
        )
        assert "grid_analytics not re-run" in warm.stderr, warm.stderr[-3000:]
        assert "nothing to backfill" in warm.stderr, warm.stderr[-3000:]

        # The scheduler runs, every DAG unpaused, and no run of any DAG failed.
        assert (state / "run" / "airflow-scheduler.pid").is_file()
        api = AirflowAPI(f"http://127.0.0.1:{8080 + OFFSET}", state)
        runs = _airflow_runs(api)
        failed = {
            d: [r["dag_run_id"] for r in rs if r["state"] == "failed"] for d, rs in runs.items()
        }
        assert not any(failed.values()), failed
        # Every listener of the instance (Kafka, Derby, the Thrift Server, Superset, Airflow's
        # scheduler, DAG processor, triggerer and API server, their children) is on loopback.
        loopback = subprocess.run(["bash", str(REPO_ROOT / "infra" / "check_loopback.sh")],
                                  capture_output=True, text=True, timeout=120,
                                  env=_env(later.isoformat()))  # fmt: skip
        assert loopback.returncode == 0, loopback.stdout + loopback.stderr
        assert "NOT LOCAL" not in loopback.stdout, loopback.stdout
        listening = [ln.split()[1] for ln in loopback.stdout.splitlines() if ln.startswith("ok")]
        for port in (8080, 8088, 10000):  # Airflow's API server, Superset, the Thrift Server
            # a JVM's IPv4 socket may show as [::ffff:127.0.0.1]:port
            assert any(a.rsplit(":", 1)[1] == str(port + OFFSET) for a in listening), (
                port + OFFSET, loopback.stdout)  # fmt: skip
        reports = [r for r in runs["grid_weekly_site_reports"] if r["state"] == "success"]
        expected_runs = set(plan(later.isoformat(), n_weeks)["runs"].split())
        assert {r["run_after"][:10] for r in reports} >= expected_runs

        # Dashboards while the scheduled DAGs run: maintenance (OPTIMIZE, VACUUM) and a report
        # week, triggered now so that they do run while Chromium loads each dashboard (the full
        # form; the short form renders them under the suite's load and times nothing).
        record(waited_for_quiet_s=_wait_for_quiet())
        busy_dags = () if DEMO_SIZE else ("grid_maintenance", "grid_weekly_site_reports")
        for dag in busy_dags:
            assert api.trigger(dag).startswith("manual__")
        dashboard_s = render_dashboards(f"http://127.0.0.1:{8088 + OFFSET}", state, "demo")
        record(dashboard_s=dashboard_s)
        if busy_dags:
            manual = [r["state"] for r in api.runs("grid_maintenance")
                      if r["dag_run_id"].startswith("manual__")]  # fmt: skip
            assert manual and "failed" not in manual, manual
        slow = {slug: s for slug, s in dashboard_s.items() if s > 10}
        # The 10 s budget is the full form's (make test-demo, issue #21); make test's short form
        # records the times (results-demo.json) and says so, as a benchmark would, rather than
        # fail the suite on a busy machine.
        if DEMO_SIZE:
            if slow:
                print(f"\n[demo] dashboards over 10 s while DAGs run (short form): {slow}")
        else:
            assert not slow, f"dashboards over 10 s while DAGs run: {slow}"
    finally:
        down, _ = _make("down", later.isoformat(), 900)
        assert down.returncode == 0, down.stderr[-3000:]
        left = _instance_processes(state)
        assert not left, left
