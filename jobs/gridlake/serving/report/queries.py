"""Every number of the weekly reports: SQL over the ``grid`` views, in this one module.

The reports read the same query layer as the Superset dashboards (the ``grid.*`` views over the
gold tables); nothing here reads silver or recomputes an analysis. Each query is a named Spark
SQL statement with the parameter marker ``:week`` (the Monday of the ISO week, a DATE); the
"previous weeks" of a trend are the ``TREND_WEEKS`` ISO weeks before ``:week``. The site queries
(``site_*``) answer for every site at once, keyed by ``report_site``: a week's site reports cost
one query each, not one per site. Ratios are ratios of sums over the gold rows (as the gold
tables define them), never means of ratios. Every result is bounded (one row per week, job type,
failure mode, host, path or alarm of each site, with a cap per site where a list could grow),
so collecting it to the driver is safe.

Queries that have no week dimension in gold (job length advice, CPU speed factors, benchmark
mismatch, site speed anomalies) describe all the history loaded when the report was built.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from pyspark.sql import SparkSession

__all__ = [
    "QUERIES",
    "SITE_KEY",
    "TREND_WEEKS",
    "VIEWS",
    "Query",
    "is_site_query",
    "run",
    "run_all_sites",
]

TREND_WEEKS = 8
VIEWS = "grid"  # the database of the views; every query names its views as grid.<table>


@dataclass(frozen=True)
class Query:
    name: str
    doc: str
    sql: str


def _sum(col: str, cond: str) -> str:
    return f"sum(CASE WHEN {cond} THEN {col} END)"


def _ratio(num: str, den: str, cond: str) -> str:
    return f"try_divide({_sum(num, cond)}, {_sum(den, cond)})"


_WINDOW = f"week BETWEEN date_sub(:week, {7 * TREND_WEEKS}) AND :week"
_THIS = "week = :week"  # a site query groups by site: "this week" and "before" within it
_PREV = "week < :week"
_GRID = "week = :week"


def _top(sql: str, order: str, n: int) -> str:
    """The first ``n`` rows of every site of ``sql`` (which has ``report_site``) in ``order``,
    numbered by ``report_rank`` (a LIMIT per site, which one query over every site needs)."""
    return f"""
        SELECT * FROM (
          SELECT *, row_number() OVER (PARTITION BY report_site ORDER BY {order}) AS report_rank
          FROM ({sql})
        )
        WHERE report_rank <= {n}
        ORDER BY report_site, report_rank
        """


# The site queries answer for every site at once: one query a week, not one per site (a site
# report asked ~15 queries of its own, ~1 s each even warm: minutes for a grid of hundreds of
# sites). Each returns ``report_site`` (and ``report_rank`` where a list is capped per site);
# ``run`` hands one site's rows without them, in the query's order.
_QUERIES = (
    # --- site report -------------------------------------------------------------------------
    Query(
        "site_weeks",
        "The site and the grid per week of the trend window: efficiency, badput, retry waste.",
        f"""
        WITH v AS (SELECT * FROM grid.site_efficiency_weekly WHERE {_WINDOW}),
        g AS (
          SELECT week, try_divide(sum(cpu_hours), sum(core_hours)) AS grid_efficiency,
            try_divide(sum(badput_core_hours), sum(core_hours)) AS grid_badput_share
          FROM v GROUP BY week
        ),
        s AS (
          SELECT site, week,
            try_divide(sum(cpu_hours), sum(core_hours)) AS site_efficiency,
            sum(core_hours) AS site_core_hours,
            sum(jobs) AS site_jobs,
            sum(failed_jobs) AS site_failed_jobs,
            sum(badput_core_hours) AS site_badput_core_hours,
            sum(retry_waste_core_hours) AS site_retry_waste_core_hours,
            try_divide(sum(badput_core_hours), sum(core_hours)) AS site_badput_share
          FROM v GROUP BY site, week
        )
        SELECT r.site AS report_site, g.week, s.site_efficiency, g.grid_efficiency,
          s.site_core_hours, s.site_jobs, s.site_failed_jobs, s.site_badput_core_hours,
          s.site_retry_waste_core_hours, s.site_badput_share, g.grid_badput_share
        FROM (SELECT DISTINCT site FROM v) r
        CROSS JOIN g
        LEFT JOIN s ON s.site = r.site AND s.week = g.week
        ORDER BY report_site, week
        """,
    ),
    Query(
        "site_headline",
        "One row: the site this week, its previous weeks and the grid this week.",
        f"""
        WITH v AS (SELECT * FROM grid.site_efficiency_weekly WHERE {_WINDOW})
        SELECT *,
          efficiency - previous_efficiency AS efficiency_change,
          efficiency - grid_efficiency AS efficiency_vs_grid,
          badput_share - previous_badput_share AS badput_share_change
        FROM (
          SELECT site AS report_site,
            {_sum("jobs", _THIS)} AS jobs,
            {_sum("failed_jobs", _THIS)} AS failed_jobs,
            {_sum("core_hours", _THIS)} AS core_hours,
            {_ratio("cpu_hours", "core_hours", _THIS)} AS efficiency,
            {_ratio("cpu_hours", "core_hours", _PREV)} AS previous_efficiency,
            {_sum("badput_core_hours", _THIS)} AS badput_core_hours,
            {_sum("retry_waste_core_hours", _THIS)} AS retry_waste_core_hours,
            {_ratio("badput_core_hours", "core_hours", _THIS)} AS badput_share,
            {_ratio("badput_core_hours", "core_hours", _PREV)} AS previous_badput_share,
            count(DISTINCT CASE WHEN {_PREV} THEN week END) AS previous_weeks
          FROM v GROUP BY site
        )
        CROSS JOIN (
          SELECT {_ratio("cpu_hours", "core_hours", _GRID)} AS grid_efficiency FROM v
        )
        ORDER BY report_site
        """,
    ),
    Query(
        "site_job_types",
        "Per job type the site ran this week: its efficiency now, over the previous weeks, and "
        "the grid's this week; the widest gap to the grid first.",
        f"""
        WITH v AS (SELECT * FROM grid.site_jobtype_efficiency_weekly WHERE {_WINDOW})
        SELECT *, grid_efficiency - efficiency AS gap_to_grid,
          efficiency - previous_efficiency AS change
        FROM (
          SELECT s.report_site, s.job_type, s.core_hours, s.efficiency, s.previous_efficiency,
            g.grid_efficiency
          FROM (
            SELECT site AS report_site, job_type,
              {_sum("core_hours", _THIS)} AS core_hours,
              {_ratio("cpu_hours", "core_hours", _THIS)} AS efficiency,
              {_ratio("cpu_hours", "core_hours", _PREV)} AS previous_efficiency
            FROM v GROUP BY site, job_type
          ) s
          LEFT JOIN (
            SELECT job_type, {_ratio("cpu_hours", "core_hours", _GRID)} AS grid_efficiency
            FROM v GROUP BY job_type
          ) g ON g.job_type = s.job_type
        )
        WHERE core_hours > 0
        ORDER BY report_site, gap_to_grid DESC NULLS LAST, job_type
        """,
    ),
    Query(
        "site_failure_modes",
        "Failed attempts and wasted core-hours by failure mode: this week, and per week over "
        "the previous weeks the site ran jobs.",
        f"""
        WITH f AS (SELECT * FROM grid.site_failure_modes_weekly WHERE {_WINDOW}),
        modes AS (
          SELECT site, failure_mode,
            {_sum("failed_jobs", _THIS)} AS failed_jobs,
            {_sum("wasted_core_hours", _THIS)} AS wasted_core_hours,
            {_sum("failed_jobs", _PREV)} AS previous_failed_jobs
          FROM f GROUP BY site, failure_mode
        ),
        sites AS (
          SELECT site, count(DISTINCT CASE WHEN week < :week THEN week END) AS n
          FROM grid.site_efficiency_weekly
          WHERE {_WINDOW}
          GROUP BY site
        )
        SELECT s.site AS report_site, k.failure_mode,
          coalesce(m.failed_jobs, 0) AS failed_jobs,
          coalesce(m.wasted_core_hours, 0.0) AS wasted_core_hours,
          try_divide(m.wasted_core_hours, sum(m.wasted_core_hours) OVER (PARTITION BY s.site))
            AS wasted_share,
          try_divide(coalesce(m.previous_failed_jobs, 0), nullif(s.n, 0))
            AS previous_failed_jobs_per_week
        FROM sites s
        CROSS JOIN (SELECT DISTINCT failure_mode FROM f) k
        LEFT JOIN modes m ON m.site = s.site AND m.failure_mode = k.failure_mode
        ORDER BY report_site, wasted_core_hours DESC NULLS LAST, failure_mode
        """,
    ),
    Query(
        "site_failure_causes",
        "Why the site's attempts failed: failed attempts and badput by cause (the failure-cause "
        "rules) this week, and per week over the previous weeks the site ran jobs.",
        f"""
        WITH f AS (
          SELECT * FROM grid.failure_causes_weekly WHERE {_WINDOW} AND cause <> 'success'
        ),
        causes AS (
          SELECT site, cause,
            {_sum("jobs", _THIS)} AS failed_jobs,
            {_sum("badput_core_hours", _THIS)} AS badput_core_hours,
            {_sum("jobs", _PREV)} AS previous_failed_jobs
          FROM f GROUP BY site, cause
        ),
        sites AS (
          SELECT site, count(DISTINCT CASE WHEN week < :week THEN week END) AS n
          FROM grid.site_efficiency_weekly
          WHERE {_WINDOW}
          GROUP BY site
        )
        SELECT s.site AS report_site, c.cause,
          coalesce(c.failed_jobs, 0) AS failed_jobs,
          coalesce(c.badput_core_hours, 0.0) AS badput_core_hours,
          try_divide(c.badput_core_hours, sum(c.badput_core_hours) OVER (PARTITION BY s.site))
            AS badput_share,
          try_divide(c.previous_failed_jobs, nullif(s.n, 0)) AS previous_failed_jobs_per_week
        FROM sites s
        JOIN causes c ON c.site = s.site
        WHERE c.failed_jobs > 0 OR c.previous_failed_jobs > 0
        ORDER BY report_site, badput_core_hours DESC NULLS LAST, failed_jobs DESC, cause
        """,
    ),
    Query(
        "site_job_length",
        "The grid's job length advice for the job types the site ran this week, with the site's "
        "core-hours and the share of them the optimal length would save.",
        """
        WITH mine AS (
          SELECT site, job_type, sum(core_hours) AS site_core_hours
          FROM grid.site_jobtype_efficiency_weekly
          WHERE week = :week
          GROUP BY site, job_type
        )
        SELECT m.site AS report_site, a.job_type, m.site_core_hours, a.init_seconds,
          a.hazard_per_hour, a.current_median_hours, a.optimal_hours, a.current_useful_fraction,
          a.expected_useful_fraction,
          m.site_core_hours * (1 - try_divide(a.current_useful_fraction,
                                              a.expected_useful_fraction))
            AS site_core_hours_saved
        FROM mine m JOIN grid.job_length_advice a ON a.job_type = m.job_type
        ORDER BY report_site, site_core_hours_saved DESC NULLS LAST, a.job_type
        """,
    ),
    Query(
        "site_cpu_models",
        "The site's CPU models (all job types together): how much slower they run here than "
        "elsewhere, and their measured speed against the declared benchmark.",
        _top(
            """
            SELECT s.site AS report_site, s.cpu_model, s.slowdown,
              s.ci_low AS slowdown_ci_low, s.ci_high AS slowdown_ci_high,
              s.flagged AS slow_here, s.n_jobs AS site_jobs, b.benchmark_factor, b.speed_factor,
              b.ratio, b.ratio_ci_low, b.ratio_ci_high, b.flagged AS benchmark_mismatch,
              b.reference_model, j.job_types AS mismatch_job_types,
              j.min_ratio AS mismatch_min_ratio
            FROM grid.site_speed_anomalies s
            LEFT JOIN grid.benchmark_mismatch b
              ON b.job_type = 'ALL' AND b.cpu_model = s.cpu_model
              AND b.reference_model = s.reference_model
            LEFT JOIN (
              SELECT cpu_model, reference_model,
                array_join(sort_array(collect_set(job_type)), ', ') AS job_types,
                min(ratio) AS min_ratio
              FROM grid.benchmark_mismatch
              WHERE flagged AND job_type <> 'ALL'
              GROUP BY cpu_model, reference_model
            ) j ON j.cpu_model = s.cpu_model AND j.reference_model = s.reference_model
            WHERE s.job_type = 'ALL' AND s.cpu_model <> 'ALL'
            """,
            "site_jobs DESC, cpu_model",
            20,
        ),
    ),
    Query(
        "site_speed_term",
        "The site term over all its CPU models: CPU time per event relative to the median site.",
        _top(
            """
            SELECT site AS report_site, slowdown, ci_low, ci_high, flagged, n_jobs, group_id
            FROM grid.site_speed_anomalies
            WHERE job_type = 'ALL' AND cpu_model = 'ALL'
            """,
            "group_id",
            1,
        ),
    ),
    Query(
        "site_io_weeks",
        "The site's I/O and memory stress per week of the trend window.",
        f"""
        SELECT site AS report_site, week, monitored_hosts, host_hours, saturated_share,
          disk_saturated_share, memory_pressure_share, classified_core_hours, share_cpu_bound,
          share_io_wait_bound, share_memory_bound, share_remote_read_bound, share_init_dominated,
          share_mixed, share_idle_or_stalled,
          lost_core_hours_io_wait_bound + lost_core_hours_memory_bound
            + lost_core_hours_remote_read_bound + lost_core_hours_init_dominated
            + lost_core_hours_mixed + coalesce(lost_core_hours_idle_or_stalled, 0.0)
            AS lost_core_hours
        FROM grid.site_io_stress_weekly
        WHERE {_WINDOW}
        ORDER BY report_site, week
        """,
    ),
    Query(
        "site_io_headline",
        "One row: this week's stress shares against the mean of the previous weeks'.",
        f"""
        SELECT site AS report_site,
          max(CASE WHEN week = :week THEN share_io_wait_bound END) AS io_wait_share,
          avg(CASE WHEN week < :week THEN share_io_wait_bound END) AS previous_io_wait_share,
          max(CASE WHEN week = :week THEN share_memory_bound END) AS memory_share,
          avg(CASE WHEN week < :week THEN share_memory_bound END) AS previous_memory_share,
          max(CASE WHEN week = :week THEN share_remote_read_bound END) AS remote_read_share,
          max(CASE WHEN week = :week THEN saturated_share END) AS saturated_share,
          avg(CASE WHEN week < :week THEN saturated_share END) AS previous_saturated_share,
          max(CASE WHEN week = :week THEN monitored_hosts END) AS monitored_hosts
        FROM grid.site_io_stress_weekly
        WHERE {_WINDOW}
        GROUP BY site
        ORDER BY report_site
        """,
    ),
    Query(
        "site_saturated_hosts",
        "The site's monitored hosts this week: hours with samples and hours saturated.",
        _top(
            """
            SELECT site AS report_site, host, count(*) AS hours,
              count_if(saturated) AS saturated_hours,
              count_if(disk_saturated) AS disk_saturated_hours,
              count_if(memory_pressure) AS memory_pressure_hours,
              max(disk_util_p95) AS disk_util_p95_max
            FROM grid.node_saturation
            WHERE week = :week
            GROUP BY site, host
            """,
            "saturated_hours DESC, host",
            15,
        ),
    ),
    Query(
        "site_network_paths",
        "Paths from and to the site this week: cost of moving 1 GB, loss, congestion, and the "
        "cost the week before.",
        _top(
            """
            WITH c AS (
              SELECT * FROM grid.network_cost_matrix
              WHERE week = :week AND src_site <> dst_site
            ),
            sides AS (
              SELECT src_site AS report_site, 'outgoing' AS direction, dst_site AS peer,
                src_site, dst_site, cost_seconds_per_gb, delay_median_ms, rtt_ms, loss_mean,
                congested_share, throughput_median_bps, source_rank
              FROM c
              UNION ALL
              SELECT dst_site AS report_site, 'incoming' AS direction, src_site AS peer,
                src_site, dst_site, cost_seconds_per_gb, delay_median_ms, rtt_ms, loss_mean,
                congested_share, throughput_median_bps, source_rank
              FROM c
            )
            SELECT s.report_site, s.direction, s.peer, s.cost_seconds_per_gb,
              p.cost_seconds_per_gb AS previous_cost_seconds_per_gb,
              s.delay_median_ms, s.rtt_ms, s.loss_mean, s.congested_share,
              s.throughput_median_bps, s.source_rank
            FROM sides s
            LEFT JOIN grid.network_cost_matrix p
              ON p.src_site = s.src_site AND p.dst_site = s.dst_site
              AND p.week = date_sub(:week, 7)
            """,
            "direction, peer",
            200,
        ),
    ),
    Query(
        "site_network_headline",
        "One row: median cost per GB to and from the site this week and the week before, and "
        "the paths congested more than a tenth of the time.",
        """
        WITH c AS (
          SELECT * FROM grid.network_cost_matrix
          WHERE week BETWEEN date_sub(:week, 7) AND :week AND src_site <> dst_site
        ),
        sides AS (
          SELECT src_site AS report_site, 'outgoing' AS side, week, cost_seconds_per_gb,
            congested_share
          FROM c
          UNION ALL
          SELECT dst_site AS report_site, 'incoming' AS side, week, cost_seconds_per_gb,
            congested_share
          FROM c
        )
        SELECT report_site,
          percentile(CASE WHEN week = :week AND side = 'incoming' THEN cost_seconds_per_gb END,
                     0.5) AS incoming_cost,
          percentile(CASE WHEN week < :week AND side = 'incoming' THEN cost_seconds_per_gb END,
                     0.5) AS previous_incoming_cost,
          percentile(CASE WHEN week = :week AND side = 'outgoing' THEN cost_seconds_per_gb END,
                     0.5) AS outgoing_cost,
          percentile(CASE WHEN week < :week AND side = 'outgoing' THEN cost_seconds_per_gb END,
                     0.5) AS previous_outgoing_cost,
          count_if(week = :week AND congested_share > 0.1) AS congested_paths,
          count_if(week = :week) AS paths
        FROM sides
        GROUP BY report_site
        ORDER BY report_site
        """,
    ),
    Query(
        "site_network_alarms",
        "Network alarms on paths from or to the site that were open during the week.",
        _top(
            """
            WITH a AS (
              SELECT * FROM grid.network_alarms
              WHERE start_ts < date_add(:week, 7) AND coalesce(end_ts, start_ts) >= :week
            )
            SELECT src_site AS report_site, kind, src_site, dst_site, start_ts, end_ts, value
            FROM a
            UNION ALL
            SELECT dst_site AS report_site, kind, src_site, dst_site, start_ts, end_ts, value
            FROM a WHERE NOT dst_site <=> src_site
            """,
            "start_ts, kind, src_site, dst_site",
            50,
        ),
    ),
    Query(
        "site_outliers",
        "The site's entries in this week's outlier list, strongest first.",
        _top(
            """
            SELECT entity_value AS report_site, job_type, metric, value, baseline,
              deviation_pct, robust_z, comparison, rule_id, n_jobs, evidence
            FROM grid.efficiency_outliers
            WHERE entity = 'site' AND week = :week
            """,
            "abs(robust_z) DESC, job_type, metric, rule_id",
            30,
        ),
    ),
    Query(
        "site_outlier_weeks",
        "Outlier entries of the site per week of the trend window (weeks with none included).",
        f"""
        SELECT w.site AS report_site, w.week, count(o.rule_id) AS outliers
        FROM (SELECT DISTINCT site, week FROM grid.site_efficiency_weekly WHERE {_WINDOW}) w
        LEFT JOIN grid.efficiency_outliers o
          ON o.week = w.week AND o.entity = 'site' AND o.entity_value = w.site
        GROUP BY w.site, w.week
        ORDER BY report_site, w.week
        """,
    ),
    # --- grid-wide summary and index ---------------------------------------------------------
    Query(
        "week_sites",
        "The sites with jobs in the week (one report each).",
        """
        SELECT DISTINCT site FROM grid.site_efficiency_weekly WHERE week = :week ORDER BY site
        """,
    ),
    Query(
        "grid_sites",
        "Every site this week: efficiency now and over the previous weeks, badput, lost "
        "core-hours to I/O limits, outliers and network alarms.",
        f"""
        WITH eff AS (
          SELECT site,
            {_sum("jobs", "week = :week")} AS jobs,
            {_sum("core_hours", "week = :week")} AS core_hours,
            {_ratio("cpu_hours", "core_hours", "week = :week")} AS efficiency,
            {_ratio("cpu_hours", "core_hours", "week < :week")} AS previous_efficiency,
            {_ratio("badput_core_hours", "core_hours", "week = :week")} AS badput_share
          FROM grid.site_efficiency_weekly WHERE {_WINDOW}
          GROUP BY site
        ),
        io AS (
          SELECT site, lost_core_hours_io_wait_bound + lost_core_hours_memory_bound
            + lost_core_hours_remote_read_bound + lost_core_hours_init_dominated
            + lost_core_hours_mixed + coalesce(lost_core_hours_idle_or_stalled, 0.0)
            AS io_lost_core_hours, saturated_share
          FROM grid.site_io_stress_weekly WHERE week = :week
        ),
        outl AS (
          SELECT entity_value AS site, count(*) AS outliers FROM grid.efficiency_outliers
          WHERE week = :week AND entity = 'site' GROUP BY entity_value
        ),
        alarms AS (
          SELECT site, count(*) AS alarms FROM (
            SELECT explode(array_distinct(filter(array(src_site, dst_site), x -> x IS NOT NULL)))
              AS site
            FROM grid.network_alarms
            WHERE start_ts < date_add(:week, 7) AND coalesce(end_ts, start_ts) >= :week
          ) GROUP BY site
        )
        SELECT eff.site, eff.jobs, eff.core_hours, eff.efficiency, eff.previous_efficiency,
          eff.efficiency - eff.previous_efficiency AS efficiency_change, eff.badput_share,
          io.io_lost_core_hours, io.saturated_share, coalesce(outl.outliers, 0) AS outliers,
          coalesce(alarms.alarms, 0) AS alarms
        FROM eff
        LEFT JOIN io ON io.site = eff.site
        LEFT JOIN outl ON outl.site = eff.site
        LEFT JOIN alarms ON alarms.site = eff.site
        WHERE eff.jobs > 0
        ORDER BY eff.efficiency, eff.site
        """,
    ),
    Query(
        "grid_headline",
        "One row: the grid this week against its previous weeks.",
        f"""
        SELECT *, efficiency - previous_efficiency AS efficiency_change,
          badput_share - previous_badput_share AS badput_share_change
        FROM (
          SELECT
            count(DISTINCT CASE WHEN week = :week THEN site END) AS sites,
            {_sum("jobs", _GRID)} AS jobs,
            {_sum("core_hours", _GRID)} AS core_hours,
            {_ratio("cpu_hours", "core_hours", _GRID)} AS efficiency,
            {_ratio("cpu_hours", "core_hours", "week < :week")} AS previous_efficiency,
            {_ratio("badput_core_hours", "core_hours", _GRID)} AS badput_share,
            {_ratio("badput_core_hours", "core_hours", "week < :week")} AS previous_badput_share,
            count(DISTINCT CASE WHEN week < :week THEN week END) AS previous_weeks
          FROM grid.site_efficiency_weekly
          WHERE {_WINDOW}
        )
        """,
    ),
    Query(
        "grid_weeks",
        "The grid per week of the trend window.",
        f"""
        SELECT week, try_divide(sum(cpu_hours), sum(core_hours)) AS efficiency,
          try_divide(sum(badput_core_hours), sum(core_hours)) AS badput_share,
          sum(core_hours) AS core_hours
        FROM grid.site_efficiency_weekly
        WHERE {_WINDOW}
        GROUP BY week
        ORDER BY week
        """,
    ),
    Query(
        "grid_failure_modes",
        "Wasted core-hours this week by site and failure mode.",
        """
        SELECT site, failure_mode, sum(failed_jobs) AS failed_jobs,
          sum(wasted_core_hours) AS wasted_core_hours
        FROM grid.site_failure_modes_weekly
        WHERE week = :week
        GROUP BY site, failure_mode
        ORDER BY site, failure_mode
        """,
    ),
    Query(
        "grid_io_lost",
        "Core-hours lost to each limit this week, by site.",
        """
        SELECT site, lost_core_hours_io_wait_bound AS io_wait_bound,
          lost_core_hours_memory_bound AS memory_bound,
          lost_core_hours_remote_read_bound AS remote_read_bound,
          lost_core_hours_init_dominated AS init_dominated, lost_core_hours_mixed AS mixed,
          coalesce(lost_core_hours_idle_or_stalled, 0.0) AS idle_or_stalled, saturated_share
        FROM grid.site_io_stress_weekly
        WHERE week = :week
        ORDER BY site
        """,
    ),
    Query(
        "grid_alarms",
        "Network alarms open during the week, by kind.",
        """
        SELECT kind, count(*) AS alarms,
          count(DISTINCT concat_ws('>', src_site, dst_site)) AS paths
        FROM grid.network_alarms
        WHERE start_ts < date_add(:week, 7) AND coalesce(end_ts, start_ts) >= :week
        GROUP BY kind
        ORDER BY alarms DESC, kind
        """,
    ),
    Query(
        "grid_costly_paths",
        "The most expensive paths of the week (seconds to move 1 GB).",
        """
        SELECT src_site, dst_site, cost_seconds_per_gb, loss_mean, congested_share
        FROM grid.network_cost_matrix
        WHERE week = :week AND cost_seconds_per_gb IS NOT NULL AND src_site <> dst_site
        ORDER BY cost_seconds_per_gb DESC, src_site, dst_site
        LIMIT 12
        """,
    ),
    Query(
        "grid_outliers",
        "This week's outlier list (every entity), strongest first.",
        """
        SELECT entity, entity_value, job_type, metric, deviation_pct, robust_z, comparison,
          rule_id
        FROM grid.efficiency_outliers
        WHERE week = :week
        ORDER BY abs(robust_z) DESC, entity, entity_value, job_type, metric, rule_id
        LIMIT 40
        """,
    ),
    Query(
        "grid_benchmark",
        "Measured speed against the declared benchmark per CPU model (all job types together), "
        "and every (model, job type) the benchmark mispredicts; mismatches first.",
        """
        SELECT cpu_model, job_type, microarchitecture, benchmark_factor, speed_factor, ratio,
          ratio_ci_low, ratio_ci_high, flagged, n_jobs
        FROM grid.benchmark_mismatch
        WHERE job_type = 'ALL' OR flagged
        ORDER BY flagged DESC, abs(ratio - 1) DESC, cpu_model, job_type
        LIMIT 24
        """,
    ),
)

QUERIES: dict[str, Query] = {q.name: q for q in _QUERIES}


SITE_KEY = "report_site"  # the column a site query answers every site in
_HIDDEN = (SITE_KEY, "report_rank")


def _execute(spark: SparkSession, query: Query, views: str, params: dict[str, Any]) -> list[dict]:
    sql = query.sql if views == VIEWS else query.sql.replace(f"{VIEWS}.", f"{views}.")
    args = {k: v for k, v in params.items() if f":{k}" in query.sql}
    if ":week" in query.sql and "week" not in args:
        raise ValueError(f"query {query.name} needs week")
    if "week" in args and not isinstance(args["week"], date):
        raise TypeError("week must be a datetime.date (the Monday of the ISO week)")
    return [r.asDict() for r in spark.sql(sql, args=args).collect()]


def is_site_query(name: str) -> bool:
    return name.startswith("site_")


def run_all_sites(
    spark: SparkSession, name: str, views: str = VIEWS, **params: Any
) -> dict[str, list[dict[str, Any]]]:
    """Rows of site query ``name`` for every site at once: {site: its rows, in the query's
    order, without ``report_site`` / ``report_rank``}. One Spark query whatever the sites."""
    if not is_site_query(name):
        raise ValueError(f"query {name} is not a site query")
    by_site: dict[str, list[dict[str, Any]]] = {}
    for row in _execute(spark, QUERIES[name], views, params):
        site = row[SITE_KEY]
        by_site.setdefault(site, []).append({k: v for k, v in row.items() if k not in _HIDDEN})
    return by_site


def run(spark: SparkSession, name: str, views: str = VIEWS, **params: Any) -> list[dict[str, Any]]:
    """Rows of query ``name`` as dicts (small by construction: see the module docstring).

    A site query (``site_*``) needs ``site``: its rows are that site's of
    :func:`run_all_sites` (a report of many sites asks that once per week instead).
    ``views`` names the database holding the views (``grid``; the tests point it at
    ``global_temp`` views of hand-made rows).
    """
    if is_site_query(name):
        site = params.pop("site", None)
        if site is None:
            raise ValueError(f"query {name} needs site")
        return run_all_sites(spark, name, views, **params).get(site, [])
    return _execute(spark, QUERIES[name], views, params)
