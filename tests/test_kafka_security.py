"""Kafka signs everyone in (SASL/SCRAM-SHA-512) and lets each principal do its own work only
(ACLs): issue 25. Against the test instance's real broker (infra/kafka.sh)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import uuid
from pathlib import Path

import pytest

from gridlake.settings import get_settings
from gridlake.sources import kafka_auth

pytestmark = pytest.mark.integration


def _end_offsets(topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**kafka_auth.admin_conf(), "group.id": f"wm-{uuid.uuid4()}"})
    try:
        parts = c.list_topics(topic, timeout=20).topics[topic].partitions
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in parts}
    finally:
        c.close()


def _read_since(topic: str, start: dict[int, int]) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    end = _end_offsets(topic)
    todo = {p: e for p, e in end.items() if e > start.get(p, 0)}
    c = Consumer({**kafka_auth.admin_conf(), "group.id": f"read-{uuid.uuid4()}"})
    out: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, p, start.get(p, 0)) for p in todo])
        while todo:
            msg = c.poll(30)
            assert msg is not None and msg.error() is None, msg and msg.error()
            out.append(msg.value())
            if msg.offset() + 1 >= todo.get(msg.partition(), 0):
                todo.pop(msg.partition(), None)
    finally:
        c.close()
    return out


def _publish(path: Path, topic: str, **env: str) -> subprocess.CompletedProcess[str]:
    exe = get_settings().home / "venv" / "bin" / "gridlake"
    return subprocess.run(
        [str(exe), "publish", "--topic", topic, "--quiet", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


def _jobs_file(tmp_path: Path, n: int) -> tuple[Path, list[str]]:
    tag = uuid.uuid4().hex[:8]
    lines = [json.dumps({"job_id": f"sec-{tag}-{i}", "site": "TEST"}, sort_keys=True)
             for i in range(n)]  # fmt: skip
    path = tmp_path / f"jobs-{tag}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, lines


def test_an_unauthenticated_client_gets_nothing(kafka) -> None:
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    plain = {"bootstrap.servers": kafka, "socket.timeout.ms": 3000}
    with pytest.raises(KafkaException):
        AdminClient(plain).list_topics(timeout=5)
    before = _end_offsets("grid.jobs")
    reports: list = []
    p = Producer({**plain, "message.timeout.ms": 4000})
    p.produce("grid.jobs", b'{"job_id": "anonymous"}', on_delivery=lambda e, m: reports.append(e))
    p.flush(15)
    assert reports and reports[0] is not None, reports  # not delivered
    # a known user with a wrong password: refused too
    with pytest.raises(KafkaException):
        conf = kafka_auth.client_conf(get_settings(), "jobs", "not-the-password")
        AdminClient({**conf, "socket.timeout.ms": 3000}).list_topics(timeout=5)
    assert _end_offsets("grid.jobs") == before


def test_publish_signs_in_as_the_topics_producer_and_delivers_exactly_once(kafka, tmp_path) -> None:
    path, lines = _jobs_file(tmp_path, 25)
    before = _end_offsets("grid.jobs")
    done = _publish(path, "grid.jobs")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "25 published" in done.stdout
    got = [v.decode() for v in _read_since("grid.jobs", before)]
    assert sorted(got) == sorted(lines)  # each record once, nothing else


def test_the_wrong_principal_is_refused_with_a_clear_error(kafka, tmp_path) -> None:
    settings = get_settings()
    path, _ = _jobs_file(tmp_path, 3)
    before = _end_offsets("grid.jobs")
    nodes = str(kafka_auth.password_file(settings, "nodes"))
    refused = _publish(path, "grid.jobs", GRIDLAKE_KAFKA_USER="nodes",
                       GRIDLAKE_KAFKA_PASSWORD_FILE=nodes)  # fmt: skip
    assert refused.returncode == 1
    assert "Kafka refused user 'nodes' on topic grid.jobs: not authorized" in refused.stderr
    wrong = _publish(path, "grid.jobs", GRIDLAKE_KAFKA_USER="jobs",
                     GRIDLAKE_KAFKA_PASSWORD="wrong-" + uuid.uuid4().hex)  # fmt: skip
    assert wrong.returncode == 1
    assert "Kafka refused to sign in user 'jobs': wrong user name or password" in wrong.stderr
    assert _end_offsets("grid.jobs") == before  # nothing reached the topic
    # the same nodes principal may write its own topic
    node_line = json.dumps({"host": f"sec-{uuid.uuid4().hex[:6]}", "ts": 1})
    (tmp_path / "nodes.jsonl").write_text(node_line + "\n")
    ok = _publish(tmp_path / "nodes.jsonl", "grid.nodes", GRIDLAKE_KAFKA_USER="nodes",
                  GRIDLAKE_KAFKA_PASSWORD_FILE=nodes)  # fmt: skip
    assert ok.returncode == 0, ok.stderr[-2000:]


def test_ingest_reads_and_writes_nothing_and_producers_read_nothing(kafka) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

    settings = get_settings()
    before = _end_offsets("grid.jobs")
    # (not idempotent: an idempotent producer is refused its producer id first, a fatal error)
    p = Producer({**kafka_auth.client_conf(settings, "ingest"), "enable.idempotence": False,
                  "message.timeout.ms": 8000})  # fmt: skip
    reports: list = []
    p.produce("grid.jobs", b'{"job_id": "ingest"}', on_delivery=lambda e, m: reports.append(e))
    p.flush(20)
    assert [r.code() if r else None for r in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert _end_offsets("grid.jobs") == before
    # a producer principal cannot read another's topic
    c = Consumer({**kafka_auth.client_conf(settings, "nodes"), "group.id": "spark-kafka-source-x",
                  "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        c.subscribe(["grid.jobs"])
        msg = c.poll(15)
        assert msg is not None and msg.error() is not None, msg
        assert msg.error().code() in (
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.GROUP_AUTHORIZATION_FAILED,
        ), msg.error()
    except KafkaException as exc:
        assert "AUTHORIZATION" in str(exc), exc
    finally:
        c.close()


def test_kafka_keeps_its_secrets_in_private_files(kafka) -> None:
    settings = get_settings()
    conf = settings.state / "kafka" / "server.properties"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600
    text = conf.read_text()
    assert "allow.everyone.if.no.acl.found=false" in text and "PLAINTEXT://" not in text.replace(
        "SASL_PLAINTEXT://", ""
    )
    pid = (settings.state / "run" / "kafka.pid").read_text().strip()
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode()
    for user in kafka_auth.USERS:
        pw_file = kafka_auth.password_file(settings, user)
        assert stat.S_IMODE(pw_file.stat().st_mode) == 0o600
        assert kafka_auth.password(settings, user) not in args
