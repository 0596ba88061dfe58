-- Question: How CPU-efficient was each site this week (all VOs together), worst first, and what
--   share of its core-hours went to failed attempts (badput)?
-- Views: grid.site_efficiency_weekly
-- "This week" is the latest ISO week in the view. Efficiencies are ratios of sums
-- (CPU-hours / core-hours over every job), never means of the per-VO ratios.
SELECT site,
       round(sum(cpu_hours) / sum(core_hours), 4) AS cpu_efficiency,
       round(sum(badput_core_hours) / sum(core_hours), 4) AS badput_share,
       round(sum(core_hours), 1) AS core_hours,
       sum(jobs) AS jobs
FROM grid.site_efficiency_weekly
WHERE week = (SELECT max(week) FROM grid.site_efficiency_weekly)
GROUP BY site
ORDER BY cpu_efficiency, site
