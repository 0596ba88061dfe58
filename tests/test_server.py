"""The gridlake server (gridlake.ops.server, infra/spark_server.sh): one Spark session of the
instance that runs the Spark commands of the CLI sent to it over a Unix socket, so that an Airflow
task costs no JVM start. Real server, real CLI processes, the test instance's metastore."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import stat
import subprocess
import time

import pytest

from gridlake.ops.server import SERVED, ping, socket_path
from gridlake.settings import REPO_ROOT
from tests.conftest import infra

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GRIDLAKE = str(REPO_ROOT / ".gridlake" / "venv" / "bin" / "gridlake")


def _cli() -> str:
    home = os.environ.get("GRIDLAKE_HOME")
    return str(os.path.join(home, "venv", "bin", "gridlake")) if home else GRIDLAKE


@pytest.fixture(scope="module")
def server(derby, settings):
    infra("spark_server.sh", "start")
    yield socket_path(settings)
    infra("spark_server.sh", "stop")


def gl(*args: str, env: dict[str, str] | None = None, timeout: float = 300):
    return subprocess.run([_cli(), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})  # fmt: skip


def server_log(settings) -> str:
    return (settings.state / "logs" / "spark-server.log").read_text(errors="replace")


def test_server_listens_on_a_private_unix_socket_only(server, settings):
    mode = os.stat(server).st_mode
    assert stat.S_ISSOCK(mode)
    assert mode & 0o077 == 0, oct(mode)  # only the instance's user may connect
    assert stat.S_IMODE(os.stat(server.parent).st_mode) == 0o700
    assert ping(settings)
    # Every listener of the instance's processes (the server's JVM among them) is on loopback.
    check = subprocess.run(["bash", str(REPO_ROOT / "infra" / "check_loopback.sh")],
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "NOT LOCAL" not in check.stdout


def test_a_served_command_streams_its_output_and_exit_code(server, settings):
    before = len(server_log(settings))
    ok = gl("sql", "SELECT 6 * 7 AS answer")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "42" in ok.stdout
    bad = gl("sql", "SELECT * FROM no_such_db.no_such_table")
    assert bad.returncode != 0
    assert "no_such_table" in bad.stdout + bad.stderr
    served = server_log(settings)[before:]
    # Both ran in the server (each logged with its exit code), not in a JVM of their own.
    assert "gridlake sql SELECT 6 * 7 AS answer: exit 0" in served, served[-3000:]
    assert "gridlake sql SELECT * FROM no_such_db.no_such_table: exit " in served
    assert "gridlake sql SELECT * FROM no_such_db.no_such_table: exit 0" not in served
    # Commands that start no Spark session are never sent to it.
    assert "formats" not in SERVED and "simulate" not in SERVED
    listed = gl("formats")
    assert listed.returncode == 0 and "gridlake formats" not in server_log(settings)[before:]


def test_a_client_that_goes_away_cancels_its_command(server, settings):
    """Airflow's timeout kills a task's client: the server must stop the command's Spark jobs
    and take the next command at once, not finish the abandoned one first."""
    before = len(server_log(settings))
    endless = ("SELECT count(*) FROM range(2000000) a JOIN range(2000000) b "
               "ON a.id * 7 + b.id = -1")  # fmt: skip
    client = subprocess.Popen([_cli(), "sql", endless], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    time.sleep(8)
    assert client.poll() is None, "the endless query ended by itself"
    os.killpg(client.pid, signal.SIGKILL)
    client.wait(timeout=30)
    t0 = time.monotonic()
    # As an Airflow task: it queues in the server (a person's command would run on its own
    # while the cancelled one is still winding down).
    nxt = gl("sql", "SELECT 1 AS after_cancel", env={"AIRFLOW_CTX_DAG_ID": "t"}, timeout=120)
    assert nxt.returncode == 0, nxt.stderr[-2000:]
    assert time.monotonic() - t0 < 60
    served = server_log(settings)[before:]
    assert "cancelling the running command: the client of 'gridlake sql SELECT count(*)" in served
    assert "gridlake sql SELECT 1 AS after_cancel: exit 0" in served


def test_a_person_never_queues_behind_the_scheduler(server, settings, capsys, monkeypatch):
    """While the server runs a command, a person's command runs in a process of its own; an
    Airflow task's (AIRFLOW_CTX_DAG_ID set) queues in the server."""
    from gridlake.ops.server import busy_path, forward

    busy = busy_path(settings)
    busy.write_text("gridlake analyze --only speed_factors, since 01:02:03\n")
    try:
        monkeypatch.delenv("AIRFLOW_CTX_DAG_ID", raising=False)
        assert forward(["sql", "SELECT 1"]) is None
        assert "busy (gridlake analyze --only speed_factors" in capsys.readouterr().err
        monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "grid_analytics")
        before = len(server_log(settings))
        assert forward(["sql", "SELECT 2 AS queued"]) == 0
        assert "gridlake sql SELECT 2 AS queued: exit 0" in server_log(settings)[before:]
    finally:
        busy.unlink(missing_ok=True)


def test_a_client_with_other_settings_runs_in_process(server, settings, capsys, monkeypatch,
                                                      tmp_path):  # fmt: skip
    """The session is the server's: a client whose settings differ (here another warehouse, as
    GRIDLAKE_STORAGE_ROOT gives) is refused, told why, and runs the command itself, so that it
    never reads or writes the server's warehouse by mistake."""
    from gridlake.ops import server as server_module

    other = dataclasses.replace(settings, storage_root=str(tmp_path / "elsewhere"))
    monkeypatch.setattr(server_module, "get_settings", lambda: other)
    before = len(server_log(settings))
    assert server_module.forward(["sql", "SELECT 'elsewhere' AS here"]) is None
    err = capsys.readouterr().err
    assert "the gridlake server runs with other settings (storage_root)" in err, err
    assert "elsewhere" not in server_log(settings)[before:]
    monkeypatch.setattr(server_module, "get_settings", lambda: settings)
    assert server_module.forward(["sql", "SELECT 'same' AS here"]) == 0
    assert "gridlake sql SELECT 'same' AS here: exit 0" in server_log(settings)[before:]


def test_without_a_server_the_cli_runs_in_process(settings, tmp_path):
    """No socket (or GRIDLAKE_SERVER=off): forward declines and the command runs in-process."""
    from gridlake.ops.server import forward

    os.environ["GRIDLAKE_SERVER"] = "off"
    try:
        assert forward(["sql", "SELECT 1"]) is None
    finally:
        del os.environ["GRIDLAKE_SERVER"]
    assert forward(["simulate", "--out", str(tmp_path)]) is None  # not a Spark command
    dead = tmp_path / "dead.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(dead))
    listener.close()  # a socket file with nobody behind it: connect is refused
    from gridlake.ops import server as server_module

    assert server_module._connect(dead) is None
