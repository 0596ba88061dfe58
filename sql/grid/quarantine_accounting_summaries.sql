-- grid.quarantine_accounting_summaries: generated from silver.quarantine_accounting_summaries's definition by `gridlake docs`; do not edit.
-- Grain: one row per rejected record of grid.accounting_summaries (topic, partition, offset).
CREATE OR REPLACE VIEW grid.quarantine_accounting_summaries (
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
COMMENT 'Records of grid.accounting_summaries that failed validation, with the reasons. Grain: one row per rejected record of grid.accounting_summaries (topic, partition, offset).'
AS SELECT `raw`,
       `reasons`,
       `reason`,
       `topic`,
       `partition`,
       `offset`,
       `kafka_timestamp`,
       `batch_id`,
       `quarantined_at`
FROM silver.quarantine_accounting_summaries
