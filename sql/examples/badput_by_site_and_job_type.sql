-- Question: Where did failed attempts waste the most core-hours this week (top 5 site and job type
--   pairs), and what share of the pair's core-hours was that?
-- Views: grid.site_jobtype_efficiency_weekly
SELECT site,
       job_type,
       round(sum(badput_core_hours), 2) AS badput_core_hours,
       round(sum(badput_core_hours) / sum(core_hours), 4) AS badput_share,
       sum(failed_jobs) AS failed_jobs
FROM grid.site_jobtype_efficiency_weekly
WHERE week = (SELECT max(week) FROM grid.site_jobtype_efficiency_weekly)
GROUP BY site, job_type
ORDER BY badput_core_hours DESC, site, job_type
LIMIT 5
