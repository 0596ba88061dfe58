-- Question: Which network links were congested in more than 10% of their 5-minute intervals this
--   week, and how much delay and loss did they show?
-- Views: grid.network_cost_matrix
-- An interval is congested when excess delay x loss >= 1e-3 with loss >= 5e-4 (an outage is not
-- congestion); congested_share is the share of the link's intervals with latency samples.
SELECT src_site,
       dst_site,
       round(congested_share, 3) AS congested_share,
       round(delay_p95_ms - delay_median_ms, 2) AS p95_excess_delay_ms,
       round(loss_mean, 5) AS loss_mean,
       intervals
FROM grid.network_cost_matrix
WHERE week = (SELECT max(week) FROM grid.network_cost_matrix)
  AND congested_share > 0.10
ORDER BY congested_share DESC, src_site, dst_site
