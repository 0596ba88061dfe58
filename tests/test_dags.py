"""Airflow: DAG integrity and structure, and the DAGs run by `airflow dags test` with a stand-in
CLI (task order, skipped idle refines, a failed quality gate, the report week, retries). The
same DAGs on real data: tests/test_dag_runs.py (the demo week, in make test) and
tests/test_orchestration.py (a three-week simulated grid, nightly).

Airflow lives in its own venv (infra/airflow.sh), so these tests drive it through that script in
subprocesses; they never import airflow. GRIDLAKE_INSTANCE=test (set by conftest) gives them an
Airflow home and metadata DB of their own. A missing venv is installed on first use.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gridlake.settings import get_settings

from .airflow_helpers import airflow_sh, finished_run, task_states

REPO = Path(__file__).resolve().parent.parent
DAG_REPORT = Path(__file__).resolve().parent / "airflow_checks" / "dag_report.py"


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


def commands_run(output: str) -> list[str]:
    """The CLI subcommands the run's tasks executed, in order (one entry per try)."""
    return re.findall(r'Running command: .*"\$\{GRIDLAKE_CLI:-gridlake\}" (\w+)', output)


def fake_cli(tmp_path: Path, exit_code: int = 0, fail: str = "", message: str = ""):
    """A stand-in for the gridlake CLI that records its calls: exits ``exit_code``, or 3 with
    ``message`` on stderr for calls starting with ``fail``."""
    calls = tmp_path / "calls.txt"
    script = tmp_path / "gridlake"
    keys = tmp_path / "keys.txt"
    script.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> "{calls}"\n'
        # Airflow's keys: how many the task's shell has (its parent), how many the CLI has
        f"keys='^({'|'.join(AIRFLOW_KEYS)})='\n"
        "parent=$(tr '\\0' '\\n' < /proc/$PPID/environ | grep -cE \"$keys\")\n"
        'own=$(env | grep -cE "$keys")\n'
        f'echo "$parent $own" >> "{keys}"\n'
        + (f'case "$*" in "{fail}"*) echo "{message}" >&2; exit 3 ;; esac\n' if fail else "")
        + f"exit {exit_code}\n"
    )
    script.chmod(0o755)
    return script, calls


# --- integrity ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    return dag_report(tmp_path_factory.mktemp("dag_report"))


def test_dags_import_and_keep_the_house_rules(report):
    assert report["dags"], "no DAG found in dags/"
    assert policy_violations(report) == []


DAG_IDS = {"grid_ingest", "grid_analytics", "grid_weekly_site_reports", "grid_maintenance"}
AIRFLOW_KEYS = (
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__API__SECRET_KEY",
    "AIRFLOW__CORE__FERNET_KEY",
)
CLI = "env " + " ".join(f"-u {key}" for key in AIRFLOW_KEYS) + ' "${GRIDLAKE_CLI:-gridlake}"'


def manifest() -> dict:
    return json.loads((REPO / "dags" / "gridlake_manifest.json").read_text())


def tasks_of(report: dict, dag_id: str) -> dict[str, dict]:
    return {t["task_id"]: t for t in report["dags"][dag_id]["tasks"]}


def test_the_four_dags_and_their_schedules(report):
    dags = report["dags"]
    assert set(dags) == DAG_IDS
    for dag in dags.values():
        assert dag["owner"] == "grid-ops" and "gridlake" in dag["tags"]
        assert dag["catchup"] is False
    assert "expression='*/5 * * * *'" in dags["grid_ingest"]["timetable_repr"]
    analytics = dags["grid_analytics"]
    assert analytics["timetable"] == "AssetOrTimeSchedule"
    assert "expression='0 3 * * *'" in analytics["timetable_repr"]  # the daily fallback
    silver = {t for step in manifest()["refine"] for t in step["writes"]}
    for table in silver:  # triggered by any silver table grid_ingest publishes
        assert f"uri='gridlake://{table.replace('.', '/')}'" in analytics["timetable_repr"]
    weekly = dags["grid_weekly_site_reports"]["timetable_repr"]
    assert "expression='0 6 * * 1'" in weekly and "timezone='UTC'" in weekly
    assert "interval=datetime.timedelta(days=7)" in weekly  # data interval = the week just ended
    assert "expression='0 4 * * 0'" in dags["grid_maintenance"]["timetable_repr"]


def test_grid_ingest_refines_each_input_and_publishes_its_silver_tables(report):
    tasks = tasks_of(report, "grid_ingest")
    steps = manifest()["refine"]
    assert sorted(tasks) == sorted(["ingest"] + [f"refine_{s['input']}" for s in steps])
    assert tasks["ingest"]["bash_command"] == f"{CLI} ingest"
    for step in steps:
        task = tasks[f"refine_{step['input']}"]
        assert task["bash_command"] == f"{CLI} refine --inputs {step['input']} --idle-exit-code 99"
        assert task["outlets"] == sorted(
            f"gridlake://{t.replace('.', '/')}" for t in step["writes"]
        )
        assert task["upstream"] == sorted(["ingest"] + [f"refine_{a}" for a in step["after"]])
        assert task["trigger_rule"] == "TriggerRule.NONE_FAILED"
    assert tasks["refine_jobs"]["upstream"] == ["ingest", "refine_nodes"]
    assert "gridlake://silver/jobs" in tasks["refine_jobs"]["outlets"]


def analyze_command(task: dict, full: bool) -> str:
    """A grid_analytics task's command as Airflow renders it for a run with the param full."""
    import jinja2

    return jinja2.Template(task["bash_command"]).render(params={"full": full})


def test_grid_analytics_has_one_task_per_gold_group(report):
    tasks = tasks_of(report, "grid_analytics")
    groups = manifest()["gold_groups"]
    assert sorted(tasks) == sorted(f"analyze_{g['group']}" for g in groups)
    for g in groups:
        task = tasks[f"analyze_{g['group']}"]
        assert analyze_command(task, full=False) == f"{CLI} analyze --only {g['group']}"
        assert analyze_command(task, full=True) == f"{CLI} analyze --only {g['group']} --full"
        assert task["outlets"] == sorted(f"gridlake://{t.replace('.', '/')}" for t in g["writes"])
        assert task["upstream"] == sorted(f"analyze_{a}" for a in g["after"])
        assert (task["priority_weight"], task["weight_rule"]) == (g["priority"], "absolute")
    assert "gridlake://gold/site_efficiency_weekly" in tasks["analyze_site_efficiency"]["outlets"]
    # of the tasks ready at once the scheduler starts analyze's order: site_efficiency first
    first = max(groups, key=lambda g: tasks[f"analyze_{g['group']}"]["priority_weight"])
    assert first["group"] == "site_efficiency"


def test_weekly_reports_and_maintenance_tasks(report):
    reports = tasks_of(report, "grid_weekly_site_reports")
    week = "{{ data_interval_start | ds }}"
    assert reports["site_reports"]["bash_command"] == (
        f"{CLI} report --week {week} --all-sites --quiet"
    )
    assert (
        reports["summary_and_index"]["bash_command"]
        == f"{CLI} report --week {week} --summary --quiet"
    )
    assert reports["summary_and_index"]["upstream"] == ["site_reports"]
    assert reports["send_reports"]["bash_command"] == f"{CLI} report --week {week} --send"
    assert reports["send_reports"]["upstream"] == ["site_reports"]
    maint = tasks_of(report, "grid_maintenance")
    assert maint["optimize"]["bash_command"] == f"{CLI} maintain --optimize"
    assert maint["vacuum"]["bash_command"] == f"{CLI} maintain --vacuum --retain-hours 168"
    assert maint["vacuum"]["upstream"] == ["optimize"]
    assert maint["quality_docs"]["bash_command"] == f"{CLI} quality-docs"


def test_a_new_gold_group_needs_no_dag_edit(tmp_path):
    """Adding a group is its family module's GROUP (with ``after`` when it reads other groups'
    tables) and one line in gridlake.gold.analyze.FAMILIES; `gridlake docs` writes the manifest
    and the DAG follows it."""
    dags = tmp_path / "dags"
    shutil.copytree(REPO / "dags", dags)
    m = manifest()
    m["gold_groups"].append(
        {
            "group": "planted",
            "after": ["site_efficiency", "network"],
            "writes": ["gold.planted"],
            "priority": 0,
        }
    )
    (dags / "gridlake_manifest.json").write_text(json.dumps(m))
    tasks = tasks_of(dag_report(tmp_path, dags), "grid_analytics")
    assert tasks["analyze_planted"]["upstream"] == ["analyze_network", "analyze_site_efficiency"]
    assert tasks["analyze_planted"]["outlets"] == ["gridlake://gold/planted"]
    assert analyze_command(tasks["analyze_planted"], full=False) == f"{CLI} analyze --only planted"
    assert tasks["analyze_planted"]["priority_weight"] == 0


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
def test_grid_ingest_runs_refine_after_ingest_nodes_before_jobs(tmp_path):
    cli, calls = fake_cli(tmp_path)
    result = airflow_sh("dags-test", "grid_ingest", "2025-01-06", env={"GRIDLAKE_CLI": str(cli)})
    assert result.returncode == 0, result.stdout[-4000:]
    # Airflow's keys are in each task's shell, not in the job it runs (#25)
    keys = (tmp_path / "keys.txt").read_text().split()
    assert keys and set(keys[0::2]) == {str(len(AIRFLOW_KEYS))} and set(keys[1::2]) == {"0"}, keys
    lines = calls.read_text().splitlines()
    assert lines[0] == "ingest"
    refine = [line for line in lines if line.startswith("refine")]
    assert sorted(refine) == sorted(
        f"refine --inputs {s['input']} --idle-exit-code 99" for s in manifest()["refine"]
    )
    assert lines.index("refine --inputs nodes --idle-exit-code 99") < lines.index(
        "refine --inputs jobs --idle-exit-code 99"
    )
    assert finished_run(result.stdout)[1] == "success"


@pytest.mark.slow
def test_idle_refine_tasks_are_skipped_and_the_run_succeeds(tmp_path):
    """Exit 99 (nothing new in bronze) skips the task: no asset event, no analytics run; the
    jobs refine still runs after a skipped nodes refine."""
    cli, calls = fake_cli(tmp_path, exit_code=99)
    ingest_ok = tmp_path / "wrapper"
    ingest_ok.write_text(f'#!/usr/bin/env bash\n[ "$1" = ingest ] && exit 0\nexec "{cli}" "$@"\n')
    ingest_ok.chmod(0o755)
    result = airflow_sh(
        "dags-test", "grid_ingest", "2025-01-07", env={"GRIDLAKE_CLI": str(ingest_ok)}
    )
    assert result.returncode == 0, result.stdout[-4000:]
    run_id, state = finished_run(result.stdout)
    assert state == "success"
    states = task_states("grid_ingest", run_id)
    assert states.pop("ingest") == "success"
    assert states == {f"refine_{s['input']}": "skipped" for s in manifest()["refine"]}
    assert "refine --inputs jobs --idle-exit-code 99" in calls.read_text()


@pytest.mark.slow
def test_failed_quality_gate_fails_its_task_with_the_reason(tmp_path):
    reason = (
        "refine jobs FAILED: quality gate failed for silver.jobs: not_null(site) unexpected_count=3"
    )
    cli, calls = fake_cli(tmp_path, fail="refine --inputs jobs", message=reason)
    pending = get_settings().state / "alerts" / "pending.jsonl"
    pending.unlink(missing_ok=True)
    result = airflow_sh(
        "dags-test", "grid_ingest", "2025-01-13",
        env={"GRIDLAKE_CLI": str(cli), "GRIDLAKE_RETRY_DELAY_SECONDS": "1"}, timeout=300,
    )  # fmt: skip
    assert result.returncode != 0, result.stdout[-4000:]
    run_id, state = finished_run(result.stdout)
    assert state == "failed"
    assert reason in result.stdout  # the task log carries the reason
    # One try and two retries; the other inputs are refined all the same.
    assert calls.read_text().splitlines().count("refine --inputs jobs --idle-exit-code 99") == 3
    states = task_states("grid_ingest", run_id)
    assert states["refine_jobs"] == "failed"
    assert states["refine_nodes"] == states["refine_network"] == "success"
    # The failure callback, once, after the last retry: one alert line in the instance's pending
    # file (0600), then a flush through the CLI (the stand-in here: the line stays pending).
    alerts = [json.loads(line) for line in pending.read_text().splitlines()]
    assert [(a["kind"], a["subject"], a["run_id"], a["try_number"]) for a in alerts] == [
        ("task_failed", "grid_ingest.refine_jobs", run_id, 3)
    ]
    assert pending.stat().st_mode & 0o077 == 0
    assert alerts[0]["log"].endswith("task_id=refine_jobs/attempt=3.log")
    assert calls.read_text().splitlines().count("alerts --flush --limit 0") == 1


@pytest.mark.slow
def test_weekly_reports_take_the_week_of_the_data_interval(tmp_path):
    cli, calls = fake_cli(tmp_path)
    # A run on Monday 2026-11-23 covers the seven days before: the week 2026-W47 (from 11-16).
    result = airflow_sh(
        "dags-test", "grid_weekly_site_reports", "2026-11-23", env={"GRIDLAKE_CLI": str(cli)}
    )
    assert result.returncode == 0, result.stdout[-4000:]
    lines = calls.read_text().splitlines()
    assert lines[0] == "report --week 2026-11-16 --all-sites --quiet"
    assert sorted(lines[1:]) == [  # both after the site reports, in either order
        "report --week 2026-11-16 --send",
        "report --week 2026-11-16 --summary --quiet",
    ]


@pytest.mark.slow
def test_failing_task_fails_dags_test_after_two_retries(tmp_path):
    cli, calls = fake_cli(tmp_path, exit_code=3)
    result = airflow_sh(
        "dags-test",
        "grid_analytics",
        "2025-01-13",
        env={"GRIDLAKE_CLI": str(cli), "GRIDLAKE_RETRY_DELAY_SECONDS": "1"},
        timeout=300,
    )
    assert result.returncode != 0, result.stdout[-4000:]
    # Every independent group's task: one try and two retries each; a group that runs after
    # others never starts (upstream_failed); then the run fails.
    lines = calls.read_text().splitlines()
    groups = manifest()["gold_groups"]
    assert any(g["after"] for g in groups) and any(not g["after"] for g in groups)
    for g in groups:
        assert lines.count(f"analyze --only {g['group']}") == (0 if g["after"] else 3), g
    assert finished_run(result.stdout)[1] == "failed"


# --- stop --------------------------------------------------------------------------------------


def _fake_task_runner(tmp_path: Path, name: str, airflow_home: Path) -> tuple[int, int]:
    """An orphaned process (its parent has exited) titled like an Airflow task runner
    (``airflow worker -- <id>``), with ``AIRFLOW_HOME`` set and, below it in a session of its
    own, a stand-in for the task's command; returns both PIDs."""
    child_pid, runner_pid = tmp_path / f"{name}.child", tmp_path / f"{name}.runner"
    script = tmp_path / f"{name}.sh"
    script.write_text(
        f'"$PY" -c "import os, time; os.setsid(); time.sleep(600)" & echo $! > {child_pid}\n'
        f'exec -a "airflow worker -- {name}" sleep 600\n'
    )
    subprocess.run(
        ["bash", "-c", f"bash {script} > /dev/null 2>&1 & echo $! > {runner_pid}"],
        env={**os.environ, "PY": sys.executable, "AIRFLOW_HOME": str(airflow_home)},
        check=True,
    )
    pid = int(runner_pid.read_text())
    for _ in range(100):
        title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        if title == f"airflow worker -- {name}".encode() and child_pid.exists():
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"fake task runner {name} did not start")
    return pid, int(child_pid.read_text())


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def test_stop_also_stops_task_processes_left_by_the_scheduler(tmp_path):
    # An instance of its own (no Airflow of the test instance is touched), with a task runner
    # orphaned by its scheduler, and another instance's task runner that must survive.
    env = {"GRIDLAKE_HOME": str(tmp_path / "home"), "GRIDLAKE_INSTANCE": "stopcheck"}
    env["GRIDLAKE_PORT_OFFSET"] = "700"
    ours = _fake_task_runner(tmp_path, "ours", tmp_path / "home" / "stopcheck" / "airflow")
    theirs = _fake_task_runner(tmp_path, "theirs", tmp_path / "home" / "other" / "airflow")
    # a task's command whose runner has exited: orphaned, told by AIRFLOW_CTX_DAG_ID
    cmd_pid = tmp_path / "command.pid"
    subprocess.run(
        [
            "bash",
            "-c",
            f'"$PY" -c "import time; time.sleep(600)" > /dev/null 2>&1 & echo $! > {cmd_pid}',
        ],
        env={
            **os.environ,
            "PY": sys.executable,
            "AIRFLOW_HOME": str(tmp_path / "home" / "stopcheck" / "airflow"),
            "AIRFLOW_CTX_DAG_ID": "grid_analytics",
        },
        check=True,
    )
    ours = (*ours, int(cmd_pid.read_text()))
    try:
        result = airflow_sh("stop", env=env, timeout=120)
        assert result.returncode == 0, result.stdout
        assert "task processes: stopped" in result.stdout, result.stdout
        assert not any(_alive(p) for p in ours), result.stdout
        assert all(_alive(p) for p in theirs), result.stdout
        # nothing left to stop: a second stop is quiet
        again = airflow_sh("stop", env=env, timeout=120)
        assert again.returncode == 0 and "task processes" not in again.stdout, again.stdout
    finally:
        for p in (*ours, *theirs):
            if _alive(p):
                os.kill(p, signal.SIGKILL)
