-- grid.site_failure_modes_weekly: generated from gold.site_failure_modes_weekly's definition by `gridlake docs`; do not edit.
-- Grain: one row per week, site, job_type and failure_mode with at least one failed attempt.
CREATE OR REPLACE VIEW grid.site_failure_modes_weekly (
  `week` COMMENT 'Monday of the ISO week of the jobs\' end_time (UTC)',
  `site` COMMENT 'Grid site',
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `failure_mode` COMMENT 'Failure class (stage-in, lost-heartbeat, memory, app-crash, ...); \'unknown\' when a failed attempt names none',
  `failed_jobs` COMMENT 'Failed attempts with this failure mode',
  `wasted_core_hours` COMMENT 'Core-hours (wall x cores) of those attempts',
  `retried_jobs` COMMENT 'Of those, attempts retried (another attempt\'s retry_of)',
  `attempts` COMMENT 'Every attempt of the site, job type and week',
  `failure_rate` COMMENT 'failed_jobs / attempts'
)
COMMENT 'Failed attempts and the core-hours they wasted per site, job type and failure mode per ISO week (every attempt in silver, outliers included), beside the attempts of the same site, job type and week. Grain: one row per week, site, job_type and failure_mode with at least one failed attempt.'
AS SELECT `week`,
       `site`,
       `job_type`,
       `failure_mode`,
       `failed_jobs`,
       `wasted_core_hours`,
       `retried_jobs`,
       `attempts`,
       `failure_rate`
FROM gold.site_failure_modes_weekly
