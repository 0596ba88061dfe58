"""Standard Workload Format (Parallel Workloads Archive, SWF 2.x) -> ``grid.jobs``.

Header lines start with ``;`` (``; UnixStartTime: 749458803``, ``; Queue: 1 batch``); each job is
one line of 18 whitespace-separated numbers, ``-1`` meaning unknown:

 1 job number, 2 submit time (s after UnixStartTime), 3 wait time, 4 run time, 5 allocated
 processors, 6 average CPU time used per processor, 7 used memory (KB per processor),
 8 requested processors, 9 requested time, 10 requested memory, 11 status (1 completed, 0 failed,
 5 cancelled), 12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding job,
 18 think time.

Mapping: job_id ``<site>:<file stem>:<job number>`` (``<file stem>:<job number>`` when the
site is the stem); site ``site=``, else the file name stem
(``NASA-iPSC-1993-3.1-cln``); host ``host=``, else the partition's name from the
``; Partition:`` header (on a grid cluster's log, the CE that ran the job: LPC-EGEE's
``clrce01.in2p3.fr``), else its number; vo ``vo=``, else the trace's group, kept as it is (an
anonymised Unix group number: on a grid cluster groups map to VOs); queue the queue's name from
the ``; Queue:`` header, else its number, and the job type is the queue (a grid site's queues
are its workload classes: test, short, long, day); submit
``UnixStartTime + submit``, start ``submit + wait``, wall run time, end ``start + run``; cores
allocated processors, else requested processors (listed in ``defaulted_fields``); CPU time
``average CPU per processor x processors`` as total (user and system are not separated); status
1 -> success, 0 -> failed, 5 -> failed/``cancelled``, -1 -> outcome unknown (see
``base.make_job``: rejected unless ``fill_unknown=True``); codes 2-4 (partial executions of
checkpointed or swapped jobs) are rejected.

A file without ``; UnixStartTime:`` is read from the epoch (1970-01-01): its times are only
relative and the three time fields are listed in ``defaulted_fields``. Records with unknown
wait, run or CPU time, or unknown outcome, are rejected with the reasons (the NASA iPSC trace
records none of wait, CPU, memory and status, so every job of it is rejected).
Not mapped: memory (SWF gives an average per processor, not the peak), executable, preceding
job and think time, events, bytes, cpu_model, benchmark.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from gridlake.sources.base import Item, Rejected, file_stem, make_job, open_text, to_float

SOURCE_FORMAT = "swf"
N_FIELDS = 18


def read_swf(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """Stream an SWF trace (plain or .gz)."""
    path = Path(path)
    stem = file_stem(path)
    site = site or stem
    unix_start: float | None = None
    queues: dict[str, str] = {}
    partitions: dict[str, str] = {}
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            if not text:
                continue
            if text.startswith(";"):
                key, _, value = text[1:].partition(":")
                key = key.strip().lower()
                if key == "unixstarttime":
                    unix_start = to_float(value)
                elif key in ("queue", "partition"):
                    parts = value.split(None, 1)
                    if len(parts) == 2:
                        names = queues if key == "queue" else partitions
                        names[parts[0]] = parts[1].split("(")[0].strip()
                continue
            location = f"line {lineno}"
            fields = text.split()
            if len(fields) != N_FIELDS:
                yield Rejected(
                    str(path), location, f"expected {N_FIELDS} fields, got {len(fields)}", line
                )
                continue
            values = [to_float(f) for f in fields]
            if any(v is None for v in values):
                bad = [str(i + 1) for i, v in enumerate(values) if v is None]
                yield Rejected(str(path), location, f"not a number in field {', '.join(bad)}", line)
                continue
            yield _job(values, fields, line, str(path), location, stem, site, host, vo, unix_start,
                       queues, partitions, fill_unknown)  # fmt: skip


def _job(
    v: list[float | None],
    fields: list[str],
    raw: str,
    source: str,
    location: str,
    stem: str,
    site: str,
    host: str | None,
    vo: str | None,
    unix_start: float | None,
    queues: dict[str, str],
    partitions: dict[str, str],
    fill_unknown: bool,
) -> Item:
    def known(i: int) -> float | None:  # 1-based SWF field number
        value = v[i - 1]
        return None if value is None or value < 0 else value

    problems: list[str] = []
    origin = unix_start if unix_start is not None else 0.0
    submit_rel, wait, run = known(2), known(3), known(4)
    if submit_rel is None:
        problems.append("submit time unknown (-1)")
    if wait is None:
        problems.append("wait time unknown (-1)")
    if run is None:
        problems.append("run time unknown (-1)")
    procs = known(5)
    procs_defaulted = False
    if not procs:
        procs = known(8)
        procs_defaulted = bool(procs)
    if not procs:
        problems.append("processors unknown (allocated and requested are -1 or 0)")
    avg_cpu = known(6)
    if avg_cpu is None:
        problems.append("average CPU time unknown (-1)")
    code = -1 if v[10] is None else int(v[10])
    status, failure_mode = {1: ("success", None), 0: ("failed", None)}.get(code, (None, None))
    if code == 5:
        status, failure_mode = "failed", "cancelled"
    if status is None and code != -1:
        problems.append(f"status {code} is a partial-execution record, not a job's outcome")

    submit = None if submit_rel is None else origin + submit_rel
    start = None if submit is None or wait is None else submit + wait
    end = None if start is None or run is None else start + run
    queue_no = fields[14] if known(15) is not None else None
    queue = queues.get(queue_no, queue_no) if queue_no else None
    partition = fields[15] if known(16) is not None else None
    group = fields[12] if known(13) is not None else None
    item = make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=SOURCE_FORMAT,
        job_id=f"{site}:{stem}:{fields[0]}" if site != stem else f"{stem}:{fields[0]}",
        site=site,
        host=host or (partitions.get(partition, partition) if partition else None),
        vo=vo or group,
        queue=queue,
        job_type=queue,
        cores=int(procs) if procs else None,
        submit=submit,
        start=start,
        end=end,
        wall=run,
        cpu_total=None if avg_cpu is None or not procs else avg_cpu * procs,
        status=status,
        failure_mode=failure_mode,
        fill_unknown=fill_unknown,
        problems=problems,
    )
    if isinstance(item, dict):
        extra = ["cores"] if procs_defaulted else []
        if unix_start is None:
            extra += ["submit_time", "start_time", "end_time"]
        item["defaulted_fields"] = extra + item["defaulted_fields"]
    return item
