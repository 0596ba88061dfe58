"""SIGKILL at random moments, Jepsen-style: `gridlake publish`, `ingest`, `refine` and `analyze`
killed (the whole process group: the Python driver and its JVM) at a seeded random moment of their
run, then run again to the end; after each trial the warehouse must be what an uninterrupted run
leaves: bronze holds every broker record once (rows == distinct (partition, offset) == the
topics' watermarks), silver one row per job_id with every good record of the published grid and
every planted bad one in quarantine, and every gold table equal, row for row, to a second
uninterrupted `analyze` of the same silver.

A trial is a round: a fresh simulated day (its own seed: its own job ids) published, ingested,
refined and analysed, each step killed once at a random point of its run (the delay drawn between
5 % and 100 % of the step's last uninterrupted duration in this session, so the kills land from
the JVM's start to its last commit), then re-run. The kill point is recorded as the seconds
after the start and the Delta commits made before the kill (0: before the first one, "ended": the
run ended first). Every trial is a line of ``<state>/faults/trials.tsv`` (the README's table).

Runs on an instance of its own (``make test-faults``: GRIDLAKE_FAULT_ROUNDS=5, 20 kills; the
short form in ``make test``: 1 round, 4 kills), with a Kafka broker and a Derby metastore of its
own on loopback. Each command runs as its own process with GRIDLAKE_SERVER=off: a crash of the
writer's own process, not of a client of the warm server.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.settings import REPO_ROOT, get_settings

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

ROUNDS = int(os.environ.get("GRIDLAKE_FAULT_ROUNDS", "1"))
# the gold groups analyze runs (comma-separated; default all)
GOLD_GROUPS = os.environ.get("GRIDLAKE_FAULT_GOLD_GROUPS", "")
# the steps killed in each round, and ingest's micro-batch (smaller: more commits to land between)
STEPS = os.environ.get("GRIDLAKE_FAULT_STEPS", "publish,ingest,refine,analyze").split(",")
MAX_OFFSETS = os.environ.get("GRIDLAKE_FAULT_MAX_OFFSETS", "150")
SEED = int(os.environ.get("GRIDLAKE_FAULT_SEED", "2611"))
FIRST_DAY = date(2025, 1, 6)  # a Monday; round r is the day r weeks later (a week of its own)
INPUTS = ("jobs", "nodes", "network")
# first guesses of an uninterrupted run (s); replaced by each step's measured run
GUESS = {"publish": 8.0, "ingest": 60.0, "refine": 90.0, "analyze": 150.0}
# gold columns an uninterrupted re-run may change: none of the gold tables analyze writes has one
VOLATILE = {"trained_at"}


def _grid(round_no: int) -> dict:
    return {"start": FIRST_DAY + timedelta(weeks=round_no), "days": 1, "sites": 6,
            "cpu_models": 3, "jobs": 160, "seed": SEED + round_no,
            "monitored_hosts_per_site": 1, "node_interval": 1800, "latency_interval": 3600,
            "bad_share": 0.03, "resend_share": 0.03}  # fmt: skip


def _env() -> dict[str, str]:
    return {**os.environ, "GRIDLAKE_SERVER": "off", "GRIDLAKE_ANALYZE_SKIP_CURRENT": "0"}


def _command(step: str, folder: Path) -> list[list[str]]:
    exe = str(get_settings().home / "venv" / "bin" / "gridlake")
    if step == "publish":
        return [[exe, "publish", "--quiet", "--topic", f"grid.{k}", str(folder / f"{k}.jsonl")]
                for k in INPUTS]  # fmt: skip
    if step == "ingest":
        return [[exe, "ingest", "--inputs", ",".join(INPUTS), "--max-offsets", MAX_OFFSETS]]
    if step == "refine":
        return [[exe, "refine", "--inputs", ",".join(INPUTS), "--accept-volume-drop"]]
    return [[exe, "analyze", *(["--only", GOLD_GROUPS] if GOLD_GROUPS else [])]]


def _delta_commits(root: Path) -> int:
    return sum(1 for _ in root.glob("*/*/_delta_log/*.json")) if root.exists() else 0


def _run(cmds: list[list[str]], timeout: float = 1800) -> float:
    t0 = time.monotonic()
    for cmd in cmds:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=timeout)
        # publish exits 1 when it dead-lettered a line (the planted unparseable ones): delivered
        assert proc.returncode in ((0, 1) if cmd[1] == "publish" else (0,)), (
            cmd, proc.returncode, proc.stderr[-3000:])  # fmt: skip
    return time.monotonic() - t0


def _kill_at(cmds: list[list[str]], delay: float, root: Path) -> tuple[str, int | str]:
    """Run the commands one after the other and SIGKILL the process group of the one running
    ``delay`` seconds after the start; (which command, Delta commits made before the kill)."""
    before = _delta_commits(root)
    t0 = time.monotonic()
    for cmd in cmds:
        proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        try:
            left = delay - (time.monotonic() - t0)
            proc.wait(timeout=max(left, 0.01))
            continue  # ended before its kill: the next command takes it
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=120)
            return " ".join(cmd[1:3]), _delta_commits(root) - before
    return "ended", "ended"


def _watermarks(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    from gridlake.sources.kafka_auth import admin_conf

    c = Consumer({**admin_conf(bootstrap), "group.id": f"wm-{uuid.uuid4()}"})
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        marks = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in parts]
        return sum(high - low for low, high in marks)
    finally:
        c.close()


def _load(spark, table) -> DataFrame:
    return spark.read.format("delta").load(table.path())


def _check_bronze(spark, kafka: str) -> None:
    from gridlake.catalog import BRONZE

    for kind in INPUTS:
        bronze = _load(spark, BRONZE[kind])
        rows = bronze.count()
        assert rows == bronze.select("partition", "offset").distinct().count(), kind
        assert rows == _watermarks(kafka, f"grid.{kind}"), kind


def _check_silver(spark, truths: list[dict]) -> None:
    from gridlake.catalog import QUARANTINE_JOBS, SILVER_JOBS, SILVER_NODE_SAMPLES

    jobs = _load(spark, SILVER_JOBS)
    assert jobs.count() == jobs.select("job_id").distinct().count()  # one row per job_id
    assert jobs.count() == sum(t["counts"]["jobs"] for t in truths)
    planted = {b["key"] for t in truths for b in t["bad_records"] if b["topic"] == "grid.jobs"}
    quarantined = {
        r.job_id
        for r in _load(spark, QUARANTINE_JOBS)
        .select(F.get_json_object("raw", "$.job_id").alias("job_id"))
        .distinct()
        .collect()
    }
    assert quarantined == planted
    samples = _load(spark, SILVER_NODE_SAMPLES)
    assert samples.count() == sum(t["counts"]["nodes"] for t in truths)
    assert samples.count() == samples.select("host", "ts", "kind").distinct().count()


def _gold(spark) -> dict[str, DataFrame]:
    from gridlake.gold.analyze import gold_tables

    manifest = json.loads((REPO_ROOT / "dags" / "gridlake_manifest.json").read_text())
    groups = set(GOLD_GROUPS.split(",")) if GOLD_GROUPS else None
    written = {t for g in manifest["gold_groups"] if groups is None or g["group"] in groups
               for t in g["writes"]}  # fmt: skip
    assert written, GOLD_GROUPS
    out = {}
    for table in gold_tables():
        if table.full_name not in written:
            continue
        df = _load(spark, table)
        out[table.full_name] = df.select(*[c for c in df.columns if c not in VOLATILE])
    return out


def _gold_snapshot(spark, folder: Path) -> dict[str, str]:
    """The gold tables as they are now, copied to Parquet (Delta's current version would move)."""
    paths = {}
    for name, df in _gold(spark).items():
        paths[name] = str(folder / name)
        df.write.mode("overwrite").parquet(paths[name])
    return paths


def _check_gold_equal(spark, snapshot: dict[str, str]) -> None:
    now = _gold(spark)
    for name, path in snapshot.items():
        before = spark.read.parquet(path)
        after = now[name].select(*before.columns)
        extra, missing = after.exceptAll(before).count(), before.exceptAll(after).count()
        assert (extra, missing) == (0, 0), f"{name}: {extra} rows more, {missing} fewer"


@pytest.mark.timeout(600 + 1500 * ROUNDS)  # the suite's 1,800 s per test is one round's
def test_sigkill_at_random_moments_loses_and_doubles_nothing(spark, kafka, derby, tmp_path) -> None:
    settings = get_settings()
    from gridlake.sources.simulate import SimConfig, simulate

    rng = random.Random(SEED)
    root = Path(settings.storage_root)
    report = settings.state / "faults" / "trials.tsv"
    report.parent.mkdir(parents=True, exist_ok=True)
    lines = ["round\tstep\tkilled in\tafter s\tcommits before kill\trun to end s\toutcome"]
    last = dict(GUESS)
    truths: list[dict] = []
    try:
        for r in range(ROUNDS):
            folder = tmp_path / f"round-{r}"
            truths.append(simulate(SimConfig(**_grid(r)), folder, progress=False))
            if "publish" not in STEPS:  # its kill is not tried this time; its records are needed
                last["publish"] = _run(_command("publish", folder))
            for step in STEPS:
                cmds = _command(step, folder)
                delay = round(rng.uniform(0.05, 1.0) * last[step], 1)
                where, commits = _kill_at(cmds, delay, root)
                # then the step again, to its end; a killed publish is re-sent whole, as a
                # producer retrying does: Kafka holds some records twice, silver absorbs them
                last[step] = _run(cmds)
                if step == "publish":
                    outcome = "re-sent"
                elif step == "ingest":
                    _check_bronze(spark, kafka)
                    outcome = "bronze == broker offsets"
                elif step == "refine":
                    _check_silver(spark, truths)
                    outcome = "silver one row per job_id, every record once"
                else:
                    snapshot = _gold_snapshot(spark, tmp_path / f"gold-{r}")
                    last[step] = _run(cmds)  # the uninterrupted run to compare with
                    _check_gold_equal(spark, snapshot)
                    outcome = "gold == an uninterrupted run"
                lines.append(
                    f"{r}\t{step}\t{where}\t{delay}\t{commits}\t{last[step]:.0f}\t{outcome}"
                )
                print(lines[-1], flush=True)
    finally:
        report.write_text("\n".join(lines) + "\n")
    # A kill drawn after the step's end is a trial wasted, not a failure (a run faster than the
    # last one); over the full form's rounds most must land inside a run.
    killed = [ln for ln in lines[1:] if ln.split("\t")[2] != "ended"]
    if ROUNDS >= 3:
        assert len(killed) >= 0.75 * len(STEPS) * ROUNDS, lines
