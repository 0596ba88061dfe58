-- Question: What failure hazard does each job type run at, how long should its jobs be, and how
--   many core-hours a year would the advised length save?
-- Views: grid.job_length_advice
-- hazard_per_hour: failures after start-up / wall-hours of all attempts; the advice needs an
-- initialisation estimate (optimal_hours is null when the job type has none).
SELECT job_type,
       n_jobs,
       hazard_failures,
       round(hazard_per_hour, 5) AS hazard_per_hour,
       round(init_seconds, 0) AS init_seconds,
       round(optimal_hours, 2) AS optimal_hours,
       round(current_median_hours, 2) AS current_median_hours,
       round(core_hours_saved_per_year, 0) AS core_hours_saved_per_year
FROM grid.job_length_advice
ORDER BY hazard_per_hour DESC, job_type
