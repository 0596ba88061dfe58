"""Slurm ``sacct --parsable2`` (``-P``) output -> ``grid.jobs``.

The first line is the header (``JobID|JobIDRaw|Cluster|...``) when it names known sacct fields;
otherwise (``sacct -n``, as APEL's ``slurm_acc.sh`` writes) the reader uses ``fields=`` or, by
default, ``APEL_FIELDS``, the format of APEL's TotalCPU variant::

    JobID,JobName,User,Group,Start,End,Elapsed,TotalCPU,Partition,NCPUS,NNodes,NodeList,
    MaxRSS,MaxVMSize,State

APEL's older script wrote ``CPUTimeRAW`` (allocated core-seconds, i.e. Elapsed x NCPUS, not CPU
used) in the 8th place; a bare integer there is not a Slurm duration and the line is rejected.

Job steps (``JobID`` with a ``.``: ``123.batch``, ``123.0``) are folded into their job: sacct
prints a job's steps right after it, so the reader holds one job at a time and takes the largest
step ``MaxRSS`` as the job's peak memory. Steps whose job line is absent (only steps exist) are
emitted as jobs of their own, except ``.extern`` steps.

Mapping: job_id ``<Cluster>:<JobIDRaw or JobID>`` (``<site>:`` when there is no Cluster column);
site ``site=``, else ``Cluster``; vo ``vo=``, else ``Account``, else ``Group``; host the first
node of ``NodeList`` (``wn[01-03]`` -> ``wn01``), else ``host=``; queue ``Partition``; cores
``AllocCPUS``/``NCPUS``; times ``Submit``, ``Start``, ``End``; wall ``ElapsedRaw`` or
``Elapsed`` (``[D-]HH:MM:SS``, ``MM:SS.mmm``); CPU ``UserCPU`` + ``SystemCPU`` or ``TotalCPU``;
max_rss_mb ``MaxRSS`` (``K``/``M``/``G``/``T`` suffixes, a bare number is KiB); exit_code the
first part of ``ExitCode`` (``exit:signal``; killed by a signal -> 128 + signal); status from
``State``: COMPLETED -> success; FAILED (nonzero-exit), TIMEOUT (timeout), OUT_OF_MEMORY (memory),
NODE_FAIL (node-failure), CANCELLED (cancelled), PREEMPTED (preempted), BOOT_FAIL
(boot-failure), DEADLINE (deadline), REQUEUED (requeued) -> failed. Unfinished states (RUNNING,
PENDING, ...) are rejected.

Times without a UTC offset are the cluster's local time: they are read in ``tz`` (an IANA name,
default ``"UTC"``); pass the cluster's zone when it does not run in UTC.
Not mapped: cpu_model, job_type, events, bytes (MaxDiskRead/Write are per-task maxima, not
totals), read_time_seconds, benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from gridlake.sources.base import Item, Rejected, iter_lines, make_job, to_int

SOURCE_FORMAT = "slurm"

APEL_FIELDS = (
    "JobID", "JobName", "User", "Group", "Start", "End", "Elapsed", "TotalCPU", "Partition",
    "NCPUS", "NNodes", "NodeList", "MaxRSS", "MaxVMSize", "State",
)  # fmt: skip

KNOWN_FIELDS = {
    f.lower()
    for f in (
        *APEL_FIELDS, "JobIDRaw", "Cluster", "Account", "ExitCode", "Submit", "ElapsedRaw",
        "UserCPU", "SystemCPU", "AllocCPUS", "Eligible", "CPUTime", "CPUTimeRAW", "ReqMem",
        "Timelimit", "NTasks", "AllocNodes", "AllocTRES", "Reserved", "Suspended", "UID", "GID",
    )
}  # fmt: skip

FAILED_STATES = {
    "FAILED": "nonzero-exit",
    "TIMEOUT": "timeout",
    "OUT_OF_MEMORY": "memory",
    "NODE_FAIL": "node-failure",
    "CANCELLED": "cancelled",
    "PREEMPTED": "preempted",
    "BOOT_FAIL": "boot-failure",
    "DEADLINE": "deadline",
    "REQUEUED": "requeued",
}

_DURATION = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)\Z")
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)\Z", re.I)
_UNITS = {"": 1.0, "K": 1.0, "M": 1024.0, "G": 1024.0**2, "T": 1024.0**3, "P": 1024.0**4}


def parse_duration(text: str) -> float | None:
    """Slurm duration ``[D-][HH:]MM:SS[.mmm]`` -> seconds; None if empty or not that format."""
    match = _DURATION.match(text.strip())
    if not match:
        return None
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def parse_memory_kib(text: str) -> float | None:
    """``1567524K``, ``438.50M``, ``1.40G`` -> KiB; a bare number is KiB; empty -> None."""
    match = _MEMORY.match(text.strip())
    if not match:
        return None
    return float(match.group(1)) * _UNITS[match.group(2).upper()]


def parse_time(text: str, zone: ZoneInfo) -> float | None:
    """``2013-03-27T17:13:24`` (local time in ``zone``) or with an offset -> epoch seconds."""
    text = text.strip()
    if not text or text in ("Unknown", "None"):
        return None
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.timestamp()


def first_node(nodelist: str) -> str | None:
    """``wn[01-03,07],gpu1`` -> ``wn01``; ``None assigned`` -> None."""
    text = nodelist.strip()
    if not text or text.lower().startswith("none"):
        return None
    match = re.match(r"([^\[,]*)(?:\[([^\],-]+))?", text)
    if not match:
        return None
    return (match.group(1) + (match.group(2) or "")) or None


def _is_header(values: list[str]) -> bool:
    names = [v.strip().lower() for v in values]
    return "jobid" in names and sum(n in KNOWN_FIELDS for n in names) >= len(names) / 2


def read_sacct(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fields: list[str] | tuple[str, ...] | None = None,
    tz: str = "UTC",
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """Stream ``sacct -P`` output (plain or .gz); ``fields`` names the columns of headerless
    files (default ``APEL_FIELDS``)."""
    path = Path(path)
    zone = ZoneInfo(tz)
    header: list[str] | None = None
    pending: tuple[int, dict[str, str], str] | None = None  # the job line waiting for its steps
    pending_rss: float | None = None

    def emit(lineno: int, row: dict[str, str], raw: str, step_rss: float | None) -> Item:
        return _row_to_job(row, raw, str(path), f"line {lineno}", site, host, vo, zone,
                           fill_unknown, step_rss)  # fmt: skip

    for lineno, line, text in iter_lines(path):
        values = text.split("|")
        if header is None:
            if _is_header(values):
                header = [v.strip() for v in values]
                continue
            header = list(fields or APEL_FIELDS)
        if len(values) != len(header):
            yield Rejected(
                str(path),
                f"line {lineno}",
                f"expected {len(header)} '|' fields ({'|'.join(header)}), got {len(values)}",
                line,
            )
            continue
        row = {name.lower(): value for name, value in zip(header, values, strict=True)}
        job_id = row.get("jobid", "").strip()
        base, _, step = job_id.partition(".")
        if step:
            if pending is not None and pending[1].get("jobid", "").strip() == base:
                rss = parse_memory_kib(row.get("maxrss", ""))
                if rss is not None:
                    pending_rss = rss if pending_rss is None else max(pending_rss, rss)
                continue
            if step == "extern":
                continue
            if pending is not None:
                yield emit(*pending, pending_rss)
                pending, pending_rss = None, None
            yield emit(lineno, row, line, None)  # only steps exist for this job
            continue
        if pending is not None:
            yield emit(*pending, pending_rss)
        pending, pending_rss = (lineno, row, line), None
    if pending is not None:
        yield emit(*pending, pending_rss)


def _row_to_job(
    row: dict[str, str],
    raw: str,
    source: str,
    location: str,
    site: str | None,
    host: str | None,
    vo: str | None,
    zone: ZoneInfo,
    fill_unknown: bool,
    step_rss_kib: float | None,
) -> Item:
    def get(*names: str) -> str:
        for name in names:
            value = row.get(name.lower(), "").strip()
            if value:
                return value
        return ""

    problems: list[str] = []
    times: dict[str, float | None] = {}
    for name in ("Submit", "Start", "End"):
        try:
            times[name] = parse_time(get(name), zone)
        except ValueError:
            times[name] = None
            problems.append(f"{name} {get(name)!r} is not a timestamp")

    wall = None
    if get("ElapsedRaw"):
        wall = to_int(get("ElapsedRaw"))
    elif get("Elapsed"):
        wall = parse_duration(get("Elapsed"))
        if wall is None:
            problems.append(f"Elapsed {get('Elapsed')!r} is not a Slurm duration")

    cpu_user = cpu_system = cpu_total = None
    if get("UserCPU") and get("SystemCPU"):
        cpu_user, cpu_system = parse_duration(get("UserCPU")), parse_duration(get("SystemCPU"))
    if cpu_user is None and get("TotalCPU"):
        cpu_total = parse_duration(get("TotalCPU"))
        if cpu_total is None:
            problems.append(
                f"TotalCPU {get('TotalCPU')!r} is not a Slurm duration (a bare number is "
                "CPUTimeRAW, allocated core-seconds, not CPU used)"
            )

    state = get("State").split(" ")[0].upper()  # "CANCELLED by 123"
    status: str | None
    failure_mode = None
    if state == "COMPLETED":
        status = "success"
    elif state in FAILED_STATES:
        status, failure_mode = "failed", FAILED_STATES[state]
    elif state:
        status = f"State {state}"
    else:
        status = None

    exit_code = None
    if get("ExitCode"):
        code, _, signal = get("ExitCode").partition(":")
        exit_code, sig = to_int(code), to_int(signal)
        if exit_code == 0 and sig:
            exit_code = 128 + sig
    elif state == "COMPLETED":
        exit_code = 0  # Slurm's COMPLETED means exit code 0 on all nodes

    rss = parse_memory_kib(get("MaxRSS")) if get("MaxRSS") else None
    if step_rss_kib is not None:
        rss = step_rss_kib if rss is None else max(rss, step_rss_kib)

    cluster = get("Cluster")
    job_id = get("JobIDRaw", "JobID")
    owner = cluster or site
    return make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=SOURCE_FORMAT,
        job_id=f"{owner}:{job_id}" if job_id and owner else None,
        site=site or cluster or None,
        host=first_node(get("NodeList")) or host,
        vo=vo or get("Account", "Group") or None,
        queue=get("Partition") or None,
        cores=to_int(get("AllocCPUS", "NCPUS")),
        submit=times["Submit"],
        start=times["Start"],
        end=times["End"],
        wall=wall,
        cpu_user=cpu_user,
        cpu_system=cpu_system,
        cpu_total=cpu_total,
        max_rss_mb=None if rss is None else rss / 1024,
        status=status,
        exit_code=exit_code,
        failure_mode=failure_mode,
        fill_unknown=fill_unknown,
        problems=problems,
    )
