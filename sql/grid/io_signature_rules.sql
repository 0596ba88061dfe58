-- grid.io_signature_rules: generated from gold.io_signature_rules's definition by `gridlake docs`; do not edit.
-- Grain: one row per rule_version and parameter.
CREATE OR REPLACE VIEW grid.io_signature_rules (
  `rule_version` COMMENT 'Version; the highest one in the table applies',
  `parameter` COMMENT 'Threshold name (see gridlake.gold.io_signatures)',
  `value` COMMENT 'Threshold value',
  `description` COMMENT 'What the threshold decides'
)
COMMENT 'Editable thresholds of the I/O-limit signatures (gold.job_io_signature, gold.node_saturation): insert rows with a higher rule_version to change them; the highest version applies (parameters it does not list keep their latest earlier value) and every gold run re-scores the whole history. Grain: one row per rule_version and parameter.'
AS SELECT `rule_version`,
       `parameter`,
       `value`,
       `description`
FROM gold.io_signature_rules
