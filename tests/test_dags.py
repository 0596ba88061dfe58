"""Airflow: DAG integrity, the pipeline DAG run end to end, and a failing task failing the run.

Airflow lives in its own venv (infra/airflow.sh), so these tests drive it through that script in
subprocesses; they never import airflow. GRIDLAKE_INSTANCE=test (set by conftest) gives them an
Airflow home and metadata DB of their own. A missing venv is installed on first use.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
AIRFLOW_SH = REPO / "infra" / "airflow.sh"
DAG_REPORT = Path(__file__).resolve().parent / "airflow_checks" / "dag_report.py"
PIPELINE_TASKS = ["ingest", "refine", "analyze"]


def airflow_sh(*args: str, env: dict[str, str] | None = None, timeout: float = 600):
    """Run infra/airflow.sh with stdout and stderr merged (Airflow logs to both)."""
    return subprocess.run(
        ["bash", str(AIRFLOW_SH), *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def dag_report(tmp_path: Path, dags_folder: Path | None = None) -> dict:
    out = tmp_path / "dag_report.json"
    args = [str(DAG_REPORT), str(out)] + ([str(dags_folder)] if dags_folder else [])
    result = airflow_sh("python", *args, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:]
    return json.loads(out.read_text())


def policy_violations(report: dict) -> list[str]:
    """The house rules every DAG keeps (after Astronomer's DAG integrity test)."""
    problems = [
        f"import error in {f}: {e.splitlines()[-1] if e else ''}"
        for f, e in report["import_errors"].items()
    ]
    for dag_id, dag in report["dags"].items():
        if not dag["tags"]:
            problems.append(f"{dag_id}: no tags")
        if dag["max_active_runs"] != 1:
            problems.append(f"{dag_id}: max_active_runs={dag['max_active_runs']}, want 1")
        for task in dag["tasks"]:
            where = f"{dag_id}.{task['task_id']}"
            if not task["owner"] or task["owner"] == "airflow":
                problems.append(f"{where}: no owner")
            if task["retries"] < 2:
                problems.append(f"{where}: retries={task['retries']}, want >= 2")
            if not task["execution_timeout_seconds"]:
                problems.append(f"{where}: no execution_timeout")
    return problems


def finished_run(output: str) -> tuple[str, str]:
    """(run_id, state) from the "DagRun Finished" line `airflow dags test` logs."""
    match = re.search(r"DagRun Finished: .*?run_id=([^,\s]+),.*? state=([a-z_]+)", output)
    assert match, f"no 'DagRun Finished' line in:\n{output[-4000:]}"
    return match.group(1), match.group(2)


def commands_run(output: str) -> list[str]:
    """The CLI subcommands the run's tasks executed, in order (one entry per try)."""
    return re.findall(r'Running command: .*"\$\{GRIDLAKE_CLI:-gridlake\}" (\w+)', output)


def task_states(dag_id: str, run_id: str) -> dict[str, str]:
    result = airflow_sh("run", "tasks", "states-for-dag-run", dag_id, run_id, "-o", "json")
    assert result.returncode == 0, result.stdout[-4000:]
    # Airflow's own log lines (warnings) share stdout with the JSON: take the JSON line.
    line = next(x for x in reversed(result.stdout.splitlines()) if x.startswith("[{"))
    return {row["task_id"]: row["state"] for row in json.loads(line)}


def fake_cli(tmp_path: Path, exit_code: int) -> tuple[Path, Path]:
    """A stand-in for the gridlake CLI that records its calls and exits with exit_code."""
    calls = tmp_path / "calls.txt"
    script = tmp_path / "gridlake"
    script.write_text(f'#!/usr/bin/env bash\necho "$*" >> "{calls}"\nexit {exit_code}\n')
    script.chmod(0o755)
    return script, calls


# --- integrity ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    return dag_report(tmp_path_factory.mktemp("dag_report"))


def test_dags_import_and_keep_the_house_rules(report):
    assert report["dags"], "no DAG found in dags/"
    assert policy_violations(report) == []


def test_grid_pipeline_calls_the_cli_in_layer_order(report):
    dag = report["dags"]["grid_pipeline"]
    tasks = {t["task_id"]: t for t in dag["tasks"]}
    assert sorted(tasks) == sorted(PIPELINE_TASKS)
    assert tasks["ingest"]["upstream"] == []
    assert tasks["refine"]["upstream"] == ["ingest"]
    assert tasks["analyze"]["upstream"] == ["refine"]
    for name, task in tasks.items():
        assert task["bash_command"] == f'"${{GRIDLAKE_CLI:-gridlake}}" {name}'
    assert tasks["refine"]["outlets"] == ["gridlake://silver/jobs"]
    assert tasks["analyze"]["outlets"] == ["gridlake://gold/site_efficiency_weekly"]
    assert dag["owner"] == "grid-ops"
    assert dag["catchup"] is False


def test_integrity_check_catches_bad_dags(tmp_path):
    """The rules above can fail: a planted broken DAG and a careless DAG are both reported."""
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "broken_dag.py").write_text("from airflow.sdk import dag\nraise RuntimeError('boom')\n")
    (dags / "careless_dag.py").write_text(
        textwrap.dedent(
            """
            from airflow.sdk import dag, task

            @dag(dag_id="careless", schedule=None, max_active_runs=16)
            def careless():
                @task.bash
                def hello() -> str:
                    return "echo hello"

                hello()

            careless()
            """
        )
    )
    problems = policy_violations(dag_report(tmp_path, dags))
    assert any(p.startswith("import error in") and "boom" in p for p in problems), problems
    assert set(problems) >= {
        "careless: no tags",
        "careless: max_active_runs=16, want 1",
        "careless.hello: no owner",
        "careless.hello: retries=0, want >= 2",
        "careless.hello: no execution_timeout",
    }, problems


# --- dags test with a stand-in CLI -------------------------------------------------------------


@pytest.mark.slow
def test_dags_test_runs_the_tasks_in_order(tmp_path):
    cli, calls = fake_cli(tmp_path, exit_code=0)
    result = airflow_sh("dags-test", "grid_pipeline", "2025-01-06", env={"GRIDLAKE_CLI": str(cli)})
    assert result.returncode == 0, result.stdout[-4000:]
    assert calls.read_text().split() == PIPELINE_TASKS
    assert finished_run(result.stdout)[1] == "success"


@pytest.mark.slow
def test_failing_task_fails_dags_test_after_two_retries(tmp_path):
    cli, calls = fake_cli(tmp_path, exit_code=3)
    result = airflow_sh(
        "dags-test",
        "grid_pipeline",
        "2025-01-13",
        env={"GRIDLAKE_CLI": str(cli), "GRIDLAKE_RETRY_DELAY_SECONDS": "1"},
        timeout=120,
    )
    assert result.returncode != 0, result.stdout[-4000:]
    # One try and two retries of ingest; refine and analyze never start.
    assert calls.read_text().split() == ["ingest"] * 3
    assert finished_run(result.stdout)[1] == "failed"


# --- the real pipeline -------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.slow
def test_grid_pipeline_builds_gold(jobs_published, spark):
    started = datetime.now().replace(microsecond=0)  # naive local, as PySpark returns timestamps
    result = airflow_sh(
        "dags-test",
        "grid_pipeline",
        datetime.now(UTC).strftime("%Y-%m-%d"),
        # An empty GRIDLAKE_CLI makes airflow.sh use the main venv's real CLI.
        env={"GRIDLAKE_CLI": "", "GRIDLAKE_RETRY_DELAY_SECONDS": "5"},
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-6000:]
    run_id, state = finished_run(result.stdout)
    assert state == "success"
    assert task_states("grid_pipeline", run_id) == dict.fromkeys(PIPELINE_TASKS, "success")
    assert commands_run(result.stdout) == PIPELINE_TASKS, "a task needed a retry"

    table = "gold.site_efficiency_weekly"
    assert spark.catalog.tableExists(table)
    # Written by this run's analyze task (a fixture may have filled the table before):
    # analyze overwrites, so every run leaves a new Delta version.
    assert spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()["timestamp"] >= started
    spark.catalog.refreshTable(table)  # written by the DAG's own Spark, not this session
    assert spark.table(table).count() > 0
