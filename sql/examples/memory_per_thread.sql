-- Question: How much memory does each extra thread cost per job type, and how much would one
--   4-thread job save against four single-thread jobs?
-- Views: grid.memory_per_thread_fit
-- Peak RSS = base_mb + per_thread_mb x (threads - 1), successful attempts; job types run on one
-- core count have no per-thread figure and are left out.
SELECT job_type,
       round(base_mb, 1) AS base_mb,
       round(per_thread_mb, 1) AS per_thread_mb,
       round(per_thread_mb_low, 1) AS per_thread_mb_low,
       round(per_thread_mb_high, 1) AS per_thread_mb_high,
       round(3 * (base_mb - per_thread_mb), 1) AS saved_mb_4_threads,
       jobs
FROM grid.memory_per_thread_fit
WHERE per_thread_mb IS NOT NULL
ORDER BY job_type
