-- grid.quarantine_jobs: generated from silver.quarantine_jobs's definition by `gridlake docs`; do not edit.
-- Grain: one row per rejected record of grid.jobs (topic, partition, offset).
CREATE OR REPLACE VIEW grid.quarantine_jobs (
  `raw` COMMENT 'The original record, verbatim',
  `reasons` COMMENT 'Every rule the record failed',
  `reason` COMMENT 'The reasons joined with \'; \'',
  `topic` COMMENT 'Kafka topic',
  `partition` COMMENT 'Kafka partition',
  `offset` COMMENT 'Kafka offset',
  `kafka_timestamp` COMMENT 'Kafka record timestamp',
  `batch_id` COMMENT 'Refine batch that quarantined the record',
  `quarantined_at` COMMENT 'When it was quarantined'
)
COMMENT 'Records of grid.jobs that failed validation, with the reasons. Grain: one row per rejected record of grid.jobs (topic, partition, offset).'
AS SELECT `raw`,
       `reasons`,
       `reason`,
       `topic`,
       `partition`,
       `offset`,
       `kafka_timestamp`,
       `batch_id`,
       `quarantined_at`
FROM silver.quarantine_jobs
