"""HTCondor job history -> ``grid.jobs``.

Three inputs:

- ``condor_history -l`` (``read_condor_history``): job ClassAds as ``Attr = value`` lines, one ad
  per blank-line separated block. Values are ClassAd literals (strings, integers, reals,
  booleans, ``undefined``) or expressions, kept as their text.
- ``condor_history -json`` (``read_condor_history_json``): a JSON array of ads (or ads one after
  the other, as ``-jsonl`` writes them). Parsed incrementally with ``json.JSONDecoder.raw_decode``
  over 64 KiB chunks, so memory holds one ad, not the file. Limit: one ad may not exceed
  ``JSON_AD_LIMIT`` (16 MiB); a malformed ad is rejected and reading resumes at the next line
  that starts with ``{``.
- The pipe-separated lines APEL's ``htcondor_acc.sh`` writes (``read_apel_condor_lines``):
  ``GlobalJobId|Owner|RemoteWallClockTime|RemoteUserCpu|RemoteSysCpu|JobStartDate|
  EnteredCurrentStatus|ResidentSetSize_RAW|ImageSize_RAW|RequestCpus[|scaling]``. They carry no
  submit time and no outcome, so they are rejected unless ``fill_unknown=True`` (see
  ``base.make_job``); APEL's optional scaling factor (11th field) is not applied: seconds stay
  real seconds.

Attribute mapping (names are case-insensitive, as in ClassAds):

- job_id: ``GlobalJobId``, else ``<ClusterId>.<ProcId>@<ScheddName or site>``; attempt:
  ``NumJobStarts`` (condor_history keeps the last attempt of a job, so one record per job).
- site: ``MATCH_EXP_JOB_GLIDEIN_Site``, ``JOB_Site``, ``MachineAttrGLIDEIN_Site0`` (unexpanded
  ``$$(...)`` and ``Unknown`` ignored), else ``site=``.
- host: ``LastRemoteHost``, ``RemoteHost``, ``MachineAttrMachine0`` (slot prefix ``slot1@...@``
  removed), else ``host=``. cpu_model: ``MachineAttrCPUModel0``.
- vo: ``x509UserProxyVOName``, else the VO of ``x509UserProxyFirstFQAN``, else ``vo=``, else
  ``AcctGroup`` (``group_cms.prod`` -> ``cms``), else ``Owner`` (a local account: last resort).
- queue: ``MATCH_EXP_JOB_GLIDEIN_SiteWMS_Queue`` (the pilot's batch queue or CE); task_id:
  ``CRAB_Workflow`` or ``JobBatchName``; job_type: ``CMS_JobType`` lower-cased.
- cores: ``CpusProvisioned``, else ``RequestCpus`` when it is a number (not an expression).
- submit ``QDate``; start ``JobCurrentStartDate`` (this attempt), else ``JobStartDate``; end
  ``CompletionDate`` (> 0), else ``EnteredCurrentStatus`` for removed jobs.
- wall ``RemoteWallClockTime`` (cumulative over restarts, like the CPU times), else end - start;
  cpu ``RemoteUserCpu`` / ``RemoteSysCpu``.
- max_rss_mb ``ResidentSetSize_RAW`` (else ``ResidentSetSize``) KiB / 1024; input/output bytes
  ``BytesRecvd`` / ``BytesSent`` (file transfer).
- outcome: ``JobStatus`` 4 (completed; or no JobStatus but ``CompletionDate`` > 0) with
  ``ExitBySignal`` false and ``ExitCode`` (else ``ExitStatus``) 0 -> success; non-zero exit ->
  failed/``nonzero-exit``; killed by a signal -> failed/``signal``, exit code 128 + signal;
  ``JobStatus`` 3 (removed) -> failed/``removed``, or ``held:N`` when the job was on hold with
  ``HoldReasonCode`` N when it was removed (34 JobOutOfResources, 12/13 output/input transfer,
  ...: the failure-cause rules map them, gridlake.reference.failure_causes). Any other JobStatus
  is not a finished job and is rejected.
Not mapped (no attribute for it in job ads): events, read_time_seconds, benchmark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gridlake.sources.base import (
    Item,
    Rejected,
    make_job,
    open_text,
    parse_fqan,
    to_float,
    to_int,
)

SOURCE_FORMAT = "htcondor"
JSON_CHUNK = 64 * 1024
JSON_AD_LIMIT = 16 * 1024 * 1024

_ATTR_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*=\s?(.*?)\s*\Z", re.S)
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"\Z', re.S)
_INT = re.compile(r"[+-]?\d+\Z")
_REAL = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?\Z")
_UNESCAPED_QUOTE = re.compile(r'(?<!\\)"')


class ClassAdSyntaxError(ValueError):
    pass


def parse_value(text: str) -> Any:
    """One ClassAd value: str, int, float, bool, None (``undefined``), or the expression text."""
    text = text.strip()
    match = _STRING.match(text)
    if match:
        return match.group(1).replace('\\"', '"').replace("\\\\", "\\")
    if _INT.match(text):
        return int(text)
    if _REAL.match(text):
        return float(text)
    lower = text.lower()
    if lower in ("true", "false"):
        return lower == "true"
    if lower == "undefined":
        return None
    if len(_UNESCAPED_QUOTE.findall(text)) % 2:
        raise ClassAdSyntaxError(f"unterminated string in {text[:60]!r}")
    return text  # an expression (or `error`): kept verbatim


def parse_ad_lines(lines: list[str], first_line: int) -> dict[str, Any]:
    """``Attr = value`` lines -> {lower-case attribute: value}; raises ClassAdSyntaxError."""
    ad: dict[str, Any] = {}
    for offset, line in enumerate(lines):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        match = _ATTR_LINE.match(text)
        if not match:
            raise ClassAdSyntaxError(f"line {first_line + offset}: not 'Attr = value'")
        name = match.group(1).lower()
        if name in ad:
            raise ClassAdSyntaxError(
                f"line {first_line + offset}: attribute {match.group(1)} repeated "
                "(two ads without a blank line between them?)"
            )
        try:
            ad[name] = parse_value(match.group(2))
        except ClassAdSyntaxError as exc:
            raise ClassAdSyntaxError(f"line {first_line + offset}: {exc}") from None
    return ad


def iter_long_ads(path: Path) -> Iterator[tuple[int, int, str, dict[str, Any] | str]]:
    """Blocks of a ``-l`` file: (ad number, first line, raw text, ad dict or error reason)."""
    number = 0
    block: list[str] = []
    start = 0

    def flush() -> tuple[int, int, str, dict[str, Any] | str]:
        try:
            parsed: dict[str, Any] | str = parse_ad_lines(block, start)
        except ClassAdSyntaxError as exc:
            parsed = str(exc)
        return number, start, "".join(block), parsed

    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            stripped = line.strip()
            if not stripped or (not block and (stripped.startswith("-- ") or line[0] == "#")):
                if block:
                    yield flush()
                    block = []
                continue
            if not block:
                number += 1
                start = lineno
            block.append(line)
        if block:
            yield flush()


def iter_json_ads(path: Path) -> Iterator[tuple[int, int, str, dict[str, Any] | str]]:
    """Objects of a ``-json`` array (or JSON lines): (ad number, first line, raw, ad or error)."""
    decoder = json.JSONDecoder()
    buf = ""
    pos = 0
    line = 1
    number = 0
    eof = False
    with open_text(path) as fh:

        def more() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            chunk = fh.read(JSON_CHUNK)
            if not chunk:
                eof = True
                return False
            buf = buf[pos:] + chunk
            pos = 0
            return True

        while True:
            # Skip whitespace and the array's punctuation between ads.
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n[],":
                    if buf[pos] == "\n":
                        line += 1
                    pos += 1
                if pos < len(buf) or not more():
                    break
            if pos >= len(buf):
                return
            number += 1
            first = line
            error: str | None = None
            if buf[pos] == "{":
                while True:
                    try:
                        value, end = decoder.raw_decode(buf, pos)
                    except json.JSONDecodeError as exc:
                        truncated = exc.pos >= len(buf) - 1 or exc.msg.startswith("Unterminated")
                        if truncated and len(buf) - pos < JSON_AD_LIMIT and more():
                            continue
                        error = f"invalid JSON: {exc.msg} (line {first + exc.lineno - 1})"
                        break
                    text = buf[pos:end]
                    line += text.count("\n")
                    pos = end
                    if isinstance(value, dict):
                        yield number, first, text, {k.lower(): v for k, v in value.items()}
                    else:
                        yield number, first, text, "not a JSON object"
                    break
            else:
                error = f"expected '{{' at the start of an ad, found {buf[pos]!r}"
            if error is not None:
                # Resynchronise at the next line that starts with '{'.
                while True:
                    nxt = buf.find("\n{", pos + 1)
                    if nxt >= 0 or len(buf) - pos >= JSON_AD_LIMIT or not more():
                        break
                end = len(buf) if nxt < 0 else nxt + 1
                text = buf[pos:end]
                line += text.count("\n")
                pos = end
                yield number, first, text, error


# --------------------------------------------------------------------------------------------
# Mapping
# --------------------------------------------------------------------------------------------


def _text(ad: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = ad.get(name.lower())
        if isinstance(value, str) and value.strip():
            value = value.strip()
            if value.startswith("$$(") or value.lower() in ("unknown", "undefined"):
                continue
            return value
    return None


def _epoch(ad: dict[str, Any], *names: str) -> float | None:
    for name in names:
        value = to_float(ad.get(name.lower()))
        if value is not None and value > 0:
            return value
    return None


def _host(value: str | None) -> str | None:
    if not value:
        return None
    return value.rsplit("@", 1)[-1] or None


def ad_to_job(
    ad: dict[str, Any],
    *,
    source: str,
    location: str,
    raw: str,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
    source_format: str = SOURCE_FORMAT,
) -> Item:
    """One job ad (attribute names lower-cased) -> ``grid.jobs`` dict or Rejected."""
    get = ad.get
    problems: list[str] = []

    job_site = (
        _text(ad, "MATCH_EXP_JOB_GLIDEIN_Site", "JOB_Site", "MachineAttrGLIDEIN_Site0") or site
    )
    job_id = _text(ad, "GlobalJobId")
    if job_id is None:
        cluster, proc = to_int(get("clusterid")), to_int(get("procid"))
        where = _text(ad, "ScheddName") or job_site
        if cluster is not None and proc is not None and where:
            job_id = f"{cluster}.{proc}@{where}"

    job_vo = _text(ad, "x509UserProxyVOName")
    if job_vo is None and _text(ad, "x509UserProxyFirstFQAN"):
        job_vo = parse_fqan(_text(ad, "x509UserProxyFirstFQAN") or "")[0]
    if job_vo is None:
        job_vo = vo
    if job_vo is None and _text(ad, "AcctGroup"):
        group = _text(ad, "AcctGroup") or ""
        job_vo = group.removeprefix("group_").split(".")[0] or None
    if job_vo is None:
        job_vo = _text(ad, "Owner")

    # Outcome
    status: str | None
    failure_mode: str | None = None
    exit_code: int | None = None
    job_status = to_int(get("jobstatus"))
    completed = job_status == 4 or (job_status is None and (_epoch(ad, "CompletionDate") or 0) > 0)
    if completed:
        if get("exitbysignal") is True:
            status, failure_mode = "failed", "signal"
            signal = to_int(get("exitsignal"))
            exit_code = None if signal is None else 128 + signal
        else:
            exit_code = to_int(get("exitcode"))
            if exit_code is None:
                exit_code = to_int(get("exitstatus"))
            if exit_code is None:
                status = None
            elif exit_code == 0:
                status = "success"
            else:
                status, failure_mode = "failed", "nonzero-exit"
    elif job_status == 3:
        hold_code = to_int(get("holdreasoncode"))
        status, failure_mode = "failed", "removed" if hold_code is None else f"held:{hold_code}"
        exit_code = to_int(get("exitcode"))
    elif job_status is None:
        status = None
    else:
        status = f"JobStatus {job_status}"

    start = _epoch(ad, "JobCurrentStartDate", "JobStartDate")
    end = _epoch(ad, "CompletionDate")
    if end is None and job_status == 3:
        end = _epoch(ad, "EnteredCurrentStatus")
    wall = to_float(get("remotewallclocktime"))

    cores = to_int(get("cpusprovisioned"))
    if cores is None:
        cores = to_int(get("requestcpus"))
    rss_kib = to_float(get("residentsetsize_raw"))
    if rss_kib is None:
        rss_kib = to_float(get("residentsetsize"))
    recvd, sent = to_float(get("bytesrecvd")), to_float(get("bytessent"))
    job_type = _text(ad, "CMS_JobType")

    return make_job(
        source=source,
        location=location,
        raw=raw,
        source_format=source_format,
        job_id=job_id,
        site=job_site,
        host=_host(_text(ad, "LastRemoteHost", "RemoteHost", "MachineAttrMachine0")) or host,
        vo=job_vo,
        cpu_model=_text(ad, "MachineAttrCPUModel0"),
        job_type=job_type.lower() if job_type else None,
        queue=_text(ad, "MATCH_EXP_JOB_GLIDEIN_SiteWMS_Queue"),
        task_id=_text(ad, "CRAB_Workflow", "JobBatchName"),
        attempt=(to_int(get("numjobstarts")) or None),
        cores=cores,
        submit=_epoch(ad, "QDate"),
        start=start,
        end=end,
        wall=wall,
        cpu_user=to_float(get("remoteusercpu")),
        cpu_system=to_float(get("remotesyscpu")),
        max_rss_mb=None if rss_kib is None else rss_kib / 1024,
        input_bytes=None if recvd is None else int(recvd),
        output_bytes=None if sent is None else int(sent),
        status=status,
        exit_code=exit_code,
        failure_mode=failure_mode,
        fill_unknown=fill_unknown,
        problems=problems,
    )


def _read_ads(
    ads: Iterator[tuple[int, int, str, dict[str, Any] | str]],
    path: Path,
    site: str | None,
    host: str | None,
    vo: str | None,
    fill_unknown: bool,
) -> Iterator[Item]:
    for number, first, raw, ad in ads:
        location = f"ad {number} (line {first})"
        if isinstance(ad, str):
            yield Rejected(str(path), location, ad, raw)
            continue
        try:
            yield ad_to_job(
                ad,
                source=str(path),
                location=location,
                raw=raw,
                site=site,
                host=host,
                vo=vo,
                fill_unknown=fill_unknown,
            )
        except Exception as exc:  # one ad's surprise never aborts the file: it is dead-lettered
            yield Rejected(str(path), location, f"cannot convert: {type(exc).__name__}: {exc}", raw)


def read_condor_history(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """Stream ``condor_history -l`` output (plain or .gz)."""
    path = Path(path)
    yield from _read_ads(iter_long_ads(path), path, site, host, vo, fill_unknown)


def read_condor_history_json(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """Stream ``condor_history -json`` (or ``-jsonl``) output (plain or .gz)."""
    path = Path(path)
    yield from _read_ads(iter_json_ads(path), path, site, host, vo, fill_unknown)


APEL_FIELDS = (
    "GlobalJobId", "Owner", "RemoteWallClockTime", "RemoteUserCpu", "RemoteSysCpu",
    "JobStartDate", "EnteredCurrentStatus", "ResidentSetSize_RAW", "ImageSize_RAW", "RequestCpus",
)  # fmt: skip


def read_apel_condor_lines(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """Stream the ``|``-separated lines of APEL's ``htcondor_acc.sh`` (fields: APEL_FIELDS).

    job_id is the GlobalJobId field (prefixed with ``<site>:`` when it is a bare number); the
    Owner is a local account and is used as vo only when no ``vo=`` is given.
    """
    path = Path(path)
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.rstrip("\r\n")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            location = f"line {lineno}"
            values = text.strip().split("|")
            if len(values) not in (10, 11):
                yield Rejected(
                    str(path), location, f"expected 10 or 11 '|' fields, got {len(values)}", line
                )
                continue
            fields = dict(zip(APEL_FIELDS, values, strict=False))
            bad = [
                name
                for name in APEL_FIELDS[2:]
                if fields[name].strip() and to_float(fields[name]) is None
            ]
            if bad:
                yield Rejected(str(path), location, f"not a number: {', '.join(bad)}", line)
                continue
            ad: dict[str, Any] = {
                k.lower(): (v.strip() if i < 2 else to_float(v))
                for i, (k, v) in enumerate(fields.items())
                if v.strip()
            }
            gid = ad.get("globaljobid", "")
            if gid and "#" not in gid:
                ad["globaljobid"] = f"{site}:{gid}" if site else None
            if vo:
                ad.pop("owner", None)
            if "enteredcurrentstatus" in ad:  # APEL's StopTime
                ad["completiondate"] = ad["enteredcurrentstatus"]
            yield ad_to_job(
                ad,
                source=str(path),
                location=location,
                raw=line,
                site=site,
                host=host,
                vo=vo,
                fill_unknown=fill_unknown,
                source_format="htcondor-apel",
            )
