"""Reader for ``sadf -j`` (sysstat JSON of sar files) -> ``grid.nodes`` samples.

Each ``statistics`` element (one sar record: the averages over ``timestamp.interval`` seconds
ending at ``timestamp``) gives up to two samples, both with that element verbatim as ``raw``:

kind "vmstat" (when any of cpu-load, memory, swap-pages, paging, queue is present):

- ``us`` = usr|user + nice (+ guest + gnice when printed): vmstat's ``us`` is /proc/stat
  user + nice, which include guest time, while sar subtracts guest from ``usr`` and ``nice``;
  ``sy`` = sys + irq + soft (``sar -u ALL``) or ``system`` (``sar -u``, which already includes
  them), as vmstat's ``sy``; ``id wa st`` = idle, iowait, steal. From ``cpu-load`` (or
  ``cpu-load-all``) entry ``"cpu": "all"``.
- ``free_kb buff_kb cache_kb swpd_kb`` = memory ``memfree buffers cached swpused`` (KiB; also the
  ``kb``-prefixed spellings).
- ``si so``: ``swap-pages`` ``pswpin pswpout`` are *pages*/s; vmstat's are KiB/s, so they are
  multiplied by the page size: ``page_size_kb=`` or, when the header's ``machine`` is x86
  (x86_64, i386, i686), 4 KiB. Otherwise they stay null. The page rates are kept as the extras
  ``pswpin_s`` and ``pswpout_s``.
- ``bi bo`` = paging ``pgpgin pgpgout`` (KiB/s, the source of vmstat's bi/bo).
- ``in`` = interrupts ``"intr": "sum"``; ``cs`` = process-and-context-switch ``cswch``.
- ``r b`` = queue ``runq-sz`` and ``blocked``.

kind "iostat" (when cpu-load or disk is present):

- ``cpu_user`` = usr|user, ``cpu_system`` = sys + irq + soft | system, ``cpu_iowait cpu_steal
  cpu_idle``; ``cpu_nice`` extra.
- ``disks[]`` from ``disk``: ``device`` = disk-device, ``rkb_s wkb_s`` = ``rkB wkB`` (12.x) or
  ``rd_sec wr_sec`` x 0.5 (11.x: 512-byte sectors/s), ``aqu_sz`` = aqu-sz | avgqu-sz, ``util_pct``
  = util-percent. sar prints neither r/s and w/s nor split read/write latency: ``r_s w_s
  r_await_ms w_await_ms`` stay null; the combined ``await`` and ``tps`` are kept as the extras
  ``await_ms`` and ``tps``.

Time: ``timestamp`` ``date`` + ``time``; ``"utc": 1`` means UTC (sadf's default), otherwise the
local time of the file, which needs ``tz=``. ``interval_seconds`` = ``timestamp.interval``.
Host: ``host=`` wins, else the header's ``nodename``; ``site=`` is required.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from gridlake.sources.base import Item, Rejected
from gridlake.sources.iostat import iter_sysstat_json
from gridlake.sources.vmstat import clip, parse_tz, rfc3339

X86_MACHINES = {"x86_64", "amd64", "i386", "i486", "i586", "i686", "x86"}


def _reject(path: Path, location: str, reason: str, raw: str) -> Rejected:
    return Rejected(source=str(path), location=location, reason=reason, raw=clip(raw))


def _num(v: Any) -> float | int | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return v


def _first(d: dict[str, Any], *names: str) -> float | int | None:
    for n in names:
        v = _num(d.get(n))
        if v is not None:
            return v
    return None


def _sum(*values: float | int | None) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present), 6) if present else None


def _cpu_all(stat: dict[str, Any]) -> dict[str, Any] | None:
    for key in ("cpu-load-all", "cpu-load"):
        entries = stat.get(key)
        if isinstance(entries, list):
            for e in entries:
                if isinstance(e, dict) and str(e.get("cpu")) in ("all", "-1"):
                    return e
    return None


def _cpu_fields(cpu: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(vmstat us/sy/id/wa/st, iostat cpu_*) from a cpu-load "all" entry."""
    user = _first(cpu, "usr", "user")
    nice = _first(cpu, "nice")
    if "sys" in cpu:
        system = _sum(_first(cpu, "sys"), _first(cpu, "irq"), _first(cpu, "soft"))
    else:
        system = _first(cpu, "system")
    iowait, steal, idle = _first(cpu, "iowait"), _first(cpu, "steal"), _first(cpu, "idle")
    us = _sum(user, nice, _first(cpu, "guest"), _first(cpu, "gnice")) if user is not None else None
    vm = {"us": us, "sy": system, "id": idle, "wa": iowait, "st": steal}
    io = {
        "cpu_user": user,
        "cpu_system": system,
        "cpu_iowait": iowait,
        "cpu_steal": steal,
        "cpu_idle": idle,
    }
    if nice is not None:
        io["cpu_nice"] = nice
    return vm, io


def _disk(d: dict[str, Any]) -> dict[str, Any]:
    rkb = _first(d, "rkB")
    if rkb is None and _first(d, "rd_sec") is not None:
        rkb = round(float(_first(d, "rd_sec") or 0) * 0.5, 6)
    wkb = _first(d, "wkB")
    if wkb is None and _first(d, "wr_sec") is not None:
        wkb = round(float(_first(d, "wr_sec") or 0) * 0.5, 6)
    out: dict[str, Any] = {
        "device": str(d.get("disk-device")),
        "r_s": None,
        "w_s": None,
        "rkb_s": rkb,
        "wkb_s": wkb,
        "r_await_ms": None,
        "w_await_ms": None,
        "aqu_sz": _first(d, "aqu-sz", "avgqu-sz"),
        "util_pct": _first(d, "util-percent"),
    }
    if _first(d, "await") is not None:
        out["await_ms"] = _first(d, "await")
    if _first(d, "tps") is not None:
        out["tps"] = _first(d, "tps")
    return out


def _timestamp(stamp: Any, zone: tzinfo | None) -> tuple[datetime | None, float | None, str]:
    if not isinstance(stamp, dict):
        return None, None, "no timestamp object"
    try:
        naive = datetime.strptime(f"{stamp['date']} {stamp['time']}", "%Y-%m-%d %H:%M:%S")
    except (KeyError, TypeError, ValueError) as exc:
        return None, None, f"bad timestamp: {exc}"
    interval = _num(stamp.get("interval"))
    if stamp.get("utc") in (1, "1", True):
        return naive.replace(tzinfo=UTC), interval, ""
    if zone is None:
        return None, interval, "timestamp is local time (utc=0): pass tz="
    return naive.replace(tzinfo=zone), interval, ""


def _negative(d: dict[str, Any]) -> list[str]:
    out = []
    for k, v in d.items():
        if isinstance(v, int | float) and not isinstance(v, bool) and v < 0:
            out.append(k)
        elif isinstance(v, list):
            for e in v:
                if isinstance(e, dict):
                    out += [f"{k}.{n}" for n in _negative(e) if n]
    return out


def read_sadf(
    path: Path,
    *,
    site: str | None = None,
    host: str | None = None,
    tz: str | tzinfo | None = None,
    page_size_kb: float | None = None,
    **opts: Any,
) -> Iterator[Item]:
    """Stream vmstat- and iostat-like samples from one ``sadf -j`` file."""
    path = Path(path)
    zone = parse_tz(tz)
    if tz is not None and zone is None:
        yield _reject(path, "file", f"unknown time zone {tz!r} in tz=", "")
        return
    node: str | None = host
    page_kb: float | None = page_size_kb
    for event in iter_sysstat_json(path):
        if event[0] == "host":
            info = event[1]
            node = host or info.get("nodename") or None
            if page_size_kb is None:
                page_kb = 4 if str(info.get("machine", "")).lower() in X86_MACHINES else None
            continue
        if event[0] == "error":
            _, location, reason, raw = event
            yield _reject(path, location, reason, raw)
            return
        _, _i, location, raw, stat = event
        if not isinstance(stat, dict):
            yield _reject(path, location, "statistics element is not an object", raw)
            continue
        if site is None or node is None:
            missing = [n for n, v in (("site", site), ("host", node)) if v is None]
            yield _reject(
                path,
                location,
                f"sadf output names no {' and '.join(missing)}: pass "
                + " and ".join(f"{n}=" for n in missing),
                raw,
            )
            return
        ts, interval, why = _timestamp(stat.get("timestamp"), zone)
        if ts is None:
            yield _reject(path, location, why, raw)
            if "tz=" in why:
                return
            continue
        if interval is None or interval < 0:
            yield _reject(path, location, "timestamp without a valid interval", raw)
            continue
        cpu = _cpu_all(stat)
        memory = stat.get("memory") if isinstance(stat.get("memory"), dict) else None
        swap = stat.get("swap-pages") if isinstance(stat.get("swap-pages"), dict) else None
        paging = stat.get("paging") if isinstance(stat.get("paging"), dict) else None
        queue = stat.get("queue") if isinstance(stat.get("queue"), dict) else None
        pcsw = stat.get("process-and-context-switch")
        pcsw = pcsw if isinstance(pcsw, dict) else None
        disks_in = stat.get("disk") if isinstance(stat.get("disk"), list) else None
        wanted = {
            k: v
            for k, v in (("cpu", cpu), ("memory", memory), ("swap", swap), ("paging", paging))
            if v is not None
        }
        negative = _negative(wanted) + (_negative({"disk": disks_in}) if disks_in else [])
        if negative:
            yield _reject(path, location, f"negative values in {negative}", raw)
            continue
        base = {
            "site": site,
            "host": node,
            "ts": rfc3339(ts),
            "interval_seconds": interval,
        }
        vm_cpu, io_cpu = _cpu_fields(cpu) if cpu is not None else ({}, {})
        if any(x is not None for x in (cpu, memory, swap, paging, queue)):
            mem = memory or {}
            pswpin = _first(swap, "pswpin") if swap else None
            pswpout = _first(swap, "pswpout") if swap else None
            intr = None
            interrupts = stat.get("interrupts")
            if isinstance(interrupts, list):
                for e in interrupts:
                    if isinstance(e, dict) and str(e.get("intr")).lower() == "sum":
                        intr = _first(e, "value", "all")
            rec: dict[str, Any] = dict(base, kind="vmstat")
            rec.update(
                {
                    "r": _first(queue, "runq-sz") if queue else None,
                    "b": _first(queue, "blocked") if queue else None,
                    "swpd_kb": _first(mem, "swpused", "kbswpused"),
                    "free_kb": _first(mem, "memfree", "kbmemfree"),
                    "buff_kb": _first(mem, "buffers", "kbbuffers"),
                    "cache_kb": _first(mem, "cached", "kbcached"),
                    "si": _pages_to_kb(pswpin, page_kb),
                    "so": _pages_to_kb(pswpout, page_kb),
                    "bi": _first(paging, "pgpgin") if paging else None,
                    "bo": _first(paging, "pgpgout") if paging else None,
                    "in": intr,
                    "cs": _first(pcsw, "cswch") if pcsw else None,
                    "us": vm_cpu.get("us"),
                    "sy": vm_cpu.get("sy"),
                    "id": vm_cpu.get("id"),
                    "wa": vm_cpu.get("wa"),
                    "st": vm_cpu.get("st"),
                }
            )
            if pswpin is not None:
                rec["pswpin_s"] = pswpin
            if pswpout is not None:
                rec["pswpout_s"] = pswpout
            rec["raw"] = raw
            yield rec
        if cpu is not None or disks_in is not None:
            disks = None
            if disks_in is not None:
                disks = [_disk(d) for d in disks_in if isinstance(d, dict) and d.get("disk-device")]
            rec = dict(base, kind="iostat")
            rec.update(
                io_cpu
                or {
                    "cpu_user": None,
                    "cpu_system": None,
                    "cpu_iowait": None,
                    "cpu_steal": None,
                    "cpu_idle": None,
                }
            )
            rec["disks"] = disks
            rec["raw"] = raw
            yield rec


def _pages_to_kb(pages: float | int | None, page_kb: float | None) -> float | None:
    if pages is None or page_kb is None:
        return None
    return round(pages * page_kb, 6)
