-- grid.network_link_status: generated from gold.network_link_status's definition by `gridlake docs`; do not edit.
-- Grain: one row per path (src_host, dst_host) and 5-minute interval with latency samples.
CREATE OR REPLACE VIEW grid.network_link_status (
  `src_site` COMMENT 'Source site',
  `dst_site` COMMENT 'Destination site',
  `src_host` COMMENT 'Source perfSONAR host',
  `dst_host` COMMENT 'Destination perfSONAR host',
  `interval_start` COMMENT 'Start of the 5-minute interval (UTC)',
  `interval_end` COMMENT 'End of the interval (exclusive)',
  `samples` COMMENT 'One-minute latency samples in the interval',
  `smoothed_delay_ms` COMMENT 'Mean of the samples\' one-way delay medians (5-minute moving average), ms',
  `smoothed_loss` COMMENT 'Mean packet loss fraction of the samples',
  `min_delay_ms` COMMENT 'Lowest one-way delay minimum in the interval, ms',
  `baseline_min_delay_ms` COMMENT 'Propagation floor: 5th percentile of the hourly 10th percentiles of the minimum delay over the 7 days before the hour, ms',
  `baseline_delay_ms` COMMENT 'Usual delay: median of the hourly medians of the delay median over the 7 days before the hour, ms',
  `baseline_sd_ms` COMMENT 'Robust sd of the delay: median hourly IQR / 1.349 over the same days (>= 0.1), ms',
  `excess_delay_ms` COMMENT 'smoothed_delay_ms - baseline_delay_ms (may be < 0), ms',
  `quiet` COMMENT 'Empirical filter: loss < 1e-4 and |excess delay| <= baseline sd (a path whose loss is not measured is judged on its delay alone)',
  `congestion_index` COMMENT 'max(excess delay, 0) x loss over the samples not at complete loss (ms x fraction; null when every sample was lost)',
  `congested` COMMENT 'congestion_index >= 1e-3 with loss >= 5e-4 over the samples that got through (an outage is not congestion)',
  `p_util_over_70_next` COMMENT 'Predicted probability that utilisation exceeds 70 % in the next interval (null without a model)',
  `interval_date` COMMENT 'UTC date of interval_start (partition column)'
)
COMMENT 'Smoothed one-way delay and loss per path and 5-minute interval against a robust trailing baseline, the empirical quiet filter, the delay x loss congestion index and flag, and the predicted probability that the link runs above 70 % in the next interval. Grain: one row per path (src_host, dst_host) and 5-minute interval with latency samples.'
AS SELECT `src_site`,
       `dst_site`,
       `src_host`,
       `dst_host`,
       `interval_start`,
       `interval_end`,
       `samples`,
       `smoothed_delay_ms`,
       `smoothed_loss`,
       `min_delay_ms`,
       `baseline_min_delay_ms`,
       `baseline_delay_ms`,
       `baseline_sd_ms`,
       `excess_delay_ms`,
       `quiet`,
       `congestion_index`,
       `congested`,
       `p_util_over_70_next`,
       `interval_date`
FROM gold.network_link_status
