"""The pseudo-distributed cluster (`make cluster-up`): HDFS (a NameNode, two DataNodes) and YARN
(a ResourceManager, a NodeManager) on 127.0.0.1, and gridlake's own commands running on it as
YARN applications with the warehouse on HDFS, selected by the instance name alone
(GRIDLAKE_INSTANCE=cluster reads the settings `cluster-up` wrote).

Marker ``cluster``: `make test-cluster`, not `make test` (the daemons and YARN's container start
cost minutes on two cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gridlake.settings import REPO_ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.integration, pytest.mark.slow]

OFFSET = 500  # the cluster instance's port offset (infra/env.sh, gridlake.settings)
RM_WEB = f"http://127.0.0.1:{8090 + OFFSET}"
NN_WEB = f"http://127.0.0.1:{9870 + OFFSET}"


def _env() -> dict[str, str]:
    """The environment of a newcomer's shell: no test instance, no settings but the instance."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRIDLAKE_", "HADOOP_"))}
    env.pop("SPARK_HOME", None)
    env.pop("YARN_CONF_DIR", None)
    home = os.environ.get("GRIDLAKE_HOME")
    if home:
        env["GRIDLAKE_HOME"] = home
    env["GRIDLAKE_INSTANCE"] = "cluster"
    return env


def _run(*cmd: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(cmd), capture_output=True, text=True, timeout=timeout, env=_env(), cwd=REPO_ROOT
    )


def _gridlake(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    venv = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake")) / "venv"
    return _run(str(venv / "bin" / "gridlake"), *args, timeout=timeout)


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Path]:
    """The cluster instance, started once for the module and stopped by PID at its end."""
    home = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake"))
    up = _run("make", "-s", "cluster-up", timeout=1800)
    assert up.returncode == 0, (up.stdout[-3000:], up.stderr[-3000:])
    try:
        yield home / "cluster"
    finally:
        down = _run("make", "-s", "cluster-down", timeout=600)
        assert down.returncode == 0, down.stderr[-2000:]


def test_status_names_every_daemon_healthy_on_loopback(cluster: Path) -> None:
    st = _run("make", "-s", "cluster-status", timeout=120)
    assert st.returncode == 0, (st.stdout, st.stderr[-2000:])
    lines = [json.loads(x) for x in st.stdout.splitlines() if x.startswith("{")]
    services = sorted(x["service"] for x in lines)
    # Thrift, Superset, Kafka and the metastore join the list as the cluster gains them.
    assert {"namenode", "datanode", "resourcemanager", "nodemanager"} <= set(services)
    assert services.count("datanode") == 2, services
    assert all(x["healthy"] is True for x in lines), lines
    assert all(x["address"].startswith("127.0.0.1:") for x in lines), lines
    # The NameNode counts both DataNodes; YARN one active NodeManager.
    beans = _get(f"{NN_WEB}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")["beans"]
    assert beans[0]["NumLiveDataNodes"] == 2
    assert _get(f"{RM_WEB}/ws/v1/cluster/metrics")["clusterMetrics"]["activeNodes"] >= 1
    loop = _run("bash", "infra/check_loopback.sh", timeout=120)
    assert loop.returncode == 0, (loop.stdout, loop.stderr)
    assert "NOT LOCAL" not in loop.stdout
    # Every daemon listens: five JVMs, each with at least one socket checked.
    assert loop.stdout.count("ok ") >= 5, loop.stdout


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


def test_commands_run_as_yarn_applications_with_the_warehouse_on_hdfs(cluster: Path) -> None:
    """`gridlake init` registers every table on HDFS; a query then runs on YARN executors."""
    init = _gridlake("init", timeout=1800)
    assert init.returncode == 0, (init.stdout[-3000:], init.stderr[-3000:])
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
