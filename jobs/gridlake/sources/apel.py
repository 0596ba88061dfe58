"""APEL accounting messages -> ``grid.accounting_summaries`` and ``grid.jobs``.

Both message kinds are text: a header line (``APEL-summary-job-message: v0.3`` or
``APEL-individual-job-message: v0.4``), then records of ``Key: Value`` lines, each record ended
by a line ``%%``. A file may hold several messages (the header may repeat).

Summary messages (v0.2, v0.3, v0.4; ``read_apel_summaries``) -> ``grid.accounting_summaries``
(``schemas/grid.accounting_summaries.schema.json``): one record per site, month, VO, user and
the other grouping fields. Mandatory, as in APEL: Site, Month, Year, WallDuration, CpuDuration,
NumberOfJobs; the rest are null when absent. ``Infrastructure`` or ``InfrastructureType`` ->
infrastructure; ``EarliestEndTime``/``LatestEndTime`` (epoch seconds or ISO) -> RFC 3339;
``NormalisedWallDuration``/``NormalisedCpuDuration`` (present in OSG/GRACC messages: duration x
the site's HS06 per core) are kept as given. VOGroup/VORole come from their fields, else from
``FQAN``. A v0.4 ``ServiceLevel: {hepscore23: 10.2, hepspec: 9.6}`` gives its first pair.

Individual job messages (v0.2, v0.3, v0.4; ``read_apel_jobs``) -> ``grid.jobs``: job_id
``<Site>:<SubmitHost or MachineName>:<LocalJobId>:<EndTime>`` (APEL's own record id is
MachineName + LocalJobId + EndTime); vo ``VO`` or the VO of ``FQAN``, else ``vo=``; host ``host=``
(``MachineName`` is the batch server, not the worker node); queue ``Queue``; cores
``Processors`` (0 = unknown); wall ``WallDuration``; CPU ``CpuDuration`` (total: user and system
are not separated); start/end ``StartTime``/``EndTime``; max_rss_mb ``MemoryReal`` (KB) / 1024;
benchmark ``ServiceLevelType`` HEPSPEC -> hs06, HEPscore23 -> hs23 (si2k is not a contract
benchmark: left null) with ``ServiceLevel`` per core. APEL job records carry neither a submit
time nor the outcome: they are rejected unless ``fill_unknown=True`` (``base.make_job``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from gridlake.sources.base import (
    Item,
    Rejected,
    make_job,
    number,
    open_text,
    parse_fqan,
    rfc3339,
    to_float,
    to_int,
)

SUMMARY_FORMAT = "apel-summary"
JOB_FORMAT = "apel"
_HEADER = re.compile(r"APEL-(summary|individual)-job-message:\s*(v[\d.]+)\s*\Z", re.I)
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9_]*)\s*:\s?(.*?)\s*\Z")

SUMMARY_MANDATORY = ("Site", "Month", "Year", "WallDuration", "CpuDuration", "NumberOfJobs")
JOB_MANDATORY = ("Site", "LocalJobId", "WallDuration", "CpuDuration", "StartTime", "EndTime")
_BENCHMARKS = {"hepspec": "hs06", "hs06": "hs06", "hepscore23": "hs23", "hs23": "hs23"}


def iter_records(
    path: Path,
) -> Iterator[tuple[int, int, str, str | None, dict[str, str] | str]]:
    """Records of an APEL message file: (number, first line, raw text, header kind, fields or
    error). Header kind is ``summary``, ``individual`` or None (no header seen)."""
    kind: str | None = None
    version: str | None = None
    number_ = 0
    block: list[str] = []
    start = 0

    def flush() -> tuple[int, int, str, str | None, dict[str, str] | str]:
        fields: dict[str, str] = {}
        error: str | None = None
        for offset, line in enumerate(block):
            text = line.strip()
            if not text:
                continue
            match = _KEY.match(text)
            if not match:
                error = f"line {start + offset}: not 'Key: Value'"
                break
            if match.group(1) in fields:
                error = f"line {start + offset}: {match.group(1)} repeated (missing '%%'?)"
                break
            fields[match.group(1)] = match.group(2)
        if version is not None and error is None:
            fields.setdefault("_version", version)
        return number_, start, "".join(block), kind, error if error is not None else fields

    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            header = _HEADER.match(text)
            if header and not block:
                kind, version = header.group(1).lower(), header.group(2)
                continue
            if text == "%%":
                if block:
                    yield flush()
                    block = []
                continue
            if not block:
                if not text:
                    continue
                number_ += 1
                start = lineno
            block.append(line)
        if any(x.strip() for x in block):
            yield flush()


def _epoch(value: str | None) -> float | None:
    if value is None or not value.strip():
        return None
    epoch = to_float(value)
    if epoch is not None:
        return epoch
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo else None


def _service_level(fields: dict[str, str]) -> tuple[str | None, float | None, str | None]:
    """(type, value, problem) from ServiceLevelType/ServiceLevel or a v0.4 ``{k: v}`` map."""
    level = fields.get("ServiceLevel", "").strip()
    level_type = fields.get("ServiceLevelType", "").strip() or None
    if not level:
        return level_type, None, None
    if level.startswith("{"):
        pairs = [p for p in level.strip("{}").split(",") if p.strip()]
        if not pairs or ":" not in pairs[0]:
            return None, None, f"ServiceLevel {level!r} is not a {{type: value}} map"
        key, _, value = pairs[0].partition(":")
        level_type, level = key.strip().strip("'\""), value.strip()
    value = to_float(level)
    if value is None:
        return level_type, None, f"ServiceLevel {level!r} is not a number"
    return level_type, value, None


def _wrong_kind(path: Path, kind: str | None, wanted: str, hint: str) -> Rejected | None:
    if kind is not None and kind != wanted:
        return Rejected(str(path), "header", f"an APEL {kind} message file: use format {hint}", "")
    return None


def read_apel_summaries(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
) -> Iterator[Item]:
    """Stream APEL summary messages -> ``grid.accounting_summaries`` dicts.

    ``site=``/``vo=`` fill Site/VO only where a record lacks them; ``host`` is unused.
    """
    path = Path(path)
    for number_, first, raw, kind, fields in iter_records(path):
        location = f"record {number_} (line {first})"
        wrong = _wrong_kind(path, kind, "summary", "apel-job")
        if wrong is not None:
            yield wrong
            return
        if isinstance(fields, str):
            yield Rejected(str(path), location, fields, raw)
            continue
        yield summary_record(fields, raw, str(path), location, site, vo)


def summary_record(
    fields: dict[str, str],
    raw: str,
    source: str,
    location: str,
    site: str | None = None,
    vo: str | None = None,
) -> Item:
    """One summary record's fields -> ``grid.accounting_summaries`` dict or Rejected."""
    problems: list[str] = []
    if site and not fields.get("Site"):
        fields["Site"] = site
    missing = [k for k in SUMMARY_MANDATORY if not fields.get(k, "").strip()]
    if missing:
        problems.append(f"missing {', '.join(missing)}")

    def integer(key: str) -> int | None:
        value = fields.get(key, "").strip()
        if not value:
            return None
        result = to_int(value)
        if result is None:
            problems.append(f"{key} {value!r} is not an integer")
        return result

    def real(key: str) -> float | int | None:
        value = fields.get(key, "").strip()
        if not value:
            return None
        result = to_float(value)
        if result is None:
            problems.append(f"{key} {value!r} is not a number")
            return None
        return number(result)

    month, year = integer("Month"), integer("Year")
    if month is not None and not 1 <= month <= 12:
        problems.append(f"Month {month} out of range")
    counts = {k: integer(k) for k in ("WallDuration", "CpuDuration", "NumberOfJobs")}
    for key, value in counts.items():
        if value is not None and value < 0:
            problems.append(f"negative {key}")
    ends = {}
    for key in ("EarliestEndTime", "LatestEndTime"):
        ends[key] = _epoch(fields.get(key))
        if fields.get(key, "").strip() and ends[key] is None:
            problems.append(f"{key} {fields[key]!r} is not a time")
    if (
        ends["EarliestEndTime"] is not None
        and ends["LatestEndTime"] is not None
        and ends["LatestEndTime"] < ends["EarliestEndTime"]
    ):
        problems.append("latest_end_time before earliest_end_time")
    level_type, level, level_problem = _service_level(fields)
    if level_problem:
        problems.append(level_problem)
    node_count, processors = integer("NodeCount"), integer("Processors")
    normalised = {k: real(k) for k in ("NormalisedWallDuration", "NormalisedCpuDuration")}
    if problems:
        return Rejected(source, location, "; ".join(problems), raw)

    fqan = fields.get("FQAN", "").strip()
    fq_vo, fq_group, fq_role = parse_fqan(fqan) if fqan else (None, None, None)
    record_vo = fields.get("VO", "").strip() or fq_vo or vo
    vo_group = fields.get("VOGroup", "").strip() or fq_group
    vo_role = fields.get("VORole", "").strip() or fq_role
    user = fields.get("GlobalUserName", "").strip() or None
    submit_host = fields.get("SubmitHost", "").strip() or None
    infrastructure = (
        fields.get("Infrastructure", "").strip()
        or fields.get("InfrastructureType", "").strip()
        or None
    )
    key = "|".join(
        str(x if x is not None else "")
        for x in (
            f"{year:04d}-{month:02d}",
            fields["Site"].strip(),
            record_vo,
            vo_group,
            vo_role,
            user,
            submit_host,
            infrastructure,
            node_count,
            processors,
            level_type,
            level,
        )
    )
    return {
        "summary_key": key,
        "site": fields["Site"].strip(),
        "month": month,
        "year": year,
        "vo": record_vo or None,
        "vo_group": vo_group,
        "vo_role": vo_role,
        "global_user_name": user,
        "submit_host": submit_host,
        "infrastructure": infrastructure,
        "node_count": node_count,
        "processors": processors,
        "earliest_end_time": None
        if ends["EarliestEndTime"] is None
        else rfc3339(ends["EarliestEndTime"]),
        "latest_end_time": None
        if ends["LatestEndTime"] is None
        else rfc3339(ends["LatestEndTime"]),
        "wall_duration_seconds": counts["WallDuration"],
        "cpu_duration_seconds": counts["CpuDuration"],
        "normalised_wall_duration": normalised["NormalisedWallDuration"],
        "normalised_cpu_duration": normalised["NormalisedCpuDuration"],
        "number_of_jobs": counts["NumberOfJobs"],
        "service_level_type": level_type,
        "service_level": level,
        "message_version": fields.get("_version"),
        "source_format": SUMMARY_FORMAT,
        "raw": raw,
    }


def read_apel_jobs(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """Stream APEL individual job messages -> ``grid.jobs`` dicts."""
    path = Path(path)
    for number_, first, raw, kind, fields in iter_records(path):
        location = f"record {number_} (line {first})"
        wrong = _wrong_kind(path, kind, "individual", "apel-summary")
        if wrong is not None:
            yield wrong
            return
        if isinstance(fields, str):
            yield Rejected(str(path), location, fields, raw)
            continue
        yield job_record(fields, raw, str(path), location, site, host, vo, fill_unknown)


def job_record(
    fields: dict[str, str],
    raw: str,
    source: str,
    location: str,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Item:
    """One individual job record's fields -> ``grid.jobs`` dict or Rejected."""

    def get(key: str) -> str | None:
        value = fields.get(key, "").strip()
        return value if value and value.lower() != "none" else None

    problems: list[str] = []
    missing = [k for k in JOB_MANDATORY if not get(k)]
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    values: dict[str, float | None] = {}
    for key in ("WallDuration", "CpuDuration", "Processors", "MemoryReal"):
        values[key] = to_float(get(key)) if get(key) else None
        if get(key) and values[key] is None:
            problems.append(f"{key} {get(key)!r} is not a number")
    start, end = _epoch(get("StartTime")), _epoch(get("EndTime"))
    for key, value in (("StartTime", start), ("EndTime", end)):
        if get(key) and value is None:
            problems.append(f"{key} {get(key)!r} is not a time")
    level_type, level, level_problem = _service_level(fields)
    if level_problem:
        problems.append(level_problem)
    benchmark = _BENCHMARKS.get((level_type or "").lower())

    fqan = get("FQAN")
    record_vo = get("VO") or (parse_fqan(fqan)[0] if fqan else None) or vo
    record_site = get("Site") or site
    origin = get("SubmitHost") or get("MachineName") or "unknown"
    local_id = get("LocalJobId")
    job_id = (
        f"{record_site}:{origin}:{local_id}:{get('EndTime')}" if record_site and local_id else None
    )
    processors = values["Processors"]
    memory = values["MemoryReal"]
    return make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=JOB_FORMAT,
        job_id=job_id,
        site=record_site,
        host=host,
        vo=record_vo,
        queue=get("Queue"),
        cores=int(processors) if processors else None,
        submit=None,
        start=start,
        end=end,
        wall=values["WallDuration"],
        cpu_total=values["CpuDuration"],
        max_rss_mb=None if not memory else memory / 1024,
        status=None,
        benchmark_type=benchmark,
        benchmark_per_core=level if benchmark else None,
        fill_unknown=fill_unknown,
        problems=problems,
    )
