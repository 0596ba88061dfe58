-- grid.failure_vs_duration: generated from gold.failure_vs_duration's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type, failure_mode (each mode seen for the job type, plus 'ALL') and wall-clock bin holding at least one attempt.
CREATE OR REPLACE VIEW grid.failure_vs_duration (
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `failure_mode` COMMENT 'Failure mode counted in failures; \'ALL\' = any failure; \'unknown\' = failed without one',
  `bin_index` COMMENT '0 (< 10 min) to 13 (>= 96 h)',
  `duration_bin` COMMENT 'Readable bin label, e.g. 49m-1.4h',
  `bin_low_hours` COMMENT 'Lower edge of the bin, hours (inclusive)',
  `bin_high_hours` COMMENT 'Upper edge of the bin, hours (exclusive); null: open',
  `attempts` COMMENT 'Attempts of the job type whose wall_seconds fall in the bin',
  `failures` COMMENT 'Of those, attempts failed with this failure mode',
  `failure_probability` COMMENT 'failures / attempts',
  `wilson_low` COMMENT 'Lower end of the 95% Wilson score interval',
  `wilson_high` COMMENT 'Upper end of the 95% Wilson score interval',
  `exposure_wall_hours` COMMENT 'Wall-hours at risk in the bin: over all attempts of the job type, the part of each attempt\'s run time that falls inside the bin (life table)',
  `hazard_per_hour` COMMENT 'failures / exposure_wall_hours: cause-specific hazard in the bin',
  `wasted_core_hours` COMMENT 'Core-hours of the failed attempts counted'
)
COMMENT 'Failure probability and hazard as a function of wall-clock duration, by job type and failure mode. Bins: log-spaced from 10 min to 96 h (DURATION_BIN_EDGES_SECONDS) with open-ended first (< 10 min) and last (>= 96 h) bins. Grain: one row per job_type, failure_mode (each mode seen for the job type, plus \'ALL\') and wall-clock bin holding at least one attempt.'
AS SELECT `job_type`,
       `failure_mode`,
       `bin_index`,
       `duration_bin`,
       `bin_low_hours`,
       `bin_high_hours`,
       `attempts`,
       `failures`,
       `failure_probability`,
       `wilson_low`,
       `wilson_high`,
       `exposure_wall_hours`,
       `hazard_per_hour`,
       `wasted_core_hours`
FROM gold.failure_vs_duration
