-- grid.efficiency_outlier_rules: generated from gold.efficiency_outlier_rules's definition by `gridlake docs`; do not edit.
-- Grain: one row per rule_id and rule_version.
CREATE OR REPLACE VIEW grid.efficiency_outlier_rules (
  `rule_version` COMMENT 'Version of the rule; the highest version of a rule_id applies',
  `rule_id` COMMENT 'Stable name of the rule',
  `entity` COMMENT 'What is scored: site | cpu_model | task',
  `metric` COMMENT 'cpu_efficiency (successful attempts, ratio of sums) | hs23_seconds_per_event (HS23-normalised CPU s/event relative to the same tasks elsewhere; 1.0 = typical)',
  `comparison` COMMENT 'own_history: vs the entity\'s previous 8 weeks | peers: vs the same job type at the other entities in the same week',
  `direction` COMMENT 'Which side is flagged: low | high | both',
  `threshold` COMMENT '|robust z| at or above which a row is flagged',
  `min_jobs` COMMENT 'Minimum attempts behind a value (scored row and baseline points)',
  `min_baseline_points` COMMENT 'Minimum peers or previous weeks behind the baseline',
  `min_scale` COMMENT 'Floor of the robust standard deviation (log scale, 0.03 ~ 3%): a MAD of 0 never divides',
  `enabled` COMMENT 'false retires the rule (as a new version)',
  `description` COMMENT 'What the rule is for'
)
COMMENT 'Editable rules of gold.efficiency_outliers: add a row with a higher rule_version to change a rule; every week is re-scored with the latest enabled version of each rule. Grain: one row per rule_id and rule_version.'
AS SELECT `rule_version`,
       `rule_id`,
       `entity`,
       `metric`,
       `comparison`,
       `direction`,
       `threshold`,
       `min_jobs`,
       `min_baseline_points`,
       `min_scale`,
       `enabled`,
       `description`
FROM gold.efficiency_outlier_rules
