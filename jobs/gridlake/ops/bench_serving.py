"""``make bench`` stage ``serving``: every chart of every dashboard through Superset's chart-data
API over one simulated year of gold data for a 100-site grid, and the same queries in DuckDB over
the same Delta files as a reference.

**The year of gold.** Running the simulator and the whole pipeline for a year of 100 sites would
take days on two cores, and what a dashboard query costs depends on the gold tables' row counts, key
cardinalities, types and file layout, not on how the numbers were derived. So the bench
*synthesises* the gold tables the dashboards read, with Spark, straight into the bench instance's
warehouse through their Table definitions (same schema, same partitioning, files as a shuffle of
the pipeline writes them), at the volume of the modelled grid:

- ``sites`` sites (SITE-001...), 1 to 4 VOs each, 6 job types, ``weeks`` ISO weeks ending on
  the latest Monday, 40 CPU models in 10 microarchitectures, ``hosts`` monitored worker nodes per
  site sampled every hour (gold.node_saturation: sites x hosts x 168 x weeks rows);
- a perfSONAR mesh in which each site measures ``peers`` others (WLCG meshes are per cloud and VO,
  not all pairs; ``full`` measures every pair): network_cost_matrix has paths x weeks rows and
  network_link_hourly paths x hours;
- values drawn from deterministic hashes with the distributions the simulator plants (job-type
  efficiencies and shares, a few slow-storage sites, congested paths busy 8-20 h UTC, 1-2 % of
  path-weeks with alarms, outlier flags on ~1 % of site and job-type weeks); the site table is
  the sum of the site x job type table, so the two agree.

**The queries.** For each dashboard, each chart's saved query context with the dashboard's default
native filters applied (a week filter opens on the latest week, the site drill-down on its first
site), as the browser sends it: POST /api/v1/chart/data with ``force`` (no cache). First one
*cold pass* over every dashboard on the freshly started Thrift Server and Superset: what
``gridlake superset warm`` does once the gold tables are written (``make demo`` runs it), and what
the first person to open each dashboard would wait for without it (JIT compilation, generated
code, Delta snapshots, metastore lookups). Then ``rounds`` passes on the warm server, the state
the pipeline leaves it in: p50 and p95 per dashboard over those (target p95 < 1 s), with the cold
pass's figures beside them (``cold_*``). Superset's own SQL for each query (from the
same response) is transpiled from Spark SQL to DuckDB with sqlglot and run in DuckDB over the
active Parquet files of each Delta table (listed by the ``deltalake`` package), as the reference.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from gridlake.serving.superset_client import SupersetClient, dashboard_queries, read_login
from gridlake.settings import REPO_ROOT, Settings, get_settings

__all__ = ["SERVING_SCALES", "ServingScale", "bench_serving", "synthesise_gold"]


@dataclass(frozen=True)
class ServingScale:
    sites: int
    weeks: int
    hosts: int  # monitored worker nodes per site
    peers: int  # perfSONAR: sites each site measures (sites - 1 = full mesh)
    rounds: int  # times each chart query runs


SERVING_SCALES = {
    "small": ServingScale(sites=20, weeks=8, hosts=3, peers=19, rounds=3),
    "standard": ServingScale(sites=100, weeks=52, hosts=5, peers=30, rounds=5),
    "full": ServingScale(sites=100, weeks=52, hosts=10, peers=99, rounds=5),
}
LATEST_WEEK = date(2026, 11, 16)
VOS = ("atlas", "cms", "alice", "lhcb")
# job type: (share of jobs, cores, wall hours, efficiency, failure rate, I/O-bound share)
JOB_TYPES = {
    "analysis": (0.56, 1, 1.5, 0.70, 0.08, 0.15),
    "evgen": (0.13, 8, 6.0, 0.90, 0.03, 0.0),
    "merge": (0.14, 1, 0.7, 0.48, 0.10, 0.35),
    "simul": (0.08, 8, 9.0, 0.87, 0.05, 0.0),
    "reprocessing": (0.05, 8, 2.0, 0.62, 0.09, 0.25),
    "pile": (0.04, 8, 4.0, 0.55, 0.11, 0.45),
}
SIGNATURES = (
    "cpu_bound",
    "io_wait_bound",
    "memory_bound",
    "remote_read_bound",
    "init_dominated",
    "mixed",
)
ARCHS = (
    "Ivy Bridge",
    "Haswell",
    "Broadwell",
    "Skylake",
    "Cascade Lake",
    "Ice Lake",
    "Zen",
    "Zen 2",
    "Zen 3",
    "Zen 4",
)
FAILURE_MODES = ("stage-in", "lost-heartbeat", "memory", "app-crash", "unknown")


# --------------------------------------------------------------------------------------------
# Synthetic gold
# --------------------------------------------------------------------------------------------


def _u(*cols: Any, salt: str) -> Any:
    """A uniform [0, 1) draw, deterministic in the columns (independent of partitioning)."""
    from pyspark.sql import functions as F

    return (F.abs(F.xxhash64(F.lit(salt), *cols)) % F.lit(1_000_003)) / F.lit(1_000_003.0)


def _fill(df: Any, table: Any) -> Any:
    """Add the table's columns the generator leaves out, as nulls, then conform."""
    from pyspark.sql import functions as F

    missing = [c for c in table.columns if c.name not in df.columns]
    for c in missing:
        df = df.withColumn(c.name, F.lit(None).cast(c.ddl_type))
    return table.conform(df)


def _frames(spark: Any, scale: ServingScale) -> dict[str, Any]:
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    from gridlake.gold.serving import link_label

    first = LATEST_WEEK - timedelta(weeks=scale.weeks - 1)
    sites = spark.range(scale.sites).select(
        F.col("id").alias("site_idx"), F.format_string("SITE-%03d", F.col("id") + 1).alias("site")
    )
    # a few slow-storage sites and a size per site (the big ones are Tier-1s)
    sites = sites.withColumn("slow", _u("site_idx", salt="slow") < 0.06).withColumn(
        "size", F.exp(F.lit(4.5) + 2.0 * _u("site_idx", salt="size"))
    )
    weeks = spark.range(scale.weeks).select(
        F.date_add(F.lit(first), (F.col("id") * 7).cast("int")).alias("week")
    )
    vos = sites.select(
        "site",
        "site_idx",
        "slow",
        "size",
        F.explode(F.slice(F.array(*[F.lit(v) for v in VOS]), 1, 1 + F.col("site_idx") % 4)).alias(
            "vo"
        ),
    )
    types = spark.createDataFrame(
        [(k, *v) for k, v in JOB_TYPES.items()],
        "job_type string, share double, cores int, wall double, eff double, fail double, io double",
    )

    # site x vo x job type x week ------------------------------------------------------------
    k = ("site", "vo", "job_type", "week")
    g = vos.crossJoin(types).crossJoin(weeks)
    jobs = F.greatest(
        F.lit(1), F.round(F.col("size") * F.col("share") * (0.7 + 0.6 * _u(*k, salt="j")))
    )
    eff = F.least(
        F.lit(0.97),
        F.col("eff")
        * F.when(F.col("slow"), 1 - F.col("io")).otherwise(1.0)
        * (0.93 + 0.1 * _u(*k, salt="e")),
    )
    g = g.withColumn("jobs", jobs.cast("bigint")).withColumn("_eff", eff)
    g = g.withColumn(
        "core_hours",
        F.col("jobs") * F.col("cores") * F.col("wall") * (0.8 + 0.4 * _u(*k, salt="w")),
    )
    g = g.withColumn(
        "failed_jobs", F.round(F.col("jobs") * F.col("fail") * 2 * _u(*k, salt="f")).cast("bigint")
    )
    g = g.withColumn("cpu_hours", F.col("core_hours") * F.col("_eff"))
    g = g.withColumn(
        "wasted_core_hours", F.col("core_hours") * F.col("failed_jobs") / F.col("jobs") * 0.6
    )
    jt = g.select(
        *k,
        "jobs",
        "failed_jobs",
        (F.round(F.col("jobs") * 0.01 * _u(*k, salt="o"))).cast("bigint").alias("outlier_jobs"),
        "core_hours",
        "cpu_hours",
        (F.col("cpu_hours") / F.col("core_hours")).alias("cpu_efficiency"),
        (F.col("cpu_hours") / F.col("core_hours") * 0.95).alias("good_cpu_over_all_wall"),
        "wasted_core_hours",
        (F.col("core_hours") * (8 + 8 * _u("site", salt="hs"))).alias("hs23_core_hours"),
        (F.col("jobs") * 1000).cast("bigint").alias("events"),
        (F.col("core_hours") * 3.6).alias("core_seconds_per_event"),
        F.col("wasted_core_hours").alias("badput_core_hours"),
        (F.col("wasted_core_hours") * 0.7).alias("retry_waste_core_hours"),
    )
    sums = [
        "jobs",
        "failed_jobs",
        "outlier_jobs",
        "core_hours",
        "cpu_hours",
        "wasted_core_hours",
        "hs23_core_hours",
        "events",
        "badput_core_hours",
        "retry_waste_core_hours",
    ]
    site_week = jt.groupBy("week", "site", "vo").agg(*[F.sum(c).alias(c) for c in sums])
    site_week = site_week.withColumn("cpu_efficiency", F.col("cpu_hours") / F.col("core_hours"))
    site_week = site_week.withColumn("good_cpu_over_all_wall", F.col("cpu_efficiency") * 0.95)

    # outliers: ~1 % of site x job type weeks, plus CPU models and tasks
    out_sites = (
        jt.where(_u(*k, salt="flag") < 0.01)
        .groupBy("week", "site", "job_type")
        .agg(
            F.sum("cpu_hours").alias("c"), F.sum("core_hours").alias("h"), F.sum("jobs").alias("n")
        )
        .select(
            "week",
            F.lit("site").alias("entity"),
            F.col("site").alias("entity_value"),
            "job_type",
            F.lit("cpu_efficiency").alias("metric"),
            (F.col("c") / F.col("h")).alias("value"),
            (F.col("c") / F.col("h") * 1.15).alias("baseline"),
            F.lit(-13.0).alias("deviation_pct"),
            F.lit(-4.0).alias("robust_z"),
            F.lit("peers").alias("comparison"),
            F.lit(scale.sites - 1).cast("bigint").alias("baseline_points"),
            F.lit("site-efficiency-peers").alias("rule_id"),
            F.lit(1).alias("rule_version"),
            F.col("n").alias("n_jobs"),
            F.concat(F.lit("site "), F.col("site"), F.lit(" below its peers")).alias("evidence"),
        )
    )
    models = spark.range(40).select(
        F.col("id").alias("model_idx"),
        F.format_string("Vendor(R) CPU Model-%02d @ 2.40GHz", F.col("id")).alias("cpu_model"),
        F.element_at(F.array(*[F.lit(a) for a in ARCHS]), (F.col("id") % 10 + 1).cast("int")).alias(
            "microarchitecture"
        ),
        (0.7 + 1.0 * _u("id", salt="speed")).alias("speed"),
    )
    out_models = (
        models.crossJoin(weeks)
        .crossJoin(types.select("job_type"))
        .where(_u("cpu_model", "week", "job_type", salt="mflag") < 0.003)
        .select(
            "week",
            F.lit("cpu_model").alias("entity"),
            F.col("cpu_model").alias("entity_value"),
            "job_type",
            F.lit("hs23_seconds_per_event").alias("metric"),
            F.lit(1.3).alias("value"),
            F.lit(1.0).alias("baseline"),
            F.lit(30.0).alias("deviation_pct"),
            F.lit(3.5).alias("robust_z"),
            F.lit("peers").alias("comparison"),
            F.lit(39).cast("bigint").alias("baseline_points"),
            F.lit("cpu-model-hs23-peers").alias("rule_id"),
            F.lit(1).alias("rule_version"),
            F.lit(200).cast("bigint").alias("n_jobs"),
            F.lit("model slower per HS23 than its peers").alias("evidence"),
        )
    )

    # worker nodes: sites x hosts x hours ----------------------------------------------------
    hosts = sites.crossJoin(spark.range(scale.hosts).withColumnRenamed("id", "h")).select(
        "site",
        "slow",
        F.format_string("wn%03d.%s.example.org", F.col("h") + 1, F.lower("site")).alias("host"),
    )
    hours = weeks.select(
        "week",
        F.explode(
            F.sequence(
                F.to_timestamp("week"),
                F.to_timestamp("week") + F.expr("INTERVAL 167 HOURS"),
                F.expr("INTERVAL 1 HOUR"),
            )
        ).alias("hour"),
    )
    hk = ("host", "hour")
    util = F.when(F.col("slow"), 40 + 60 * _u(*hk, salt="u")).otherwise(5 + 30 * _u(*hk, salt="u"))
    swap = F.when(_u(*hk, salt="s") < 0.003, 500 + 4000 * _u(*hk, salt="s2")).otherwise(0.0)
    nodes = hosts.crossJoin(hours).select(
        "site",
        "host",
        "hour",
        "week",
        F.lit(60).cast("bigint").alias("vmstat_samples"),
        F.lit(60).cast("bigint").alias("iostat_samples"),
        (50 + 45 * _u(*hk, salt="us")).alias("us_mean"),
        (F.when(F.col("slow"), 8.0).otherwise(1.0) + 5 * _u(*hk, salt="wa")).alias("iowait_mean"),
        (3 * _u(*hk, salt="b")).alias("b_mean"),
        swap.alias("swap_kb_s_mean"),
        util.alias("disk_util_p95"),
        (util * 0.7).alias("disk_util_mean"),
        (2 + 30 * _u(*hk, salt="aw")).alias("r_await_ms_p95"),
        (util >= 35).alias("disk_saturated"),
        (swap >= 100).alias("memory_pressure"),
        ((util >= 35) | (swap >= 100)).alias("saturated"),
        F.lit(1).alias("rule_version"),
    )

    # I/O profiles from the job-type table ---------------------------------------------------
    share_io = F.when(F.col("slow"), F.col("io")).otherwise(F.col("io") * 0.1)
    io = g.groupBy("job_type", "site", "week", "io", "slow").agg(
        F.sum("jobs").alias("jobs"),
        F.sum("core_hours").alias("core_hours"),
        F.sum("cpu_hours").alias("cpu_hours"),
    )
    io = io.select(
        "job_type",
        "site",
        "week",
        "jobs",
        "core_hours",
        (F.col("core_hours") * (0.05 + 0.1 * _u("site", salt="mon"))).alias(
            "classified_core_hours"
        ),
        (1 - share_io - 0.02).alias("share_cpu_bound"),
        share_io.alias("share_io_wait_bound"),
        F.lit(0.005).alias("share_memory_bound"),
        F.lit(0.01).alias("share_remote_read_bound"),
        F.lit(0.004).alias("share_init_dominated"),
        F.lit(0.001).alias("share_mixed"),
        (F.col("cpu_hours") / F.col("core_hours")).alias("cpu_efficiency"),
        F.lit(0.85).alias("cpu_bound_efficiency"),
        (F.col("core_hours") * 0.01 * share_io).alias("lost_core_hours_io_wait_bound"),
        (F.col("core_hours") * 0.0005).alias("lost_core_hours_memory_bound"),
        (F.col("core_hours") * 0.001).alias("lost_core_hours_remote_read_bound"),
        F.lit(0.0).alias("lost_core_hours_init_dominated"),
        F.lit(0.0).alias("lost_core_hours_mixed"),
        (F.col("core_hours") * 0.05).alias("lost_core_hours_unclassified"),
    )
    w = Window.partitionBy("job_type", "week")
    io = io.withColumn("other_sites_cpu_efficiency", F.avg("cpu_efficiency").over(w)).withColumn(
        "efficiency_gap_vs_other_sites",
        F.col("other_sites_cpu_efficiency") - F.col("cpu_efficiency"),
    )
    site_io = io.groupBy("site", "week").agg(
        F.sum("jobs").alias("jobs"),
        F.sum("core_hours").alias("core_hours"),
        F.sum("classified_core_hours").alias("classified_core_hours"),
        *[
            (
                F.sum(F.col(f"share_{s}") * F.col("classified_core_hours"))
                / F.sum("classified_core_hours")
            ).alias(f"share_{s}")
            for s in SIGNATURES
        ],
        *[F.sum(f"lost_core_hours_{s}").alias(f"lost_core_hours_{s}") for s in SIGNATURES[1:]],
    )
    stress = nodes.groupBy("site", "week").agg(
        F.countDistinct("host").cast("bigint").alias("monitored_hosts"),
        F.count(F.lit(1)).cast("bigint").alias("host_hours"),
        F.avg(F.col("disk_saturated").cast("double")).alias("disk_saturated_share"),
        F.avg(F.col("memory_pressure").cast("double")).alias("memory_pressure_share"),
        F.avg(F.col("saturated").cast("double")).alias("saturated_share"),
        F.avg("iowait_mean").alias("iowait_mean"),
        F.max("disk_util_p95").alias("disk_util_p95_max"),
    )
    site_io = site_io.join(stress, ["site", "week"]).withColumn("rule_version", F.lit(1))

    # network: each site measures `peers` others ----------------------------------------------
    peers = min(scale.peers, scale.sites - 1)
    paths = (
        sites.select(F.col("site").alias("src_site"), F.col("site_idx").alias("i"))
        .crossJoin(spark.range(1, peers + 1).withColumnRenamed("id", "k"))
        .withColumn("j", (F.col("i") + F.col("k")) % scale.sites)
        .join(sites.select(F.col("site").alias("dst_site"), F.col("site_idx").alias("j")), "j")
        .select(
            "src_site",
            "dst_site",
            F.concat(F.lit("ps."), F.lower("src_site")).alias("src_host"),
            F.concat(F.lit("ps."), F.lower("dst_site")).alias("dst_host"),
            (1 + 80 * _u(F.least("i", "j"), F.greatest("i", "j"), salt="d")).alias("delay"),
            (_u("src_site", "dst_site", salt="cong") < 0.03).alias("congested_path"),
        )
    )
    pk = ("src_site", "dst_site", "week")
    cshare = F.when(F.col("congested_path"), 0.2 + 0.3 * _u(*pk, salt="cs")).otherwise(0.0)
    tput = 1e9 + 8e9 * _u(*pk, salt="tp")
    loss = F.when(F.col("congested_path"), 0.005).otherwise(2e-6)
    cost_matrix = paths.crossJoin(weeks).select(
        "week",
        "src_site",
        "dst_site",
        F.lit(2016).cast("bigint").alias("latency_samples"),
        F.col("delay").alias("delay_median_ms"),
        (F.col("delay") + F.when(F.col("congested_path"), 15.0).otherwise(0.1)).alias(
            "delay_p95_ms"
        ),
        (2 * F.col("delay")).alias("rtt_ms"),
        loss.alias("loss_mean"),
        F.lit(28).cast("bigint").alias("throughput_tests"),
        tput.alias("throughput_median_bps"),
        F.lit(2016).cast("bigint").alias("intervals"),
        cshare.alias("congested_share"),
        (0.75 - cshare).alias("quiet_share"),
        (8e9 / tput * (1 + 3 * cshare) / (1 - loss) + 10 * 2 * F.col("delay") / 1000).alias(
            "cost_seconds_per_gb"
        ),
    )
    rank = Window.partitionBy("week", "dst_site").orderBy("cost_seconds_per_gb")
    cost_matrix = cost_matrix.withColumn("source_rank", F.rank().over(rank))
    hour_of_day = F.hour("hour")
    busy = F.col("congested_path") & (hour_of_day >= 8) & (hour_of_day < 20)
    lk = ("src_site", "dst_site", "hour")
    cong = F.when(busy, F.round(12 * _u(*lk, salt="ci"))).otherwise(0).cast("bigint")
    hourly = paths.crossJoin(hours).select(
        "src_site",
        "dst_site",
        "src_host",
        "dst_host",
        "hour",
        F.lit(12).cast("bigint").alias("intervals"),
        F.lit(12).cast("bigint").alias("samples"),
        cong.alias("congested_intervals"),
        (12 - cong - F.when(_u(*lk, salt="q") < 0.2, 1).otherwise(0))
        .cast("bigint")
        .alias("quiet_intervals"),
        (cong / 12).alias("congested_share"),
        ((12 - cong) / 12 * 0.9).alias("quiet_share"),
        (F.col("delay") + cong * 1.2).alias("mean_delay_ms"),
        (cong * 1.25 + 0.1 * _u(*lk, salt="x")).alias("max_excess_delay_ms"),
        F.when(busy, 0.01 * _u(*lk, salt="l")).otherwise(2e-6).alias("mean_loss"),
        "week",
        link_label().alias("link"),
    )
    kinds = F.element_at(
        F.array(
            *[
                F.lit(x)
                for x in (
                    "high_loss",
                    "throughput_drop",
                    "throughput_rise",
                    "clock_drift",
                    "complete_loss",
                )
            ]
        ),
        (1 + F.floor(5 * _u(*pk, salt="kind"))).cast("int"),
    )
    start = F.to_timestamp("week") + F.make_interval(
        F.lit(0),
        F.lit(0),
        F.lit(0),
        F.floor(7 * _u(*pk, salt="day")).cast("int"),
        F.floor(24 * _u(*pk, salt="hr")).cast("int"),
        F.lit(0),
        F.lit(0),
    )
    alarms = (
        paths.crossJoin(weeks)
        .where(F.col("congested_path") | (_u(*pk, salt="al") < 0.015))
        .select(
            F.when(F.col("congested_path"), F.lit("high_loss")).otherwise(kinds).alias("kind"),
            "src_site",
            "dst_site",
            "src_host",
            "dst_host",
            start.alias("start_ts"),
            (start + F.expr("INTERVAL 3 HOURS")).alias("end_ts"),
            (0.02 + 0.05 * _u(*pk, salt="v")).alias("value"),
            F.lit('{"intervals": 36}').alias("evidence"),
        )
    )

    # grid-wide aggregates ---------------------------------------------------------------------
    all_types = types.select("job_type").union(spark.createDataFrame([("ALL",)], "job_type string"))
    mk = ("cpu_model", "job_type")
    factor = F.col("speed") * (0.95 + 0.1 * _u(*mk, salt="sf"))
    speed = models.crossJoin(all_types).select(
        "cpu_model",
        "microarchitecture",
        "job_type",
        factor.alias("speed_factor"),
        (factor * 0.98).alias("ci_low"),
        (factor * 1.02).alias("ci_high"),
        (100 + F.floor(2000 * _u(*mk, salt="n"))).cast("bigint").alias("n_jobs"),
        F.lit(20).cast("bigint").alias("n_tasks"),
        F.lit(1).alias("group_id"),
        F.lit("Vendor(R) CPU Model-00 @ 2.40GHz").alias("reference_model"),
        F.lit(12).alias("iterations"),
        F.lit(True).alias("converged"),
        F.lit(39).alias("n_replicates"),
    )
    ratio = 0.95 + 0.1 * _u(*mk, salt="r")
    mismatch = models.crossJoin(all_types).select(
        "job_type",
        "cpu_model",
        "microarchitecture",
        F.lit("Vendor(R) CPU Model-00 @ 2.40GHz").alias("reference_model"),
        (10 * F.col("speed")).alias("hs23_per_core"),
        F.col("speed").alias("benchmark_factor"),
        (F.col("speed") * ratio).alias("speed_factor"),
        ratio.alias("ratio"),
        (ratio - 0.02).alias("ratio_ci_low"),
        (ratio + 0.02).alias("ratio_ci_high"),
        F.lit(0.1).alias("margin"),
        ((ratio < 0.88) | (ratio > 1.12)).alias("flagged"),
        (100 + F.floor(2000 * _u(*mk, salt="n"))).cast("bigint").alias("n_jobs"),
    )
    cpu_eff = models.crossJoin(types).select(
        "microarchitecture",
        F.col("cpu_model").alias("cpu_model_norm"),
        "job_type",
        (1000 * _u(*mk, salt="cj")).cast("bigint").alias("jobs"),
        (1e5 * _u(*mk, salt="ch")).alias("core_hours"),
        (1e5 * _u(*mk, salt="ch") * F.col("eff")).alias("cpu_hours"),
        F.col("eff").alias("cpu_efficiency"),
        F.lit(10.0).alias("median_hs23_seconds_per_event"),
    )
    site_models = (
        sites.crossJoin(spark.range(4).withColumnRenamed("id", "m"))
        .select(
            "site",
            "site_idx",
            F.format_string(
                "Vendor(R) CPU Model-%02d @ 2.40GHz", (F.col("site_idx") + 7 * F.col("m")) % 40
            ).alias("cpu_model"),
        )
        .union(sites.select("site", "site_idx", F.lit("ALL").alias("cpu_model")))
    )
    sk = ("site", "cpu_model", "job_type")
    slow = 0.97 + 0.06 * _u(*sk, salt="sl")
    anomalies = site_models.crossJoin(all_types).select(
        "job_type",
        "site",
        "cpu_model",
        F.lit("Vendor(R) CPU Model-00 @ 2.40GHz").alias("reference_model"),
        F.lit(1).alias("group_id"),
        F.log(slow).alias("site_term"),
        slow.alias("slowdown"),
        (slow - 0.02).alias("ci_low"),
        (slow + 0.02).alias("ci_high"),
        (50 + F.floor(500 * _u(*sk, salt="n"))).cast("bigint").alias("n_jobs"),
        F.lit(10).cast("bigint").alias("n_tasks"),
        F.lit(0.05).alias("margin"),
        ((slow - 0.02) > 1.05).alias("flagged"),
    )
    bins = spark.range(14).withColumnRenamed("id", "bin_index")
    modes = spark.createDataFrame([(m,) for m in ("ALL", *FAILURE_MODES)], "failure_mode string")
    fk = ("job_type", "failure_mode", "bin_index")
    attempts = (1e6 * F.col("share") * F.exp(-F.abs(F.col("bin_index") - 5) / 2)).cast("bigint") + 1
    failures = (
        F.col("_a")
        * F.col("fail")
        * (0.3 + 0.7 * _u(*fk, salt="fp"))
        * F.when(F.col("failure_mode") == "ALL", 1.0).otherwise(0.2)
    ).cast("bigint")
    fvd = (
        types.crossJoin(modes)
        .crossJoin(bins)
        .withColumn("_a", attempts)
        .select(
            "job_type",
            "failure_mode",
            F.col("bin_index").cast("int").alias("bin_index"),
            F.format_string("bin%02d", F.col("bin_index")).alias("duration_bin"),
            (0.1 * F.pow(F.lit(1.7), F.col("bin_index"))).alias("bin_low_hours"),
            (0.1 * F.pow(F.lit(1.7), F.col("bin_index") + 1)).alias("bin_high_hours"),
            F.col("_a").alias("attempts"),
            failures.alias("failures"),
            (failures / F.col("_a")).alias("failure_probability"),
            (F.col("_a") * 0.1 * F.pow(F.lit(1.7), F.col("bin_index"))).alias(
                "exposure_wall_hours"
            ),
            (failures * 4.0).alias("wasted_core_hours"),
        )
    )
    advice = types.select(
        "job_type",
        (1e6 * F.col("share")).cast("bigint").alias("n_jobs"),
        F.lit(40).cast("bigint").alias("n_init_groups"),
        F.lit(300.0).alias("init_seconds"),
        (1e4 * F.col("share")).cast("bigint").alias("hazard_failures"),
        (F.col("fail") / F.col("wall")).alias("hazard_per_hour"),
        (F.col("wall") * 1.3).alias("optimal_hours"),
        F.lit(0.95).alias("expected_useful_fraction"),
        F.col("wall").alias("current_median_hours"),
        F.lit(0.93).alias("current_useful_fraction"),
        (5e7 * F.col("share")).alias("core_hours_per_year"),
        (1e6 * F.col("share")).alias("core_hours_saved_per_year"),
    )
    multicore = types.select(
        "job_type", F.explode(F.array(F.lit(1), F.col("cores"))).alias("cores")
    ).distinct()
    multicore = multicore.join(types.drop("cores"), "job_type").select(
        "job_type",
        F.col("cores").cast("bigint").alias("cores"),
        F.lit(10_000).cast("bigint").alias("jobs"),
        F.lit(500).cast("bigint").alias("tasks"),
        F.lit(1e5).alias("core_hours"),
        (1e5 * F.col("eff") / (1 + 0.01 * (F.col("cores") - 1))).alias("cpu_hours"),
        (F.col("eff") / (1 + 0.01 * (F.col("cores") - 1))).alias("cpu_efficiency"),
    )
    memory = types.select(
        "job_type",
        (1000.0 + 2000.0 * _u("job_type", salt="rss")).alias("base_mb"),
        F.when(F.col("cores") > 1, F.lit(200.0)).alias("per_thread_mb"),
        F.when(F.col("cores") > 1, F.lit(190.0)).alias("per_thread_mb_low"),
        F.when(F.col("cores") > 1, F.lit(210.0)).alias("per_thread_mb_high"),
        (1e5 * F.col("share")).cast("bigint").alias("jobs"),
    ).withColumn(
        "saved_fraction_8_threads", 7 * (F.col("base_mb") - 200.0) / (8 * F.col("base_mb"))
    )

    return {
        "site_efficiency_weekly": site_week,
        "site_jobtype_efficiency_weekly": jt,
        "efficiency_outliers": out_sites.unionByName(out_models),
        "node_saturation": nodes,
        "workflow_io_profile": io.withColumn("rule_version", F.lit(1)),
        "site_io_stress_weekly": site_io,
        "network_cost_matrix": cost_matrix,
        "network_link_hourly": hourly,
        "network_alarms": alarms,
        "cpu_speed_factors": speed,
        "benchmark_mismatch": mismatch,
        "cpu_model_efficiency": cpu_eff,
        "site_speed_anomalies": anomalies,
        "failure_vs_duration": fvd,
        "job_length_advice": advice,
        "multicore_scaling": multicore,
        "memory_per_thread_fit": memory,
    }


def synthesise_gold(spark: Any, scale: ServingScale, settings: Settings) -> dict[str, int]:
    """Write the synthetic year of gold into the instance's warehouse; rows per table."""
    from gridlake.catalog import ensure_all
    from gridlake.gold.analyze import gold_tables
    from gridlake.serving.views import create_views

    ensure_all(spark)
    tables = {t.name: t for t in gold_tables()}
    for t in tables.values():
        t.ensure(spark, settings)
    counts = {}
    for name, df in _frames(spark, scale).items():
        table = tables[name]
        out = _fill(df, table)
        # the layout the pipeline's overwrite leaves (Table.overwriter): its frames come out of
        # a shuffle (a groupBy), rows of every week in every task
        out = out.repartition(settings.shuffle_partitions)
        if table.partitioning_differs(spark, settings):  # an instance from before a change
            table.repartitioning_writer(out).save(table.path(settings))
        else:
            table.overwriter(out).save(table.path(settings))
        counts[name] = spark.read.format("delta").load(table.path(settings)).count()
        print(f"   gold.{name}: {counts[name]:,} rows", flush=True)
    create_views(spark, settings)
    return counts


# --------------------------------------------------------------------------------------------
# Superset and DuckDB
# --------------------------------------------------------------------------------------------


def _duckdb(settings: Settings) -> Any:
    """DuckDB with a view grid.<name> over each dataset table's active Delta files."""
    import duckdb
    from deltalake import DeltaTable

    from gridlake.serving.superset_assets import DATASETS
    from gridlake.serving.views import view_columns

    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("CREATE SCHEMA grid")
    for ds in DATASETS:
        if ds.table is None:
            continue
        files = DeltaTable(ds.table.path(settings)).file_uris()
        columns = view_columns(ds.table)
        if not files:  # an empty table (ops.alerts of a warehouse where nothing failed)
            typed = ", ".join(f'CAST(NULL AS {_duck_type(c.ddl_type)}) AS "{c.name}"'
                              for c in columns)  # fmt: skip
            con.execute(f'CREATE VIEW grid."{ds.name}" AS SELECT {typed} WHERE false')
            continue
        cols = ", ".join(f'"{c.name}"' for c in columns)
        source = f"read_parquet({files!r}, hive_partitioning = true)"
        con.execute(f'CREATE VIEW grid."{ds.name}" AS SELECT {cols} FROM {source}')
    return con


def _duck_type(ddl: str) -> str:
    """A Spark DDL type as DuckDB spells it (STRING -> VARCHAR, ARRAY<T> -> T[])."""
    ddl = ddl.strip().upper()
    if ddl.startswith("ARRAY<") and ddl.endswith(">"):
        return _duck_type(ddl[6:-1]) + "[]"
    return {"STRING": "VARCHAR"}.get(ddl, ddl)


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def _measure(api: SupersetClient, con: Any, scale: ServingScale) -> dict[str, Any]:
    import sqlglot

    from gridlake.serving.superset_assets import DASHBOARDS

    out: dict[str, Any] = {}
    cold = _one_pass(api)  # the cold pass: gridlake superset warm, timed per request
    for dash in DASHBOARDS:
        queries = dashboard_queries(api, dash)
        superset_s: list[float] = []
        duck_s: list[float] = []
        per_chart: dict[str, dict[str, Any]] = {}
        for key, qc in queries:
            times, rows, sql = [], 0, None
            for _ in range(scale.rounds):
                seconds, result = api.data(json.loads(json.dumps(qc)))
                if result.get("error"):
                    raise RuntimeError(f"{dash.slug}/{key}: {result['error'][:500]}")
                times.append(seconds)
                rows, sql = len(result.get("data") or []), result.get("query")
            superset_s += times
            entry: dict[str, Any] = {
                "rows": rows,
                "superset_p50_s": round(statistics.median(times), 3),
            }
            try:
                duck_sql = sqlglot.transpile(sql, read="spark", write="duckdb")[0]
                dtimes = []
                for _ in range(scale.rounds):
                    t0 = time.perf_counter()
                    con.execute(duck_sql).fetchall()
                    dtimes.append(time.perf_counter() - t0)
                duck_s += dtimes
                entry["duckdb_p50_s"] = round(statistics.median(dtimes), 4)
            except Exception as exc:  # a dialect gap is reported, not fatal
                entry["duckdb_error"] = str(exc).splitlines()[0][:200]
            per_chart[key] = entry
        p95 = _pct(superset_s, 0.95)
        out[dash.slug] = {
            "charts": len(queries),
            "requests": len(superset_s),
            "superset_p50_s": round(statistics.median(superset_s), 3),
            "superset_p95_s": round(p95, 3),
            "cold_p50_s": round(statistics.median(cold[dash.slug]), 3),
            "cold_p95_s": round(_pct(cold[dash.slug], 0.95), 3),
            "cold_max_s": round(max(cold[dash.slug]), 3),
            "duckdb_p50_s": round(statistics.median(duck_s), 4) if duck_s else None,
            "duckdb_p95_s": round(_pct(duck_s, 0.95), 4) if duck_s else None,
            "ratio_p50_superset_vs_duckdb": (
                round(statistics.median(superset_s) / statistics.median(duck_s), 1)
                if duck_s
                else None
            ),
            "target": "p95 < 1 s",
            "meets_target": p95 < 1.0,
            "slowest_charts": sorted(
                ((k, v["superset_p50_s"]) for k, v in per_chart.items()), key=lambda kv: -kv[1]
            )[:3],
            "per_chart": per_chart,
        }
        print(
            f"   {dash.slug}: p50 {out[dash.slug]['superset_p50_s']} s, p95 "
            f"{out[dash.slug]['superset_p95_s']} s (cold p95 {out[dash.slug]['cold_p95_s']} s), "
            f"duckdb p50 {out[dash.slug]['duckdb_p50_s']} s",
            flush=True,
        )
    return out


def _one_pass(api: SupersetClient) -> dict[str, list[float]]:
    """Every chart query of every dashboard once: {slug: seconds of each request}."""
    from gridlake.serving.superset_assets import DASHBOARDS

    return {
        dash.slug: [
            api.data(json.loads(json.dumps(qc)))[0] for _, qc in dashboard_queries(api, dash)
        ]
        for dash in DASHBOARDS
    }


def _pass_figures(times: dict[str, list[float]]) -> dict[str, Any]:
    per = {
        slug: {"p50_s": round(statistics.median(t), 3), "p95_s": round(_pct(t, 0.95), 3),
               "max_s": round(max(t), 3)}
        for slug, t in times.items()
    }  # fmt: skip
    return {"dashboards": per, "worst_dashboard_p95_s": max(d["p95_s"] for d in per.values())}


def rewrite_latest_week(spark: Any, settings: Settings) -> dict[str, int]:
    """Rewrite what an incremental analyze rewrites every cycle, with the same rows: the latest
    week of each weekly table a dashboard reads (``replaceWhere``), every other such table of
    fewer than 500,000 rows whole. Returns the rows written per table. The data stay the same;
    the Thrift Server sees new Delta versions, as after a real analyze."""
    from pyspark.sql import functions as F

    from gridlake.serving.superset_assets import DATASETS

    written: dict[str, int] = {}
    for table in {ds.table.full_name: ds.table for ds in DATASETS if ds.table is not None}.values():
        if not table.full_name.startswith("gold."):
            continue
        path = table.path(settings)
        df = spark.read.format("delta").load(path)
        if "week" in df.columns:
            latest = df.agg(F.max("week")).first()[0]
            if latest is None:
                continue
            part = df.where(F.col("week") == F.lit(latest)).localCheckpoint()
            (part.write.format("delta").mode("overwrite")
             .option("replaceWhere", f"week = DATE'{latest.isoformat()}'").save(path))  # fmt: skip
            written[table.full_name] = part.count()
        elif (n := df.count()) < 500_000:
            df.localCheckpoint().write.format("delta").mode("overwrite").save(path)
            written[table.full_name] = n
    return written


def _infra(script: str, action: str) -> None:
    subprocess.run(
        ["bash", str(REPO_ROOT / "infra" / script), action], check=True, stdout=subprocess.DEVNULL
    )


def bench_serving(scale_name: str, work: Path) -> dict[str, Any]:
    """The ``serving`` stage (the bench scale's name picks a ServingScale)."""
    from gridlake.spark import get_spark

    settings = get_settings()
    s = SERVING_SCALES[os.environ.get("GRIDLAKE_SERVING_SCALE") or scale_name]
    out: dict[str, Any] = {"grid": s.__dict__ | {"latest_week": LATEST_WEEK.isoformat()}}
    spark = get_spark(app_name="gridlake-bench-serving")
    t0 = time.perf_counter()
    out["rows"] = synthesise_gold(spark, s, settings)
    out["synthesis_seconds"] = round(time.perf_counter() - t0, 1)
    spark.stop()  # its CPU belongs to the Thrift Server now
    warehouse = Path(settings.storage_root.removeprefix("file:")) / "gold"
    out["gold_bytes"] = sum(p.stat().st_size for p in warehouse.rglob("*.parquet"))

    started = []
    try:
        for script in ("thrift.sh", "superset.sh"):
            _infra(script, "start")
            started.append(script)
        user, password = read_login(settings.state / "secrets" / "superset_admin.txt")
        api = SupersetClient(f"http://127.0.0.1:{settings.superset_port}", user, password)
        con = _duckdb(settings)
        out["dashboards"] = _measure(api, con, s)
        # what the first person to open a dashboard after an analyze waits for (warm server,
        # new Delta versions of the tables the dashboards read)
        spark = get_spark(app_name="gridlake-bench-serving")
        t0 = time.perf_counter()
        out["gold_write"] = {"rows": rewrite_latest_week(spark, settings),
                             "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
        spark.stop()
        out["after_gold_write"] = _pass_figures(_one_pass(api))
    finally:
        for script in reversed(started):
            _infra(script, "stop")
    dashboards = out["dashboards"].values()
    out["worst_dashboard_p95_s"] = max(d["superset_p95_s"] for d in dashboards)
    out["cold_worst_dashboard_p95_s"] = max(d["cold_p95_s"] for d in dashboards)
    out["after_gold_write_worst_dashboard_p95_s"] = out["after_gold_write"]["worst_dashboard_p95_s"]
    out["measured_as"] = (
        "worst_dashboard_p95_s: every chart query `rounds` times on the server warmed by one "
        "pass (gridlake superset warm, as make demo runs it after writing gold); "
        "cold_worst_dashboard_p95_s: that first pass, on the freshly started services; "
        "after_gold_write_worst_dashboard_p95_s: one pass on the warm server right after the "
        "latest week of every gold table the dashboards read was rewritten (as an analyze does)"
    )
    return out
