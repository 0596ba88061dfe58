"""grid_maintenance: Sundays 04:00 UTC, Delta housekeeping and the Data Docs.

``optimize`` compacts every table's small files (Delta OPTIMIZE; dataChange=false, so streams
reading the tables see nothing new); ``vacuum`` then deletes unreferenced files older than 168
hours, keeping time travel for 7 days (``gridlake maintain`` refuses less). ``quality_docs``
rebuilds the great_expectations Data Docs from the tables' checks and the gate results kept in
silver.quality_results.
"""

from __future__ import annotations

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import CronTriggerTimetable, dag
from gridlake_common import CLI, START, default_args


@dag(
    dag_id="grid_maintenance",
    schedule=CronTriggerTimetable("0 4 * * 0", timezone="UTC"),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    default_args=default_args(timeout_minutes=120),
    tags=["gridlake", "maintenance"],
    doc_md=__doc__,
)
def grid_maintenance() -> None:
    optimize = BashOperator(task_id="optimize", bash_command=f"{CLI} maintain --optimize")
    vacuum = BashOperator(
        task_id="vacuum", bash_command=f"{CLI} maintain --vacuum --retain-hours 168"
    )
    BashOperator(task_id="quality_docs", bash_command=f"{CLI} quality-docs")
    optimize >> vacuum


grid_maintenance()
