"""``make bench``: speed and memory figures, each reported against a reference measured in the
same run (never as absolute targets inside unit tests).

Stages (``--only`` picks some):

- ``simulate``: simulator rate (jobs/s and records/s with node and network samples) at two sizes,
  and the simulator's peak memory at both (it streams: memory must stay flat).
- ``publish``: ``gridlake publish`` rate against Kafka's own ``ProducerPerformance`` tool sending
  the same payloads with the same producer settings, ratio (target >= 0.7).
- ``ingest``: ``gridlake ingest`` (Kafka -> bronze, Structured Streaming into Delta, exactly
  once) records/s against Kafka's own ``ConsumerPerformance`` (kafka-consumer-perf-test) reading
  the same topic on the same broker in the same run, ratio (target >= 0.8). Measured in a session
  that has run an ingest before, as the gridlake server runs it every five minutes (the tool's
  rate leaves out its JVM's start likewise); the first run's time is reported beside it.
- ``agent``: the node agent's overhead measured as seed 004 measures a collector: a CPU-bound
  workload run repeatedly without and with the agent sampling every 10 s (blocks ABAB), mean and
  standard deviation of each, ratio to baseline (target < 1%).
- ``silver``: refine day 1 into empty silver tables and day 2 after it (node samples, jobs and
  ``silver.job_node_features``, as ``gridlake refine`` does), bulk-load days 3-30 as copies of
  days 1-2 (30 days of history: 30 M jobs at the full scale), refine day 31 into it;
  the day-31 / day-1 time ratio (target <= 1.3) and the peak driver memory.
- ``gold``: every table of the groups that read silver.jobs alone (site_efficiency, efficiency,
  speed_factors) on a grid of N jobs and one of 10 N (hundreds of CPU models, tens of thousands
  of tasks): wall time, fit iterations, peak driver memory, ``full_ratio_10n_vs_n`` (target
  <= 10); then ``gridlake analyze`` of those groups after one new day refined into 30 days of
  history against ``--full`` on the same days, ``incremental_ratio_vs_full`` (target <= 0.2).
- ``spark-vs-duckdb``: gold.site_efficiency_weekly and gold.cpu_model_efficiency computed by
  Spark's transforms from a silver.jobs Delta table of 10 N jobs, against the same SQL in DuckDB
  over the table's Parquet files (same rows checked first), warm runs, ratio (target <= 3).
- ``network``: a simulated day and week of one-minute perfSONAR latency results between all
  directed pairs of S sites (full: 100 sites, 9,900 paths, ~100 M results a week): bronze ->
  silver refine, then gold.network_link_status and gold.network_cost_matrix; wall time, peak
  memory, week / day ratio (target < 9x for 7x the data).
- ``cluster``: the ``silver`` and ``gold`` stages run twice in the same run, each in a child
  process: in local mode (one JVM, one disk) and on the cluster that ``make cluster-up`` started
  (every Spark job a YARN application, the warehouse on HDFS); seconds of each step on both,
  ratio cluster / local (target <= 2 on this one 2-core machine, where the cluster only adds
  RPC, container start-up and replication), and the shuffle bytes and task counts of each run
  from Spark's event logs (what the README's sizing derives from).
- ``serving``: every chart of every dashboard through Superset's chart-data API over a synthetic
  year of gold for a 100-site grid, p50/p95 per dashboard (target p95 < 1 s), and the same SQL in
  DuckDB over the same Delta files (``gridlake.ops.bench_serving``).
- ``freshness``: probe jobs published while a scheduled Airflow runs the pipeline, watched in
  the SQL view and the dashboard; end-to-end and pipeline p95 (targets 15 and 5 minutes;
  ``gridlake.ops.bench_freshness``).

Scales: ``tiny`` (make test's short form: a few stages end to end), ``small`` (minutes, a smoke
check), ``standard`` (the default) and ``full`` (the issues' figures: 10 M simulated jobs, 1 M jobs
a day into 30 M, gold on 1 M and 10 M; hours on 2 cores). Targets apply at standard and full.
The bench uses its own instance (``GRIDLAKE_INSTANCE=bench``, ports + 400), wiped at the start.
Results: printed, and written to ``$GRIDLAKE_HOME/bench-results/results-<scale>.json``, each
stage with ``measured_at``, ``scale``, ``load_average``, ``target`` and ``met`` (see ``TARGETS``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from gridlake.settings import REPO_ROOT, get_settings
from gridlake.sources import kafka_auth


@dataclass(frozen=True)
class Scale:
    sim_jobs: int
    publish_records: int
    agent_runs: int
    agent_work_seconds: float
    day_jobs: int
    gold_jobs: int  # the small size; the large one is 10x
    gold_cpu_models: int
    gold_sites: int
    net_sites: int


SCALES = {
    # make test's short form (tests/test_bench.py, a few stages end to end in a minute or two)
    "tiny": Scale(10_000, 20_000, 2, 1.0, 500, 2_000, 10, 6, 4),
    "small": Scale(50_000, 100_000, 6, 2.0, 3_000, 20_000, 40, 12, 8),
    "standard": Scale(500_000, 500_000, 10, 3.0, 20_000, 100_000, 100, 24, 20),
    "full": Scale(10_000_000, 1_000_000, 20, 3.0, 1_000_000, 1_000_000, 200, 40, 100),
}
INFRA = REPO_ROOT / "infra"


def _infra(script: str, action: str) -> None:
    subprocess.run(["bash", str(INFRA / script), action], check=True, stdout=subprocess.DEVNULL)


@contextmanager
def _services(names: tuple[str, ...]) -> Iterator[None]:
    started = []
    try:
        for name in names:
            _infra(f"{name}.sh", "start")
            started.append(name)
        yield
    finally:
        for name in reversed(started):
            _infra(f"{name}.sh", "stop")


def _peak_reset(pid: int) -> None:
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM (peak RSS)


def _peak_mb(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    m = re.search(r"VmHWM:\s+(\d+) kB", text)
    return round(int(m.group(1)) / 1024, 1) if m else None


def _simulate(out: Path, jobs: int, days: int, start: date, **kw: Any) -> tuple[float, float, dict]:
    """Run the simulator in a child process; (seconds, peak RSS MB, truth counts)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    args = [sys.executable, "-m", "gridlake.ops.cli", "simulate", "--out", str(out), "--quiet",
            "--jobs", str(jobs), "--days", str(days), "--start", start.isoformat()]  # fmt: skip
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    truth = json.loads((out / "truth.json").read_text())
    # ru_maxrss of children is the max over all children so far: report it only when it grew
    return seconds, round(max(peak, before) / 1024, 1), truth["counts"]


def bench_simulate(scale: Scale, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, n in (("small", scale.sim_jobs // 10), ("large", scale.sim_jobs)):
        folder = work / f"sim-{label}"
        seconds, peak, counts = _simulate(folder, n, 7, date(2026, 9, 7))
        records = counts.get("jobs", 0) + counts.get("nodes", 0) + counts.get("network", 0)
        out[label] = {
            "jobs": counts.get("jobs", 0),
            "node_samples": counts.get("nodes", 0),
            "network_results": counts.get("network", 0),
            "seconds": round(seconds, 1),
            "jobs_per_second": round(counts.get("jobs", 0) / seconds),
            "records_per_second": round(records / seconds),
            "peak_rss_mb": peak,
        }
        shutil.rmtree(folder, ignore_errors=True) if label == "large" else None
    out["peak_rss_ratio_large_vs_small"] = round(
        out["large"]["peak_rss_mb"] / max(out["small"]["peak_rss_mb"], 1e-9), 2
    )
    return out


def _producer_performance(path: Path, n: int) -> float:
    settings = get_settings()
    libs = settings.home / "kafka" / "libs"
    cmd = [
        "java", "-cp", f"{libs}/*", "org.apache.kafka.tools.ProducerPerformance",
        "--topic", "grid.jobs", "--num-records", str(n), "--payload-file", str(path),
        "--throughput", "-1",
        # signed in as gridlake publish is (jobs): the same SASL/SCRAM cost on both sides
        "--producer.config", str(kafka_auth.java_client_properties(settings, "jobs")),
        "--producer-props", f"bootstrap.servers={settings.kafka_bootstrap}", "acks=all",
        "enable.idempotence=true", "linger.ms=20", "compression.type=lz4",
    ]  # fmt: skip
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", text)
    if not m:
        raise RuntimeError(f"ProducerPerformance printed no summary:\n{text[-2000:]}")
    return float(m[-1][1])


def bench_publish(scale: Scale, work: Path) -> dict[str, Any]:
    from gridlake.sources.publish import publish_files

    sim = work / "sim-small" / "jobs.jsonl"
    if not sim.exists():
        _simulate(work / "sim-small", max(scale.sim_jobs // 10, 10_000), 7, date(2026, 9, 7))
    lines = [x for x in sim.read_text().splitlines() if x.strip()]
    payload = work / "publish.jsonl"
    with payload.open("w") as fh:
        for i in range(scale.publish_records):
            fh.write(lines[i % len(lines)] + "\n")
    reference = _producer_performance(payload, scale.publish_records)
    t0 = time.perf_counter()
    report = publish_files("grid.jobs", [payload], progress=False)
    seconds = time.perf_counter() - t0
    ours = report.published / seconds
    return {
        "records": report.published,
        "gridlake_publish_msg_per_s": round(ours),
        "kafka_producer_performance_msg_per_s": round(reference),
        "ratio": round(ours / reference, 3),
        "target": ">= 0.7",
    }


def _consumer_performance(topic: str, n: int) -> dict[str, float]:
    """Kafka's own consumer tool reading the first ``n`` records of ``topic`` (a new group, from
    the earliest offset): its records/s overall and while fetching."""
    settings = get_settings()
    libs = settings.home / "kafka" / "libs"
    cmd = [
        "java", "-cp", f"{libs}/*", "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server", settings.kafka_bootstrap, "--topic", topic,
        "--messages", str(n), "--group", f"bench-consumer-perf-{time.time_ns()}",
        "--timeout", "120000",
        "--consumer.config", str(kafka_auth.java_client_properties(settings, "admin")),
    ]  # fmt: skip
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header = next((i for i, ln in enumerate(lines) if ln.startswith("start.time")), None)
    if header is None or header + 1 >= len(lines):
        raise RuntimeError(f"ConsumerPerformance printed no summary:\n{text[-2000:]}")
    row = dict(zip((h.strip() for h in lines[header].split(",")),
                   (v.strip() for v in lines[header + 1].split(",")), strict=False))  # fmt: skip
    return {
        "records": float(row["data.consumed.in.nMsg"]),
        "records_per_s": float(row["nMsg.sec"]),
        "fetch_records_per_s": float(row["fetch.nMsg.sec"]),
    }


def bench_ingest(scale: Scale, work: Path) -> dict[str, Any]:
    """``gridlake ingest`` (Kafka -> bronze.jobs, Structured Streaming into Delta, exactly once)
    against Kafka's ConsumerPerformance reading the same topic on the same broker: records/s of
    each, ratio (target >= 0.8)."""
    from gridlake.bronze.ingest import ingest
    from gridlake.settings import TOPICS
    from gridlake.sources.publish import publish_files

    sim = work / "sim-small" / "jobs.jsonl"
    if not sim.exists():
        _simulate(work / "sim-small", max(scale.sim_jobs // 10, 10_000), 7, date(2026, 9, 7))
    lines = [x for x in sim.read_text().splitlines() if x.strip()]
    spark = _spark()
    # The first ingest of a session pays for the JVM's JIT, Spark's code generation for the
    # Kafka source and the Delta sink, the table checks and the checkpoint's creation: the
    # gridlake server pays it once, the DAG's runs every five minutes after it do not. A run
    # over a small first payload takes it, timed apart (first_run_*).
    warm = work / "ingest-first.jsonl"
    warm.write_text("".join(lines[i % len(lines)] + "\n" for i in range(1_000)))
    report = publish_files("grid.jobs", [warm], progress=False)
    assert report.ok, report.problems[:5]
    t0 = time.perf_counter()
    first = sum(r.rows for r in ingest(spark, ("jobs",)))
    first_seconds = time.perf_counter() - t0
    payload = work / "ingest.jsonl"
    n = scale.publish_records
    with payload.open("w") as fh:
        for i in range(n):
            fh.write(lines[i % len(lines)] + "\n")
    report = publish_files("grid.jobs", [payload], progress=False)
    assert report.ok, report.problems[:5]
    topic_records = (
        spark.read.format("kafka")
        .options(**kafka_auth.spark_options(get_settings(), "ingest"))
        .option("subscribe", TOPICS["jobs"])
        .load()
        .count()
    )  # the publish stage may have run before
    reference = _consumer_performance(TOPICS["jobs"], topic_records)
    t0 = time.perf_counter()
    results = ingest(spark, ("jobs",))
    seconds = time.perf_counter() - t0
    rows = sum(r.rows for r in results)
    if first + rows != topic_records:
        raise RuntimeError(f"ingest wrote {first} + {rows} bronze rows for {topic_records} records")
    ours = rows / seconds
    spark.stop()
    return {
        "records": rows,
        "gridlake_ingest_records_per_s": round(ours),
        "gridlake_ingest_seconds": round(seconds, 1),
        "first_run_records": first,
        "first_run_seconds": round(first_seconds, 1),
        "kafka_consumer_perf_test_records_per_s": round(reference["records_per_s"]),
        "kafka_consumer_perf_test_fetch_records_per_s": round(reference["fetch_records_per_s"]),
        "ratio_vs_consumer_perf_test": round(ours / reference["records_per_s"], 3),
        "target": ">= 0.8",
        "met": ours / reference["records_per_s"] >= 0.8,
    }


WORKLOAD = (  # CPU-bound: repeated SHA-256 over 4 KiB
    "import sys,hashlib\nb=b'x'*4096\nn=int(sys.argv[1])\n"
    "for _ in range(n): b=hashlib.sha256(b).digest()*128\n"
)


def _calibrate(seconds: float) -> int:
    n = 20_000
    while True:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", WORKLOAD, str(n)], check=True)
        dt = time.perf_counter() - t0
        if dt > 0.5:
            return int(n * seconds / dt)
        n *= 4


def _timed_runs(n_iter: int, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", WORKLOAD, str(n_iter)], check=True)
        out.append(time.perf_counter() - t0)
    return out


def bench_agent(scale: Scale, work: Path, interval: float = 10.0) -> dict[str, Any]:
    n_iter = _calibrate(scale.agent_work_seconds)
    base: list[float] = []
    with_agent: list[float] = []
    half = max(1, scale.agent_runs // 2)
    for _block in range(2):  # ABAB against drift of a shared machine
        base += _timed_runs(n_iter, half)
        agent = subprocess.Popen(
            [sys.executable, "-m", "gridlake.ops.cli", "agent", "--site", "BENCH", "--host",
             "bench.local", "--interval", str(interval), "--spool", str(work / "agent.spool")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(2)  # started and connected
        try:
            with_agent += _timed_runs(n_iter, half)
        finally:
            agent.terminate()
            agent.wait(60)
    mb, sb = statistics.mean(base), statistics.stdev(base)
    ma, sa = statistics.mean(with_agent), statistics.stdev(with_agent)
    return {
        "interval_seconds": interval,
        "runs_per_arm": len(base),
        "baseline_mean_s": round(mb, 4),
        "baseline_sd_s": round(sb, 4),
        "with_agent_mean_s": round(ma, 4),
        "with_agent_sd_s": round(sa, 4),
        "overhead_ratio": round(ma / mb - 1, 4),
        "overhead_ratio_sd": round((ma / mb) * ((sa / ma) ** 2 + (sb / mb) ** 2) ** 0.5, 4),
        "target": "< 0.01",
    }


def _spark():  # noqa: ANN202
    from gridlake.spark import get_spark

    return get_spark(app_name="gridlake-bench")


def _jvm_pid(spark: Any) -> int:
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def _timed(fn: Callable[[], Any], pids: list[int]) -> tuple[float, dict[str, float | None]]:
    for p in pids:
        _peak_reset(p)
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    return seconds, {str(p): _peak_mb(p) for p in pids}


def _load_bronze(spark: Any, path: str, name: str, day_col: str, days: list[date]) -> None:
    """Append the records of ``days`` to bronze.<name>, as ``gridlake ingest`` would have."""
    from pyspark.sql import functions as F

    from gridlake.catalog import BRONZE
    from gridlake.silver.files import bronze_from_jsonl

    table = BRONZE[name]
    table.ensure(spark)
    df = bronze_from_jsonl(spark, path, name)
    day = F.to_date(F.get_json_object("value", f"$.{day_col}"))
    rows = (
        df.filter(day.isin(*days))
        .withColumn("ingested_at", F.current_timestamp())
        .withColumn("ingest_date", F.current_date())
    )
    table.conform(rows).write.format("delta").mode("append").save(table.path())


def _seed_history(
    spark: Any,
    source_days: list[date],
    copies: int,
    tables: tuple[str, ...] | None = None,
    first: int = 1,
) -> dict[str, int]:
    """Silver history as copies ``first``..``copies`` of the refined ``source_days``: copy k
    moves every timestamp by k x len(source_days) days and gives job ids a suffix, so the
    copies fill the days after the source ones. A bulk load of history (not a refine: its time
    is reported on its own); rows per table after it. One append per copy and table, each
    reading the table as it was before the load (a single plan for all copies ran out of
    execution memory at the full scale: 28 M jobs and their node samples in one write)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from gridlake.catalog import (
        SILVER_JOB_NODE_FEATURES,
        SILVER_JOBS,
        SILVER_NODE_DISK_SAMPLES,
        SILVER_NODE_SAMPLES,
    )

    span = len(source_days)
    plans = (
        (SILVER_JOBS, "end_time", ("submit_time", "start_time", "end_time"),
         lambda k: {"job_id": F.concat("job_id", F.lit(f"-h{k}")),
                    "retry_of": F.concat("retry_of", F.lit(f"-h{k}")),
                    "week": F.to_date(F.date_trunc("week", "end_time"))}),
        (SILVER_JOB_NODE_FEATURES, "end_time", ("start_time", "end_time"),
         lambda k: {"job_id": F.concat("job_id", F.lit(f"-h{k}")),
                    "week": F.to_date(F.date_trunc("week", "end_time"))}),
        (SILVER_NODE_SAMPLES, "ts", ("ts",), lambda k: {"sample_date": F.to_date("ts")}),
        (SILVER_NODE_DISK_SAMPLES, "ts", ("ts",), lambda k: {"sample_date": F.to_date("ts")}),
    )  # fmt: skip
    rows: dict[str, int] = {}
    for table, day_col, times, derived in plans:
        if tables is not None and table.full_name not in tables:
            continue
        path = table.path()
        version = DeltaTable.forPath(spark, path).history(1).select("version").first()[0]
        src = spark.read.format("delta").option("versionAsOf", version).load(path)
        src = src.filter(F.to_date(day_col).isin(*source_days))
        for k in range(first, copies + 1):
            shift = F.expr(f"make_dt_interval({k * span})")
            df = src
            for c in times:
                df = df.withColumn(c, F.col(c) + shift)
            for c, expr in derived(k).items():
                df = df.withColumn(c, expr)
            table.conform(df).write.format("delta").mode("append").save(path)
        rows[table.full_name] = spark.read.format("delta").load(path).count()
    return rows


def bench_silver(scale: Scale, work: Path) -> dict[str, Any]:
    """Refine day 1 into empty silver tables and day 2 after it; then 28 days of history (days
    3-30) loaded in bulk as copies of days 1 and 2 (refining them one by one would take a day
    on 2 cores at the full scale and measure nothing more); then refine day 31 into that history.
    Days 1-2 and day 31 are two simulations (different seeds, so different job ids), run side
    by side; every refined day goes Kafka-format JSON -> bronze -> silver with the quality gate."""
    from concurrent.futures import ThreadPoolExecutor

    from gridlake.silver.refine import refine, refresh_job_node_features

    start = date(2026, 7, 6)
    first, last = work / "sim-silver-days-1-2", work / "sim-silver-day-31"
    day_31 = start + timedelta(days=30)
    # node samples grow with the grid: 2 monitored hosts a site at the small scale, 100 at full
    monitored = max(2, scale.day_jobs // 10_000)
    kw = {"node_interval": 300, "latency_interval": 3600, "monitored_hosts": monitored}
    t0 = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        sims = [
            pool.submit(_simulate, first, scale.day_jobs * 2, 2, start, **kw),
            pool.submit(_simulate, last, scale.day_jobs, 1, day_31, seed=31, **kw),
        ]
        counts = [f.result()[2] for f in sims]
    out: dict[str, Any] = {
        "jobs_per_day": scale.day_jobs,
        "monitored_hosts_per_site": monitored,
        "simulated": {"days_1_2": counts[0], "day_31": counts[1]},
        "simulate_seconds": round(time.perf_counter() - t0, 1),
    }
    spark = _spark()
    pids = [os.getpid(), _jvm_pid(spark)]

    def load_and_refine(folder: Path, chunk: list[date]) -> None:
        # file: URIs (a cluster's default file system is HDFS; its executors here share the disk)
        _load_bronze(spark, (folder / "jobs.jsonl").as_uri(), "jobs", "end_time", chunk)
        _load_bronze(spark, (folder / "nodes.jsonl").as_uri(), "nodes", "ts", chunk)
        # as `gridlake refine` does it (and the grid_ingest DAG): node samples first, then jobs,
        # then the features of the jobs either touched
        refine(spark, "nodes")
        refine(spark, "jobs")
        refresh_job_node_features(spark)

    def timed(label: str, fn: Callable[[], Any]) -> Any:
        result: list[Any] = []
        seconds, peaks = _timed(lambda: result.append(fn()), pids)
        out[label] = {"seconds": round(seconds, 1), "peak_rss_mb": peaks}
        print(f"   {label}: {seconds:.1f} s", file=sys.stderr, flush=True)
        return result[0]

    days = [start, start + timedelta(days=1)]
    timed("day_1", lambda: load_and_refine(first, days[:1]))
    timed("day_2", lambda: load_and_refine(first, days[1:]))
    rows = timed("history_days_3_30", lambda: _seed_history(spark, days, 14))
    out["history_days_3_30"]["rows_after"] = rows  # what day 31 is refined into
    timed("day_31", lambda: load_and_refine(last, [day_31]))
    out["ratio_day31_vs_day1"] = round(out["day_31"]["seconds"] / out["day_1"]["seconds"], 3)
    out["ratio_day31_vs_day2"] = round(out["day_31"]["seconds"] / out["day_2"]["seconds"], 3)
    out["driver_peak_rss_mb"] = max(
        (v for k in ("day_1", "day_2", "day_31") for v in out[k]["peak_rss_mb"].values() if v),
        default=None,
    )
    out["target"] = "day31/day1 <= 1.3"
    spark.stop()
    shutil.rmtree(first, ignore_errors=True)
    shutil.rmtree(last, ignore_errors=True)
    return out


# The gold groups that read silver.jobs alone: the gold stage measures them (the others read node
# samples, perfSONAR results or these groups' gold, measured by the silver, network and cluster
# stages).
JOBS_GROUPS = ("site_efficiency", "efficiency", "efficiency_outliers", "speed_factors")


def _wipe_warehouse(spark: Any) -> None:
    """Drop the bench instance's bronze, silver and gold tables (an earlier stage's) and their
    files, wherever the storage root lies (local disk or HDFS)."""
    from gridlake.settings import get_settings

    root = get_settings().storage_root.rstrip("/")
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    for db in ("bronze", "silver", "gold"):
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
        path = jvm.org.apache.hadoop.fs.Path(f"{root}/{db}")
        path.getFileSystem(conf).delete(path, True)
    checkpoints = jvm.org.apache.hadoop.fs.Path(f"{root}/_checkpoints")
    checkpoints.getFileSystem(conf).delete(checkpoints, True)


GOLD_PARTS = ("full", "incremental")


def bench_gold(scale: Scale, work: Path, parts: Sequence[str] = GOLD_PARTS) -> dict[str, Any]:
    """Two parts (``parts``: both, or one: ``--only gold:full``, ``--only gold:incremental``;
    at the full scale each takes hours). ``full``: every table of the groups that read
    silver.jobs alone (``JOBS_GROUPS``) computed whole from a silver.jobs of N and of 10 N jobs
    (a week; hundreds of CPU models, tens of thousands of tasks): seconds per group, fit
    iterations, peak memory, ``full_ratio_10n_vs_n`` (target <= 10). ``incremental``:
    ``gridlake analyze`` of those groups on the bench warehouse, 30 days of history
    (``day_jobs`` a day: days 1-2 refined, days 3-30 bulk-loaded as their copies), one new day
    refined into it, then the incremental analyze (what Airflow runs) and the full one
    (``--full``) on the same 31 days: ``incremental_ratio_vs_full`` (target <= 0.2).

    Each of the two measured runs follows a run of its own kind in the same session, as in
    production, where the gridlake server's one session runs the incremental analyze every
    cycle (and keeps its compiled code): the full one follows the full analyze of days 1-28,
    the incremental one follows the incremental analyze of days 29-30 (loaded after it, the
    same week as day 31), timed apart (``incremental_days_29_30``: the session's first)."""
    spark = _spark()
    pids = [os.getpid(), _jvm_pid(spark)]
    out: dict[str, Any] = {}
    if "full" in parts:
        out.update(_gold_full(spark, scale, work, pids))
    if "incremental" in parts:
        out["incremental"] = _gold_incremental(spark, scale, work, pids)
        out["incremental_ratio_vs_full"] = out["incremental"]["ratio_vs_full"]
    spark.stop()
    return out


def _gold_full(spark: Any, scale: Scale, work: Path, pids: list[int]) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from gridlake.gold.analyze import gold_frames
    from gridlake.silver.files import silver_jobs_from_jsonl

    out: dict[str, Any] = {}
    root = get_settings().storage_root.rstrip("/") + "/bench"
    groups = {
        "efficiency": ("site_efficiency", "efficiency", "efficiency_outliers"),
        "speed_factors": ("speed_factors",),
    }
    for label, n in (("n", scale.gold_jobs), ("10n", 10 * scale.gold_jobs)):
        folder = work / f"sim-gold-{label}"
        _simulate(folder, n, 7, date(2026, 8, 3), monitored_hosts=0, latency_interval=86400,
                  cpu_models=scale.gold_cpu_models, sites=scale.gold_sites)  # fmt: skip
        silver_path = f"{root}/silver_jobs_{label}"
        silver_jobs_from_jsonl(spark, (folder / "jobs.jsonl").as_uri()).write.format("delta").mode(
            "overwrite"
        ).save(silver_path)
        shutil.rmtree(folder, ignore_errors=True)
        jobs = spark.read.format("delta").load(silver_path)
        sizes = jobs.agg(
            F.count(F.lit(1)).alias("jobs"),
            F.countDistinct("cpu_model").alias("cpu_models"),
            F.countDistinct("task_id").alias("tasks"),
        ).first()

        def run_all(name: str, jobs: Any = jobs, label: str = label) -> None:
            for group in groups[name]:
                for table, df in gold_frames(jobs, group).items():
                    df.write.format("delta").mode("overwrite").save(f"{root}/{label}/{table}")

        for name in groups:
            seconds, peaks = _timed(lambda g=name: run_all(g), pids)
            out.setdefault(name, {})[label] = {
                **sizes.asDict(), "seconds": round(seconds, 1), "peak_rss_mb": peaks,
            }  # fmt: skip
        fit = (
            spark.read.format("delta")
            .load(f"{root}/{label}/gold.cpu_speed_factors")
            .agg(F.max("iterations").alias("iterations"), F.min("converged").alias("converged"))
            .first()
        )
        out["speed_factors"][label].update(fit.asDict())
    for name in groups:
        g = out[name]
        g["ratio_10n_vs_n"] = round(g["10n"]["seconds"] / g["n"]["seconds"], 2)
    total = {lb: sum(out[name][lb]["seconds"] for name in groups) for lb in ("n", "10n")}
    out["full_seconds"] = total
    out["full_ratio_10n_vs_n"] = round(total["10n"] / total["n"], 2)
    peak = {lb: max((v for name in groups for v in out[name][lb]["peak_rss_mb"].values() if v),
                    default=0.0) for lb in ("n", "10n")}  # fmt: skip
    out["peak_rss_ratio_10n_vs_n"] = round(peak["10n"] / peak["n"], 2) if peak["n"] else None
    return out


def _gold_incremental(spark: Any, scale: Scale, work: Path, pids: list[int]) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    from gridlake.gold.analyze import analyze
    from gridlake.silver.refine import refine

    start = date(2026, 7, 6)  # a Monday: days 1-30 fill weeks 28-32, day 31 is in week 32
    day_31 = start + timedelta(days=30)
    first, last = work / "sim-gold-days-1-2", work / "sim-gold-day-31"
    kw = {"monitored_hosts": 0, "latency_interval": 86400, "cpu_models": scale.gold_cpu_models,
          "sites": scale.gold_sites}  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        sims = [
            pool.submit(_simulate, first, scale.day_jobs * 2, 2, start, **kw),
            pool.submit(_simulate, last, scale.day_jobs, 1, day_31, seed=31, **kw),
        ]
        for f in sims:
            f.result()
    _wipe_warehouse(spark)
    out: dict[str, Any] = {"jobs_per_day": scale.day_jobs, "groups": list(JOBS_GROUPS)}

    def timed(label: str, fn: Callable[[], Any]) -> Any:
        result: list[Any] = []
        seconds, peaks = _timed(lambda: result.append(fn()), pids)
        out[label] = {"seconds": round(seconds, 1), "peak_rss_mb": peaks}
        print(f"   gold {label}: {seconds:.1f} s", file=sys.stderr, flush=True)
        return result[0]

    days = [start, start + timedelta(days=1)]
    _load_bronze(spark, (first / "jobs.jsonl").as_uri(), "jobs", "end_time", days)
    refine(spark, "jobs")
    _seed_history(spark, days, 13, tables=("silver.jobs",))  # days 3-28
    timed("full_28_days", lambda: analyze(spark, groups=JOBS_GROUPS))
    out["history_rows"] = _seed_history(spark, days, 14, tables=("silver.jobs",), first=14)
    timed(  # days 29-30: the session's first incremental run (of day 31's week)
        "incremental_days_29_30",
        lambda: analyze(spark, groups=JOBS_GROUPS, skip_current=True),
    )
    _load_bronze(spark, (last / "jobs.jsonl").as_uri(), "jobs", "end_time", [day_31])
    timed("refine_day_31", lambda: refine(spark, "jobs"))
    per_group: dict[str, float] = {}
    counts = timed(
        "incremental_day_31",
        lambda: analyze(spark, groups=JOBS_GROUPS, skip_current=True, timings=per_group),
    )
    out["incremental_day_31"]["rows_written"] = counts
    out["incremental_day_31"]["group_seconds"] = dict(per_group)
    per_group.clear()
    timed("full_31_days", lambda: analyze(spark, groups=JOBS_GROUPS, timings=per_group))
    out["full_31_days"]["group_seconds"] = dict(per_group)
    out["ratio_vs_full"] = round(
        out["incremental_day_31"]["seconds"] / out["full_31_days"]["seconds"], 3
    )
    shutil.rmtree(first, ignore_errors=True)
    shutil.rmtree(last, ignore_errors=True)
    return out


# The two gold tables of the spark-vs-duckdb stage in DuckDB's SQL, written from the Spark
# transforms (gridlake.gold.site_efficiency.efficiency_measures and
# gridlake.gold.efficiency.cpu_models.cpu_model_efficiency); the stage checks that both engines
# give the same rows before it compares their times.
DUCKDB_SITE_EFFICIENCY_WEEKLY = """
WITH retried AS (SELECT DISTINCT retry_of AS rid FROM jobs WHERE retry_of IS NOT NULL),
j AS (SELECT jobs.*, r.rid IS NOT NULL AS was_retried
      FROM jobs LEFT JOIN retried r ON jobs.job_id = r.rid),
a AS (
  SELECT week, site, vo, count(*) AS jobs,
    count(CASE WHEN status = 'failed' THEN 1 END) AS failed_jobs,
    count(CASE WHEN is_outlier THEN 1 END) AS outlier_jobs,
    sum(cores_wall_seconds) / 3600.0 AS core_hours,
    sum(cpu_seconds) / 3600.0 AS cpu_hours,
    coalesce(sum(CASE WHEN status = 'success' THEN cpu_seconds END), 0) / 3600.0 AS good,
    coalesce(sum(CASE WHEN status = 'failed' THEN cores_wall_seconds END), 0) / 3600.0
      AS wasted_core_hours,
    sum(hs23_core_hours) AS hs23_core_hours,
    sum(CASE WHEN status = 'success' THEN events END) AS events,
    sum(CASE WHEN status = 'success' AND events > 0 THEN cores_wall_seconds END) AS ecs,
    sum(CASE WHEN status = 'success' AND events > 0 THEN events END) AS ee,
    coalesce(sum(CASE WHEN was_retried THEN cores_wall_seconds END), 0) / 3600.0
      AS retry_waste_core_hours
  FROM j GROUP BY week, site, vo)
SELECT week, site, vo, jobs, failed_jobs, outlier_jobs, core_hours, cpu_hours,
  CASE WHEN core_hours > 0 THEN cpu_hours / core_hours END AS cpu_efficiency,
  CASE WHEN core_hours > 0 THEN good / core_hours END AS good_cpu_over_all_wall,
  wasted_core_hours, hs23_core_hours, CAST(events AS BIGINT) AS events,
  CASE WHEN ee <> 0 THEN ecs / ee END AS core_seconds_per_event,
  wasted_core_hours AS badput_core_hours, retry_waste_core_hours
FROM a
"""
DUCKDB_CPU_MODEL_EFFICIENCY = """
WITH j AS (
  SELECT *, CASE WHEN status = 'success' AND events > 0 THEN cpu_seconds / events END AS pe
  FROM jobs)
SELECT microarchitecture, cpu_model_norm, job_type, count(*) AS jobs,
  sum(cores_wall_seconds) / 3600.0 AS core_hours, sum(cpu_seconds) / 3600.0 AS cpu_hours,
  CASE WHEN sum(cores_wall_seconds) > 0 THEN sum(cpu_seconds) / sum(cores_wall_seconds) END
    AS cpu_efficiency,
  count(pe) AS jobs_with_events,
  approx_quantile(pe, 0.5) AS median_cpu_seconds_per_event,
  approx_quantile(pe, 0.9) AS p90_cpu_seconds_per_event,
  approx_quantile(pe * hs23_per_core, 0.5) AS median_hs23_seconds_per_event
FROM j GROUP BY microarchitecture, cpu_model_norm, job_type
"""
# (table, key columns, columns compared exactly to 1e-9 relative; the quantiles are approximate
# in both engines, differently: their largest relative gap is reported, not compared)
SPARK_VS_DUCKDB = (
    ("gold.site_efficiency_weekly", ("week", "site", "vo"), DUCKDB_SITE_EFFICIENCY_WEEKLY),
    ("gold.cpu_model_efficiency", ("microarchitecture", "cpu_model_norm", "job_type"),
     DUCKDB_CPU_MODEL_EFFICIENCY),
)  # fmt: skip
APPROX_COLUMNS = {
    "median_cpu_seconds_per_event", "p90_cpu_seconds_per_event", "median_hs23_seconds_per_event",
}  # fmt: skip


def _same(a: Any, b: Any, rel: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)
    return a == b


def bench_spark_vs_duckdb(scale: Scale, work: Path) -> dict[str, Any]:
    """gold.site_efficiency_weekly and gold.cpu_model_efficiency from the same silver.jobs Delta
    table (10 N jobs of the gold stage's grid, partitioned by week as silver is): Spark's
    transforms writing Delta, against the same SQL in DuckDB over the table's active Parquet
    files (listed by ``deltalake``) writing Parquet; each run twice, the second (warm) timed."""
    import duckdb
    from deltalake import DeltaTable

    from gridlake.gold.efficiency.cpu_models import cpu_model_efficiency
    from gridlake.gold.site_efficiency import site_efficiency_weekly
    from gridlake.silver.files import silver_jobs_from_jsonl

    spark = _spark()
    n = 10 * scale.gold_jobs
    root = get_settings().storage_root.rstrip("/") + "/bench-svd"
    folder = work / "sim-svd"
    _simulate(folder, n, 7, date(2026, 8, 3), monitored_hosts=0, latency_interval=86400,
              cpu_models=scale.gold_cpu_models, sites=scale.gold_sites)  # fmt: skip
    silver_path = f"{root}/silver_jobs"
    silver_jobs_from_jsonl(spark, (folder / "jobs.jsonl").as_uri()).write.format("delta").mode(
        "overwrite"
    ).partitionBy("week").save(silver_path)
    shutil.rmtree(folder, ignore_errors=True)
    jobs = spark.read.format("delta").load(silver_path)
    spark_build = {
        "gold.site_efficiency_weekly": site_efficiency_weekly,
        "gold.cpu_model_efficiency": cpu_model_efficiency,
    }
    con = duckdb.connect()
    con.execute("SET threads = 2")
    files = DeltaTable(silver_path).file_uris()
    con.execute(
        f"CREATE VIEW jobs AS SELECT * FROM read_parquet({files!r}, hive_partitioning = true)"
    )
    out: dict[str, Any] = {"jobs": jobs.count(), "silver_files": len(files)}
    total_spark = total_duck = 0.0
    for table, keys, sql in SPARK_VS_DUCKDB:
        target = f"{root}/{table}"
        spark_s, duck_s = [], []
        for _round in range(2):
            t0 = time.perf_counter()
            spark_build[table](jobs).write.format("delta").mode("overwrite").save(target)
            spark_s.append(time.perf_counter() - t0)
            pq = work / f"duckdb-{table}.parquet"
            t0 = time.perf_counter()
            con.execute(f"COPY ({sql}) TO '{pq}' (FORMAT parquet)")
            duck_s.append(time.perf_counter() - t0)
        # the same rows from both engines (the stage is void otherwise)
        ours = {tuple(r[k] for k in keys): r.asDict()
                for r in spark.read.format("delta").load(target).collect()}  # fmt: skip
        theirs_cur = con.execute(f"SELECT * FROM read_parquet('{pq}')")
        names = [d[0] for d in theirs_cur.description]
        theirs = {}
        for row in theirs_cur.fetchall():
            d = dict(zip(names, row, strict=True))
            theirs[tuple(d[k] for k in keys)] = d
        if set(ours) != set(theirs):
            raise RuntimeError(f"{table}: keys differ: {len(set(ours) ^ set(theirs))} rows")
        worst_approx = 0.0
        for key, row in ours.items():
            for col, value in row.items():
                other = theirs[key].get(col)
                if col in APPROX_COLUMNS:
                    if value is not None and other is not None:
                        gap = abs(value - other) / max(abs(value), abs(other), 1e-300)
                        worst_approx = max(worst_approx, gap)
                elif col in theirs[key] and not _same(value, other):
                    raise RuntimeError(f"{table} {key} {col}: Spark {value!r}, DuckDB {other!r}")
        total_spark += spark_s[-1]
        total_duck += duck_s[-1]
        out[table] = {
            "rows": len(ours),
            "spark_s": [round(x, 2) for x in spark_s],
            "duckdb_s": [round(x, 2) for x in duck_s],
            "ratio_spark_vs_duckdb": round(spark_s[-1] / duck_s[-1], 2),
            "approx_quantiles_max_relative_gap": round(worst_approx, 4),
        }
    con.close()
    spark.stop()
    ratio = total_spark / total_duck
    out.update({
        "spark_s": round(total_spark, 2), "duckdb_s": round(total_duck, 2),
        "ratio_spark_vs_duckdb": round(ratio, 2), "target": "<= 3", "met": ratio <= 3,
    })  # fmt: skip
    return out


def _reset_network(spark: Any) -> None:
    """Empty bronze.network and silver.network and forget refine's checkpoint."""
    from gridlake.catalog import BRONZE, SILVER_NETWORK

    settings = get_settings()
    for table in (BRONZE["network"], SILVER_NETWORK):
        spark.sql(f"DROP TABLE IF EXISTS {table.full_name}")
        shutil.rmtree(table.path(settings), ignore_errors=True)
    shutil.rmtree(f"{settings.checkpoint_root}/silver_network", ignore_errors=True)


def bench_network(scale: Scale, work: Path) -> dict[str, Any]:
    from gridlake.catalog import SILVER_NETWORK
    from gridlake.gold import network
    from gridlake.silver.refine import refine

    start = date(2026, 7, 6)
    folder = work / "sim-network"
    seconds, _, counts = _simulate(folder, 200, 7, start, sites=scale.net_sites, cpu_models=3,
                                   monitored_hosts=0, latency_interval=60)  # fmt: skip
    spark = _spark()
    pids = [os.getpid(), _jvm_pid(spark)]
    settings = get_settings()
    root = settings.storage_root.rstrip("/") + "/bench"
    paths = scale.net_sites * (scale.net_sites - 1)
    out: dict[str, Any] = {"sites": scale.net_sites, "paths": paths,
                           "simulated_results": counts.get("network", 0),
                           "simulate_seconds": round(seconds, 1)}  # fmt: skip
    for label, days in (("day", 1), ("week", 7)):
        _reset_network(spark)
        chunk = [start + timedelta(days=i) for i in range(days)]
        _load_bronze(spark, str(folder / "network.jsonl"), "network", "ts", chunk)

        def run(label: str = label) -> None:
            refine(spark, "network")
            silver = spark.read.format("delta").load(SILVER_NETWORK.path(settings))
            status = network.network_link_status(silver).localCheckpoint()
            status.write.format("delta").mode("overwrite").save(f"{root}/{label}/link_status")
            cost = network.network_cost_matrix(silver, status)
            cost.write.format("delta").mode("overwrite").save(f"{root}/{label}/cost_matrix")

        seconds, peaks = _timed(run, pids)
        rows = spark.read.format("delta").load(SILVER_NETWORK.path(settings)).count()
        out[label] = {"silver_rows": rows, "seconds": round(seconds, 1), "peak_rss_mb": peaks}
    out["ratio_week_vs_day"] = round(out["week"]["seconds"] / out["day"]["seconds"], 2)
    out["data_ratio"] = round(out["week"]["silver_rows"] / out["day"]["silver_rows"], 2)
    out["target"] = "< 9"
    shutil.rmtree(folder, ignore_errors=True)
    spark.stop()
    return out


def _event_log_totals(folder: Path) -> dict[str, int]:
    """Tasks, shuffle bytes written and read, and input bytes of every Spark application whose
    event log lies in ``folder`` (one JSON event per line)."""
    totals = {"tasks": 0, "shuffle_write_bytes": 0, "shuffle_read_bytes": 0, "input_bytes": 0}
    # Spark 4 writes a rolling log as a folder (eventlog_v2_<app>/events_<n>_<app>); the stage
    # turns rolling and compression off, and the files are read wherever they lie below.
    for log in sorted(p for p in folder.rglob("*") if p.is_file()):
        with log.open(errors="replace") as fh:
            for line in fh:
                if '"SparkListenerTaskEnd"' not in line:
                    continue
                m = json.loads(line).get("Task Metrics") or {}
                sw, sr = m.get("Shuffle Write Metrics", {}), m.get("Shuffle Read Metrics", {})
                totals["tasks"] += 1
                totals["shuffle_write_bytes"] += sw.get("Shuffle Bytes Written", 0)
                totals["shuffle_read_bytes"] += sr.get("Remote Bytes Read", 0) + sr.get(
                    "Local Bytes Read", 0
                )
                totals["input_bytes"] += m.get("Input Metrics", {}).get("Bytes Read", 0)
    return totals


def _cluster_ready(settings: Any) -> bool:
    ready = (settings.home / "cluster" / "cluster.env").is_file()
    if not ready:
        print("(the cluster stage needs `make cluster-up` first: skipped)", file=sys.stderr)
    return ready


def _cluster_env() -> dict[str, str]:
    """The cluster instance's settings (cluster.env, written by make cluster-up)."""
    settings = get_settings()
    env_file = settings.home / "cluster" / "cluster.env"
    if not env_file.is_file():
        raise SystemExit("the cluster stage needs the cluster: run `make cluster-up` first")
    env = {}
    for line in env_file.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            env[k] = v
    return env


def bench_cluster(scale: Scale, work: Path) -> dict[str, Any]:
    """The silver and gold stages in local mode and on the cluster, in child bench processes of
    their own instances (bench-local, bench-cluster: their own Derby metastore, so the cluster's
    catalog is untouched); the cluster run's warehouse is hdfs://.../gridlake/bench."""
    scale_name = next((k for k, v in SCALES.items() if v == scale), "standard")
    cluster = _cluster_env()
    hdfs_root = cluster["GRIDLAKE_STORAGE_ROOT"].rsplit("/", 1)[0] + "/bench"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GRIDLAKE_", "HADOOP_"))}
    base["GRIDLAKE_HOME"] = str(get_settings().home)
    runs = {
        "local": {"GRIDLAKE_INSTANCE": "bench-local", "GRIDLAKE_PORT_OFFSET": "1000"},
        "cluster": {
            **{k: v for k, v in cluster.items() if k != "GRIDLAKE_METASTORE_URI"},
            "GRIDLAKE_INSTANCE": "bench-cluster",
            "GRIDLAKE_PORT_OFFSET": "1100",
            "GRIDLAKE_STORAGE_ROOT": hdfs_root,
        },
    }
    hdfs_path = "/" + hdfs_root.split("//", 1)[1].split("/", 1)[1]  # /gridlake/bench
    subprocess.run(
        ["bash", str(INFRA / "cluster.sh"), "hdfs", "-rm", "-r", "-f", "-skipTrash", hdfs_path],
        env={**base, "GRIDLAKE_INSTANCE": "cluster"}, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    out: dict[str, Any] = {"hdfs_root": hdfs_root}
    for mode, extra in runs.items():
        for stage in ("silver", "gold"):
            events = work / f"events-{mode}-{stage}"
            events.mkdir(parents=True, exist_ok=True)
            results = work / f"results-{mode}-{stage}.json"
            log_conf = (
                f"spark.eventLog.enabled=true;spark.eventLog.dir={events.as_uri()};"
                "spark.eventLog.rolling.enabled=false;spark.eventLog.compress=false"
            )
            conf = ";".join(x for x in (extra.get("GRIDLAKE_SPARK_CONF", ""), log_conf) if x)
            env = {**base, **extra, "GRIDLAKE_SPARK_CONF": conf,
                   "GRIDLAKE_BENCH_RESULTS": str(results)}  # fmt: skip
            print(f"   {mode} {stage} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            cmd = [sys.executable, "-m", "gridlake.ops.bench", "--scale", scale_name]
            subprocess.run([*cmd, "--only", stage], env=env, check=True, stdout=subprocess.DEVNULL)
            got = json.loads(results.read_text())[stage]
            out.setdefault(stage, {})[mode] = {
                "seconds": round(time.perf_counter() - t0, 1),
                "steps": {k: v["seconds"] for k, v in got.items()
                          if isinstance(v, dict) and "seconds" in v},
                "nested": {k: {kk: vv["seconds"] for kk, vv in v.items()
                               if isinstance(vv, dict) and "seconds" in vv}
                           for k, v in got.items() if isinstance(v, dict) and "seconds" not in v},
                **_event_log_totals(events),
            }  # fmt: skip
    for stage in ("silver", "gold"):
        local, remote = out[stage]["local"]["seconds"], out[stage]["cluster"]["seconds"]
        out[stage]["ratio_cluster_vs_local"] = round(remote / local, 2)
    out["target"] = "cluster / local <= 2 (one 2-core machine: the cluster only adds overhead)"
    return out


def _bench_serving(scale: Scale, work: Path) -> dict[str, Any]:
    from gridlake.ops.bench_serving import bench_serving

    return bench_serving(next((k for k, v in SCALES.items() if v == scale), "standard"), work)


def _bench_freshness(scale: Scale, work: Path) -> dict[str, Any]:
    from gridlake.ops.bench_freshness import bench_freshness

    name = next((k for k, v in SCALES.items() if v == scale), "standard")
    return bench_freshness(name, scale.day_jobs, work, _simulate)


STAGES: dict[str, Callable[[Scale, Path], dict[str, Any]]] = {
    "simulate": bench_simulate,
    "publish": bench_publish,
    "agent": bench_agent,
    "ingest": bench_ingest,
    "silver": bench_silver,
    "gold": bench_gold,
    "spark-vs-duckdb": bench_spark_vs_duckdb,
    "network": bench_network,
    "serving": _bench_serving,
    "freshness": _bench_freshness,
    "cluster": bench_cluster,
}
NEEDS = {
    "publish": ("kafka",),
    "ingest": ("kafka", "derby"),
    "agent": ("kafka",),
    "silver": ("derby",),
    "gold": ("derby",),
    "spark-vs-duckdb": ("derby",),
    "network": ("derby",),
    "serving": ("derby",),
    "freshness": ("derby", "kafka"),
}


# The targets of each stage (they apply at the standard scale and above; the small scale is a
# quick look): (figure, comparison, bound) on the stage's results, dotted for a nested figure.
# ``met`` is true when every one holds, null when a figure is missing.
TARGETS: dict[str, tuple[tuple[str, str, float], ...]] = {
    "publish": (("ratio", ">=", 0.7),),
    "ingest": (("ratio_vs_consumer_perf_test", ">=", 0.8),),
    "agent": (("overhead_ratio", "<", 0.01),),
    "silver": (("ratio_day31_vs_day1", "<=", 1.3),),
    "gold": (("full_ratio_10n_vs_n", "<=", 10.0), ("incremental_ratio_vs_full", "<=", 0.2)),
    "spark-vs-duckdb": (("ratio_spark_vs_duckdb", "<=", 3.0),),
    "network": (("ratio_week_vs_day", "<", 9.0),),
    "serving": (("worst_dashboard_p95_s", "<", 1.0),),
    "freshness": (("end_to_end_p95_s", "<=", 900.0), ("pipeline_p95_s", "<=", 300.0)),
    "cluster": (
        ("silver.ratio_cluster_vs_local", "<=", 2.0),
        ("gold.ratio_cluster_vs_local", "<=", 2.0),
    ),
}
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b, "<": lambda a, b: a < b,
}  # fmt: skip


def _figure(results: dict[str, Any], dotted: str) -> Any:
    value: Any = results
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


# Stages that run in parts (``--only gold:full``; at the full scale each part takes hours): the
# figures each part writes. A part's run replaces its own figures and keeps the other parts'
# from the last run at the same scale; ``parts`` says when and under what load each was measured.
PARTS: dict[str, dict[str, tuple[str, ...]]] = {
    "gold": {
        "full": ("efficiency", "speed_factors", "full_seconds", "full_ratio_10n_vs_n",
                 "peak_rss_ratio_10n_vs_n"),
        "incremental": ("incremental", "incremental_ratio_vs_full"),
    },
}  # fmt: skip
_META = ("measured_at", "scale", "load_average", "load_average_max", "stage_seconds")


def stage_entry(
    stage: str,
    part: str | None,
    got: dict[str, Any],
    previous: dict[str, Any] | None,
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The stage's object in the results file: ``meta`` (when, scale, load, seconds), the
    figures, ``target`` and ``met`` (judged on all the figures), ``target_applies``. For one
    ``part`` of a stage the other parts' figures (and their ``parts`` entries) are kept from
    ``previous``, its last run at this scale; ``met`` stays null until every part has run."""
    figures = {k: v for k, v in got.items() if k not in ("target", "met")}
    parts = PARTS.get(stage)
    if parts:
        done = dict((previous or {}).get("parts", {})) if part else {}
        if part:
            kept = {k for p, keys in parts.items() if p != part for k in keys}
            figures = {**{k: v for k, v in (previous or {}).items() if k in kept}, **figures}
        done.update({p: meta for p in ([part] if part else parts)})
        figures["parts"] = {p: done[p] for p in parts if p in done}
    text, met = judge(stage, figures)
    return {
        **meta,
        **figures,
        "target": text if text is not None else got.get("target"),
        "met": met,
        "target_applies": meta.get("scale") not in ("tiny", "small"),
    }


def judge(stage: str, results: dict[str, Any]) -> tuple[str | None, bool | None]:
    """The stage's target as text and whether its results meet it (None: no target, or a
    figure missing)."""
    targets = TARGETS.get(stage)
    if not targets:
        return None, None
    text = " and ".join(f"{key} {op} {bound:g}" for key, op, bound in targets)
    values = [_figure(results, key) for key, _, _ in targets]
    if any(not isinstance(v, int | float) or isinstance(v, bool) for v in values):
        return text, None
    met = all(_COMPARE[op](v, bound) for v, (_, op, bound) in zip(values, targets, strict=True))
    return text, met


class _LoadSampler:
    """The 1-minute load average every 5 s while a stage runs (a shared 2-core machine is
    noisy: the figures say how loaded it was)."""

    def __init__(self) -> None:
        import threading

        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(5.0):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])
        return {"load_average": round(statistics.fmean(self.samples), 2),
                "load_average_max": round(max(self.samples), 2)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gridlake-bench", description=__doc__)
    p.add_argument(
        "--scale", choices=sorted(SCALES), default=os.environ.get("BENCH_SCALE", "standard")
    )
    p.add_argument(
        "--only",
        help="comma-separated stages: "
        + ",".join(STAGES)
        + "; a part of one: "
        + ",".join(f"{n}:{p}" for n in PARTS for p in PARTS[n]),
    )
    args = p.parse_args(argv)
    settings = get_settings()
    if not settings.instance.startswith("bench"):
        raise SystemExit(
            "run through `make bench` (GRIDLAKE_INSTANCE=bench*, GRIDLAKE_PORT_OFFSET)"
        )
    # results live outside the bench instance's state (wiped below); stages run earlier at the
    # same scale are kept, so one stage can be re-measured without losing the others
    out = Path(
        os.environ.get("GRIDLAKE_BENCH_RESULTS")  # a child run of the cluster stage
        or settings.home / "bench-results" / f"results-{args.scale}.json"
    )
    # a service an interrupted bench left running holds the wiped state's secrets (a new
    # password would then be refused by the old server): stopped first, by its PID file
    for name in sorted({n for needs in NEEDS.values() for n in needs}, reverse=True):
        with contextlib.suppress(subprocess.CalledProcessError):
            _infra(f"{name}.sh", "stop")
    shutil.rmtree(settings.state, ignore_errors=True)
    settings.state.mkdir(parents=True, exist_ok=True)
    scale = SCALES[args.scale]
    if args.only:
        stages = args.only.split(",")
        for st in stages:
            name, _, part = st.partition(":")
            if name not in STAGES or (part and part not in PARTS.get(name, {})):
                known = [*STAGES, *(f"{n}:{p}" for n in PARTS for p in PARTS[n])]
                raise SystemExit(f"unknown stage {st!r}: one of {', '.join(known)}")
    else:  # every stage; the cluster one when `make cluster-up` has run
        stages = [s for s in STAGES if s != "cluster" or _cluster_ready(settings)]
    services = tuple(dict.fromkeys(s for st in stages for s in NEEDS.get(st.partition(":")[0], ())))
    results: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    results.update({"scale": args.scale, "scale_parameters": scale.__dict__,
                    "machine": {"cpus": os.cpu_count()}})  # fmt: skip
    with tempfile.TemporaryDirectory(dir=settings.state) as tmp, _services(services):
        for stage in stages:
            print(f"== {stage}", file=sys.stderr, flush=True)
            name, _, part = stage.partition(":")
            t0, load = time.perf_counter(), _LoadSampler()
            got = STAGES[name](scale, Path(tmp), **({"parts": (part,)} if part else {}))
            meta = {
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "scale": args.scale,
                **load.stop(),
                "stage_seconds": round(time.perf_counter() - t0, 1),
            }
            results[name] = stage_entry(name, part or None, got, results.get(name), meta)
            print(json.dumps({name: results[name]}, indent=2), flush=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(results, indent=2) + "\n")  # after each stage
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
