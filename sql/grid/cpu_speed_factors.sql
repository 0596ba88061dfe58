-- grid.cpu_speed_factors: generated from gold.cpu_speed_factors's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type (or 'ALL') and cpu_model in a connected group of that fit.
CREATE OR REPLACE VIEW grid.cpu_speed_factors (
  `cpu_model` COMMENT 'CPU model string as reported by the jobs (/proc/cpuinfo)',
  `microarchitecture` COMMENT 'Most frequent microarchitecture of the model\'s jobs',
  `job_type` COMMENT 'Job type of the fit, or ALL for all job types together',
  `speed_factor` COMMENT 'exp(-b): speed relative to the group\'s reference model',
  `ci_low` COMMENT '2.5 percentile of the bootstrap replicates\' speed factor',
  `ci_high` COMMENT '97.5 percentile of the bootstrap replicates\' speed factor',
  `n_jobs` COMMENT 'Jobs of the model in the fit (informative tasks, screened)',
  `n_tasks` COMMENT 'Tasks that ran on this model and at least one other model',
  `core_hours` COMMENT 'Core-hours of those jobs (chooses the default reference)',
  `group_id` COMMENT 'Connected group of the task-model graph (1 = most core-hours)',
  `reference_model` COMMENT 'The group\'s reference model (speed factor 1.0)',
  `iterations` COMMENT 'Iterations of the alternating fit until convergence',
  `converged` COMMENT 'False when the fit stopped at max_iterations',
  `n_replicates` COMMENT 'Bootstrap replicates in which the factor was identified'
)
COMMENT 'Relative CPU speed of each CPU model fitted from real jobs: log(CPU seconds per event) = task term + model term over successful jobs, speed factor = exp(-model term), 1.0 for the reference model of each connected group; bootstrap intervals over tasks. Grain: one row per job_type (or \'ALL\') and cpu_model in a connected group of that fit.'
AS SELECT `cpu_model`,
       `microarchitecture`,
       `job_type`,
       `speed_factor`,
       `ci_low`,
       `ci_high`,
       `n_jobs`,
       `n_tasks`,
       `core_hours`,
       `group_id`,
       `reference_model`,
       `iterations`,
       `converged`,
       `n_replicates`
FROM gold.cpu_speed_factors
