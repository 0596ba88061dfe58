-- Question: Per job type, how likely is an attempt to fail when it runs under 4 hours compared
--   with 4 hours or more?
-- Views: grid.failure_vs_duration
-- failure_mode 'ALL' counts any failure; 4 h is a bin edge, so the bins split exactly there.
SELECT job_type,
       sum(CASE WHEN bin_low_hours < 4 THEN attempts ELSE 0 END) AS short_attempts,
       round(sum(CASE WHEN bin_low_hours < 4 THEN failures ELSE 0 END)
             / sum(CASE WHEN bin_low_hours < 4 THEN attempts ELSE 0 END), 4) AS short_failure_probability,
       sum(CASE WHEN bin_low_hours >= 4 THEN attempts ELSE 0 END) AS long_attempts,
       round(sum(CASE WHEN bin_low_hours >= 4 THEN failures ELSE 0 END)
             / nullif(sum(CASE WHEN bin_low_hours >= 4 THEN attempts ELSE 0 END), 0), 4)
         AS long_failure_probability
FROM grid.failure_vs_duration
WHERE failure_mode = 'ALL'
GROUP BY job_type
ORDER BY job_type
