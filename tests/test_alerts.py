"""Alerts (gridlake.alerts): the pending file the DAGs' failure callback writes, merged into
ops.alerts once and only once, whatever crashes between the merge and the file's removal; a
refused batch is one alert whatever the number of its task's retries. (The callback itself:
tests/test_dags.py, test_failed_quality_gate_fails_its_task_with_the_reason.)"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from gridlake import alerts
from gridlake.settings import get_settings

pytestmark = [pytest.mark.integration]


def _line(**over: object) -> str:
    alert = {
        "kind": "task_failed",
        "subject": "grid_ingest.refine_jobs",
        "message": "AirflowException: Bash command failed",
        "raised_at": "2026-11-28T10:15:00",
        "dag_id": "grid_ingest",
        "task_id": "refine_jobs",
        "run_id": "scheduled__2026-11-28T10:00:00+00:00",
        "try_number": 3,
        "log": "/x/attempt=3.log",
    }
    return json.dumps({**alert, **over})


def _in_table(spark, ids: list[str]) -> list[str]:
    df = spark.read.format("delta").load(alerts.ALERTS.path())
    return sorted(r.alert_id for r in df.where(df.alert_id.isin(ids)).collect())


def test_alert_identity() -> None:
    one = alerts.Alert.from_json(_line())
    assert one.alert_id == alerts.Alert.from_json(_line(raised_at="2026-11-28T11:00:00")).alert_id
    # a task failed again after being cleared is a new alert; a refused batch refused again by
    # the task's retry is the same one
    assert one.alert_id != alerts.Alert.from_json(_line(try_number=6)).alert_id
    refused = {"kind": "batch_refused", "subject": "silver.jobs", "message": "volume drop"}
    assert (
        alerts.Alert.from_json(_line(**refused, try_number=1)).alert_id
        == alerts.Alert.from_json(_line(**refused, try_number=2)).alert_id
    )
    with pytest.raises(ValueError, match="alert kind"):
        alerts.Alert.from_json(_line(kind="oops"))


def test_flush_merges_each_pending_alert_once(spark) -> None:
    settings = get_settings()
    pending = alerts.pending_path(settings)
    pending.parent.mkdir(parents=True, exist_ok=True)
    for stale in pending.parent.glob("*"):
        stale.unlink()
    tag = datetime.now().isoformat()  # this run's alerts: the table outlives test sessions
    a, b, c = (_line(run_id=f"{tag}-{n}") for n in "abc")
    ids = [alerts.Alert.from_json(x).alert_id for x in (a, b, c)]

    pending.write_text(f"{a}\n{b}\nnot an alert\n{a}\n")
    assert alerts.flush(spark, settings) == (3, 2)  # a twice in the file: one row
    assert _in_table(spark, ids) == sorted(ids[:2])
    assert not pending.exists()
    rejected = pending.with_name("pending.rejected").read_text()
    assert "not an alert" in rejected and "JSONDecodeError" in rejected

    # A flush that crashed after its MERGE left the file it took; the callback appended c since.
    pending.with_name("flushing-4242.jsonl").write_text(f"{a}\n{b}\n")
    pending.write_text(f"{c}\n")
    assert alerts.flush(spark, settings) == (3, 1)
    assert _in_table(spark, ids) == sorted(ids)
    assert sorted(p.name for p in pending.parent.iterdir()) == ["pending.rejected"]
    assert alerts.flush(spark, settings) == (0, 0)  # nothing pending

    recent = alerts.recent(spark, days=100_000).where("run_id LIKE '" + tag + "%'")
    assert sorted(r.run_id for r in recent.collect()) == [f"{tag}-{n}" for n in "abc"]


def test_a_refused_batch_is_one_alert_across_its_tasks_retries(spark, monkeypatch) -> None:
    """What `gridlake refine` does when its gate refuses a batch (cmd_refine -> _refused), in two
    tries of the same Airflow task: one batch_refused row with the gate's reason."""
    from gridlake.ops.cli import _refused

    tag = datetime.now().isoformat()
    reason = f"quality gate failed for silver.jobs: volume drop ({tag})"
    monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "grid_ingest")
    monkeypatch.setenv("AIRFLOW_CTX_TASK_ID", "refine_jobs")
    monkeypatch.setenv("AIRFLOW_CTX_DAG_RUN_ID", f"scheduled__{tag}")
    for try_number in ("1", "2"):
        monkeypatch.setenv("AIRFLOW_CTX_TRY_NUMBER", try_number)
        _refused(spark, "jobs", reason)
    df = spark.read.format("delta").load(alerts.ALERTS.path())
    rows = df.where(df.message == reason).collect()
    assert [(r.kind, r.subject, r.dag_id, r.task_id, r.try_number) for r in rows] == [
        ("batch_refused", "silver.jobs", "grid_ingest", "refine_jobs", 1)
    ]
