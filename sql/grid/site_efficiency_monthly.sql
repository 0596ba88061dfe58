-- grid.site_efficiency_monthly: generated from gold.site_efficiency_monthly's definition by `gridlake docs`; do not edit.
-- Grain: one row per month, site and vo (from either source or both).
CREATE OR REPLACE VIEW grid.site_efficiency_monthly (
  `month` COMMENT 'First day of the month (summary Month/Year; job end_time UTC)',
  `site` COMMENT 'Grid site',
  `vo` COMMENT 'Virtual organisation (null when the summary names none)',
  `summary_records` COMMENT 'APEL summary records in the group',
  `summary_jobs` COMMENT 'sum(NumberOfJobs) of the summaries',
  `summary_core_hours` COMMENT 'sum(WallDuration x Processors) / 3600 of the summaries (Processors 1 when unknown)',
  `summary_cpu_hours` COMMENT 'sum(CpuDuration) / 3600 of the summaries',
  `summary_cpu_efficiency` COMMENT 'summary_cpu_hours / summary_core_hours (ratio of sums)',
  `summary_normalised_wall_hours` COMMENT 'sum(NormalisedWallDuration) / 3600 as APEL reports it (HS06-hours)',
  `robot_core_hours` COMMENT 'summary_core_hours of records whose GlobalUserName contains \'CN=Robot:\' (0 if none)',
  `robot_cpu_hours` COMMENT 'summary_cpu_hours of those robot records',
  `summary_cpu_efficiency_without_robots` COMMENT 'CPU efficiency of the summaries leaving the robot records out',
  `jobs` COMMENT 'Per-job path: attempts in silver.jobs that ended in the month',
  `core_hours` COMMENT 'Per-job path: sum(wall_seconds x cores) / 3600',
  `cpu_hours` COMMENT 'Per-job path: sum(cpu_seconds) / 3600',
  `cpu_efficiency` COMMENT 'Per-job path: cpu_hours / core_hours',
  `job_coverage` COMMENT 'core_hours / summary_core_hours: the share of the summarised work the per-job records account for (null when either side is missing)'
)
COMMENT 'Monthly CPU efficiency per site and VO from the APEL summaries (silver.accounting_summaries) beside the same month from the per-job path (silver.jobs); ratios of sums. Robot-certificate work is also shown apart. Grain: one row per month, site and vo (from either source or both).'
AS SELECT `month`,
       `site`,
       `vo`,
       `summary_records`,
       `summary_jobs`,
       `summary_core_hours`,
       `summary_cpu_hours`,
       `summary_cpu_efficiency`,
       `summary_normalised_wall_hours`,
       `robot_core_hours`,
       `robot_cpu_hours`,
       `summary_cpu_efficiency_without_robots`,
       `jobs`,
       `core_hours`,
       `cpu_hours`,
       `cpu_efficiency`,
       `job_coverage`
FROM gold.site_efficiency_monthly
