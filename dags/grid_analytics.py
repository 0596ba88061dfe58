"""grid_analytics: silver -> gold, one task per gold group, when silver changed (and daily).

Scheduled on the silver assets grid_ingest publishes (any of them updated) and, as a fallback,
every day at 03:00 UTC. Each task runs ``gridlake analyze --only <group>``: incremental, it
leaves a group alone whose inputs did not change since its last write and recomputes only the
ISO weeks whose jobs changed (deterministic: a rerun or a backfill of any interval gives the same
tables); its outlets are those tables. The run's param ``full`` (``airflow dags trigger
grid_analytics --conf '{"full": true}'``, or "Trigger DAG w/ config" in the UI) recomputes every
group whole from silver (``analyze --full``), e.g. after silver was repaired by hand. Tasks and
their dependencies come from the manifest (the ``GROUP`` each gold family declares, collected in
``gridlake.gold.analyze.FAMILIES``): a
group that reads another group's gold tables runs after it. Of the tasks ready at once the one
earliest in ``analyze.FAMILIES`` starts first (the manifest's ``priority``): site_efficiency, which
the operations dashboards open on, does not wait behind the history-wide fits (freshness first;
``gridlake analyze`` by hand starts the costliest group first, for the shortest whole run).
"""

from __future__ import annotations

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import AssetAny, AssetOrTimeSchedule, CronTriggerTimetable, Param, dag
from gridlake_common import CLI, MANIFEST, START, default_args, silver_assets, table_asset


@dag(
    dag_id="grid_analytics",
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("0 3 * * *", timezone="UTC"),
        assets=AssetAny(*silver_assets()),
    ),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    default_args=default_args(timeout_minutes=90),
    tags=["gridlake", "gold"],
    doc_md=__doc__,
    params={
        "full": Param(
            False,
            type="boolean",
            description="Recompute every gold group whole from silver (analyze --full) instead of "
            "only what changed",
        )
    },
)
def grid_analytics() -> None:
    tasks = {}
    for step in MANIFEST["gold_groups"]:
        group = step["group"]
        tasks[group] = BashOperator(
            task_id=f"analyze_{group}",
            bash_command=f"{CLI} analyze --only {group}" + "{{ ' --full' if params.full else '' }}",
            outlets=[table_asset(t) for t in step["writes"]],
            # of the tasks ready at once, the scheduler starts the highest first: analyze's order
            priority_weight=step["priority"],
            weight_rule="absolute",
        )
        for before in step["after"]:
            tasks[before] >> tasks[group]


grid_analytics()
