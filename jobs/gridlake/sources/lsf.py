"""IBM Spectrum LSF accounting file (``lsb.acct``) ``JOB_FINISH`` records -> ``grid.jobs``.

A record is a sequence of fields separated by spaces: numbers, and strings in double quotes in
which a literal quote is doubled (``""``). A string may contain a newline (a job's command, for
instance), so one record can span several lines. The fields of ``JOB_FINISH`` (``lsb.acct(5)``)
are positional, and their positions after the 22nd depend on two counts in the record::

    0 "JOB_FINISH"  1 version  2 event time (end)  3 jobId  4 userId  5 options
    6 numProcessors  7 submitTime  8 beginTime  9 termTime  10 startTime  11 userName
    12 queue  13 resReq  ...  22 numAskedHosts, askedHosts[numAskedHosts], numExHosts,
    execHosts[numExHosts], jStatus, hostFactor, jobName, command, ru_utime, ru_stime,
    ru_maxrss, ... (rusage), mailUser, projectName, exitStatus, maxNumProcessors, loginShell,
    timeEvent, idx, maxRMem, maxRSwap, ...

(with n = numAskedHosts + numExHosts: jStatus is field 24 + n, ru_utime 28 + n, exitStatus
49 + n, idx 53 + n, maxRMem 54 + n, as APEL's parser reads them). Other event types in the
file (``JOB_RESIZE``, ``EVENT_ADRSV_FINISH``, ...) are skipped without a message: they are not
finished jobs. A record whose quoted string is still open when the next line starts a new record
(``"JOB_FINISH" "9.1" ...``), or at the end of the file, is rejected as truncated.

Mapping: job_id ``<site>:<jobId>[<idx>]:<startTime>`` (job ids wrap; ``[idx]`` for array
elements); site ``site=`` (the file names no grid site); host the first of ``execHosts``, else
``host=``; vo the VO of the job's BLAH record (``blah=``, see ``gridlake.sources.cream``, matched
on jobId), else ``vo=`` (LSF records carry no group; the user name is a local account); queue
``queue``; cores ``numExHosts`` (execHosts lists one entry per execution slot; as APEL); submit
``submitTime``, start ``startTime``, end the event time; wall end - start; CPU ``ru_utime`` /
``ru_stime``; max_rss_mb ``maxRMem`` (KiB; 0 or -1: not measured). Outcome from ``jStatus``:
64 (DONE) success, exit_code 0; 32 (EXIT) failed, with ``exitStatus`` a wait(2) status: killed by
signal N -> ``signal``, exit_code 128 + N; exit code N > 0 -> ``nonzero-exit``, exit_code N;
otherwise (LSF ended the job: killed while pending, host lost, ...) ``batch-system``, exit_code 0.
Other jStatus values are not finished jobs and are rejected. Times are epoch seconds; seconds stay
real seconds (``hostFactor``, the CPU factor APEL may scale by, is not applied).
Not mapped: cpu_model, job_type, task_id, events, bytes (no I/O totals in the record), read time,
benchmark; jobName, command, userName, projectName, ``maxRSwap``, the rest of the rusage.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from gridlake.sources.base import Item, Rejected, make_job, open_text, to_float, to_int
from gridlake.sources.cream import BlahIndex, BlahSource, batch_vo, blah_index

SOURCE_FORMAT = "lsf"
RECORD_LIMIT = 4 * 1024 * 1024  # characters one record (its strings spanning lines) may reach
JOB_DONE, JOB_EXIT = 64, 32

_RECORD_START = re.compile(r'"[A-Z][A-Z_]*" "[0-9][0-9.]*" ')
_EVENT_NAME = re.compile(r"[A-Z][A-Z_]*\Z")
_BLANK = " \t\r\n"


def tokenize(text: str) -> list[str] | None:
    """The fields of a record (strings unquoted, ``""`` -> ``"``); None while a string is open.

    A number directly followed by a string (``0""``) is two fields, as APEL reads it.
    """
    fields: list[str] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in _BLANK:
            pos += 1
        if pos >= size:
            return fields
        if text[pos] == '"':
            parts: list[str] = []
            pos += 1
            while True:
                quote = text.find('"', pos)
                if quote < 0:
                    return None
                parts.append(text[pos:quote])
                if quote + 1 < size and text[quote + 1] == '"':
                    parts.append('"')
                    pos = quote + 2
                    continue
                pos = quote + 1
                break
            fields.append("".join(parts))
        else:
            end = pos
            while end < size and text[end] not in _BLANK and text[end] != '"':
                end += 1
            fields.append(text[pos:end])
            pos = end


def iter_records(path: Path | str) -> Iterator[tuple[int, str, list[str] | str]]:
    """(first line number, raw text, fields or the reason they cannot be read) per record."""
    pending = ""
    first = 0
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if pending:
                if _RECORD_START.match(line):
                    yield (
                        first,
                        pending,
                        (
                            "unterminated quoted string: the next line starts a new record "
                            "(truncated record?)"
                        ),
                    )
                    pending = ""
                else:
                    pending += line
                    fields = tokenize(pending)
                    if fields is not None:
                        yield first, pending, fields
                        pending = ""
                    elif len(pending) > RECORD_LIMIT:
                        yield (
                            first,
                            pending,
                            (f"quoted string still open after {RECORD_LIMIT} characters"),
                        )
                        pending = ""
                    continue
            if not line.strip():
                continue
            fields = tokenize(line)
            if fields is None:
                pending, first = line, lineno
            else:
                yield lineno, line, fields
        if pending:
            yield first, pending, "unterminated quoted string at the end of the file (truncated?)"


def read_lsf(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    blah: BlahSource = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """LSF lsb.acct JOB_FINISH records (plain or .gz); blah= CREAM BLAH files for VOs."""
    path = Path(path)
    index = blah_index(blah)
    for lineno, raw, fields in iter_records(path):
        location = f"line {lineno}"
        if isinstance(fields, str):
            yield Rejected(str(path), location, fields, raw)
            continue
        event = fields[0] if fields else ""
        if event != "JOB_FINISH":
            if not _EVENT_NAME.match(event):
                yield Rejected(
                    str(path), location, f"not an lsb.acct record (first field {event[:40]!r})", raw
                )
            continue
        yield _record_to_job(fields, raw, str(path), location, site, host, vo, index, fill_unknown)


def _record_to_job(
    fields: list[str],
    raw: str,
    source: str,
    location: str,
    site: str | None,
    host: str | None,
    vo: str | None,
    index: BlahIndex | None,
    fill_unknown: bool,
) -> Item:
    def reject(reason: str) -> Rejected:
        return Rejected(source, location, reason, raw)

    def count(i: int, name: str) -> int | str:
        if i >= len(fields):
            return f"record ends before {name} (field {i + 1}; {len(fields)} fields: truncated?)"
        value = to_int(fields[i])
        if value is None or value < 0:
            return f"{name} {fields[i][:40]!r} (field {i + 1}) is not a count"
        return value

    asked = count(22, "numAskedHosts")
    if isinstance(asked, str):
        return reject(asked)
    executed = count(23 + asked, "numExHosts")
    if isinstance(executed, str):
        return reject(executed)
    n = asked + executed
    needed = 55 + n  # through maxRMem
    if len(fields) < needed:
        return reject(
            f"expected at least {needed} fields (numAskedHosts {asked}, numExHosts {executed}), "
            f"got {len(fields)} (truncated record?)"
        )

    problems: list[str] = []

    def integer(i: int, name: str) -> int | None:
        value = to_int(fields[i])
        if value is None:
            problems.append(f"{name} {fields[i][:40]!r} (field {i + 1}) is not an integer")
        return value

    def real(i: int, name: str) -> float | None:
        value = to_float(fields[i])
        if value is None:
            problems.append(f"{name} {fields[i][:40]!r} (field {i + 1}) is not a number")
        elif value < 0:
            problems.append(f"negative {name} {value} (field {i + 1})")
        return value

    end, submit, start = (
        integer(2, "event time"),
        integer(7, "submitTime"),
        integer(10, "startTime"),
    )
    j_status = integer(24 + n, "jStatus")
    cpu_user, cpu_system = real(28 + n, "ru_utime"), real(29 + n, "ru_stime")
    exit_status = integer(49 + n, "exitStatus")
    idx = integer(53 + n, "idx")
    max_rmem = integer(54 + n, "maxRMem")
    job = fields[3].strip()
    if to_int(job) is None:
        problems.append(f"jobId {job[:40]!r} (field 4) is not an integer")
    if problems:
        return reject("; ".join(problems))
    if start and end and end < start:
        return reject(f"end_time before start_time (event time {end} < startTime {start})")

    status: str | None
    failure_mode = None
    exit_code: int | None = None
    if j_status == JOB_DONE:
        status, exit_code = "success", 0
    elif j_status == JOB_EXIT:
        status = "failed"
        signal, code = (exit_status or 0) & 0x7F, ((exit_status or 0) >> 8) & 0xFF
        if signal:
            failure_mode, exit_code = "signal", 128 + signal
        elif code:
            failure_mode, exit_code = "nonzero-exit", code
        else:
            failure_mode, exit_code = "batch-system", 0
    else:
        status = f"jStatus {j_status}"

    job_id = job + (f"[{idx}]" if idx else "") + (f":{start}" if start else "")
    return make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=SOURCE_FORMAT,
        job_id=f"{site or ''}:{job_id}",
        site=site,
        host=(fields[24 + asked].strip() if executed else None) or host,
        vo=batch_vo(index, job, end, vo, None),
        queue=fields[12].strip() or None,
        cores=executed,
        submit=submit or None,
        start=start or None,
        end=end or None,
        cpu_user=cpu_user,
        cpu_system=cpu_system,
        wall=None,
        max_rss_mb=max_rmem / 1024 if max_rmem and max_rmem > 0 else None,
        status=status,
        exit_code=exit_code,
        failure_mode=failure_mode,
        fill_unknown=fill_unknown,
        problems=problems,
    )
