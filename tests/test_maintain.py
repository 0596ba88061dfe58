"""gridlake maintain's VACUUM: LITE (from the Delta log) on most runs, the full one monthly."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gridlake.ops.maintain import _vacuum, vacuum_mode

pytestmark = [pytest.mark.integration]


def test_vacuum_mode_is_full_one_sunday_a_month(monkeypatch):
    monkeypatch.delenv("GRIDLAKE_VACUUM", raising=False)
    sundays = [date(2026, 11, d) for d in (1, 8, 15, 22, 29)]
    assert [vacuum_mode(d) for d in sundays] == ["full", "lite", "lite", "lite", "lite"]
    monkeypatch.setenv("GRIDLAKE_VACUUM", "lite")
    assert vacuum_mode(date(2026, 11, 1)) == "lite"
    monkeypatch.setenv("GRIDLAKE_VACUUM", "full")
    assert vacuum_mode(date(2026, 11, 22)) == "full"


def test_lite_deletes_what_the_log_removed_and_full_also_strays(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    for i in range(3):  # three versions: the first two's files are removed by the overwrites
        spark.range(10 * (i + 1)).coalesce(1).write.format("delta").mode("overwrite").save(path)

    def files() -> set[str]:
        return {p.name for p in Path(path).glob("*.parquet")}

    assert len(files()) == 3
    key = "spark.databricks.delta.retentionDurationCheck.enabled"
    spark.conf.set(key, "false")  # a zero retention, so that the removed files are due now
    try:
        assert _vacuum(spark, path, 168, "lite") == "lite"
        assert len(files()) == 3  # nothing older than the retention
        assert _vacuum(spark, path, 0, "lite") == "lite"
        kept = files()
        assert len(kept) == 1
        stray = Path(path) / "part-00000-stray.snappy.parquet"  # a crashed writer's leftover
        stray.write_bytes(b"x")
        assert _vacuum(spark, path, 0, "lite") == "lite"
        assert stray.exists()  # LITE never lists the folder
        assert _vacuum(spark, path, 0, "full") == "full"
        assert not stray.exists() and files() == kept
    finally:
        spark.conf.unset(key)
    assert spark.read.format("delta").load(path).count() == 30
