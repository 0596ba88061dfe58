"""``gridlake agent``: sample the node it runs on and publish ``grid.nodes`` messages.

Every ``interval`` seconds the agent reads ``/proc`` (``stat``, ``meminfo``, ``vmstat``,
``diskstats``) - the counters vmstat and iostat themselves read - and ``net/dev`` (bytes received
and sent by every interface but loopback: tells a job waiting on the network from an idle one),
and turns the deltas into one ``vmstat`` and one ``iostat`` record in the canonical form of
``schemas/grid.nodes.schema.json``.
No subprocess per sample, no shell: a sample costs a few file reads.

Hardware counters (``--perf auto``, the default): one ``perf stat -I 1000 -x, -a -e
instructions,cycles`` runs beside the agent for its whole life (``LC_ALL=C``: no digit
grouping); its one-second counts are summed into one ``perf`` record per interval (instructions
and cycles of the whole host, from which IPC). Where the counters cannot be read the record still
comes, with ``instructions`` and ``cycles`` null and ``counters_available`` saying why:
``not_supported`` (no PMU: most VMs), ``not_counted``, ``not_permitted``
(``kernel.perf_event_paranoid`` and no CAP_PERFMON) or ``perf_not_installed``; the agent also
says it once on stderr. ``--perf off`` sends no perf records.

Delivery: every record is first appended to a journal on disk (``spool``, fsynced, bounded by
``--max-spool-mb``), then handed to an idempotent producer that retries for as long as the broker
is away (``message.timeout.ms`` is 0: never expire); the journal is emptied only when the broker
has acknowledged every line in it. A SIGKILL at any moment loses at most the sample being taken:
the restarted agent re-sends the journal first (silver keeps one row per host, ts and kind of a
record that arrives twice). The producer's in-memory queue is bounded (``max_buffered``); what
it cannot take waits in the journal. If the journal is full the agent stops sampling and says so
on stderr and in its exit status, rather than dropping anything silently; if it cannot be written
(a full disk) records are sent from memory and the agent says so. ``--flush-spool`` re-sends a
journal and exits.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridlake.settings import TOPICS, Settings, get_settings
from gridlake.sources.perfstat import (
    COUNTED,
    NOT_COUNTED,
    NOT_SUPPORTED,
    event_kind,
    parse_interval_line,
)

log = logging.getLogger(__name__)

SKIP_DEVICE_PREFIXES = ("loop", "ram", "zram", "fd", "sr")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


@dataclass(frozen=True)
class Counters:
    """One reading of the kernel counters."""

    at: float
    cpu: tuple[int, ...]  # user nice system idle iowait irq softirq steal
    intr: int
    ctxt: int
    procs_running: int
    procs_blocked: int
    mem: dict[str, int]  # kB
    vm: dict[str, int]
    disks: dict[str, tuple[int, ...]]  # the 11 classic diskstats fields
    net: tuple[int, int] | None = None  # bytes received, sent (all interfaces but lo)


def _read(path: str) -> str:
    with open(path, encoding="ascii") as fh:
        return fh.read()


def read_counters(proc: str = "/proc") -> Counters:
    cpu: tuple[int, ...] = ()
    intr = ctxt = running = blocked = 0
    for line in _read(f"{proc}/stat").splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            cpu = tuple(int(x) for x in parts[1:9])
        elif parts[0] == "intr":
            intr = int(parts[1])
        elif parts[0] == "ctxt":
            ctxt = int(parts[1])
        elif parts[0] == "procs_running":
            running = int(parts[1])
        elif parts[0] == "procs_blocked":
            blocked = int(parts[1])
    mem = {}
    for line in _read(f"{proc}/meminfo").splitlines():
        key, _, rest = line.partition(":")
        mem[key] = int(rest.split()[0])
    vm = {}
    for line in _read(f"{proc}/vmstat").splitlines():
        key, _, value = line.partition(" ")
        if key in ("pswpin", "pswpout", "pgpgin", "pgpgout"):
            vm[key] = int(value)
    disks = {}
    for line in _read(f"{proc}/diskstats").splitlines():
        parts = line.split()
        name = parts[2]
        if name.startswith(SKIP_DEVICE_PREFIXES) or not os.path.exists(f"/sys/block/{name}"):
            continue  # virtual devices and partitions (iostat -x shows whole devices too)
        disks[name] = tuple(int(x) for x in parts[3:14])
    return Counters(time.time(), cpu, intr, ctxt, running, blocked, mem, vm, disks, read_net(proc))


def read_net(proc: str = "/proc") -> tuple[int, int] | None:
    """Bytes received and sent by all interfaces but loopback (``/proc/net/dev``); None when
    the file is missing (a container without it)."""
    try:
        text = _read(f"{proc}/net/dev")
    except OSError:
        return None
    rx = tx = 0
    for line in text.splitlines()[2:]:  # two header lines
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or name.strip() == "lo" or len(fields) < 9:
            continue
        rx += int(fields[0])
        tx += int(fields[8])
    return rx, tx


PERF_EVENTS = "instructions,cycles"
NOT_PERMITTED = "not_permitted"
PERF_NOT_INSTALLED = "perf_not_installed"
_DENIED = ("perf_event_paranoid", "Permission denied", "Access to performance monitoring")


class PerfSampler:
    """The host's instructions and cycles, from one long-running ``perf stat -I`` (see the
    module's docstring). ``take()`` returns what was counted since the previous call."""

    def __init__(self, perf: str = "perf", tick_ms: int = 1000) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, float] = {}
        self._last: dict[str, str] = {}  # event -> the status of its latest line
        self._errors: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self.fixed_status: str | None = None
        exe = shutil.which(perf)
        if exe is None:
            self.fixed_status = PERF_NOT_INSTALLED
            return
        env = {**os.environ, "LC_ALL": "C"}
        cmd = [exe, "stat", "-I", str(tick_ms), "-x,", "-a", "-e", PERF_EVENTS]
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
        )
        self._reader = threading.Thread(target=self._read, daemon=True, name="perf-stat")
        self._reader.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            found = parse_interval_line(line)
            with self._lock:
                if found is None:
                    if line.strip():
                        self._errors.append(line.strip())
                    continue
                _, counter = found
                kind = event_kind(counter.event)
                self._last[counter.event] = counter.status
                if counter.value is not None:
                    self._totals[kind] = self._totals.get(kind, 0.0) + counter.value

    def status(self) -> str:
        """Why there are no counts (or ``yes``), from what perf said so far."""
        if self.fixed_status is not None:
            return self.fixed_status
        with self._lock:
            statuses, errors = set(self._last.values()), list(self._errors)
        if any(any(d in e for d in _DENIED) for e in errors):
            return NOT_PERMITTED
        for status in (NOT_SUPPORTED, NOT_COUNTED):
            if status in statuses:
                return status
        if COUNTED in statuses:
            return "yes"
        if self._proc is not None and self._proc.poll() is not None:
            return NOT_PERMITTED if errors else NOT_COUNTED
        return NOT_COUNTED  # perf has not finished its first second yet

    def take(self) -> dict[str, Any]:
        """``instructions``, ``cycles`` and ``counters_available`` since the last call."""
        status = self.status()
        with self._lock:
            totals, self._totals = self._totals, {}
        counted = status == "yes" and "instructions" in totals and "cycles" in totals
        return {
            "instructions": totals["instructions"] if counted else None,
            "cycles": totals["cycles"] if counted else None,
            "counters_available": status if counted or status != "yes" else NOT_COUNTED,
        }

    def detail(self) -> str:
        with self._lock:
            return "; ".join(self._errors[-3:])

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def to_records(
    a: Counters, b: Counters, site: str, host: str, perf: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The vmstat and iostat records of the interval between two readings (and the perf record
    when ``perf`` holds the interval's counters, see ``PerfSampler.take``)."""
    dt = max(b.at - a.at, 1e-6)
    d = [y - x for x, y in zip(a.cpu, b.cpu, strict=True)]
    total = max(sum(d), 1)
    user, nice, system, idle, iowait, irq, softirq, steal = d

    def pct(x: float) -> float:
        return round(100.0 * x / total, 2)

    ts = datetime.fromtimestamp(b.at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = {"site": site, "host": host, "ts": ts, "interval_seconds": round(dt, 3)}
    mem = b.mem
    vmstat = {
        **base,
        "kind": "vmstat",
        "r": b.procs_running,
        "b": b.procs_blocked,
        "swpd_kb": mem.get("SwapTotal", 0) - mem.get("SwapFree", 0),
        "free_kb": mem.get("MemFree", 0),
        "buff_kb": mem.get("Buffers", 0),
        "cache_kb": mem.get("Cached", 0) + mem.get("SReclaimable", 0),
        "si": round((b.vm.get("pswpin", 0) - a.vm.get("pswpin", 0)) * PAGE_KIB / dt, 1),
        "so": round((b.vm.get("pswpout", 0) - a.vm.get("pswpout", 0)) * PAGE_KIB / dt, 1),
        "bi": round((b.vm.get("pgpgin", 0) - a.vm.get("pgpgin", 0)) / dt, 1),
        "bo": round((b.vm.get("pgpgout", 0) - a.vm.get("pgpgout", 0)) / dt, 1),
        "in": round((b.intr - a.intr) / dt, 1),
        "cs": round((b.ctxt - a.ctxt) / dt, 1),
        "us": pct(user + nice),
        "sy": pct(system + irq + softirq),
        "id": pct(idle),
        "wa": pct(iowait),
        "st": pct(steal),
        "net_rx_kb_s": None,
        "net_tx_kb_s": None,
    }
    if a.net is not None and b.net is not None:
        # a counter that went backwards (interface reset) gives no rate for the interval
        rx, tx = (max(0, y - x) for x, y in zip(a.net, b.net, strict=True))
        vmstat["net_rx_kb_s"] = round(rx / 1024 / dt, 2)
        vmstat["net_tx_kb_s"] = round(tx / 1024 / dt, 2)
    disks = []
    for name, y in b.disks.items():
        x = a.disks.get(name)
        if x is None:
            continue
        reads, _rm, rsec, rms, writes, _wm, wsec, wms, _inflight, ticks, queue = (
            q - p for p, q in zip(x, y, strict=True)
        )
        disks.append(
            {
                "device": name,
                "r_s": round(reads / dt, 2),
                "w_s": round(writes / dt, 2),
                "rkb_s": round(rsec / 2 / dt, 2),
                "wkb_s": round(wsec / 2 / dt, 2),
                "r_await_ms": round(rms / reads, 2) if reads else 0.0,
                "w_await_ms": round(wms / writes, 2) if writes else 0.0,
                "aqu_sz": round(queue / 1000 / dt, 2),
                "util_pct": round(min(100.0, ticks / 10 / dt), 2),
            }
        )
    iostat = {
        **base,
        "kind": "iostat",
        "cpu_user": pct(user + nice),
        "cpu_system": pct(system + irq + softirq),
        "cpu_iowait": pct(iowait),
        "cpu_steal": pct(steal),
        "cpu_idle": pct(idle),
        "disks": disks,
    }
    if perf is None:
        return [vmstat, iostat]
    return [vmstat, iostat, {**base, "kind": "perf", **perf}]


@dataclass
class Spool:
    """The agent's write-ahead journal of records, bounded in bytes.

    Every record is appended here (and fsynced) before it is handed to the producer, and the
    file is emptied only once the broker has acknowledged every line in it (``Publisher.trim``).
    A SIGKILL at any moment therefore loses at most the sample being taken; the restarted agent
    re-sends the whole journal first (a record delivered just before the kill arrives twice:
    silver keeps one per host, ts and kind). ``read_at`` is the byte offset of the first line
    not yet handed to the producer (0 at start: everything left by the last run is re-sent).
    """

    path: Path
    max_bytes: int
    read_at: int = 0

    def __post_init__(self) -> None:
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        """A kill inside an append leaves a last line without its newline: never journaled."""
        size = self.size()
        if not size:
            return
        with self.path.open("rb+") as fh:
            pos = size
            while pos > 0:
                step = min(65536, pos)
                fh.seek(pos - step)
                cut = fh.read(step).rfind(b"\n")
                if cut >= 0:
                    pos = pos - step + cut + 1
                    break
                pos -= step
            if pos != size:
                log.warning("spool %s: dropped a torn last line (%d bytes)", self.path, size - pos)
                fh.truncate(pos)
                os.fsync(fh.fileno())

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def append(self, lines: list[str]) -> bool:
        """Journal the lines (durable on return); False when the bound leaves no room. An
        OSError (a full disk) is raised with the file as it was before the call."""
        data = "".join(line + "\n" for line in lines).encode()
        size = self.size()
        if size + len(data) > self.max_bytes:
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as fh:
            try:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            except OSError:
                fh.truncate(size)  # no torn line for the next append to glue onto
                raise
        return True

    def unread(self, limit: int = 1 << 20) -> list[tuple[int, str]]:
        """Whole lines after ``read_at`` (up to ~``limit`` bytes), each with its end offset."""
        if self.read_at >= self.size():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self.read_at)
            chunk = fh.read(limit)
        end = chunk.rfind(b"\n") + 1
        if end == 0:  # one line longer than the limit
            with self.path.open("rb") as fh:
                fh.seek(self.read_at)
                chunk = fh.readline()
            end = len(chunk)
        out, at = [], self.read_at
        for raw in chunk[:end].split(b"\n")[:-1]:
            at += len(raw) + 1
            if raw.strip():
                out.append((at, raw.decode("utf-8", errors="replace")))
        return out

    def all_read(self) -> bool:
        return self.read_at >= self.size()

    def lines(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open("rb") as fh:
            return sum(1 for raw in fh if raw.strip())

    def clear(self) -> None:
        """Every line is acknowledged: the journal starts again, empty."""
        if self.path.exists():
            self.path.unlink()
        self.read_at = 0


@dataclass
class Publisher:
    """Kafka producer with a bounded queue behind the journal (``Spool``): records are
    journaled, then produced; the journal is emptied when the broker has acknowledged them all.
    A failed delivery is produced again; what the queue cannot take stays in the journal until it
    can. If the journal cannot be written (a full disk) records are still produced, from memory
    only, and the agent says so once."""

    settings: Settings
    spool: Spool
    max_buffered: int = 10_000
    delivered: int = 0
    journaled: int = 0
    failed: list[str] = field(default_factory=list)
    _producer: Any = None
    _memory: list[str] = field(default_factory=list)  # waiting for room in the producer's queue
    _unjournaled: set[str] = field(default_factory=set)  # sent from memory only (disk full)
    _disk_said: bool = False

    def __post_init__(self) -> None:
        from confluent_kafka import Producer

        from gridlake.sources import kafka_auth

        # signed in as the nodes principal (or the environment's user): it may write grid.nodes
        user, pw, where = kafka_auth.credentials(self.settings, "nodes")

        def on_error(err: Any) -> None:  # the agent keeps journaling; say why Kafka refuses
            if kafka_auth.is_auth_error(err):
                log.error("%s", kafka_auth.describe_error(err, user, TOPICS["nodes"], where))

        self._producer = Producer(
            {
                **kafka_auth.client_conf(self.settings, user, pw),
                "error_cb": on_error,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 50,
                "message.timeout.ms": 0,  # never expire: retry while the broker is away
                "queue.buffering.max.messages": self.max_buffered,
                "client.id": "gridlake-agent",
            }
        )

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.delivered += 1
            if self._unjournaled:
                self._unjournaled.discard(msg.value().decode())
        else:
            self.failed.append(msg.value().decode())

    def _produce(self, line: str) -> bool:
        key = json.loads(line)["host"].encode()
        try:
            self._producer.produce(
                TOPICS["nodes"], value=line.encode(), key=key, on_delivery=self._on_delivery
            )
        except BufferError:
            return False
        return True

    def send(self, lines: list[str]) -> bool:
        """Journal the records and produce what the queue takes; False only when the journal is
        full (the broker away for longer than its bound holds): the caller stops sampling."""
        self.tick()
        try:
            if not self.spool.append(lines):
                return False
            self.journaled += len(lines)
        except OSError as err:
            if not self._disk_said:
                msg = f"cannot write the journal {self.spool.path} ({err})"
                print(f"gridlake agent: {msg}; records are sent from memory only until it can",
                      file=sys.stderr)  # fmt: skip
                self._disk_said = True
            self._memory.extend(lines)
            self._unjournaled.update(lines)
        self.pump()
        return True

    def pump(self) -> None:
        """Hand the producer what it does not hold yet: failed deliveries and records that are
        only in memory first, then the journal's lines after ``read_at``."""
        self._producer.poll(0)
        again, self.failed = self.failed + self._memory, []
        self._memory = []
        for i, line in enumerate(again):
            if not self._produce(line):
                self._memory = again[i:]
                return
        while True:
            batch = self.spool.unread()
            if not batch:
                break
            for end, line in batch:
                if not self._produce(line):
                    self._producer.poll(0)
                    return
                self.spool.read_at = end
        self._producer.poll(0)

    def acknowledged(self) -> bool:
        """Every journaled and every in-memory record is acknowledged by the broker."""
        self._producer.poll(0)  # serve the delivery reports (a failed one goes back to failed)
        return (len(self._producer) == 0 and not self.failed and not self._memory
                and self.spool.all_read())  # fmt: skip

    def tick(self) -> None:
        """Empty the journal if the broker has acknowledged it all; produce what is waiting."""
        if self.acknowledged():
            self.spool.clear()
        self.pump()

    def flush(self, timeout: float) -> int:
        """Wait up to ``timeout`` for every record to be acknowledged; the journal is emptied if
        they were, kept otherwise. Returns how many records are still unacknowledged."""
        deadline = time.monotonic() + timeout
        while True:
            self.pump()
            self._producer.flush(max(0.0, min(1.0, deadline - time.monotonic())))
            if self.acknowledged():
                self.spool.clear()
                return 0
            if time.monotonic() >= deadline:
                break
        lost = len(self._unjournaled)
        if lost:  # a last try to keep them: the disk may have room now
            try:
                if self.spool.append(sorted(self._unjournaled)):
                    self._unjournaled.clear()
                    lost = 0
            except OSError:
                pass
        if lost:
            print(f"gridlake agent: {lost} records not delivered and not journaled (the disk "
                  "was full)", file=sys.stderr)  # fmt: skip
        return self.spool.lines() + lost


def run(
    interval: float,
    count: int | None,
    site: str,
    host: str,
    sink: Callable[[list[str]], bool],
    proc: str = "/proc",
    on_tick: Callable[[], None] | None = None,
    perf: PerfSampler | None = None,
) -> int:
    """Sample every ``interval`` seconds (``count`` intervals, or until SIGTERM/SIGINT)."""
    stop = False

    def _stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    prev = read_counters(proc)
    if perf is not None:
        perf.take()  # counts from before the first interval belong to no record
    next_at = prev.at + interval
    n = 0
    said = "yes"  # the last reason printed (a first one before perf's first second ends is
    # not_counted; the real one, e.g. not_supported, follows and is printed too)
    while not stop and (count is None or n < count):
        delay = next_at - time.time()
        if delay > 0:
            time.sleep(delay)
        cur = read_counters(proc)
        counts = perf.take() if perf is not None else None
        if counts is not None and counts["counters_available"] not in ("yes", said):
            why = perf.detail() if perf is not None else ""
            print(
                "gridlake agent: no hardware counters on this host "
                f"(counters_available={counts['counters_available']}"
                + (f": {why}" if why else "")
                + "); perf records carry null instructions and cycles",
                file=sys.stderr,
            )
            said = counts["counters_available"]
        records = to_records(prev, cur, site, host, counts)
        lines = [json.dumps(r, separators=(",", ":")) for r in records]
        if not sink(lines):
            print("gridlake agent: broker away and spool full; stopping", file=sys.stderr)
            return 3
        if on_tick is not None:
            on_tick()
        prev, n = cur, n + 1
        next_at += interval
    return 0


def main(args: Any) -> int:
    settings = get_settings()
    spool = Spool(
        Path(args.spool or settings.state / "agent" / "spool.jsonl"),
        int(args.max_spool_mb * 1024 * 1024),
    )
    host = args.host or socket.getfqdn()
    if getattr(args, "flush_spool", False):
        pub = Publisher(settings, spool, args.max_buffered)
        left = pub.flush(args.flush_timeout)
        print(f"delivered {pub.delivered}, left in spool {left}")
        return 0 if not left else 1
    # perf's own interval: at most half the agent's, so that every record gets counts
    tick_ms = max(100, min(1000, int(args.interval * 500)))
    perf = PerfSampler(tick_ms=tick_ms) if getattr(args, "perf", "auto") != "off" else None
    try:
        if args.stdout:
            return run(args.interval, args.count, args.site, host, _print_sink, perf=perf)
        pub = Publisher(settings, spool, args.max_buffered)
        pub.tick()  # what the last run left in the journal goes first
        status = run(
            args.interval, args.count, args.site, host, pub.send, on_tick=pub.tick, perf=perf
        )
    finally:
        if perf is not None:
            perf.close()
    left = pub.flush(args.flush_timeout)
    print(
        f"gridlake agent: delivered {pub.delivered}, journaled {pub.journaled}"
        + (f" ({left} unacknowledged at exit, kept in {spool.path})" if left else ""),
        file=sys.stderr,
    )
    return status


def _print_sink(lines: list[str]) -> bool:
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()
    return True
