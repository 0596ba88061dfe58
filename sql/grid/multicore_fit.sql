-- grid.multicore_fit: generated from gold.multicore_fit's definition by `gridlake docs`; do not edit.
-- Grain: one row per job_type.
CREATE OR REPLACE VIEW grid.multicore_fit (
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `serial_fraction` COMMENT 's = b / a; null with fewer than 2 core counts',
  `serial_fraction_se` COMMENT 'Standard error of s: delta method on the WLS sandwich covariance of (a, b), each point\'s variance from the task-clustered variance of its 1/eff, per site; combined as sqrt(1 / sum(1/se^2)); null when a contributing site has none',
  `e1` COMMENT 'Fitted single-core efficiency 1/a, core-hour mean over sites',
  `cores_below_90pct` COMMENT 'Smallest n with parallel efficiency 1/(1 + s (n-1)) < 0.9; null when s <= 0',
  `n_core_counts` COMMENT 'Distinct core counts in the fit'
)
COMMENT 'Amdahl fit per job type: eff(n) = e1 / (1 + s (n-1)), i.e. 1/eff(n) = a + b (n-1) with e1 = 1/a and s = b/a, by weighted least squares over the core counts run at one site (weights = core-hours), the site estimates combined by inverse variance. Core counts are compared within a site because sites differ in efficiency and in their mix of core counts; a pooled fit reads a slow site running mostly 8-core jobs as serial fraction. Grain: one row per job_type.'
AS SELECT `job_type`,
       `serial_fraction`,
       `serial_fraction_se`,
       `e1`,
       `cores_below_90pct`,
       `n_core_counts`
FROM gold.multicore_fit
