"""Readers for ``iostat`` (sysstat) output -> ``grid.nodes`` samples (kind "iostat").

Two formats:

- ``read_iostat``: the text of ``iostat [-x] [-m] [-t] [-c|-d] [interval [count]]``, plain or
  gzip. A file is a header line (``Linux <release> (<nodename>) <date> _<arch>_ (<n> CPU)``) and
  a series of *reports*: an optional time line (``-t``), an ``avg-cpu:`` block and a ``Device``
  block. Columns are found by name, so every sysstat generation works: old ``-x``
  (``rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await svctm %util``),
  11.x (``... r_await w_await aqu-sz rareq-sz wareq-sz svctm %util``), 12.x
  (``r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s ... aqu-sz %util``) and the plain report
  (``tps kB_read/s kB_wrtn/s ...``).
- ``read_iostat_json``: ``iostat -o JSON`` (``{"sysstat": {"hosts": [{"nodename": ...,
  "statistics": [{"timestamp": ..., "avg-cpu": {...}, "disk": [{"disk_device": ...}]}]}]}}``),
  streamed one ``statistics`` element at a time.

Mapping: ``avg-cpu`` ``%user %system %iowait %steal %idle`` to ``cpu_user cpu_system cpu_iowait
cpu_steal cpu_idle`` (``%nice`` kept as the extra ``cpu_nice``); per device ``r/s w/s`` to
``r_s w_s``; read/write throughput to ``rkb_s wkb_s`` in KiB/s from ``rkB/s``, ``rMB/s`` (x1024,
``-m``), ``rsec/s`` or ``Blk_read/s`` (512-byte sectors, x0.5) or ``kB_read/s`` / ``MB_read/s``;
``r_await w_await`` to ``r_await_ms w_await_ms``; ``aqu-sz`` or ``avgqu-sz`` to ``aqu_sz``;
``%util`` to ``util_pct``. Versions that print only a combined ``await`` leave ``r_await_ms`` and
``w_await_ms`` null and keep it as the extra ``await_ms``; the plain report's ``tps`` is kept as
the extra ``tps``. ``raw`` is the whole report (text) or the ``statistics`` element (JSON),
verbatim.

Decisions:

- The first report of a file is the average since boot: skipped unless ``keep_first=True``
  (``iostat -y`` omits it; then pass ``keep_first=True``). A kept one has ``since_boot: true`` and
  ``interval_seconds: 0``.
- Timestamps: a report's time line when present (``-t``: ``MM/DD/YYYY HH:MM:SS [AM|PM]`` in the
  host's local time, or ISO 8601 with an offset when ``S_TIME_FORMAT=ISO``). Local times need
  ``tz=``; the date order follows ``date_format=`` (default ``%m/%d/%Y``, then ``%m/%d/%y``: the
  C/en_US locale). Without time lines: ``ts = start + index * interval_seconds`` (``start=`` is the
  time of the first report, index 0). Neither: one ``Rejected("no timestamp: pass --start")``.
- ``host``: ``host=`` wins (the header's nodename is often ``localhost``), else the nodename.
  ``site=`` is required (one ``Rejected`` per file otherwise).
- A report with a malformed line (wrong field count, non-numeric value), an ``avg-cpu:`` header
  without values, an empty device block, or - for the last report of a file - fewer devices
  than the report before it (a file cut between two device lines) is rejected as a whole, with
  its line range.

This module also holds ``JsonStream``, the incremental JSON reader shared with the sadf and
perfSONAR readers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import IO, Any

from gridlake.sources.base import Item, Rejected
from gridlake.sources.vmstat import clip, number, open_text, parse_start, parse_tz, rfc3339

KIND = "iostat"

# --------------------------------------------------------------------------------------------
# Incremental JSON
# --------------------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class JsonError(Exception):
    """A JSON value that could not be decoded (``reason``) and its text (``raw``)."""

    def __init__(self, reason: str, raw: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


class JsonStream:
    """Decode JSON values one at a time from a text stream, in bounded memory.

    Only the value being decoded is held (up to ``limit`` characters), so a file of any length
    whose records are small streams in constant memory.
    """

    def __init__(self, fh: IO[str], chunk: int = 1 << 16, limit: int = 64 << 20) -> None:
        self.fh = fh
        self.chunk = chunk
        self.limit = limit
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._line = 1  # line number at buf[_counted]
        self._counted = 0

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self.fh.read(self.chunk)
        if not data:
            self.eof = True
            return False
        if self.pos:
            self._drop(self.pos)
        self.buf += data
        return True

    def _drop(self, upto: int) -> None:
        """Forget ``buf[:upto]`` (keeping the line count)."""
        self._count_lines(upto)
        self.buf = self.buf[upto:]
        self.pos -= upto
        self._counted = 0

    def _count_lines(self, upto: int) -> None:
        if upto > self._counted:
            self._line += self.buf.count("\n", self._counted, upto)
            self._counted = upto

    def line(self) -> int:
        """1-based line number of the current position."""
        self._count_lines(self.pos)
        return self._line

    def peek(self) -> str:
        """Next non-whitespace character (not consumed), or "" at end of input."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def take(self) -> None:
        self.pos += 1

    def rest(self) -> str:
        """The unread text (up to the 64 KiB raw limit), for error reports."""
        while len(self.buf) - self.pos < 64 * 1024 and self._fill():
            pass
        return clip(self.buf[self.pos :])

    def value(self) -> tuple[str, Any]:
        """Decode the next value; return (its text verbatim, the value)."""
        if not self.peek():
            raise JsonError("truncated: end of input where a value was expected", "")
        while True:
            try:
                val, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                need_more = exc.pos >= len(self.buf) - 1 or exc.msg.startswith("Unterminated")
                if need_more and len(self.buf) - self.pos > self.limit:
                    raise JsonError(
                        f"record larger than {self.limit} characters", self.rest()
                    ) from exc
                if need_more and self._fill():
                    continue
                line = self.line() + self.buf.count("\n", self.pos, exc.pos)
                reason = f"{exc.msg} at line {line}"
                if need_more:
                    reason = f"truncated: {reason}"
                raise JsonError(reason, self.rest()) from exc
            if end >= len(self.buf) and not isinstance(val, dict | list | str) and self._fill():
                continue  # a number or literal cut at the buffer's end
            raw = self.buf[self.pos : end]
            self.pos = end
            return raw, val

    def seek(self, pattern: re.Pattern[str], max_chars: int = 1 << 20) -> str | None:
        """Consume text up to and including the next match; return it (None if not found)."""
        while True:
            m = pattern.search(self.buf, self.pos)
            if m:
                skipped = self.buf[self.pos : m.end()]
                self.pos = m.end()
                return skipped
            if len(self.buf) - self.pos > max_chars:
                self.pos = len(self.buf) - 256  # a match may straddle the chunk boundary
                self._drop(self.pos)
            if not self._fill():
                return None


_STATS_KEY = re.compile(r'"statistics"\s*:\s*\[')
_HOST_FIELD = re.compile(
    r'"(nodename|sysname|release|machine|number-of-cpus|date|file-date|file-utc-time|timezone)"'
    r'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)'
)


def iter_sysstat_json(path: Path) -> Iterator[tuple[Any, ...]]:
    """Events of a sysstat JSON file (``iostat -o JSON``, ``sadf -j``), streamed.

    Yields ``("host", info)`` for each host (``nodename``, ``machine``, ``timezone``...),
    ``("stat", index, location, raw, value)`` for each ``statistics`` element, and
    ``("error", location, reason, raw)`` for what cannot be decoded (then stops).
    """
    found = False
    with open_text(path) as fh:
        js = JsonStream(fh)
        while True:
            header = js.seek(_STATS_KEY)
            if header is None:
                break
            found = True
            info = {}
            for key, text in _HOST_FIELD.findall(header):
                try:  # a damaged header (found by fuzzing: a raw tab inside a string)
                    info[key] = json.loads(text, strict=False)
                except ValueError as exc:
                    yield ("error", f"host header (line {js.line()})",
                           f"host field {key} not decodable: {exc}", header[-4096:])  # fmt: skip
                    return
            yield ("host", info)
            index = 0
            while True:
                c = js.peek()
                if c == "]":
                    js.take()
                    break
                if c == ",":
                    js.take()
                    continue
                location = f"record {index + 1} (line {js.line()})"
                if c == "":
                    yield ("error", location, "truncated: statistics array not closed", "")
                    return
                try:
                    raw, val = js.value()
                except JsonError as exc:
                    yield ("error", location, exc.reason, exc.raw)
                    return
                yield ("stat", index, location, raw, val)
                index += 1
    if not found:
        yield ("error", "file", 'not sysstat JSON: no "statistics" array', "")


# --------------------------------------------------------------------------------------------
# Column mapping shared by text and JSON
# --------------------------------------------------------------------------------------------

# (target, [(source column, factor to KiB/s or 1)...]) in order of preference.
_DISK_MAP: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = (
    ("r_s", (("r/s", 1),)),
    ("w_s", (("w/s", 1),)),
    (
        "rkb_s",
        (
            ("rkB/s", 1),
            ("rMB/s", 1024),
            ("rsec/s", 0.5),
            ("kB_read/s", 1),
            ("MB_read/s", 1024),
            ("Blk_read/s", 0.5),
        ),
    ),
    (
        "wkb_s",
        (
            ("wkB/s", 1),
            ("wMB/s", 1024),
            ("wsec/s", 0.5),
            ("kB_wrtn/s", 1),
            ("MB_wrtn/s", 1024),
            ("Blk_wrtn/s", 0.5),
        ),
    ),
    ("r_await_ms", (("r_await", 1),)),
    ("w_await_ms", (("w_await", 1),)),
    ("aqu_sz", (("aqu-sz", 1), ("avgqu-sz", 1))),
    ("util_pct", (("%util", 1), ("util", 1))),
)
_DISK_EXTRA = (("await_ms", "await"), ("tps", "tps"))
_CPU_MAP = (
    ("cpu_user", "user"),
    ("cpu_system", "system"),
    ("cpu_iowait", "iowait"),
    ("cpu_steal", "steal"),
    ("cpu_idle", "idle"),
)


def _scaled(value: float, factor: float) -> float:
    return value if factor == 1 else round(value * factor, 6)


def map_disk(device: str, fields: dict[str, Any]) -> dict[str, Any]:
    """One ``disks[]`` entry from iostat columns (text names or JSON keys)."""
    out: dict[str, Any] = {"device": device}
    for target, sources in _DISK_MAP:
        out[target] = None
        for name, factor in sources:
            if fields.get(name) is not None:
                out[target] = _scaled(fields[name], factor)
                break
    for target, name in _DISK_EXTRA:
        if fields.get(name) is not None:
            out[target] = fields[name]
    return out


def map_cpu(fields: dict[str, Any]) -> dict[str, Any]:
    """``cpu_*`` fields from an avg-cpu block (keys with or without the "%")."""
    plain = {k.lstrip("%"): v for k, v in fields.items()}
    out = {target: plain.get(name) for target, name in _CPU_MAP}
    if plain.get("nice") is not None:
        out["cpu_nice"] = plain["nice"]
    return out


def _negatives(values: dict[str, Any]) -> list[str]:
    return [k for k, v in values.items() if isinstance(v, int | float) and v < 0]


# --------------------------------------------------------------------------------------------
# Time lines
# --------------------------------------------------------------------------------------------

_TIME_LINE = re.compile(
    r"^(?:\d{1,2}/\d{1,2}/\d{2,4}|\d{4}-\d{2}-\d{2})[ T]\d{1,2}:\d{2}:\d{2}"
    r"(?:\s*[AaPp][Mm]|Z|[+-]\d{2}:?\d{2})?$"
)


def parse_report_time(
    text: str, tz: tzinfo | None, date_format: str | None
) -> tuple[datetime | None, str | None]:
    """(aware datetime, None) or (None, reason) for an iostat time line / JSON timestamp."""
    s = text.strip()
    if re.match(r"^\d{4}-\d{2}-\d{2}", s):
        iso = s.replace(" ", "T", 1)
        if iso.endswith("Z"):
            iso = iso[:-1] + "+00:00"
        iso = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", iso)
        try:
            dt = datetime.fromisoformat(iso)
        except ValueError as exc:
            return None, f"bad time line {s!r}: {exc}"
    else:
        dt = None
        date_formats = [date_format] if date_format else ["%m/%d/%Y", "%m/%d/%y"]
        for dfmt in date_formats:
            for tfmt in ("%I:%M:%S %p", "%H:%M:%S"):
                try:
                    dt = datetime.strptime(re.sub(r"\s+", " ", s), f"{dfmt} {tfmt}")
                    break
                except ValueError:
                    continue
            if dt is not None:
                break
        if dt is None:
            return None, f"unrecognised time line {s!r} (set date_format=)"
    if dt.tzinfo is None:
        if tz is None:
            return None, f"time {s!r} is local time without a zone: pass tz="
        dt = dt.replace(tzinfo=tz)
    return dt, None


# --------------------------------------------------------------------------------------------
# Text reports
# --------------------------------------------------------------------------------------------

_FILE_HEADER = re.compile(r"^\S+\s+\S+\s+\(([^)]*)\)\s+\S+.*\(\d+\s+CPU\)\s*$")


@dataclass
class _Report:
    first_line: int
    last_line: int = 0
    lines: list[str] = field(default_factory=list)
    time_text: str | None = None
    cpu_cols: list[str] | None = None
    cpu: dict[str, Any] | None = None
    dev_cols: list[str] | None = None
    devices: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    def add(self, lineno: int, text: str) -> None:
        self.lines.append(text)
        self.last_line = lineno

    def fail(self, lineno: int, reason: str) -> None:
        if self.error is None:
            self.error = f"line {lineno}: {reason}"


def _reject(path: Path, location: str, reason: str, raw: str) -> Rejected:
    return Rejected(source=str(path), location=location, reason=reason, raw=clip(raw))


class _Timing:
    """Turns report times or ``start + index * interval`` into (ts, interval) for each report."""

    def __init__(
        self,
        start: datetime | str | None,
        interval_seconds: float | None,
        tz: tzinfo | None,
        date_format: str | None,
    ) -> None:
        self.start = parse_start(start)
        self.interval = interval_seconds
        self.tz = tz
        self.date_format = date_format
        self.prev: datetime | None = None

    def at(self, index: int, time_text: str | None) -> tuple[datetime | None, float, str | None]:
        """(ts, interval, fatal reason). A fatal reason stops the file."""
        if time_text is not None:
            dt, reason = parse_report_time(time_text, self.tz, self.date_format)
            if dt is None:
                return None, 0, reason
            if self.interval is not None:
                interval = self.interval
            elif self.prev is not None:
                interval = (dt - self.prev).total_seconds()
            else:
                interval = 1
            self.prev = dt
            return dt, interval, None
        if self.start is None:
            return None, 0, "no timestamp: pass --start (start=)"
        step = self.interval if self.interval is not None else 1
        return self.start + timedelta(seconds=index * step), step, None


def _sample(
    site: str,
    host: str,
    ts: datetime,
    interval: float,
    since_boot: bool,
    cpu: dict[str, Any] | None,
    disks: list[dict[str, Any]] | None,
    raw: str,
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "site": site,
        "host": host,
        "ts": rfc3339(ts),
        "interval_seconds": 0 if since_boot else interval,
        "kind": KIND,
    }
    cpu_fields = map_cpu(cpu) if cpu is not None else {t: None for t, _ in _CPU_MAP}
    rec.update(cpu_fields)
    rec["disks"] = disks
    if since_boot:
        rec["since_boot"] = True
    rec["raw"] = raw
    return rec


def read_iostat(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    start: datetime | str | None = None,
    interval_seconds: float | None = None,
    tz: str | tzinfo | None = None,
    date_format: str | None = None,
    keep_first: bool = False,
    **opts: Any,
) -> Iterator[Item]:
    """Stream ``iostat`` text reports of one file (see the module docstring)."""
    path = Path(path)
    zone = parse_tz(tz)
    if tz is not None and zone is None:
        yield _reject(path, "file", f"unknown time zone {tz!r} in tz=", "")
        return
    timing = _Timing(start, interval_seconds, zone, date_format)
    header_host: str | None = None
    cur: _Report | None = None
    state = "idle"
    index = 0
    prev_devices: int | None = None
    stop = False

    def finish(rep: _Report, at_eof: bool) -> Iterator[Item]:
        nonlocal index, prev_devices, stop
        i = index
        index += 1
        location = f"report {i + 1} (lines {rep.first_line}-{rep.last_line})"
        raw = "\n".join(rep.lines)
        if rep.cpu_cols is not None and rep.cpu is None:
            rep.fail(rep.last_line, "truncated: avg-cpu header without values")
        if rep.dev_cols is not None and not rep.devices:
            rep.fail(rep.last_line, "truncated: device header without devices")
        if (
            at_eof
            and rep.dev_cols is not None
            and prev_devices is not None
            and len(rep.devices) < prev_devices
        ):
            rep.fail(
                rep.last_line,
                f"truncated: {len(rep.devices)} devices, the report before had {prev_devices}",
            )
        if rep.cpu_cols is None and rep.dev_cols is None:
            rep.fail(rep.last_line, "time line without an avg-cpu or Device block")
        if rep.dev_cols is not None:
            prev_devices = len(rep.devices)
        if rep.error is not None:
            yield _reject(path, location, rep.error, raw)
            return
        ts, interval, fatal = timing.at(i, rep.time_text)
        if ts is None:
            yield _reject(path, location, fatal or "no timestamp", raw)
            stop = True
            return
        if i == 0 and not keep_first:
            return
        node = host or header_host
        if site is None or node is None:
            missing = [n for n, v in (("site", site), ("host", node)) if v is None]
            yield _reject(
                path,
                location,
                f"iostat output names no {' and '.join(missing)}: pass "
                + " and ".join(f"{n}=" for n in missing),
                raw,
            )
            stop = True
            return
        disks = rep.devices if rep.dev_cols is not None else None
        yield _sample(site, node, ts, interval, i == 0, rep.cpu, disks, raw)

    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.rstrip("\r\n")
            s = text.strip()
            if not s:
                if state == "cpu_values" and cur is not None:
                    cur.fail(lineno, "truncated: avg-cpu header without values")
                state = "idle"
                continue
            if header_host is None and cur is None and index == 0:
                m = _FILE_HEADER.match(s)
                if m:
                    header_host = m.group(1).strip() or None
                    continue
            if _TIME_LINE.match(s):
                if cur is not None:
                    yield from finish(cur, False)
                    if stop:
                        return
                cur = _Report(first_line=lineno)
                cur.time_text = s
                cur.add(lineno, text)
                state = "idle"
                continue
            tokens = s.split()
            if tokens[0] == "avg-cpu:":
                if cur is None or cur.cpu_cols is not None or cur.dev_cols is not None:
                    if cur is not None:
                        yield from finish(cur, False)
                        if stop:
                            return
                    cur = _Report(first_line=lineno)
                cur.cpu_cols = tokens[1:]
                cur.add(lineno, text)
                state = "cpu_values"
                continue
            if tokens[0] in ("Device:", "Device"):
                if cur is None or cur.dev_cols is not None:
                    if cur is not None:
                        yield from finish(cur, False)
                        if stop:
                            return
                    cur = _Report(first_line=lineno)
                cur.dev_cols = tokens[1:]
                cur.add(lineno, text)
                state = "devices"
                continue
            if cur is None:
                yield _reject(path, f"line {lineno}", "not iostat output", text)
                return
            cur.add(lineno, text)
            if state == "cpu_values":
                state = "idle"
                cols = cur.cpu_cols or []
                if len(tokens) != len(cols):
                    cur.fail(lineno, f"avg-cpu: expected {len(cols)} values, found {len(tokens)}")
                    continue
                try:
                    cur.cpu = {c: number(v) for c, v in zip(cols, tokens, strict=True)}
                except ValueError as exc:
                    cur.fail(lineno, f"avg-cpu: {exc}")
                    continue
                if _negatives(cur.cpu):
                    cur.fail(lineno, f"avg-cpu: negative value in {_negatives(cur.cpu)}")
            elif state == "devices":
                cols = cur.dev_cols or []
                if len(tokens) != len(cols) + 1:
                    cur.fail(
                        lineno,
                        f"device {tokens[0]}: expected {len(cols)} values, found {len(tokens) - 1}",
                    )
                    continue
                try:
                    vals = {c: number(v) for c, v in zip(cols, tokens[1:], strict=True)}
                except ValueError as exc:
                    cur.fail(lineno, f"device {tokens[0]}: {exc}")
                    continue
                if _negatives(vals):
                    cur.fail(lineno, f"device {tokens[0]}: negative value in {_negatives(vals)}")
                    continue
                cur.devices.append(map_disk(tokens[0], vals))
            else:
                cur.fail(lineno, "unexpected line outside an avg-cpu or Device block")
        if cur is not None:
            yield from finish(cur, True)
        elif header_host is None:
            yield _reject(path, "file", "not iostat output: no report found", "")


# --------------------------------------------------------------------------------------------
# iostat -o JSON
# --------------------------------------------------------------------------------------------


def read_iostat_json(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    start: datetime | str | None = None,
    interval_seconds: float | None = None,
    tz: str | tzinfo | None = None,
    date_format: str | None = None,
    keep_first: bool = False,
    **opts: Any,
) -> Iterator[Item]:
    """Stream ``iostat -o JSON`` statistics of one file (see the module docstring)."""
    path = Path(path)
    zone = parse_tz(tz)
    if tz is not None and zone is None:
        yield _reject(path, "file", f"unknown time zone {tz!r} in tz=", "")
        return
    timing = _Timing(start, interval_seconds, zone, date_format)
    node: str | None = host
    for event in iter_sysstat_json(path):
        if event[0] == "host":
            node = host or event[1].get("nodename") or None
            continue
        if event[0] == "error":
            _, location, reason, raw = event
            yield _reject(path, location, reason, raw)
            return
        _, i, location, raw, stat = event
        if not isinstance(stat, dict):
            yield _reject(path, location, "statistics element is not an object", raw)
            continue
        time_text = stat.get("timestamp")
        if time_text is not None and not isinstance(time_text, str):
            yield _reject(path, location, "timestamp is not a string", raw)
            continue
        cpu = stat.get("avg-cpu")
        disks_in = stat.get("disk")
        problems: list[str] = []
        if cpu is not None and not isinstance(cpu, dict):
            problems.append("avg-cpu is not an object")
        if disks_in is not None and not isinstance(disks_in, list):
            problems.append("disk is not an array")
        if cpu is None and disks_in is None:
            problems.append("neither avg-cpu nor disk")
        disks: list[dict[str, Any]] | None = None
        if isinstance(disks_in, list):
            disks = []
            for d in disks_in:
                name = d.get("disk_device") if isinstance(d, dict) else None
                if not isinstance(name, str):
                    problems.append("disk entry without disk_device")
                    continue
                bad = [k for k, v in d.items() if k != "disk_device" and not _is_number(v)]
                if bad:
                    problems.append(f"device {name}: non-numeric {bad}")
                    continue
                if _negatives(d):
                    problems.append(f"device {name}: negative value in {_negatives(d)}")
                    continue
                disks.append(map_disk(name, d))
        if isinstance(cpu, dict):
            bad = [k for k, v in cpu.items() if not _is_number(v)]
            if bad or _negatives(cpu):
                problems.append(f"avg-cpu: bad values in {bad or _negatives(cpu)}")
        if problems:
            yield _reject(path, location, "; ".join(problems), raw)
            continue
        ts, interval, fatal = timing.at(i, time_text)
        if ts is None:
            yield _reject(path, location, fatal or "no timestamp", raw)
            return
        if i == 0 and not keep_first:
            continue
        if site is None or node is None:
            missing = [n for n, v in (("site", site), ("host", node)) if v is None]
            yield _reject(
                path,
                location,
                f"iostat output names no {' and '.join(missing)}: pass "
                + " and ".join(f"{n}=" for n in missing),
                raw,
            )
            return
        yield _sample(site, node, ts, interval, i == 0, cpu, disks, raw)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)
