"""gridlake agent: /proc deltas to canonical records, delivery to Kafka, spool while it is away."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import jsonschema
import pytest

from gridlake.contracts import SCHEMAS_DIR
from gridlake.settings import REPO_ROOT, get_settings
from gridlake.sources.agent import (
    PAGE_KIB,
    Counters,
    Publisher,
    Spool,
    read_counters,
    read_net,
    to_records,
)

NODES_SCHEMA = json.loads((SCHEMAS_DIR / "grid.nodes.schema.json").read_text())


def _counters(
    at: float,
    cpu: tuple[int, ...],
    swapin: int,
    disk: tuple[int, ...],
    net: tuple[int, int] | None = None,
) -> Counters:
    return Counters(
        at=at, cpu=cpu, intr=1000, ctxt=5000, procs_running=3, procs_blocked=2,
        mem={"MemFree": 100, "Buffers": 10, "Cached": 50, "SReclaimable": 5,
             "SwapTotal": 1000, "SwapFree": 400},
        vm={"pswpin": swapin, "pswpout": 0, "pgpgin": 0, "pgpgout": 0},
        disks={"sdb": disk}, net=net,
    )  # fmt: skip


def test_records_from_counter_deltas_hand_worked() -> None:
    a = _counters(100.0, (0,) * 8, 0, (0,) * 11)
    # 10 s, 1000 jiffies: user 500, nice 100, system 50, idle 200, iowait 120, irq 10, softirq
    # 10, steal 10; 40 pages swapped in; disk: 200 reads of 4000 sectors taking 1000 ms in all,
    # 50 writes, 8000 ms busy, 20000 ms weighted queue time
    b = _counters(
        110.0,
        (500, 100, 50, 200, 120, 10, 10, 10),
        40,
        (200, 0, 4000, 1000, 50, 0, 800, 500, 0, 8000, 20000),
    )
    vm, io = to_records(a, b, "SITE", "wn1")
    assert (vm["us"], vm["sy"], vm["id"], vm["wa"], vm["st"]) == (60.0, 7.0, 20.0, 12.0, 1.0)
    assert (vm["r"], vm["b"], vm["swpd_kb"], vm["cache_kb"]) == (3, 2, 600, 55)
    assert vm["si"] == 40 * PAGE_KIB / 10  # pages -> KiB/s
    (d,) = io["disks"]
    assert (d["r_s"], d["w_s"], d["rkb_s"]) == (20.0, 5.0, 200.0)  # 4000 sectors = 2000 KiB
    assert d["r_await_ms"] == 5.0 and d["w_await_ms"] == 10.0
    assert d["util_pct"] == 80.0 and d["aqu_sz"] == 2.0
    assert io["cpu_iowait"] == 12.0 and io["interval_seconds"] == 10.0
    for rec in (vm, io):
        jsonschema.validate(rec, NODES_SCHEMA)


def test_network_rates_from_net_dev(tmp_path) -> None:
    """/proc/net/dev as the kernel prints it: loopback left out, rx bytes field 1, tx field 9."""
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "dev").write_text(
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
        "errs drop fifo colls carrier compressed\n"
        "    lo: 9999999    100    0    0    0     0          0         0  9999999    100    0 "
        "   0    0     0       0          0\n"
        "  eth0: 1048576   2000    0    0    0     0          0         0   204800    900    0 "
        "   0    0     0       0          0\n"
        "  ens4: 1048576     10    0    0    0     0          0         0        0      0    0 "
        "   0    0     0       0          0\n"
    )
    assert read_net(str(tmp_path)) == (2 * 1048576, 204800)
    assert read_net(str(tmp_path / "missing")) is None
    disk = (0,) * 11
    a = _counters(100.0, (0,) * 8, 0, disk, net=(0, 0))
    b = _counters(110.0, (0, 0, 0, 1000, 0, 0, 0, 0), 0, disk, net=(2 * 1048576, 204800))
    vm, _ = to_records(a, b, "SITE", "wn1")
    assert (vm["net_rx_kb_s"], vm["net_tx_kb_s"]) == (204.8, 20.0)  # KiB over 10 s
    reset = _counters(120.0, (0, 0, 0, 2000, 0, 0, 0, 0), 0, disk, net=(10, 0))  # counter reset
    assert to_records(b, reset, "SITE", "wn1")[0]["net_rx_kb_s"] == 0.0
    unknown = to_records(a, _counters(110.0, (0, 0, 0, 9, 0, 0, 0, 0), 0, disk), "S", "h")[0]
    assert unknown["net_rx_kb_s"] is None  # no /proc/net/dev: unknown, never 0
    jsonschema.validate(vm, NODES_SCHEMA)


def test_reads_this_machine() -> None:
    c = read_counters()
    assert len(c.cpu) == 8 and sum(c.cpu) > 0 and c.mem["MemTotal"] > 0
    assert all(not name.startswith("loop") for name in c.disks)
    assert c.net is not None and c.net[0] >= 0  # this machine has /proc/net/dev


def _consume(bootstrap: str, host: str, expected: int, timeout: float = 60) -> list[dict]:
    from confluent_kafka import Consumer

    from gridlake.sources.kafka_auth import admin_conf

    c = Consumer(
        {**admin_conf(bootstrap), "group.id": f"agent-{uuid.uuid4()}",
         "auto.offset.reset": "earliest"}
    )  # fmt: skip
    c.subscribe(["grid.nodes"])
    found: list[dict] = []
    import time

    deadline = time.time() + timeout
    while time.time() < deadline and len(found) < expected:
        msg = c.poll(1.0)
        if msg is None or msg.error():
            continue
        rec = json.loads(msg.value())
        if rec.get("host") == host:
            found.append(rec)
    c.close()
    return found


@pytest.mark.integration
@pytest.mark.adds_records
def test_agent_publishes_valid_records(kafka) -> None:
    host = f"agent-{uuid.uuid4().hex[:8]}.test"
    out = subprocess.run(
        [sys.executable, "-m", "gridlake.ops.cli", "agent", "--site", "TEST-SITE", "--host", host,
         "--interval", "0.5", "--count", "3"],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "delivered 9" in out.stderr
    recs = _consume(kafka, host, 9)
    assert sorted(r["kind"] for r in recs) == ["iostat"] * 3 + ["perf"] * 3 + ["vmstat"] * 3
    for rec in recs:
        jsonschema.validate(rec, NODES_SCHEMA)
        assert rec["site"] == "TEST-SITE"


def _agent_stdout(*extra: str, env: dict[str, str] | None = None) -> tuple[list[dict], str]:
    out = subprocess.run(
        [sys.executable, "-m", "gridlake.ops.cli", "agent", "--site", "S", "--host", "h.test",
         "--interval", "1", "--count", "2", "--stdout", *extra],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    recs = [json.loads(line) for line in out.stdout.splitlines()]
    for rec in recs:
        jsonschema.validate(rec, NODES_SCHEMA)
    return recs, out.stderr


@pytest.mark.skipif(shutil.which("perf") is None, reason="no perf on this machine")
def test_agent_counts_instructions_and_cycles_or_says_why() -> None:
    """This machine's real counters through perf stat -I: counted (IPC plausible), or null with
    the reason in the record and on stderr (this project's VM: not_supported)."""
    recs, err = _agent_stdout()
    perf = [r for r in recs if r["kind"] == "perf"]
    assert [r["kind"] for r in recs] == ["vmstat", "iostat", "perf"] * 2
    for r in perf:
        if r["counters_available"] == "yes":
            assert r["cycles"] > 0 and 0 < r["instructions"] / r["cycles"] < 10
        else:
            assert r["counters_available"] in ("not_supported", "not_counted", "not_permitted")
            assert r["instructions"] is None and r["cycles"] is None
            assert f"counters_available={r['counters_available']}" in err
            assert "no hardware counters on this host" in err


def test_agent_without_perf_says_so_and_perf_off_sends_none(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # a PATH where no perf is found
    recs, err = _agent_stdout(env=env)
    perf = [r for r in recs if r["kind"] == "perf"]
    assert len(perf) == 2
    assert all(
        (r["counters_available"], r["instructions"], r["cycles"])
        == ("perf_not_installed", None, None)
        for r in perf
    )
    assert "counters_available=perf_not_installed" in err
    recs, err = _agent_stdout("--perf", "off")
    assert [r["kind"] for r in recs] == ["vmstat", "iostat"] * 2 and "counters" not in err


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_lines(host: str, n: int, first: int = 0) -> list[str]:
    return [
        json.dumps({"site": "S", "host": host, "ts": f"2026-11-20T00:00:{i:02d}Z",
                    "interval_seconds": 1, "kind": "vmstat", "us": i})
        for i in range(first, first + n)
    ]  # fmt: skip


@pytest.mark.integration
@pytest.mark.adds_records
def test_broker_away_records_are_journaled_and_resent_after_a_restart(
    kafka, tmp_path: Path
) -> None:
    host = f"away-{uuid.uuid4().hex[:8]}.test"
    away = dataclasses.replace(get_settings(), kafka_bootstrap=f"127.0.0.1:{_closed_port()}")
    spool = Spool(tmp_path / "spool.jsonl", 10_000_000)
    pub = Publisher(away, spool, max_buffered=4)
    lines = _node_lines(host, 10)
    assert pub.send(lines)
    # journaled whole before anything was produced; the bounded queue took the first 4
    assert spool.path.read_text().splitlines() == lines
    assert spool.read_at == sum(len(x) + 1 for x in lines[:4])
    assert pub.flush(2) == 10 and pub.delivered == 0  # broker still away: the journal stays
    assert spool.path.read_text().splitlines() == lines

    full = Spool(tmp_path / "full.jsonl", 10)
    assert not Publisher(away, full, max_buffered=1).send(lines)  # says so, drops nothing silently

    # the agent restarted (its process gone with 4 records in its queue): the journal is re-sent
    back = Publisher(get_settings(), Spool(spool.path, 10_000_000), max_buffered=100)
    back.tick()
    assert back.flush(30) == 0 and back.delivered == 10 and not spool.path.exists()
    got = _consume(kafka, host, 10)
    assert sorted(r["us"] for r in got) == list(range(10))


def test_a_torn_last_line_of_the_journal_is_dropped(tmp_path: Path) -> None:
    """A kill inside an append: the partial line was never journaled, and the next append must
    not glue onto it."""
    path = tmp_path / "spool.jsonl"
    lines = _node_lines("torn.test", 3)
    path.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:17])
    spool = Spool(path, 10_000_000)
    assert [line for _, line in spool.unread()] == lines[:2]
    assert spool.append(lines[2:])
    assert path.read_text().splitlines() == lines


@pytest.mark.integration
@pytest.mark.adds_records
def test_a_full_disk_leaves_the_journal_whole_and_records_flow_from_memory(
    kafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from gridlake.sources import agent

    host = f"full-{uuid.uuid4().hex[:8]}.test"
    lines = _node_lines(host, 4)
    spool = Spool(tmp_path / "spool.jsonl", 10_000_000)
    assert spool.append(lines[:1])  # left by the last run, unacknowledged
    pub = Publisher(get_settings(), spool)

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(agent.os, "fsync", no_space)
    assert pub.send(lines[1:])  # not journaled, still sent
    assert spool.path.read_text() == lines[0] + "\n"  # the failed append left no torn line
    monkeypatch.undo()
    assert "cannot write the journal" in capsys.readouterr().err
    assert pub.flush(30) == 0 and pub.delivered == 4 and not spool.path.exists()
    assert sorted(r["us"] for r in _consume(kafka, host, 4)) == [0, 1, 2, 3]
