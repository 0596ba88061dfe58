-- grid.site_efficiency_weekly: CPU efficiency per ISO week, site and VO.
-- Grain: one row per (week, site, vo). Ratios of sums over every job attempt, outliers included.
CREATE OR REPLACE VIEW grid.site_efficiency_weekly (
  week COMMENT 'Monday of the ISO week of the jobs end_time (UTC)',
  site COMMENT 'Grid site',
  vo COMMENT 'Virtual organisation',
  jobs COMMENT 'Job attempts that ended in the week',
  failed_jobs COMMENT 'Attempts with status failed',
  outlier_jobs COMMENT 'Attempts with CPU above wall x cores x 1.05',
  core_hours COMMENT 'sum(wall_seconds x cores) / 3600',
  cpu_hours COMMENT 'sum(user + system CPU seconds) / 3600',
  cpu_efficiency COMMENT 'cpu_hours / core_hours',
  good_cpu_over_all_wall COMMENT 'CPU hours of successful attempts / core-hours of all attempts',
  wasted_core_hours COMMENT 'Core-hours of failed attempts'
)
COMMENT 'CPU efficiency per ISO week, site and VO. Grain: one row per (week, site, vo).'
AS SELECT week, site, vo, jobs, failed_jobs, outlier_jobs, core_hours, cpu_hours, cpu_efficiency,
          good_cpu_over_all_wall, wasted_core_hours
FROM gold.site_efficiency_weekly
