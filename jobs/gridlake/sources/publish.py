"""Publish files to Kafka: canonical JSON lines, or any source format through its adapter.

Canonical files (no ``--format``): a line that is not one JSON object is reported with file and
line number and sent to grid.deadletter with the reason. With ``--format``, the format's adapter
(``gridlake.sources.registry``) turns each source record into a canonical message, or into a
rejection that goes to grid.deadletter with its location and reason. Either way the caller exits
non-zero when anything was dead-lettered, and nothing is dropped silently. Schema validation is
the silver layer's job (records that parse but break the contract are quarantined there).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridlake.contracts import contract
from gridlake.settings import TOPICS, Settings, get_settings

MAX_PROBLEMS_KEPT = 1000  # problems listed in the report; the counts cover all of them


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


def classify_line(line: str) -> tuple[dict | None, str | None]:
    """Return (record, None) for a JSON object, else (None, reason)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at column {exc.colno}"
    if not isinstance(record, dict):
        return None, f"invalid JSON: expected an object, got {type(record).__name__}"
    return record, None


def _canonical_lines(path: Path, bar: Any) -> Iterator[tuple[str, dict[str, Any]] | _Dead]:
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if bar is not None:
                bar.update(len(raw))
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if not line.strip():
                continue
            record, reason = classify_line(line)
            if record is None:
                yield _Dead(str(path), f"line {number}", number, str(reason), line)
            else:
                yield line, record


def _adapted(
    path: Path, reader: Any, opts: dict[str, Any], bar: Any
) -> Iterator[tuple[str, dict[str, Any]] | _Dead]:
    from gridlake.sources.base import Rejected

    for item in reader(path, **opts):
        if bar is not None:
            bar.update(1)
        if isinstance(item, Rejected):
            yield _Dead(item.source, item.location, None, item.reason, item.raw)
        else:
            yield json.dumps(item, sort_keys=True), item


def _producer(settings: Settings):  # noqa: ANN202 - confluent_kafka.Producer
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": settings.kafka_bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "compression.type": "lz4",
            "client.id": "gridlake-publish",
        }
    )


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
    producer = _producer(settings)

    def on_delivery(err, _msg) -> None:  # noqa: ANN001
        if err is not None:
            report.delivery_errors += 1
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
