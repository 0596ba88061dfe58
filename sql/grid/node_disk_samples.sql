-- grid.node_disk_samples: generated from silver.node_disk_samples's definition by `gridlake docs`; do not edit.
-- Grain: one row per host, ts and device (from iostat samples).
CREATE OR REPLACE VIEW grid.node_disk_samples (
  `site` COMMENT 'Grid site',
  `host` COMMENT 'Worker node host name',
  `ts` COMMENT 'End of the sampling interval',
  `interval_seconds` COMMENT 'Length of the sampling interval',
  `device` COMMENT 'Block device',
  `r_s` COMMENT 'Reads per second',
  `w_s` COMMENT 'Writes per second',
  `rkb_s` COMMENT 'KiB read per second',
  `wkb_s` COMMENT 'KiB written per second',
  `r_await_ms` COMMENT 'Average read latency, ms',
  `w_await_ms` COMMENT 'Average write latency, ms',
  `aqu_sz` COMMENT 'Average queue size',
  `util_pct` COMMENT 'Device utilisation, percent',
  `sample_date` COMMENT 'UTC date of ts (partition column)'
)
COMMENT 'Per-device iostat figures, exploded from the disks array of node samples. Grain: one row per host, ts and device (from iostat samples).'
AS SELECT `site`,
       `host`,
       `ts`,
       `interval_seconds`,
       `device`,
       `r_s`,
       `w_s`,
       `rkb_s`,
       `wkb_s`,
       `r_await_ms`,
       `w_await_ms`,
       `aqu_sz`,
       `util_pct`,
       `sample_date`
FROM silver.node_disk_samples
