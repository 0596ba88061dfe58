-- grid.network_link_hourly: generated from gold.network_link_hourly's definition by `gridlake docs`; do not edit.
-- Grain: one row per path (src_host, dst_host) and UTC hour with 5-minute intervals.
CREATE OR REPLACE VIEW grid.network_link_hourly (
  `src_site` COMMENT 'Source site',
  `dst_site` COMMENT 'Destination site',
  `src_host` COMMENT 'Source perfSONAR host',
  `dst_host` COMMENT 'Destination perfSONAR host',
  `hour` COMMENT 'Start of the hour (UTC)',
  `intervals` COMMENT '5-minute intervals with latency samples in the hour',
  `samples` COMMENT 'Latency samples in the hour',
  `congested_intervals` COMMENT 'Intervals flagged congested',
  `quiet_intervals` COMMENT 'Intervals passing the empirical quiet filter',
  `congested_share` COMMENT 'congested_intervals / intervals',
  `quiet_share` COMMENT 'quiet_intervals / intervals',
  `mean_delay_ms` COMMENT 'Mean of the intervals\' smoothed one-way delay, ms',
  `max_excess_delay_ms` COMMENT 'Largest excess delay over the path\'s baseline in the hour (may be < 0), ms',
  `mean_loss` COMMENT 'Mean of the intervals\' packet loss fraction',
  `max_p_util_over_70_next` COMMENT 'Highest predicted probability of > 70 % utilisation in the next interval (null without a model)',
  `week` COMMENT 'Monday of the ISO week of the hour (partition column)',
  `link` COMMENT '\'source > destination\' site: the dashboards\' series label, stored (reading it is cheaper than a concat over a week of paths, done twice by a top-10 chart)'
)
COMMENT 'The 5-minute link status of gold.network_link_status summed per hour, for link status timelines over weeks (shares are of the hour\'s intervals with latency samples). Grain: one row per path (src_host, dst_host) and UTC hour with 5-minute intervals.'
AS SELECT `src_site`,
       `dst_site`,
       `src_host`,
       `dst_host`,
       `hour`,
       `intervals`,
       `samples`,
       `congested_intervals`,
       `quiet_intervals`,
       `congested_share`,
       `quiet_share`,
       `mean_delay_ms`,
       `max_excess_delay_ms`,
       `mean_loss`,
       `max_p_util_over_70_next`,
       `week`,
       `link`
FROM gold.network_link_hourly
