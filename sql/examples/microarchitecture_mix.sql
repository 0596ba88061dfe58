-- Question: What share of the grid's core-hours ran on each CPU microarchitecture, and how
--   efficient was each?
-- Views: grid.cpu_model_efficiency
SELECT coalesce(microarchitecture, 'unknown') AS microarchitecture,
       round(sum(core_hours), 1) AS core_hours,
       round(sum(core_hours) / sum(sum(core_hours)) OVER (), 4) AS core_hour_share,
       round(sum(cpu_hours) / sum(core_hours), 4) AS cpu_efficiency
FROM grid.cpu_model_efficiency
GROUP BY coalesce(microarchitecture, 'unknown')
ORDER BY core_hours DESC
