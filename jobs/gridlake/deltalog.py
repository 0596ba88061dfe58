"""A Delta table's log, read on the driver: its current version and its latest commits.

``DeltaTable.history(n)`` answers with a DataFrame, so every read of a table's version or of its
last commit's metadata is a Spark query: planned, run as a job, collected (~0.2 s each on two
idle cores, ~0.4 s busy). ``gridlake analyze`` asks that of every input and every gold table it
writes (fingerprints, watermarks, the gate's previous row count), ~100 times a run. Delta's own
``DeltaLog`` answers the same from the log it keeps cached (a listing of ``_delta_log`` and the
commit files since): ~5 ms for the version, ~3 ms for a commit's information, no Spark job.

The version comes from ``DeltaLog``, Delta's internal API (Delta 4.0 here,
``settings.SPARK_PACKAGES``); a commit's information from its file in ``_delta_log`` (the Delta
protocol's layout: one JSON action per line, ``commitInfo`` among them). Should either differ in
another Delta release, each function falls back to the public DataFrame API, with the same
answers, and logs once that it did.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
_FELL_BACK: set[str] = set()


@dataclass(frozen=True)
class Commit:
    """One commit of a table's log (``DESCRIBE HISTORY``'s columns that gridlake reads)."""

    version: int
    operation: str
    user_metadata: str | None
    parameters: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)


def _fallback(what: str, error: Exception) -> None:
    if what not in _FELL_BACK:
        _FELL_BACK.add(what)
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        log.warning("Delta log %s: the direct read failed (%s): the DataFrame API instead", what,
                    reason)  # fmt: skip


def _delta_log(spark: SparkSession, path: str) -> Any:
    jvm = spark._jvm  # type: ignore[attr-defined]
    return jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)


def _snapshot(spark: SparkSession, path: str) -> Any:
    """The table's latest snapshot (the log listed for commits since the cached one)."""
    empty = spark._jvm.scala.Option.empty()  # type: ignore[attr-defined]
    return _delta_log(spark, path).update(False, empty, empty)


def version(spark: SparkSession, path: str) -> int | None:
    """The table's current version; None where no Delta table is."""
    try:
        value = int(_snapshot(spark, path).version())
        return value if value >= 0 else None
    except Exception as error:  # another Delta release: the public API
        _fallback("version", error)
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        return None
    row = DeltaTable.forPath(spark, path).history(1).select("version").first()
    return int(row[0]) if row is not None else None


def partition_columns(spark: SparkSession, path: str) -> tuple[str, ...] | None:
    """The table's partition columns; None where no Delta table is."""
    try:
        snapshot = _snapshot(spark, path)
        if int(snapshot.version()) < 0:
            return None
        return tuple(str(c) for c in _seq(snapshot.metadata().partitionColumns()))
    except Exception as error:
        _fallback("partition columns", error)
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        return None
    row = DeltaTable.forPath(spark, path).detail().select("partitionColumns").first()
    return tuple(row[0] or ()) if row is not None else ()


def _seq(seq: Any) -> list[Any]:
    out = []
    it = seq.iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def _read_text(spark: SparkSession, path: str) -> str:
    """A small file's text, through Hadoop's FileSystem (local disk, HDFS, object stores)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    stream = hpath.getFileSystem(spark._jsc.hadoopConfiguration()).open(hpath)  # type: ignore[attr-defined]
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def _commit_info(spark: SparkSession, path: str, at: int) -> Commit | None:
    """The ``commitInfo`` action of commit ``at`` (its file ``_delta_log/<at>.json``, as the
    Delta protocol lays it out); None when that file is gone (log retention)."""
    import json

    try:
        text = _read_text(spark, f"{path.rstrip('/')}/_delta_log/{at:020d}.json")
    except Exception as error:
        if "FileNotFound" in type(error).__name__ or "FileNotFoundException" in str(error):
            return None
        raise
    for line in text.splitlines():
        if '"commitInfo"' in line:
            info = json.loads(line).get("commitInfo")
            if info is not None:
                text_of = lambda d: {k: v if isinstance(v, str) else json.dumps(v)  # noqa: E731
                                     for k, v in (d or {}).items()}  # fmt: skip
                return Commit(
                    version=at,
                    operation=str(info.get("operation", "")),
                    user_metadata=info.get("userMetadata"),
                    parameters=text_of(info.get("operationParameters")),
                    metrics=text_of(info.get("operationMetrics")),
                )  # fmt: skip
    return Commit(at, "", None)  # a commit without commitInfo (allowed by the protocol)


def commits(spark: SparkSession, path: str, limit: int = 1) -> list[Commit]:
    """The table's latest ``limit`` commits, newest first; [] where no Delta table is.

    Read from the commit files themselves (``DESCRIBE HISTORY`` reads the same), ~3 ms each,
    rather than through ``DeltaTable.history`` (a Spark query, ~0.2 s)."""
    try:
        latest = version(spark, path)
        if latest is None:
            return []
        out = []
        for at in range(latest, max(-1, latest - limit), -1):
            commit = _commit_info(spark, path, at)
            if commit is None:  # older commits cleaned up
                break
            out.append(commit)
        return out
    except Exception as error:
        _fallback("history", error)
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        return []
    rows = (
        DeltaTable.forPath(spark, path).history(limit)
        .select("version", "operation", "userMetadata", "operationParameters", "operationMetrics")
        .collect()
    )  # fmt: skip
    return [Commit(int(r[0]), str(r[1]), r[2], dict(r[3] or {}), dict(r[4] or {})) for r in rows]
