"""Publish files to Kafka: canonical JSON lines, or any source format through its adapter.

Canonical files (no ``--format``): a line that is not one JSON object is reported with file and
line number and sent to grid.deadletter with the reason. With ``--format``, the format's adapter
(``gridlake.sources.registry``) turns each source record into a canonical message, or into a
rejection that goes to grid.deadletter with its location and reason. Either way the caller exits
non-zero when anything was dead-lettered, and nothing is dropped silently. Schema validation is
the silver layer's job (records that parse but break the contract are quarantined there).

Hostile input is dead-lettered here, each with its file:line and reason, never an aborted
publish: bytes that are not UTF-8, a line over MAX_LINE_BYTES, NaN or Infinity (which Python's
and Spark's JSON parsers would otherwise take, and which poison every sum), an object with a key
twice (which one would count?), nesting too deep to parse, and any exception an adapter raises
on one record (a format's reader that fails is stopped and the rest of its file reported).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridlake.contracts import contract
from gridlake.settings import TOPICS, Settings, get_settings

MAX_PROBLEMS_KEPT = 1000  # problems listed in the report; the counts cover all of them
MAX_LINE_BYTES = 1 << 20  # a canonical line over 1 MiB is no job record: dead-lettered


@dataclass
class PublishReport:
    topic: str
    published: int = 0
    dead_lettered: int = 0
    delivery_errors: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.dead_lettered == 0 and self.delivery_errors == 0

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(text)


@dataclass(frozen=True)
class _Dead:
    source: str
    location: str
    line_number: int | None
    reason: str
    raw: str


class _Refused(ValueError):
    """A JSON text that parses but that gridlake refuses (NaN, a key twice)."""


def _no_constants(name: str) -> float:
    raise _Refused(f"non-finite number {name} (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: valid JSON grammar, but no double holds it
        raise _Refused(f"number {text[:40]} beyond a double's range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Refused(f"duplicate key {key!r} in one JSON object")
        seen[key] = value
    return seen


def classify_line(line: str) -> tuple[dict | None, str | None]:
    """Return (record, None) for a JSON object, else (None, reason). Refused as well: NaN and
    Infinity, a number beyond a double (1e999), a key twice in one object, nesting too deep for
    the parser."""
    try:
        record = json.loads(
            line,
            parse_constant=_no_constants,
            parse_float=_finite_float,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at column {exc.colno}"
    except _Refused as exc:
        return None, f"invalid JSON: {exc}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply to parse"
    except Exception as exc:  # any surprise of one line is that line's problem
        return None, f"invalid JSON: {type(exc).__name__}: {exc}"
    if not isinstance(record, dict):
        return None, f"invalid JSON: expected an object, got {type(record).__name__}"
    return record, None


def classify_bytes(raw: bytes) -> tuple[str | None, dict | None, str | None]:
    """One line of a canonical file as read: (text, record, None), or (text, None, reason).
    The text of a refused line is what can be shown of it (clipped, undecodable bytes
    replaced); None for a blank line."""
    from gridlake.sources.base import clip

    raw = raw.rstrip(b"\r\n")
    if len(raw) > MAX_LINE_BYTES:
        shown = clip(raw[:MAX_LINE_BYTES].decode("utf-8", errors="replace"))
        return shown, None, f"line of {len(raw):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        shown = clip(raw.decode("utf-8", errors="replace"))
        return shown, None, f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}"
    if not line.strip():
        return None, None, None
    record, reason = classify_line(line)
    return line, record, reason


def _canonical_lines(path: Path, bar: Any) -> Iterator[tuple[str, dict[str, Any]] | _Dead]:
    from gridlake.sources.base import clip

    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if bar is not None:
                bar.update(len(raw))
            line, record, reason = classify_bytes(raw)
            if line is None:
                continue
            if record is None:
                yield _Dead(str(path), f"line {number}", number, str(reason), clip(line))
            else:
                yield line, record


def _adapted(
    path: Path, reader: Any, opts: dict[str, Any], bar: Any
) -> Iterator[tuple[str, dict[str, Any]] | _Dead]:
    from gridlake.sources.base import Rejected

    records = reader(path, **opts)
    done = 0
    while True:
        try:
            item = next(records)
        except StopIteration:
            return
        except Exception as exc:  # a reader's bug never aborts the publish
            # A generator that raised cannot resume: what it had not read yet is reported with
            # the error, as one dead letter for the rest of the file (and publish exits 1).
            yield _Dead(str(path), f"after record {done}", None,
                        f"the {getattr(reader, '__name__', 'format')} reader failed, rest of the "
                        f"file not read: {type(exc).__name__}: {exc}", "")  # fmt: skip
            return
        done += 1
        if bar is not None:
            bar.update(1)
        if isinstance(item, Rejected):
            yield _Dead(item.source, item.location, None, item.reason, item.raw)
            continue
        try:
            text = json.dumps(item, sort_keys=True, allow_nan=False)
        except ValueError as exc:  # NaN or Infinity out of a source's numbers
            yield _Dead(str(path), f"record {done}", None, f"non-finite number: {exc}",
                        repr(item)[:4096])  # fmt: skip
            continue
        yield text, item


def _producer(settings: Settings, topic: str) -> Any:  # confluent_kafka.Producer
    """A producer signed in as the topic's producer principal (or the environment's user),
    checked before the first record: a wrong password or a topic the user may not write stops
    publish at once with a sentence that says which (kafka_auth.describe_error)."""
    from confluent_kafka import KafkaError, KafkaException, Producer

    from gridlake.sources import kafka_auth

    user, pw, where = kafka_auth.credentials(settings, kafka_auth.PRODUCER_OF.get(topic, "admin"))
    errors: list[Any] = []
    conf = kafka_auth.client_conf(settings, user, pw)
    conf.update(
        {
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "compression.type": "lz4",
            "client.id": "gridlake-publish",
            "error_cb": errors.append,
        }
    )
    producer = Producer(conf)
    try:
        meta = producer.list_topics(topic, timeout=20)
    except KafkaException as exc:
        producer.poll(1)  # serve error_cb: it says whether the sign-in failed
        auth = [e for e in errors if kafka_auth.is_auth_error(e)]
        raise kafka_auth.KafkaAuthError(
            kafka_auth.describe_error(auth[0], user, topic, where) if auth else f"Kafka: {exc}"
        ) from exc
    err = meta.topics[topic].error if topic in meta.topics else None
    if err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        raise kafka_auth.KafkaAuthError(kafka_auth.describe_error(err, user, topic, where))
    return producer


def publish_files(
    topic: str | None,
    files: Iterable[Path],
    settings: Settings | None = None,
    progress: bool = True,
    fmt: str | None = None,
    reader_opts: dict[str, Any] | None = None,
) -> PublishReport:
    """Publish every record of ``files`` to ``topic`` (or the format's topic)."""
    settings = settings or get_settings()
    reader = None
    if fmt is not None:
        from gridlake.sources.registry import reader_for

        fmt_topic, reader = reader_for(fmt)
        if topic is not None and topic != fmt_topic:
            raise ValueError(f"format {fmt} publishes to {fmt_topic}, not {topic}")
        topic = fmt_topic
    if topic not in TOPICS.values():
        raise ValueError(f"unknown topic {topic!r}; one of {sorted(TOPICS.values())}")
    name = next(k for k, v in TOPICS.items() if v == topic)
    key_field = contract(name).key
    report = PublishReport(topic)
    producer = _producer(settings, topic)

    def on_delivery(err, msg) -> None:  # noqa: ANN001
        if err is not None:
            report.delivery_errors += 1
            from gridlake.sources import kafka_auth

            if kafka_auth.is_auth_error(err):
                user = os.environ.get("GRIDLAKE_KAFKA_USER") or kafka_auth.PRODUCER_OF.get(
                    topic, "admin"
                )
                report.problem(kafka_auth.describe_error(err, user, msg.topic()))
            else:
                report.problem(f"delivery failed: {err}")

    files = list(files)
    bar = None
    if progress:
        from tqdm import tqdm

        if reader is None:
            total = sum(p.stat().st_size for p in files)
            bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"publish {topic}",
                       file=sys.stderr)  # fmt: skip
        else:
            bar = tqdm(unit=" rec", desc=f"publish {fmt} -> {topic}", file=sys.stderr)
    for path in files:
        items = (
            _canonical_lines(path, bar)
            if reader is None
            else _adapted(path, reader, reader_opts or {}, bar)
        )
        for item in items:
            if isinstance(item, _Dead):
                report.dead_lettered += 1
                report.problem(
                    f"{item.source}:{item.location.removeprefix('line ')}: {item.reason}"
                )
                dead = {
                    "intended_topic": topic,
                    "source_file": item.source,
                    "line_number": item.line_number,
                    "location": item.location,
                    "source_format": fmt,
                    "reason": item.reason,
                    "raw": item.raw,
                    "rejected_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                }
                _produce(producer, TOPICS["deadletter"], item.source, json.dumps(dead), on_delivery)
                continue
            text, record = item
            key = record.get(key_field)
            _produce(producer, topic, None if key is None else str(key), text, on_delivery)
            report.published += 1
    if bar is not None:
        bar.close()
    remaining = producer.flush(60)
    if remaining:
        report.delivery_errors += remaining
        report.problem(f"{remaining} records not delivered within 60 s")
    return report


def _produce(producer: Any, topic: str, key: str | None, value: str, cb: Any) -> None:
    while True:
        try:
            producer.produce(
                topic,
                value=value.encode(),
                key=None if key is None else key.encode(),
                on_delivery=cb,
            )
            break
        except BufferError:
            producer.poll(0.5)  # local queue full: let deliveries drain
    producer.poll(0)
