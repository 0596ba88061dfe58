"""Reader for ``vmstat`` text output -> ``grid.nodes`` samples (kind "vmstat").

Accepted input: what ``vmstat -n [-t] [-w] [-a] [delay [count]]`` prints (procps / procps-ng),
plain or gzip-compressed. The group header (``procs ---memory--- ...``) and the column header
(``r b swpd free buff cache si so bi bo in cs us sy id wa st [gu]``) may repeat (vmstat without
``-n`` reprints them every screen); columns are located by name, so ``-w`` (wide) and old versions
without ``st`` work too.

Mapping: ``r b si so bi bo in cs us sy id wa st`` one to one; ``swpd free buff cache`` (KiB, the
default ``-S k`` unit) to ``swpd_kb free_kb buff_kb cache_kb``. With ``-a`` vmstat prints
``inact active`` instead of ``buff cache``: ``buff_kb`` and ``cache_kb`` stay null and the values
are kept as the extra fields ``inact_kb`` and ``active_kb``. procps 4 ``gu`` (guest) is kept as
the extra field ``gu``. ``raw`` is the data line verbatim.

Decisions (documented, tested):

- The first data line of a file is the average since boot, not an interval: it is skipped
  unless ``keep_first=True``; a kept one carries ``since_boot: true`` and ``interval_seconds: 0``.
  Repeated headers do not start a new since-boot line.
- Timestamps: with ``-t`` each line ends with ``YYYY-MM-DD HH:MM:SS`` in the zone named at the end
  of the column header (``UTC``, ``PDT``...). ``tz=`` (``"+02:00"``, ``"Europe/Zurich"``,
  ``"UTC"``) overrides it; an ambiguous or unknown abbreviation (e.g. ``CST``) without ``tz=`` is
  rejected once per file. Without ``-t``, ``ts = start + index * interval_seconds`` where ``start=``
  (datetime or RFC 3339 string; naive means UTC) is the time of the first line and index 0 is the
  first data line. Without ``-t`` and without ``start=`` the file yields one
  ``Rejected("no timestamp: pass start=")`` and nothing else: a guessed time would be worse than
  none.
- ``interval_seconds``: the option if given; else, with ``-t``, the difference to the previous line;
  else 1 (vmstat's default delay).
- ``site`` and ``host`` are required by ``grid.nodes`` and vmstat prints neither: pass ``site=``
  and ``host=``; a file read without them yields one ``Rejected`` and nothing else.
- ``vmstat -d`` / ``-p`` / ``-s`` / ``-m`` outputs (disk, partition, event and slab tables) are not
  samples: one ``Rejected`` per file.

This module also holds small helpers shared by the node and network readers (opening plain or
gzip files, RFC 3339 formatting, time-zone and ``start=`` parsing).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gridlake.sources.base import Item, Rejected, clip, open_text

# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------


def rfc3339(dt: datetime) -> str:
    """UTC RFC 3339 string ending in "Z" (fraction only when non-zero)."""
    if dt.tzinfo is None:
        raise ValueError("naive datetime")
    u = dt.astimezone(UTC)
    if u.microsecond:
        return u.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0") + "Z"
    return u.strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_to_rfc3339(seconds: float) -> str:
    return rfc3339(datetime.fromtimestamp(seconds, tz=UTC))


# Unambiguous zone abbreviations that vmstat -t may print. CST/IST/BST-like ambiguous ones are
# deliberately absent: pass tz= for them.
TZ_ABBREVIATIONS: dict[str, int] = {
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "UT": 0,
    "WET": 0,
    "WEST": 60,
    "CET": 60,
    "CEST": 120,
    "MET": 60,
    "MEST": 120,
    "EET": 120,
    "EEST": 180,
    "MSK": 180,
    "JST": 540,
    "KST": 540,
    "HKT": 480,
    "AEST": 600,
    "AEDT": 660,
    "ACST": 570,
    "ACDT": 630,
    "AWST": 480,
    "NZST": 720,
    "NZDT": 780,
    "EST": -300,
    "EDT": -240,
    "CDT": -300,
    "MST": -420,
    "MDT": -360,
    "PST": -480,
    "PDT": -420,
    "AKST": -540,
    "AKDT": -480,
    "HST": -600,
}

_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})?$")


def parse_tz(name: str | tzinfo | None) -> tzinfo | None:
    """A tzinfo from "UTC", "+02:00", "-0700", an unambiguous abbreviation or an IANA name."""
    if name is None or isinstance(name, tzinfo):
        return name
    s = name.strip()
    if not s:
        return None
    m = _OFFSET.match(s)
    if m:
        minutes = int(m.group(2)) * 60 + int(m.group(3) or 0)
        return timezone(timedelta(minutes=-minutes if m.group(1) == "-" else minutes))
    if s.upper() in TZ_ABBREVIATIONS:
        return timezone(timedelta(minutes=TZ_ABBREVIATIONS[s.upper()]))
    if "/" in s:
        try:
            return ZoneInfo(s)
        except (ZoneInfoNotFoundError, ValueError):
            return None
    return None


def parse_start(start: datetime | str | float | int | None) -> datetime | None:
    """``start=`` option: aware datetime, RFC 3339 string or epoch seconds; naive means UTC."""
    if start is None:
        return None
    if isinstance(start, datetime):
        dt = start
    elif isinstance(start, int | float):
        return datetime.fromtimestamp(start, tz=UTC)
    else:
        s = str(start).strip()
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        dt = datetime.fromisoformat(s)
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def local_to_rfc3339(naive: datetime, tz: tzinfo) -> str:
    return rfc3339(naive.replace(tzinfo=tz))


def number(token: str) -> float | int:
    """A vmstat/iostat field: int when integral text, else float (accepts a decimal comma)."""
    t = token.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"-?\d+,\d+", t):
        t = t.replace(",", ".")
    value = float(t)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"not a finite number: {token!r}")
    return value


# --------------------------------------------------------------------------------------------
# vmstat
# --------------------------------------------------------------------------------------------

KIND = "vmstat"
_ONE_TO_ONE = ("r", "b", "si", "so", "bi", "bo", "in", "cs", "us", "sy", "id", "wa", "st")
_KB = {"swpd": "swpd_kb", "free": "free_kb", "buff": "buff_kb", "cache": "cache_kb"}
_EXTRA = {"inact": "inact_kb", "active": "active_kb", "gu": "gu"}
_REQUIRED = {"r", "b", "swpd", "free", "si", "so", "bi", "bo", "in", "cs", "us", "sy", "id"}
_TS_RE = re.compile(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})\s*$")


def _reject(path: Path, location: str, reason: str, raw: str) -> Rejected:
    return Rejected(source=str(path), location=location, reason=reason, raw=clip(raw))


def read_vmstat(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    start: datetime | str | None = None,
    interval_seconds: float | None = None,
    tz: str | tzinfo | None = None,
    keep_first: bool = False,
    **opts: Any,
) -> Iterator[Item]:
    """Stream ``vmstat`` samples of one file (see the module docstring for the rules)."""
    path = Path(path)
    start_dt = parse_start(start)
    tz_opt = parse_tz(tz)
    if tz is not None and tz_opt is None:
        yield _reject(path, "file", f"unknown time zone {tz!r} in tz=", "")
        return
    columns: list[str] | None = None
    has_ts = False
    header_tz: tzinfo | None = None
    header_tz_name = ""
    data_index = 0
    prev_ts: datetime | None = None
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.rstrip("\r\n")
            stripped = text.strip()
            if not stripped:
                continue
            first = stripped.split()[0]
            if first.startswith(("procs", "--procs")):
                has_ts = "timestamp" in stripped
                continue
            if first.startswith("disk-") or first in ("total", "reads:", "Cache"):
                yield _reject(
                    path,
                    f"line {lineno}",
                    "vmstat -d/-p/-m output (disk, partition or slab tables) is not a "
                    "supported sample format",
                    text,
                )
                return
            tokens = stripped.split()
            if tokens[0] == "r" and "b" in tokens:
                columns = tokens
                header_tz_name = ""
                if has_ts and columns[-1] not in _ONE_TO_ONE + tuple(_KB) + tuple(_EXTRA):
                    header_tz_name = columns[-1]
                    columns = columns[:-1]
                missing = _REQUIRED - set(columns)
                if missing or not (
                    {"buff", "cache"} <= set(columns) or {"inact", "active"} <= set(columns)
                ):
                    yield _reject(
                        path,
                        f"line {lineno}",
                        f"unrecognised vmstat column header (missing {sorted(missing)})",
                        text,
                    )
                    return
                header_tz = (tz_opt or parse_tz(header_tz_name)) if has_ts else None
                continue
            if columns is None:
                yield _reject(
                    path, f"line {lineno}", "not vmstat output: data before any column header", text
                )
                return
            if site is None or host is None:
                missing_flags = [n for n, v in (("site", site), ("host", host)) if v is None]
                yield _reject(
                    path,
                    f"line {lineno}",
                    f"vmstat output names no {' and '.join(missing_flags)}: pass "
                    + " and ".join(f"{n}=" for n in missing_flags),
                    text,
                )
                return
            index = data_index
            data_index += 1
            ts_naive: datetime | None = None
            body = stripped
            if has_ts:
                m = _TS_RE.search(stripped)
                if not m:
                    yield _reject(path, f"line {lineno}", "missing trailing timestamp (-t)", text)
                    continue
                try:
                    ts_naive = datetime.strptime(f"{m.group(1)} {m.group(2)}", "%Y-%m-%d %H:%M:%S")
                except ValueError as exc:
                    yield _reject(path, f"line {lineno}", f"bad timestamp: {exc}", text)
                    continue
                body = stripped[: m.start()].strip()
            values = body.split()
            if len(values) != len(columns):
                yield _reject(
                    path,
                    f"line {lineno}",
                    f"expected {len(columns)} columns, found {len(values)}",
                    text,
                )
                continue
            try:
                fields = {name: number(v) for name, v in zip(columns, values, strict=True)}
            except ValueError as exc:
                yield _reject(path, f"line {lineno}", f"non-numeric field: {exc}", text)
                continue
            negative = [n for n, v in fields.items() if v < 0]
            if negative:
                yield _reject(path, f"line {lineno}", f"negative value in {negative}", text)
                continue
            # Time of this line.
            if ts_naive is not None:
                zone = header_tz
                if zone is None:
                    yield _reject(
                        path,
                        f"line {lineno}",
                        f"unknown or ambiguous time zone {header_tz_name!r}: pass tz=",
                        text,
                    )
                    return
                ts_dt = ts_naive.replace(tzinfo=zone)
            else:
                if start_dt is None:
                    yield _reject(
                        path, f"line {lineno}", "no timestamp: pass --start (start=)", text
                    )
                    return
                ts_dt = start_dt + timedelta(seconds=index * (interval_seconds or 1))
            if interval_seconds is not None:
                interval: float = interval_seconds
            elif ts_naive is not None and prev_ts is not None:
                interval = (ts_dt - prev_ts).total_seconds()
            else:
                interval = 1
            prev_ts = ts_dt
            since_boot = index == 0
            if since_boot and not keep_first:
                continue
            rec: dict[str, Any] = {
                "site": site,
                "host": host,
                "ts": rfc3339(ts_dt),
                "interval_seconds": 0 if since_boot else interval,
                "kind": KIND,
            }
            for name in _ONE_TO_ONE:
                rec[name] = fields.get(name)
            for name, key in _KB.items():
                rec[key] = fields.get(name)
            for name, key in _EXTRA.items():
                if name in fields:
                    rec[key] = fields[name]
            if since_boot:
                rec["since_boot"] = True
            rec["raw"] = text
            yield rec
    if columns is None:
        yield _reject(path, "file", "not vmstat output: no column header found", "")
