-- Question: Which worker nodes swapped this week (memory pressure), during which hours, and how
--   hard?
-- Views: grid.node_saturation
-- memory_pressure: mean swap traffic (si + so) in the hour >= the rule's swap_kb_s_min.
SELECT site,
       host,
       count(*) AS hours_under_pressure,
       min(hour) AS first_hour,
       max(hour) AS last_hour,
       round(max(swap_kb_s_mean), 0) AS peak_swap_kb_s
FROM grid.node_saturation
WHERE memory_pressure
  AND week = (SELECT max(week) FROM grid.node_saturation)
GROUP BY site, host
ORDER BY hours_under_pressure DESC, site, host
