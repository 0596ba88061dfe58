-- Question: How many core-hours did each VO use this week, at how many sites, and how efficiently?
-- Views: grid.site_efficiency_weekly
SELECT vo,
       count(DISTINCT site) AS sites,
       sum(jobs) AS jobs,
       round(sum(core_hours), 1) AS core_hours,
       round(sum(cpu_hours) / sum(core_hours), 4) AS cpu_efficiency,
       round(sum(failed_jobs) / sum(jobs), 4) AS failure_rate
FROM grid.site_efficiency_weekly
WHERE week = (SELECT max(week) FROM grid.site_efficiency_weekly)
GROUP BY vo
ORDER BY core_hours DESC
