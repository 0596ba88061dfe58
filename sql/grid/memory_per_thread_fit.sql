-- grid.memory_per_thread_fit: generated from gold.memory_per_thread_fit's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type.
CREATE OR REPLACE VIEW grid.memory_per_thread_fit (
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `base_mb` COMMENT 'Fitted peak RSS of a single-thread job, MB',
  `base_mb_low` COMMENT 'Lower bound of base_mb\'s 95 % interval',
  `base_mb_high` COMMENT 'Upper bound of base_mb\'s 95 % interval',
  `per_thread_mb` COMMENT 'Fitted extra peak RSS per extra thread, MB; null with one core count',
  `per_thread_mb_low` COMMENT 'Lower bound of per_thread_mb\'s 95 % interval',
  `per_thread_mb_high` COMMENT 'Upper bound of per_thread_mb\'s 95 % interval',
  `saved_mb_8_threads` COMMENT 'Memory one 8-thread job saves against eight single-thread jobs: 7 x (base_mb - per_thread_mb); null with one core count',
  `saved_fraction_8_threads` COMMENT 'saved_mb_8_threads / (8 x base_mb)',
  `jobs` COMMENT 'Successful attempts in the fit',
  `tasks` COMMENT 'Distinct task_id among them (clusters of the errors)',
  `screened_jobs` COMMENT 'Attempts screened out (RSS beyond 5 robust SD)',
  `n_core_counts` COMMENT 'Distinct core counts in the fit',
  `max_cores` COMMENT 'Largest core count in the fit'
)
COMMENT 'Peak RSS = base_mb + per_thread_mb x (threads - 1), threads = cores allocated, fitted by least squares over the successful attempts with a peak RSS (per ISO week, job type and core count, jobs beyond 5 robust standard deviations of the median RSS screened out first); intervals are +-1.96 standard errors, cluster-robust by task. One N-thread job instead of N single-thread jobs saves N x base_mb - (base_mb + (N-1) x per_thread_mb) = (N-1) x (base_mb - per_thread_mb) (seed 002: 8 threads in 4.1 GB against 14.2 GB). Grain: one row per job_type.'
AS SELECT `job_type`,
       `base_mb`,
       `base_mb_low`,
       `base_mb_high`,
       `per_thread_mb`,
       `per_thread_mb_low`,
       `per_thread_mb_high`,
       `saved_mb_8_threads`,
       `saved_fraction_8_threads`,
       `jobs`,
       `tasks`,
       `screened_jobs`,
       `n_core_counts`,
       `max_cores`
FROM gold.memory_per_thread_fit
