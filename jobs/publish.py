"""Publish canonical JSON-lines files to Kafka.

A line that is not one JSON object is reported with file and line number and sent to
grid.deadletter with the reason; the caller exits non-zero when any line was dead-lettered.
Schema validation is the silver layer's job (records that parse but break the contract end in
the quarantine table with their reasons), so publish stays fast and never drops a record.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from gridlake.contracts import contract
from gridlake.settings import TOPICS, Settings, get_settings


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


def classify_line(line: str) -> tuple[dict | None, str | None]:
    """Return (record, None) for a JSON object, else (None, reason)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at column {exc.colno}"
    if not isinstance(record, dict):
        return None, f"invalid JSON: expected an object, got {type(record).__name__}"
    return record, None


def _producer(settings: Settings):  # noqa: ANN202
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
    topic: str,
    files: Iterable[Path],
    settings: Settings | None = None,
    progress: bool = True,
) -> PublishReport:
    settings = settings or get_settings()
    if topic not in TOPICS.values():
        raise ValueError(f"unknown topic {topic!r}; one of {sorted(TOPICS.values())}")
    name = next(k for k, v in TOPICS.items() if v == topic)
    key_field = contract(name).key
    report = PublishReport(topic)
    producer = _producer(settings)

    def on_delivery(err, _msg) -> None:  # noqa: ANN001
        if err is not None:
            report.delivery_errors += 1
            report.problems.append(f"delivery failed: {err}")

    files = list(files)
    total = sum(p.stat().st_size for p in files)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"publish {topic}", file=sys.stderr)
    for path in files:
        with path.open("rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if bar is not None:
                    bar.update(len(raw))
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if not line.strip():
                    continue
                record, reason = classify_line(line)
                if record is None:
                    report.dead_lettered += 1
                    report.problems.append(f"{path}:{number}: {reason}")
                    dead = {
                        "intended_topic": topic,
                        "source_file": str(path),
                        "line_number": number,
                        "reason": reason,
                        "raw": line,
                        "rejected_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    }
                    _produce(
                        producer, TOPICS["deadletter"], str(path), json.dumps(dead), on_delivery
                    )
                    continue
                key = record.get(key_field)
                _produce(producer, topic, None if key is None else str(key), line, on_delivery)
                report.published += 1
    if bar is not None:
        bar.close()
    remaining = producer.flush(60)
    if remaining:
        report.delivery_errors += remaining
        report.problems.append(f"{remaining} records not delivered within 60 s")
    return report


def _produce(producer, topic: str, key: str | None, value: str, cb) -> None:  # noqa: ANN001
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
