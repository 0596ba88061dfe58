-- grid.network: generated from silver.network's definition by `gridlake docs`; do not edit.
-- Grain: one row per path (src_host, dst_host), ts and test.
CREATE OR REPLACE VIEW grid.network (
  `src_site` COMMENT 'Source site (resolved from src_host when missing)',
  `dst_site` COMMENT 'Destination site (resolved from dst_host when missing)',
  `src_host` COMMENT 'Source perfSONAR host',
  `dst_host` COMMENT 'Destination perfSONAR host',
  `ts` COMMENT 'Measurement time (RFC 3339, UTC)',
  `test` COMMENT 'Test type',
  `delay_mean_ms` COMMENT 'One-way delay mean, ms',
  `delay_median_ms` COMMENT 'One-way delay median, ms',
  `delay_min_ms` COMMENT 'One-way delay minimum, ms',
  `delay_sd_ms` COMMENT 'One-way delay standard deviation, ms',
  `packet_loss` COMMENT 'Fraction of packets lost',
  `throughput_bps` COMMENT 'Achieved throughput, bits per second',
  `retransmits` COMMENT 'TCP retransmits during a throughput test',
  `tool` COMMENT 'Measuring tool, e.g. owping, twping, iperf3, nuttcp, traceroute',
  `sites_resolved` COMMENT 'True when src_site or dst_site came from the host name',
  `measured_date` COMMENT 'UTC date of ts (partition column)'
)
COMMENT 'perfSONAR results, typed and validated; src_site/dst_site resolved from host names where the record lacks them. Grain: one row per path (src_host, dst_host), ts and test.'
AS SELECT `src_site`,
       `dst_site`,
       `src_host`,
       `dst_host`,
       `ts`,
       `test`,
       `delay_mean_ms`,
       `delay_median_ms`,
       `delay_min_ms`,
       `delay_sd_ms`,
       `packet_loss`,
       `throughput_bps`,
       `retransmits`,
       `tool`,
       `sites_resolved`,
       `measured_date`
FROM silver.network
