-- Question: For simulation jobs, which CPU models run slower or faster than their HS23 benchmark
--   predicts, with the 95% interval of the ratio?
-- Views: grid.benchmark_mismatch
-- ratio = measured speed factor / declared HS23 ratio, both against the group's reference model;
-- flagged when the whole interval lies outside [1 - margin, 1 + margin].
SELECT cpu_model,
       microarchitecture,
       round(speed_factor, 3) AS measured_speed,
       round(benchmark_factor, 3) AS hs23_speed,
       round(ratio, 3) AS ratio,
       round(ratio_ci_low, 3) AS ratio_ci_low,
       round(ratio_ci_high, 3) AS ratio_ci_high,
       flagged,
       n_jobs
FROM grid.benchmark_mismatch
WHERE job_type = 'simul' AND cpu_model <> reference_model
ORDER BY ratio, cpu_model
