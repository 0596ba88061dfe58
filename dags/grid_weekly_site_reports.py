"""grid_weekly_site_reports: Mondays 06:00 UTC, the reports of the ISO week just ended.

The run's data interval is the seven days before it (``interval``), so its start lies in the
week just ended; ``gridlake report --week <data_interval_start>`` takes that date's ISO week.
A rerun or a backfill of an interval rewrites the same week's reports (identical HTML).
``site_reports`` writes one report (HTML + PDF) per site with jobs in the week under
``<state>/reports/<week>/``; ``summary_and_index`` the grid-wide summary and ``index.html``;
``send_reports`` e-mails each site's PDF to its contacts in ``ops.sites`` through the SMTP server
of ``GRIDLAKE_SMTP_URL`` or Airflow's ``AIRFLOW_CONN_SMTP_DEFAULT`` (without one, a dry run that
writes the messages beside the reports); a rerun sends only what changed.
Without gold rows for the week the task fails with the reason (exit 3) and is retried.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import CronTriggerTimetable, dag
from gridlake_common import CLI, START, default_args

WEEK = "{{ data_interval_start | ds }}"


@dag(
    dag_id="grid_weekly_site_reports",
    schedule=CronTriggerTimetable("0 6 * * 1", timezone="UTC", interval=timedelta(days=7)),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    default_args=default_args(timeout_minutes=60),
    tags=["gridlake", "reports"],
    doc_md=__doc__,
)
def grid_weekly_site_reports() -> None:
    sites = BashOperator(
        task_id="site_reports", bash_command=f"{CLI} report --week {WEEK} --all-sites --quiet"
    )
    summary = BashOperator(
        task_id="summary_and_index", bash_command=f"{CLI} report --week {WEEK} --summary --quiet"
    )
    send = BashOperator(task_id="send_reports", bash_command=f"{CLI} report --week {WEEK} --send")
    sites >> [summary, send]


grid_weekly_site_reports()
