"""(Sun / Son of / Univa) Grid Engine accounting file (``$SGE_ROOT/<cell>/common/accounting``)
-> ``grid.jobs``.

One line per finished job (or array task, or parallel task), ``:``-separated fields in the order
of ``accounting(5)``: qname, hostname, group, owner, job_name, job_number, account, priority,
submission_time, start_time, end_time, failed, exit_status, ru_wallclock, ru_utime, ru_stime,
ru_maxrss, ... (rusage), project, department, granted_pe, slots, task_number, cpu, mem, io,
category, iow, pe_taskid, maxvmem, arid, ar_submission_time; newer versions append job_class,
qdel_info, maxrss, maxpss, submit_host, cwd, submit_cmd, wallclock, ... So a line has at least
45 fields. Lines starting with ``#`` are comments. Times are epoch seconds, or epoch
milliseconds (Univa Grid Engine 8.2 and later): a time above 10^11 (year 5138 in seconds) is read
as milliseconds, line by line, so files of either kind need no option.

Mapping: job_id ``<site>:<job_number>[.<task_number>][/<pe_taskid>]:<start>`` (job numbers
wrap; array tasks and the per-task lines of parallel jobs without accounting_summary are records
of their own, as in APEL); site ``site=`` (the file names no grid site); host ``hostname``; vo the
VO of the job's BLAH record (``blah=``, see ``gridlake.sources.cream``, matched on job_number),
else ``vo=``, else ``group`` (the Unix group, as the Slurm adapter does); queue ``qname``; cores
``slots``; submit / start / end ``submission_time`` / ``start_time`` / ``end_time`` (0 = never
happened: unknown); wall ``ru_wallclock``; CPU ``cpu`` (CPU time of all the job's processes, what
APEL accounts): split into ``ru_utime`` / ``ru_stime`` when these add up to ``cpu`` (within
0.1 %), else -- e.g. a parallel job, whose ``ru_*`` cover only the master script -- the total is
held in cpu_user_seconds and cpu_system_seconds is defaulted; max_rss_mb ``maxrss`` (bytes, newer
versions), else ``ru_maxrss`` (KiB; 0 = not measured) when the ``ru_*`` describe the whole job
(their CPU times add up to ``cpu``), else null. Outcome: ``failed`` 0 and
``exit_status`` 0 -> success; else failed, exit_code ``exit_status``, failure_mode ``signal`` when
``exit_status`` > 128 (SGE reports 128 + signal for killed jobs), else ``batch-system`` when
``failed`` is not 0 (Grid Engine's own failure code: a prolog/epilog, limit or start failure),
else ``nonzero-exit``.
Not mapped: cpu_model, job_type, task_id, events, bytes (``io`` is one combined figure in GB,
``ru_inblock``/``ru_oublock`` are block counts), read time, benchmark; ``mem`` (GB x s),
``maxvmem``, ``account``, ``project``, ``department``, ``category``, the rest of the rusage.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from gridlake.sources.base import Item, Rejected, iter_lines, make_job, to_float, to_int
from gridlake.sources.cream import BlahIndex, BlahSource, batch_vo, blah_index

SOURCE_FORMAT = "sge"

FIELDS = (
    "qname", "hostname", "group", "owner", "job_name", "job_number", "account", "priority",
    "submission_time", "start_time", "end_time", "failed", "exit_status", "ru_wallclock",
    "ru_utime", "ru_stime", "ru_maxrss", "ru_ixrss", "ru_ismrss", "ru_idrss", "ru_isrss",
    "ru_minflt", "ru_majflt", "ru_nswap", "ru_inblock", "ru_oublock", "ru_msgsnd", "ru_msgrcv",
    "ru_nsignals", "ru_nvcsw", "ru_nivcsw", "project", "department", "granted_pe", "slots",
    "task_number", "cpu", "mem", "io", "category", "iow", "pe_taskid", "maxvmem", "arid",
    "ar_submission_time", "job_class", "qdel_info", "maxrss", "maxpss", "submit_host", "cwd",
    "submit_cmd", "wallclock",
)  # fmt: skip
MIN_FIELDS = 45  # through ar_submission_time
MS_THRESHOLD = 1e11  # epoch seconds of the year 5138: larger times are milliseconds
_INTEGERS = ("job_number", "submission_time", "start_time", "end_time", "failed", "exit_status",
             "slots", "task_number")  # fmt: skip
_NUMBERS = ("ru_wallclock", "ru_utime", "ru_stime", "ru_maxrss", "cpu")


def read_sge(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    blah: BlahSource = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """Grid Engine accounting file lines (plain or .gz); blah= CREAM BLAH files for VOs."""
    path = Path(path)
    index = blah_index(blah)
    for lineno, line, text in iter_lines(path, comment="#"):
        values = text.split(":")
        if len(values) < MIN_FIELDS:
            yield Rejected(
                str(path),
                f"line {lineno}",
                f"expected at least {MIN_FIELDS} ':' fields, got {len(values)}",
                line,
            )
            continue
        row = dict(zip(FIELDS, values, strict=False))
        yield _row_to_job(
            row, line, str(path), f"line {lineno}", site, host, vo, index, fill_unknown
        )


def _row_to_job(
    row: dict[str, str],
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
    ints: dict[str, int | None] = {}
    floats: dict[str, float | None] = {}
    for name in _INTEGERS:
        ints[name] = to_int(row[name])
        if ints[name] is None:
            problems.append(f"{name} {row[name]!r} is not an integer")
    for name in _NUMBERS:
        value = to_float(row[name])
        floats[name] = value
        if value is None or value < 0:
            problems.append(f"{name} {row[name]!r} is not a non-negative number")
    maxrss = None
    if row.get("maxrss", "NONE") not in ("", "NONE"):
        maxrss = to_float(row["maxrss"])
        if maxrss is None:
            problems.append(f"maxrss {row['maxrss']!r} is not a number")
    if problems:
        return Rejected(source, location, "; ".join(problems), raw)

    times = [ints["submission_time"], ints["start_time"], ints["end_time"]]
    scale = 1000 if max(t or 0 for t in times) > MS_THRESHOLD else 1
    submit, start, end = (t / scale if t else None for t in times)

    cpu = floats["cpu"]
    utime, stime = floats["ru_utime"], floats["ru_stime"]
    cpu_user = cpu_system = cpu_total = None
    assert cpu is not None and utime is not None and stime is not None
    whole_job = math.isclose(utime + stime, cpu, rel_tol=1e-3, abs_tol=0.01)  # ru_* = the job
    if whole_job:
        cpu_user, cpu_system = utime, stime
    else:
        cpu_total = cpu

    rss_mib: float | None = None
    if maxrss is not None and maxrss > 0:
        rss_mib = maxrss / 1024**2
    elif whole_job and floats["ru_maxrss"]:
        rss_mib = (floats["ru_maxrss"] or 0) / 1024

    failed, exit_status = ints["failed"], ints["exit_status"]
    failure_mode = None
    if failed == 0 and exit_status == 0:
        status = "success"
    else:
        status = "failed"
        if exit_status is not None and exit_status > 128:
            failure_mode = "signal"
        elif failed:
            failure_mode = "batch-system"
        else:
            failure_mode = "nonzero-exit"

    number = row["job_number"].strip()
    job = number
    if ints["task_number"]:
        job += f".{ints['task_number']}"
    pe_task = row["pe_taskid"].strip()
    if pe_task and pe_task != "NONE":
        job += f"/{pe_task}"
    if start:
        job += f":{start:.0f}"
    return make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=SOURCE_FORMAT,
        job_id=f"{site or ''}:{job}",
        site=site,
        host=row["hostname"].strip() or host,
        vo=batch_vo(index, number, end, vo, row["group"].strip()),
        queue=row["qname"].strip() or None,
        cores=ints["slots"],
        submit=submit,
        start=start,
        end=end,
        wall=floats["ru_wallclock"],
        cpu_user=cpu_user,
        cpu_system=cpu_system,
        cpu_total=cpu_total,
        max_rss_mb=rss_mib,
        status=status,
        exit_code=exit_status,
        failure_mode=failure_mode,
        fill_unknown=fill_unknown,
        problems=problems,
    )
