"""SUPReMM job summaries (Open XDMoD job performance module, summarised from PCP) -> ``grid.jobs``.

A summary is one JSON document per job, as the ``supremm`` summariser writes it to MongoDB
(``_id`` ``<job id>-<end time>``): an ``acct`` block from the resource manager (``local_job_id``,
``user``, ``group``, ``account``, ``partition``, ``ncpus``, ``nodes``, ``host_list``, ``submit``,
``start_time``, ``end_time`` epoch seconds, ``exit_status``, ``exit_code``, ...) and one section
per summariser plugin, each holding statistics (``avg``, ``cnt``, ``min``, ``max``, ...) over
nodes or cores. The file may hold one document, a JSON array of them, or one per line
(``mongoexport``); documents are decoded one at a time.

Mapping: job_id ``<site>:<acct.resource_id>:<_id>`` (``<local_job_id>-<end_time>`` when there is
no ``_id``; resource_id, XDMoD's resource number, omitted when absent); site ``site=`` (a summary
names no grid site); host the first of ``acct.host_list``, else ``host=``; vo ``vo=``, else
``acct.account``, else ``acct.group`` (as the Slurm adapter; placeholders such as ``Unknown``
ignored); queue ``acct.partition``; cores ``acct.ncpus``; submit / start / end ``acct.submit`` /
``start_time`` / ``end_time``; wall end - start (what XDMoD uses). Outcome from
``acct.exit_status``: a Slurm state as in the Slurm adapter (COMPLETED success; FAILED, TIMEOUT,
CANCELLED, ... failed with its failure mode) or a number (0 success, else ``nonzero-exit``);
exit_code from ``acct.exit_code`` (``exit:signal``; killed by a signal -> 128 + signal).

CPU: plugin ``cpu`` gives, for every core, the fraction of the core's time spent in user and in
system mode between the first and last sample of the job; ``cpu.jobcpus`` covers the cores
allocated to the job, ``cpu.nodecpus`` every core of its nodes. cpu_user_seconds =
``user.avg`` x ``user.cnt`` (the sum of the per-core fractions) x wall, cpu_system_seconds the
same with ``system`` (XDMoD's cpu_user times cores times wall). ``jobcpus`` is used; when it is
missing (an error: the job's cpuset was not recorded), ``nodecpus`` is used only when it counts
exactly ``acct.ncpus`` cores, i.e. the job had its nodes' cores to itself; otherwise the CPU time
is unknown and the summary is rejected. A summary with ``summarization.complete`` false (data of
some nodes missing) is rejected: its statistics do not cover the whole job.

I/O: input_bytes / output_bytes are the bytes read / written through the shared filesystems the
summary covers: ``gpfs`` (``read_bytes`` / ``write_bytes`` of every filesystem) plus ``nfs``
(``read-normal`` + ``read-direct`` / ``write-normal`` + ``write-direct`` of every mount: what
applications read and wrote, not the wire traffic ``*-server``), each ``avg`` x ``cnt`` (per-node
totals over the job, summed over nodes). These are node-wide counters: they are the job's own only
when it held all cores of its nodes (``cpu.nodecpus`` counts ``acct.ncpus`` cores); otherwise,
and when a section reports an error or the summary has a ``lustre`` section (not summed here),
both stay null.
Not mapped: max_rss_mb (``memory.used*`` are node-wide time averages per core, not the job's
peak; ``process_memory`` is the job cgroup's memory including page cache, not resident set size),
local disks (``block``: node-wide, operating system included), network and Infiniband traffic,
cpu_model, job_type, task_id (``acct.jobname`` is the batch job's name), events, read time,
benchmark; performance counters, ``catastrophe``, GPU, power, ``procDump``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gridlake.sources.base import Item, Rejected, make_job, to_float, to_int
from gridlake.sources.htcondor import iter_json_ads
from gridlake.sources.slurm import FAILED_STATES

SOURCE_FORMAT = "supremm"

PLACEHOLDERS = {"", "unknown", "none", "null", "n/a"}
FS_READ = {"gpfs": ("read_bytes",), "nfs": ("read-normal", "read-direct")}
FS_WRITE = {"gpfs": ("write_bytes",), "nfs": ("write-normal", "write-direct")}


def read_supremm(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """SUPReMM/XDMoD job summary documents (JSON, array or JSON lines; plain or .gz)."""
    path = Path(path)
    for number, line, raw, doc in iter_json_ads(path):
        location = f"document {number} (line {line})"
        if isinstance(doc, str):
            yield Rejected(str(path), location, doc, raw)
            continue
        yield summary_to_job(
            doc, raw=raw, source=str(path), location=location, site=site, host=host, vo=vo,
            fill_unknown=fill_unknown,
        )  # fmt: skip


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return None if text.lower() in PLACEHOLDERS else text


def _stat_sum(section: Any, metric: str) -> float | None:
    """``avg`` x ``cnt`` of ``section[metric]``; None if the statistic is not there."""
    stats = section.get(metric) if isinstance(section, dict) else None
    if not isinstance(stats, dict):
        return None
    avg, cnt = to_float(stats.get("avg")), to_int(stats.get("cnt"))
    if avg is None or cnt is None or avg < 0 or cnt < 0:
        return None
    return avg * cnt


def cpu_seconds(doc: dict[str, Any], ncpus: int | None, wall: float) -> tuple[float, float] | str:
    """(user, system) CPU seconds of the job's cores, or the reason they are unknown."""
    cpu = doc.get("cpu")
    if not isinstance(cpu, dict):
        return "no cpu section"
    job, node = cpu.get("jobcpus"), cpu.get("nodecpus")
    if isinstance(job, dict) and "error" not in job:
        chosen = job
    elif isinstance(node, dict) and "error" not in node and ncpus is not None:
        cores = to_int((node.get("all") or {}).get("cnt"))
        if cores != ncpus:
            return (
                f"cpu.jobcpus unavailable and cpu.nodecpus counts {cores} cores, not the job's "
                f"{ncpus}: the job's CPU time is unknown"
            )
        chosen = node
    else:
        return "no usable cpu.jobcpus or cpu.nodecpus statistics"
    user, system = _stat_sum(chosen, "user"), _stat_sum(chosen, "system")
    if user is None or system is None:
        return "cpu statistics without user/system avg and cnt"
    return round(user * wall, 3), round(system * wall, 3)


def filesystem_bytes(doc: dict[str, Any], ncpus: int | None) -> tuple[int | None, int | None]:
    """(read, written) bytes through GPFS and NFS when they are the job's own; else nulls."""
    node = (doc.get("cpu") or {}).get("nodecpus")
    node_cores = to_int((node.get("all") or {}).get("cnt")) if isinstance(node, dict) else None
    if ncpus is None or node_cores != ncpus or "lustre" in doc:
        return None, None
    sections = {name: doc[name] for name in FS_READ if name in doc}
    if not sections:
        return None, None
    totals: list[int | None] = []
    for metrics in (FS_READ, FS_WRITE):
        total = 0.0
        for name, section in sections.items():
            if not isinstance(section, dict) or "error" in section:
                return None, None
            for device in section.values():
                for metric in metrics[name]:
                    value = _stat_sum(device, metric)
                    if value is None:
                        return None, None
                    total += value
        totals.append(round(total))
    return totals[0], totals[1]


def summary_to_job(
    doc: dict[str, Any],
    *,
    raw: str,
    source: str,
    location: str,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Item:
    """One summary document -> ``grid.jobs`` dict or Rejected."""
    acct = doc.get("acct")
    if not isinstance(acct, dict):
        return Rejected(source, location, "no acct block: not a SUPReMM job summary", raw)
    problems: list[str] = []

    def epoch(name: str) -> int | None:
        value = acct.get(name)
        if value is None:
            return None
        number = to_int(value)
        if number is None:
            problems.append(f"acct.{name} {value!r} is not an integer")
        return number if number else None

    submit, start, end = epoch("submit"), epoch("start_time"), epoch("end_time")
    ncpus = to_int(acct.get("ncpus"))
    if acct.get("ncpus") is not None and ncpus is None:
        problems.append(f"acct.ncpus {acct.get('ncpus')!r} is not an integer")
    if start is not None and end is not None and end < start:
        return Rejected(source, location, "end_time before start_time", raw)

    summary = doc.get("summarization")
    if isinstance(summary, dict) and summary.get("complete") is False:
        problems.append("summary incomplete (summarization.complete is false)")

    wall = None if start is None or end is None else float(end - start)
    cpu_user = cpu_system = None
    read = written = None
    if wall is not None:
        cpu = cpu_seconds(doc, ncpus, wall)
        if isinstance(cpu, str):
            problems.append(cpu)
        else:
            cpu_user, cpu_system = cpu
        read, written = filesystem_bytes(doc, ncpus)

    # Outcome
    status: str | None = None
    failure_mode = None
    state = acct.get("exit_status")
    if isinstance(state, int | float) and not isinstance(state, bool):
        status = "success" if state == 0 else "failed"
        failure_mode = None if state == 0 else "nonzero-exit"
    elif _text(state):
        name = str(state).split(" ")[0].upper()  # "CANCELLED by 123"
        if name == "COMPLETED":
            status = "success"
        elif name in FAILED_STATES:
            status, failure_mode = "failed", FAILED_STATES[name]
        else:
            status = f"exit_status {name}"
    exit_code = None
    if _text(acct.get("exit_code")):
        code, _, signal = str(acct["exit_code"]).partition(":")
        exit_code, sig = to_int(code), to_int(signal)
        if exit_code == 0 and sig:
            exit_code = 128 + sig

    doc_id = _text(doc.get("_id"))
    local = _text(acct.get("local_job_id")) or _text(acct.get("id"))
    if doc_id is None and local and end:
        doc_id = f"{local}-{end}"
    resource = _text(acct.get("resource_id"))
    job_id = None
    if doc_id:
        job_id = f"{site or ''}:{resource}:{doc_id}" if resource else f"{site or ''}:{doc_id}"
    hosts = acct.get("host_list")
    first_host = _text(hosts[0]) if isinstance(hosts, list) and hosts else None
    return make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=SOURCE_FORMAT,
        job_id=job_id,
        site=site,
        host=first_host or host,
        vo=vo or _text(acct.get("account")) or _text(acct.get("group")),
        queue=_text(acct.get("partition")),
        cores=ncpus,
        submit=submit,
        start=start,
        end=end,
        wall=wall,
        cpu_user=cpu_user,
        cpu_system=cpu_system,
        input_bytes=read,
        output_bytes=written,
        status=status,
        exit_code=exit_code,
        failure_mode=failure_mode,
        fill_unknown=fill_unknown,
        problems=problems,
    )
