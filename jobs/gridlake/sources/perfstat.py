"""Reader for ``perf stat`` output: hardware counters per run, instructions per cycle (IPC).

Accepted input, either form of what ``perf stat [-e EVENTS] [-r N] [-a] [CMD]`` prints:

- the text report (stderr by default): an optional ``# started on <date>`` line, ``Performance
  counter stats for '<cmd>' [(N runs)]:`` (or ``for 'system wide'``), one line per event (its count,
  its name, an optional ``# <metric>`` comment, an optional ``( +- x.xx% )`` run-to-run variation
  or ``(nn.nn%)`` multiplexing share), then ``<t> [+- <dt>] seconds time elapsed``;
- the CSV of ``perf stat -x,`` (one line per event: count, unit, event, run time, share[, metric
  value, metric unit]), which is what ``gridlake agent`` asks for (``LC_ALL=C``, no grouping).

Decisions (documented, tested on the real reports of ``shared/realdata/perf-stat-samples``):

- Counts lose every digit-grouping separator (``,``, ``'``, spaces, narrow no-break spaces), in
  groups of 3 or of 4 (``48,1261,2694`` is 4,812,612,694: a locale grouping by ten thousands);
  ``.`` is the decimal point (``task-clock`` in msec). Locales that group with ``.`` are not read:
  run perf with ``LC_ALL=C`` (the agent does).
- ``<not supported>`` (no such counter here: most VMs) and ``<not counted>`` (the event never got
  a counter) are missing values with their status, never zero.
- IPC = instructions / cycles, both counted and cycles > 0, summed over PMUs on hybrid CPUs
  (``cpu_core/instructions/`` + ``cpu_atom/instructions/``); modifiers (``:u``, ``:k``) are part
  of the event's name but not of its kind. Otherwise IPC is missing and ``counters_available``
  says why.
- Anything else (a text with no counter line) raises ``ValueError`` naming what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

NOT_SUPPORTED = "not_supported"
NOT_COUNTED = "not_counted"
COUNTED = "counted"

_STATUS = {"<not supported>": NOT_SUPPORTED, "<not counted>": NOT_COUNTED}
_GROUPING = re.compile(r"[,'\u00a0\u202f ]")
_NUMBER = r"\d+(?:[,'\u00a0\u202f]\d{3,4})*(?:\.\d+)?"
_EVENT_LINE = re.compile(
    rf"^\s*(?P<value>{_NUMBER}|<not supported>|<not counted>)\s+"
    r"(?:(?P<unit>msec|ns|us|MiB|Joules)\s+)?"
    r"(?P<event>[A-Za-z_][\w./:=,\-]*(?:\s\([^)]*\))?)"
    r"(?P<rest>.*)$"
)
_HEADER = re.compile(
    r"Performance counter stats for (?P<target>.+?)(?:\s+\((?P<runs>\d+) runs\))?:\s*$"
)
_STARTED = re.compile(r"^#\s*started on\s+(?P<when>.+?)\s*$")
_ELAPSED = re.compile(
    r"^\s*(?P<t>\d+(?:\.\d+)?)\s*(?:\+-\s*(?P<dt>\d+(?:\.\d+)?)\s*)?seconds time elapsed"
)
_VARIATION = re.compile(r"\(\s*\+-\s*(?P<pct>\d+(?:\.\d+)?)%\s*\)")
_SHARE = re.compile(r"\(\s*(?P<pct>\d+(?:\.\d+)?)%\s*\)")
_PRINTED_IPC = re.compile(r"#\s*(?P<ipc>\d+(?:\.\d+)?)\s+insns?\s+per\s+cycle")


@dataclass(frozen=True)
class Counter:
    """One event of a report: its count (None unless counted) and what perf said of it."""

    event: str
    value: float | None
    status: str = COUNTED
    unit: str | None = None
    variation_pct: float | None = None  # run-to-run, with -r N
    share_pct: float | None = None  # the share of the time the event had a counter


@dataclass
class PerfStat:
    """A ``perf stat`` report."""

    counters: dict[str, Counter] = field(default_factory=dict)
    target: str | None = None  # the command, or "system wide"
    runs: int = 1
    started: datetime | None = None  # "# started on" (perf prints local time: kept naive)
    elapsed_s: float | None = None
    elapsed_variation_s: float | None = None
    printed_ipc: float | None = None  # perf's own "insn per cycle" comment, for checking

    def total(self, kind: str) -> float | None:
        """The count of an event kind summed over PMUs and modifiers; None unless counted."""
        values = [c.value for name, c in self.counters.items() if event_kind(name) == kind]
        if not values or any(v is None for v in values):
            return None
        return float(sum(v for v in values if v is not None))

    @property
    def ipc(self) -> float | None:
        instructions, cycles = self.total("instructions"), self.total("cycles")
        if instructions is None or not cycles:
            return None
        return instructions / cycles

    @property
    def counters_available(self) -> str:
        """``yes``, or why the IPC is missing: ``not_supported`` (no hardware counters, most VMs),
        ``not_counted``, ``not_requested`` (instructions or cycles not among the events)."""
        statuses = [
            c.status
            for name, c in self.counters.items()
            if event_kind(name) in ("instructions", "cycles")
        ]
        kinds = {event_kind(n) for n in self.counters} & {"instructions", "cycles"}
        if len(kinds) < 2:
            return "not_requested"
        for status in (NOT_SUPPORTED, NOT_COUNTED):
            if status in statuses:
                return status
        return "yes"


def event_kind(name: str) -> str:
    """``cpu_core/instructions/`` -> ``instructions``; ``cycles:u`` -> ``cycles``."""
    name = name.split(" (", 1)[0]
    if "/" in name:
        parts = [p for p in name.split("/") if p]
        name = parts[1] if len(parts) > 1 else parts[0]
    return name.split(":", 1)[0].split(",", 1)[0]


def parse_count(text: str) -> float:
    """A count as perf prints it, every grouping separator stripped (``48,1261,2694``)."""
    return float(_GROUPING.sub("", text.strip()))


def _parse_started(text: str) -> datetime | None:
    for fmt in ("%a %b %d %H:%M:%S %Y", "%c"):
        try:
            return datetime.strptime(" ".join(text.split()), fmt)
        except ValueError:
            continue
    return None


def parse_text(text: str) -> PerfStat:
    """Parse perf stat's text report (see the module's docstring)."""
    stat = PerfStat()
    in_counters = False
    for line in text.splitlines():
        if m := _STARTED.match(line):
            stat.started = _parse_started(m.group("when"))
            continue
        if m := _HEADER.search(line):
            stat.target = m.group("target").strip().strip("'")
            stat.runs = int(m.group("runs") or 1)
            in_counters = True
            continue
        if m := _ELAPSED.match(line):
            stat.elapsed_s = float(m.group("t"))
            stat.elapsed_variation_s = float(m.group("dt")) if m.group("dt") else None
            in_counters = False
            continue
        if not in_counters or not line.strip():
            continue
        m = _EVENT_LINE.match(line)
        if not m:
            continue
        raw, rest = m.group("value"), m.group("rest")
        status = _STATUS.get(raw, COUNTED)
        event = m.group("event").strip()
        unit = m.group("unit")
        if event.endswith(")") and " (" in event:  # "task-clock (msec)": the unit after the name
            event, _, paren = event.partition(" (")
            unit = unit or paren.rstrip(")")
        variation = _VARIATION.search(rest)
        share = None if variation else _SHARE.search(rest)
        stat.counters[event] = Counter(
            event=event,
            value=parse_count(raw) if status == COUNTED else None,
            status=status,
            unit=unit,
            variation_pct=float(variation.group("pct")) if variation else None,
            share_pct=float(share.group("pct")) if share else None,
        )
        if printed := _PRINTED_IPC.search(rest):
            stat.printed_ipc = float(printed.group("ipc"))
    if not stat.counters:
        raise ValueError(
            "not a perf stat report: no counter line after 'Performance counter stats for ...'"
        )
    return stat


def parse_csv(text: str, sep: str = ",") -> PerfStat:
    """Parse ``perf stat -x<sep>`` output (count, unit, event, run time, share[, metric...])."""
    stat = PerfStat(target=None)
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(sep)
        if len(fields) < 3:
            continue
        raw, unit, event = fields[0].strip(), fields[1].strip() or None, fields[2].strip()
        status = _STATUS.get(raw, COUNTED)
        try:
            value = parse_count(raw) if status == COUNTED else None
        except ValueError:
            continue  # a line the command itself printed
        share = None
        if len(fields) > 4 and fields[4].strip():
            share = float(fields[4])
        stat.counters[event] = Counter(event, value, status, unit, None, share)
    if not stat.counters:
        raise ValueError(f"not perf stat -x{sep} output: no line 'count{sep}unit{sep}event,...'")
    return stat


def parse_interval_line(line: str, sep: str = ",") -> tuple[float, Counter] | None:
    """One line of ``perf stat -I <ms> -x<sep>``: (seconds since perf started, the counter), or
    None for anything else (a comment, a blank line, what the command itself printed)."""
    stamp, _, rest = line.strip().partition(sep)
    try:
        at = float(stamp)
        stat = parse_csv(rest, sep)
    except ValueError:
        return None
    return at, next(iter(stat.counters.values()))


def parse_intervals(text: str, sep: str = ",") -> list[tuple[float, PerfStat]]:
    """``perf stat -I <ms> -x<sep>`` output: one report per interval end, in order."""
    reports: dict[float, PerfStat] = {}
    for line in text.splitlines():
        if (found := parse_interval_line(line, sep)) is not None:
            at, counter = found
            reports.setdefault(at, PerfStat()).counters[counter.event] = counter
    if not reports:
        raise ValueError(f"not perf stat -I -x{sep} output: no line 'time{sep}count{sep}unit...'")
    return sorted(reports.items())


def parse(text: str) -> PerfStat:
    """Either form, told apart by the text report's header line."""
    if "Performance counter stats for" in text:
        return parse_text(text)
    return parse_csv(text)


def ipc_fields(stat: PerfStat, interval_seconds: float) -> dict[str, object]:
    """The node-sample fields of one interval's counters (kind ``perf``): instructions, cycles,
    ipc (None unless both counted) and ``counters_available`` saying why not."""
    return {
        "instructions": stat.total("instructions"),
        "cycles": stat.total("cycles"),
        "ipc": stat.ipc,
        "counters_available": stat.counters_available,
        "interval_seconds": interval_seconds,
    }
