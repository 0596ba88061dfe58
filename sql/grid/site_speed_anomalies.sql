-- grid.site_speed_anomalies: generated from gold.site_speed_anomalies's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type (or 'ALL'), reference_model (connected group), site and cpu_model; cpu_model 'ALL' is the site term over all models.
CREATE OR REPLACE VIEW grid.site_speed_anomalies (
  `job_type` COMMENT 'Job type of the fit, or ALL',
  `site` COMMENT 'Grid site',
  `cpu_model` COMMENT 'CPU model, or ALL for the site term over all models',
  `reference_model` COMMENT 'Reference model of the connected group',
  `group_id` COMMENT 'Connected group (as in gold.cpu_speed_factors)',
  `site_term` COMMENT 'Site term on log(CPU s/event), median site of group = 0',
  `slowdown` COMMENT 'exp(site_term): CPU time per event relative to elsewhere',
  `ci_low` COMMENT '2.5 percentile of the bootstrap replicates\' slowdown',
  `ci_high` COMMENT '97.5 percentile of the bootstrap replicates\' slowdown',
  `n_jobs` COMMENT 'Jobs behind the term',
  `n_tasks` COMMENT 'Tasks behind the term',
  `margin` COMMENT 'Slowdown tolerated before flagging',
  `flagged` COMMENT 'ci_low > 1 and slowdown > 1 + margin'
)
COMMENT 'Sites whose nodes run slower than the same CPU model elsewhere, from log(CPU seconds per event) = task + model + site terms. Site term relative to the median site of the group; a (site, model) term is the model\'s residual at that site (site term included), given only for models that ran at two sites or more. Grain: one row per job_type (or \'ALL\'), reference_model (connected group), site and cpu_model; cpu_model \'ALL\' is the site term over all models.'
AS SELECT `job_type`,
       `site`,
       `cpu_model`,
       `reference_model`,
       `group_id`,
       `site_term`,
       `slowdown`,
       `ci_low`,
       `ci_high`,
       `n_jobs`,
       `n_tasks`,
       `margin`,
       `flagged`
FROM gold.site_speed_anomalies
