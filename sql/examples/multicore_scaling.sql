-- Question: For job types run with more than one core count, how does CPU efficiency change with
--   the number of cores?
-- Views: grid.multicore_scaling
-- Successful attempts only (failures would mix failure effects into scaling).
SELECT job_type,
       cores,
       jobs,
       round(cpu_efficiency, 4) AS cpu_efficiency,
       round(cpu_efficiency / first_value(cpu_efficiency) OVER (
         PARTITION BY job_type ORDER BY cores), 4) AS relative_to_fewest_cores
FROM grid.multicore_scaling
WHERE job_type IN (SELECT job_type FROM grid.multicore_scaling GROUP BY job_type
                   HAVING count(DISTINCT cores) > 1)
ORDER BY job_type, cores
