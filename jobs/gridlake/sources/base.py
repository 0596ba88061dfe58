"""What every format adapter shares: the reader interface, streaming file access, time helpers
and one place that turns a mapped record into a canonical ``grid.jobs`` message or a rejection.

A reader is a generator ``reader(path, *, site=None, host=None, vo=None, ...)`` yielding, for
every source record, either the canonical dict (with ``source_format`` and ``raw``, the record
text verbatim) or a :class:`Rejected` saying where and why. Readers stream: they hold one record
at a time, never the whole file, and open ``.gz`` files transparently.

Mapping policy, the same for every adapter (``make_job``):

- Nothing the source does not say is guessed. Optional fields it cannot fill stay ``null``.
- Required identity fields come from the record, else the reader's keyword flags (``site=``,
  ``host=``, ``vo=``), else the string ``"unknown"`` for ``host``, ``cpu_model``, ``vo`` and
  ``job_type``. A record with no site at all (none in the record, no ``site=``) is rejected.
- Required times and durations (start, end, wall, CPU) that cannot be read or derived exactly
  (``end = start + wall``, ``wall = end - start``) make the record a :class:`Rejected`.
- Required fields that a format simply does not carry are filled by fixed conventions, and their
  names are listed in the extra field ``defaulted_fields`` so that nobody mistakes them for
  measurements: ``cpu_system_seconds`` 0 when the source gives only the total CPU time (then held
  in ``cpu_user_seconds``), ``cores`` 1 (HTCondor's own default for RequestCpus) and ``attempt``
  1 when absent. ``input_bytes``, ``output_bytes`` and ``exit_code`` are nullable in the
  contract: a format without them leaves them null.
- Two gaps are too big for a silent convention: a missing submit time and a missing outcome
  (APEL records, for instance, carry neither). By default such records are rejected with the
  reason; with ``fill_unknown=True`` the reader sets ``submit_time = start_time`` and
  ``status = "success"`` (``exit_code`` 0) and lists them in ``defaulted_fields``.
- The contract's cross-field rules (``x-rules`` of ``grid.jobs``) are checked here, so an emitted
  dict always satisfies them; a record breaking one is rejected with the rule's reason.
"""

from __future__ import annotations

import gzip
import io
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

RAW_LIMIT = 64 * 1024  # bytes of source text kept in Rejected.raw and in a record's raw
# Times are epoch seconds: a value at or after 2100-01-01 is not one (epoch milliseconds of
# 2017 are 1.5e12, year 49072 in seconds), nor is one before 1970.
MAX_EPOCH_SECONDS = 4_102_444_800
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Rejected:
    """A source record that could not become a canonical message."""

    source: str  # file path
    location: str  # e.g. "line 12", "record 3", "ad 2 (line 40)"
    reason: str
    raw: str  # the unparseable text, verbatim (clipped to RAW_LIMIT bytes)

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", clip(self.raw))


Item = dict[str, Any] | Rejected
# reader(path: Path, *, site: str | None, host: str | None, vo: str | None) -> Iterator[Item]
Reader = Callable[..., Iterator[Item]]

# Field order of grid.jobs (schemas/grid.jobs.schema.json), then the adapters' extra field.
JOB_FIELDS = (
    "job_id", "attempt", "vo", "site", "host", "queue", "task_id", "job_type", "cpu_model",
    "cores", "submit_time", "start_time", "end_time", "wall_seconds", "cpu_user_seconds",
    "cpu_system_seconds", "events", "max_rss_mb", "input_bytes", "output_bytes",
    "read_time_seconds", "status", "exit_code", "failure_mode", "benchmark_type",
    "benchmark_per_core", "source_format", "raw",
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Files and text
# --------------------------------------------------------------------------------------------


def open_text(path: Path | str) -> TextIO:
    """Open a plain or gzip-compressed text file for streaming (UTF-8, bad bytes replaced).

    Compression is recognised by its magic bytes, not the file name. Line endings are kept as
    they are (``newline=""``) so that ``raw`` stays verbatim; readers strip them.
    """
    path = Path(path)
    with path.open("rb") as fh:
        magic = fh.read(2)
    binary: Any = gzip.GzipFile(path, "rb") if magic == b"\x1f\x8b" else path.open("rb")
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline="")


def iter_lines(path: Path | str, comment: str | None = None) -> Iterator[tuple[int, str, str]]:
    """The line-record reader of the batch-system adapters: (line number, line as read, line
    without its end) for every line that is not blank and, with ``comment``, does not start
    with it. The line as read is what a ``Rejected`` or ``raw`` keeps."""
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.rstrip("\r\n")
            if not text.strip() or (comment is not None and text.startswith(comment)):
                continue
            yield lineno, line, text


def clip(text: str, limit: int = RAW_LIMIT) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (never in the middle of a character)."""
    if len(text) <= limit // 4:
        return text
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def file_stem(path: Path | str) -> str:
    """File name without compression and data suffixes: ``a/NASA-x.swf.gz`` -> ``NASA-x``."""
    name = Path(path).name
    for suffix in (".gz", ".txt", ".swf", ".log", ".apel", ".json", ".classad", ".dat"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or Path(path).name


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


def rfc3339(epoch: float) -> str:
    """Seconds since the Unix epoch as an RFC 3339 UTC string ending in ``Z``.

    Whole seconds print without a fraction; otherwise microseconds are kept.
    """
    moment = datetime.fromtimestamp(epoch, tz=UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def to_int(value: Any) -> int | None:
    """An integer from an int, an integral float or a numeric string; else None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    if not math.isfinite(number) or number != int(number):
        return None
    return int(number)


def to_float(value: Any) -> float | None:
    """A finite float from a number or numeric string; else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value) if isinstance(value, int | float) else float(str(value).strip())
    except (ValueError, OverflowError):  # OverflowError: an int of 400 digits out of a JSON doc
        return None
    return number if math.isfinite(number) else None


def number(value: float) -> int | float:
    """An int when the value is integral (keeps JSON tidy), else the float."""
    return int(value) if float(value).is_integer() else float(value)


def parse_fqan(fqan: str) -> tuple[str | None, str | None, str | None]:
    """``/atlas/ca/Role=production/Capability=NULL`` -> (vo, group, role).

    ``('atlas', '/atlas/ca', 'production')``; Role ``NULL`` is returned as None.
    """
    parts = [p for p in fqan.strip().split("/") if p]
    groups = [p for p in parts if "=" not in p]
    role = next((p.split("=", 1)[1] for p in parts if p.lower().startswith("role=")), None)
    if role is not None and role.upper() == "NULL":
        role = None
    vo = groups[0] if groups else None
    group = "/" + "/".join(groups) if groups else None
    return vo, group, role


# --------------------------------------------------------------------------------------------
# Canonical job record
# --------------------------------------------------------------------------------------------


def make_job(
    *,
    source: str,
    location: str,
    raw: str,
    source_format: str,
    job_id: str | None,
    site: str | None,
    submit: float | None,
    start: float | None,
    end: float | None,
    wall: float | None,
    status: str | None,
    fill_unknown: bool = False,
    host: str | None = None,
    vo: str | None = None,
    cpu_model: str | None = None,
    job_type: str | None = None,
    queue: str | None = None,
    task_id: str | None = None,
    attempt: int | None = None,
    cores: int | None = None,
    cpu_user: float | None = None,
    cpu_system: float | None = None,
    cpu_total: float | None = None,
    events: int | None = None,
    max_rss_mb: float | None = None,
    input_bytes: int | None = None,
    output_bytes: int | None = None,
    read_time: float | None = None,
    exit_code: int | None = None,
    failure_mode: str | None = None,
    benchmark_type: str | None = None,
    benchmark_per_core: float | None = None,
    problems: list[str] | None = None,
) -> Item:
    """Assemble a ``grid.jobs`` dict with the shared policy (module docstring) or a Rejected.

    Times are epoch seconds. ``problems`` are reasons the adapter already found; they are
    reported together with the ones found here.
    """
    problems = list(problems or [])
    defaulted: list[str] = []

    def reject(reason: str) -> Rejected:
        return Rejected(source, location, reason, raw)

    if not job_id:
        problems.append("no job id")
    if not site:
        problems.append("site unknown (no site in the record and no site= given)")

    # Times: derive only what follows exactly from the others.
    if wall is None and start is not None and end is not None:
        wall = end - start
    if end is None and start is not None and wall is not None:
        end = start + wall
    if start is None and end is not None and wall is not None:
        start = end - wall
    if start is None:
        problems.append("start time unknown")
    if end is None:
        problems.append("end time unknown")
    if wall is None:
        problems.append("wall-clock time unknown")
    elif wall < 0:
        problems.append(f"negative wall-clock time {wall}")
    if submit is None and start is not None:
        if fill_unknown:
            submit = start
            defaulted.append("submit_time")
        else:
            problems.append("submit time not in the record (fill_unknown=True uses start time)")

    # CPU: user + system, or the total alone (kept in cpu_user_seconds).
    if cpu_user is None and cpu_system is None and cpu_total is not None:
        cpu_user, cpu_system = cpu_total, 0.0
        defaulted.append("cpu_system_seconds")
    elif cpu_user is not None and cpu_system is None:
        cpu_system = 0.0
        defaulted.append("cpu_system_seconds")
    if cpu_user is None:
        problems.append("user CPU time unknown")
    for name, value in (("user CPU", cpu_user), ("system CPU", cpu_system)):
        if value is not None and value < 0:
            problems.append(f"negative {name} time {value}")

    if status is None:
        if fill_unknown:
            status = "success"
            defaulted.append("status")
        else:
            problems.append("outcome not in the record (fill_unknown=True assumes success)")
    elif status not in ("success", "failed"):
        problems.append(f"not a finished job ({status})")

    if cores is None:
        cores = 1
        defaulted.append("cores")
    elif cores < 1:
        problems.append(f"cores {cores} < 1")
    for name, value in (("submit", submit), ("start", start), ("end", end)):
        if value is not None and not 0 <= value < MAX_EPOCH_SECONDS:
            problems.append(
                f"{name} time {number(value)} is not a time in epoch seconds"
                + (" (milliseconds?)" if value >= MAX_EPOCH_SECONDS else "")
            )

    if problems:
        return reject("; ".join(problems))
    assert start is not None and end is not None and submit is not None and wall is not None
    assert cpu_user is not None and cpu_system is not None
    # x-rules of grid.jobs
    if end < start:
        return reject("end_time before start_time")
    if start < submit:
        return reject("start_time before submit_time")

    if attempt is None:
        attempt = 1
        defaulted.append("attempt")
    if not host:
        host = UNKNOWN
        defaulted.append("host")
    if not vo:
        vo = UNKNOWN
        defaulted.append("vo")
    if not cpu_model:
        cpu_model = UNKNOWN
        defaulted.append("cpu_model")
    if not job_type:
        job_type = UNKNOWN
        defaulted.append("job_type")

    record: dict[str, Any] = {
        "job_id": job_id,
        "attempt": attempt,
        "vo": vo,
        "site": site,
        "host": host,
        "queue": queue or None,
        "task_id": task_id or None,
        "job_type": job_type,
        "cpu_model": cpu_model,
        "cores": cores,
        "submit_time": rfc3339(submit),
        "start_time": rfc3339(start),
        "end_time": rfc3339(end),
        "wall_seconds": number(wall),
        "cpu_user_seconds": number(cpu_user),
        "cpu_system_seconds": number(cpu_system),
        "events": events,
        "max_rss_mb": None if max_rss_mb is None else round(max_rss_mb, 3),
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "read_time_seconds": read_time,
        "status": status,
        "exit_code": exit_code,
        "failure_mode": failure_mode if status == "failed" else None,
        "benchmark_type": benchmark_type,
        "benchmark_per_core": benchmark_per_core,
        "source_format": source_format,
        "raw": clip(raw),
        "defaulted_fields": defaulted,
    }
    return record
