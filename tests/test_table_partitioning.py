"""A gold table whose definition gains partition columns is re-partitioned by its next full
write, with the same rows and its column comments; a weekly (``replaceWhere``) write waits for
that full write. gold.node_saturation gained ``week`` (the dashboards open on one week of it)."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta

import pytest

from gridlake.spark import rows_frame

pytestmark = pytest.mark.integration


def _rows(spark, table, weeks: list[date], hosts: int, salt: float):
    """A few rows of ``table`` (gold.node_saturation): one per host and hour of each week's
    Monday 00:00-02:00, every other column null except a value that depends on ``salt``."""
    from pyspark.sql import functions as F

    midnight = datetime.min.time()
    data = [
        (f"SITE-{h % 2}", f"wn{h:02d}", datetime.combine(w, midnight) + timedelta(hours=k), w,
         salt + h + k / 10)
        for w in weeks for h in range(hosts) for k in range(3)
    ]  # fmt: skip
    df = rows_frame(spark, data, "site STRING, host STRING, hour TIMESTAMP, week DATE, v DOUBLE")
    cols = {c.name: F.lit(None).cast(c.ddl_type) for c in table.columns}
    cols |= {"site": F.col("site"), "host": F.col("host"), "hour": F.col("hour"),
             "week": F.col("week"), "us_mean": F.col("v")}  # fmt: skip
    return df.select(*[cols[c.name].alias(c.name) for c in table.columns])


def _partitions(spark, path) -> list[str]:
    from delta.tables import DeltaTable

    return list(DeltaTable.forPath(spark, path).detail().first()["partitionColumns"])


def _same(a, b) -> bool:
    return a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


def test_a_table_created_unpartitioned_is_repartitioned_by_the_next_full_write(
    spark, settings, tmp_path
) -> None:
    from gridlake.gold.analyze import write_gated
    from gridlake.gold.io_signatures import GOLD_NODE_SATURATION as T

    assert T.partition_by == ("week",)
    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    path = T.path(local)
    weeks = [date(2026, 11, 2), date(2026, 11, 9), date(2026, 11, 16)]
    # as an instance created before the definition changed: no partitions
    _rows(spark, T, weeks, 3, 0.0).write.format("delta").save(path)
    assert _partitions(spark, path) == []
    assert T.partitioning_differs(spark, local)

    # a weekly write (incremental analyze) leaves the layout alone: the full write changes it
    checked: list[tuple] = []
    week = weeks[-1].isoformat()
    newer = _rows(spark, T, weeks[-1:], 3, 100.0)
    write_gated(
        spark, T, newer, "{}", "run-1", local, checked, replace_where=f"week = DATE'{week}'"
    )
    assert _partitions(spark, path) == []
    expected = _rows(spark, T, weeks[:-1], 3, 0.0).unionByName(newer)
    assert _same(spark.read.format("delta").load(path), expected)

    # rows of every week in each of the frame's 4 tasks, as a frame out of a shuffle
    full = _rows(spark, T, weeks, 4, 7.0).repartition(4)
    rows = write_gated(spark, T, full, '{"k": 1}', "run-2", local, checked)
    assert rows == 36
    assert _partitions(spark, path) == ["week"]
    assert not T.partitioning_differs(spark, local)
    read = spark.read.format("delta").load(path)
    assert _same(read.select(*T.column_names), full)
    comments = {f.name: f.metadata.get("comment") for f in read.schema.fields}
    assert comments == {c.name: c.comment for c in T.columns}
    # the files are in one folder per week, and a week's query reads that folder's files only
    folders = sorted(p.name for p in (tmp_path / "warehouse" / "gold" / "node_saturation").iterdir()
                     if p.name.startswith("week="))  # fmt: skip
    assert folders == [f"week={w.isoformat()}" for w in weeks]
    one_week = read.where(f"week = DATE'{week}'").inputFiles()
    assert one_week and all(f"week={week}" in f for f in one_week)
    # one file per week (Delta's optimized write), not one from each task of the frame
    assert len(one_week) == 1, one_week

    # from now on a weekly write replaces that week's partition, and keeps the layout
    again = _rows(spark, T, weeks[-1:], 2, 50.0).repartition(4)
    write_gated(
        spark, T, again, "{}", "run-3", local, checked, replace_where=f"week = DATE'{week}'"
    )
    assert _partitions(spark, path) == ["week"]
    expected = _rows(spark, T, weeks[:-1], 4, 7.0).unionByName(again)
    read = spark.read.format("delta").load(path)
    assert _same(read.select(*T.column_names), expected)
    assert len(read.where(f"week = DATE'{week}'").inputFiles()) == 1


def test_a_registered_table_whose_folder_was_wiped_gets_a_clear_error(
    spark, settings, tmp_path
) -> None:
    import shutil

    from gridlake.gold.io_signatures import GOLD_NODE_SATURATION
    from gridlake.tabledef import TableLocationError, ensure_tables

    db = "gridlake_test_wiped"
    T = dataclasses.replace(GOLD_NODE_SATURATION, database=db)
    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    try:
        ensure_tables(spark, [T], local)
        _rows(spark, T, [date(2026, 11, 16)], 1, 0.0).write.format("delta").mode("append").save(
            T.path(local)
        )
        shutil.rmtree(tmp_path / "warehouse" / db / T.name)  # a wiped disk, a moved folder
        with pytest.raises(TableLocationError) as caught:
            ensure_tables(spark, [T], local)
        message = str(caught.value)
        assert f"{db}.{T.name} is registered" in message
        assert T.path(local) in message and f"DROP TABLE {db}.{T.name}" in message
        # what the message says to do starts the table anew, empty
        spark.sql(f"DROP TABLE {db}.{T.name}")
        ensure_tables(spark, [T], local)
        assert spark.table(f"{db}.{T.name}").count() == 0
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_a_creation_killed_before_its_first_commit_is_created_by_the_next_ensure(
    spark, settings, tmp_path
) -> None:
    """A SIGKILL during a table's first CREATE TABLE can leave its location with a _delta_log
    and no commit (the fault trials met it: refine then failed on every rerun with Delta's
    "is not empty and also not a Delta table"). The next ensure removes that leftover and
    creates the table; a location holding anything more is left alone, and Delta's error
    stands."""
    import shutil

    from gridlake.gold.io_signatures import GOLD_NODE_SATURATION
    from gridlake.tabledef import ensure_tables

    db = "gridlake_test_interrupted"
    T = dataclasses.replace(GOLD_NODE_SATURATION, database=db)
    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    location = tmp_path / "warehouse" / db / T.name
    try:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db} LOCATION '{tmp_path / 'warehouse' / db}'")
        # what the kill left: the log's folders and a commit's temporary file, no commit
        (location / "_delta_log" / "_staged_commits").mkdir(parents=True)
        (location / "_delta_log" / ".00000000000000000000.json.3f2a.tmp").write_text("{")
        ensure_tables(spark, [T], local)
        assert spark.table(f"{db}.{T.name}").count() == 0
        assert sorted(p.name for p in (location / "_delta_log").glob("*.json")) == [
            "00000000000000000000.json"
        ]
        # a stray data file beside an empty log is not a creation's leftover: not removed
        spark.sql(f"DROP TABLE {db}.{T.name}")
        shutil.rmtree(location)
        (location / "_delta_log").mkdir(parents=True)
        (location / "part-0000.parquet").write_bytes(b"PAR1")
        with pytest.raises(Exception, match="not empty"):
            ensure_tables(spark, [T], local)
        assert (location / "part-0000.parquet").exists()
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_a_missing_table_is_created_partitioned_by_a_weekly_write(
    spark, settings, tmp_path
) -> None:
    """No table at the path (its name registered elsewhere, its folder gone): the weekly write
    of an incremental analyze creates it partitioned as declared, not unpartitioned (which the
    next analyze would see as a changed definition and recompute whole)."""
    from gridlake.gold.analyze import write_gated
    from gridlake.gold.io_signatures import GOLD_NODE_SATURATION as T

    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    week = date(2026, 11, 16)
    rows = _rows(spark, T, [week], 3, 1.0)
    checked: list[tuple] = []
    n = write_gated(spark, T, rows, "{}", "run-1", local, checked,
                    replace_where=f"week = DATE'{week.isoformat()}'")  # fmt: skip
    assert n == 9
    assert _partitions(spark, T.path(local)) == ["week"]
    assert not T.partitioning_differs(spark, local)
    assert _same(spark.read.format("delta").load(T.path(local)).select(*T.column_names), rows)
