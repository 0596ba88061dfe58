-- grid.quality_results: generated from silver.quality_results's definition by `gridlake docs`; do not edit.
-- Grain: one row per refine batch, table and check.
CREATE OR REPLACE VIEW grid.quality_results (
  `batch_id` COMMENT 'Refine batch',
  `table_name` COMMENT 'Table the batch was bound for',
  `check_kind` COMMENT 'Expectation kind',
  `check_column` COMMENT 'Column checked (null for multi-column checks)',
  `severity` COMMENT 'fail (circuit breaker) or warn',
  `success` COMMENT 'Whether the batch met the expectation',
  `detail` COMMENT 'Observed figures (unexpected count and percent)',
  `checked_at` COMMENT 'When the check ran'
)
COMMENT 'Every great_expectations check run by the refine gate, with its outcome. Grain: one row per refine batch, table and check.'
AS SELECT `batch_id`,
       `table_name`,
       `check_kind`,
       `check_column`,
       `severity`,
       `success`,
       `detail`,
       `checked_at`
FROM silver.quality_results
