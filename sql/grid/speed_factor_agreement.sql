-- grid.speed_factor_agreement: generated from gold.speed_factor_agreement's definition by `gridlake docs`; do not edit.
-- Grain: one row per pair of job types (job_type_a < job_type_b), plus one row ALL/ALL pooling every pair.
CREATE OR REPLACE VIEW grid.speed_factor_agreement (
  `job_type_a` COMMENT 'First job type of the pair (ALL on the pooled row)',
  `job_type_b` COMMENT 'Second job type of the pair (ALL on the pooled row)',
  `n_models` COMMENT 'CPU models compared (shared, same reference, not it)',
  `mean_abs_rel_diff` COMMENT 'Mean of the symmetric relative difference |f_a - f_b| / ((f_a + f_b) / 2)',
  `rms_rel_diff` COMMENT 'Root mean square of the relative differences',
  `max_abs_rel_diff` COMMENT 'Largest absolute relative difference',
  `max_diff_model` COMMENT 'CPU model with the largest difference'
)
COMMENT 'How well the speed factors measured with different job types agree, over the CPU models both fits share with the same reference model (the reference itself excluded). The seeds report ~4 % mean difference between job types in ATLAS and CMS. Grain: one row per pair of job types (job_type_a < job_type_b), plus one row ALL/ALL pooling every pair.'
AS SELECT `job_type_a`,
       `job_type_b`,
       `n_models`,
       `mean_abs_rel_diff`,
       `rms_rel_diff`,
       `max_abs_rel_diff`,
       `max_diff_model`
FROM gold.speed_factor_agreement
