"""gridlake.deltalog reads a table's version, partition columns and latest commits from its log
with no Spark query; its answers must be those of Delta's own DataFrame API (``history``,
``detail``), and its fallback (that API, should a Delta release change the internals it uses)
must give the same answers."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration


def _history(spark, path) -> list[tuple]:
    from delta.tables import DeltaTable

    rows = (
        DeltaTable.forPath(spark, path).history()
        .select("version", "operation", "userMetadata", "operationParameters", "operationMetrics")
        .collect()
    )  # fmt: skip
    return [(r[0], r[1], r[2], dict(r[3] or {}), dict(r[4] or {})) for r in rows]


def _as_tuples(commits) -> list[tuple]:
    return [(c.version, c.operation, c.user_metadata, c.parameters, c.metrics) for c in commits]


@pytest.fixture
def table(spark, tmp_path) -> str:
    """A partitioned Delta table with five commits of different kinds."""
    from gridlake.spark import rows_frame

    path = str(tmp_path / "t")
    df = rows_frame(spark, [(1, "a"), (2, "b"), (3, "a")], "n INT, p STRING")
    df.write.format("delta").partitionBy("p").save(path)  # 0: WRITE, no metadata
    meta = json.dumps({"who": "test", "rows": 3, "nested": {"k": [1, 2]}})
    df.write.format("delta").mode("overwrite").option("userMetadata", meta).save(path)  # 1
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('x.y' = '{{\"a\": 1}}')")  # 2
    df.where("n = 2").write.format("delta").mode("append").save(path)  # 3: append
    spark.sql(f"DELETE FROM delta.`{path}` WHERE n = 1")  # 4: DELETE (a predicate parameter)
    return path


def test_the_log_read_directly_agrees_with_delta_history(spark, table, tmp_path) -> None:
    from gridlake import deltalog

    assert deltalog.version(spark, table) == 4
    assert deltalog.partition_columns(spark, table) == ("p",)
    expected = _history(spark, table)
    assert [c[1] for c in expected] == ["DELETE", "WRITE", "SET TBLPROPERTIES", "WRITE", "WRITE"]
    assert _as_tuples(deltalog.commits(spark, table, 10)) == expected
    assert _as_tuples(deltalog.commits(spark, table, 2)) == expected[:2]
    latest = deltalog.commits(spark, table, 1)[0]
    assert latest.operation == "DELETE" and int(latest.metrics["numDeletedRows"]) == 1
    assert json.loads(deltalog.commits(spark, table, 4)[3].user_metadata)["rows"] == 3
    assert not deltalog._FELL_BACK  # the direct reads answered, not the fallback

    # a folder without a table: no version, no commits, and nothing created there
    nothing = tmp_path / "nothing"
    assert deltalog.version(spark, str(nothing)) is None
    assert deltalog.commits(spark, str(nothing), 3) == []
    assert deltalog.partition_columns(spark, str(nothing)) is None
    assert not nothing.exists()


def test_the_fallback_gives_the_same_answers(spark, table, monkeypatch) -> None:
    from gridlake import deltalog

    direct = (
        deltalog.version(spark, table),
        deltalog.partition_columns(spark, table),
        _as_tuples(deltalog.commits(spark, table, 10)),
    )

    def broken(*_args):
        raise RuntimeError("no such method in this Delta release")

    monkeypatch.setattr(deltalog, "_snapshot", broken)
    monkeypatch.setattr(deltalog, "_read_text", broken)
    monkeypatch.setattr(deltalog, "_FELL_BACK", set())
    fallback = (
        deltalog.version(spark, table),
        deltalog.partition_columns(spark, table),
        _as_tuples(deltalog.commits(spark, table, 10)),
    )
    fell_back = deltalog._FELL_BACK
    assert fell_back == {"version", "partition columns", "history"}
    assert fallback == direct
