"""Disk full during refine: the storage root is a size-limited tmpfs holding a warehouse's bronze,
filled with ballast until little is left, then `gridlake refine` runs out of space half-way.

It must fail with a clear message and its own exit status (75, EX_TEMPFAIL), leave every Delta
table readable (no torn commit: the log of each table loads and its rows read), and the same
command, once the ballast is deleted, must complete from where it stopped: silver then equal,
row for row, to an uninterrupted refine of the same bronze on a roomy disk, every planted bad
record in quarantine once.

Needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN); skipped with the reason otherwise.
Part of `make test-faults`; make test's short form of the fault suite leaves it out
(GRIDLAKE_FAULT_DISK_FULL=0: two refines in their own JVMs, ~3 minutes under its load).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from datetime import date
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from gridlake.settings import get_settings
from gridlake.spark import rows_frame

pytestmark = [pytest.mark.faults]

INPUTS = ("jobs", "nodes", "network")
GRID = {"start": date(2025, 3, 3), "days": 2, "sites": 6, "cpu_models": 3, "jobs": 400,
        "seed": 4242, "monitored_hosts_per_site": 1, "node_interval": 900,
        "latency_interval": 1800, "bad_share": 0.03, "resend_share": 0.03}  # fmt: skip
MOUNT_MB = 256
# what is left free for the refine: a third of what the uninterrupted run wrote
FREE_SHARE = 1 / 3


def _mount_tmpfs(where: Path, mb: int) -> None:
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={mb}m,mode=0700", "tmpfs", str(where)],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs here: {proc.stderr.strip()[:200]}")


def _bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _write_bronze(spark, folder: Path, local) -> None:
    """bronze.<input> of the simulated files, and every other bronze and silver table empty, at
    the storage root of ``local``, by path: the names are registered at the instance's own root,
    so refine's ensure finds them and creates nothing here."""
    from gridlake.catalog import ALL_TABLES, BRONZE
    from gridlake.silver.files import bronze_from_jsonl

    ours = {BRONZE[kind].full_name for kind in INPUTS}
    for t in ALL_TABLES:
        if t.database not in ("bronze", "silver") or t.full_name in ours:
            continue
        ddl = ", ".join(f"`{c.name}` {c.ddl_type}" for c in t.columns)
        writer = rows_frame(spark, [], ddl).write.format("delta")
        if t.partition_by:
            writer = writer.partitionBy(*t.partition_by)
        writer.save(t.path(local))
    for kind in INPUTS:
        df = bronze_from_jsonl(spark, str(folder / f"{kind}.jsonl"), kind).select(
            "*", F.current_timestamp().alias("ingested_at"),
            F.current_date().alias("ingest_date"),
        )  # fmt: skip
        table = BRONZE[kind]
        table.conform(df).write.format("delta").partitionBy(*table.partition_by).save(
            table.path(local)
        )


def _refine(root: Path) -> subprocess.CompletedProcess:
    exe = str(get_settings().home / "venv" / "bin" / "gridlake")
    env = {**os.environ, "GRIDLAKE_SERVER": "off", "GRIDLAKE_STORAGE_ROOT": str(root)}
    cmd = [exe, "refine", "--inputs", ",".join(INPUTS), "--accept-volume-drop"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)


def _commits(root: Path) -> int:
    return sum(1 for _ in root.glob("*/*/_delta_log/*.json"))


def _delta_tables(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/*/_delta_log"))


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("GRIDLAKE_FAULT_DISK_FULL", "1") == "0",
    reason="GRIDLAKE_FAULT_DISK_FULL=0 (make test's short form): make test-faults runs it",
)
def test_refine_on_a_full_disk_fails_clearly_and_its_rerun_completes(spark, tmp_path) -> None:
    from delta.tables import DeltaTable

    from gridlake.catalog import (
        QUARANTINE_JOBS,
        SILVER_JOBS,
        SILVER_NETWORK,
        SILVER_NODE_SAMPLES,
        ensure_all,
    )
    from gridlake.ops.cli import EXIT_NO_SPACE
    from gridlake.ops.compare import differences
    from gridlake.sources.simulate import SimConfig, simulate

    settings = get_settings()
    # Every table registered at the instance's own root first: the refines below, at other
    # roots, then find the names taken and register nothing of theirs (they write by path).
    ensure_all(spark, settings)
    truth = simulate(SimConfig(**GRID), tmp_path / "grid", progress=False)

    # the warehouse before refine (bronze and the empty tables), copied to each root
    pristine = tmp_path / "pristine"
    _write_bronze(
        spark, tmp_path / "grid", dataclasses.replace(settings, storage_root=str(pristine))
    )
    roomy = tmp_path / "roomy"
    shutil.copytree(pristine, roomy)
    bronze_bytes = _bytes(roomy)
    reference = _refine(roomy)
    assert reference.returncode == 0, reference.stderr[-3000:]
    written = _bytes(roomy) - bronze_bytes
    assert written > 1_000_000, written  # enough to run out half-way

    small = tmp_path / "small"
    _mount_tmpfs(small, MOUNT_MB)
    try:
        root = small / "warehouse"
        shutil.copytree(pristine, root)
        free = shutil.disk_usage(small).free
        ballast = small / "ballast"
        leave = int(written * FREE_SHARE)
        with ballast.open("wb") as out:
            out.truncate(0)
            chunk = b"\0" * (1 << 20)
            left = free - leave
            while left > 0:
                out.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
        assert shutil.disk_usage(small).free < written, "the ballast left too much room"

        full = _refine(root)
        assert full.returncode == EXIT_NO_SPACE, (full.returncode, full.stderr[-3000:])
        assert "FAILED: no space left on the device" in full.stderr, full.stderr[-3000:]
        assert "run the same command again" in full.stderr
        # it ran out half-way: after some commits of its own, before its end
        made = _commits(root) - _commits(pristine)
        assert 0 < made < _commits(roomy) - _commits(pristine), made
        print(f"out of space after {made} Delta commits: {full.stderr.strip().splitlines()[-1]}")
        # every table's log loads and its current version reads: nothing torn
        tables = _delta_tables(root)
        assert len(tables) == len(_delta_tables(pristine)), tables
        for path in tables:
            DeltaTable.forPath(spark, str(path)).history(1).collect()
            spark.read.format("delta").load(str(path)).count()

        ballast.unlink()
        again = _refine(root)
        assert again.returncode == 0, again.stderr[-3000:]
    finally:
        # the tables to compare are read before the tmpfs goes
        here = dataclasses.replace(settings, storage_root=str(small / "warehouse"))
        there = dataclasses.replace(settings, storage_root=str(roomy))
        mounted = small.is_mount()
        try:
            if mounted and (small / "warehouse" / "silver").exists():
                copy = tmp_path / "after"
                shutil.copytree(small / "warehouse", copy)
                here = dataclasses.replace(settings, storage_root=str(copy))
        finally:
            if mounted:
                subprocess.run(["umount", str(small)], check=False)

    read = lambda t, s: spark.read.format("delta").load(t.path(s))  # noqa: E731
    for table in (SILVER_JOBS, SILVER_NODE_SAMPLES, SILVER_NETWORK, QUARANTINE_JOBS):
        # the run's own columns differ between the two runs, not the rows (differences leaves
        # out silver's _batch_id and _refined_at itself)
        defn = dataclasses.replace(table, columns=tuple(
            c for c in table.columns if c.name not in ("batch_id", "quarantined_at")))  # fmt: skip
        a, b = read(table, here), read(table, there)
        assert a.count() == b.count() > 0, table.full_name
        bad = differences(a, b, defn).limit(3).collect()
        assert not bad, (table.full_name, bad)
    jobs = read(SILVER_JOBS, here)
    assert jobs.count() == jobs.select("job_id").distinct().count() == truth["counts"]["jobs"]
    planted = {b["key"] for b in truth["bad_records"] if b["topic"] == "grid.jobs"}
    quarantined = read(QUARANTINE_JOBS, here).select(
        F.get_json_object("raw", "$.job_id").alias("job_id")
    )
    assert {r.job_id for r in quarantined.collect()} == planted


JVM_TEXT = "[STREAM_FAILED] ... java.io.IOException: No space left on device\n\tat java.base/..."


@pytest.mark.parametrize(
    ("raise_it", "full"),
    [
        (lambda: _raise(OSError(28, "No space left on device")), True),
        (lambda: _raise(RuntimeError(JVM_TEXT)), True),
        (lambda: _chained(OSError(28, "No space left on device")), True),
        (lambda: _raise(OSError(13, "Permission denied")), False),
        (lambda: _raise(ValueError("quality gate failed for silver.jobs")), False),
    ],
    ids=["oserror", "jvm-text", "chained", "other-oserror", "other"],
)
def test_a_disk_full_error_is_recognised_wherever_it_is_raised(raise_it, full) -> None:
    from gridlake.ops.cli import _no_space

    with pytest.raises(Exception) as info:
        raise_it()
    assert _no_space(info.value) is full


def _raise(exc: BaseException) -> None:
    raise exc


def _chained(cause: BaseException) -> None:
    try:
        raise cause
    except OSError as exc:
        raise RuntimeError("refine jobs failed") from exc
