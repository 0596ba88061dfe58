-- grid.alerts: generated from ops.alerts's definition by `gridlake docs`; do not edit.
-- Grain: one row per alert: a task of a gridlake DAG that failed after its retries, or a batch the refine gate refused.
CREATE OR REPLACE VIEW grid.alerts (
  `alert_id` COMMENT 'sha256 (16 hex) of kind, dag_id, task_id, run_id, try_number (not for a refused batch: its task\'s retries refuse it again), subject and message',
  `raised_at` COMMENT 'When it was raised (UTC)',
  `kind` COMMENT 'task_failed | batch_refused',
  `dag_id` COMMENT 'The DAG whose task failed (null: a command run by hand)',
  `task_id` COMMENT 'The failed task',
  `run_id` COMMENT 'The DAG run',
  `try_number` COMMENT 'The task\'s try that failed last',
  `subject` COMMENT 'What failed: the silver table a refused batch was for, or dag_id.task_id',
  `message` COMMENT 'The reason: the gate\'s message, or the task\'s error',
  `log` COMMENT 'Where the details are: the task\'s log file'
)
COMMENT 'Written by the DAGs\' failure callback (through a pending file, so that an alert survives Spark being what failed) and by gridlake refine when its gate refuses a batch; the same alert recorded twice is one row (alert_id). Grain: one row per alert: a task of a gridlake DAG that failed after its retries, or a batch the refine gate refused.'
AS SELECT `alert_id`,
       `raised_at`,
       `kind`,
       `dag_id`,
       `task_id`,
       `run_id`,
       `try_number`,
       `subject`,
       `message`,
       `log`
FROM ops.alerts
