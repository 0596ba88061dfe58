-- grid.network_alarms: generated from gold.network_alarms's definition by `gridlake docs`; do not edit.
-- Grain: one row per alarm: path (or destination site), kind and start.
CREATE OR REPLACE VIEW grid.network_alarms (
  `kind` COMMENT 'complete_loss | high_loss | throughput_drop | throughput_rise | clock_negative_delay | clock_drift | recurring_weekend_spike | recurring_weekly_spike',
  `src_site` COMMENT 'Source site (null for a site-wide pattern)',
  `dst_site` COMMENT 'Destination site',
  `src_host` COMMENT 'Source perfSONAR host (null for a site-wide pattern)',
  `dst_host` COMMENT 'Destination perfSONAR host (null for a site-wide pattern)',
  `start_ts` COMMENT 'First observation of the problem (UTC)',
  `end_ts` COMMENT 'End of the problem: recovery or last observation (UTC)',
  `value` COMMENT 'Headline figure: loss fraction, throughput ratio to baseline, minimum delay ms, drift ms/day or extra delay ms',
  `evidence` COMMENT 'Supporting figures (JSON; floats to 6 decimals)'
)
COMMENT 'Network alarms from perfSONAR: complete loss, loss above 2 %, throughput drops and rises, clock problems (negative delays, drifting minimum delay) and latency spikes on every incoming link of a site that recur at the same hours of the same day each week (weekend or weekday). Grain: one row per alarm: path (or destination site), kind and start.'
AS SELECT `kind`,
       `src_site`,
       `dst_site`,
       `src_host`,
       `dst_host`,
       `start_ts`,
       `end_ts`,
       `value`,
       `evidence`
FROM gold.network_alarms
