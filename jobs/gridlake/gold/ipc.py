"""gold.ipc_by_microarchitecture: instructions per cycle by microarchitecture and job type.

Why: speed factors say how fast a CPU model runs a job type; IPC says why. Seed 003 measured
Geant4 simulation at IPC 1.43 on Haswell and 0.92 on Ivy Bridge where event generation was the
same on both (domain.md, "CPU speed from real jobs"): a benchmark cannot show that, the hosts'
hardware counters can.

Input: the ``perf`` records of silver.node_samples (``gridlake agent``: ``perf stat -a``, the
instructions and cycles of the whole host per interval) and silver.jobs (which jobs ran on the
host, when, of which job type, at which mean CPU rate, on which microarchitecture).

Model. A perf record counts every job on the host at once. Over many intervals the job types'
IPCs come out of a least-squares fit, per microarchitecture:

    instructions_s = cycles_s x sum_t share_{s,t} x ipc_t

where share_{s,t} is job type t's share of the CPU used on the host during sample s, estimated
from silver.jobs: a job overlapping the interval by o seconds at its mean CPU rate
cpu_seconds / wall_seconds (cores kept busy) used o x rate core-seconds of it. Divided by
cycles_s this is a weighted least squares of the host's IPC on the shares (weight: cycles_s),
solved from its normal equations ``A ipc = b`` with ``A_tu = sum_s cycles_s share_t share_u``
and ``b_t = sum_s instructions_s share_t``. The sums are Spark aggregations (a self-join of the
sample shares on the sample for A); only A and b (microarchitectures x job types^2 numbers)
reach the driver, where numpy solves each small system. The interval is +-1.96 standard errors
of the weighted fit (the residual sum of squares from ``sum_s instructions_s^2 / cycles_s``, also
summed in Spark); consecutive samples of a host are correlated, so it is a lower bound of the
uncertainty. The job-to-interval join is bucketed by hour like silver.job_node_features.

Samples used: ``counters_available = 'yes'`` and cycles > 0, on a host whose jobs name a
microarchitecture (the host's most frequent), while at least one job with a job type and CPU
time ran. A job type is reported where it ran in at least ``min_samples`` samples of the
microarchitecture; where the system is singular (job types that always ran together) the
microarchitecture's IPCs are not identified and no row is written (logged). Hosts without
counters (VMs) contribute nothing and are counted nowhere here; silver.node_samples says which.
"""

from __future__ import annotations

import logging

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.silver.tables import SILVER_JOBS, SILVER_NODE_SAMPLES
from gridlake.spark import rows_frame
from gridlake.tabledef import Check, Column, Table

log = logging.getLogger(__name__)

BUCKET_SECONDS = 3600
MIN_SAMPLES = 30
Z95 = 1.959964

GOLD_IPC_BY_MICROARCHITECTURE = Table(
    database="gold",
    name="ipc_by_microarchitecture",
    keys=("microarchitecture", "job_type"),
    question="How many instructions per cycle does each job type get on each microarchitecture?",
    example=(
        "SELECT microarchitecture, job_type, round(ipc, 2) AS ipc, samples "
        "FROM gold.ipc_by_microarchitecture ORDER BY job_type, ipc DESC"
    ),
    grain="one row per microarchitecture and job type (where the hosts' counters saw it run).",
    description=(
        "Instructions per cycle of each job type on each microarchitecture, fitted from the "
        "hosts' hardware counters (perf records: whole-host instructions and cycles per "
        "interval) and the jobs that ran on them: a least-squares fit of each interval's IPC on "
        "the job types' shares of the host's CPU. Only hosts with counters (not VMs) count."
    ),
    columns=(
        Column("microarchitecture", "STRING", "e.g. Haswell, Zen 2 (the host's CPU model's)"),
        Column("job_type", "STRING", "Job type"),
        Column("ipc", "DOUBLE", "Instructions per cycle of the job type, fitted"),
        Column("ipc_low", "DOUBLE", "Lower end of the 95% interval (fit standard error)"),
        Column("ipc_high", "DOUBLE", "Upper end of the 95% interval"),
        Column("samples", "BIGINT", "perf samples during which the job type ran"),
        Column("hosts", "BIGINT", "Hosts those samples came from"),
        Column("cpu_core_hours", "DOUBLE", "CPU core-hours of the job type in those samples"),
        Column("fit_samples", "BIGINT", "perf samples in the microarchitecture's fit"),
    ),
    checks=(
        Check("not_null", "ipc"),
        Check("between", "ipc", {"min_value": 0, "max_value": 10}),
    ),
)

TABLES = (GOLD_IPC_BY_MICROARCHITECTURE,)


def _bucket(seconds_col: F.Column, seconds: int) -> F.Column:
    return F.floor(seconds_col / seconds)


def sample_shares(
    node_samples: DataFrame, jobs: DataFrame, seconds: int = BUCKET_SECONDS
) -> DataFrame:
    """Counted perf samples x the jobs on their host -> one row per (sample, job type): host,
    ts, microarchitecture, instructions, cycles, job_type, cpu_core_seconds, share."""
    perf = node_samples.where(
        (F.col("kind") == "perf")
        & (F.col("counters_available") == "yes")
        & (F.col("cycles") > 0)
        & F.col("instructions").isNotNull()
    ).select(
        "host",
        "ts",
        "instructions",
        "cycles",
        (F.unix_timestamp("ts") - F.col("interval_seconds")).alias("t0"),
        F.unix_timestamp("ts").cast("double").alias("t1"),
    )
    perf = perf.withColumn(
        "bucket",
        F.explode(F.sequence(_bucket(F.col("t0"), seconds), _bucket(F.col("t1"), seconds))),
    )
    usable = jobs.where(
        F.col("host").isNotNull()
        & F.col("job_type").isNotNull()
        & (F.col("cpu_seconds") > 0)
        & (F.col("wall_seconds") > 0)
        & F.col("start_time").isNotNull()
        & F.col("end_time").isNotNull()
    )
    host_arch = (
        usable.where(F.col("microarchitecture").isNotNull())
        .groupBy("host")
        .agg(F.mode("microarchitecture").alias("microarchitecture"))
    )
    js = usable.select(
        "host",
        "job_type",
        F.unix_timestamp("start_time").cast("double").alias("s0"),
        F.unix_timestamp("end_time").cast("double").alias("s1"),
        (F.col("cpu_seconds") / F.col("wall_seconds")).alias("rate"),
    )
    js = js.withColumn(
        "bucket",
        F.explode(F.sequence(_bucket(F.col("s0"), seconds), _bucket(F.col("s1"), seconds))),
    )
    overlap = F.least("t1", "s1") - F.greatest("t0", "s0")
    # a (sample, job) pair meets in every bucket both span: keep the first one only
    first = F.greatest(_bucket(F.col("t0"), seconds), _bucket(F.col("s0"), seconds))
    pairs = (
        perf.join(js, ["host", "bucket"])
        .where((overlap > 0) & (F.col("bucket") == first))
        .select(
            "host", "ts", "instructions", "cycles", "job_type", (overlap * F.col("rate")).alias("w")
        )
    )
    per_type = pairs.groupBy("host", "ts", "instructions", "cycles", "job_type").agg(
        F.sum("w").alias("cpu_core_seconds")
    )
    total = F.sum("cpu_core_seconds").over(Window.partitionBy("host", "ts"))
    return per_type.withColumn("share", F.col("cpu_core_seconds") / total).join(
        F.broadcast(host_arch), "host"
    )


def normal_equations(shares: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The sums of the weighted fit: A (microarchitecture, t, u, a), b with the per-type counts
    (microarchitecture, job_type, b, samples, hosts, cpu_core_hours) and the per-
    microarchitecture totals (fit_samples, yy = sum instructions^2 / cycles)."""
    s = shares.select("host", "ts", "microarchitecture", "cycles", "job_type", "share")
    a = (
        s.alias("x")
        .join(s.alias("y"), ["host", "ts", "microarchitecture", "cycles"])
        .groupBy(
            "microarchitecture", F.col("x.job_type").alias("t"), F.col("y.job_type").alias("u")
        )
        .agg(F.sum(F.col("cycles") * F.col("x.share") * F.col("y.share")).alias("a"))
    )
    b = shares.groupBy("microarchitecture", "job_type").agg(
        F.sum(F.col("instructions") * F.col("share")).alias("b"),
        F.count(F.lit(1)).alias("samples"),
        F.countDistinct("host").alias("hosts"),
        (F.sum("cpu_core_seconds") / 3600.0).alias("cpu_core_hours"),
    )
    per_sample = shares.groupBy("host", "ts", "microarchitecture").agg(
        F.first("instructions").alias("instructions"), F.first("cycles").alias("cycles")
    )
    totals = per_sample.groupBy("microarchitecture").agg(
        F.count(F.lit(1)).alias("fit_samples"),
        F.sum(F.col("instructions") * F.col("instructions") / F.col("cycles")).alias("yy"),
    )
    return a, b, totals


def solve(
    a_rows: list[dict], b_rows: list[dict], totals: list[dict], min_samples: int = MIN_SAMPLES
) -> list[dict]:
    """Each microarchitecture's normal equations -> its job types' IPC with an interval."""
    out = []
    for tot in sorted(totals, key=lambda r: r["microarchitecture"]):
        arch = tot["microarchitecture"]
        bs = sorted(
            (r for r in b_rows if r["microarchitecture"] == arch), key=lambda r: r["job_type"]
        )
        types = [r["job_type"] for r in bs]
        index = {t: i for i, t in enumerate(types)}
        k, n = len(types), int(tot["fit_samples"])
        a = np.zeros((k, k))
        for r in a_rows:
            if r["microarchitecture"] == arch:
                a[index[r["t"]], index[r["u"]]] = r["a"]
        b = np.array([r["b"] for r in bs], dtype=float)
        if k == 0 or np.linalg.cond(a) > 1e10:
            log.warning("IPC on %s: job types not separable (always ran together); no rows", arch)
            continue
        ipc = np.linalg.solve(a, b)
        rss = max(0.0, float(tot["yy"]) - 2 * float(ipc @ b) + float(ipc @ a @ ipc))
        sigma2 = rss / (n - k) if n > k else float("nan")
        se = np.sqrt(np.maximum(sigma2 * np.diag(np.linalg.inv(a)), 0.0))
        for i, r in enumerate(bs):
            if r["samples"] < min_samples:
                continue
            out.append(
                {
                    "microarchitecture": arch,
                    "job_type": r["job_type"],
                    "ipc": float(ipc[i]),
                    "ipc_low": float(ipc[i] - Z95 * se[i]),
                    "ipc_high": float(ipc[i] + Z95 * se[i]),
                    "samples": int(r["samples"]),
                    "hosts": int(r["hosts"]),
                    "cpu_core_hours": float(r["cpu_core_hours"]),
                    "fit_samples": n,
                }
            )
    return out


def compute(
    node_samples: DataFrame,
    jobs: DataFrame,
    min_samples: int = MIN_SAMPLES,
    seconds: int = BUCKET_SECONDS,
) -> dict[str, DataFrame]:
    """silver.node_samples (perf records) + silver.jobs -> gold.ipc_by_microarchitecture."""
    spark: SparkSession = jobs.sparkSession
    shares = sample_shares(node_samples, jobs, seconds).localCheckpoint(eager=True)
    a, b, totals = normal_equations(shares)
    # bounded: microarchitectures x job types^2 rows
    rows = solve(
        [r.asDict() for r in a.collect()],
        [r.asDict() for r in b.collect()],
        [r.asDict() for r in totals.collect()],
        min_samples,
    )
    table = GOLD_IPC_BY_MICROARCHITECTURE
    frame = rows_frame(spark, rows, table.empty(spark).schema)
    return {table.full_name: table.conform(frame)}


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    return compute(inputs.read(SILVER_NODE_SAMPLES), inputs.read(SILVER_JOBS))


GROUP = GoldGroup("ipc", TABLES, reads=(SILVER_NODE_SAMPLES, SILVER_JOBS), build=_build)
