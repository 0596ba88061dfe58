"""A long-lived Spark driver for local mode: ``gridlake`` commands run in it instead of each
starting a JVM of its own.

On two cores a ``gridlake`` command pays 20-40 s before its first row moves: the JVM, the Spark
and Delta classes, the Hive metastore client, and the first read of each Delta log. An Airflow
run of the pipeline is a dozen such commands, and the scheduled ingest runs four of them every
five minutes, most finding nothing new. ``gridlake server`` (started by ``make up``, stopped
by ``make down``, see ``infra/spark_server.sh``) holds one SparkSession of the instance and runs
the commands it is sent, one at a time, in that session; ``gridlake <command>`` hands its
arguments to it when it runs (see :func:`forward`) and runs in-process otherwise.

- **Where**: a Unix domain socket in the instance's run folder (``<state>/run/spark-server.sock``,
  mode 0600 in a 0700 folder): nothing listens on the network, and only the instance's user can
  connect.
- **One at a time**: commands are served in arrival order, each with the client's arguments and
  working directory; its standard output and error are streamed back as they are written, and
  its exit code is the client's. Airflow's tasks queue; a person's command (one without
  Airflow's ``AIRFLOW_CTX_DAG_ID``) that finds the server busy runs in a process of its own
  instead of waiting behind the scheduler's work.
- **A client that goes away cancels its command**: when the client's connection closes before
  the command ends (Airflow's timeout or a stop kills the task), the server cancels every Spark
  job and stops every streaming query, as a crash of the command would: the pipeline's
  checkpoints and idempotent writes make that safe.
- **Between commands**: cached frames are released and streaming queries stopped, so that a
  command starts from the same session state as a fresh process.
- **Only local mode**: with ``GRIDLAKE_ENV=cluster`` the commands are submitted to the cluster
  as before; ``GRIDLAKE_SERVER=off`` runs a command in-process even when the server runs.

- **Same settings, own knobs**: the session is built from the server's settings (warehouse,
  metastore, Kafka, instance), so a client whose settings differ (e.g. ``GRIDLAKE_STORAGE_ROOT``
  pointing elsewhere) is refused and runs the command in-process. The per-command knobs
  (``PER_COMMAND_ENV``: thresholds, the VACUUM mode, skip-current) travel with the command and
  are set in the server's environment while it runs.

Protocol: one JSON line from the client (``{"argv": [...], "cwd": "...", "settings": key,
"env": {...}}`` or ``{"ping": 1}``), then JSON lines from the server: ``{"o": text}`` /
``{"e": text}`` for output and a last ``{"rc": code}``, or a single ``{"refused": why}``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gridlake.settings import Settings, get_settings

log = logging.getLogger(__name__)

# The commands the server runs: those that use Spark. The others (simulate, publish, agent, docs,
# formats, ...) never start a JVM and gain nothing.
SERVED = frozenset(
    {
        "alerts",
        "sites",
        "ingest",
        "refine",
        "analyze",
        "report",
        "maintain",
        "quality-docs",
        "sql",
        "init",
        "whatif",
        "train-network",
    }
)


# Environment a command reads when it runs (not when the process starts): it goes with the
# command and is set in the server for its duration. Everything else the settings hold is the
# server's own (see settings_key).
PER_COMMAND_ENV = frozenset(
    {
        "GRIDLAKE_ANALYZE_SKIP_CURRENT",
        "GRIDLAKE_VACUUM",
        "GRIDLAKE_MAX_QUARANTINE_SHARE",
        "GRIDLAKE_MIN_VOLUME_SHARE",
        "GRIDLAKE_GOLD_MIN_ROW_SHARE",
        "GRIDLAKE_CHROMIUM",
        # report --send: the SMTP server (the socket is the owner's only, as the env file is)
        "GRIDLAKE_SMTP_URL",
        "GRIDLAKE_SMTP_PASSWORD",
        "AIRFLOW_CONN_SMTP_DEFAULT",
    }
)


def settings_key(settings: Settings) -> dict[str, str]:
    """What a session is built from: a command may run in the server only when its own settings
    give the same (the client compares nothing itself; the server names the differences)."""
    return {k: str(v) for k, v in dataclasses.asdict(settings).items()}


def socket_path(settings: Settings | None = None) -> Path:
    settings = settings or get_settings()
    return settings.state / "run" / "spark-server.sock"


def busy_path(settings: Settings | None = None) -> Path:
    """Present while the server runs a command: that command and when it started."""
    return socket_path(settings).with_name("spark-server.busy")


# --- client ---------------------------------------------------------------------------------


def _connect(path: Path, timeout: float = 2.0) -> socket.socket | None:
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    sock.settimeout(None)
    return sock


def _lines(sock: socket.socket) -> Any:
    """The JSON messages the server sends, one per line, until it closes the connection."""
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line:
                yield json.loads(line)


def ping(settings: Settings | None = None, timeout: float = 5.0) -> bool:
    """True when the instance's server answers (its session is ready)."""
    sock = _connect(socket_path(settings), timeout)
    if sock is None:
        return False
    try:
        sock.settimeout(timeout)
        sock.sendall(b'{"ping": 1}\n')
        return any(msg.get("rc") == 0 for msg in _lines(sock))
    except (OSError, ValueError):
        return False
    finally:
        sock.close()


def forward(argv: Sequence[str]) -> int | None:
    """Run ``gridlake argv`` in the instance's server; None when it cannot (not local mode, not
    a served command, ``GRIDLAKE_SERVER=off``, or no server running): the caller runs it."""
    if os.environ.get("GRIDLAKE_SERVER", "auto") == "off" or os.environ.get("GRIDLAKE_IN_SERVER"):
        return None
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in SERVED:
        return None
    try:
        settings = get_settings()
    except ValueError:
        return None
    if not settings.is_local:
        return None
    busy = busy_path(settings)
    if busy.exists() and "AIRFLOW_CTX_DAG_ID" not in os.environ:
        # A person's command (not an Airflow task) never queues behind the scheduler's work.
        try:
            what = busy.read_text().strip()
        except OSError:
            what = "a command"
        print(f"gridlake: the gridlake server is busy ({what}): running in a process of its own",
              file=sys.stderr)  # fmt: skip
        return None
    sock = _connect(socket_path(settings))
    if sock is None:
        return None
    try:
        request = {
            "argv": list(argv),
            "cwd": os.getcwd(),
            "settings": settings_key(settings),
            "env": {k: v for k, v in os.environ.items() if k in PER_COMMAND_ENV},
        }
        sock.sendall(json.dumps(request).encode() + b"\n")
        for msg in _lines(sock):
            if "refused" in msg:
                print(f"gridlake: {msg['refused']}: running in a process of its own",
                      file=sys.stderr)  # fmt: skip
                return None
            if "o" in msg:
                sys.stdout.write(msg["o"])
                sys.stdout.flush()
            elif "e" in msg:
                sys.stderr.write(msg["e"])
                sys.stderr.flush()
            elif "rc" in msg:
                return int(msg["rc"])
    except OSError as exc:
        print(f"gridlake: lost the connection to the gridlake server: {exc}", file=sys.stderr)
        return 1
    finally:
        sock.close()
    server_log = get_settings().state / "logs" / "spark-server.log"
    print(f"gridlake: the server closed the connection before the command ended (see {server_log})",
          file=sys.stderr)  # fmt: skip
    return 1


# --- server ---------------------------------------------------------------------------------


class _Stream(io.TextIOBase):
    """sys.stdout / sys.stderr of the server: what a command writes goes to its client (and,
    between commands, to the server's own stream)."""

    def __init__(self, key: str, fallback: Any) -> None:
        self.key = key
        self.fallback = fallback
        self.target: socket.socket | None = None

    def write(self, text: str) -> int:
        if not text:
            return 0
        target = self.target
        if target is None:
            self.fallback.write(text)
            self.fallback.flush()
            return len(text)
        with contextlib.suppress(OSError):  # the client went away: the command is cancelled
            target.sendall(json.dumps({self.key: text}).encode() + b"\n")
        return len(text)

    def flush(self) -> None:
        if self.target is None:
            self.fallback.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


def _cancel(spark: Any, why: str) -> None:
    log.warning("cancelling the running command: %s", why)
    for query in list(spark.streams.active):
        try:
            query.stop()
        except Exception:
            log.exception("stopping streaming query %s", query.name)
    spark.sparkContext.cancelAllJobs()


def _watch(conn: socket.socket, done: threading.Event, on_gone: Callable[[], None]) -> None:
    """Call on_gone when the client closes its side before the command is done (the client
    sends nothing after its request, so a readable socket means end of file)."""
    import select

    while not done.is_set():
        try:
            readable, _, _ = select.select([conn], [], [], 0.5)
            if not readable:
                continue
            data = conn.recv(1, socket.MSG_PEEK)
        except (OSError, ValueError):
            data = b""
        if not data:
            if not done.is_set():
                on_gone()
            return
        time.sleep(0.5)  # the client sent more than its request: ignore it


def _run(spark: Any, main: Callable[[list[str]], int], argv: list[str], cwd: str) -> int:
    try:
        os.chdir(cwd)
    except OSError:
        print(f"gridlake server: cannot enter {cwd}; running in {os.getcwd()}", file=sys.stderr)
    try:
        return int(main(argv) or 0)
    except SystemExit as exc:  # argparse errors and explicit exits
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        for query in list(spark.streams.active):
            query.stop()
        spark.catalog.clearCache()


def serve(main: Callable[[list[str]], int], settings: Settings | None = None) -> None:
    """Start the session, then serve commands until SIGTERM; ``main`` runs one command (the
    CLI's entry point, passed in so that this module does not import the CLI back)."""
    from gridlake.spark import get_spark

    settings = settings or get_settings()
    if not settings.is_local:
        raise SystemExit("gridlake server is for local mode (GRIDLAKE_ENV=local)")
    os.environ["GRIDLAKE_IN_SERVER"] = "1"  # a command that runs gridlake again runs in-process
    path = socket_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    t0 = time.monotonic()
    spark = get_spark(settings, app_name="gridlake-server")
    spark.sql("SHOW DATABASES").collect()  # connect to the metastore now, not at the first command
    out, err = _Stream("o", sys.stdout), _Stream("e", sys.stderr)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    logging.basicConfig(level=logging.WARNING, stream=err,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # fmt: skip
    if path.exists():
        path.unlink()
    busy_path(settings).unlink(missing_ok=True)  # left by a server that was killed mid-command
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o077)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    listener.listen(16)
    log.warning("gridlake server: session ready in %.1f s, serving on %s", time.monotonic() - t0,
                path)  # fmt: skip
    home = os.getcwd()
    try:
        while True:
            conn, _ = listener.accept()
            with conn:
                _serve_one(spark, main, conn, out, err)
            os.chdir(home)
    finally:
        listener.close()
        if path.exists():
            path.unlink()


def _serve_one(spark: Any, main: Callable[[list[str]], int], conn: socket.socket,
               out: _Stream, err: _Stream) -> None:  # fmt: skip
    conn.settimeout(30)
    try:
        first = b""
        while not first.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                return
            first += chunk
        request = json.loads(first)
    except (OSError, ValueError):
        return
    conn.settimeout(None)
    if "ping" in request:
        conn.sendall(b'{"rc": 0}\n')
        return
    argv = [str(a) for a in request.get("argv", [])]
    mine = settings_key(get_settings())
    theirs = request.get("settings") or {}
    differ = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    if differ:
        why = f"the gridlake server runs with other settings ({', '.join(differ)})"
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"refused": why}).encode() + b"\n")
        return
    t0 = time.monotonic()
    done = threading.Event()
    why = f"the client of 'gridlake {' '.join(argv)}' left"
    watcher = threading.Thread(
        target=_watch, args=(conn, done, lambda: _cancel(spark, why)), daemon=True
    )
    watcher.start()
    out.target = err.target = conn
    busy = busy_path()
    busy.write_text(f"gridlake {' '.join(argv)}, since {time.strftime('%H:%M:%S')}\n")
    env = {k: str(v) for k, v in (request.get("env") or {}).items() if k in PER_COMMAND_ENV}
    saved = {k: os.environ.get(k) for k in PER_COMMAND_ENV}
    for k in PER_COMMAND_ENV:  # the command's knobs, and none of an earlier command's
        os.environ.pop(k, None)
    os.environ.update(env)
    try:
        rc = _run(spark, main, argv, str(request.get("cwd") or "/"))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        busy.unlink(missing_ok=True)
        out.target = err.target = None
        done.set()
    watcher.join(timeout=2)
    log.warning("gridlake %s: exit %d in %.1f s", " ".join(argv), rc, time.monotonic() - t0)
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps({"rc": rc}).encode() + b"\n")
