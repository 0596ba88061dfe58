-- grid.jobs: every finished job attempt, typed and validated.
-- Grain: one row per job attempt (job_id).
CREATE OR REPLACE VIEW grid.jobs
COMMENT 'Finished job attempts, typed and validated. Grain: one row per job attempt (job_id).'
AS SELECT job_id, attempt, vo, site, host, queue, task_id, job_type, cpu_model, cores,
          submit_time, start_time, end_time, wall_seconds, cpu_user_seconds, cpu_system_seconds,
          cpu_seconds, cores_wall_seconds, cpu_efficiency, is_outlier, events, max_rss_mb,
          input_bytes, output_bytes, read_time_seconds, status, exit_code, failure_mode,
          benchmark_type, benchmark_per_core, source_format, week
FROM silver.jobs
