"""The datasets: one per grid view the dashboards read, with saved metrics, calculated
columns and the row-level security scope."""

from __future__ import annotations

from gridlake.serving.superset_assets.spec import CalcColumn, Dataset, Metric
from gridlake.tabledef import Table

# --------------------------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------------------------


def _m(name: str, expression: str, label: str, fmt: str = "", desc: str = "") -> Metric:
    return Metric(name, expression, label, fmt, desc)


def _ratio(name: str, num: str, den: str, label: str, fmt: str = ".1%", desc: str = "") -> Metric:
    return Metric(name, f"SUM({num}) / NULLIF(SUM({den}), 0)", label, fmt, desc)


def _gold(name: str) -> Table:
    from gridlake.gold.analyze import gold_tables

    return next(t for t in gold_tables() if t.name == name)


EFFICIENCY_METRICS = (
    _m("count", "COUNT(*)", "Rows", ",d"),
    _m("jobs", "SUM(jobs)", "Jobs", ",d"),
    _m("failed_jobs", "SUM(failed_jobs)", "Failed jobs", ",d"),
    _m("outlier_jobs", "SUM(outlier_jobs)", "Outlier jobs", ",d"),
    _m("core_hours", "SUM(core_hours)", "Core-hours", ",.0f"),
    _m("cpu_hours", "SUM(cpu_hours)", "CPU-hours", ",.0f"),
    _m("wasted_core_hours", "SUM(wasted_core_hours)", "Wasted core-hours", ",.0f"),
    _m("badput_core_hours", "SUM(badput_core_hours)", "Badput core-hours", ",.0f"),
    _m("retry_waste_core_hours", "SUM(retry_waste_core_hours)", "Retry waste core-hours", ",.0f"),
    _ratio(
        "cpu_efficiency",
        "cpu_hours",
        "core_hours",
        "CPU efficiency",
        desc="CPU-hours over core-hours (wall time x cores), weighted by core-hours.",
    ),
    _ratio("failure_rate", "failed_jobs", "jobs", "Failure rate"),
    _ratio("badput_share", "badput_core_hours", "core_hours", "Badput share"),
)

SITE_EFFICIENCY = Dataset(
    "site_efficiency_weekly",
    "site",
    "Weekly CPU efficiency, failures, badput and retry waste per grid site and VO.",
    EFFICIENCY_METRICS,
    table=_gold("site_efficiency_weekly"),
    main_dttm_col="week",
)
SITE_JOBTYPE = Dataset(
    "site_jobtype_efficiency_weekly",
    "site",
    "The weekly site measures split by job type.",
    EFFICIENCY_METRICS,
    table=_gold("site_jobtype_efficiency_weekly"),
    main_dttm_col="week",
)
OUTLIERS = Dataset(
    "efficiency_outliers",
    "site_entity",
    "Sites, CPU models and tasks flagged by the outlier rules, per week.",
    (
        _m("flags", "COUNT(*)", "Flags", ",d"),
        _m("max_abs_z", "MAX(ABS(robust_z))", "Largest |robust z|", ".1f"),
    ),
    table=_gold("efficiency_outliers"),
    calc_columns=(
        CalcColumn(
            "site",
            "CASE WHEN entity = 'site' THEN entity_value END",
            "STRING",
            "The flagged site (rows about a site), for the site filter",
        ),
        CalcColumn("abs_robust_z", "ABS(robust_z)", "DOUBLE", "|robust z|"),
    ),
    main_dttm_col="week",
)
LINK_LABEL = CalcColumn(
    "link",
    "concat(coalesce(src_site, '*'), ' > ', dst_site)",
    "STRING",
    "Source > destination site ('*' for a pattern over every source)",
)
ALARMS = Dataset(
    "network_alarms",
    "link",
    "perfSONAR alarms: loss, throughput changes, clock problems, weekend spikes.",
    (
        _m("alarms", "COUNT(*)", "Alarms", ",d"),
        _m(
            "alarm_hours",
            "SUM(unix_timestamp(end_ts) - unix_timestamp(start_ts)) / 3600",
            "Alarm hours",
            ",.1f",
        ),
    ),
    table=_gold("network_alarms"),
    calc_columns=(
        CalcColumn(
            "week",
            "CAST(date_trunc('week', start_ts) AS DATE)",
            "DATE",
            "Monday of the ISO week the alarm started",
            is_dttm=True,
        ),
        LINK_LABEL,
    ),
    main_dttm_col="start_ts",
)
COST_MATRIX = Dataset(
    "network_cost_matrix",
    "link",
    "Weekly path performance between sites and the cost of moving 1 GB.",
    (
        _m("cost_s_per_gb", "AVG(cost_seconds_per_gb)", "Seconds per GB", ".2f"),
        _ratio("congested_share", "congested_share * intervals", "intervals", "Congested share"),
        _m("loss_mean", "AVG(loss_mean)", "Mean loss", ".2e"),
        _m("rtt_ms", "AVG(rtt_ms)", "RTT ms", ".1f"),
        _m("throughput_gbps", "AVG(throughput_median_bps) / 1e9", "Throughput Gb/s", ".2f"),
        _m("best_rank", "MIN(source_rank)", "Source rank", "d"),
    ),
    table=_gold("network_cost_matrix"),
    calc_columns=(LINK_LABEL,),
    main_dttm_col="week",
)
LINK_HOURLY = Dataset(
    "network_link_hourly",
    "link",
    "Link status per path and hour (5-minute status summed).",
    (
        _ratio("congested_share", "congested_intervals", "intervals", "Congested share"),
        _ratio("quiet_share", "quiet_intervals", "intervals", "Quiet share"),
        _m("congested_intervals", "SUM(congested_intervals)", "Congested 5-min intervals", ",d"),
        _m("max_excess_delay_ms", "MAX(max_excess_delay_ms)", "Max excess delay ms", ".2f"),
        _m("mean_delay_ms", "AVG(mean_delay_ms)", "Mean delay ms", ".2f"),
        _m("mean_loss", "AVG(mean_loss)", "Mean loss", ".2e"),
    ),
    table=_gold("network_link_hourly"),  # its link label is a stored column
    main_dttm_col="hour",
)
NODE_SATURATION = Dataset(
    "node_saturation",
    "site",
    "Disk, iowait and swap pressure of each monitored worker node per hour.",
    (
        _m("saturated_hours", "SUM(CAST(saturated AS INT))", "Saturated host-hours", ",d"),
        _m("host_hours", "COUNT(*)", "Host-hours", ",d"),
        _m("disk_util_p95", "MAX(disk_util_p95)", "Disk util p95 %", ".0f"),
        _m("iowait_mean", "AVG(iowait_mean)", "iowait %", ".1f"),
        _m("swap_kb_s", "AVG(swap_kb_s_mean)", "Swap KiB/s", ",.0f"),
    ),
    table=_gold("node_saturation"),
    main_dttm_col="hour",
)
SIGNATURES = ("cpu_bound", "io_wait_bound", "memory_bound", "remote_read_bound",
              "init_dominated", "mixed", "idle_or_stalled")  # fmt: skip
LIMITS = SIGNATURES[1:]
WORKFLOW_IO = Dataset(
    "workflow_io_profile",
    "site",
    "Share of core-hours per I/O signature for each job type and site per week.",
    (
        *(
            _ratio(
                f"share_{s}",
                f"share_{s} * classified_core_hours",
                "classified_core_hours",
                s.replace("_", " "),
            )
            for s in SIGNATURES
        ),
        *(
            _m(f"lost_{s}", f"SUM(lost_core_hours_{s})", f"Lost to {s.replace('_', ' ')}", ",.1f")
            for s in LIMITS
        ),
        _m("core_hours", "SUM(core_hours)", "Core-hours", ",.0f"),
        _ratio("cpu_efficiency", "cpu_efficiency * core_hours", "core_hours", "CPU efficiency"),
        _ratio("classified_share", "classified_core_hours", "core_hours", "With node data"),
        _ratio(
            "other_sites_efficiency",
            "other_sites_cpu_efficiency * core_hours",
            "core_hours",
            "Other sites",
            desc="The other sites' efficiency for the same job type and week, weighted by this "
            "site's core-hours when several weeks are shown.",
        ),
        _m(
            "efficiency_gap",
            "SUM(efficiency_gap_vs_other_sites * core_hours) / NULLIF(SUM(core_hours), 0)",
            "Gap to other sites",
            "+.1%",
            "Other sites' efficiency minus this site's (positive: this site is worse).",
        ),
        _m("lost_unclassified", "SUM(lost_core_hours_unclassified)", "Lost, limit unknown", ",.1f"),
    ),
    table=_gold("workflow_io_profile"),
    main_dttm_col="week",
)
SITE_IO = Dataset(
    "site_io_stress_weekly",
    "site",
    "I/O and memory stress of each site per week.",
    (
        _ratio("saturated_share", "saturated_share * host_hours", "host_hours", "Saturated"),
        _ratio(
            "disk_saturated_share",
            "disk_saturated_share * host_hours",
            "host_hours",
            "Disk saturated",
        ),
        _ratio(
            "memory_pressure_share",
            "memory_pressure_share * host_hours",
            "host_hours",
            "Memory pressure",
        ),
        _m("iowait_mean", "AVG(iowait_mean)", "iowait %", ".1f"),
        _m("disk_util_p95_max", "MAX(disk_util_p95_max)", "Highest disk util p95 %", ".0f"),
        *(
            _m(f"lost_{s}", f"SUM(lost_core_hours_{s})", f"Lost to {s.replace('_', ' ')}", ",.1f")
            for s in LIMITS
        ),
        *(
            _ratio(
                f"share_{s}",
                f"share_{s} * classified_core_hours",
                "classified_core_hours",
                s.replace("_", " "),
            )
            for s in SIGNATURES
        ),
    ),
    table=_gold("site_io_stress_weekly"),
    main_dttm_col="week",
)
MODEL_LABEL = CalcColumn(
    "model",
    "concat(coalesce(microarchitecture, '?'), ' ', trim(regexp_replace(cpu_model, "
    "'\\\\(R\\\\)|\\\\(TM\\\\)|Intel|AMD|Xeon|CPU|Processor|[0-9]+-Core|@.*$', '')))",
    "STRING",
    "Short label: microarchitecture and model number, e.g. 'Ivy Bridge E5-2650 v2'",
)
SPEED_FACTORS = Dataset(
    "cpu_speed_factors",
    "grid",
    "Relative CPU speed of each CPU model fitted from real jobs, with bootstrap intervals.",
    (
        _m("speed_factor", "MAX(speed_factor)", "Speed factor", ".3f"),
        _m("ci_low", "MAX(ci_low)", "95% low", ".3f"),
        _m("ci_high", "MAX(ci_high)", "95% high", ".3f"),
        _m("n_jobs", "SUM(n_jobs)", "Jobs", ",d"),
    ),
    table=_gold("cpu_speed_factors"),
    calc_columns=(MODEL_LABEL,),
)
MISMATCH = Dataset(
    "benchmark_mismatch",
    "grid",
    "Measured speed factor against the declared HS23 benchmark.",
    (
        _m("ratio", "MAX(ratio)", "Measured / HS23", ".3f"),
        _m("ratio_ci_low", "MAX(ratio_ci_low)", "95% low", ".3f"),
        _m("ratio_ci_high", "MAX(ratio_ci_high)", "95% high", ".3f"),
        _m("flagged_models", "SUM(CAST(flagged AS INT))", "Flagged", ",d"),
        _m("n_jobs", "SUM(n_jobs)", "Jobs", ",d"),
    ),
    table=_gold("benchmark_mismatch"),
    calc_columns=(MODEL_LABEL,),
)
CPU_EFFICIENCY = Dataset(
    "cpu_model_efficiency",
    "grid",
    "CPU efficiency and CPU time per event by CPU model and job type.",
    (
        _m("core_hours", "SUM(core_hours)", "Core-hours", ",.0f"),
        _ratio("cpu_efficiency", "cpu_hours", "core_hours", "CPU efficiency"),
        _m("jobs", "SUM(jobs)", "Jobs", ",d"),
        _m(
            "median_hs23_s_per_event",
            "AVG(median_hs23_seconds_per_event)",
            "HS23-s per event (median)",
            ".3s",
        ),
    ),
    table=_gold("cpu_model_efficiency"),
)
IPC = Dataset(
    "ipc_by_microarchitecture",
    "grid",
    "Instructions per cycle of each job type on each microarchitecture, from the hosts' "
    "hardware counters (hosts without counters, most VMs, count nowhere).",
    (
        _m("ipc", "MAX(ipc)", "IPC", ".2f"),
        _m("samples", "SUM(samples)", "perf samples", ",d"),
    ),
    table=_gold("ipc_by_microarchitecture"),
)
SPEED_ANOMALIES = Dataset(
    "site_speed_anomalies",
    "site",
    "Sites whose nodes run slower than the same CPU model elsewhere.",
    (
        _m("slowdown", "MAX(slowdown)", "Slowdown", ".3f"),
        _m("ci_low", "MAX(ci_low)", "95% low", ".3f"),
        _m("ci_high", "MAX(ci_high)", "95% high", ".3f"),
        _m("flagged", "SUM(CAST(flagged AS INT))", "Flagged", ",d"),
        _m("n_jobs", "SUM(n_jobs)", "Jobs", ",d"),
    ),
    table=_gold("site_speed_anomalies"),
)
FAILURES = Dataset(
    "failure_vs_duration",
    "grid",
    "Failure probability and hazard by wall-clock duration, job type and failure mode.",
    (
        _ratio("failure_probability", "failures", "attempts", "Failure probability"),
        _m(
            "hazard_per_hour",
            "SUM(failures) / NULLIF(SUM(exposure_wall_hours), 0)",
            "Hazard per hour",
            ".4f",
        ),
        _m("attempts", "SUM(attempts)", "Attempts", ",d"),
        _m("failures", "SUM(failures)", "Failures", ",d"),
        _m("wasted_core_hours", "SUM(wasted_core_hours)", "Wasted core-hours", ",.0f"),
    ),
    table=_gold("failure_vs_duration"),
    calc_columns=(
        CalcColumn(
            "duration",
            "concat(lpad(CAST(bin_index AS STRING), 2, '0'), ' ', duration_bin)",
            "STRING",
            "Wall-clock bin, sortable (bin index, then its label)",
        ),
    ),
)
JOB_LENGTH = Dataset(
    "job_length_advice",
    "grid",
    "Optimal job length per job type and what it would save.",
    (
        _m("optimal_hours", "MAX(optimal_hours)", "Advised hours", ".2f"),
        _m("current_median_hours", "MAX(current_median_hours)", "Current median hours", ".2f"),
        _m("hazard_per_hour", "MAX(hazard_per_hour)", "Hazard per hour", ".4f"),
        _m("init_seconds", "MAX(init_seconds)", "Initialisation s", ",.0f"),
        _m(
            "core_hours_saved_per_year",
            "SUM(core_hours_saved_per_year)",
            "Core-hours saved per year",
            ",.0f",
        ),
        _m("n_jobs", "SUM(n_jobs)", "Jobs", ",d"),
    ),
    table=_gold("job_length_advice"),
)
MULTICORE = Dataset(
    "multicore_scaling",
    "grid",
    "Efficiency, throughput and memory by number of cores.",
    (
        _ratio("cpu_efficiency", "cpu_hours", "core_hours", "CPU efficiency"),
        _m("jobs", "SUM(jobs)", "Jobs", ",d"),
        _m("memory_per_core_mb", "AVG(memory_per_core_mb)", "Memory per core MB", ",.0f"),
    ),
    table=_gold("multicore_scaling"),
)
MEMORY_PER_THREAD = Dataset(
    "memory_per_thread_fit",
    "grid",
    "Peak RSS per job type: a single-thread job, each extra thread, and what threads save.",
    (
        _m("base_mb", "MAX(base_mb)", "Single-thread MB", ",.0f"),
        _m("per_thread_mb", "MAX(per_thread_mb)", "MB per extra thread", ",.0f"),
        _m("per_thread_mb_low", "MAX(per_thread_mb_low)", "Per thread, low", ",.0f"),
        _m("per_thread_mb_high", "MAX(per_thread_mb_high)", "Per thread, high", ",.0f"),
        _m(
            "saved_fraction_8_threads",
            "MAX(saved_fraction_8_threads)",
            "Saved: 1 x 8 threads vs 8 x 1",
            ".0%",
        ),
        _m("jobs", "SUM(jobs)", "Jobs", ",d"),
    ),
    table=_gold("memory_per_thread_fit"),
)
FAILURE_CAUSES = Dataset(
    "failure_causes_weekly",
    "site",
    "Job attempts and badput per site, ISO week and failure cause (gold.failure_cause_rules).",
    (
        _m("jobs", "SUM(jobs)", "Attempts", ",d"),
        _m("badput_core_hours", "SUM(badput_core_hours)", "Badput core-hours", ",.0f"),
        _m("core_hours", "SUM(core_hours)", "Core-hours", ",.0f"),
    ),
    table=_gold("failure_causes_weekly"),
    main_dttm_col="week",
)
_LINK_SIDES = """
SELECT week, src_site AS site, 'outgoing' AS direction, dst_site AS peer,
       cost_seconds_per_gb, congested_share, intervals, loss_mean, rtt_ms,
       throughput_median_bps, source_rank
FROM grid.network_cost_matrix
UNION ALL
SELECT week, dst_site AS site, 'incoming' AS direction, src_site AS peer,
       cost_seconds_per_gb, congested_share, intervals, loss_mean, rtt_ms,
       throughput_median_bps, source_rank
FROM grid.network_cost_matrix
""".strip()
SITE_LINKS = Dataset(
    "site_links",
    "site",
    "Each site's network links in both directions (grid.network_cost_matrix seen from a site).",
    COST_MATRIX.metrics,
    sql=_LINK_SIDES,
    sql_columns=(
        ("week", "DATE", "Monday of the ISO week"),
        ("site", "STRING", "The site seen from"),
        ("direction", "STRING", "outgoing (site is the source) or incoming (the destination)"),
        ("peer", "STRING", "The site at the other end"),
        ("cost_seconds_per_gb", "DOUBLE", "Expected seconds to move 1 GB"),
        ("congested_share", "DOUBLE", "Share of congested 5-minute intervals"),
        ("intervals", "BIGINT", "5-minute intervals"),
        ("loss_mean", "DOUBLE", "Mean packet loss"),
        ("rtt_ms", "DOUBLE", "Round trip, ms"),
        ("throughput_median_bps", "DOUBLE", "Median throughput, bits/s"),
        ("source_rank", "INT", "Rank of the source for the destination, 1 = cheapest"),
    ),
    main_dttm_col="week",
)


def _alerts_table() -> Table:
    from gridlake.alerts import ALERTS

    return ALERTS


ALERTS = Dataset(
    "alerts",
    "grid",
    "What failed in the pipeline and needs a person: tasks failed after their retries, batches "
    "the refine gate refused (ops.alerts).",
    (_m("alerts", "COUNT(*)", "Alerts", ",d"),),
    table=_alerts_table(),
    main_dttm_col="raised_at",
)

DATASETS: tuple[Dataset, ...] = (
    SITE_EFFICIENCY, SITE_JOBTYPE, OUTLIERS, ALARMS, COST_MATRIX, LINK_HOURLY, NODE_SATURATION,
    WORKFLOW_IO, SITE_IO, SPEED_FACTORS, MISMATCH, CPU_EFFICIENCY, SPEED_ANOMALIES, FAILURES,
    JOB_LENGTH, MULTICORE, MEMORY_PER_THREAD, SITE_LINKS, ALERTS, FAILURE_CAUSES, IPC,
)  # fmt: skip
