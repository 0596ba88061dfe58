-- grid.failure_cause_rules: generated from gold.failure_cause_rules's definition by `gridlake docs`; do not edit.
-- Grain: one row per rule_id and rule_version.
CREATE OR REPLACE VIEW grid.failure_cause_rules (
  `rule_version` COMMENT 'Version of the rule; the highest applies',
  `rule_id` COMMENT 'Rule name, e.g. htcondor-hold-out-of-resources',
  `priority` COMMENT 'Order of trial: lower first (payload 10, batch states 20-30, signals 40, shell 50, other exits 90)',
  `source_format` COMMENT 'Records of this source format only (null: any)',
  `failure_mode` COMMENT 'The adapter\'s failure_mode label (timeout, memory, held:34, ...; null: any)',
  `exit_code_min` COMMENT 'Lowest exit_code matched (null: no lower bound)',
  `exit_code_max` COMMENT 'Highest exit_code matched (null: no upper bound)',
  `vo` COMMENT 'Jobs of this VO only (payload exit codes; null: any)',
  `cause` COMMENT 'The failure cause the rule gives',
  `enabled` COMMENT 'false retires the rule (as a new version)',
  `reference` COMMENT 'Public source of the code\'s meaning',
  `description` COMMENT 'What the codes mean'
)
COMMENT 'Editable failure-cause rules: a failed attempt takes the cause of the first rule (lowest priority, then rule_id) whose non-null conditions all hold; none: unknown. Add a row with a higher rule_version to change a rule, enabled = false to retire it; the shipped rules cite their source in reference. Grain: one row per rule_id and rule_version.'
AS SELECT `rule_version`,
       `rule_id`,
       `priority`,
       `source_format`,
       `failure_mode`,
       `exit_code_min`,
       `exit_code_max`,
       `vo`,
       `cause`,
       `enabled`,
       `reference`,
       `description`
FROM gold.failure_cause_rules
