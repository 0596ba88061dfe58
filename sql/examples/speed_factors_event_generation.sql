-- Question: How fast is each CPU model for event generation relative to the reference model, with
--   the 95% bootstrap interval, fastest first?
-- Views: grid.cpu_speed_factors
-- Fitted from real jobs: log(CPU seconds per event) = task term + model term; 1.0 = reference.
SELECT cpu_model,
       microarchitecture,
       round(speed_factor, 3) AS speed_factor,
       round(ci_low, 3) AS ci_low,
       round(ci_high, 3) AS ci_high,
       n_jobs,
       reference_model
FROM grid.cpu_speed_factors
WHERE job_type = 'evgen'
ORDER BY speed_factor DESC, cpu_model
