"""The pseudo-distributed cluster (`make cluster-up`): HDFS (a NameNode, two DataNodes), YARN
(a ResourceManager, a NodeManager) and Kafka (three KRaft brokers) on 127.0.0.1, and gridlake's
own commands running on it as YARN applications with the warehouse on HDFS, selected by the
instance name alone (GRIDLAKE_INSTANCE=cluster reads the settings `cluster-up` wrote).

Marker ``cluster``: `make test-cluster`, not `make test` (the daemons and YARN's container start
cost minutes on two cores). The module starts from a wiped cluster instance (a fresh machine's
`make cluster-up`: the NameNode formatted, new Kafka logs and metastore), so `make test-cluster`
must not run where the `cluster` instance holds data to keep.

Marker ``cluster_short``: make test's short form (infra/test.sh, the third lane, after the fault
trials' short form): the same `cluster-up` from a wiped instance on an instance of its own
(GRIDLAKE_TEST_CLUSTER_INSTANCE=test-cluster, GRIDLAKE_TEST_CLUSTER_OFFSET=1500, so that it never
touches a user's `cluster`), then every daemon healthy on loopback, the switch by instance name
alone, and a command as a YARN application over the warehouse on HDFS; then `cluster.sh down`.
The data comparison and the faults are `make test-cluster`'s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gridlake.settings import REPO_ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.integration, pytest.mark.slow]

# The instance under test: `cluster` (port offset 500: infra/env.sh, gridlake.settings) through
# the make targets, as users run it; make test's short form on an instance of its own through
# infra/cluster.sh, the script those targets run.
INSTANCE = os.environ.get("GRIDLAKE_TEST_CLUSTER_INSTANCE", "cluster")
OFFSET = int(os.environ.get("GRIDLAKE_TEST_CLUSTER_OFFSET", "500"))
if (INSTANCE == "cluster") != (OFFSET == 500):
    raise RuntimeError(f"instance {INSTANCE} on offset {OFFSET}: `cluster` is 500, no other is")
# The short form's cluster serves no dashboards (GRIDLAKE_CLUSTER_SERVING=0: no Thrift Server, no
# Superset): its tests query through the CLI; `make test-cluster` starts both and renders them.
SERVING = os.environ.get("GRIDLAKE_TEST_CLUSTER_SERVING", "1") == "1"
RM_WEB = f"http://127.0.0.1:{8090 + OFFSET}"
NN_WEB = f"http://127.0.0.1:{9870 + OFFSET}"
KAFKA_PORTS = [9092 + OFFSET + 2 * i for i in range(3)]  # infra/kafka.sh, three brokers
BOOTSTRAP = ",".join(f"127.0.0.1:{p}" for p in KAFKA_PORTS)


def _env() -> dict[str, str]:
    """The environment of a newcomer's shell: no test instance, no settings but the instance."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRIDLAKE_", "HADOOP_"))}
    env.pop("SPARK_HOME", None)
    env.pop("YARN_CONF_DIR", None)
    home = os.environ.get("GRIDLAKE_HOME")
    if home:
        env["GRIDLAKE_HOME"] = home
    env["GRIDLAKE_INSTANCE"] = INSTANCE
    return env


def _run(*cmd: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(cmd), capture_output=True, text=True, timeout=timeout, env=_env(), cwd=REPO_ROOT
    )


def _gridlake(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    venv = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake")) / "venv"
    return _run(str(venv / "bin" / "gridlake"), *args, timeout=timeout)


def _cluster(action: str, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    """`make cluster-<action>` on the `cluster` instance; `infra/cluster.sh <action>` on another."""
    cmd = (
        ["make", "-s", f"cluster-{action}"]
        if INSTANCE == "cluster"
        else ["bash", "infra/cluster.sh", action]
    )
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env={**_env(), **env}, cwd=REPO_ROOT
    )


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Path]:
    """The cluster instance, wiped, started once for the module and stopped by PID at its end."""
    import shutil

    home = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake"))
    # a wiped instance has no cluster.env yet: its first commands name the offset, which
    # cluster.env keeps for every later one
    down = _cluster("down", timeout=600, GRIDLAKE_PORT_OFFSET=str(OFFSET))
    assert down.returncode == 0, down.stderr[-2000:]
    shutil.rmtree(home / INSTANCE, ignore_errors=True)
    up = _cluster("up", timeout=1800, GRIDLAKE_PORT_OFFSET=str(OFFSET),
                  GRIDLAKE_CLUSTER_SERVING=str(int(SERVING)))  # fmt: skip
    assert up.returncode == 0, (up.stdout[-3000:], up.stderr[-3000:])
    try:
        yield home / INSTANCE
    finally:
        down = _cluster("down", timeout=600)
        assert down.returncode == 0, down.stderr[-2000:]


@pytest.mark.cluster_short
def test_status_names_every_daemon_healthy_on_loopback(cluster: Path) -> None:
    st = _cluster("status", timeout=120)
    assert st.returncode == 0, (st.stdout, st.stderr[-2000:])
    lines = [json.loads(x) for x in st.stdout.splitlines() if x.startswith("{")]
    services = sorted(x["service"] for x in lines)
    served = ("thrift", "superset") if SERVING else ()
    assert set(services) == {"namenode", "datanode", "resourcemanager", "nodemanager", "kafka",
                             "metastore", *served}, services  # fmt: skip
    assert services.count("datanode") == 2, services
    assert sorted(x["address"] for x in lines if x["service"] == "kafka") == sorted(
        f"127.0.0.1:{p}" for p in KAFKA_PORTS
    ), lines
    assert all(x["healthy"] is True for x in lines), lines
    assert all(x["address"].startswith("127.0.0.1:") for x in lines), lines
    # The NameNode counts both DataNodes; YARN one active NodeManager.
    beans = _get(f"{NN_WEB}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")["beans"]
    assert beans[0]["NumLiveDataNodes"] == 2
    assert _get(f"{RM_WEB}/ws/v1/cluster/metrics")["clusterMetrics"]["activeNodes"] >= 1
    loop = _run("bash", "infra/check_loopback.sh", timeout=120)
    assert loop.returncode == 0, (loop.stdout, loop.stderr)
    assert "NOT LOCAL" not in loop.stdout
    # Every daemon listens: eleven JVMs and Superset (Derby, the metastore, 3 brokers, 5 Hadoop
    # daemons, the Thrift Server), each with at least one socket checked; 10 without serving.
    assert loop.stdout.count("ok ") >= (12 if SERVING else 10), loop.stdout
    listening = {int(m) for m in re.findall(r"^ok\s+\S*127\.0\.0\.1\]?:(\d+)\s", loop.stdout, re.M)}
    for port in KAFKA_PORTS:  # each broker and its controller
        assert {port, port + 1} <= listening, (port, sorted(listening))
    # The metastore, the Thrift Server and Superset, each on its own port.
    served = {10000 + OFFSET, 8088 + OFFSET}
    assert {9083 + OFFSET} | (served if SERVING else set()) <= listening, sorted(listening)
    if not SERVING:
        assert not served & listening, sorted(listening)


@pytest.mark.cluster_short
def test_settings_switch_by_instance_name_alone(cluster: Path) -> None:
    """GRIDLAKE_INSTANCE=cluster alone gives the cluster settings (from cluster.env)."""
    code = (
        "import json; from gridlake.settings import get_settings; s = get_settings(); "
        "print(json.dumps({'env': s.env, 'master': s.spark_master, 'root': s.storage_root, "
        "'offset': s.port_offset, 'hadoop_conf': __import__('os').environ.get('HADOOP_CONF_DIR')}))"
    )
    venv = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake")) / "venv"
    out = _run(str(venv / "bin" / "python"), "-c", code, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    s = json.loads(out.stdout)
    assert s["env"] == "cluster" and s["master"] == "yarn" and s["offset"] == OFFSET, s
    assert s["root"] == f"hdfs://127.0.0.1:{8020 + OFFSET}/gridlake/warehouse", s
    assert s["hadoop_conf"] == str(cluster / "hadoop" / "conf"), s


@pytest.fixture(scope="module")
def initialized(cluster: Path) -> Path:
    """`gridlake init` on the cluster (a YARN application): every table registered on HDFS.
    `cluster-up` from a wiped instance runs it (the application gridlake-init); it runs here only
    when that one is not on the ResourceManager's list."""
    apps = (_get(f"{RM_WEB}/ws/v1/cluster/apps").get("apps") or {}).get("app") or []
    if ("gridlake-init", "SUCCEEDED") not in {(a["name"], a["finalStatus"]) for a in apps}:
        init = _gridlake("init", timeout=1800)
        assert init.returncode == 0, (init.stdout[-3000:], init.stderr[-3000:])
    return cluster


@pytest.mark.cluster_short
def test_commands_run_as_yarn_applications_with_the_warehouse_on_hdfs(initialized: Path) -> None:
    """`gridlake init` registers every table on HDFS; a query then runs on YARN executors."""
    cluster = initialized
    q = _gridlake(
        "sql",
        "SELECT count(*) AS n FROM (SELECT id FROM range(200000) DISTRIBUTE BY id % 7)",
        "--format",
        "csv",
        timeout=900,
    )
    assert q.returncode == 0, q.stderr[-3000:]
    assert q.stdout.strip().splitlines()[-1] == "200000", q.stdout
    apps = _get(f"{RM_WEB}/ws/v1/cluster/apps")["apps"]["app"]
    done = {(a["name"], a["finalStatus"]) for a in apps}
    assert ("gridlake-init", "SUCCEEDED") in done, done
    assert ("gridlake-sql", "SUCCEEDED") in done, done
    # The tables' Delta logs lie on HDFS, and nothing went to the local warehouse folder.
    ls = _run(
        "bash", "infra/cluster.sh", "hdfs", "-ls", "-R", "/gridlake/warehouse/silver", timeout=300
    )
    assert ls.returncode == 0, ls.stderr[-2000:]
    assert "/gridlake/warehouse/silver/jobs/_delta_log" in ls.stdout, ls.stdout[-2000:]
    assert not (cluster / "warehouse").exists()


LOCAL_OFFSET = 900  # the local-mode run of the comparison (instance cluster-local)


def _cluster_settings():
    """The cluster instance's settings, from this (test) process."""
    import dataclasses

    from gridlake.settings import get_settings

    return dataclasses.replace(get_settings(), instance=INSTANCE, kafka_bootstrap=BOOTSTRAP)


def _kafka_admin_conf() -> dict:
    from gridlake.sources.kafka_auth import client_conf

    return client_conf(_cluster_settings(), "admin")


def _local_env() -> dict[str, str]:
    """A local-mode instance reading the cluster's Kafka topics (the same input), signed in as
    the cluster's ingest principal (as a site's own Kafka would be read)."""
    from gridlake.sources.kafka_auth import password_file

    env = _env()
    env.update(
        GRIDLAKE_INSTANCE="cluster-local",
        GRIDLAKE_PORT_OFFSET=str(LOCAL_OFFSET),
        GRIDLAKE_KAFKA_BOOTSTRAP=BOOTSTRAP,
        GRIDLAKE_KAFKA_USER="ingest",
        GRIDLAKE_KAFKA_PASSWORD_FILE=str(password_file(_cluster_settings(), "ingest")),
    )
    return env


@pytest.fixture(scope="module")
def demo_week(initialized: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's simulated week (make demo's generator and seed, 4,000 jobs) published to the
    three brokers, then ingest -> refine -> analyze as YARN applications, the warehouse on HDFS."""
    cluster = initialized
    data = tmp_path_factory.mktemp("cluster-grid")
    sim = _gridlake(
        "simulate", "--out", str(data), "--start", "2026-11-16", "--days", "7", "--sites", "8",
        "--jobs", "4000", "--seed", "11", "--node-interval", "600", "--latency-interval", "3600",
        "--quiet", "--publish", timeout=1800,
    )  # fmt: skip
    assert sim.returncode == 0, sim.stderr[-3000:]
    for verb in ("ingest", "refine", "analyze"):
        r = _gridlake(verb, timeout=3600)
        assert r.returncode == 0, (verb, r.stdout[-3000:], r.stderr[-3000:])
    apps = _get(f"{RM_WEB}/ws/v1/cluster/apps?states=FINISHED")["apps"]["app"]
    done = {(a["name"], a["finalStatus"]) for a in apps}
    for verb in ("ingest", "refine", "analyze"):
        assert (f"gridlake-{verb}", "SUCCEEDED") in done, done
    ls = _run("bash", "infra/cluster.sh", "hdfs", "-ls", "/gridlake/warehouse/gold", timeout=300)
    assert ls.returncode == 0 and "/gridlake/warehouse/gold/site_efficiency_weekly" in ls.stdout
    assert not (cluster / "warehouse").exists()  # nothing on the local disk warehouse
    return cluster


def test_the_demo_week_on_the_cluster_gives_the_local_gold(demo_week: Path) -> None:
    """The demo week through the cluster (the fixture), and the same topics through the same
    commands in local mode on one disk: every gold table (and silver) is the same, row for row
    (floats to 1e-9 relative), by `gridlake compare`."""
    home = demo_week.parent
    # The same input in local mode: its own instance (state, Derby), the cluster's topics.
    local = home / "cluster-local"
    venv = home / "venv"
    env = _local_env()

    def run_local(*cmd: str, timeout: float = 3600) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=REPO_ROOT)  # fmt: skip

    run_local("bash", "infra/derby.sh", "stop")
    import shutil

    shutil.rmtree(local, ignore_errors=True)
    try:
        d = run_local("bash", "infra/derby.sh", "start")
        assert d.returncode == 0, d.stderr[-2000:]
        for verb in ("ingest", "refine", "analyze"):
            r = run_local(str(venv / "bin" / "gridlake"), verb)
            assert r.returncode == 0, (verb, r.stdout[-3000:], r.stderr[-3000:])
        hdfs_root = f"hdfs://127.0.0.1:{8020 + OFFSET}/gridlake/warehouse"
        results = {}
        # silver's data tables (not its run logs: batch audit, quality results) and all of gold
        silver = ("jobs,node_samples,node_disk_samples,network,accounting_summaries,"
                  "job_node_features,quarantine_jobs,quarantine_nodes,quarantine_network,"
                  "quarantine_accounting_summaries")  # fmt: skip
        for layer, only in (("silver", ["--tables", silver]), ("gold", [])):
            cmp = run_local(
                str(venv / "bin" / "gridlake"), "compare", hdfs_root, "--layer", layer, *only
            )
            lines = [json.loads(x) for x in cmp.stdout.splitlines() if x.startswith("{")]
            results.update({x["table"]: x for x in lines})
            assert cmp.returncode == 0, [x for x in lines if not x["same"]] or cmp.stderr[-3000:]
    finally:
        run_local("bash", "infra/derby.sh", "stop")
    from gridlake.gold.analyze import gold_tables

    assert {t.full_name for t in gold_tables()} <= set(results)
    # The comparison compared something: the week's jobs, and most gold tables hold rows.
    assert results["silver.jobs"]["rows_here"] > 4000, results["silver.jobs"]
    filled = [t for t, x in results.items() if t.startswith("gold.") and x["rows_here"] > 0]
    assert len(filled) >= 20, sorted(filled)
    assert all(x["rows_here"] == x["rows_there"] for x in results.values())


def test_dashboards_render_from_the_clusters_thrift_server(demo_week: Path) -> None:
    """Every dashboard of the cluster's Superset in headless Chromium, its charts answered by the
    Thrift Server running as a YARN application over the warehouse on HDFS: none with an error
    or without results."""
    from gridlake.serving.superset_assets import DASHBOARDS
    from tests.superset_helpers import render_dashboards

    seconds = render_dashboards(f"http://127.0.0.1:{8088 + OFFSET}", demo_week, "cluster")
    assert sorted(seconds) == sorted(d.slug for d in DASHBOARDS), seconds
    running = _get(f"{RM_WEB}/ws/v1/cluster/apps?states=RUNNING")["apps"]["app"]
    assert "gridlake-thrift" in {a["name"] for a in running}
    print(f"dashboards on the cluster (seconds): {seconds}")


def _admin():
    from confluent_kafka.admin import AdminClient

    return AdminClient(_kafka_admin_conf())


def _end_offsets(topic: str) -> dict[int, int]:
    """The high watermark of each partition of topic, from the brokers that are up (retried while
    the cluster moves a dead broker's partition leaderships to the others)."""
    import time

    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + 120
    while True:
        c = Consumer({**_kafka_admin_conf(), "group.id": "gridlake-test-offsets"})
        try:
            parts = c.list_topics(topic, timeout=20).topics[topic].partitions
            return {
                p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in parts
            }
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
        finally:
            c.close()


def test_topics_are_replicated_three_times_and_need_two_in_sync(cluster: Path) -> None:
    from confluent_kafka.admin import ConfigResource

    admin = _admin()
    md = admin.list_topics(timeout=20)
    assert sorted(md.brokers) == [1, 2, 3], md.brokers
    for name in ("grid.jobs", "grid.nodes", "grid.network", "grid.deadletter"):
        parts = md.topics[name].partitions.values()
        assert parts and all(len(p.replicas) == 3 for p in parts), (name, parts)
        res = ConfigResource(ConfigResource.Type.TOPIC, name)
        conf = admin.describe_configs([res])[res].result(timeout=20)
        assert conf["min.insync.replicas"].value == "2", name


def _jobs_file(path: Path, n: int, tag: str) -> None:
    """n canonical grid.jobs records: the demo week's first job with n distinct job ids."""
    from datetime import date

    from gridlake.sources.demo import generate_week

    base = generate_week(date(2026, 11, 16), seed=7).jobs[0]
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({**base, "job_id": f"{tag}-{i}"}) + "\n")


def test_a_broker_killed_mid_publish_loses_and_doubles_nothing(
    initialized: Path, tmp_path: Path
) -> None:
    """SIGKILL one of the three brokers while `gridlake publish` sends 200,000 jobs, keep it down
    through `gridlake ingest` (on YARN): every record is in bronze exactly once, against the
    end offsets of the brokers that survived; then the broker comes back and catches up."""
    import signal
    import time

    cluster = initialized
    n = 200_000
    src = tmp_path / "jobs.jsonl"
    _jobs_file(src, n, f"kill-{int(time.time())}")
    before = sum(_end_offsets("grid.jobs").values())
    venv = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake")) / "venv"
    pub = subprocess.Popen(
        [str(venv / "bin" / "gridlake"), "publish", "--topic", "grid.jobs", str(src)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO_ROOT,
    )  # fmt: skip
    # Kill broker 2 once the first records are acknowledged, while the rest are on their way.
    deadline = time.monotonic() + 300
    at_kill = 0
    while at_kill < 1000:
        assert pub.poll() is None, pub.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
        at_kill = sum(_end_offsets("grid.jobs").values()) - before
    victim = int((cluster / "run" / "kafka2.pid").read_text())
    os.kill(victim, signal.SIGKILL)
    try:
        out, err = pub.communicate(timeout=900)
        assert pub.returncode == 0, (out[-2000:], err[-3000:])
        assert at_kill < n, f"the publish had finished ({at_kill}) before the broker died"
        ends = _end_offsets("grid.jobs")
        assert sum(ends.values()) - before == n  # no record lost, none doubled by retries
        st = _cluster("status", timeout=120)
        assert st.returncode != 0 and '"service": "kafka"' in st.stdout  # the dead one shows
        ingest = _gridlake("ingest", timeout=1800)
        assert ingest.returncode == 0, (ingest.stdout[-3000:], ingest.stderr[-3000:])
        q = _gridlake(
            "sql",
            "SELECT count(*) AS n, count(DISTINCT partition, offset) AS d FROM bronze.jobs "
            "WHERE topic = 'grid.jobs'",
            "--format", "csv", timeout=900,
        )  # fmt: skip
        assert q.returncode == 0, q.stderr[-3000:]
        rows, distinct = map(int, q.stdout.strip().splitlines()[-1].split(","))
        assert rows == distinct == sum(ends.values()), (rows, distinct, ends)
    finally:
        up = _run("bash", "infra/kafka.sh", "start", timeout=300)
        assert up.returncode == 0, up.stderr[-2000:]
    deadline = time.monotonic() + 120
    while _cluster("status", timeout=120).returncode != 0:
        assert time.monotonic() < deadline, "the restarted broker did not rejoin"
        time.sleep(3)


def test_a_datanode_killed_mid_refine_loses_nothing(initialized: Path, tmp_path: Path) -> None:
    """SIGKILL one of the two DataNodes while `gridlake refine` (on YARN) writes silver: the
    refine finishes (replication 2: the blocks are on the other one), every job of the batch is
    in silver once, and the batch audit adds up; then the DataNode comes back."""
    import signal
    import time

    cluster = initialized
    n, tag = 50_000, f"dn-{int(time.time())}"
    src = tmp_path / "jobs.jsonl"
    _jobs_file(src, n, tag)
    pub = _gridlake("publish", "--topic", "grid.jobs", str(src), timeout=600)
    assert pub.returncode == 0, pub.stderr[-3000:]
    ingest = _gridlake("ingest", timeout=1800)
    assert ingest.returncode == 0, ingest.stderr[-3000:]
    venv = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake")) / "venv"
    refine = subprocess.Popen(
        [str(venv / "bin" / "gridlake"), "refine", "--inputs", "jobs"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO_ROOT,
    )  # fmt: skip
    try:
        # Kill once the refine's YARN application has run for a while (its executors write).
        deadline = time.monotonic() + 600
        while True:
            assert refine.poll() is None, refine.communicate()
            assert time.monotonic() < deadline, "the refine's application never ran"
            apps = _get(f"{RM_WEB}/ws/v1/cluster/apps?states=RUNNING").get("apps") or {}
            running = [a for a in apps.get("app", []) if a["name"] == "gridlake-refine"]
            if running and running[0]["elapsedTime"] > 20_000:
                break
            time.sleep(1)
        os.kill(int((cluster / "run" / "datanode2.pid").read_text()), signal.SIGKILL)
        assert refine.poll() is None, "the refine finished before the DataNode died"
        out, err = refine.communicate(timeout=1800)
        assert refine.returncode == 0, (out[-3000:], err[-3000:])
        q = _gridlake(
            "sql",
            f"SELECT count(*) AS n, count(DISTINCT job_id) AS d FROM silver.jobs "
            f"WHERE job_id LIKE '{tag}-%'",
            "--format", "csv", timeout=900,
        )  # fmt: skip
        assert q.returncode == 0, q.stderr[-3000:]
        assert q.stdout.strip().splitlines()[-1] == f"{n},{n}", q.stdout
        audit = _gridlake(
            "sql",
            "SELECT count(*) FROM silver.batch_audit WHERE input = 'jobs' AND "
            "bronze_rows <> clean_rows + duplicate_rows + quarantined_rows",
            "--format", "csv", timeout=900,
        )  # fmt: skip
        assert audit.returncode == 0, audit.stderr[-3000:]
        assert audit.stdout.strip().splitlines()[-1] == "0", audit.stdout
    finally:
        if refine.poll() is None:
            refine.kill()
        up = _cluster("up", timeout=900)  # starts what is not running
        assert up.returncode == 0, up.stderr[-2000:]
    beans = _get(f"{NN_WEB}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")["beans"]
    assert beans[0]["NumLiveDataNodes"] == 2


def _gold_fingerprint(table: str) -> str:
    """An order-free digest of a small gold table's rows."""
    q = _gridlake(
        "sql",
        f"SELECT count(*) AS n, md5(concat_ws('|', sort_array(collect_list(to_json(struct(*))))))"
        f" AS digest FROM {table}",
        "--format", "csv", timeout=900,
    )  # fmt: skip
    assert q.returncode == 0, q.stderr[-3000:]
    return q.stdout.strip().splitlines()[-1]


def _executors_running_tasks(app_id: str) -> list[tuple[int, Path]]:
    """(pid, container log folder) of every Spark executor of YARN application ``app_id`` whose
    log says it is running a task (not the Thrift Server's: it runs tasks for Superset too)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        # The executor's JVM itself (not the bash -c of YARN's launch script around it).
        if not argv[0].endswith("java") or not any("YarnCoarseGrained" in a for a in argv):
            continue
        if app_id not in argv:  # the executor's arguments: --app-id application_...
            continue
        logdir = next(
            (
                a.split("=", 1)[1]
                for a in argv
                if a.startswith("-Dspark.yarn.app.container.log.dir=")
            ),
            None,
        )
        if not logdir:
            continue
        try:
            if "Running task" in (Path(logdir) / "stderr").read_text(errors="replace"):
                found.append((int(proc.name), Path(logdir)))
        except OSError:
            continue
    return found


def test_an_executor_killed_mid_analyze_gives_the_same_gold(demo_week: Path) -> None:
    """SIGKILL a YARN container's executor while it runs a task of `gridlake analyze`: Spark
    retries the lost tasks on another executor, the command succeeds, and the gold table is the
    same, row for row, as the undisturbed run's."""
    import signal
    import threading
    import time

    table = "gold.site_efficiency_weekly"
    n = _gridlake("sql", "SELECT count(*) FROM silver.jobs", "--format", "csv", timeout=900)
    assert n.returncode == 0, n.stderr[-2000:]
    assert int(n.stdout.strip().splitlines()[-1]) > 0, "silver.jobs is empty: run the module"
    first = _gridlake("analyze", "--only", "site_efficiency", timeout=1800)
    assert first.returncode == 0, (first.stdout[-3000:], first.stderr[-3000:])
    clean = _gold_fingerprint(table)
    assert not clean.startswith("0,"), clean

    killed: list[int] = []
    stop = threading.Event()

    def analyze_app() -> str | None:
        apps = _get(f"{RM_WEB}/ws/v1/cluster/apps?states=RUNNING").get("apps") or {}
        ids = [a["id"] for a in apps.get("app", []) if a["name"] == "gridlake-analyze"]
        return ids[0] if ids else None

    def killer() -> None:
        app = None
        while not stop.is_set() and not killed:
            app = app or analyze_app()
            for pid, _ in _executors_running_tasks(app) if app else []:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.2)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        again = _gridlake("analyze", "--full", "--only", "site_efficiency", timeout=1800)
    finally:
        stop.set()
        t.join(timeout=30)
    assert again.returncode == 0, (again.stdout[-3000:], again.stderr[-3000:])
    assert killed, "no executor ran a task while analyze ran"
    out = again.stdout + again.stderr
    assert re.search(r"Lost executor|ExecutorLostFailure|Container killed|exited with code", out), (
        out[-4000:]
    )
    assert _gold_fingerprint(table) == clean
