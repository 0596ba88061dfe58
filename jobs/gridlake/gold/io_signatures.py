"""I/O-limit signatures per job, node saturation per hour and workflow I/O profiles (gold).

Which jobs are limited by I/O, memory or the network rather than by CPU, and why (domain.md,
"Node samples and I/O-limit signatures"). Four derived tables and one editable rule table:

- gold.io_signature_rules: the thresholds, versioned. An operator changes a threshold by
  inserting a row with a higher ``rule_version``; the transforms apply the highest version, a
  parameter absent from it keeps its value from the most recent version that lists it. Gold is
  recomputed from silver on every run, so a new version re-scores the whole history.
- gold.job_io_signature: one signature per job attempt, its confidence and the evidence.
- gold.node_saturation: per host and hour, disk, iowait and swap figures and saturation flags.
- gold.workflow_io_profile: per job type, site and week, the share of core-hours per signature
  and the core-hours lost to each limit, compared with the same job type at the other sites.
- gold.site_io_stress_weekly: per site and week, saturated host-hours and lost core-hours.

How a job is classified (first match wins; thresholds are the rule parameters in brackets)
-------------------------------------------------------------------------------------------
Inputs per job: its own CPU efficiency ``eff = cpu_seconds / (wall_seconds x cores)`` (exact,
from accounting) and the node evidence of silver.job_node_features (host-wide averages and
percentiles of the vmstat / iostat samples taken on its host during its run).

0. ``insufficient_data``: fewer than [min_vmstat_samples] vmstat samples, or no efficiency.
1. ``cpu_bound``: eff >= [cpu_ratio_min] x the job type's reference efficiency (see below). The
   job uses its cores; wait evidence on the node, if any, belongs to its neighbours.
   Otherwise the job lost CPU time and the node evidence explains why:
2. memory evidence M: swap traffic (si + so over the run, per wall-clock second) >=
   [swap_kb_s_min], or some swapping with the page cache shrinking by [cache_drop_kb_min].
   I/O evidence I: busiest local disk util p95 >= [disk_util_p95_min], or its read await p95 >=
   [r_await_ms_p95_min], or iowait mean >= [wa_mean_min] with blocked processes >= [b_mean_min].
   M and I with swap traffic below [mixed_swap_share_max] of the disk traffic: ``mixed`` (the
   disks are busy with more than swapping). M: ``memory_bound`` (swapping drives the disk).
   I: ``io_wait_bound``.
3. ``init_dominated``: initialisation takes about half of the run or more. The estimated
   initialisation share is ``s = (ref - eff) / (ref - init_eff)``: the job's efficiency as a mix
   of payload at the reference efficiency and initialisation at ``init_eff = [init_busy_cores] /
   cores`` (initialisation is single-threaded and partly waiting). init_dominated when
   [init_share_min] <= s <= [init_share_max] and wall <= [init_max_wall_seconds] (short jobs;
   s above the maximum means initialisation cannot explain the loss by itself).
4. Waiting on nothing local: eff < [remote_ratio_max] x reference, no local disk, memory or
   iowait evidence, and the node's CPUs are not busy (us mean < [busy_us_min]) - or the job is
   not computing at all (eff < [idle_efficiency_max]). Low us, low local disk, low wa. Then the
   network tells which:
   ``idle_or_stalled``: the host received less than [remote_rx_kb_s_min] KiB/s on average over
   the run (little CPU, little I/O wait, little network: a job that sleeps, hangs or waits on a
   lock or a service); when the host's samples carry no network counters (sources other than
   the agent), only a job not computing at all (eff < [idle_efficiency_max]).
   ``remote_read_bound``: otherwise (network receive high while the CPU is low: remote reads).
5. Otherwise ``cpu_bound``: a loss that initialisation or parallel overheads explain, or CPU
   contention (the node's CPUs are busy: the job waits for CPU, not for I/O).

Reference efficiency of a job type: the [reference_quantile] of the efficiency of its attempts of
the same core count that ran at least [reference_min_wall_seconds] (initialisation is then a
small part), CPU outliers (is_outlier) excluded, over all sites and weeks of the input: a high
quantile, so that a minority of limited sites does not drag it down. Job types without such
attempts (new workflows, pseudo-jobs) use [default_reference_efficiency] and skip rule 3.

Shared nodes and apportioning
-----------------------------
vmstat and iostat describe the whole host; several jobs run on it at once (eight 1-core jobs in
an 8-core slot). Every job is given the host's evidence over its own run, unscaled (iowait, disk
util, swap are percentages and rates of the host), and ``shared_node`` / ``other_jobs_on_node`` /
``core_share`` say how much it shares: core_share is the job's core-seconds over the core-seconds
of all jobs (itself included) that ran on the host during its run. The evidence is apportioned by
the job's own CPU time: a job that keeps its cores busy is cpu_bound whatever its neighbours do
(rule 1), and only a job that lost CPU time is given the limit the node shows. Lost core-hours
are the job's own (from accounting), never the host's.

Confidence: every decision has a margin, the smallest relative distance of the quantities that
decided it to their thresholds (``decision_margin``, 0 on a threshold); confidence = (0.5 + 0.5 x
min(1, margin / [confidence_full_margin])) x sqrt(min(1, samples / [confident_samples])).

Lost core-hours of a job = core-hours x max(0, E - eff), where E is the efficiency its job type
(same core count, else any) reaches where classified cpu_bound (ratio of sums over the input).

Pure DataFrame -> DataFrame transforms with built-in functions only; the only collect is the
resolved rule set (one row per parameter).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.silver.features import job_buckets
from gridlake.silver.tables import (
    SILVER_JOB_NODE_FEATURES,
    SILVER_JOBS,
    SILVER_NODE_DISK_SAMPLES,
    SILVER_NODE_SAMPLES,
)
from gridlake.spark import rows_frame
from gridlake.tabledef import Check, Column, Table

__all__ = [
    "DEFAULT_IO_RULES",
    "GOLD_IO_SIGNATURE_RULES",
    "GOLD_JOB_IO_SIGNATURE",
    "GOLD_NODE_SATURATION",
    "GOLD_SITE_IO_STRESS_WEEKLY",
    "GOLD_WORKFLOW_IO_PROFILE",
    "LIMIT_SIGNATURES",
    "SIGNATURES",
    "TABLES",
    "IoRule",
    "IoRuleSet",
    "compute",
    "io_rules_frame",
    "job_io_signature",
    "node_overlap",
    "node_saturation",
    "reference_efficiency",
    "resolve_io_rules",
    "site_io_stress_weekly",
    "workflow_io_profile",
]

SIGNATURES = (
    "cpu_bound",
    "io_wait_bound",
    "memory_bound",
    "remote_read_bound",
    "init_dominated",
    "mixed",
    "idle_or_stalled",
    "insufficient_data",
)
# Signatures whose lost core-hours are attributed to a limit other than the CPU.
LIMIT_SIGNATURES = (
    "io_wait_bound",
    "memory_bound",
    "remote_read_bound",
    "init_dominated",
    "mixed",
    "idle_or_stalled",
)

# --------------------------------------------------------------------------------------------
# The rule table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IoRule:
    parameter: str
    value: float
    description: str


@dataclass(frozen=True)
class IoRuleSet:
    """One version of the rules: every parameter and its value."""

    rule_version: int
    rules: tuple[IoRule, ...]

    @property
    def values(self) -> dict[str, float]:
        return {r.parameter: r.value for r in self.rules}

    def __getitem__(self, parameter: str) -> float:
        return self.values[parameter]

    def with_values(self, rule_version: int, **changes: float) -> IoRuleSet:
        """A new version with some values changed (for operators' scripts and tests)."""
        unknown = set(changes) - set(self.values)
        if unknown:
            raise KeyError(f"unknown rule parameters {sorted(unknown)}")
        rules = tuple(
            IoRule(r.parameter, float(changes.get(r.parameter, r.value)), r.description)
            for r in self.rules
        )
        return IoRuleSet(rule_version, rules)


DEFAULT_IO_RULES = IoRuleSet(
    rule_version=1,
    rules=(
        IoRule("min_vmstat_samples", 1, "Fewer vmstat samples during the run: insufficient_data"),
        IoRule("confident_samples", 3, "Samples for full confidence (fewer scale it by sqrt)"),
        IoRule("confidence_full_margin", 0.5, "Relative margin to the thresholds for confidence 1"),
        IoRule("cpu_ratio_min", 0.85, "eff >= this x reference efficiency: cpu_bound"),
        IoRule("swap_kb_s_min", 100, "Swap-in + swap-out KiB per wall second: memory evidence"),
        IoRule("cache_drop_kb_min", 500_000, "Page-cache shrink (KiB) that with swapping is "
               "memory evidence"),
        IoRule("mixed_swap_share_max", 0.5, "Memory and I/O evidence with swap below this share "
               "of the disk traffic: mixed"),
        IoRule("disk_util_p95_min", 35, "Busiest local disk %util p95: I/O evidence"),
        IoRule("r_await_ms_p95_min", 20, "Busiest local disk read await p95 (ms): I/O evidence"),
        IoRule("wa_mean_min", 10, "iowait mean (% of the host) that with blocked processes is "
               "I/O evidence"),
        IoRule("b_mean_min", 1, "Blocked processes (vmstat b) mean that with iowait is I/O "
               "evidence"),
        IoRule("init_busy_cores", 0.5, "Cores kept busy during initialisation"),
        IoRule("init_share_min", 0.5, "Estimated initialisation share for init_dominated"),
        IoRule("init_share_max", 1.05, "Above this the initialisation alone cannot explain the "
               "loss"),
        IoRule("init_max_wall_seconds", 2400, "Only jobs this short can be init_dominated"),
        IoRule("reference_min_wall_seconds", 1800, "Attempts this long set the reference "
               "efficiency"),
        IoRule("reference_quantile", 0.75, "Quantile of their efficiency taken as the reference"),
        IoRule("default_reference_efficiency", 1.0, "Reference of job types without one"),
        IoRule("remote_ratio_max", 0.70, "eff below this x reference without local evidence: "
               "remote_read_bound (if the CPUs are not busy)"),
        IoRule("busy_us_min", 75, "Host user CPU mean (%) from which a low-efficiency job is "
               "CPU-starved, not remote-read-bound"),
        IoRule("idle_efficiency_max", 0.05, "A job below this efficiency is not computing "
               "(never CPU-starved)"),
        IoRule("remote_rx_kb_s_min", 1024, "Host network receive (KiB/s, mean over the run) "
               "from which a job waiting on nothing local is remote_read_bound; below: "
               "idle_or_stalled"),
    ),
)  # fmt: skip

_RULES_DDL = "rule_version int, parameter string, value double, description string"


def io_rules_frame(spark: SparkSession, *rule_sets: IoRuleSet) -> DataFrame:
    """Rows of gold.io_signature_rules for the given versions (DEFAULT_IO_RULES when none)."""
    sets = rule_sets or (DEFAULT_IO_RULES,)
    rows = [
        (s.rule_version, r.parameter, float(r.value), r.description) for s in sets for r in s.rules
    ]
    return rows_frame(spark, rows, _RULES_DDL)


def resolve_io_rules(rules: DataFrame) -> IoRuleSet:
    """The rules in force: the highest rule_version, each parameter from the most recent version
    that lists it (a parameter no version lists keeps its DEFAULT_IO_RULES value).

    Collects one row per parameter (the table is small and bounded by the parameter names).
    """
    latest = (
        rules.where(F.col("parameter").isNotNull() & F.col("value").isNotNull())
        .groupBy("parameter")
        .agg(
            F.max_by("value", "rule_version").alias("value"),
            F.max_by("description", "rule_version").alias("description"),
            F.max("rule_version").alias("rule_version"),
        )
        .collect()
    )
    found = {r["parameter"]: r for r in latest}
    version = max((int(r["rule_version"]) for r in latest), default=DEFAULT_IO_RULES.rule_version)
    merged = tuple(
        IoRule(d.parameter, float(found[d.parameter]["value"]), d.description)
        if d.parameter in found
        else d
        for d in DEFAULT_IO_RULES.rules
    )
    return IoRuleSet(version, merged)


# --------------------------------------------------------------------------------------------
# Table definitions
# --------------------------------------------------------------------------------------------

GOLD_IO_SIGNATURE_RULES = Table(
    database="gold",
    name="io_signature_rules",
    keys=("rule_version", "parameter"),
    question="Which thresholds classify a job as I/O-wait, memory or remote-read bound?",
    example=(
        "SELECT rule_version, parameter, value FROM gold.io_signature_rules ORDER BY parameter, "
        "rule_version"
    ),
    grain="one row per rule_version and parameter.",
    description=(
        "Editable thresholds of the I/O-limit signatures (gold.job_io_signature, "
        "gold.node_saturation): insert rows with a higher rule_version to change them; the "
        "highest version applies (parameters it does not list keep their latest earlier "
        "value) and every gold run re-scores the whole history."
    ),
    columns=(
        Column("rule_version", "INT", "Version; the highest one in the table applies"),
        Column("parameter", "STRING", "Threshold name (see gridlake.gold.io_signatures)"),
        Column("value", "DOUBLE", "Threshold value"),
        Column("description", "STRING", "What the threshold decides"),
    ),
    checks=(Check("not_null", "rule_version"), Check("not_null", "parameter")),
)

_SIG_CHECK = Check("in_set", "signature", {"value_set": list(SIGNATURES)})

GOLD_JOB_IO_SIGNATURE = Table(
    database="gold",
    name="job_io_signature",
    keys=("job_id",),
    question=(
        'Why was this job inefficient: CPU, local I/O wait, memory, remote reads or '
        'initialisation?'
    ),
    example=(
        'SELECT signature, count(*) AS jobs, round(sum(lost_core_hours), 1) AS lost_core_hours '
        'FROM gold.job_io_signature GROUP BY signature ORDER BY lost_core_hours DESC'
    ),
    grain="one row per job attempt (job_id) of silver.jobs.",
    description=(
        "What limits each job: cpu_bound, io_wait_bound, memory_bound, remote_read_bound, "
        "init_dominated, mixed or insufficient_data (no node samples), from its CPU efficiency "
        "and the vmstat/iostat samples of its host during its run, with the evidence."
    ),
    columns=(
        Column("job_id", "STRING", "Job attempt"),
        Column("site", "STRING", "Grid site"),
        Column("host", "STRING", "Worker node"),
        Column("job_type", "STRING", "Job type"),
        Column("week", "DATE", "Monday of the ISO week of end_time (UTC)"),
        Column("cores", "INT", "Cores allocated to the job"),
        Column("wall_seconds", "DOUBLE", "Wall-clock seconds"),
        Column("core_hours", "DOUBLE", "wall_seconds x cores / 3600"),
        Column("signature", "STRING", "cpu_bound | io_wait_bound | memory_bound | "
               "remote_read_bound | init_dominated | mixed | idle_or_stalled | "
               "insufficient_data"),
        Column("confidence", "DOUBLE", "0.5-1 from the margin to the thresholds, scaled down "
               "when samples are few; null for insufficient_data"),
        Column("decision_margin", "DOUBLE", "Smallest relative distance of the deciding "
               "quantities to their thresholds (0 = on a threshold, capped at 1)"),
        Column("cpu_efficiency", "DOUBLE", "cpu_seconds / (wall_seconds x cores) of the job"),
        Column("reference_efficiency", "DOUBLE", "Job type's reference efficiency (quantile of "
               "its long attempts with the same cores; default when none)"),
        Column("efficiency_ratio", "DOUBLE", "cpu_efficiency / reference_efficiency"),
        Column("init_share_est", "DOUBLE", "Estimated initialisation share of the wall-clock "
               "(null without a reference)"),
        Column("vmstat_samples", "BIGINT", "vmstat samples on the host during the run"),
        Column("iostat_samples", "BIGINT", "iostat samples on the host during the run"),
        Column("us_mean", "DOUBLE", "Host user CPU %, mean"),
        Column("wa_mean", "DOUBLE", "Host iowait %, mean"),
        Column("b_mean", "DOUBLE", "Blocked processes (vmstat b), mean"),
        Column("disk_util_p95", "DOUBLE", "Busiest local disk %util, p95"),
        Column("r_await_ms_p95", "DOUBLE", "Busiest local disk read await ms, p95"),
        Column("read_kb_s_mean", "DOUBLE", "Host disk reads KiB/s, mean"),
        Column("write_kb_s_mean", "DOUBLE", "Host disk writes KiB/s, mean"),
        Column("swap_in_kb_s", "DOUBLE", "Swapped-in KiB per wall second of the run"),
        Column("swap_out_kb_s", "DOUBLE", "Swapped-out KiB per wall second of the run"),
        Column("cache_trend_kb", "DOUBLE", "Page cache at the last sample minus the first (KiB)"),
        Column("net_rx_kb_s_mean", "DOUBLE", "Host network receive KiB/s, mean (null: the "
               "samples carry no network counters)"),
        Column("shared_node", "BOOLEAN", "Other jobs ran on the host during the run"),
        Column("other_jobs_on_node", "BIGINT", "Other job attempts overlapping on the host"),
        Column("core_share", "DOUBLE", "Job's core-seconds / core-seconds of all jobs on the "
               "host during its run (itself included): its share of the host's evidence"),
        Column("cpu_bound_efficiency", "DOUBLE", "Efficiency the job type (same cores, else any) "
               "reaches where classified cpu_bound (ratio of sums)"),
        Column("lost_core_hours", "DOUBLE", "core_hours x max(0, cpu_bound_efficiency - "
               "cpu_efficiency)"),
        Column("rule_version", "INT", "gold.io_signature_rules version applied"),
    ),
    checks=(Check("not_null", "job_id"), Check("unique", "job_id"), _SIG_CHECK),
)  # fmt: skip

GOLD_NODE_SATURATION = Table(
    database="gold",
    name="node_saturation",
    keys=("host", "hour"),
    # a dashboard opens on one week of it: a year of a 100-site grid with 10 monitored hosts a
    # site is 8.7 M rows, one week 168 k (the serving bench: 0.94 s for the saturated-nodes
    # heatmap over the unpartitioned table at 5 hosts a site)
    partition_by=("week",),
    question='Which worker nodes were disk- or memory-saturated, hour by hour?',
    example=(
        'SELECT site, host, count_if(saturated) AS saturated_hours, count(*) AS hours FROM '
        'gold.node_saturation GROUP BY site, host ORDER BY saturated_hours DESC LIMIT 10'
    ),
    grain="one row per host and hour (UTC) with node samples.",
    description=(
        "Disk, iowait and swap pressure of each monitored host per hour, with saturation flags "
        "from the thresholds of gold.io_signature_rules."
    ),
    columns=(
        Column("site", "STRING", "Grid site"),
        Column("host", "STRING", "Worker node"),
        Column("hour", "TIMESTAMP", "Start of the hour (UTC)"),
        Column("week", "DATE", "Monday of the ISO week of the hour"),
        Column("vmstat_samples", "BIGINT", "vmstat samples in the hour"),
        Column("iostat_samples", "BIGINT", "iostat samples in the hour"),
        Column("us_mean", "DOUBLE", "User CPU %, mean"),
        Column("iowait_mean", "DOUBLE", "iowait %, mean"),
        Column("b_mean", "DOUBLE", "Blocked processes, mean"),
        Column("swap_kb_s_mean", "DOUBLE", "si + so KiB/s, mean"),
        Column("cache_change_kb", "DOUBLE", "Page cache at the hour's last sample minus first"),
        Column("disk_util_p95", "DOUBLE", "Busiest disk %util per sample, p95"),
        Column("disk_util_mean", "DOUBLE", "Busiest disk %util per sample, mean"),
        Column("r_await_ms_p95", "DOUBLE", "Slowest disk read await per sample (ms), p95"),
        Column("read_kb_s_mean", "DOUBLE", "All disks' reads KiB/s, mean"),
        Column("write_kb_s_mean", "DOUBLE", "All disks' writes KiB/s, mean"),
        Column("disk_saturated", "BOOLEAN", "disk_util_p95 >= disk_util_p95_min or "
               "r_await_ms_p95 >= r_await_ms_p95_min"),
        Column("memory_pressure", "BOOLEAN", "swap_kb_s_mean >= swap_kb_s_min"),
        Column("saturated", "BOOLEAN", "disk_saturated or memory_pressure"),
        Column("rule_version", "INT", "gold.io_signature_rules version applied"),
    ),
    checks=(Check("not_null", "host"), Check("not_null", "hour")),
)  # fmt: skip


def _share_cols(prefix: str, what: str) -> tuple[Column, ...]:
    return tuple(
        Column(f"{prefix}{s}", "DOUBLE", f"{what} {s}")
        for s in SIGNATURES
        if s != "insufficient_data"
    )


GOLD_WORKFLOW_IO_PROFILE = Table(
    database="gold",
    name="workflow_io_profile",
    keys=("job_type", "site", "week"),
    question="How does a workflow's I/O behaviour at one site compare with the other sites?",
    example=(
        'SELECT job_type, site, week, round(share_io_wait_bound, 2) AS io_wait, '
        'round(efficiency_gap_vs_other_sites, 3) AS gap FROM gold.workflow_io_profile ORDER BY '
        'gap LIMIT 10'
    ),
    grain="one row per job_type, site and week.",
    description=(
        "I/O profile of each workflow at each site: share of core-hours per signature, core-hours "
        "lost to each limit, and the same job type at the other sites in the same week."
    ),
    columns=(
        Column("job_type", "STRING", "Job type"),
        Column("site", "STRING", "Grid site"),
        Column("week", "DATE", "Monday of the ISO week of end_time"),
        Column("jobs", "BIGINT", "Job attempts"),
        Column("core_hours", "DOUBLE", "Core-hours of all attempts"),
        Column("classified_core_hours", "DOUBLE", "Core-hours of attempts with node data"),
        Column("insufficient_data_share", "DOUBLE", "Share of core_hours without node data"),
        *_share_cols("share_", "Share of classified_core_hours classified"),
        Column("cpu_efficiency", "DOUBLE", "sum(cpu) / sum(wall x cores) of all attempts"),
        Column("cpu_bound_efficiency", "DOUBLE", "Efficiency the job type reaches where "
               "cpu_bound (ratio of sums, all sites and weeks)"),
        *(Column(f"lost_core_hours_{s}", "DOUBLE", f"Core-hours lost by jobs classified {s}")
          for s in LIMIT_SIGNATURES),
        Column("lost_core_hours_unclassified", "DOUBLE", "Core-hours lost by jobs without node "
               "data (limit unknown)"),
        Column("other_sites_cpu_efficiency", "DOUBLE", "Same job type and week at the other "
               "sites: ratio of sums (null when it ran nowhere else)"),
        Column("efficiency_gap_vs_other_sites", "DOUBLE", "other_sites_cpu_efficiency - "
               "cpu_efficiency (positive: this site is worse)"),
        Column("other_sites_io_wait_share", "DOUBLE", "share_io_wait_bound at the other sites"),
        Column("other_sites_memory_share", "DOUBLE", "share_memory_bound at the other sites"),
        Column("other_sites_remote_read_share", "DOUBLE", "share_remote_read_bound at the other "
               "sites"),
        Column("rule_version", "INT", "gold.io_signature_rules version applied"),
    ),
    checks=(Check("not_null", "job_type"), Check("not_null", "site"), Check("not_null", "week")),
)  # fmt: skip

GOLD_SITE_IO_STRESS_WEEKLY = Table(
    database="gold",
    name="site_io_stress_weekly",
    keys=("site", "week"),
    question="Which sites' storage or memory is the bottleneck this week?",
    example=(
        'SELECT site, week, round(disk_saturated_share, 2) AS disk_sat, '
        'round(memory_pressure_share, 2) AS mem, round(lost_core_hours_io_wait_bound, 1) AS '
        'lost_io_h FROM gold.site_io_stress_weekly ORDER BY week DESC, lost_io_h DESC'
    ),
    grain="one row per site and week.",
    description=(
        "I/O and memory stress of each site per week: saturated host-hours of its monitored "
        "nodes and the core-hours its jobs lost to each limit."
    ),
    columns=(
        Column("site", "STRING", "Grid site"),
        Column("week", "DATE", "Monday of the ISO week"),
        Column("monitored_hosts", "BIGINT", "Hosts with node samples in the week"),
        Column("host_hours", "BIGINT", "Host-hours with node samples"),
        Column("disk_saturated_share", "DOUBLE", "Share of host_hours with disk_saturated"),
        Column("memory_pressure_share", "DOUBLE", "Share of host_hours with memory_pressure"),
        Column("saturated_share", "DOUBLE", "Share of host_hours saturated"),
        Column("iowait_mean", "DOUBLE", "iowait %, mean of the hourly means"),
        Column("disk_util_p95_max", "DOUBLE", "Highest hourly disk util p95"),
        Column("jobs", "BIGINT", "Job attempts ending in the week"),
        Column("classified_jobs", "BIGINT", "Of them, with node data"),
        Column("core_hours", "DOUBLE", "Core-hours of all attempts"),
        Column("classified_core_hours", "DOUBLE", "Core-hours of attempts with node data"),
        *_share_cols("share_", "Share of classified_core_hours classified"),
        *(Column(f"lost_core_hours_{s}", "DOUBLE", f"Core-hours lost by jobs classified {s}")
          for s in LIMIT_SIGNATURES),
        Column("rule_version", "INT", "gold.io_signature_rules version applied"),
    ),
    checks=(Check("not_null", "site"), Check("not_null", "week")),
)  # fmt: skip

TABLES: tuple[Table, ...] = (
    GOLD_IO_SIGNATURE_RULES,
    GOLD_JOB_IO_SIGNATURE,
    GOLD_NODE_SATURATION,
    GOLD_WORKFLOW_IO_PROFILE,
    GOLD_SITE_IO_STRESS_WEEKLY,
)

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _ge(x: SparkColumn, t: float | SparkColumn) -> SparkColumn:
    """Relative margin of ``x >= t``: positive when true, 0 on the threshold."""
    t = t if isinstance(t, SparkColumn) else F.lit(float(t))
    return (x - t) / t


def _lt(x: SparkColumn, t: float | SparkColumn) -> SparkColumn:
    """Relative margin of ``x < t``."""
    t = t if isinstance(t, SparkColumn) else F.lit(float(t))
    return (t - x) / t


def _not(margin: SparkColumn) -> SparkColumn:
    """Margin of the negation; an unknown quantity (null) counts as far from the threshold."""
    return F.coalesce(-margin, F.lit(1.0))


def _holds(margin: SparkColumn) -> SparkColumn:
    return F.coalesce(margin >= 0, F.lit(False))


def _clip01(c: SparkColumn) -> SparkColumn:
    """c clipped to [0, 1]; null stays null (least/greatest would skip it)."""
    return F.when(c.isNotNull(), F.least(F.greatest(c, F.lit(0.0)), F.lit(1.0)))


# --------------------------------------------------------------------------------------------
# Per-job transforms
# --------------------------------------------------------------------------------------------


def reference_efficiency(jobs: DataFrame, rules: IoRuleSet) -> DataFrame:
    """silver.jobs -> (job_type, cores, reference_efficiency): the [reference_quantile] of the
    efficiency of attempts at least [reference_min_wall_seconds] long, outliers excluded."""
    long_jobs = jobs.where(
        (F.col("wall_seconds") >= rules["reference_min_wall_seconds"])
        & F.col("cpu_efficiency").isNotNull()
        & ~F.coalesce(F.col("is_outlier"), F.lit(False))
    )
    return long_jobs.groupBy("job_type", "cores").agg(
        F.percentile_approx("cpu_efficiency", rules["reference_quantile"], 10000).alias(
            "reference_efficiency"
        )
    )


def node_overlap(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> (job_id, other_jobs_on_node, core_share) for jobs with a host.

    A self-join on (host, hour bucket) like job_node_features; a pair of jobs is counted once,
    in the bucket of the later start (both jobs span it), so no distinct is needed.
    """
    base = jobs.where(F.col("host").isNotNull()).select(
        "job_id", "host", "start_time", "end_time", "cores"
    )
    buckets = job_buckets(base).join(base.select("job_id", "cores"), "job_id")
    a = buckets.select([F.col(c).alias(f"a_{c}") for c in buckets.columns])
    o = buckets.select([F.col(c).alias(f"o_{c}") for c in buckets.columns])
    later_start = F.greatest("a_start_time", "o_start_time")
    overlap_s = F.unix_timestamp(F.least("a_end_time", "o_end_time")) - F.unix_timestamp(
        later_start
    )
    pairs = a.join(
        o, (F.col("a_host") == F.col("o_host")) & (F.col("a_bucket") == F.col("o_bucket"))
    ).where(
        (F.col("a_job_id") != F.col("o_job_id"))
        & (F.col("a_start_time") < F.col("o_end_time"))
        & (F.col("o_start_time") < F.col("a_end_time"))
        & (F.col("a_bucket") == F.floor(F.unix_timestamp(later_start) / 3600))
    )
    others = pairs.groupBy(F.col("a_job_id").alias("job_id")).agg(
        F.count(F.lit(1)).alias("other_jobs_on_node"),
        F.sum(F.col("o_cores") * overlap_s).alias("_other_core_seconds"),
    )
    own = jobs.where(F.col("host").isNotNull()).select(
        "job_id", (F.col("cores") * F.col("wall_seconds")).alias("_own")
    )
    return own.join(others, "job_id", "left").select(
        "job_id",
        F.coalesce("other_jobs_on_node", F.lit(0)).cast("bigint").alias("other_jobs_on_node"),
        F.coalesce(
            F.try_divide(
                F.col("_own"),
                F.col("_own") + F.coalesce(F.col("_other_core_seconds"), F.lit(0)),
            ),
            F.lit(1.0),
        ).alias("core_share"),
    )


def _with_cpu_bound_loss(classified: DataFrame) -> DataFrame:
    """Add cpu_bound_efficiency (per job type and cores, else job type) and lost_core_hours."""
    cpu = F.col("cpu_efficiency") * F.col("core_hours")
    bound = classified.where(F.col("signature") == "cpu_bound")
    by_cores = bound.groupBy("job_type", "cores").agg(
        F.try_divide(F.sum(cpu), F.sum("core_hours")).alias("_e_cores")
    )
    by_type = bound.groupBy("job_type").agg(
        F.try_divide(F.sum(cpu), F.sum("core_hours")).alias("_e_type")
    )
    out = (
        classified.join(F.broadcast(by_cores), ["job_type", "cores"], "left")
        .join(F.broadcast(by_type), "job_type", "left")
        .withColumn("cpu_bound_efficiency", F.coalesce("_e_cores", "_e_type"))
    )
    return out.withColumn(
        "lost_core_hours",
        F.col("core_hours")
        * F.greatest(F.col("cpu_bound_efficiency") - F.col("cpu_efficiency"), F.lit(0.0)),
    ).drop("_e_cores", "_e_type")


def job_io_signature(jobs: DataFrame, features: DataFrame, rules: DataFrame) -> DataFrame:
    """silver.jobs + silver.job_node_features + gold.io_signature_rules -> one row per job with
    the columns of GOLD_JOB_IO_SIGNATURE (see the module docstring for the rules)."""
    r = resolve_io_rules(rules)
    ref = reference_efficiency(jobs, r)
    feat = features.select(
        "job_id", "vmstat_samples", "us_mean", "wa_mean", "b_mean", "swap_in_kb", "swap_out_kb",
        "cache_trend_kb", "iostat_samples", "disk_util_p95", "r_await_ms_p95", "read_kb_s_mean",
        "write_kb_s_mean",
        (F.col("net_rx_kb_s_mean") if "net_rx_kb_s_mean" in features.columns
         else F.lit(None).cast("double")).alias("net_rx_kb_s_mean"),
    )  # fmt: skip
    df = (
        jobs.select(
            "job_id",
            "site",
            "host",
            "job_type",
            "week",
            "cores",
            "wall_seconds",
            (F.col("cores_wall_seconds") / 3600.0).alias("core_hours"),
            "cpu_efficiency",
        )
        .join(feat, "job_id", "left")
        .join(F.broadcast(ref), ["job_type", "cores"], "left")
        .join(node_overlap(jobs), "job_id", "left")
    )
    wall = F.when(F.col("wall_seconds") > 0, F.col("wall_seconds"))
    eff = F.col("cpu_efficiency")
    ref_known = F.col("reference_efficiency").isNotNull() & (
        F.col("reference_efficiency") > F.col("init_eff")
    )
    df = (
        df.withColumn(
            "vmstat_samples", F.coalesce(F.col("vmstat_samples"), F.lit(0)).cast("bigint")
        )
        .withColumn("iostat_samples", F.coalesce(F.col("iostat_samples"), F.lit(0)).cast("bigint"))
        .withColumn("swap_in_kb_s", F.try_divide(F.col("swap_in_kb"), wall))
        .withColumn("swap_out_kb_s", F.try_divide(F.col("swap_out_kb"), wall))
        .withColumn("_swap", F.col("swap_in_kb_s") + F.col("swap_out_kb_s"))
        .withColumn("_disk_kb_s", F.col("read_kb_s_mean") + F.col("write_kb_s_mean"))
        .withColumn("init_eff", F.lit(r["init_busy_cores"]) / F.col("cores"))
        .withColumn(
            "init_share_est",
            F.when(
                ref_known,
                (F.col("reference_efficiency") - eff)
                / (F.col("reference_efficiency") - F.col("init_eff")),
            ),
        )
        .withColumn(
            "_ref", F.coalesce("reference_efficiency", F.lit(r["default_reference_efficiency"]))
        )
        .withColumn("efficiency_ratio", F.try_divide(eff, F.col("_ref")))
    )

    ref_eff = F.col("_ref")
    m_eff_ok = _ge(eff, ref_eff * r["cpu_ratio_min"])
    m_loss = -m_eff_ok
    m_mem = F.greatest(
        _ge(F.col("_swap"), r["swap_kb_s_min"]),
        F.when(F.col("_swap") > 0, _ge(-F.col("cache_trend_kb"), r["cache_drop_kb_min"])),
    )
    m_io = F.greatest(
        _ge(F.col("disk_util_p95"), r["disk_util_p95_min"]),
        _ge(F.col("r_await_ms_p95"), r["r_await_ms_p95_min"]),
        F.least(_ge(F.col("wa_mean"), r["wa_mean_min"]), _ge(F.col("b_mean"), r["b_mean_min"])),
    )
    # swap traffic as a share of the disk traffic, against the mixed threshold
    m_swap_dominates = _ge(
        F.try_divide(F.col("_swap"), F.col("_disk_kb_s")), r["mixed_swap_share_max"]
    )
    s = F.col("init_share_est")
    m_init = F.when(
        s.isNotNull(),
        F.least(
            _ge(s, r["init_share_min"]),
            _lt(s, r["init_share_max"]),
            _lt(F.col("wall_seconds"), r["init_max_wall_seconds"]),
        ),
    )
    m_remote = F.least(
        _lt(eff, ref_eff * r["remote_ratio_max"]),
        F.greatest(_lt(F.col("us_mean"), r["busy_us_min"]), _lt(eff, r["idle_efficiency_max"])),
    )
    # idle rather than waiting on the network: little received, or (no counters) no CPU at all
    rx = F.col("net_rx_kb_s_mean")
    m_idle = F.when(rx.isNotNull(), _lt(rx, r["remote_rx_kb_s_min"])).otherwise(
        _lt(eff, r["idle_efficiency_max"])
    )
    df = df.select(
        "*",
        m_eff_ok.alias("_m_eff_ok"),
        m_loss.alias("_m_loss"),
        m_mem.alias("_m_mem"),
        m_io.alias("_m_io"),
        m_swap_dominates.alias("_m_swapdom"),
        m_init.alias("_m_init"),
        m_remote.alias("_m_remote"),
        m_idle.alias("_m_idle"),
    )
    c = F.col
    no_data = (c("vmstat_samples") < r["min_vmstat_samples"]) | eff.isNull()
    mem, io = _holds(c("_m_mem")), _holds(c("_m_io"))
    # both, and the swap traffic is a minority of the disk traffic (unknown: memory_bound)
    mixed = mem & io & F.coalesce(c("_m_swapdom") < 0, F.lit(False))
    init = _holds(c("_m_init"))
    remote = _holds(c("_m_remote"))
    idle = remote & _holds(c("_m_idle"))
    not_mem, not_io = _not(c("_m_mem")), _not(c("_m_io"))
    signature = (
        F.when(no_data, "insufficient_data")
        .when(_holds(c("_m_eff_ok")), "cpu_bound")
        .when(mixed, "mixed")
        .when(mem, "memory_bound")
        .when(io, "io_wait_bound")
        .when(init, "init_dominated")
        .when(idle, "idle_or_stalled")
        .when(remote, "remote_read_bound")
        .otherwise("cpu_bound")
    )
    margin = (
        F.when(no_data, F.lit(None).cast("double"))
        .when(_holds(c("_m_eff_ok")), c("_m_eff_ok"))
        .when(mixed, F.least(c("_m_loss"), c("_m_mem"), c("_m_io"), _not(c("_m_swapdom"))))
        .when(mem, F.least(c("_m_loss"), c("_m_mem"), F.coalesce(c("_m_swapdom"), F.lit(1.0))))
        .when(io, F.least(c("_m_loss"), c("_m_io")))
        .when(init, F.least(c("_m_loss"), c("_m_init"), not_mem, not_io))
        .when(idle, F.least(c("_m_loss"), c("_m_remote"), c("_m_idle"), not_mem, not_io))
        .when(remote, F.least(c("_m_loss"), c("_m_remote"), _not(c("_m_idle")), not_mem, not_io))
        .otherwise(F.least(not_mem, not_io, _not(c("_m_remote")), _not(c("_m_init"))))
    )
    samples_factor = F.sqrt(
        F.least(F.lit(1.0), c("vmstat_samples") / F.lit(float(r["confident_samples"])))
    )
    confidence = F.when(
        c("decision_margin").isNotNull(),
        (
            F.lit(0.5)
            + F.lit(0.5) * F.least(F.lit(1.0), c("decision_margin") / r["confidence_full_margin"])
        )
        * samples_factor,
    )
    df = (
        df.withColumn("signature", signature)
        .withColumn("decision_margin", _clip01(margin))
        .withColumn("confidence", confidence)
        .withColumn("other_jobs_on_node", F.coalesce(c("other_jobs_on_node"), F.lit(0)))
        .withColumn("shared_node", c("other_jobs_on_node") > 0)
        .withColumn("rule_version", F.lit(r.rule_version))
    )
    return GOLD_JOB_IO_SIGNATURE.conform(_with_cpu_bound_loss(df))


# --------------------------------------------------------------------------------------------
# Node saturation (host x hour)
# --------------------------------------------------------------------------------------------


def node_saturation(
    node_samples: DataFrame, disk_samples: DataFrame, rules: DataFrame
) -> DataFrame:
    """silver.node_samples + silver.node_disk_samples -> one row per host and hour."""
    r = resolve_io_rules(rules)
    hour = F.date_trunc("hour", F.col("ts")).alias("hour")
    vm = (
        node_samples.where(F.col("kind") == "vmstat")
        .groupBy("host", hour)
        .agg(
            F.first("site", ignorenulls=True).alias("_vm_site"),
            F.count(F.lit(1)).alias("vmstat_samples"),
            F.avg("us").alias("us_mean"),
            F.avg("wa").alias("iowait_mean"),
            F.avg("b").alias("b_mean"),
            F.avg(F.coalesce("si", F.lit(0.0)) + F.coalesce("so", F.lit(0.0))).alias(
                "swap_kb_s_mean"
            ),
            (F.max_by("cache_kb", "ts") - F.min_by("cache_kb", "ts")).alias("cache_change_kb"),
        )
    )
    per_sample = disk_samples.groupBy("host", "ts").agg(
        F.first("site", ignorenulls=True).alias("site"),
        F.max("util_pct").alias("util_pct"),
        F.max("r_await_ms").alias("r_await_ms"),
        F.sum("rkb_s").alias("rkb_s"),
        F.sum("wkb_s").alias("wkb_s"),
    )
    io = per_sample.groupBy("host", hour).agg(
        F.first("site", ignorenulls=True).alias("_io_site"),
        F.count(F.lit(1)).alias("iostat_samples"),
        F.percentile_approx("util_pct", 0.95).alias("disk_util_p95"),
        F.avg("util_pct").alias("disk_util_mean"),
        F.percentile_approx("r_await_ms", 0.95).alias("r_await_ms_p95"),
        F.avg("rkb_s").alias("read_kb_s_mean"),
        F.avg("wkb_s").alias("write_kb_s_mean"),
    )
    disk_sat = F.coalesce(
        (F.col("disk_util_p95") >= r["disk_util_p95_min"])
        | (F.col("r_await_ms_p95") >= r["r_await_ms_p95_min"]),
        F.lit(False),
    )
    mem = F.coalesce(F.col("swap_kb_s_mean") >= r["swap_kb_s_min"], F.lit(False))
    out = (
        vm.join(io, ["host", "hour"], "full")
        .withColumn("site", F.coalesce("_vm_site", "_io_site"))
        .withColumn("week", F.to_date(F.date_trunc("week", F.col("hour"))))
        .withColumn("vmstat_samples", F.coalesce("vmstat_samples", F.lit(0)))
        .withColumn("iostat_samples", F.coalesce("iostat_samples", F.lit(0)))
        .withColumn("disk_saturated", disk_sat)
        .withColumn("memory_pressure", mem)
        .withColumn("saturated", disk_sat | mem)
        .withColumn("rule_version", F.lit(r.rule_version))
    )
    return GOLD_NODE_SATURATION.conform(out)


# --------------------------------------------------------------------------------------------
# Aggregates
# --------------------------------------------------------------------------------------------


def _signature_sums(sigs: DataFrame, keys: Iterable[str]) -> DataFrame:
    """Core-hours, CPU and lost core-hours per signature, summed per ``keys``."""
    ch = F.col("core_hours")
    classified = F.col("signature") != "insufficient_data"
    aggs = [
        F.count(F.lit(1)).alias("jobs"),
        F.count(F.when(classified, 1)).alias("classified_jobs"),
        F.sum(ch).alias("core_hours"),
        F.sum(F.col("cpu_efficiency") * ch).alias("_cpu_hours"),
        F.coalesce(F.sum(F.when(classified, ch)), F.lit(0.0)).alias("classified_core_hours"),
        F.coalesce(F.sum(F.when(~classified, ch)), F.lit(0.0)).alias("_insufficient_ch"),
        F.coalesce(F.sum(F.when(~classified, F.col("lost_core_hours"))), F.lit(0.0)).alias(
            "lost_core_hours_unclassified"
        ),
    ]
    for s in SIGNATURES[:-1]:
        is_s = F.col("signature") == s
        aggs.append(F.coalesce(F.sum(F.when(is_s, ch)), F.lit(0.0)).alias(f"_ch_{s}"))
    for s in LIMIT_SIGNATURES:
        is_s = F.col("signature") == s
        aggs.append(
            F.coalesce(F.sum(F.when(is_s, F.col("lost_core_hours"))), F.lit(0.0)).alias(
                f"lost_core_hours_{s}"
            )
        )
    return sigs.groupBy(*keys).agg(*aggs)


def _shares(df: DataFrame) -> DataFrame:
    for s in SIGNATURES[:-1]:
        df = df.withColumn(
            f"share_{s}",
            F.try_divide(
                F.col(f"_ch_{s}"),
                F.when(F.col("classified_core_hours") > 0, F.col("classified_core_hours")),
            ),
        )
    return df


def workflow_io_profile(signatures: DataFrame) -> DataFrame:
    """gold.job_io_signature -> one row per (job_type, site, week) with GOLD_WORKFLOW_IO_PROFILE.

    Shares are of the classified core-hours (jobs with node data); the other sites are the same
    job type in the same week at every other site (totals minus this site).
    """
    keys = ("job_type", "site", "week")
    sums = _shares(_signature_sums(signatures, keys))
    ref = signatures.groupBy("job_type").agg(
        F.try_divide(
            F.sum(
                F.when(
                    F.col("signature") == "cpu_bound", F.col("cpu_efficiency") * F.col("core_hours")
                )
            ),
            F.sum(F.when(F.col("signature") == "cpu_bound", F.col("core_hours"))),
        ).alias("cpu_bound_efficiency")
    )
    w = Window.partitionBy("job_type", "week")

    def other(col: str) -> SparkColumn:
        return F.sum(col).over(w) - F.col(col)

    other_classified = F.when(other("classified_core_hours") > 0, other("classified_core_hours"))
    out = (
        sums.join(F.broadcast(ref), "job_type", "left")
        .withColumn("cpu_efficiency", F.try_divide(F.col("_cpu_hours"), F.col("core_hours")))
        .withColumn(
            "insufficient_data_share",
            F.try_divide(
                F.col("_insufficient_ch"), F.when(F.col("core_hours") > 0, F.col("core_hours"))
            ),
        )
        .withColumn(
            "other_sites_cpu_efficiency",
            F.try_divide(
                other("_cpu_hours"), F.when(other("core_hours") > 1e-9, other("core_hours"))
            ),
        )
        .withColumn(
            "efficiency_gap_vs_other_sites",
            F.col("other_sites_cpu_efficiency") - F.col("cpu_efficiency"),
        )
        .withColumn(
            "other_sites_io_wait_share", F.try_divide(other("_ch_io_wait_bound"), other_classified)
        )
        .withColumn(
            "other_sites_memory_share", F.try_divide(other("_ch_memory_bound"), other_classified)
        )
        .withColumn(
            "other_sites_remote_read_share",
            F.try_divide(other("_ch_remote_read_bound"), other_classified),
        )
        .join(
            F.broadcast(signatures.groupBy().agg(F.max("rule_version").alias("rule_version"))),
            how="cross",
        )
    )
    return GOLD_WORKFLOW_IO_PROFILE.conform(out)


def site_io_stress_weekly(signatures: DataFrame, saturation: DataFrame) -> DataFrame:
    """gold.job_io_signature + gold.node_saturation -> one row per (site, week)."""
    nodes = saturation.groupBy("site", "week").agg(
        F.countDistinct("host").alias("monitored_hosts"),
        F.count(F.lit(1)).alias("host_hours"),
        F.avg(F.col("disk_saturated").cast("double")).alias("disk_saturated_share"),
        F.avg(F.col("memory_pressure").cast("double")).alias("memory_pressure_share"),
        F.avg(F.col("saturated").cast("double")).alias("saturated_share"),
        F.avg("iowait_mean").alias("iowait_mean"),
        F.max("disk_util_p95").alias("disk_util_p95_max"),
        F.max("rule_version").alias("_rv_nodes"),
    )
    jobs = _shares(_signature_sums(signatures, ("site", "week")))
    rv = signatures.groupBy().agg(F.max("rule_version").alias("_rv_sig"))
    out = (
        nodes.join(jobs, ["site", "week"], "full")
        .crossJoin(F.broadcast(rv))
        .withColumn("monitored_hosts", F.coalesce("monitored_hosts", F.lit(0)))
        .withColumn("host_hours", F.coalesce("host_hours", F.lit(0)))
        .withColumn("jobs", F.coalesce("jobs", F.lit(0)))
        .withColumn("classified_jobs", F.coalesce("classified_jobs", F.lit(0)))
        .withColumn("rule_version", F.coalesce("_rv_sig", "_rv_nodes"))
    )
    return GOLD_SITE_IO_STRESS_WEEKLY.conform(out)


def compute(
    jobs: DataFrame,
    node_samples: DataFrame,
    disk_samples: DataFrame,
    features: DataFrame,
    rules: DataFrame | None = None,
) -> dict[str, DataFrame]:
    """silver.jobs, node samples, disk samples and job_node_features (and gold.io_signature_rules;
    DEFAULT_IO_RULES when None) -> every table of TABLES by full name, the rules included."""
    if rules is None:
        rules = io_rules_frame(jobs.sparkSession)
    signatures = job_io_signature(jobs, features, rules)
    saturation = node_saturation(node_samples, disk_samples, rules)
    return {
        GOLD_IO_SIGNATURE_RULES.full_name: GOLD_IO_SIGNATURE_RULES.conform(rules),
        GOLD_JOB_IO_SIGNATURE.full_name: signatures,
        GOLD_NODE_SATURATION.full_name: saturation,
        GOLD_WORKFLOW_IO_PROFILE.full_name: workflow_io_profile(signatures),
        GOLD_SITE_IO_STRESS_WEEKLY.full_name: site_io_stress_weekly(signatures, saturation),
    }


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    rules = inputs.rules(GOLD_IO_SIGNATURE_RULES, io_rules_frame, "parameter")
    return compute(
        inputs.read(SILVER_JOBS),
        inputs.read(SILVER_NODE_SAMPLES),
        inputs.read(SILVER_NODE_DISK_SAMPLES),
        inputs.read(SILVER_JOB_NODE_FEATURES),
        rules,
    )


GROUP = GoldGroup(
    "io_signatures",
    TABLES,
    reads=(SILVER_JOBS, SILVER_NODE_SAMPLES, SILVER_NODE_DISK_SAMPLES, SILVER_JOB_NODE_FEATURES),
    build=_build,
    rules=GOLD_IO_SIGNATURE_RULES,
)
