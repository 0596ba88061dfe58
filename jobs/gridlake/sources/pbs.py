"""PBS / Torque accounting log (``server_priv/accounting/YYYYMMDD``) -> ``grid.jobs``.

One line per event, ``date time;type;job id;attributes``, the attributes ``key=value`` separated
by spaces::

    10/02/2011 06:41:44;E;21048463.lcgbatch01.gridpp.rl.ac.uk;user=patls009 group=prodatls
    jobname=cre09_443343882 queue=grid4000M ctime=1317509574 qtime=1317509574 etime=1317509574
    start=1317509945 owner=patls009@lcgce09.gridpp.rl.ac.uk exec_host=lcg1277.gridpp.rl.ac.uk/5
    ... end=1317534104 Exit_status=0 resources_used.cput=18:15:24 resources_used.mem=2031040kb
    resources_used.vmem=3335528kb resources_used.walltime=19:23:04

Only ``E`` (job ended) records describe a finished job; the other event types (``Q`` queued,
``S`` started, ``D`` deleted, ``A`` aborted, ``R`` rerun, ...) are skipped without a message, as
APEL's parser does: a job that ran has an ``E`` record. The line's leading date (local time, and
in concatenated logs sometimes prefixed with the file name, ``20150327:03/27/2015 ...``) is not
used: the attributes carry epoch times.

Mapping: job_id ``<site>:<job id>:<start>`` (Torque reuses job ids, and a job that is rerun
starts again: one id per execution; a second ``E`` record of the same execution gets the same id
and replaces the first downstream); site ``site=`` (the log names no grid site); host the first
host of ``exec_host`` (``wn1/0+wn1/1`` -> ``wn1``), else ``host=``; vo the VO of the job's BLAH
record (``blah=``, see ``gridlake.sources.cream``), else ``vo=``, else ``group`` (the Unix group,
as the Slurm adapter falls back to the account's group); queue ``queue``; cores
``total_execution_slots``, else the slots listed in ``exec_host`` (``b391/0-3`` is 4,
``wn1/5+wn2/0,2`` is 3); submit ``ctime`` (else ``qtime``), start ``start``, end ``end``; wall
``resources_used.walltime``; CPU ``resources_used.cput`` (user + system: held in
cpu_user_seconds, cpu_system_seconds defaulted); both as ``HH:MM:SS`` or plain seconds (Torque
versions differ); max_rss_mb ``resources_used.mem`` (``kb``, ``mb``, ``gb``, ``tb``, ``b``; a bare
number is bytes). Outcome from ``Exit_status``: 0 success; 1-255 failed/``nonzero-exit``; above
256 Torque's "killed by signal N" (256 + N) -> failed/``signal``, exit_code 128 + N; negative
values are pbs_mom's codes for jobs it could not run or that broke a limit (-10 ``memory``, -11
``timeout``, -12 ``cpu-limit``, others ``batch-system``; exit_code null: no process exit code).
Not mapped: cpu_model, job_type, task_id, events, bytes (the accounting log has no I/O), read
time, benchmark; ``resources_used.vmem``, ``Resource_List.*`` (requests, not usage), ``jobname``,
``owner``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from gridlake.sources.base import Item, Rejected, iter_lines, make_job, to_int
from gridlake.sources.cream import BlahIndex, BlahSource, batch_vo, blah_index

SOURCE_FORMAT = "pbs"

FAILED_CODES = {-10: "memory", -11: "timeout", -12: "cpu-limit"}

_HMS = re.compile(r"(\d+):(\d{1,2}):(\d{1,2})\Z")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([kmgt]?b)?\Z", re.I)
_SIZE_MIB = {"b": 1 / 1024**2, "kb": 1 / 1024, "mb": 1.0, "gb": 1024.0, "tb": 1024.0**2}
_SLOTS = re.compile(r"(\d+)(?:-(\d+))?\Z")


def parse_duration(text: str) -> int | None:
    """``19:23:4`` / ``03:32:47`` (hours may exceed 24) or plain seconds ``12767`` -> seconds."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    match = _HMS.match(text)
    if not match:
        return None
    hours, minutes, seconds = (int(g) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def parse_size_mib(text: str) -> float | None:
    """``2031040kb`` -> MiB; ``b``/``kb``/``mb``/``gb``/``tb`` suffixes, a bare number is bytes."""
    match = _SIZE.match(text.strip())
    if not match:
        return None
    return float(match.group(1)) * _SIZE_MIB[(match.group(2) or "b").lower()]


def exec_slots(exec_host: str) -> tuple[str, int] | None:
    """``wn1/0+wn1/1`` -> (``wn1``, 2); ``b391/0-3`` -> (``b391``, 4); None if malformed."""
    first: str | None = None
    slots = 0
    for part in exec_host.strip().split("+"):
        name, sep, spec = part.partition("/")
        if not name or not sep:
            return None
        first = first or name
        for item in spec.split(","):
            match = _SLOTS.match(item)
            if not match:
                return None
            low, high = int(match.group(1)), int(match.group(2) or match.group(1))
            if high < low:
                return None
            slots += high - low + 1
    return (first, slots) if first else None


def read_pbs(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    blah: BlahSource = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """PBS/Torque accounting log 'E' records (plain or .gz); blah= CREAM BLAH files for VOs."""
    path = Path(path)
    index = blah_index(blah)
    for lineno, line, text in iter_lines(path):
        parts = text.split(";", 3)
        if len(parts) != 4:
            yield Rejected(
                str(path),
                f"line {lineno}",
                f"expected 'date;type;job id;attributes', got {len(parts)} ';' fields",
                line,
            )
            continue
        if parts[1].strip() != "E":
            continue
        yield _record_to_job(
            parts[2].strip(), parts[3], line, str(path), f"line {lineno}",
            site, host, vo, index, fill_unknown,
        )  # fmt: skip


def _record_to_job(
    job_id: str,
    attributes: str,
    raw: str,
    source: str,
    location: str,
    site: str | None,
    host: str | None,
    vo: str | None,
    index: BlahIndex | None,
    fill_unknown: bool,
) -> Item:
    problems: list[str] = []
    attrs: dict[str, str] = {}
    for token in attributes.split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            return Rejected(source, location, f"attribute {token[:60]!r} is not key=value", raw)
        attrs[key] = value

    def epoch(*names: str) -> int | None:
        for name in names:
            if name in attrs:
                value = to_int(attrs[name])
                if value is None:
                    problems.append(f"{name} {attrs[name]!r} is not an integer")
                    return None
                if value > 0:
                    return value
        return None

    def duration(name: str) -> int | None:
        if name not in attrs:
            return None
        value = parse_duration(attrs[name])
        if value is None:
            problems.append(f"{name} {attrs[name]!r} is neither seconds nor HH:MM:SS")
        return value

    submit, start, end = epoch("ctime", "qtime"), epoch("start"), epoch("end")
    wall = duration("resources_used.walltime")  # absent: end - start (make_job)
    cput = duration("resources_used.cput")

    exec_host, cores = None, None
    if attrs.get("exec_host"):
        slots = exec_slots(attrs["exec_host"])
        if slots is None:
            problems.append(f"exec_host {attrs['exec_host'][:60]!r} is not host/slots[+...]")
        else:
            exec_host, cores = slots
    if "total_execution_slots" in attrs:
        cores = to_int(attrs["total_execution_slots"])
        if cores is None:
            problems.append(
                f"total_execution_slots {attrs['total_execution_slots']!r} is not an integer"
            )

    rss_mib = None
    if "resources_used.mem" in attrs:
        rss_mib = parse_size_mib(attrs["resources_used.mem"])
        if rss_mib is None:
            problems.append(f"resources_used.mem {attrs['resources_used.mem']!r} is not a size")

    status: str | None = None
    failure_mode: str | None = None
    exit_code: int | None = None
    if "Exit_status" in attrs:
        code = to_int(attrs["Exit_status"])
        if code is None:
            problems.append(f"Exit_status {attrs['Exit_status']!r} is not an integer")
        elif code == 0:
            status, exit_code = "success", 0
        elif code > 256:
            status, failure_mode, exit_code = "failed", "signal", 128 + code - 256
        elif code > 0:
            status, failure_mode, exit_code = "failed", "nonzero-exit", code
        else:
            status, failure_mode = "failed", FAILED_CODES.get(code, "batch-system")

    owner = site or ""
    return make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=SOURCE_FORMAT,
        job_id=(f"{owner}:{job_id}" + (f":{start}" if start else "")) if job_id else None,
        site=site,
        host=exec_host or host,
        vo=batch_vo(index, job_id, end, vo, attrs.get("group")),
        queue=attrs.get("queue") or None,
        cores=cores,
        submit=submit,
        start=start,
        end=end,
        wall=wall,
        cpu_total=cput,
        max_rss_mb=rss_mib,
        status=status,
        exit_code=exit_code,
        failure_mode=failure_mode,
        fill_unknown=fill_unknown,
        problems=problems,
    )
