"""The metastore (Derby) restarted while `gridlake refine` runs: nothing lost, nothing doubled.

A warehouse's bronze (the disk-full trial's simulated two days, with planted bad records and
re-sends) at a storage root of its own; `gridlake refine` of jobs, nodes and network in its own
process. Once its first silver commit is on disk, Derby is stopped (by PID), left down for
``DOWN_S`` seconds and started again, while refine goes on to its next inputs (each begins with
metastore calls: the tables it ensures). refine either completes (Hive's client retries its
calls) or fails with the metastore's error, and then its re-run completes; either way silver and
quarantine must equal, row for row, an uninterrupted refine of the same bronze.

Part of `make test-faults`; make test's short form leaves it out (GRIDLAKE_FAULT_METASTORE=0).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gridlake.settings import get_settings

from ..conftest import infra
from .test_disk_full import GRID, INPUTS, _commits, _write_bronze

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

DOWN_S = 15


def _refine_cmd() -> list[str]:
    exe = str(get_settings().home / "venv" / "bin" / "gridlake")
    return [exe, "refine", "--inputs", ",".join(INPUTS), "--accept-volume-drop"]


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "GRIDLAKE_SERVER": "off", "GRIDLAKE_STORAGE_ROOT": str(root)}


@pytest.mark.skipif(
    os.environ.get("GRIDLAKE_FAULT_METASTORE", "1") == "0",
    reason="GRIDLAKE_FAULT_METASTORE=0 (make test's short form): make test-faults runs it",
)
def test_a_metastore_restart_during_refine_loses_and_doubles_nothing(
    spark, derby, tmp_path
) -> None:
    from gridlake.catalog import (
        QUARANTINE_JOBS,
        SILVER_JOBS,
        SILVER_NETWORK,
        SILVER_NODE_SAMPLES,
        ensure_all,
    )
    from gridlake.ops.compare import differences
    from gridlake.sources.simulate import SimConfig, simulate

    settings = get_settings()
    ensure_all(spark, settings)  # the names taken at the instance's root (see test_disk_full)
    truth = simulate(SimConfig(**GRID), tmp_path / "grid", progress=False)
    pristine = tmp_path / "pristine"
    _write_bronze(
        spark, tmp_path / "grid", dataclasses.replace(settings, storage_root=str(pristine))
    )
    calm, shaken = tmp_path / "calm", tmp_path / "shaken"
    shutil.copytree(pristine, calm)
    shutil.copytree(pristine, shaken)

    reference = subprocess.run(_refine_cmd(), capture_output=True, text=True, env=_env(calm),
                               timeout=1500)  # fmt: skip
    assert reference.returncode == 0, reference.stderr[-3000:]

    before = _commits(shaken)
    log = tmp_path / "refine.err"
    with log.open("w") as err_file:  # a file, not a pipe: refine never waits on this test
        proc = subprocess.Popen(_refine_cmd(), env=_env(shaken), stdout=subprocess.DEVNULL,
                                stderr=err_file)  # fmt: skip
    deadline = time.monotonic() + 600
    while _commits(shaken) == before and proc.poll() is None:
        assert time.monotonic() < deadline, "refine made no commit in 10 minutes"
        time.sleep(0.2)
    restarted = proc.poll() is None  # still running at its first commit: the trial is on
    if restarted:
        infra("derby.sh", "stop")
        down_at = _commits(shaken) - before
        time.sleep(DOWN_S)
        infra("derby.sh", "start")
    proc.wait(timeout=1500)
    err = log.read_text(errors="replace")
    print(
        f"metastore down for {DOWN_S} s after {down_at if restarted else '-'} commits; "
        f"refine exit {proc.returncode}, {err.count('Retrying HMSHandler')} metastore call "
        "retries in its log"
    )
    assert restarted, "refine ended before its first commit was seen"
    if proc.returncode != 0:
        # a failure must say why, and the re-run completes
        assert "metastore" in err.lower() or "derby" in err.lower() or "connect" in err.lower(), (
            err[-3000:]
        )
        again = subprocess.run(_refine_cmd(), capture_output=True, text=True,
                               env=_env(shaken), timeout=1500)  # fmt: skip
        assert again.returncode == 0, again.stderr[-3000:]

    read = lambda t, root: spark.read.format("delta").load(  # noqa: E731
        t.path(dataclasses.replace(settings, storage_root=str(root)))
    )
    for table in (SILVER_JOBS, SILVER_NODE_SAMPLES, SILVER_NETWORK, QUARANTINE_JOBS):
        defn = dataclasses.replace(table, columns=tuple(
            c for c in table.columns if c.name not in ("batch_id", "quarantined_at")))  # fmt: skip
        a, b = read(table, shaken), read(table, calm)
        assert a.count() == b.count() > 0, table.full_name
        bad = differences(a, b, defn).limit(3).collect()
        assert not bad, (table.full_name, bad)
    jobs = read(SILVER_JOBS, shaken)
    assert jobs.count() == jobs.select("job_id").distinct().count() == truth["counts"]["jobs"]
    # the session's own metastore is back: the instance's tables are still there
    assert spark.sql("SHOW TABLES IN silver").count() > 0
