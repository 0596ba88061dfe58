-- grid.benchmark_mismatch: generated from gold.benchmark_mismatch's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type (or 'ALL') and cpu_model with a speed factor and a declared HS23.
CREATE OR REPLACE VIEW grid.benchmark_mismatch (
  `job_type` COMMENT 'Job type of the fit, or ALL',
  `cpu_model` COMMENT 'CPU model',
  `microarchitecture` COMMENT 'Microarchitecture of the model',
  `reference_model` COMMENT 'The group\'s reference model',
  `hs23_per_core` COMMENT 'Median declared HS23 per core of the model\'s jobs',
  `benchmark_factor` COMMENT 'hs23_per_core / hs23_per_core of the reference',
  `speed_factor` COMMENT 'Measured speed factor (gold.cpu_speed_factors)',
  `ratio` COMMENT 'speed_factor / benchmark_factor (1 = benchmark predicts jobs)',
  `ratio_ci_low` COMMENT 'ci_low / benchmark_factor',
  `ratio_ci_high` COMMENT 'ci_high / benchmark_factor',
  `margin` COMMENT 'Tolerated relative mismatch',
  `flagged` COMMENT 'Interval entirely below 1 - margin or above 1 + margin',
  `n_jobs` COMMENT 'Jobs of the model in the fit'
)
COMMENT 'Measured speed factor against the declared benchmark (median HS23 per core of the model\'s jobs), both relative to the group\'s reference model; flagged when the bootstrap interval of their ratio lies entirely outside [1 - margin, 1 + margin]. Grain: one row per job_type (or \'ALL\') and cpu_model with a speed factor and a declared HS23.'
AS SELECT `job_type`,
       `cpu_model`,
       `microarchitecture`,
       `reference_model`,
       `hs23_per_core`,
       `benchmark_factor`,
       `speed_factor`,
       `ratio`,
       `ratio_ci_low`,
       `ratio_ci_high`,
       `margin`,
       `flagged`,
       `n_jobs`
FROM gold.benchmark_mismatch
