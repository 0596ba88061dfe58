-- grid.efficiency_outliers: generated from gold.efficiency_outliers's definition by `gridlake docs`; do not edit.
-- Grain: one row per week, rule_id, entity_value and job_type flagged by the rule.
CREATE OR REPLACE VIEW grid.efficiency_outliers (
  `week` COMMENT 'Monday of the ISO week scored',
  `entity` COMMENT 'site | cpu_model | task',
  `entity_value` COMMENT 'The site, normalised CPU model or task_id',
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `metric` COMMENT 'cpu_efficiency | hs23_seconds_per_event',
  `value` COMMENT 'The metric for the entity, job type and week',
  `baseline` COMMENT 'Median of the baseline (peers or previous weeks)',
  `deviation_pct` COMMENT '100 x (value / baseline - 1)',
  `robust_z` COMMENT '(ln value - median ln baseline) / sqrt(max(1.4826 x MAD, min_scale)^2 + log_se^2), log_se the sampling error of ln value over the entity\'s jobs',
  `comparison` COMMENT 'peers | own_history',
  `baseline_points` COMMENT 'Peers or previous weeks behind the baseline',
  `rule_id` COMMENT 'Rule that flagged the row',
  `rule_version` COMMENT 'Version of that rule',
  `n_jobs` COMMENT 'Successful attempts behind value',
  `evidence` COMMENT 'One readable sentence with the figures'
)
COMMENT 'The list an operator starts the week with: sites, CPU models and tasks whose CPU efficiency or HS23-normalised CPU time per event departs from their peers or their own history (robust z on the log of the metric: median and MAD). Grain: one row per week, rule_id, entity_value and job_type flagged by the rule.'
AS SELECT `week`,
       `entity`,
       `entity_value`,
       `job_type`,
       `metric`,
       `value`,
       `baseline`,
       `deviation_pct`,
       `robust_z`,
       `comparison`,
       `baseline_points`,
       `rule_id`,
       `rule_version`,
       `n_jobs`,
       `evidence`
FROM gold.efficiency_outliers
