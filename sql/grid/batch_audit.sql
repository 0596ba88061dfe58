-- grid.batch_audit: generated from silver.batch_audit's definition by `gridlake docs`; do not edit.
-- Grain: one row per refine micro-batch and input.
CREATE OR REPLACE VIEW grid.batch_audit (
  `batch_id` COMMENT 'Refine batch id (input-streamBatch)',
  `input` COMMENT 'jobs | nodes | network',
  `bronze_rows` COMMENT 'Bronze records read in the batch',
  `clean_rows` COMMENT 'Distinct valid records (by key) upserted into silver',
  `duplicate_rows` COMMENT 'Valid records superseded by a newer one of the same key',
  `quarantined_rows` COMMENT 'Records sent to quarantine',
  `inserted_rows` COMMENT 'Silver rows inserted by the MERGE',
  `updated_rows` COMMENT 'Silver rows updated by the MERGE (re-sent, newer)',
  `finished_at` COMMENT 'When the batch committed',
  `kafka_ts_max` COMMENT 'Latest Kafka timestamp of the batch\'s records',
  `arrival_rate_per_hour` COMMENT 'Records per hour of Kafka time since the previous batch\'s latest record (null when not measurable: first batch, a span under 10 minutes); the volume rule compares it with the median of the previous batches',
  `volume_drop_accepted` COMMENT 'The batch fell below the volume rule and an operator let it through (refine --accept-volume-drop)'
)
COMMENT 'Reconciliation of every refine batch: bronze_rows = clean_rows + duplicate_rows + quarantined_rows. Grain: one row per refine micro-batch and input.'
AS SELECT `batch_id`,
       `input`,
       `bronze_rows`,
       `clean_rows`,
       `duplicate_rows`,
       `quarantined_rows`,
       `inserted_rows`,
       `updated_rows`,
       `finished_at`,
       `kafka_ts_max`,
       `arrival_rate_per_hour`,
       `volume_drop_accepted`
FROM silver.batch_audit
