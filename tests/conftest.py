"""Shared fixtures: one SparkSession, real services for the ``test`` instance, the demo week.

The suite runs against its own instance (GRIDLAKE_INSTANCE=test: its own warehouse, metastore,
Kafka data and ports shifted by 100), wiped at the start of each session, so it never touches the
demo's data and every session starts from the same state. Services are started once per session
by the project's own infra scripts and stopped by PID at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

# Before anything imports gridlake.settings (it reads the environment once).
# GRIDLAKE_TEST_INSTANCE=name with GRIDLAKE_PORT_OFFSET=N runs the suite on its own instance and
# ports, so two suites can run side by side; by default the instance is "test" (ports + 100).
os.environ["GRIDLAKE_INSTANCE"] = os.environ.get("GRIDLAKE_TEST_INSTANCE", "test")
if os.environ["GRIDLAKE_INSTANCE"] == "test":
    os.environ.pop("GRIDLAKE_PORT_OFFSET", None)
os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from gridlake.settings import REPO_ROOT, get_settings

# What the suite itself writes into an instance (its SparkSession's files, screenshots) is its
# owner's only, as what the services write; `make demo` runs under a newcomer's umask 022 and
# must set its own (made_demo checks that nothing of the instance is readable by others).
os.umask(0o077)

INFRA = REPO_ROOT / "infra"

# The suite's Spark runs without whole-stage code generation: its data is small and its queries
# many, and compiling generated Java (Janino) for every new query shape is much of their CPU
# time: ~10 % less wall time on test modules (gold efficiency and speed factors 139 -> 125 s,
# quiet machine, 2026-11-30), more of the two busy cores for make test's other lane; the
# operators' own code paths give the same answers (Spark's test suites run both). Interpreted
# expressions too (spark.sql.codegen.factoryMode=NO_CODEGEN, 17-18 % less) broke
# spark.catalog.listTables (EXPRESSION_DECODING_FAILED on its Table encoder): not used.
# Applied to the tests' own session only: the CLI commands the
# tests run (in the instance's gridlake server, which serves a client only with its own
# settings), `make demo` in the warehouse shard (made_demo), its Thrift Server, make bench and
# the cluster keep Spark's defaults, so make test still runs the pipeline with generated code
# end to end. GRIDLAKE_TEST_CODEGEN=1: Spark's defaults here too.
TEST_SQL_CONF = (
    {}
    if os.environ.get("GRIDLAKE_TEST_CODEGEN") == "1"
    else {"spark.sql.codegen.wholeStage": "false"}
)
DEMO_WEEK_START = date(2026, 11, 16)  # ISO week 2026-W47
REALDATA = REPO_ROOT.parent / "shared" / "realdata"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests marked ``adds_records`` last (stable: each group keeps its order).

    The session shares one test warehouse. The examples, the Superset checks and the gold tests
    compute their expected answers from the demo week's own records, so records other tests add
    (the node agent's live samples of this machine, which make the latest week a later one; the
    bad-input test's jobs in the demo week; the real APEL samples) must come after them.
    """
    items.sort(key=lambda item: item.get_closest_marker("adds_records") is not None)
    shard = os.environ.get("GRIDLAKE_TEST_SHARD")
    if shard:
        _keep_shard(config, items, shard)
    # The first test on the demo warehouse pays for made_demo in its setup (`make demo` cold and
    # warm: ~1,400 s quiet, more under the other shard's load), which make test's per-test
    # timeout (1,800 s, pytest-timeout counts fixtures' setup) must not cut short.
    first = next((item for item in items if "made_demo" in item.fixturenames), None)
    if first is not None and first.get_closest_marker("timeout") is None:
        first.add_marker(pytest.mark.timeout(7200))


# make test runs two pytest processes side by side (infra/test.sh), one per shard, each on its own
# instance: "warehouse" takes every module with a test on the demo warehouse (the gold_demo fixture:
# the demo week through `make demo` itself, cold and warm, then Thrift and Superset), "grid" all the
# others (the simulated grid, real samples, Airflow DAGs, unit tests); the fault trials' short form
# runs as a third lane beside them. A module is never split, so its fixtures are built once.
# WAREHOUSE_TOO: modules of the grid's kind that run in the warehouse shard to balance the lanes
# (none since the warehouse is built by `make demo`, which was make test's separate demo test: last
# measured before, grid 2,364 s + demo 2,960 s against warehouse 4,817 s of which its own build of
# the demo week 1,771 s; network analytics, job identity and the volume rule, ~1,470 s, then moved
# to the grid shard). At 8570e23..fbd73db the grid lane took 2,071 s (shard 1,885 s + fault trials
# 186 s) against the warehouse's 1,926 s: the volume rule moves back. Incremental gold moved there
# at 00af398 and back at the next commit: 79 s in the grid lane, 130-145 s in the warehouse's
# (beside the demo's build, load 6-11), whose lane then took 2,135 s. With the fault trials as a
# third lane, at 0b2e889 the grid shard ended at 1,904 s and the warehouse shard at 2,145 s (the
# volume rule 63 s of it, teardown included), its last 240 s with the second core mostly idle:
# the volume rule goes back to the grid shard.
SHARDS = ("warehouse", "grid")
WAREHOUSE_TOO: set[str] = set()


def _keep_shard(config: pytest.Config, items: list[pytest.Item], shard: str) -> None:
    if shard not in SHARDS:
        raise pytest.UsageError(f"GRIDLAKE_TEST_SHARD={shard!r}: one of {SHARDS}")
    on_demo = {item.module.__name__ for item in items if "gold_demo" in item.fixturenames}
    keep, drop = [], []
    for item in items:
        in_warehouse = item.module.__name__ in on_demo | WAREHOUSE_TOO
        (keep if in_warehouse == (shard == "warehouse") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def infra(script: str, action: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run an infra script of the test instance; raise with its output on failure."""
    proc = subprocess.run(
        ["bash", str(INFRA / script), action, *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=900,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"infra/{script} {action} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="session")
def settings():
    return get_settings()


@pytest.fixture(scope="session")
def fresh_state(settings) -> Path:
    """Stop leftovers of an earlier session (by PID) and wipe the test instance's state."""
    for script in ("airflow.sh", "superset.sh", "thrift.sh", "spark_server.sh", "kafka.sh",
                   "derby.sh"):  # fmt: skip
        if (INFRA / script).exists():
            infra(script, "stop")
    keep = {"screenshots"}
    if settings.state.exists():
        for child in settings.state.iterdir():
            if child.name not in keep:
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
    settings.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in [settings.state, *settings.state.rglob("*")]:  # what an older session left
        path.chmod(0o700 if path.is_dir() else 0o600)
    return settings.state


@pytest.fixture(scope="session")
def derby(fresh_state) -> Iterator[None]:
    infra("derby.sh", "start")
    yield
    infra("derby.sh", "stop")


@pytest.fixture(scope="session")
def kafka(fresh_state) -> Iterator[str]:
    infra("kafka.sh", "start")
    yield get_settings().kafka_bootstrap
    infra("kafka.sh", "stop")


@pytest.fixture(scope="session")
def spark(derby):
    """The one SparkSession of the test session (local[2], 4 shuffle partitions, UI off,
    no whole-stage code generation: TEST_SQL_CONF)."""
    from gridlake.spark import get_spark

    session = get_spark(app_name="gridlake-tests")
    for key, value in TEST_SQL_CONF.items():
        session.conf.set(key, value)
    yield session
    session.stop()


@pytest.fixture(scope="module", autouse=True)
def release_spark_memory() -> Iterator[None]:
    """After each test module, drop what it cached and let Spark clean what it checkpointed.

    One SparkSession serves the whole session: cached frames and local checkpoints of a module's
    fixtures would otherwise hold storage memory into the next modules (execution can only evict
    storage down to half of Spark's memory), until a later module's plan fails to get any.
    """
    yield
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return
    import gc

    session.catalog.clearCache()
    # Drop the Python handles of the module's frames: the JVM's ContextCleaner then removes
    # their blocks at its next GC (spark.cleaner.periodicGC.interval, two minutes).
    gc.collect()


# The simulated grid every analytics test is checked against (two ISO weeks, 8 sites with every
# planted effect, 12 real CPU models, ~30k first attempts, planted bad records and re-sends).
SIM_CONFIG = {
    "start": date(2026, 10, 19),
    "days": 14,
    "sites": 8,
    "cpu_models": 12,
    "jobs": 30_000,
    "seed": 11,
    "node_interval": 300,
    "latency_interval": 1800,
    "bad_share": 0.002,
    "resend_share": 0.002,
}


@pytest.fixture(scope="session")
def sim_grid(tmp_path_factory) -> tuple[Path, dict]:
    """(folder, truth) of the simulated grid: jobs/nodes/network JSON lines and the truth files."""
    from gridlake.sources.simulate import SimConfig, simulate

    out = tmp_path_factory.mktemp("sim")
    truth = simulate(SimConfig(**SIM_CONFIG), out, progress=False)
    return out, truth


@pytest.fixture(scope="session")
def sim_jobs(spark, sim_grid):
    """silver.jobs rows of the simulated grid, built with refine's own transforms (cached)."""
    from gridlake.silver.files import silver_jobs_from_jsonl

    df = silver_jobs_from_jsonl(spark, str(sim_grid[0] / "jobs.jsonl")).cache()
    df.count()
    yield df
    df.unpersist()


@pytest.fixture(scope="session")
def sim_io_frames(spark, sim_grid, sim_jobs, tmp_path_factory) -> dict[str, str]:
    """Parquet copies of silver.job_node_features and gold.job_io_signature of the simulated
    grid (the shipped I/O rules), computed once for the modules that read them (I/O signatures,
    cost): {table: path}. Files, not cached frames, so nothing stays in memory between them."""
    from gridlake.gold import io_signatures as io
    from gridlake.silver.features import job_node_features
    from gridlake.silver.files import silver_nodes_from_jsonl

    folder, _ = sim_grid
    out = tmp_path_factory.mktemp("sim_io")
    samples, disks = silver_nodes_from_jsonl(spark, str(folder / "nodes.jsonl"))
    feats = job_node_features(sim_jobs, samples, disks).localCheckpoint()
    paths = {
        "silver.job_node_features": str(out / "features"),
        "gold.job_io_signature": str(out / "signatures"),
    }
    feats.write.parquet(paths["silver.job_node_features"])
    io.job_io_signature(sim_jobs, feats, io.io_rules_frame(spark)).write.parquet(
        paths["gold.job_io_signature"]
    )
    return paths


@pytest.fixture(scope="session")
def demo_week(tmp_path_factory):
    """The demo week (2026-W47) written as canonical JSON lines."""
    from gridlake.sources.demo import generate_week, write_week

    week = generate_week(DEMO_WEEK_START, seed=7)
    paths = write_week(tmp_path_factory.mktemp("demo"), week)
    return week, paths


@pytest.fixture(scope="session")
def jobs_published(kafka, demo_week):
    """The demo week published to grid.jobs, grid.nodes and grid.network."""
    from gridlake.sources.publish import publish_files

    week, paths = demo_week
    for kind in ("jobs", "nodes", "network"):
        report = publish_files(f"grid.{kind}", [paths[kind]], progress=False)
        assert report.ok, report.problems
        assert report.published == len(getattr(week, kind))
    return week, paths


# The days the warehouse shard's `make demo` runs are pinned to: "today" a Monday, so that the demo
# week (2026-W47) is the week just ended and reported, then the Thursday of the same week (the
# warm re-run). Its DAG runs (`airflow dags test`) are dated the first.
DAG_RUN_DAY = "2026-11-23"
WARM_DAY = "2026-11-26"


def _make_demo(env: dict[str, str], today: str) -> dict:
    import time

    from .demo_helpers import steps

    t0 = time.monotonic()
    proc = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), "demo"], capture_output=True,
        text=True, timeout=3600, env={**env, "GRIDLAKE_DEMO_TODAY": today},
        preexec_fn=lambda: os.umask(0o022),  # a newcomer's shell: the demo sets its own
    )  # fmt: skip
    seconds = round(time.monotonic() - t0)
    if proc.returncode != 0:
        raise RuntimeError(
            f"make demo (today {today}) failed ({proc.returncode}) after {seconds} s:\n"
            f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )
    state = get_settings().state
    logs = {
        dag: log.read_text(errors="replace")
        for dag in ("grid_ingest", "grid_analytics")
        if (log := state / "logs" / f"demo-{dag}.log").is_file()
    }  # the runs' outputs: the warm run's grid_ingest writes its own over them
    return {"out": proc.stdout + proc.stderr, "s": seconds, "steps": steps(state), "logs": logs}


@pytest.fixture(scope="session")
def made_demo(spark, derby, kafka, demo_week) -> Iterator[dict]:
    """The demo week through `make demo` as a newcomer runs it (its short form in make test: one
    week, the demo week's records instead of a simulated grid, GRIDLAKE_DEMO_DATA), on the test
    instance: the services (`make up`), Airflow's grid_ingest and grid_analytics (`airflow dags
    test`, each task the real gridlake CLI in the instance's gridlake server), the week's
    reports by a scheduled Airflow, the dashboards warmed; then again on a later day of the same
    week (the warm re-run, which must find nothing to do). The periodic DAGs stay paused
    (GRIDLAKE_DEMO_KEEP_PAUSED) and Airflow is stopped once its runs and listeners are noted,
    so that nothing scheduled writes beside the tests. Every demo-week test reads what it built;
    test_dag_runs.py checks the runs and what `make demo` printed.

    {"cold": {out, s, steps}, "warm": {...}, "runs": {dag: [run]}, "loopback": (rc, output)}."""
    from .airflow_helpers import AirflowAPI, airflow_sh
    from .demo_helpers import leaks, readable_by_others, record

    _week, paths = demo_week
    settings = get_settings()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRIDLAKE_TEST_")}
    # the dashboards are not warmed: test_superset.py queries every chart itself (~300 s of
    # make test's longest lane under load)
    env.update({"GRIDLAKE_DEMO_DATA": str(paths["jobs"].parent), "GRIDLAKE_DEMO_WEEKS": "1",
                "GRIDLAKE_DEMO_KEEP_PAUSED": "1",
                "GRIDLAKE_DEMO_WARM_DASHBOARDS": "0"})  # fmt: skip
    cold = _make_demo(env, DAG_RUN_DAY)
    _SERVER["started"] = True  # `make up` started the gridlake server: stopped at the end
    warm = _make_demo(env, WARM_DAY)
    record(cold_s=cold["s"], cold_today=DAG_RUN_DAY, size="make test: the demo week",
           cold_steps=cold["steps"], warm_s=warm["s"], warm_today=WARM_DAY,
           warm_steps=warm["steps"])  # fmt: skip
    api = AirflowAPI(f"http://127.0.0.1:{8080 + settings.port_offset}", settings.state)
    dags = ("grid_ingest", "grid_analytics", "grid_weekly_site_reports", "grid_maintenance")
    runs = {dag: api.runs(dag) for dag in dags}
    loopback = subprocess.run(["bash", str(INFRA / "check_loopback.sh")], capture_output=True,
                              text=True, timeout=120, env=env)  # fmt: skip
    scheduler = (settings.state / "run" / "airflow-scheduler.pid").is_file()
    # every service of the instance up: their command lines, and what the instance holds
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, timeout=60).stdout
    found = leaks(settings.state, {"ps -eo args": ps, "the cold make demo's output": cold["out"],
                                   "the warm make demo's output": warm["out"]})  # fmt: skip
    public = readable_by_others(settings.state)
    stopped = airflow_sh("stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    listeners = (loopback.returncode, loopback.stdout + loopback.stderr)
    yield {"cold": cold, "warm": warm, "runs": runs, "scheduler_ran": scheduler,
           "loopback": listeners, "env": env, "leaks": found, "public": public}  # fmt: skip
    # `make down` of the instance: Superset, the Thrift Server and the gridlake server `make up`
    # started (the fixtures' own stops after it find nothing left to stop)
    subprocess.run(["make", "--no-print-directory", "-C", str(REPO_ROOT), "down"],
                   capture_output=True, text=True, timeout=900, env=env)  # fmt: skip


@pytest.fixture(scope="session")
def demo_dag_runs(made_demo) -> dict[str, tuple[str, str]]:
    """{dag_id: (run_id, output)} of the `airflow dags test` runs of grid_ingest and
    grid_analytics in the cold `make demo` (its logs demo-<dag>.log as the cold run left them)."""
    from .airflow_helpers import finished_run

    out = {}
    for dag in ("grid_ingest", "grid_analytics"):
        text = made_demo["cold"]["logs"][dag]
        run_id, state = finished_run(text)
        assert state == "success", text[-4000:]
        out[dag] = (run_id, text)
    return out


@pytest.fixture(scope="session")
def gold_demo(demo_dag_runs, demo_week):
    """The demo week in bronze, silver, gold and the grid views (see made_demo)."""
    return demo_week[0]


@pytest.fixture(scope="session")
def thrift(derby, gold_demo) -> Iterator[int]:
    """The Spark Thrift Server of the test instance, serving the demo week's tables."""
    infra("thrift.sh", "start")
    yield get_settings().thrift_port
    infra("thrift.sh", "stop")


_SERVER = {"started": False}


def ensure_cli_server() -> None:
    """The instance's gridlake server, started at the first Spark command a test runs through
    the CLI (and stopped at the end of the session): the command then runs in the server's
    warm session, as Airflow's tasks do, instead of paying a JVM start of its own (about a
    minute on two busy cores). Its driver gets 1 GB here (GRIDLAKE_SERVER_MEMORY)."""
    from gridlake.ops.server import ping

    if ping(get_settings(), timeout=2.0):
        return
    env = {**os.environ, "GRIDLAKE_SERVER_MEMORY": os.environ.get("GRIDLAKE_SERVER_MEMORY", "1g")}
    proc = subprocess.run(["bash", str(INFRA / "spark_server.sh"), "start"], capture_output=True,
                          text=True, env=env, timeout=900)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"infra/spark_server.sh start failed:\n{proc.stdout}\n{proc.stderr}")
    _SERVER["started"] = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _SERVER["started"]:
        subprocess.run(["bash", str(INFRA / "spark_server.sh"), "stop"], capture_output=True,
                       env=os.environ.copy(), timeout=300)  # fmt: skip


def gridlake_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Run the gridlake console script of the main venv for the test instance (a Spark command
    runs in the instance's gridlake server, see ensure_cli_server)."""
    from gridlake.ops.server import SERVED

    if args and args[0] in SERVED:
        ensure_cli_server()
    exe = get_settings().home / "venv" / "bin" / "gridlake"
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=os.environ.copy(), timeout=timeout
    )


def _warn_on_worker_restarts(log: Path, start: int) -> None:
    """A gunicorn worker killed (timeout, crash) while tests talked to it drops their connections;
    say so in the test summary, with the log's lines, rather than leave only a client error."""
    if not log.exists():
        return
    with log.open("rb") as fh:
        fh.seek(start)
        lines = fh.read().decode(errors="replace").splitlines()
    bad = [
        ln for ln in lines if "WORKER TIMEOUT" in ln or "was sent SIGKILL" in ln or "SIGABRT" in ln
    ]
    if bad:
        warnings.warn(
            "Superset workers were killed during the tests:\n" + "\n".join(bad[-10:]), stacklevel=2
        )


@pytest.fixture(scope="session")
def superset(gold_demo, thrift) -> Iterator[dict]:
    """Superset of the instance (assets imported, roles synced), started here unless it already
    runs, stopped at the end only if started here. Its Thrift Server serves the demo week."""
    from .superset_helpers import read_login, superset_sh

    settings = get_settings()
    assert settings.instance != "demo", "the tests never run on the demo instance"
    pid_file = settings.state / "run" / "superset.pid"
    was_running = "running" in superset_sh("status").stdout
    log = settings.state / "logs" / "superset.log"
    log_start = log.stat().st_size if log.exists() else 0
    started = superset_sh("start", timeout=1500)
    assert started.returncode == 0, started.stdout[-6000:]
    pid = pid_file.read_text().strip()
    user, password = read_login(settings.state / "secrets" / "superset_admin.txt")
    yield {
        "url": f"http://127.0.0.1:{settings.superset_port}",
        "user": user,
        "password": password,
        "settings": settings,
        "pid": pid,
    }
    _warn_on_worker_restarts(settings.state / "logs" / "superset.log", log_start)
    if not was_running and pid_file.exists() and pid_file.read_text().strip() == pid:
        stopped = superset_sh("stop", timeout=120)
        assert stopped.returncode == 0, stopped.stdout
