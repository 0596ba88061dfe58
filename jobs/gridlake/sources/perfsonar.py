"""Readers for perfSONAR results -> ``grid.network`` records.

Three formats, all streamed (one point / document at a time), plain or gzip:

``read_esmond`` - esmond measurement-archive REST responses (perfSONAR <= 4.x). A *data* file is
the answer of ``/esmond/perfsonar/archive/<metadata-key>/<event-type>/<summary>/<window>``:
``[{"ts": <epoch s>, "val": ...}, ...]``; the path's source, destination and tool are in the
*metadata* document (``/esmond/perfsonar/archive/`` or ``.../<metadata-key>/``), so pass it as
``metadata=`` (a file holding one metadata object or a list of them; pick the entry with
``metadata_key=`` or ``uri=`` when there are several), or give ``src_host=``/``dst_host=``
(and ``tool=``) directly. The event type comes from ``event_type=`` or ``uri=`` (e.g.
``".../297d7757.../histogram-owdelay/statistics/300"``); only ``histogram-owdelay`` statistics
(objects with mean/median/...) are recognised without it, since numeric points look alike.

==========================  =========  ==================================================
event type                  test       fields
==========================  =========  ==================================================
histogram-owdelay           latency    statistics: mean, median, minimum, standard-deviation
                                       -> delay_*_ms; a raw histogram (``{"24.3": 590}``,
                                       ms buckets) is summarised the same way
packet-loss-rate            latency    packet_loss (fraction, or numerator/denominator)
packet-count-lost / -sent   latency    extras ``packets_lost`` / ``packets_sent`` only: the
                                       loss fraction needs both series
throughput                  throughput throughput_bps (bit/s)
packet-retransmits          throughput retransmits
packet-trace                trace      (no numeric field; the hops stay in ``raw``)
==========================  =========  ==================================================

Other event types (histogram-ttl, histogram-rtt - round trip, not one way -, packet-duplicates,
packet-reorders, time-error-estimates, failures, pscheduler-run-href, *-subintervals) have no
``grid.network`` field: one ``Rejected`` per file. Hosts: metadata ``input-source`` /
``input-destination`` (the names the test was configured with), else ``source`` /
``destination`` (addresses); the addresses are also kept as the extras ``src_ip`` and
``dst_ip``. ``tool``: the part of ``tool-name`` after the last "/" (``pscheduler/powstream`` ->
``powstream``, ``bwctl/iperf3`` -> ``iperf3``). Extras: ``event_type``, ``metadata_key``,
``summary_window_s`` when known. ``ts`` is the point's ``ts`` (for summaries, the start of the
summary window).

``read_ps5`` - perfSONAR 5 archive documents: either what pScheduler's archivers send (``test``,
``tool``, ``run``, ``result``...; one JSON document per line, or a JSON array) or the
documents the perfSONAR Logstash pipeline stores in OpenSearch ``pscheduler_*`` indices
(``pscheduler.start_time``, ``pscheduler.tool``, ``meta.source/destination``, ``result`` with
``throughput``/``retransmits`` for throughput tests), bare or as search hits (``_source``), or a
whole OpenSearch search response. ``test.type`` latency/latencybg -> latency (``histogram-latency``
summarised in ms - keys are in units of ``bucket-width``, default 0.001 s -, ``packet_loss`` =
packets-lost / packets-sent; extras ``packets_sent``, ``packets_lost``,
``max_clock_error_ms``), throughput -> throughput (throughput-bits, retransmits; UDP lost/sent
-> packet_loss), trace -> trace. Other test types (rtt, clock, dns, http, idle...) and runs with
``succeeded: false`` are rejected. Hosts: ``meta.source/destination.hostname`` (then ``.ip``),
else ``test.spec.source`` / ``dest``; ``ts`` = the run's start time.

``read_osg_netds`` - documents of the OSG/WLCG network datastore (the ``ps_*`` Elasticsearch
indices filled by sand-ci/ps-ingest), JSON lines or an array of bare documents or hits, or a
search response: ``ps_owd`` (delay_mean, delay_median, delay_sd in ms), ``ps_packetloss``
(packet_loss, fraction), ``ps_throughput`` (throughput, bit/s), ``ps_retransmits``
(retransmits), ``ps_trace`` (hops). The kind comes from ``_index`` when present, else from the
fields. Hosts: ``src_host`` / ``dest_host``, else the addresses ``src`` / ``dest``; sites:
``src_site`` / ``dest_site`` (older ``srcSite`` / ``destSite``); ``timestamp`` in epoch ms.
These documents name no tool: ``tool`` stays null.

Sites, in every format: from the document when present, else ``src_site=`` / ``dst_site=``;
they may stay null (the silver layer resolves them from host names). ``site=`` / ``host=`` are
not used: a path has two ends.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridlake.sources.base import Item, Rejected
from gridlake.sources.iostat import JsonError, JsonStream
from gridlake.sources.vmstat import clip, epoch_to_rfc3339, open_text, rfc3339

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

_HITS_ARRAY = re.compile(r'"hits"\s*:\s*\[')
_RESPONSE_KEY = re.compile(r'"(took|_shards|timed_out|_scroll_id)"\s*:')


def _reject(path: Path | str, location: str, reason: str, raw: str) -> Rejected:
    return Rejected(source=str(path), location=location, reason=reason, raw=clip(raw))


def _array(js: JsonStream, noun: str) -> Iterator[tuple[str, str, str, Any]]:
    n = 0
    while True:
        c = js.peek()
        if c == "]":
            js.take()
            return
        if c == ",":
            js.take()
            continue
        location = f"{noun} {n + 1} (line {js.line()})"
        if c == "":
            yield ("error", location, "truncated: array not closed", "")
            return
        try:
            raw, val = js.value()
        except JsonError as exc:
            yield ("error", location, exc.reason, exc.raw)
            return
        yield ("doc", location, raw, val)
        n += 1


def iter_json_documents(path: Path) -> Iterator[tuple[str, str, str, Any]]:
    """Documents of a JSON file, streamed: ``("doc", location, raw, value)`` or
    ``("error", location, reason, raw)`` (then stops).

    Accepts a top-level array, one or more top-level values (JSON lines, pretty-printed or
    concatenated), or an OpenSearch/Elasticsearch search response (its ``hits.hits``).
    """
    with open_text(path) as fh:
        js = JsonStream(fh)
        c = js.peek()
        if c == "":
            yield ("error", "file", "empty file", "")
            return
        if c == "[":
            js.take()
            yield from _array(js, "record")
            return
        if c == "{":
            while len(js.buf) - js.pos < 65536 and js._fill():
                pass
            head = js.buf[js.pos : js.pos + 65536]
            key = _RESPONSE_KEY.search(head)
            source_at = head.find('"_source"')
            if key and (source_at < 0 or key.start() < source_at):
                if js.seek(_HITS_ARRAY) is None:
                    yield ("error", "file", "search response without hits.hits", "")
                    return
                yield from _array(js, "hit")
                return
        while js.peek():
            location = f"line {js.line()}"
            try:
                raw, val = js.value()
            except JsonError as exc:
                yield ("error", location, exc.reason, exc.raw)
                return
            yield ("doc", location, raw, val)


def _num(v: Any) -> float | int | None:
    """A finite number (numeric strings accepted), else None."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return v if math.isfinite(v) else None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def histogram_stats(hist: dict[str, Any], scale: float = 1.0) -> dict[str, float] | None:
    """mean, median, min and (population) sd of a {value: count} histogram, values x scale.

    The median of an even count is the mean of the two middle values. None when the histogram
    is empty or malformed.
    """
    items: list[tuple[float, int]] = []
    for k, v in hist.items():
        key = _num(k)
        if key is None or isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            return None
        if v:
            items.append((key * scale, int(v)))
    items.sort()
    n = sum(c for _, c in items)
    if n == 0:
        return None
    mean = sum(k * c for k, c in items) / n
    var = sum(c * (k - mean) ** 2 for k, c in items) / n

    def nth(i: int) -> float:
        seen = 0
        for k, c in items:
            seen += c
            if i < seen:
                return k
        return items[-1][0]

    median = (nth((n - 1) // 2) + nth(n // 2)) / 2
    return {
        "delay_mean_ms": round(mean, 6),
        "delay_median_ms": round(median, 6),
        "delay_min_ms": round(items[0][0], 6),
        "delay_sd_ms": round(math.sqrt(var), 6),
    }


def _record(
    src_host: str,
    dst_host: str,
    ts: str,
    test: str,
    *,
    src_site: str | None,
    dst_site: str | None,
    tool: str | None,
    raw: str,
    **values: Any,
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "src_site": src_site,
        "dst_site": dst_site,
        "src_host": src_host,
        "dst_host": dst_host,
        "ts": ts,
        "test": test,
        "delay_mean_ms": None,
        "delay_median_ms": None,
        "delay_min_ms": None,
        "delay_sd_ms": None,
        "packet_loss": None,
        "throughput_bps": None,
        "retransmits": None,
        "tool": tool,
    }
    rec.update(values)
    rec["raw"] = raw
    return rec


def _check(rec: dict[str, Any]) -> str | None:
    """Range problems of a record (None when it is within the contract)."""
    loss = rec.get("packet_loss")
    if loss is not None and not 0 <= loss <= 1:
        return f"packet_loss {loss} outside [0, 1]"
    for name in ("delay_sd_ms", "throughput_bps"):
        v = rec.get(name)
        if v is not None and v < 0:
            return f"{name} {v} is negative"
    r = rec.get("retransmits")
    if r is not None and (not isinstance(r, int) or r < 0):
        return f"retransmits {r!r} is not a count"
    return None


def _count(v: Any) -> int | None:
    n = _num(v)
    if n is None or n != int(n):
        return None
    return int(n)


def _iso_ts(v: Any) -> str | None:
    """RFC 3339 UTC from an ISO 8601 string (aware) or epoch seconds; None if unusable."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return epoch_to_rfc3339(v)
    if not isinstance(v, str) or not v:
        return None
    s = v.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return None
    if dt.tzinfo is None:
        return None
    return rfc3339(dt)


# --------------------------------------------------------------------------------------------
# esmond
# --------------------------------------------------------------------------------------------

_URI = re.compile(r"/archive/([0-9A-Za-z]+)/([a-z0-9-]+)(?:/([a-z]+)(?:/(\d+))?)?/?$")
ESMOND_TESTS = {
    "histogram-owdelay": "latency",
    "packet-loss-rate": "latency",
    "packet-count-lost": "latency",
    "packet-count-sent": "latency",
    "throughput": "throughput",
    "packet-retransmits": "throughput",
    "packet-trace": "trace",
}
_STAT_KEYS = {"mean", "median", "minimum", "standard-deviation"}


def _tool(name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    tail = name.rsplit("/", 1)[-1].strip()
    return tail or None


def _metadata_key(meta: dict[str, Any]) -> str | None:
    key = meta.get("metadata-key")
    if isinstance(key, str):
        return key
    for field in ("uri", "url"):
        m = re.search(r"/archive/([0-9A-Za-z]+)/?", str(meta.get(field, "")))
        if m:
            return m.group(1)
    return None


def _load_metadata(path: Path, key: str | None) -> tuple[dict[str, Any] | None, Rejected | None]:
    """The metadata entry for ``key`` (or the only one), streaming the file."""
    chosen: dict[str, Any] | None = None
    count = 0
    for event in iter_json_documents(path):
        if event[0] == "error":
            _, location, reason, raw = event
            return None, _reject(path, location, f"metadata: {reason}", raw)
        _, location, raw, val = event
        if not isinstance(val, dict):
            return None, _reject(path, location, "metadata entry is not an object", raw)
        count += 1
        if key is not None:
            if _metadata_key(val) == key:
                return val, None
        elif count == 1:
            chosen = val
        else:
            chosen = None
    if key is not None:
        return None, _reject(path, "file", f"metadata has no entry {key!r}", "")
    if chosen is None:
        return None, _reject(
            path, "file", f"metadata has {count} entries: pass metadata_key= or uri=", ""
        )
    return chosen, None


def _esmond_values(event_type: str, val: Any) -> tuple[dict[str, Any] | None, str | None]:
    """grid.network values (and extras) of one esmond point, or (None, reason)."""
    if event_type == "histogram-owdelay":
        if not isinstance(val, dict) or not val:
            return None, "histogram-owdelay value is not an object"
        if _STAT_KEYS & set(val):
            out = {
                "delay_mean_ms": _num(val.get("mean")),
                "delay_median_ms": _num(val.get("median")),
                "delay_min_ms": _num(val.get("minimum")),
                "delay_sd_ms": _num(val.get("standard-deviation")),
            }
            return out, None
        stats = histogram_stats(val)
        if stats is None:
            return None, "histogram-owdelay histogram is empty or malformed"
        return dict(stats), None
    if event_type == "packet-loss-rate":
        if isinstance(val, dict):
            num, den = _num(val.get("numerator")), _num(val.get("denominator"))
            if num is None or not den:
                return None, "packet-loss-rate without numerator/denominator"
            return {"packet_loss": num / den}, None
        loss = _num(val)
        return ({"packet_loss": loss}, None) if loss is not None else (None, "not a number")
    if event_type in ("packet-count-lost", "packet-count-sent"):
        n = _count(val)
        if n is None or n < 0:
            return None, "not a packet count"
        name = "packets_lost" if event_type == "packet-count-lost" else "packets_sent"
        return {name: n}, None
    if event_type == "throughput":
        bps = _num(val)
        return ({"throughput_bps": bps}, None) if bps is not None else (None, "not a number")
    if event_type == "packet-retransmits":
        n = _count(val)
        return ({"retransmits": n}, None) if n is not None else (None, "not an integer count")
    if event_type == "packet-trace":
        if not isinstance(val, list):
            return None, "packet-trace value is not a list of hops"
        return {}, None
    return None, f"event type {event_type!r} has no grid.network mapping"


def read_esmond(
    path: Path,
    *,
    metadata: Path | str | None = None,
    metadata_key: str | None = None,
    uri: str | None = None,
    event_type: str | None = None,
    src_host: str | None = None,
    dst_host: str | None = None,
    src_site: str | None = None,
    dst_site: str | None = None,
    tool: str | None = None,
    **opts: Any,
) -> Iterator[Item]:
    """Stream grid.network records from one esmond data-point file (see the module docstring)."""
    path = Path(path)
    window: int | None = None
    if uri is not None:
        m = _URI.search(uri.split("?", 1)[0])
        if not m:
            yield _reject(path, "file", f"cannot parse esmond uri {uri!r}", "")
            return
        metadata_key = metadata_key or m.group(1)
        event_type = event_type or m.group(2)
        window = int(m.group(4)) if m.group(4) else None
    meta: dict[str, Any] = {}
    if metadata is not None:
        loaded, problem = _load_metadata(Path(metadata), metadata_key)
        if problem is not None:
            yield problem
            return
        meta = loaded or {}
        if event_type is not None and isinstance(meta.get("event-types"), list):
            known = {e.get("event-type") for e in meta["event-types"] if isinstance(e, dict)}
            if event_type not in known:
                yield _reject(
                    path,
                    "file",
                    f"metadata {_metadata_key(meta)} has no event type {event_type!r}",
                    "",
                )
                return
    s_host = src_host or meta.get("input-source") or meta.get("source")
    d_host = dst_host or meta.get("input-destination") or meta.get("destination")
    tool_name = tool or _tool(meta.get("tool-name"))
    extras: dict[str, Any] = {}
    if meta.get("source"):
        extras["src_ip"] = meta["source"]
    if meta.get("destination"):
        extras["dst_ip"] = meta["destination"]
    key = _metadata_key(meta) if meta else metadata_key
    if key:
        extras["metadata_key"] = key
    if window is not None:
        extras["summary_window_s"] = window
    resolved_type = event_type
    for event in iter_json_documents(path):
        if event[0] == "error":
            _, location, reason, raw = event
            yield _reject(path, location, reason, raw)
            return
        _, location, raw, point = event
        if not isinstance(point, dict) or "ts" not in point or "val" not in point:
            yield _reject(path, location, 'not an esmond point {"ts": ..., "val": ...}', raw)
            continue
        if resolved_type is None:
            val = point["val"]
            if isinstance(val, dict) and _STAT_KEYS & set(val):
                resolved_type = "histogram-owdelay"
            else:
                yield _reject(
                    path,
                    location,
                    "cannot tell the event type of these points: pass event_type= or uri=",
                    raw,
                )
                return
        test = ESMOND_TESTS.get(resolved_type)
        if test is None:
            yield _reject(
                path, location, f"event type {resolved_type!r} has no grid.network mapping", raw
            )
            return
        if not s_host or not d_host:
            yield _reject(
                path,
                location,
                "no source/destination host: pass metadata= or src_host= and dst_host=",
                raw,
            )
            return
        ts_num = _num(point["ts"])
        if ts_num is None:
            yield _reject(path, location, f"bad ts {point['ts']!r}", raw)
            continue
        if point["val"] is None:
            yield _reject(path, location, "val is null", raw)
            continue
        values, why = _esmond_values(resolved_type, point["val"])
        if values is None:
            yield _reject(path, location, why or "unusable value", raw)
            continue
        rec = _record(
            str(s_host),
            str(d_host),
            epoch_to_rfc3339(ts_num),
            test,
            src_site=src_site,
            dst_site=dst_site,
            tool=tool_name,
            raw=raw,
            **values,
            event_type=resolved_type,
            **extras,
        )
        problem_text = _check(rec)
        if problem_text:
            yield _reject(path, location, problem_text, raw)
            continue
        yield rec


# --------------------------------------------------------------------------------------------
# perfSONAR 5 (pScheduler archiver / OpenSearch pscheduler_* documents)
# --------------------------------------------------------------------------------------------

PS5_TESTS = {
    "latency": "latency",
    "latencybg": "latency",
    "throughput": "throughput",
    "trace": "trace",
}


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _ps5_values(
    test: str, spec: dict[str, Any], result: dict[str, Any]
) -> tuple[dict[str, Any] | None, str | None]:
    out: dict[str, Any] = {}
    if test == "latency":
        hist = result.get("histogram-latency")
        if isinstance(hist, dict) and hist:
            width = _num(spec.get("bucket-width"))
            scale = round((width if width else 0.001) * 1000, 9)
            stats = histogram_stats(hist, scale)
            if stats is None:
                return None, "histogram-latency is empty or malformed"
            out.update(stats)
        sent, lost = _count(result.get("packets-sent")), _count(result.get("packets-lost"))
        if sent is not None:
            out["packets_sent"] = sent
        if lost is not None:
            out["packets_lost"] = lost
        if sent and lost is not None:
            out["packet_loss"] = lost / sent
        clock = _num(result.get("max-clock-error"))
        if clock is not None:
            out["max_clock_error_ms"] = clock
        if not out:
            return None, "latency result without histogram-latency or packet counts"
        return out, None
    if test == "throughput":
        summary = _get(result, "summary", "summary")
        if isinstance(summary, dict):  # as sent by pScheduler
            bps = _num(summary.get("throughput-bits"))
            retrans = summary.get("retransmits")
            sent, lost = summary.get("sent"), summary.get("lost")
        else:  # as normalised by the perfSONAR Logstash pipeline
            bps = _num(result.get("throughput"))
            retrans = result.get("retransmits")
            sent, lost = result.get("packets_sent"), result.get("packets_lost")
        if bps is None:
            return None, "throughput result without throughput-bits"
        out["throughput_bps"] = bps
        if retrans is not None:
            n = _count(retrans)
            if n is None:
                return None, f"retransmits {retrans!r} is not a count"
            out["retransmits"] = n
        sent_n, lost_n = _count(sent), _count(lost)
        if sent_n and lost_n is not None:
            out["packet_loss"] = lost_n / sent_n
            out["packets_sent"], out["packets_lost"] = sent_n, lost_n
        return out, None
    return {}, None  # trace: hops stay in raw


def read_ps5(
    path: Path,
    *,
    src_site: str | None = None,
    dst_site: str | None = None,
    src_host: str | None = None,
    dst_host: str | None = None,
    **opts: Any,
) -> Iterator[Item]:
    """Stream grid.network records from perfSONAR 5 archive documents."""
    path = Path(path)
    for event in iter_json_documents(path):
        if event[0] == "error":
            _, location, reason, raw = event
            yield _reject(path, location, reason, raw)
            return
        _, location, raw, doc = event
        src = doc.get("_source", doc) if isinstance(doc, dict) else None
        if not isinstance(src, dict):
            yield _reject(path, location, "document is not an object", raw)
            continue
        ttype = _get(src, "test", "type")
        test = PS5_TESTS.get(ttype) if isinstance(ttype, str) else None
        if test is None:
            yield _reject(path, location, f"test type {ttype!r} has no grid.network mapping", raw)
            continue
        spec = _get(src, "test", "spec")
        spec = spec if isinstance(spec, dict) else {}
        result = src.get("result")
        if not isinstance(result, dict):
            yield _reject(path, location, "document has no result", raw)
            continue
        if result.get("succeeded") is False:
            error = result.get("error") or "no error text"
            yield _reject(path, location, f"run did not succeed: {error}", raw)
            continue
        s_host = (
            _get(src, "meta", "source", "hostname")
            or _get(src, "meta", "source", "ip")
            or spec.get("source")
            or src_host
        )
        d_host = (
            _get(src, "meta", "destination", "hostname")
            or _get(src, "meta", "destination", "ip")
            or spec.get("dest")
            or dst_host
        )
        if not s_host or not d_host:
            yield _reject(path, location, "no source/destination: pass src_host= / dst_host=", raw)
            continue
        ts = (
            _iso_ts(_get(src, "pscheduler", "start_time"))
            or _iso_ts(_get(src, "run", "start-time"))
            or _iso_ts(src.get("@timestamp"))
        )
        if ts is None:
            yield _reject(path, location, "no run start time with a zone", raw)
            continue
        tool_v = _get(src, "pscheduler", "tool") or src.get("tool")
        tool_name = _tool(tool_v.get("name") if isinstance(tool_v, dict) else tool_v)
        values, why = _ps5_values(test, spec, result)
        if values is None:
            yield _reject(path, location, why or "unusable result", raw)
            continue
        rec = _record(
            str(s_host),
            str(d_host),
            ts,
            test,
            src_site=src_site,
            dst_site=dst_site,
            tool=tool_name,
            raw=raw,
            **values,
            test_type=ttype,
        )
        for side, key in (("source", "src_ip"), ("destination", "dst_ip")):
            ip = _get(src, "meta", side, "ip")
            if ip:
                rec[key] = ip
        problem = _check(rec)
        if problem:
            yield _reject(path, location, problem, raw)
            continue
        yield rec


# --------------------------------------------------------------------------------------------
# OSG / WLCG network datastore (ps_* indices)
# --------------------------------------------------------------------------------------------

_OSG_INDEX = (
    ("ps_owd", "owd"),
    ("ps_packetloss", "packetloss"),
    ("ps_throughput", "throughput"),
    ("ps_retransmits", "retransmits"),
    ("ps_trace", "trace"),
)
_OSG_TEST = {
    "owd": "latency",
    "packetloss": "latency",
    "throughput": "throughput",
    "retransmits": "throughput",
    "trace": "trace",
}


def _osg_kind(index: str, src: dict[str, Any]) -> str | None:
    for prefix, kind in _OSG_INDEX:
        if index.startswith(prefix):
            return kind
    if any(k in src for k in ("delay_mean", "delay_median", "delay_sd")):
        return "owd"
    for field, kind in (
        ("packet_loss", "packetloss"),
        ("throughput", "throughput"),
        ("retransmits", "retransmits"),
        ("hops", "trace"),
    ):
        if field in src:
            return kind
    return None


def _osg_ts(v: Any) -> str | None:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return epoch_to_rfc3339(v / 1000)
    if isinstance(v, str):
        if re.fullmatch(r"\d{8}T\d{6}(\.\d+)?Z", v):  # basic_date_time(_no_millis)
            fmt = "%Y%m%dT%H%M%S.%fZ" if "." in v else "%Y%m%dT%H%M%SZ"
            return rfc3339(datetime.strptime(v, fmt).replace(tzinfo=UTC))
        if re.fullmatch(r"\d+", v):
            return epoch_to_rfc3339(int(v) / 1000)
        return _iso_ts(v)
    return None


def read_osg_netds(
    path: Path,
    *,
    src_site: str | None = None,
    dst_site: str | None = None,
    **opts: Any,
) -> Iterator[Item]:
    """Stream grid.network records from OSG network datastore documents."""
    path = Path(path)
    for event in iter_json_documents(path):
        if event[0] == "error":
            _, location, reason, raw = event
            yield _reject(path, location, reason, raw)
            return
        _, location, raw, doc = event
        src = doc.get("_source", doc) if isinstance(doc, dict) else None
        if not isinstance(src, dict):
            yield _reject(path, location, "document is not an object", raw)
            continue
        index = str(doc.get("_index") or src.get("_index") or "")
        kind = _osg_kind(index, src)
        if kind is None:
            yield _reject(path, location, "not a ps_owd/packetloss/throughput/trace document", raw)
            continue
        s_host = src.get("src_host") or src.get("src")
        d_host = src.get("dest_host") or src.get("dest")
        if not s_host or not d_host:
            yield _reject(path, location, "no src_host/dest_host", raw)
            continue
        ts = _osg_ts(src.get("timestamp"))
        if ts is None:
            yield _reject(path, location, f"bad timestamp {src.get('timestamp')!r}", raw)
            continue
        values: dict[str, Any] = {}
        if kind == "owd":
            values = {
                "delay_mean_ms": _num(src.get("delay_mean")),
                "delay_median_ms": _num(src.get("delay_median")),
                "delay_sd_ms": _num(src.get("delay_sd")),
            }
            if all(v is None for v in values.values()):
                yield _reject(path, location, "ps_owd document without delay values", raw)
                continue
        elif kind == "packetloss":
            values = {"packet_loss": _num(src.get("packet_loss"))}
        elif kind == "throughput":
            values = {"throughput_bps": _num(src.get("throughput"))}
        elif kind == "retransmits":
            n = _count(src.get("retransmits"))
            if n is None:
                yield _reject(path, location, "retransmits is not an integer count", raw)
                continue
            values = {"retransmits": n}
        if kind in ("packetloss", "throughput") and next(iter(values.values())) is None:
            yield _reject(path, location, f"{kind} document without a numeric value", raw)
            continue
        rec = _record(
            str(s_host),
            str(d_host),
            ts,
            _OSG_TEST[kind],
            src_site=src.get("src_site") or src.get("srcSite") or src_site,
            dst_site=src.get("dest_site") or src.get("destSite") or dst_site,
            tool=None,
            raw=raw,
            **values,
        )
        for field, key in (("src", "src_ip"), ("dest", "dst_ip"), ("MA", "ma")):
            if src.get(field):
                rec[key] = src[field]
        problem = _check(rec)
        if problem:
            yield _reject(path, location, problem, raw)
            continue
        yield rec
