-- Question: Which sites' pile-up (job type pile) efficiency this week is more than 10 points below
--   that of all the other sites together?
-- Views: grid.site_jobtype_efficiency_weekly
-- The comparison is against the other sites' jobs pooled (ratio of sums), so a small site cannot
-- hide in an average of averages; points = percentage points of CPU efficiency.
WITH this_week AS (
  SELECT site, sum(cpu_hours) AS cpu_hours, sum(core_hours) AS core_hours
  FROM grid.site_jobtype_efficiency_weekly
  WHERE job_type = 'pile'
    AND week = (SELECT max(week) FROM grid.site_jobtype_efficiency_weekly)
  GROUP BY site
),
compared AS (
  SELECT site,
         cpu_hours / core_hours AS efficiency,
         (sum(cpu_hours) OVER () - cpu_hours) / (sum(core_hours) OVER () - core_hours)
           AS other_sites_efficiency
  FROM this_week
)
SELECT site,
       round(100 * efficiency, 1) AS efficiency_pct,
       round(100 * other_sites_efficiency, 1) AS other_sites_pct,
       round(100 * (other_sites_efficiency - efficiency), 1) AS points_below
FROM compared
WHERE other_sites_efficiency - efficiency > 0.10
ORDER BY points_below DESC
