-- Question: Which links lost more than 2% of their packets this week, from when to when, and how
--   many hours of high loss did each accumulate?
-- Views: grid.network_alarms
-- One high_loss alarm per run of consecutive 5-minute intervals above 2% loss (complete outages
-- are a separate alarm kind).
SELECT src_site,
       dst_site,
       count(*) AS episodes,
       min(start_ts) AS first_start,
       max(end_ts) AS last_end,
       round(sum(unix_timestamp(end_ts) - unix_timestamp(start_ts)) / 3600, 2) AS hours,
       round(max(value), 4) AS max_loss
FROM grid.network_alarms
WHERE kind = 'high_loss'
  AND start_ts >= date_sub(
        (SELECT max(to_date(end_ts)) FROM grid.network_alarms WHERE kind = 'high_loss'), 7)
GROUP BY src_site, dst_site
ORDER BY hours DESC, src_site, dst_site
