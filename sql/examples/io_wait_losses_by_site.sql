-- Question: Which sites lost core-hours to I/O wait this week, and how saturated were their
--   worker nodes' disks?
-- Views: grid.site_io_stress_weekly
-- Lost core-hours: core-hours x (the job type's CPU-bound efficiency - the job's efficiency) over
-- jobs classified io_wait_bound; disk_saturated_share is over host-hours with node samples.
SELECT site,
       round(lost_core_hours_io_wait_bound, 2) AS lost_core_hours_io_wait,
       round(share_io_wait_bound, 3) AS io_wait_bound_share,
       round(disk_saturated_share, 3) AS disk_saturated_share,
       round(iowait_mean, 1) AS iowait_mean_pct
FROM grid.site_io_stress_weekly
WHERE week = (SELECT max(week) FROM grid.site_io_stress_weekly)
  AND (lost_core_hours_io_wait_bound > 0 OR share_io_wait_bound > 0)
ORDER BY lost_core_hours_io_wait DESC, site
