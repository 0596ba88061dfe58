-- grid.job_length_advice: generated from gold.job_length_advice's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type.
CREATE OR REPLACE VIEW grid.job_length_advice (
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `n_jobs` COMMENT 'Job attempts of the job type',
  `n_init_groups` COMMENT '(task_id, cpu_model, site) groups with >= 3 successful attempts and varying events that gave an intercept',
  `init_seconds` COMMENT 'I: weighted mean over the groups of the intercept of wall_seconds vs events (successful attempts, events > 0), weights = the group\'s information on its intercept / its task\'s mean wall-clock squared; floored at 0; null when no group qualifies',
  `hazard_failures` COMMENT 'Failed attempts of non-start failure modes',
  `hazard_per_hour` COMMENT 'h: hazard_failures / wall-hours of all attempts of the job type',
  `optimal_hours` COMMENT 'T* maximising U, searched in [1 min, 200 h] (200 h when h = 0)',
  `expected_useful_fraction` COMMENT 'U(T*)',
  `current_median_hours` COMMENT 'Median of (wall_seconds - I) over successful attempts, hours',
  `current_useful_fraction` COMMENT 'U at current_median_hours',
  `core_hours_per_year` COMMENT 'Core-hours of the job type scaled to 365 days by the span of end_time of the input',
  `core_hours_saved_per_year` COMMENT 'core_hours_per_year x (1 - current_useful_fraction / expected_useful_fraction)'
)
COMMENT 'Optimal job length per job type under the model: initialisation I, then payload T; duration-dependent failures at constant hazard h over I+T (START_FAILURE_MODES excluded). Useful work per wall-clock U(T) = h T / (exp(h (I+T)) - 1), -> T / (I+T) as h -> 0. Grain: one row per job_type.'
AS SELECT `job_type`,
       `n_jobs`,
       `n_init_groups`,
       `init_seconds`,
       `hazard_failures`,
       `hazard_per_hour`,
       `optimal_hours`,
       `expected_useful_fraction`,
       `current_median_hours`,
       `current_useful_fraction`,
       `core_hours_per_year`,
       `core_hours_saved_per_year`
FROM gold.job_length_advice
