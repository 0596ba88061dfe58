"""CREAM CE BLAH accounting log: the grid identity of batch jobs (no ``grid.jobs`` message).

A CREAM CE's BLAH daemon writes one line per grid job it hands to the batch system
(``/var/log/cream/accounting/blahp.log-YYYYMMDD``), double-quoted ``key=value`` fields::

    "timestamp=2014-05-18 00:00:58" "userDN=/C=CA/O=Grid/OU=triumf.ca/CN=..."
    "userFQAN=/atlas/Role=pilot/Capability=NULL" "userFQAN=/atlas/Role=NULL/Capability=NULL"
    "ceID=ce1.triumf.ca:8443/cream-pbs-atlas" "jobID=CREAM663276716"
    "lrmsID=15876368.ce1.triumf.ca" "localUser=41200" "clientID=cream_663276716"

It links a grid job (``jobID``, the owner's certificate ``userDN`` and VOMS ``userFQAN``s, the CE
``ceID``) to the batch system's job id (``lrmsID``). It says nothing about the job's execution: no
start or end time, no wall-clock or CPU time, no outcome. So it cannot be a ``grid.jobs`` message
(APEL, too, keeps these records in a table of their own and joins them to the batch records).
Instead:

- ``load_blah`` reads BLAH files into a ``BlahIndex`` (lrmsID -> grid identity). The pbs, sge and
  lsf readers take it as ``blah=`` (a path, several paths separated by ``,``, or an index;
  ``gridlake publish --format pbs --opt blah=blahp.log-20140518 ...``): a batch record whose job
  id equals an ``lrmsID`` gets the VO of that record's primary (first) FQAN, which takes
  precedence over ``vo=`` and over the batch record's Unix group. Batch job ids are reused, so a
  BLAH record matches only batch records that ended between 1 day before and 28 days after its
  timestamp (APEL's ValidFrom / ValidUntil window for BLAH records); of several matches the latest
  BLAH record wins. The index holds one small entry per BLAH record in memory (give it the BLAH
  files of the batch log's period); unparseable BLAH lines are skipped there (publish the file
  with format ``cream-blah`` to see why).
- ``read_blah`` (format ``cream-blah``) turns every line into a ``Rejected`` whose reason says
  that it is a BLAH record, names the grid job, batch job and VO, and points to ``blah=``; a line
  that cannot be parsed gets the parse error as reason. Publishing a BLAH file therefore sends
  nothing to ``grid.jobs``, says why, and keeps the records in the dead letter queue rather than
  dropping them silently.

Field meanings (as APEL's BLAH parser reads them): ``timestamp`` is UTC (``YYYY-MM-DD HH:MM:SS``);
of repeated ``userFQAN`` fields the first is the primary FQAN; the VO is the FQAN's first group
(``/atlas/ca/Role=NULL`` -> ``atlas``). Required: ``timestamp`` and ``lrmsID``.
Not carried into ``grid.jobs``: the DN, the FQAN's group and role, the CE id and the grid job id
(the contract has no field for them); ``localUser`` and ``clientID``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from gridlake.sources.base import Item, Rejected, iter_lines, parse_fqan

SOURCE_FORMAT = "cream-blah"
VALID_BEFORE = 86400  # a BLAH record matches batch records ending from 1 day before it ...
VALID_AFTER = 28 * 86400  # ... to 28 days after it (APEL's ValidFrom / ValidUntil)

_FIELD = re.compile(r'\s*"([^"]*)"')


@dataclass(frozen=True, slots=True)
class BlahRecord:
    """The grid identity of one batch job, as a BLAH line gives it."""

    timestamp: float  # epoch seconds
    lrms_id: str
    grid_job_id: str | None
    user_dn: str | None
    fqan: str | None  # the primary (first) FQAN
    vo: str | None
    ce_id: str | None


@dataclass
class BlahIndex:
    """BLAH records by batch job id (``lrmsID``)."""

    records: dict[str, list[BlahRecord]] = field(default_factory=dict)

    def add(self, record: BlahRecord) -> None:
        self.records.setdefault(record.lrms_id, []).append(record)

    def __len__(self) -> int:
        return sum(len(v) for v in self.records.values())

    def lookup(self, batch_job_id: str, end: float | None) -> BlahRecord | None:
        """The BLAH record of a batch job that ended at ``end`` (epoch seconds), if any."""
        candidates = self.records.get(batch_job_id)
        if not candidates or end is None:
            return None
        valid = [
            r for r in candidates if r.timestamp - VALID_BEFORE <= end <= r.timestamp + VALID_AFTER
        ]
        return max(valid, key=lambda r: r.timestamp) if valid else None


BlahSource = BlahIndex | str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


def parse_blah_line(text: str) -> dict[str, list[str]]:
    """``"key=value" "key=value" ...`` -> {key: [values in order]}; ValueError saying why not."""
    fields: dict[str, list[str]] = {}
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _FIELD.match(text, pos)
        if match is None:
            rest = text[pos:].lstrip()
            if rest.startswith('"'):
                raise ValueError(f"unterminated quoted field at column {len(text) - len(rest) + 1}")
            raise ValueError(
                f'not a "key=value" field at column {len(text) - len(rest) + 1}: {rest[:40]!r}'
            )
        key, sep, value = match.group(1).partition("=")
        if not sep or not key.strip():
            raise ValueError(f'field "{match.group(1)[:40]}" is not key=value')
        fields.setdefault(key.strip(), []).append(value.strip())
        pos = match.end()
    return fields


def blah_record(fields: dict[str, list[str]]) -> BlahRecord:
    """The record of parsed BLAH fields; ValueError naming what is missing or malformed."""

    def first(key: str) -> str | None:
        values = [v for v in fields.get(key, []) if v]
        return values[0] if values else None

    missing = [k for k in ("timestamp", "lrmsID") if first(k) is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    stamp = first("timestamp") or ""
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"timestamp {stamp!r} is not YYYY-MM-DD HH:MM:SS") from None
    fqan = first("userFQAN")
    return BlahRecord(
        timestamp=moment.timestamp(),
        lrms_id=first("lrmsID") or "",
        grid_job_id=first("jobID"),
        user_dn=first("userDN"),
        fqan=fqan,
        vo=parse_fqan(fqan)[0] if fqan else None,
        ce_id=first("ceID"),
    )


def iter_blah(path: Path | str) -> Iterator[tuple[int, str, BlahRecord | str]]:
    """(line number, line, record or the reason it cannot be read) for every non-blank line."""
    for lineno, line, text in iter_lines(path):
        try:
            yield lineno, line, blah_record(parse_blah_line(text))
        except ValueError as exc:
            yield lineno, line, str(exc)


def load_blah(paths: Sequence[Path | str]) -> BlahIndex:
    """A BlahIndex of the parseable records of the BLAH files ``paths`` (plain or .gz)."""
    index = BlahIndex()
    for path in paths:
        for _, _, record in iter_blah(path):
            if isinstance(record, BlahRecord):
                index.add(record)
    return index


@lru_cache(maxsize=4)
def _cached_index(files: tuple[tuple[str, int, int], ...]) -> BlahIndex:
    return load_blah([name for name, _, _ in files])


def blah_index(blah: BlahSource) -> BlahIndex | None:
    """The index the batch readers' ``blah=`` names (cached per file set while files unchanged)."""
    if blah is None or isinstance(blah, BlahIndex):
        return blah
    if isinstance(blah, str):
        names: list[str | os.PathLike[str]] = [p.strip() for p in blah.split(",") if p.strip()]
    elif isinstance(blah, os.PathLike):
        names = [blah]
    else:
        names = list(blah)
    files = []
    for name in names:
        stat = Path(name).stat()  # a missing file is an error of the call, not of a record
        files.append((str(Path(name).resolve()), stat.st_mtime_ns, stat.st_size))
    return _cached_index(tuple(files))


def batch_vo(
    index: BlahIndex | None, job_id: str, end: float | None, vo: str | None, group: str | None
) -> str | None:
    """VO precedence of the batch adapters: BLAH record's FQAN, then ``vo=``, then the group."""
    if index is not None and job_id:
        record = index.lookup(job_id, end)
        if record is not None and record.vo:
            return record.vo
    return vo or group or None


def read_blah(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    vo: str | None = None,
    fill_unknown: bool = False,
) -> Iterator[Item]:
    """CREAM BLAH log: no CPU/wall, so every line is rejected with why (use pbs/sge/lsf blah=).

    Nothing is published to grid.jobs; the records go to the dead letter queue with the reason.
    """
    del site, host, vo, fill_unknown  # the reader interface; nothing here becomes a job
    path = Path(path)
    for lineno, line, record in iter_blah(path):
        if isinstance(record, str):
            reason = f"not a BLAH accounting record: {record}"
        else:
            reason = (
                f"BLAH record of grid job {record.grid_job_id or '?'} = batch job "
                f"{record.lrms_id} (VO {record.vo or 'unknown'}): it has no start, end, wall or "
                "CPU time, so it is no grid.jobs message; pass the file to the pbs, sge or lsf "
                "reader as blah=FILE (--opt blah=FILE) to give the batch job its VO"
            )
        yield Rejected(str(path), f"line {lineno}", reason, line)
