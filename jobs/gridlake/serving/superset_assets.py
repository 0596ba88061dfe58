"""The Superset dashboards as code: one spec, rendered into the YAML assets of superset/assets/.

``gridlake superset assets`` (and ``gridlake docs``) writes the YAML; a test checks it is current,
as for the grid views. Why generated: every chart needs two consistent descriptions of its query,
the explore ``params`` the dashboard renders from and the saved ``query_context`` that the
chart-data API, thumbnails, alerts and reports run; and every dataset's columns and comments come
from the Table definitions of its grid view. Written by hand, 40 charts drift.

What the spec holds:

- **datasets**: one per grid view the dashboards read (never silver, never a physical table), with
  saved metrics (ratios of sums, never means of ratios), calculated columns, and the row-level
  security scope of the view in ``extra.gridlake_rls`` (``superset/access.py`` turns it into
  Superset RLS rules per site role): ``site`` (``site = 'X'``), ``link`` (the site is the source or
  the destination), ``site_entity`` (outlier rows about the site itself) or ``grid`` (grid-wide
  aggregates without per-site rows). A dataset without a scope is never granted to a site role.
- **charts**: viz type, dataset, x axis / series / metrics / filters; params and query_context
  are built from the same fields here.
- **dashboards**: rows of charts and native filters (site, VO, week, ...). A week filter defaults
  to the latest week (single select, newest first, first item by default), so a dashboard opens
  on one week even over years of data; trend charts are excluded from it.

The YAML keeps two placeholders for ``superset/build_bundle.py``: the Thrift port and the schema of
the views (``grid``).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gridlake.settings import REPO_ROOT
from gridlake.tabledef import Table

__all__ = [
    "ASSETS_DIR",
    "DASHBOARDS",
    "DATASETS",
    "Chart",
    "Dashboard",
    "Dataset",
    "NativeFilter",
    "render_assets",
    "write_assets",
]

ASSETS_DIR = REPO_ROOT / "superset" / "assets"
SCHEMA_PLACEHOLDER = "${GRIDLAKE_SCHEMA}"
NAMESPACE = uuid.UUID("0f5b6a53-8a1e-4c55-9d36-6c8b8e6f4a10")
DATABASE_UUID = "7ca962d9-2f42-5a18-b5d0-6f71cbf50dc0"
# Objects that existed before the spec keep their uuids, so re-importing over an older instance
# overwrites them instead of colliding on the dashboard slug.
FIXED_UUIDS = {
    "dataset:site_efficiency_weekly": "6bc7848b-5fcc-59ec-b133-0a26c7c00266",
    "dashboard:grid-operations": "80abdfbf-bce2-551c-94c5-192f42b24b52",
    "chart:total_jobs": "e5e0e71c-d86d-5fb6-bb4d-f91f9f57177c",
    "chart:cpu_efficiency_by_site": "9d737ec0-9b15-5287-a87b-f355d54d89b4",
    "chart:core_hours_vs_wasted_by_site": "a21683a4-5309-5d0d-9a1c-7902eb9498c5",
    "chart:efficiency_by_site_and_vo": "dc4164e0-ee6d-5459-952e-621a62c5ba11",
}
RLS_CLAUSES = {
    "site": "site = '{site}'",
    "link": "(src_site = '{site}' OR dst_site = '{site}')",
    "site_entity": "(entity = 'site' AND entity_value = '{site}')",
    "grid": None,
}


def asset_uuid(kind: str, name: str) -> str:
    key = f"{kind}:{name}"
    return FIXED_UUIDS.get(key) or str(uuid.uuid5(NAMESPACE, f"gridlake:{key}"))


# --------------------------------------------------------------------------------------------
# Spec types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    name: str
    expression: str
    label: str
    d3format: str = ""
    description: str = ""


@dataclass(frozen=True)
class CalcColumn:
    name: str
    expression: str
    ddl_type: str
    description: str
    is_dttm: bool = False


@dataclass(frozen=True)
class Dataset:
    """A Superset dataset over a grid view (or a SQL query over grid views: ``sql``)."""

    name: str
    rls: str  # a key of RLS_CLAUSES
    description: str
    metrics: tuple[Metric, ...]
    table: Table | None = None  # the view's Table definition (physical datasets)
    sql: str | None = None  # virtual dataset over grid views
    sql_columns: tuple[tuple[str, str, str], ...] = ()  # (name, type, description) of ``sql``
    calc_columns: tuple[CalcColumn, ...] = ()
    main_dttm_col: str | None = None

    @property
    def uuid(self) -> str:
        return asset_uuid("dataset", self.name)

    def columns(self) -> list[tuple[str, str, str, bool]]:
        """(name, type, description, is_dttm) of the physical or SQL columns."""
        if self.table is not None:
            from gridlake.serving.views import view_columns

            cols = [(c.name, c.ddl_type, c.comment) for c in view_columns(self.table)]
        else:
            cols = list(self.sql_columns)
        return [(n, t, d, t in ("DATE", "TIMESTAMP")) for n, t, d in cols]

    def column_names(self) -> set[str]:
        return {c[0] for c in self.columns()} | {c.name for c in self.calc_columns}

    def temporal(self, name: str) -> bool:
        types = {c[0]: c[3] for c in self.columns()} | {
            c.name: c.is_dttm for c in self.calc_columns
        }
        return types[name]


@dataclass(frozen=True)
class Chart:
    """One chart. ``kind``: big_number, table, raw_table, line, bar, heatmap, pie."""

    key: str
    title: str
    description: str
    dataset: Dataset
    kind: str
    metrics: tuple[str, ...] = ()
    x: str | None = None  # x axis (line, bar, heatmap)
    time_grain: str | None = None  # for a temporal x axis
    series: tuple[str, ...] = ()  # groupby: series (line, bar), y (heatmap), rows (table, pie)
    columns: tuple[str, ...] = ()  # raw_table columns
    where: tuple[tuple[str, str, Any], ...] = ()  # simple filters (col, op, value)
    where_sql: str = ""  # a custom WHERE clause
    order_by: tuple[tuple[str, bool], ...] = ()  # (column or metric, ascending)
    row_limit: int = 1000
    series_limit: int = 0
    stack: bool = False
    number_format: str = "SMART_NUMBER"
    x_label_rotation: int = 0
    width: int = 6
    height: int = 50
    options: dict[str, Any] = field(default_factory=dict)  # extra explore params

    @property
    def uuid(self) -> str:
        return asset_uuid("chart", self.key)

    @property
    def viz_type(self) -> str:
        return {
            "big_number": "big_number_total",
            "table": "table",
            "raw_table": "table",
            "line": "echarts_timeseries_line",
            "bar": "echarts_timeseries_bar",
            "heatmap": "heatmap_v2",
            "pie": "pie",
        }[self.kind]


@dataclass(frozen=True)
class NativeFilter:
    key: str
    name: str
    dataset: Dataset
    column: str
    multi: bool = True
    default_first: bool = False  # select the first value (newest for a descending week filter)
    ascending: bool = True
    exclude: tuple[str, ...] = ()  # chart keys outside the filter's scope
    description: str = ""


@dataclass(frozen=True)
class Dashboard:
    slug: str
    title: str
    description: str
    rows: tuple[tuple[Chart, ...], ...]
    filters: tuple[NativeFilter, ...] = ()

    @property
    def uuid(self) -> str:
        return asset_uuid("dashboard", self.slug)

    @property
    def charts(self) -> list[Chart]:
        return [c for row in self.rows for c in row]


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
    table=_gold("network_link_hourly"),
    calc_columns=(LINK_LABEL,),
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
              "init_dominated", "mixed")  # fmt: skip
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

DATASETS: tuple[Dataset, ...] = (
    SITE_EFFICIENCY, SITE_JOBTYPE, OUTLIERS, ALARMS, COST_MATRIX, LINK_HOURLY, NODE_SATURATION,
    WORKFLOW_IO, SITE_IO, SPEED_FACTORS, MISMATCH, CPU_EFFICIENCY, SPEED_ANOMALIES, FAILURES,
    JOB_LENGTH, MULTICORE, SITE_LINKS,
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Dashboards
# --------------------------------------------------------------------------------------------

PCT = ".1%"


def _week_filter(dataset: Dataset = SITE_EFFICIENCY, exclude: tuple[str, ...] = ()) -> NativeFilter:
    return NativeFilter(
        "week",
        "Week",
        dataset,
        "week",
        multi=False,
        default_first=True,
        ascending=False,
        exclude=exclude,
        description="ISO week (Monday); opens on the latest week in the data.",
    )


def _site_filter(single: bool = False) -> NativeFilter:
    return NativeFilter("site", "Site", SITE_EFFICIENCY, "site", multi=not single,
                        default_first=single)  # fmt: skip


def _vo_filter() -> NativeFilter:
    return NativeFilter("vo", "VO", SITE_EFFICIENCY, "vo")


# 1. Grid operations ---------------------------------------------------------------------------
OPS_TREND = ("efficiency_trend_by_vo", "badput_trend", "failure_rate_trend")
GRID_OPERATIONS = Dashboard(
    "grid-operations",
    "Grid operations",
    "The week at a glance: efficiency, badput and failures over time, the outliers the rules "
    "flagged and the network alarms.",
    rows=(
        (
            Chart(
                "total_jobs",
                "Jobs",
                "Job attempts that ended in the week.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("jobs",),
                width=3,
                height=30,
                options={"subheader": "job attempts"},
            ),
            Chart(
                "week_efficiency",
                "CPU efficiency",
                "CPU-hours over core-hours.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("cpu_efficiency",),
                number_format=PCT,
                width=3,
                height=30,
                options={"subheader": "CPU-hours / core-hours"},
            ),
            Chart(
                "week_badput",
                "Badput",
                "Core-hours of failed attempts.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("badput_core_hours",),
                width=3,
                height=30,
                options={"subheader": "core-hours of failed attempts"},
            ),
            Chart(
                "week_failure_rate",
                "Failure rate",
                "Failed attempts over all attempts.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("failure_rate",),
                number_format=PCT,
                width=3,
                height=30,
                options={"subheader": "failed / all attempts"},
            ),
        ),
        (
            Chart(
                "efficiency_trend_by_vo",
                "CPU efficiency over time by VO",
                "Weekly CPU efficiency (ratio of sums) per VO, every week.",
                SITE_EFFICIENCY,
                "line",
                metrics=("cpu_efficiency",),
                x="week",
                time_grain="P1W",
                series=("vo",),
                number_format=".0%",
                width=4,
            ),
            Chart(
                "badput_trend",
                "Badput and retry waste over time",
                "Core-hours of failed attempts and of retried attempts, every week.",
                SITE_EFFICIENCY,
                "bar",
                metrics=("badput_core_hours", "retry_waste_core_hours"),
                x="week",
                time_grain="P1W",
                width=4,
            ),
            Chart(
                "failure_rate_trend",
                "Failure rate over time by VO",
                "Failed over all attempts per VO, every week.",
                SITE_EFFICIENCY,
                "line",
                metrics=("failure_rate",),
                x="week",
                time_grain="P1W",
                series=("vo",),
                number_format=".0%",
                width=4,
            ),
        ),
        (
            Chart(
                "cpu_efficiency_by_site",
                "CPU efficiency by site",
                "CPU-hours over core-hours per site, lowest first.",
                SITE_EFFICIENCY,
                "bar",
                metrics=("cpu_efficiency",),
                x="site",
                order_by=(("cpu_efficiency", True),),
                number_format=".0%",
                width=6,
                options={"y_axis_bounds": [0, 1]},
            ),
            Chart(
                "core_hours_vs_wasted_by_site",
                "Core-hours vs wasted core-hours by site",
                "Core-hours of all attempts and of failed attempts (wasted) per site.",
                SITE_EFFICIENCY,
                "bar",
                metrics=("core_hours", "wasted_core_hours"),
                x="site",
                order_by=(("core_hours", False),),
                width=6,
            ),
        ),
        (
            Chart(
                "top_outliers",
                "Top outliers",
                "What the outlier rules flagged, largest deviation first.",
                OUTLIERS,
                "raw_table",
                columns=(
                    "week",
                    "entity",
                    "entity_value",
                    "job_type",
                    "metric",
                    "deviation_pct",
                    "robust_z",
                    "evidence",
                ),
                order_by=(("abs_robust_z", False),),
                row_limit=50,
                width=7,
                height=60,
            ),
            Chart(
                "open_network_alarms",
                "Network alarms",
                "perfSONAR alarms of the week, latest first.",
                ALARMS,
                "raw_table",
                columns=("kind", "src_site", "dst_site", "start_ts", "end_ts", "value"),
                order_by=(("start_ts", False),),
                row_limit=200,
                width=5,
                height=60,
            ),
        ),
        (
            Chart(
                "efficiency_by_site_and_vo",
                "Efficiency by site and VO",
                "Jobs, failures, core-hours and CPU efficiency per site and VO.",
                SITE_EFFICIENCY,
                "table",
                series=("site", "vo"),
                metrics=(
                    "jobs",
                    "failed_jobs",
                    "core_hours",
                    "wasted_core_hours",
                    "cpu_efficiency",
                    "failure_rate",
                ),
                order_by=(("jobs", False),),
                width=12,
                height=50,
            ),
        ),
    ),
    filters=(_week_filter(exclude=OPS_TREND), _site_filter(), _vo_filter()),
)

# 2. Site drill-down ----------------------------------------------------------------------------
SITE_DRILLDOWN = Dashboard(
    "site-drilldown",
    "Site drill-down",
    "Everything about one site in one week: efficiency by job type, badput, outliers, I/O "
    "signatures and node saturation, CPU speed at the site and its network links.",
    rows=(
        (
            Chart(
                "site_week_efficiency",
                "CPU efficiency",
                "CPU-hours over core-hours.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("cpu_efficiency",),
                number_format=PCT,
                width=3,
                height=30,
            ),
            Chart(
                "site_week_core_hours",
                "Core-hours",
                "Core-hours of all attempts.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("core_hours",),
                width=2,
                height=30,
            ),
            Chart(
                "site_week_badput_share",
                "Badput share",
                "Core-hours of failed attempts.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("badput_share",),
                number_format=PCT,
                width=2,
                height=30,
            ),
            Chart(
                "site_week_jobs",
                "Jobs",
                "Job attempts.",
                SITE_EFFICIENCY,
                "big_number",
                metrics=("jobs",),
                width=2,
                height=30,
            ),
            Chart(
                "site_week_outlier_flags",
                "Outlier flags",
                "Rows the outlier rules flagged about the site (see Grid operations for the list).",
                OUTLIERS,
                "big_number",
                metrics=("flags",),
                width=3,
                height=30,
            ),
        ),
        (
            Chart(
                "site_jobtype_table",
                "By job type",
                "Jobs, failures, efficiency, badput and retry waste per job type.",
                SITE_JOBTYPE,
                "table",
                series=("job_type",),
                metrics=(
                    "jobs",
                    "failed_jobs",
                    "core_hours",
                    "cpu_efficiency",
                    "badput_core_hours",
                    "retry_waste_core_hours",
                ),
                order_by=(("core_hours", False),),
                width=7,
                height=50,
            ),
            Chart(
                "site_jobtype_efficiency",
                "CPU efficiency by job type",
                "CPU-hours over core-hours per job type and VO.",
                SITE_JOBTYPE,
                "bar",
                metrics=("cpu_efficiency",),
                x="job_type",
                series=("vo",),
                order_by=(("cpu_efficiency", True),),
                number_format=".0%",
                width=5,
                options={"y_axis_bounds": [0, 1]},
            ),
        ),
        (
            Chart(
                "site_vs_other_sites",
                "Efficiency against the other sites",
                "Per job type: the site's CPU efficiency, the other sites' (same job type and "
                "week, ratio of sums) and the core-hours its jobs lost where the limit is unknown "
                "(no node data) or known.",
                WORKFLOW_IO,
                "table",
                series=("job_type",),
                metrics=(
                    "cpu_efficiency",
                    "other_sites_efficiency",
                    "efficiency_gap",
                    "core_hours",
                    "lost_io_wait_bound",
                    "lost_unclassified",
                ),
                order_by=(("efficiency_gap", False),),
                width=12,
                height=40,
            ),
        ),
        (
            Chart(
                "site_io_signatures",
                "I/O signatures by job type",
                "Share of the classified core-hours per signature.",
                WORKFLOW_IO,
                "bar",
                metrics=tuple(f"share_{s}" for s in SIGNATURES),
                x="job_type",
                stack=True,
                number_format=".0%",
                width=6,
            ),
            Chart(
                "site_node_heatmap",
                "Worker nodes: disk utilisation per hour",
                "Busiest disk %util (p95) of each monitored node per hour.",
                NODE_SATURATION,
                "heatmap",
                metrics=("disk_util_p95",),
                x="hour",
                series=("host",),
                row_limit=10000,
                width=6,
            ),
        ),
        (
            Chart(
                "site_speed",
                "CPU speed at the site vs elsewhere",
                "CPU time per event relative to the same models at other sites (all job "
                "types); > 1 is slower.",
                SPEED_ANOMALIES,
                "table",
                series=("site", "cpu_model"),
                metrics=("slowdown", "ci_low", "ci_high", "flagged", "n_jobs"),
                where=(("job_type", "==", "ALL"),),
                order_by=(("slowdown", False),),
                width=6,
                height=50,
            ),
            Chart(
                "site_links_table",
                "Network links of the site",
                "Cost of moving 1 GB to and from the site's peers, congestion and loss.",
                SITE_LINKS,
                "table",
                series=("direction", "peer"),
                metrics=(
                    "cost_s_per_gb",
                    "congested_share",
                    "loss_mean",
                    "rtt_ms",
                    "throughput_gbps",
                ),
                order_by=(("cost_s_per_gb", False),),
                width=6,
                height=50,
            ),
        ),
    ),
    filters=(_site_filter(single=True), _vo_filter(), _week_filter()),
)

# 3. CPU models and benchmarks ------------------------------------------------------------------
CPU_MODELS = Dashboard(
    "cpu-models",
    "CPU models and benchmarks",
    "How fast each CPU model really is for each job type, against its HS23 benchmark, and what "
    "the grid runs on.",
    rows=(
        (
            Chart(
                "speed_factor_intervals",
                "Speed factor with 95% interval (all job types)",
                "exp(-model term) of log(CPU s/event) = task + model, relative to the "
                "reference model; the band is the bootstrap interval.",
                SPEED_FACTORS,
                "line",
                metrics=("ci_low", "speed_factor", "ci_high"),
                x="model",
                where=(("job_type", "==", "ALL"),),
                order_by=(("speed_factor", True),),
                x_label_rotation=30,
                width=6,
                options={"markerEnabled": True},
            ),
            Chart(
                "speed_factor_by_job_type",
                "Speed factor by job type",
                "The same fit per job type: where workloads disagree with each other.",
                SPEED_FACTORS,
                "bar",
                metrics=("speed_factor",),
                x="model",
                series=("job_type",),
                order_by=(("speed_factor", True),),
                x_label_rotation=30,
                width=6,
            ),
        ),
        (
            Chart(
                "benchmark_mismatch_table",
                "Benchmark mismatch",
                "Measured speed over the declared HS23 ratio with its 95% interval; flagged "
                "when the interval lies outside [0.9, 1.1].",
                MISMATCH,
                "table",
                series=("job_type", "model"),
                metrics=("ratio", "ratio_ci_low", "ratio_ci_high", "flagged_models", "n_jobs"),
                order_by=(("ratio", True),),
                width=7,
                height=55,
            ),
            Chart(
                "benchmark_ratio_bars",
                "Measured / HS23 by job type",
                "1 = the benchmark predicts the jobs.",
                MISMATCH,
                "bar",
                metrics=("ratio",),
                x="job_type",
                series=("microarchitecture",),
                width=5,
                height=55,
            ),
        ),
        (
            Chart(
                "microarchitecture_mix",
                "Microarchitecture mix (core-hours)",
                "Core-hours of all attempts per CPU microarchitecture.",
                CPU_EFFICIENCY,
                "pie",
                metrics=("core_hours",),
                series=("microarchitecture",),
                width=4,
            ),
            Chart(
                "efficiency_by_architecture",
                "CPU efficiency by microarchitecture and job type",
                "CPU-hours over core-hours.",
                CPU_EFFICIENCY,
                "heatmap",
                metrics=("cpu_efficiency",),
                x="job_type",
                series=("microarchitecture",),
                number_format=".0%",
                width=8,
                options={"show_values": True},
            ),
        ),
    ),
)

# 4. I/O signatures -----------------------------------------------------------------------------
IO_SIGNATURES = Dashboard(
    "io-signatures",
    "I/O signatures",
    "What limits the jobs (CPU, disk, memory, remote reads) by workflow and site, and which "
    "worker nodes were saturated.",
    rows=(
        (
            Chart(
                "signature_by_workflow",
                "Signature shares by workflow",
                "Share of classified core-hours per signature, per job type.",
                WORKFLOW_IO,
                "bar",
                metrics=tuple(f"share_{s}" for s in SIGNATURES),
                x="job_type",
                stack=True,
                number_format=".0%",
                width=6,
            ),
            Chart(
                "signature_by_site",
                "Signature shares by site",
                "Share of classified core-hours per signature, per site.",
                SITE_IO,
                "bar",
                metrics=tuple(f"share_{s}" for s in SIGNATURES),
                x="site",
                stack=True,
                number_format=".0%",
                width=6,
            ),
        ),
        (
            Chart(
                "saturated_nodes_heatmap",
                "Saturated nodes",
                "Host-hours flagged saturated (disk or memory), coloured by the busiest "
                "disk's %util p95.",
                NODE_SATURATION,
                "heatmap",
                metrics=("disk_util_p95",),
                x="hour",
                series=("host",),
                where=(("saturated", "IS TRUE", None),),
                row_limit=10000,
                width=8,
                height=60,
            ),
            Chart(
                "lost_core_hours_by_site",
                "Core-hours lost per limit",
                "Core-hours lost by jobs classified per limit, per site.",
                SITE_IO,
                "bar",
                metrics=tuple(f"lost_{s}" for s in LIMITS),
                x="site",
                stack=True,
                width=4,
                height=60,
            ),
        ),
        (
            Chart(
                "site_io_table",
                "Site I/O stress",
                "Saturated host-hours and iowait of each site's monitored nodes.",
                SITE_IO,
                "table",
                series=("site",),
                metrics=(
                    "saturated_share",
                    "disk_saturated_share",
                    "memory_pressure_share",
                    "iowait_mean",
                    "disk_util_p95_max",
                    "lost_io_wait_bound",
                ),
                order_by=(("saturated_share", False),),
                width=12,
                height=40,
            ),
        ),
    ),
    filters=(_week_filter(), _site_filter()),
)

# 5. Network -------------------------------------------------------------------------------------
NETWORK = Dashboard(
    "network",
    "Network",
    "The cost of moving data between sites, link status hour by hour, and perfSONAR alarms.",
    rows=(
        (
            Chart(
                "cost_matrix_heatmap",
                "Cost matrix: seconds per GB",
                "Expected seconds to move 1 GB from source (y) to destination (x).",
                COST_MATRIX,
                "heatmap",
                metrics=("cost_s_per_gb",),
                x="dst_site",
                series=("src_site",),
                number_format=".2f",
                row_limit=10000,
                width=6,
                height=60,
                options={"show_values": True},
            ),
            Chart(
                "congestion_matrix_heatmap",
                "Congested share of 5-minute intervals",
                "Source (y) to destination (x).",
                COST_MATRIX,
                "heatmap",
                metrics=("congested_share",),
                x="dst_site",
                series=("src_site",),
                number_format=".0%",
                row_limit=10000,
                width=6,
                height=60,
                options={"show_values": True},
            ),
        ),
        (
            Chart(
                "link_congestion_timeline",
                "Link status: congested share per hour",
                "The 10 most congested links of the week, hour by hour.",
                LINK_HOURLY,
                "line",
                metrics=("congested_share",),
                x="hour",
                time_grain="PT1H",
                series=("link",),
                series_limit=10,
                number_format=".0%",
                width=12,
                height=50,
            ),
        ),
        (
            Chart(
                "link_delay_timeline",
                "Link status: excess delay per hour",
                "Largest delay above the path's baseline, the 10 worst links.",
                LINK_HOURLY,
                "line",
                metrics=("max_excess_delay_ms",),
                x="hour",
                time_grain="PT1H",
                series=("link",),
                series_limit=10,
                width=12,
                height=50,
            ),
        ),
        (
            Chart(
                "alarms_by_kind",
                "Alarms by kind",
                "Alarms that started in the week.",
                ALARMS,
                "bar",
                metrics=("alarms",),
                x="kind",
                series=("link",),
                stack=True,
                width=4,
                height=55,
            ),
            Chart(
                "network_alarm_list",
                "Alarms",
                "Every alarm, latest first.",
                ALARMS,
                "raw_table",
                columns=("kind", "src_site", "dst_site", "start_ts", "end_ts", "value", "evidence"),
                order_by=(("start_ts", False),),
                row_limit=500,
                width=8,
                height=55,
            ),
        ),
    ),
    filters=(
        _week_filter(COST_MATRIX),
        NativeFilter("src_site", "Source site", COST_MATRIX, "src_site"),
        NativeFilter("dst_site", "Destination site", COST_MATRIX, "dst_site"),
    ),
)

# 6. Failures and job length ---------------------------------------------------------------------
FAILURES_DASHBOARD = Dashboard(
    "failures-job-length",
    "Failures and job length",
    "How the chance of failing grows with a job's duration, what each failure costs, and how "
    "long jobs should be.",
    rows=(
        (
            Chart(
                "failure_probability_curves",
                "Failure probability vs duration",
                "Failed attempts over attempts per wall-clock bin (any failure mode).",
                FAILURES,
                "line",
                metrics=("failure_probability",),
                x="duration",
                series=("job_type",),
                where=(("failure_mode", "==", "ALL"),),
                order_by=(("duration", True),),
                number_format=".0%",
                x_label_rotation=30,
                width=6,
                options={"markerEnabled": True},
            ),
            Chart(
                "hazard_curves",
                "Failure hazard vs duration",
                "Failures per wall-hour at risk in each bin (life table).",
                FAILURES,
                "line",
                metrics=("hazard_per_hour",),
                x="duration",
                series=("job_type",),
                where=(("failure_mode", "==", "ALL"),),
                order_by=(("duration", True),),
                x_label_rotation=30,
                width=6,
                options={"markerEnabled": True},
            ),
        ),
        (
            Chart(
                "failures_by_mode",
                "Failures by mode and duration",
                "Failed attempts per wall-clock bin and failure mode (all job types).",
                FAILURES,
                "bar",
                metrics=("failures",),
                x="duration",
                series=("failure_mode",),
                where=(("failure_mode", "!=", "ALL"),),
                order_by=(("duration", True),),
                stack=True,
                x_label_rotation=30,
                width=6,
            ),
            Chart(
                "wasted_by_mode",
                "Wasted core-hours by failure mode",
                "Core-hours of failed attempts per mode.",
                FAILURES,
                "pie",
                metrics=("wasted_core_hours",),
                series=("failure_mode",),
                where=(("failure_mode", "!=", "ALL"),),
                width=6,
            ),
        ),
        (
            Chart(
                "job_length_table",
                "Job length advice",
                "Initialisation, hazard, advised and current payload length, and the "
                "core-hours a year the advice would save.",
                JOB_LENGTH,
                "table",
                series=("job_type",),
                metrics=(
                    "init_seconds",
                    "hazard_per_hour",
                    "optimal_hours",
                    "current_median_hours",
                    "core_hours_saved_per_year",
                    "n_jobs",
                ),
                order_by=(("hazard_per_hour", False),),
                width=7,
                height=45,
            ),
            Chart(
                "multicore_efficiency",
                "CPU efficiency by cores",
                "Successful attempts: CPU efficiency per core count and job type.",
                MULTICORE,
                "bar",
                metrics=("cpu_efficiency",),
                x="job_type",
                series=("cores",),
                number_format=".0%",
                width=5,
                height=45,
            ),
        ),
    ),
    filters=(NativeFilter("job_type", "Job type", FAILURES, "job_type"),),
)

DASHBOARDS: tuple[Dashboard, ...] = (
    GRID_OPERATIONS, SITE_DRILLDOWN, CPU_MODELS, IO_SIGNATURES, NETWORK, FAILURES_DASHBOARD,
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def _simple_filters(chart: Chart) -> tuple[list[dict], list[dict]]:
    """(adhoc_filters for params, filters for the query object)."""
    adhoc: list[dict] = []
    query: list[dict] = []
    if chart.x and chart.dataset.temporal(chart.x):
        adhoc.append({"clause": "WHERE", "subject": chart.x, "operator": "TEMPORAL_RANGE",
                      "comparator": "No filter", "expressionType": "SIMPLE"})  # fmt: skip
        query.append({"col": chart.x, "op": "TEMPORAL_RANGE", "val": "No filter"})
    for col, op, value in chart.where:
        item = {"clause": "WHERE", "subject": col, "operator": op, "expressionType": "SIMPLE"}
        if value is not None:
            item["comparator"] = value
        adhoc.append(item)
        query.append({"col": col, "op": op, **({"val": value} if value is not None else {})})
    if chart.where_sql:
        adhoc.append({"clause": "WHERE", "expressionType": "SQL",
                      "sqlExpression": chart.where_sql})  # fmt: skip
    return adhoc, query


def _x_column(chart: Chart) -> dict:
    assert chart.x
    col: dict[str, Any] = {"columnType": "BASE_AXIS", "sqlExpression": chart.x,
                           "label": chart.x, "expressionType": "SQL"}  # fmt: skip
    if chart.time_grain:
        col["timeGrain"] = chart.time_grain
    return col


def chart_params(chart: Chart) -> dict[str, Any]:
    """The explore form data the dashboard renders the chart from."""
    adhoc, _ = _simple_filters(chart)
    p: dict[str, Any] = {"viz_type": chart.viz_type, "adhoc_filters": adhoc}
    if chart.kind == "big_number":
        p |= {"metric": chart.metrics[0], "header_font_size": 0.4, "subheader_font_size": 0.15,
              "y_axis_format": chart.number_format, "time_format": "smart_date"}  # fmt: skip
    elif chart.kind == "table":
        p |= {
            "query_mode": "aggregate",
            "groupby": list(chart.series),
            "metrics": list(chart.metrics),
            "all_columns": [],
            "percent_metrics": [],
            "order_desc": not (chart.order_by and chart.order_by[0][1]),
            "row_limit": chart.row_limit,
            "server_page_length": 10,
            "table_timestamp_format": "%Y-%m-%d %H:%M",
            "show_cell_bars": True,
            "color_pn": True,
            "allow_render_html": False,
        }
        if chart.order_by:
            p["timeseries_limit_metric"] = chart.order_by[0][0]
    elif chart.kind == "raw_table":
        p |= {
            "query_mode": "raw",
            "groupby": [],
            "metrics": [],
            "all_columns": list(chart.columns),
            "order_by_cols": [json.dumps([c, asc]) for c, asc in chart.order_by],
            "row_limit": chart.row_limit,
            "server_page_length": 10,
            "table_timestamp_format": "%Y-%m-%d %H:%M",
            "allow_render_html": False,
        }
    elif chart.kind in ("line", "bar"):
        p |= {
            "x_axis": chart.x,
            "metrics": list(chart.metrics),
            "groupby": list(chart.series),
            "row_limit": chart.row_limit if chart.row_limit != 1000 else 10000,
            "order_desc": True,
            "show_legend": True,
            "legendType": "scroll",
            "legendOrientation": "top",
            "rich_tooltip": True,
            "y_axis_format": chart.number_format,
            "truncateYAxis": False,
            "y_axis_bounds": [None, None],
            # category labels (job types, sites) overlap unless tilted
            "xAxisLabelRotation": chart.x_label_rotation
            or (0 if chart.dataset.temporal(chart.x or "") else 30),
            "color_scheme": "supersetColors",
            "comparison_type": "values",
            "annotation_layers": [],
            "forecastPeriods": 10,
            "forecastInterval": 0.8,
            "x_axis_title_margin": 15,
            "y_axis_title_margin": 15,
            "y_axis_title_position": "Left",
            "zoomable": False,
        }
        if chart.time_grain:
            p |= {"time_grain_sqla": chart.time_grain, "x_axis_time_format": "smart_date",
                  "tooltipTimeFormat": "smart_date"}  # fmt: skip
        else:
            p |= {"x_axis_sort_asc": True}
            if chart.order_by and chart.order_by[0][0] in chart.metrics:
                p |= {"x_axis_sort": chart.order_by[0][0], "x_axis_sort_asc": chart.order_by[0][1]}
        if chart.series_limit:
            p |= {"series_limit": chart.series_limit, "series_limit_metric": chart.metrics[0]}
        if chart.number_format.endswith("%") and not chart.stack and chart.kind == "bar":
            p["y_axis_bounds"] = [0, 1]  # efficiencies, shares and probabilities
        if chart.stack and all(m.startswith("share_") for m in chart.metrics):
            p["y_axis_bounds"] = [0, 1]  # shares of a whole
        if chart.kind == "bar":
            p |= {"orientation": "vertical", "stack": "Stack" if chart.stack else None,
                  "only_total": True, "show_empty_columns": True}  # fmt: skip
        else:
            # markers show a week or a bin on its own; hourly series are dense enough without
            p |= {"markerEnabled": chart.time_grain != "PT1H", "markerSize": 6,
                  "seriesType": "line"}  # fmt: skip
    elif chart.kind == "heatmap":
        p |= {
            "x_axis": chart.x,
            "groupby": chart.series[0],
            "metric": chart.metrics[0],
            "row_limit": chart.row_limit,
            "sort_x_axis": "alpha_asc",
            "sort_y_axis": "alpha_asc",
            "normalize_across": "heatmap",
            "linear_color_scheme": "superset_seq_1",
            "legend_type": "continuous",
            "show_legend": True,
            "show_values": False,
            "show_percentage": False,
            "left_margin": "auto",
            "bottom_margin": "auto",
            "xscale_interval": -1,
            "yscale_interval": -1,
            "y_axis_format": chart.number_format,
            "value_bounds": [None, None],
        }
        if chart.time_grain:
            p["time_grain_sqla"] = chart.time_grain
        if chart.x and chart.dataset.temporal(chart.x):
            p["x_axis_time_format"] = "%m-%d %H:%M"
    elif chart.kind == "pie":
        p |= {
            "groupby": list(chart.series),
            "metric": chart.metrics[0],
            "row_limit": chart.row_limit,
            "sort_by_metric": True,
            "color_scheme": "supersetColors",
            "show_labels": True,
            "labels_outside": True,
            "label_type": "key_percent",
            "number_format": "SMART_NUMBER",
            "show_legend": True,
            "legendType": "scroll",
            "legendOrientation": "top",
            "donut": True,
            "innerRadius": 30,
            "outerRadius": 70,
        }
    else:
        raise ValueError(f"{chart.key}: unknown kind {chart.kind}")
    p |= chart.options
    p["extra_form_data"] = {}
    return p


def chart_query_context(chart: Chart) -> dict[str, Any]:
    """The query the chart-data API runs (long format: no pivoting post-processing)."""
    _, filters = _simple_filters(chart)
    q: dict[str, Any] = {
        "filters": filters,
        "extras": {"having": "", "where": f"({chart.where_sql})" if chart.where_sql else ""},
        "applied_time_extras": {},
        "annotation_layers": [],
        "series_limit": 0,
        "order_desc": True,
        "url_params": {},
        "custom_params": {},
        "custom_form_data": {},
        "post_processing": [],
    }
    if chart.time_grain:
        q["extras"]["time_grain_sqla"] = chart.time_grain
    # Aggregated queries order by metrics only: ordering by a grouped column makes Superset
    # select it a second time under the same alias, which Spark rejects (the frontend sorts axes).
    metric_names = {m.name for m in chart.dataset.metrics}
    orderby = [[c, asc] for c, asc in chart.order_by if c in metric_names]
    if chart.kind == "big_number":
        q |= {"columns": [], "metrics": [chart.metrics[0]]}
    elif chart.kind in ("table", "pie"):
        q |= {"columns": list(chart.series), "metrics": list(chart.metrics),
              "orderby": orderby or [[chart.metrics[0], False]],
              "row_limit": chart.row_limit}  # fmt: skip
    elif chart.kind == "raw_table":
        q |= {"columns": list(chart.columns), "metrics": [],
              "orderby": [[c, asc] for c, asc in chart.order_by],
              "row_limit": chart.row_limit}  # fmt: skip
    elif chart.kind in ("line", "bar"):
        q |= {
            "columns": [_x_column(chart), *chart.series],
            "metrics": list(chart.metrics),
            "orderby": orderby or [[chart.metrics[0], False]],
            "row_limit": chart.row_limit if chart.row_limit != 1000 else 10000,
            "series_columns": list(chart.series),
            "time_offsets": [],
        }
        if chart.series_limit:
            q |= {"series_limit": chart.series_limit, "series_limit_metric": chart.metrics[0]}
    elif chart.kind == "heatmap":
        q |= {
            "columns": [_x_column(chart), chart.series[0]],
            "metrics": [chart.metrics[0]],
            "row_limit": chart.row_limit,
        }
    return {
        "datasource": {"id": 0, "type": "table"},
        "force": False,
        "queries": [q],
        "form_data": chart_params(chart),
        "result_format": "json",
        "result_type": "full",
    }


def _dataset_yaml(ds: Dataset) -> dict[str, Any]:
    cols = []
    for name, ddl_type, comment, is_dttm in ds.columns():
        cols.append({"column_name": name, "verbose_name": None, "is_dttm": is_dttm,
                     "is_active": True, "type": ddl_type, "groupby": True, "filterable": True,
                     "expression": None, "description": " ".join(comment.split()),
                     "python_date_format": None, "extra": {}})  # fmt: skip
    for c in ds.calc_columns:
        cols.append({"column_name": c.name, "verbose_name": None, "is_dttm": c.is_dttm,
                     "is_active": True, "type": c.ddl_type, "groupby": True, "filterable": True,
                     "expression": c.expression, "description": c.description,
                     "python_date_format": None, "extra": {}})  # fmt: skip
    grain = ""
    if ds.table is not None:
        grain = f" Grain: {' '.join(ds.table.grain.split())}"
    return {
        "table_name": ds.name,
        "main_dttm_col": ds.main_dttm_col,
        "description": ds.description + grain,
        "default_endpoint": None,
        "offset": 0,
        "cache_timeout": None,
        "catalog": None,
        "schema": SCHEMA_PLACEHOLDER,
        "sql": ds.sql,
        "params": None,
        "template_params": None,
        "filter_select_enabled": True,
        "fetch_values_predicate": None,
        "extra": {"gridlake_rls": {"scope": ds.rls, "clause": RLS_CLAUSES[ds.rls]}},
        "normalize_columns": False,
        "always_filter_main_dttm": False,
        "uuid": ds.uuid,
        "metrics": [
            {
                "metric_name": m.name,
                "verbose_name": m.label,
                "metric_type": None,
                "expression": m.expression,
                "description": m.description or None,
                "d3format": m.d3format or None,
                "currency": None,
                "extra": {},
                "warning_text": None,
            }
            for m in ds.metrics
        ],
        "columns": cols,
        "version": "1.0.0",
        "database_uuid": DATABASE_UUID,
    }


def _chart_yaml(chart: Chart) -> dict[str, Any]:
    return {
        "slice_name": chart.title,
        "description": chart.description,
        "certified_by": None,
        "certification_details": None,
        "viz_type": chart.viz_type,
        "params": chart_params(chart),
        "query_context": json.dumps(chart_query_context(chart), indent=1),
        "cache_timeout": None,
        "uuid": chart.uuid,
        "version": "1.0.0",
        "dataset_uuid": chart.dataset.uuid,
    }


def _filter_yaml(f: NativeFilter, dash: Dashboard, ids: dict[str, int]) -> dict[str, Any]:
    excluded = sorted(
        ids[c.key]
        for c in dash.charts
        if c.key in f.exclude or f.column not in c.dataset.column_names()
    )
    return {
        "id": f"NATIVE_FILTER-{f.key}",
        "name": f.name,
        "filterType": "filter_select",
        "type": "NATIVE_FILTER",
        "description": f.description,
        "targets": [{"datasetUuid": f.dataset.uuid, "column": {"name": f.column}}],
        "controlValues": {
            "enableEmptyFilter": f.default_first,
            "defaultToFirstItem": f.default_first,
            "multiSelect": f.multi,
            "searchAllOptions": False,
            "inverseSelection": False,
            "sortAscending": f.ascending,
        },
        "defaultDataMask": {"extraFormData": {}, "filterState": {}, "ownState": {}},
        "cascadeParentIds": [],
        "scope": {"rootPath": ["ROOT_ID"], "excluded": excluded},
        # what the filter editor saves for "Select first filter value by default": the dashboard
        # then waits for the filter's first value before it loads the charts in scope
        **({"requiredFirst": True} if f.default_first else {}),
    }


def _dashboard_yaml(dash: Dashboard) -> dict[str, Any]:
    ids = {c.key: i for i, c in enumerate(dash.charts, start=1)}
    rows = [f"ROW-{i}" for i in range(len(dash.rows))]
    position: dict[str, Any] = {
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
        "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": rows, "parents": ["ROOT_ID"]},
        "HEADER_ID": {"type": "HEADER", "id": "HEADER_ID", "meta": {"text": dash.title}},
    }
    for row_id, row in zip(rows, dash.rows, strict=True):
        width = sum(c.width for c in row)
        if width > 12:
            raise ValueError(f"{dash.slug}: {row_id} is {width} columns wide (max 12)")
        position[row_id] = {
            "type": "ROW",
            "id": row_id,
            "children": [f"CHART-{c.key}" for c in row],
            "parents": ["ROOT_ID", "GRID_ID"],
            "meta": {"background": "BACKGROUND_TRANSPARENT"},
        }
        for c in row:
            position[f"CHART-{c.key}"] = {
                "type": "CHART",
                "id": f"CHART-{c.key}",
                "children": [],
                "parents": ["ROOT_ID", "GRID_ID", row_id],
                "meta": {"chartId": ids[c.key], "uuid": c.uuid, "sliceName": c.title,
                         "width": c.width, "height": c.height},
            }  # fmt: skip
    return {
        "dashboard_title": dash.title,
        "description": dash.description,
        "css": "",
        "slug": dash.slug,
        "certified_by": None,
        "certification_details": None,
        "published": True,
        "uuid": dash.uuid,
        "version": "1.0.0",
        "position": position,
        "metadata": {
            "color_scheme": "supersetColors",
            "refresh_frequency": 0,
            "timed_refresh_immune_slices": [],
            "expanded_slices": {},
            "label_colors": {},
            "shared_label_colors": [],
            "color_scheme_domain": [],
            "cross_filters_enabled": False,
            "chart_configuration": {},
            "global_chart_configuration": {
                "scope": {"rootPath": ["ROOT_ID"], "excluded": []},
                "chartsInScope": [],
            },
            "default_filters": "{}",
            "native_filter_configuration": [_filter_yaml(f, dash, ids) for f in dash.filters],
        },
    }


def _database_yaml() -> dict[str, Any]:
    return {
        "database_name": "gridlake",
        "sqlalchemy_uri": "hive://gridlake@127.0.0.1:${GRIDLAKE_THRIFT_PORT}/" + SCHEMA_PLACEHOLDER,
        "cache_timeout": None,
        "expose_in_sqllab": True,
        "allow_run_async": False,
        "allow_ctas": False,
        "allow_cvas": False,
        "allow_dml": False,
        "allow_file_upload": False,
        "impersonate_user": False,
        "extra": {
            "metadata_params": {},
            "engine_params": {},
            "metadata_cache_timeout": {},
            "schemas_allowed_for_file_upload": [],
            "allows_virtual_table_explore": True,
            "cancel_query_on_windows_unload": True,
        },
        "uuid": DATABASE_UUID,
        "version": "1.0.0",
    }


def check_spec() -> None:
    """Every chart's metrics and columns exist on its dataset; keys and uuids are unique."""
    keys = [c.key for d in DASHBOARDS for c in d.charts]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate chart keys")
    for dash in DASHBOARDS:
        for c in dash.charts:
            ds = c.dataset
            metrics = {m.name for m in ds.metrics}
            cols = ds.column_names()
            missing = [m for m in c.metrics if m not in metrics]
            missing += [x for x in (c.x, *c.series, *c.columns) if x and x not in cols]
            missing += [f for f, _, _ in c.where if f not in cols]
            missing += [o for o, _ in c.order_by if o not in cols | metrics]
            if missing:
                raise ValueError(f"{dash.slug}/{c.key}: unknown {missing} on {ds.name}")
            if c.time_grain and not ds.temporal(c.x or ""):
                raise ValueError(f"{dash.slug}/{c.key}: time grain on a non-temporal axis")
        for f in dash.filters:
            if f.column not in f.dataset.column_names():
                raise ValueError(f"{dash.slug}: filter {f.key} on unknown column {f.column}")
    for ds in DATASETS:
        if ds.rls not in RLS_CLAUSES:
            raise ValueError(f"{ds.name}: unknown RLS scope {ds.rls}")
        needs = {"site": {"site"}, "link": {"src_site", "dst_site"},
                 "site_entity": {"entity", "entity_value"}, "grid": set()}[ds.rls]  # fmt: skip
        if not needs <= {c[0] for c in ds.columns()}:
            raise ValueError(f"{ds.name}: RLS scope {ds.rls} needs columns {needs}")
        if ds.rls == "grid" and {"site", "src_site", "dst_site"} & ds.column_names():
            raise ValueError(f"{ds.name}: has site columns, cannot be grid-wide")


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _str)

HEADER = (
    "# Generated by `gridlake superset assets` from jobs/gridlake/serving/superset_assets.py;"
    " do not edit.\n"
)


def render_assets() -> dict[str, str]:
    """{relative path under superset/assets: YAML text}."""
    check_spec()

    def dump(obj: dict[str, Any]) -> str:
        return HEADER + yaml.dump(obj, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                                  width=100)  # fmt: skip

    out = {
        "metadata.yaml": dump(
            {"version": "1.0.0", "type": "assets", "timestamp": "2025-01-01T00:00:00+00:00"}
        ),
        "databases/gridlake.yaml": dump(_database_yaml()),
    }
    for ds in DATASETS:
        out[f"datasets/gridlake/{ds.name}.yaml"] = dump(_dataset_yaml(ds))
    for dash in DASHBOARDS:
        for c in dash.charts:
            out[f"charts/{c.key}.yaml"] = dump(_chart_yaml(c))
        out[f"dashboards/{dash.slug.replace('-', '_')}.yaml"] = dump(_dashboard_yaml(dash))
    return out


def write_assets(directory: Path = ASSETS_DIR) -> list[Path]:
    """Write the YAML assets, delete ones the spec no longer has; returns the changed files."""
    wanted = {directory / rel: text for rel, text in render_assets().items()}
    changed = []
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    for path in directory.rglob("*.yaml"):
        if path not in wanted:
            path.unlink()
            changed.append(path)
    return changed
