-- grid.network_cost_matrix: generated from gold.network_cost_matrix's definition by `gridlake docs`; do not edit.
-- Grain: one row per src_site, dst_site and ISO week.
CREATE OR REPLACE VIEW grid.network_cost_matrix (
  `week` COMMENT 'Monday of the ISO week (UTC)',
  `src_site` COMMENT 'Source site',
  `dst_site` COMMENT 'Destination site',
  `latency_samples` COMMENT 'Latency samples in the week',
  `delay_median_ms` COMMENT 'Median of the samples\' one-way delay medians, ms',
  `delay_p95_ms` COMMENT '95th percentile of the delay medians, ms',
  `rtt_ms` COMMENT 'Round trip: delay_median_ms plus the reverse path\'s (twice the one-way delay when the reverse is not measured), ms',
  `loss_mean` COMMENT 'Mean packet loss fraction (outages included)',
  `throughput_tests` COMMENT 'Throughput tests in the week',
  `throughput_median_bps` COMMENT 'Median achieved throughput, bits/s',
  `intervals` COMMENT '5-minute intervals of gold.network_link_status',
  `congested_share` COMMENT 'Share of congested intervals',
  `quiet_share` COMMENT 'Share of quiet intervals (empirical filter)',
  `cost_seconds_per_gb` COMMENT 'Expected seconds to move 1 GB: 8e9 / throughput x (1 + 3 x congested_share) / (1 - min(loss, 0.5)) + 10 x rtt_ms / 1000 (null without throughput tests)',
  `source_rank` COMMENT 'Rank of the source site for its destination and week, 1 = cheapest'
)
COMMENT 'Expected path performance between sites per week and the cost of moving 1 GB, with the rank of each source site for its destination. Grain: one row per src_site, dst_site and ISO week.'
AS SELECT `week`,
       `src_site`,
       `dst_site`,
       `latency_samples`,
       `delay_median_ms`,
       `delay_p95_ms`,
       `rtt_ms`,
       `loss_mean`,
       `throughput_tests`,
       `throughput_median_bps`,
       `intervals`,
       `congested_share`,
       `quiet_share`,
       `cost_seconds_per_gb`,
       `source_rank`
FROM gold.network_cost_matrix
