"""The DAGs run for real (`airflow dags test`, then a scheduler) on a simulated three-week grid.

A small simulated grid (6 sites with every planted effect, ISO weeks 2026-W45 to W47) is
published to the test instance's Kafka; then, through Airflow exactly as in production:
grid_ingest (Kafka -> bronze -> silver), grid_analytics (gold), grid_analytics again (nothing
committed), then with the param full (identical Delta contents), grid_weekly_site_reports for
W47, grid_maintenance; and a scheduled Airflow (scheduler, DAG processor, triggerer, API server:
infra/airflow.sh start) that backfills three weeks of reports (three sets; W47's identical to the
first run's) while nothing of it listens beyond 127.0.0.1. The rendered PDF of one site report is
checked page by page (pdftoppm).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from gridlake.serving.report import parse_week, report_dir, site_file_stem
from gridlake.settings import get_settings

from .airflow_helpers import (
    airflow_pids,
    airflow_sh,
    assert_report_pages,
    dags_test,
    listeners,
    task_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.nightly]

GRID3 = {
    "start": date(2026, 11, 2),  # Monday of 2026-W45
    "days": 21,
    "sites": 6,
    "cpu_models": 8,
    "jobs": 6000,
    "seed": 5,
    "monitored_hosts_per_site": 1,
    "node_interval": 900,
    "latency_interval": 3600,
}
WEEKS = ["2026-W45", "2026-W46", "2026-W47"]
REPORT_DATE = "2026-11-23"  # a run on Monday 2026-11-23 reports the week just ended: W47


def gold_versions(spark) -> dict[str, int]:
    from delta.tables import DeltaTable

    from gridlake.gold.analyze import gold_tables

    return {
        t.full_name: DeltaTable.forPath(spark, t.path()).history(1).first()["version"]
        for t in gold_tables()
    }


@pytest.fixture(scope="module")
def grid3(kafka, tmp_path_factory):
    from gridlake.sources.publish import publish_files
    from gridlake.sources.simulate import SimConfig, simulate

    out = tmp_path_factory.mktemp("grid3")
    truth = simulate(SimConfig(**GRID3), out, progress=False)
    for kind in ("jobs", "nodes", "network"):
        report = publish_files(f"grid.{kind}", [out / f"{kind}.jsonl"], progress=False)
        assert report.ok, report.problems
    sites = sorted(truth["sites"])
    return out, truth, sites


@pytest.fixture(scope="module")
def ingested(grid3):
    return dags_test("grid_ingest", datetime.now(UTC).strftime("%Y-%m-%d"))


@pytest.fixture(scope="module")
def analytics(ingested, spark):
    started = datetime.now().replace(microsecond=0)
    run_id, out = dags_test("grid_analytics", datetime.now(UTC).strftime("%Y-%m-%d"))
    return run_id, out, started


@pytest.fixture(scope="module")
def weekly_reports(analytics, tmp_path_factory):
    run_id, out = dags_test("grid_weekly_site_reports", REPORT_DATE)
    folder = report_dir(parse_week("2026-W47"))
    keep = tmp_path_factory.mktemp("w47_first_run")
    for f in folder.glob("*.html"):
        shutil.copy(f, keep / f.name)
    return run_id, out, folder, keep


# --- grid_ingest -------------------------------------------------------------------------------


def test_grid_ingest_lands_the_grid_in_silver(ingested, grid3, spark):
    from gridlake.catalog import SILVER_JOBS, SILVER_NETWORK, SILVER_NODE_SAMPLES

    run_id, _out = ingested
    states = task_states("grid_ingest", run_id)
    assert states["ingest"] == "success"
    for name in ("refine_nodes", "refine_jobs", "refine_network"):
        assert states[name] == "success", states
    # No APEL summaries in the grid: that refine found nothing and was skipped (no asset event).
    assert states["refine_accounting_summaries"] in ("skipped", "success"), states

    folder, _truth, sites = grid3
    job_ids = {json.loads(line)["job_id"] for line in (folder / "jobs.jsonl").open()}
    silver = spark.read.format("delta").load(SILVER_JOBS.path())
    got = silver.where(silver.site.isin(sites)).select("job_id")
    assert got.count() == len(job_ids)
    for table in (SILVER_NODE_SAMPLES, SILVER_NETWORK):
        assert spark.read.format("delta").load(table.path()).count() > 0


# --- grid_analytics ----------------------------------------------------------------------------


def test_grid_analytics_builds_every_group(analytics, spark):
    run_id, _out, started = analytics
    manifest = json.loads(
        (Path(__file__).parents[1] / "dags" / "gridlake_manifest.json").read_text()
    )
    states = task_states("grid_analytics", run_id)
    assert states == {f"analyze_{g['group']}": "success" for g in manifest["gold_groups"]}
    for table in ("site_efficiency_weekly", "site_failure_modes_weekly", "efficiency_outliers",
                  "site_io_stress_weekly", "network_cost_matrix"):  # fmt: skip
        weeks = {r.week for r in spark.sql(f"SELECT DISTINCT week FROM grid.{table}").collect()}
        assert {parse_week(w) for w in WEEKS} <= weeks, table
    history = spark.sql("DESCRIBE HISTORY gold.site_efficiency_weekly LIMIT 1").first()
    assert history["timestamp"] >= started


def test_grid_analytics_twice_gives_identical_tables(analytics, spark):
    """Again with nothing changed: every group current, nothing committed. Then with the param
    ``full``: every group recomputed whole from silver, and the same rows in every table."""
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    before = gold_versions(spark)
    _run_id, out = dags_test("grid_analytics", today)
    assert gold_versions(spark) == before, "a rerun on unchanged silver committed to gold"
    assert "--full" not in out
    _run_id, out = dags_test("grid_analytics", today, conf={"full": True})
    assert "analyze --only site_efficiency --full" in out
    after = gold_versions(spark)
    from gridlake.gold.analyze import gold_tables

    rewritten = ("site_efficiency_weekly", "efficiency_outliers", "cpu_speed_factors",
                 "job_io_signature", "network_link_status")  # fmt: skip
    for name in (f"gold.{t}" for t in rewritten):
        assert after[name] > before[name], f"{name} was not rewritten: the test proves nothing"
    for table in gold_tables():
        name = table.full_name
        old = spark.read.format("delta").option("versionAsOf", before[name]).load(table.path())
        new = spark.read.format("delta").load(table.path())
        assert old.count() == new.count(), name
        assert old.exceptAll(new).count() == 0, name
        assert new.exceptAll(old).count() == 0, name


# --- grid_weekly_site_reports ------------------------------------------------------------------


def test_weekly_reports_for_the_week_just_ended(weekly_reports, grid3):
    _run_id, out, folder, _keep = weekly_reports
    assert "report --week 2026-11-16 --all-sites" in out  # data interval start -> its ISO week
    _folder, _truth, sites = grid3
    for site in sites:
        for ext in ("html", "pdf"):
            assert (folder / f"{site_file_stem(site)}.{ext}").stat().st_size > 0, site
    assert (folder / "grid-summary.pdf").stat().st_size > 0
    index = (folder / "index.html").read_text()
    for site in sites:
        assert f'href="{site_file_stem(site)}.pdf"' in index


def test_pdf_report_has_every_section_and_every_plot_has_data(
    weekly_reports, grid3, tmp_path, spark
):
    """A planted site's PDF, rendered to PNG: each section on its page, with its title and its
    sentence, and coloured plot marks in both panels of its figure. The site: the first planted
    one (slow storage, misconfigured, memory-restricted, remote read) on the week's outlier
    list, so that the outliers panel has entries to draw (a site on no list gets "no data this
    week" there, which is right but draws nothing)."""
    from gridlake.gold.efficiency import GOLD_EFFICIENCY_OUTLIERS

    _run_id, _out, folder, _keep = weekly_reports
    _grid, truth, _sites = grid3
    listed = {
        r.entity_value
        for r in spark.read.format("delta")
        .load(GOLD_EFFICIENCY_OUTLIERS.path())
        .where("week = DATE'2026-11-16' AND entity = 'site'")
        .select("entity_value")
        .distinct()
        .collect()
    }
    roles = ("slow_storage_site", "misconfigured_site", "memory_restricted_site",
             "remote_read_site")  # fmt: skip
    candidates = [truth["planted"][r] for r in roles if truth["planted"][r] in listed]
    assert candidates, f"no planted site on the W47 outlier list ({sorted(listed)})"
    site = candidates[0]
    assert_report_pages(folder, site, tmp_path)


# --- scheduled Airflow: backfill ---------------------------------------------------------------


@pytest.fixture(scope="module")
def scheduled_airflow(weekly_reports):
    # Every DAG starts paused: unpaused, the scheduler would run grid_ingest every 5 minutes and
    # the latest grid_analytics, grid_maintenance and report intervals on the same two cores.
    result = airflow_sh("start", env={"GRIDLAKE_AIRFLOW_UNPAUSE": ""}, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]
    for dag in ("grid_ingest", "grid_analytics", "grid_maintenance"):
        paused = airflow_sh("run", "dags", "pause", dag)
        assert paused.returncode == 0, paused.stdout[-2000:]
    yield
    airflow_sh("stop", timeout=300)


def test_scheduled_airflow_listens_on_loopback_only(scheduled_airflow):
    pids = airflow_pids()
    assert len(pids) >= 4, "scheduler, DAG processor, triggerer and API server"
    listening = listeners(pids)
    port = 8080 + get_settings().port_offset
    assert any(addr.endswith(f":{port}") for addr, _ in listening), listening  # the API server
    for addr, _owners in listening:
        assert addr.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"), addr
    # serve-logs (8793/8794 + offset) never started
    assert not [a for a, _ in listening if a.endswith((":8793", ":8794"))], listening
    # The check `make demo` ends with: every service of the instance (Kafka, Derby, Airflow).
    check = subprocess.run(["bash", str(Path(__file__).parents[1] / "infra" / "check_loopback.sh")],
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"127.0.0.1:{port}" in check.stdout and "NOT LOCAL" not in check.stdout


def test_backfill_of_three_weeks_writes_three_sets_of_reports(scheduled_airflow, weekly_reports,
                                                              grid3):  # fmt: skip
    _run_id, _out, _folder, first_w47 = weekly_reports

    def runs() -> list[dict]:
        out = airflow_sh("run", "dags", "list-runs", "grid_weekly_site_reports", "-o", "json")
        # the JSON list is one line; Airflow's own log lines around it start with "[" too
        for line in reversed(out.stdout.splitlines()):
            if line.startswith("[{") or line.strip() == "[]":
                return json.loads(line)
        raise AssertionError(out.stdout[-4000:])

    done = ("success", "failed")
    before = runs()  # only the weekly_reports fixture's `dags test` runs
    assert all(r["run_id"].startswith("manual__") for r in before), before
    # The backfill is created with Airflow stopped: its CLI writes its runs into the SQLite
    # metadata DB, which the scheduler, DAG processor and triggerer write to all the time, and
    # SQLite refuses a second writer ("database is locked", twice in nightly runs, also with
    # every DAG paused). Started again with the report DAG unpaused, the scheduler runs the
    # backfill's runs; the latest interval is one of them, so it creates no run of its own.
    stopped = airflow_sh("stop", timeout=300)
    assert stopped.returncode == 0, stopped.stdout[-2000:]
    created = datetime.now(UTC)
    result = airflow_sh(
        "run", "backfill", "create", "--dag-id", "grid_weekly_site_reports",
        "--from-date", "2026-11-09", "--to-date", "2026-11-24", "--reprocess-behavior", "completed",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:]
    started = airflow_sh(
        "start", env={"GRIDLAKE_AIRFLOW_UNPAUSE": "grid_weekly_site_reports"}, timeout=600
    )
    assert started.returncode == 0, started.stdout[-4000:]
    # The three intervals' runs, created by the backfill (the CLI shows no run type): run after
    # Mondays 06:00 of W46, W47, W48, they report W45-W47 (Airflow 3: logical_date is the start
    # of the data interval, the Monday before).
    mondays = ("2026-11-09", "2026-11-16", "2026-11-23")
    deadline = time.monotonic() + 2400
    while True:
        backfill = [
            r for r in runs()
            if r["run_after"][:10] in mondays and r["start_date"]
            and datetime.fromisoformat(r["start_date"]) >= created
        ]  # fmt: skip
        if len(backfill) == 3 and all(r["state"] in done for r in backfill):
            break
        assert time.monotonic() < deadline, backfill
        time.sleep(10)
    assert sorted(r["state"] for r in backfill) == ["success"] * 3, backfill

    _grid, _truth, sites = grid3
    for week in WEEKS:
        folder = report_dir(parse_week(week))
        assert (folder / "index.html").is_file(), week
        assert (folder / "grid-summary.pdf").is_file(), week
        for site in sites:
            assert (folder / f"{site_file_stem(site)}.pdf").is_file(), (week, site)
        assert f"<h1>Weekly reports {week}</h1>" in (folder / "index.html").read_text()
    # The backfill re-ran W47: the same gold gives the same reports, byte for byte.
    w47 = report_dir(parse_week("2026-W47"))
    for kept in first_w47.glob("*.html"):
        assert (w47 / kept.name).read_text() == kept.read_text(), kept.name


# --- grid_maintenance --------------------------------------------------------------------------


def test_grid_maintenance_compacts_keeps_time_travel_and_builds_data_docs(weekly_reports, spark):
    """Last in this file: its OPTIMIZE commits new table versions (same rows)."""
    from gridlake.catalog import SILVER_NODE_SAMPLES

    _run_id, out = dags_test("grid_maintenance", datetime.now(UTC).strftime("%Y-%m-%d"))
    compacted = re.findall(r"(\S+): (\d+) -> (\d+) files \((\d+) compacted", out)
    assert compacted, out[-4000:]
    assert any(int(after) < int(before) for _t, before, after, _c in compacted), compacted
    # VACUUM kept every file a version of the last 7 days needs: the first version with data
    # (version 0 is the empty table `gridlake init` creates) still reads, with its rows.
    history = spark.sql(f"DESCRIBE HISTORY delta.`{SILVER_NODE_SAMPLES.path()}`").collect()
    first_write = min(h.version for h in history if h.version > 0)
    rows = next(h for h in history if h.version == first_write).operationMetrics
    first = spark.read.format("delta").option("versionAsOf", first_write)
    assert first.load(SILVER_NODE_SAMPLES.path()).count() > 0, (first_write, rows)
    docs = get_settings().state / "quality-docs" / "gx" / "uncommitted" / "data_docs" / "local_site"
    index = (docs / "index.html").read_text()
    assert "silver_jobs" in index and "silver_node_samples" in index
    pages = list((docs / "validations" / "silver_jobs").rglob("*.html"))
    assert pages, "no validation result page for silver.jobs"
