"""The DAG runs' short form, in `make test`: the demo week through `make demo` and Airflow as
production runs them.

conftest's ``made_demo`` builds the warehouse every demo-week test reads with `make demo` itself
(short form: one week, the demo week's records published instead of a simulated grid), cold then
warm: grid_ingest and grid_analytics by `airflow dags test` (each task the real gridlake CLI in
the instance's gridlake server), the week's reports by a scheduled Airflow listening on 127.0.0.1.
Here what it printed and the runs are checked, then the report run of 2026-W47 (a PDF checked
page by page). A backfill of two weeks (W46, which has no gold, fails with the reason and writes
nothing; W47's reports come out byte for byte as the first run's) is in `make test-nightly`
(marker ``nightly``); `make test-demo` runs the demo as shipped (four simulated weeks) on an
instance of its own, with its dashboards and `make down`. The full form on a three-week
simulated grid (analytics twice, maintenance, a three-week backfill) is
tests/test_orchestration.py (`make test-nightly`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from gridlake.serving.report import parse_week, report_dir, site_file_stem
from gridlake.settings import get_settings
from gridlake.spark import rows_frame

from .airflow_helpers import (
    airflow_pids,
    airflow_sh,
    assert_report_pages,
    listeners,
    task_states,
)
from .conftest import DAG_RUN_DAY, gridlake_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPORT_DATE = "2026-11-23"  # a run on Monday 2026-11-23 reports the week just ended: W47
REPO = Path(__file__).resolve().parent.parent


def demo_sites(week) -> list[str]:
    return sorted({j["site"] for j in week.jobs})


@pytest.fixture(scope="module")
def weekly_reports(made_demo, gold_demo, tmp_path_factory):
    """The run of grid_weekly_site_reports that reported the week just ended (W47, the run after
    Monday 2026-11-23 06:00), which `make demo`'s backfill had a scheduled Airflow run: (run_id,
    its tasks' logs, the week's report folder, a copy of its HTML files)."""
    runs = [
        r for r in made_demo["runs"]["grid_weekly_site_reports"]
        if (r["run_after"] or "")[:10] == REPORT_DATE
    ]  # fmt: skip
    assert runs and all(r["state"] == "success" for r in runs), made_demo["runs"]
    run_id = runs[-1]["dag_run_id"]
    logs = get_settings().state / "airflow" / "logs" / "dag_id=grid_weekly_site_reports"
    out = "\n".join(
        f.read_text(errors="replace") for f in sorted((logs / f"run_id={run_id}").rglob("*.log"))
    )
    folder = report_dir(parse_week("2026-W47"))
    keep = tmp_path_factory.mktemp("w47_first_run")
    for f in folder.glob("*.html"):
        shutil.copy(f, keep / f.name)
    return run_id, out, folder, keep


def test_make_demo_built_this_warehouse_and_its_warm_rerun_does_nothing_again(made_demo, gold_demo):
    """`make demo` (short form: the demo week, GRIDLAKE_DEMO_DATA) as conftest's made_demo ran
    it, cold then warm: what it printed (the week's efficiency per site, least efficient first,
    the report folder, URLs and login files on loopback, each "Try" command working as printed),
    the warm run skipping analytics and the reports, no failed run of any DAG, the scheduler
    started and every listener of the instance on loopback."""
    from .demo_helpers import check_summary

    settings = get_settings()
    offset, n_sites = settings.port_offset, len(demo_sites(gold_demo))
    cold, warm = made_demo["cold"], made_demo["warm"]
    check_summary(cold["out"], settings.state, ["2026-W47"], made_demo["env"], tries=False,
                  offset=offset, n_sites=n_sites)  # fmt: skip
    check_summary(warm["out"], settings.state, ["2026-W47"], made_demo["env"], tries=True,
                  offset=offset, n_sites=n_sites)  # fmt: skip
    assert "publishing the records of" in cold["out"], cold["out"][-3000:]
    assert "already published" in warm["out"], warm["out"][-3000:]
    assert "grid_analytics not re-run" in warm["out"], warm["out"][-3000:]
    assert "nothing to backfill" in warm["out"], warm["out"][-3000:]
    assert made_demo["scheduler_ran"]

    # The demo's runs. Airflow, left running with the report DAG unpaused, also starts the
    # report run that is due by the real clock (the demo's "today" is pinned to 2026-11-23): on a
    # Monday after 06:00 UTC, the week before it, which the demo has no gold for (that run fails
    # with the reason, or still runs when Airflow is stopped). That run is the scheduler's.
    def the_demos(dag: str, run: dict) -> bool:
        late = (run["run_after"] or "")[:10] > DAG_RUN_DAY
        return not (dag == "grid_weekly_site_reports" and late and run["run_type"] == "scheduled")

    runs = {d: [r for r in rs if the_demos(d, r)] for d, rs in made_demo["runs"].items()}
    failed = {d: [r["dag_run_id"] for r in rs if r["state"] == "failed"] for d, rs in runs.items()}
    assert not any(failed.values()), failed
    assert [r["state"] for r in runs["grid_weekly_site_reports"]] == ["success"], runs
    rc, listening = made_demo["loopback"]
    assert rc == 0 and "NOT LOCAL" not in listening, listening
    ports = [
        ln.split()[1].rsplit(":", 1)[1] for ln in listening.splitlines() if ln.startswith("ok")
    ]
    for port in (8080, 8088, 10000):  # Airflow's API server, Superset, the Thrift Server
        assert str(port + offset) in ports, (port + offset, listening)


def test_make_demo_leaves_nothing_readable_by_others_and_no_secret_in_sight(made_demo):
    """Run under a newcomer's umask 022, `make demo` leaves no file or folder of the instance
    readable by other users (warehouse, logs, Kafka's and Derby's data, Airflow's task logs,
    reports), and no secret the instance generated (Superset's SECRET_KEY and admin password,
    Airflow's keys and admin password) in what it printed, in a log file, or on the command line
    of any process while every service runs (taken before Airflow was stopped)."""
    assert made_demo["public"] == [], made_demo["public"][:20]
    assert made_demo["leaks"] == [], made_demo["leaks"]


def test_grid_ingest_lands_the_demo_week_in_silver(demo_dag_runs, gold_demo, spark):
    from gridlake.catalog import SILVER_JOBS

    run_id, out = demo_dag_runs["grid_ingest"]
    manifest = json.loads((REPO / "dags" / "gridlake_manifest.json").read_text())
    states = task_states("grid_ingest", run_id)
    # No APEL summaries in the demo week: that refine found nothing and was skipped.
    assert states.pop("refine_accounting_summaries") == "skipped", states
    assert states == {"ingest": "success"} | {
        f"refine_{s['input']}": "success"
        for s in manifest["refine"]
        if s["input"] != "accounting_summaries"
    }
    published = len(gold_demo.jobs)
    assert f"bronze <- grid.jobs: {published} records" in out
    # Counts reconcile: every record refine read is clean, a duplicate or in quarantine (the
    # demo week has no bad record: all of them clean), and every job of the week is in silver.
    got = re.search(r"silver.jobs <- (\d+) bronze records in \d+ batches: (\d+) clean, "
                    r"(\d+) duplicates absorbed, (\d+) quarantined", out)  # fmt: skip
    assert got, out[-4000:]
    bronze, clean, duplicates, quarantined = map(int, got.groups())
    assert bronze == published == clean + duplicates + quarantined
    assert (clean, quarantined) == (published, 0)
    ids = rows_frame(spark, [(j["job_id"],) for j in gold_demo.jobs], "job_id string")
    silver = spark.read.format("delta").load(SILVER_JOBS.path()).select("job_id")
    assert ids.join(silver, "job_id", "left_anti").count() == 0


def test_refine_with_nothing_new_exits_with_the_idle_code(gold_demo):
    result = gridlake_cli("refine", "--inputs", "network", "--idle-exit-code", "99")
    assert result.returncode == 99, result.stdout + result.stderr[-2000:]
    assert "nothing new in bronze for network" in result.stdout
    assert gridlake_cli("refine", "--inputs", "network").returncode == 0


def test_grid_analytics_builds_every_group(demo_dag_runs, gold_demo, spark):
    run_id, out = demo_dag_runs["grid_analytics"]
    manifest = json.loads((REPO / "dags" / "gridlake_manifest.json").read_text())
    states = task_states("grid_analytics", run_id)
    assert states == {f"analyze_{g['group']}": "success" for g in manifest["gold_groups"]}
    w47 = parse_week("2026-W47")
    for table in ("site_efficiency_weekly", "site_failure_modes_weekly", "efficiency_outliers",
                  "site_io_stress_weekly", "network_cost_matrix"):  # fmt: skip
        weeks = {r.week for r in spark.sql(f"SELECT DISTINCT week FROM grid.{table}").collect()}
        assert w47 in weeks, (table, weeks)
        assert f"gold.{table}: " in out, table  # the task's own line: "<table>: <rows> rows"


def test_weekly_reports_for_the_week_just_ended(weekly_reports, gold_demo):
    _run_id, out, folder, _keep = weekly_reports
    assert "report --week 2026-11-16 --all-sites" in out  # data interval start -> its ISO week
    for site in demo_sites(gold_demo):
        for ext in ("html", "pdf"):
            assert (folder / f"{site_file_stem(site)}.{ext}").stat().st_size > 0, site
    assert (folder / "grid-summary.pdf").stat().st_size > 0
    index = (folder / "index.html").read_text()
    for site in demo_sites(gold_demo):
        assert f'href="{site_file_stem(site)}.pdf"' in index


def test_pdf_report_has_every_section_and_every_plot_has_data(
    weekly_reports, gold_demo, tmp_path, spark
):
    """The slow-storage site's PDF (planted, on the week's outlier list, so that the outliers
    panel has entries to draw)."""
    from gridlake.gold.efficiency import GOLD_EFFICIENCY_OUTLIERS

    _run_id, _out, folder, _keep = weekly_reports
    site = gold_demo.truth["slow_storage_site"]
    listed = (
        spark.read.format("delta")
        .load(GOLD_EFFICIENCY_OUTLIERS.path())
        .where((F.col("week") == F.lit(parse_week("2026-W47"))) & (F.col("entity") == "site"))
        .where(F.col("entity_value") == site)
        .count()
    )
    assert listed > 0, f"the planted slow site {site} is not on the W47 outlier list"
    assert_report_pages(folder, site, tmp_path)


@pytest.fixture(scope="module")
def backfill(weekly_reports):
    """A backfill of W46 and W47 run by a scheduled Airflow: created with Airflow stopped (its
    CLI and the scheduler would both write the SQLite metadata DB), then Airflow started with
    only the report DAG unpaused. Yields (runs, the PIDs of Airflow's components)."""
    stopped = airflow_sh("stop", timeout=300)
    assert stopped.returncode == 0, stopped.stdout[-2000:]
    paused = airflow_sh("run", "dags", "pause", "--treat-dag-id-as-regex", "-y",
                        "^grid_(ingest|analytics|maintenance)$")  # fmt: skip
    assert paused.returncode == 0, paused.stdout[-2000:]
    created = datetime.now(UTC)
    result = airflow_sh(
        "run", "backfill", "create", "--dag-id", "grid_weekly_site_reports",
        "--from-date", "2026-11-16", "--to-date", "2026-11-24", "--reprocess-behavior", "completed",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:]
    env = {"GRIDLAKE_AIRFLOW_UNPAUSE": "grid_weekly_site_reports", "GRIDLAKE_CLI": "",
           "GRIDLAKE_RETRY_DELAY_SECONDS": "5"}  # fmt: skip
    started = airflow_sh("start", env=env, timeout=600)
    try:
        assert started.returncode == 0, started.stdout[-4000:]
        pids = airflow_pids()
        # The runs of the two intervals: run after Mondays 06:00 of W47 and W48, they report W46
        # and W47 (Airflow 3: the logical date is the start of the data interval).
        mondays = ("2026-11-16", "2026-11-23")
        deadline = time.monotonic() + 1800
        while True:
            runs = [
                r for r in report_runs()
                if r["run_after"][:10] in mondays and r["start_date"]
                and datetime.fromisoformat(r["start_date"]) >= created
            ]  # fmt: skip
            if len(runs) == 2 and all(r["state"] in ("success", "failed") for r in runs):
                break
            assert time.monotonic() < deadline, runs
            time.sleep(20)  # an Airflow CLI call costs ~6 s of CPU: poll sparingly
        yield {r["run_after"][:10]: r for r in runs}, pids
    finally:
        airflow_sh("stop", timeout=300)


def report_runs() -> list[dict]:
    out = airflow_sh("run", "dags", "list-runs", "grid_weekly_site_reports", "-o", "json")
    # the JSON list is one line; Airflow's own log lines around it start with "[" too
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("[{") or line.strip() == "[]":
            return json.loads(line)
    raise AssertionError(out.stdout[-4000:])


@pytest.mark.nightly
def test_scheduled_airflow_listens_on_loopback_only(backfill):
    _runs, pids = backfill
    assert len(pids) >= 4, "scheduler, DAG processor, triggerer and API server"
    listening = listeners(pids)
    port = 8080 + get_settings().port_offset
    assert any(addr.endswith(f":{port}") for addr, _ in listening), listening  # the API server
    for addr, _owners in listening:
        assert addr.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"), addr
    # serve-logs (8793/8794 + offset) never started
    assert not [a for a, _ in listening if a.endswith((":8793", ":8794"))], listening
    check = subprocess.run(["bash", str(REPO / "infra" / "check_loopback.sh")],
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "NOT LOCAL" not in check.stdout


@pytest.mark.nightly
def test_backfill_of_two_weeks_reports_w47_again_and_fails_w46_with_the_reason(
    backfill, weekly_reports, gold_demo
):
    runs, _pids = backfill
    _run_id, _out, _folder, first_w47 = weekly_reports
    assert runs["2026-11-23"]["state"] == "success", runs
    assert runs["2026-11-16"]["state"] == "failed", runs
    # W47 again from the same gold: the same reports, byte for byte.
    w47 = report_dir(parse_week("2026-W47"))
    for kept in first_w47.glob("*.html"):
        assert (w47 / kept.name).read_text() == kept.read_text(), kept.name
    assert "<h1>Weekly reports 2026-W47</h1>" in (w47 / "index.html").read_text()
    # W46 has no gold: its site reports task failed, with the reason in its log, after retries.
    states = task_states("grid_weekly_site_reports", runs["2026-11-16"]["run_id"])
    assert states["site_reports"] == "failed", states
    logs = get_settings().state / "airflow" / "logs" / "dag_id=grid_weekly_site_reports"
    w46_logs = [
        p for p in logs.rglob("*.log")
        if "task_id=site_reports" in str(p) and "2026-11-16" in str(p)
    ]  # fmt: skip
    assert w46_logs, sorted(str(p) for p in logs.rglob("*.log"))
    assert any("report 2026-W46 FAILED" in p.read_text() for p in w46_logs), w46_logs
    assert not (report_dir(parse_week("2026-W46")) / "index.html").exists()
