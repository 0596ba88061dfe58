-- grid.cpu_model_efficiency: generated from gold.cpu_model_efficiency's definition by `gridlake docs`; do not edit.
-- Grain: one row per microarchitecture, cpu_model_norm and job_type.
CREATE OR REPLACE VIEW grid.cpu_model_efficiency (
  `microarchitecture` COMMENT 'e.g. Haswell, Zen 2; null when unknown',
  `cpu_model_norm` COMMENT 'Normalised CPU model (silver cpu_model_norm)',
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `jobs` COMMENT 'Job attempts',
  `core_hours` COMMENT 'sum(wall_seconds x cores) / 3600',
  `cpu_hours` COMMENT 'sum(cpu_seconds) / 3600',
  `cpu_efficiency` COMMENT 'cpu_hours / core_hours (ratio of sums)',
  `jobs_with_events` COMMENT 'Successful attempts with events > 0',
  `median_cpu_seconds_per_event` COMMENT 'Median of cpu_seconds / events over successful attempts with events > 0 (exact over the values rounded to 1 % on the log scale: within 0.5 %)',
  `p90_cpu_seconds_per_event` COMMENT '90th percentile of cpu_seconds / events, same attempts (same rounding)',
  `median_hs23_seconds_per_event` COMMENT 'Median of cpu_seconds x hs23_per_core / events (HS23-normalised CPU seconds per event), same attempts with a known HS23 (same rounding)'
)
COMMENT 'CPU efficiency and CPU seconds per event by CPU model and job type, over every attempt in silver (per-event figures from successful attempts with events > 0). Grain: one row per microarchitecture, cpu_model_norm and job_type.'
AS SELECT `microarchitecture`,
       `cpu_model_norm`,
       `job_type`,
       `jobs`,
       `core_hours`,
       `cpu_hours`,
       `cpu_efficiency`,
       `jobs_with_events`,
       `median_cpu_seconds_per_event`,
       `p90_cpu_seconds_per_event`,
       `median_hs23_seconds_per_event`
FROM gold.cpu_model_efficiency
