-- grid.site_efficiency_weekly: generated from gold.site_efficiency_weekly's definition by `gridlake docs`; do not edit.
-- Grain: one row per week, site and vo.
CREATE OR REPLACE VIEW grid.site_efficiency_weekly (
  `week` COMMENT 'Monday of the ISO week of the jobs\' end_time (UTC)',
  `site` COMMENT 'Grid site',
  `vo` COMMENT 'Virtual organisation',
  `jobs` COMMENT 'Job attempts that ended in the week',
  `failed_jobs` COMMENT 'Attempts with status failed',
  `outlier_jobs` COMMENT 'Attempts flagged is_outlier (CPU > wall x cores x 1.05)',
  `core_hours` COMMENT 'sum(wall_seconds x cores) / 3600',
  `cpu_hours` COMMENT 'sum(cpu_user_seconds + cpu_system_seconds) / 3600',
  `cpu_efficiency` COMMENT 'cpu_hours / core_hours (ratio of sums)',
  `good_cpu_over_all_wall` COMMENT 'CPU hours of successful attempts / core-hours of all attempts (ATLAS definition)',
  `wasted_core_hours` COMMENT 'Core-hours of failed attempts',
  `hs23_core_hours` COMMENT 'sum(hs23_per_core x wall_seconds x cores) / 3600 over attempts with a known HS23 (null when none has one)',
  `events` COMMENT 'Events of successful attempts (null when no successful attempt reports events)',
  `core_seconds_per_event` COMMENT 'Core-seconds (wall x cores) of successful attempts with events > 0 / their events (ratio of sums)',
  `badput_core_hours` COMMENT 'Core-hours of failed attempts (badput; equals wasted_core_hours, kept under the name used in job-efficiency reports)',
  `retry_waste_core_hours` COMMENT 'Core-hours of attempts that were retried (their job_id is another attempt\'s retry_of), whatever their status'
)
COMMENT 'CPU efficiency, events, badput and retry waste per site, VO and ISO week (ratios of sums over every job in silver, outliers included). Grain: one row per week, site and vo.'
AS SELECT `week`,
       `site`,
       `vo`,
       `jobs`,
       `failed_jobs`,
       `outlier_jobs`,
       `core_hours`,
       `cpu_hours`,
       `cpu_efficiency`,
       `good_cpu_over_all_wall`,
       `wasted_core_hours`,
       `hs23_core_hours`,
       `events`,
       `core_seconds_per_event`,
       `badput_core_hours`,
       `retry_waste_core_hours`
FROM gold.site_efficiency_weekly
