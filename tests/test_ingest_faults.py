"""Ingestion under faults, against a real Kafka broker, real Spark and real Delta tables: a
writer killed mid-ingest and restarted (exactly once), bad input lines (each in silver,
quarantine or the dead-letter topic, exactly once), the simulator's planted bad records (each in
its quarantine table with the planted rule). None reads the demo week's warehouse, so they run in
the grid shard (its own instance) beside the simulated grid's analytics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections import defaultdict
from datetime import date

import pytest
from pyspark.sql import functions as F

from gridlake.catalog import BRONZE, QUARANTINE_JOBS, SILVER_JOBS
from gridlake.settings import get_settings

from .conftest import gridlake_cli
from .test_validate import GOOD

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _table(spark, table):
    return spark.read.format("delta").load(table.path())


def _watermark_total(bootstrap: str, topic: str) -> int:
    """Records on a topic according to the broker (sum of high - low watermarks)."""
    from confluent_kafka import Consumer, TopicPartition

    from gridlake.sources.kafka_auth import admin_conf

    c = Consumer({**admin_conf(bootstrap), "group.id": f"wm-{uuid.uuid4()}"})
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        total = 0
        for p in parts:
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            total += high - low
        return total
    finally:
        c.close()


# nightly: ~100 s of make test's longest lane; make test's fault trials (tests/faults, short
# form) SIGKILL ingest at a seeded random moment and check bronze against the broker's offsets
@pytest.mark.nightly
def test_crash_mid_ingest_then_restart_is_exactly_once(spark, kafka, jobs_published) -> None:
    """SIGKILL `gridlake ingest` after its first committed micro-batch, restart, count."""
    from gridlake.sources.publish import publish_files

    _week, paths = jobs_published
    # Publish the node samples once more: a re-send, as an agent retrying would do.
    report = publish_files("grid.nodes", [paths["nodes"]], progress=False)
    assert report.ok
    expected = _watermark_total(kafka, "grid.nodes")

    commits = get_settings().checkpoint_root.removeprefix("file:")
    commits_dir = f"{commits}/bronze_nodes/commits"
    before = set(os.listdir(commits_dir)) if os.path.isdir(commits_dir) else set()
    exe = str(get_settings().home / "venv" / "bin" / "gridlake")
    proc = subprocess.Popen(
        [exe, "ingest", "--inputs", "nodes", "--max-offsets", "400"],
        env={**os.environ, "GRIDLAKE_SERVER": "off"},  # a crash of the writer's own process
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            now = set(os.listdir(commits_dir)) if os.path.isdir(commits_dir) else set()
            if {n for n in now - before if n.isdigit()}:
                break
            assert proc.poll() is None, "ingest ended before its first commit"
            time.sleep(0.2)
        else:
            pytest.fail("no micro-batch committed within 300 s")
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    partial = _table(spark, BRONZE["nodes"]).count()
    assert partial < expected, "the kill came after the whole run: the test proved nothing"

    restart = gridlake_cli("ingest", "--inputs", "nodes", "--max-offsets", "5000")
    assert restart.returncode == 0, restart.stderr[-3000:]

    bronze = _table(spark, BRONZE["nodes"])
    total = bronze.count()
    distinct = bronze.select("partition", "offset").distinct().count()
    assert total == expected
    assert distinct == total


def _bad_input_lines(tag: str) -> tuple[list[str], dict[str, int]]:
    def job(i: int, **over: object) -> dict[str, object]:
        return {**GOOD, "job_id": f"{tag}-{i}", "site": "TEST-BADINPUT", **over}

    lines = [
        json.dumps(job(1)),
        json.dumps(job(2, status="failed", exit_code=137, failure_mode="memory")),
        json.dumps(job(3)),
        "{this is not json",  # invalid JSON
        '["an", "array"]',  # JSON, but not an object
        json.dumps(job(4, cores="eight")),  # wrong type
        json.dumps(job(5, wall_seconds="long")),  # wrong type
        json.dumps({k: v for k, v in job(6).items() if k != "host"}),  # missing required
        json.dumps({k: v for k, v in job(7).items() if k not in ("site", "vo")}),  # two missing
        json.dumps(job(8, wall_seconds=-30.0)),  # negative wall time
        json.dumps(job(9, end_time="2026-11-16T08:00:00Z")),  # end before start
        json.dumps(job(1, cpu_user_seconds=40000.0)),  # re-sent job 1, newer: must win
        json.dumps(job(3)),  # re-sent job 3, identical
        json.dumps(job(10, cpu_user_seconds=8 * 7199.5 * 1.2)),  # outlier: kept, flagged
        json.dumps(job(11, cores=1, cpu_user_seconds=7199.5 * 1.5, cpu_system_seconds=0)),  # out
    ]
    expected = {"dead": 2, "quarantine": 6, "clean": 5, "duplicates": 2, "outliers": 2}
    assert sum(v for k, v in expected.items() if k != "outliers") == len(lines)
    return lines, expected


@pytest.mark.adds_records
def test_bad_input_ends_exactly_once_in_silver_quarantine_or_deadletter(
    spark, kafka, tmp_path
) -> None:
    from gridlake.bronze.ingest import ingest
    from gridlake.silver.refine import refine_jobs

    tag = f"bad-{uuid.uuid4().hex[:8]}"
    lines, want = _bad_input_lines(tag)
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")

    pub = gridlake_cli("publish", "--quiet", "--topic", "grid.jobs", str(path))
    assert pub.returncode == 1, "dead-lettered lines must make publish exit non-zero"
    assert f"{path}:4: invalid JSON" in pub.stderr
    assert f"{path}:5: invalid JSON: expected an object" in pub.stderr
    assert f"{len(lines) - want['dead']} published, {want['dead']} dead-lettered" in pub.stdout

    ingest(spark, ("jobs", "deadletter"))
    refine_jobs(spark)

    silver = _table(spark, SILVER_JOBS).filter(F.col("job_id").startswith(tag + "-"))
    quarantine = _table(spark, QUARANTINE_JOBS).filter(F.col("raw").contains(f'"{tag}-'))
    dead = (
        _table(spark, BRONZE["deadletter"])
        .select(
            F.from_json("value", "source_file string, line_number int, reason string").alias("d")
        )
        .select("d.*")
        .filter(F.col("source_file") == str(path))
    )

    assert silver.count() == want["clean"]
    assert silver.select("job_id").distinct().count() == want["clean"]
    assert quarantine.count() == want["quarantine"]
    assert dead.count() == want["dead"]
    # every line accounted for exactly once
    assert silver.count() + want["duplicates"] + quarantine.count() + dead.count() == len(lines)

    assert sorted(r.line_number for r in dead.collect()) == [4, 5]
    reasons = {json.loads(r.raw)["job_id"]: r.reason for r in quarantine.collect()}
    assert reasons[f"{tag}-4"] == "wrong type: cores (expected integer)"
    assert reasons[f"{tag}-5"] == "wrong type: wall_seconds (expected number)"
    assert reasons[f"{tag}-6"] == "missing required field: host"
    assert set(reasons[f"{tag}-7"].split("; ")) == {
        "missing required field: vo",
        "missing required field: site",
    }
    assert reasons[f"{tag}-8"] == "out of range: wall_seconds < 0"
    assert reasons[f"{tag}-9"] == "end_time before start_time"

    by_id = {r.job_id: r for r in silver.collect()}
    assert by_id[f"{tag}-1"].cpu_user_seconds == 40000.0  # the re-sent, newer record won
    assert {j for j, r in by_id.items() if r.is_outlier} == {f"{tag}-10", f"{tag}-11"}


# A small simulated grid far from the demo week, with 5 % of its records broken on purpose.
BAD_GRID = {"start": date(2024, 3, 4), "days": 2, "sites": 6, "cpu_models": 4, "jobs": 300,
            "seed": 4242, "monitored_hosts_per_site": 1, "node_interval": 900,
            "latency_interval": 3600, "bad_share": 0.05, "resend_share": 0.02}  # fmt: skip


def _planted_key(topic: str, rec: dict) -> str:
    """The simulator's key of a planted bad record (truth.json bad_records) from its raw JSON."""
    if topic == "grid.jobs":
        return rec["job_id"]
    if topic == "grid.nodes":
        return f"{rec['host']}|{rec['ts']}|{rec['kind']}"
    return f"{rec['src_host']}|{rec['dst_host']}|{rec['ts']}|{rec['test']}"


@pytest.mark.adds_records
def test_planted_bad_records_of_the_simulator_reach_the_quarantine_tables(
    spark, kafka, tmp_path
) -> None:
    """Every planted bad job, node sample and network result, sent through Kafka, is read back
    from its silver.quarantine_<input> Delta table with the rule the simulator planted, and
    nothing else of that grid is; the good records are in silver once each."""
    from gridlake.bronze.ingest import ingest
    from gridlake.catalog import QUARANTINE_NETWORK, QUARANTINE_NODES, SILVER_NODE_SAMPLES
    from gridlake.silver.refine import refine
    from gridlake.sources.simulate import SimConfig, simulate

    truth = simulate(SimConfig(**BAD_GRID), tmp_path, progress=False)
    counts = truth["counts"]
    for kind in ("jobs", "nodes", "network"):
        pub = gridlake_cli("publish", "--quiet", "--topic", f"grid.{kind}",
                           str(tmp_path / f"{kind}.jsonl"))  # fmt: skip
        assert pub.returncode == 0, pub.stderr[-2000:]
    ingest(spark, ("jobs", "nodes", "network"))
    for kind in ("nodes", "jobs", "network"):  # an operator's call: this grid is a burst
        refine(spark, kind, accept_volume_drop=True)

    quarantines = {"grid.jobs": QUARANTINE_JOBS, "grid.nodes": QUARANTINE_NODES,
                   "grid.network": QUARANTINE_NETWORK}  # fmt: skip
    for topic, table in quarantines.items():
        planted = {b["key"]: b["rule"] for b in truth["bad_records"] if b["topic"] == topic}
        assert len(planted) >= 5, topic
        # this grid's rows: its job ids (bad ones are "bad-sim4242-...") or its days (March
        # 2024: nothing else is there)
        mine = F.col("raw").contains("sim4242-") | F.col("raw").contains('"2024-03-0')
        got: dict[str, list[str]] = defaultdict(list)
        for r in _table(spark, table).filter(mine).select("raw", "reasons").collect():
            got[_planted_key(topic, json.loads(r.raw))].extend(r.reasons)
        assert set(got) == set(planted), topic  # every planted record, and nothing else
        for key, rule in planted.items():
            assert any(reason.startswith(rule) for reason in got[key]), (topic, key, got[key])
    # the good ones: each job attempt once (re-sent copies absorbed), each sample once
    jobs = _table(spark, SILVER_JOBS).filter(F.col("job_id").startswith("sim4242-"))
    assert counts["resent_jobs"] > 0
    assert jobs.count() == jobs.select("job_id").distinct().count() == counts["jobs"]
    hosts = [h for s in truth["sites"].values() for h in s["monitored_hosts"]]
    samples = _table(spark, SILVER_NODE_SAMPLES).filter(
        F.col("host").isin(hosts) & (F.year("ts") == 2024)
    )
    assert samples.count() == counts["nodes"]
