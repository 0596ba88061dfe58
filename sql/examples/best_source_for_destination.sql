-- Question: From which site is it cheapest to fetch data needed at RAL-LCG2 this week, and what
--   does a gigabyte cost from each source?
-- Views: grid.network_cost_matrix
-- cost_seconds_per_gb = 8e9 / median throughput x (1 + 3 x congested share) / (1 - loss)
-- + 10 round trips; a source without throughput tests has no cost and is listed last.
SELECT src_site,
       source_rank,
       round(cost_seconds_per_gb, 3) AS seconds_per_gb,
       round(throughput_median_bps / 1e9, 2) AS throughput_gbps,
       round(rtt_ms, 1) AS rtt_ms,
       round(congested_share, 3) AS congested_share
FROM grid.network_cost_matrix
WHERE dst_site = 'RAL-LCG2'
  AND week = (SELECT max(week) FROM grid.network_cost_matrix)
ORDER BY source_rank NULLS LAST, src_site
