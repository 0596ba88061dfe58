"""Load the DagBag of dags/ and write a JSON report of every DAG; run by tests/test_dags.py.

Runs with the Airflow venv's python (``bash infra/airflow.sh python <this file> OUT [DAGS]``;
DAGS defaults to the configured dags folder), never
with the main venv's: Airflow and Spark live in separate venvs. The report goes to the file OUT
because Airflow's own logging writes to stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _bash_command(task) -> str | None:
    command = getattr(task, "bash_command", None)
    if isinstance(command, str):
        return command
    # @task.bash: the command is what the decorated function returns (it only builds a string).
    build = getattr(task, "python_callable", None)
    return build() if build else None


def _task_report(task) -> dict:
    timeout = task.execution_timeout
    return {
        "task_id": task.task_id,
        "operator": type(task).__name__,
        "owner": task.owner,
        "retries": task.retries,
        "trigger_rule": str(task.trigger_rule),
        "retry_delay_seconds": task.retry_delay.total_seconds(),
        "execution_timeout_seconds": timeout.total_seconds() if timeout else None,
        "upstream": sorted(task.upstream_task_ids),
        "outlets": sorted(getattr(o, "uri", str(o)) for o in task.outlets),
        "bash_command": _bash_command(task),
        "priority_weight": task.priority_weight,
        "weight_rule": str(getattr(task.weight_rule, "value", task.weight_rule)),
    }


def main(out: str, dags_folder: str | None = None) -> None:
    t0 = time.monotonic()
    from pathlib import Path

    from airflow.dag_processing.dagbag import BundleDagBag

    # The bundle DagBag, as Airflow's DAG processor and `dags test` load the folder: it puts the
    # folder on sys.path, so DAG files can import their helpers (dags/gridlake_common.py).
    folder = Path(dags_folder or os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    bag = BundleDagBag(dag_folder=folder, bundle_path=folder)
    report = {
        "dags_folder": bag.dag_folder,
        "import_errors": {str(k): v for k, v in bag.import_errors.items()},
        "dags": {
            dag_id: {
                "fileloc": dag.fileloc,
                "tags": sorted(dag.tags),
                "owner": dag.owner,
                "max_active_runs": dag.max_active_runs,
                "catchup": dag.catchup,
                "schedule": str(dag.schedule),
                "timetable": type(dag.timetable).__name__,
                "timetable_repr": repr(dag.timetable),
                "tasks": [_task_report(t) for t in dag.tasks],
            }
            for dag_id, dag in bag.dags.items()
        },
        "load_seconds": round(time.monotonic() - t0, 2),
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, default=str)


if __name__ == "__main__":
    main(*sys.argv[1:3])
