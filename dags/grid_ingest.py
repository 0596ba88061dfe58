"""grid_ingest: every 5 minutes, Kafka -> bronze -> silver, behind the quality gate.

``ingest`` drains whatever Kafka holds into bronze (Structured Streaming, availableNow, with
checkpoints: exactly once). Then one ``refine_<input>`` task per silver input validates,
quarantines, runs the great_expectations gate and MERGEs into silver; its outlets are the silver
tables it writes (from the manifest), so grid_analytics runs when silver changed. A refine that
found nothing new in bronze exits 99: the task is *skipped* and publishes no asset event, so an
idle run triggers no analytics. A failed gate fails its task with the reason in
the log (``refine jobs FAILED: quality gate failed for silver.jobs: ...``); nothing of the batch
is written, no event is published, gold stays as it was.
"""

from __future__ import annotations

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import CronTriggerTimetable, dag
from gridlake_common import CLI, INGEST_CRON, MANIFEST, START, default_args, table_asset


@dag(
    dag_id="grid_ingest",
    schedule=CronTriggerTimetable(INGEST_CRON, timezone="UTC"),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    default_args=default_args(timeout_minutes=30),
    tags=["gridlake", "ingest"],
    doc_md=__doc__,
)
def grid_ingest() -> None:
    ingest = BashOperator(task_id="ingest", bash_command=f"{CLI} ingest")
    refine = {}
    for step in MANIFEST["refine"]:
        name = step["input"]
        refine[name] = BashOperator(
            task_id=f"refine_{name}",
            bash_command=f"{CLI} refine --inputs {name} --idle-exit-code 99",
            outlets=[table_asset(t) for t in step["writes"]],
            # Runs after a skipped (idle) predecessor too, never after a failed one.
            trigger_rule="none_failed",
        )
        ingest >> refine[name]
        for before in step["after"]:
            refine[before] >> refine[name]


grid_ingest()
