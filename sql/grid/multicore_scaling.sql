-- grid.multicore_scaling: generated from gold.multicore_scaling's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type and cores.
CREATE OR REPLACE VIEW grid.multicore_scaling (
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `cores` COMMENT 'Cores allocated',
  `jobs` COMMENT 'Successful attempts',
  `tasks` COMMENT 'Distinct task_id (an attempt without one counts alone)',
  `core_hours` COMMENT 'sum(wall_seconds x cores) / 3600',
  `cpu_hours` COMMENT 'sum(cpu_seconds) / 3600',
  `cpu_efficiency` COMMENT 'cpu_hours / core_hours (ratio of sums)',
  `cpu_efficiency_se` COMMENT 'Standard error of cpu_efficiency, ratio-estimator linearisation clustered by task (null with fewer than 2 tasks)',
  `events_per_core_hour` COMMENT 'sum(events) / core-hours over attempts reporting events (ratio of sums)',
  `memory_per_core_mb` COMMENT 'Mean of max_rss_mb / cores'
)
COMMENT 'Efficiency, throughput and memory by number of cores, over successful attempts only (failed attempts would mix failure effects into scaling). Grain: one row per job_type and cores.'
AS SELECT `job_type`,
       `cores`,
       `jobs`,
       `tasks`,
       `core_hours`,
       `cpu_hours`,
       `cpu_efficiency`,
       `cpu_efficiency_se`,
       `events_per_core_hour`,
       `memory_per_core_mb`
FROM gold.multicore_scaling
