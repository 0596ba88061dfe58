"""The batch-level volume rule of refine: a collapse of what producers send stops the pipeline."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta

import pytest

from gridlake.silver.refine import arrival_volume, min_volume_share
from gridlake.spark import rows_frame

from .test_validate import GOOD

T0 = datetime(2026, 11, 16)


def hours(n: int) -> datetime:
    return T0 + timedelta(hours=n)


def test_rate_is_records_per_hour_of_kafka_time_since_the_previous_batch() -> None:
    previous = [(hours(3), 100.0), (hours(2), 100.0)]
    v = arrival_volume(50, hours(3) + timedelta(minutes=30), previous)
    assert v.rate_per_hour == pytest.approx(100.0)  # 50 records in half an hour
    assert v.history_median is None and not v.dropped  # two measured batches are too few
    four = [(hours(3 - k), 100.0) for k in range(4)]
    assert arrival_volume(1, hours(4), four).history_median is None  # four still are
    five = [(hours(3 - k), 100.0) for k in range(5)]
    assert arrival_volume(1, hours(4), five).dropped  # five are the history the rule waits for


def test_unmeasurable_spans_give_no_rate() -> None:
    assert arrival_volume(10, hours(1), []).rate_per_hour is None  # the first batch
    burst = arrival_volume(5000, hours(1) + timedelta(minutes=5), [(hours(1), None)])
    assert burst.rate_per_hour is None  # a backfill published at once: 5 minutes of Kafka time
    late = arrival_volume(10, hours(0), [(hours(1), 100.0)])
    assert late.rate_per_hour is None  # only late records: the clock went backwards


def test_drop_against_the_median_of_the_previous_batches() -> None:
    history = [(hours(9 - k), rate) for k, rate in enumerate([90.0, 100, 110, 100, 95, 400])]
    median = 100.0  # of 90, 100, 110, 100, 95, 400
    ok = arrival_volume(21, hours(10), history)  # 21 per hour, just above 20 % of 100
    low = arrival_volume(19, hours(10), history)
    assert ok.history_median == low.history_median == median
    assert min_volume_share() == 0.2
    assert not ok.dropped and low.dropped
    # unmeasured batches in between (bursts) neither count in the history nor hide the last time
    gap = [(hours(9), None), *history[1:]]
    assert arrival_volume(19, hours(10), gap).history_median == pytest.approx(100.0)
    assert arrival_volume(19, hours(10), gap).rate_per_hour == pytest.approx(19.0)
    # only the last ten measured batches count: the six above and four of the older 1000s,
    # median (110 + 400) / 2
    old = [(hours(-k), 1000.0) for k in range(1, 20)]
    assert arrival_volume(19, hours(10), history + old).history_median == pytest.approx(255.0)


@pytest.mark.slow
def test_a_collapsed_batch_is_refused_whole_until_an_operator_accepts_it(
    spark, settings, tmp_path, monkeypatch
) -> None:
    from gridlake.catalog import BATCH_AUDIT, QUALITY_RESULTS, QUARANTINE_JOBS, SILVER_JOBS
    from gridlake.quality import QualityGateError
    from gridlake.silver import refine
    from gridlake.silver.refine import SPECS, RefineStats, process_batch

    # The history the rule waits for (five measured batches: the unit tests above) cut to two,
    # so that three batches before the collapse make the history instead of six (each batch a
    # MERGE and four Delta commits).
    monkeypatch.setattr(refine, "VOLUME_MIN_HISTORY", 2)

    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    tables = (SILVER_JOBS, QUARANTINE_JOBS, BATCH_AUDIT, QUALITY_RESULTS)
    for t in tables:  # empty tables of this warehouse only (the rule reads its own audit)
        ddl = ", ".join(f"`{c.name}` {c.ddl_type}" for c in t.columns)
        rows_frame(spark, [], ddl).write.format("delta").save(t.path(local))

    def batch(n: int, records: int, accept: bool = False) -> None:
        rows = [
            (json.dumps({**GOOD, "job_id": f"vol-{n}-{i}"}), "grid.jobs", 0, n * 1000 + i,
             hours(n) + timedelta(seconds=3600 * (i + 1) / records))
            for i in range(records)
        ]  # fmt: skip
        bronze = rows_frame(
            spark,
            rows,
            "value string, topic string, partition int, offset long, kafka_timestamp timestamp",
        )
        process_batch(spark, SPECS["jobs"], bronze, n, local, RefineStats(), accept)

    def count(t) -> int:
        return spark.read.format("delta").load(t.path(local)).count()

    for n in range(3):  # one batch an hour, 60 records each
        batch(n, 60)
    assert count(SILVER_JOBS) == 180
    with pytest.raises(QualityGateError, match=r"volume drop: 6 records at 6\.0 per hour, below "
                       r"20% of the median 60\.0 per hour"):  # fmt: skip
        batch(3, 6)
    assert (count(SILVER_JOBS), count(BATCH_AUDIT)) == (180, 3)  # nothing of it written
    batch(3, 6, accept=True)
    audit = spark.read.format("delta").load(BATCH_AUDIT.path(local)).orderBy("kafka_ts_max")
    rows = audit.collect()
    assert count(SILVER_JOBS) == 186 and len(rows) == 4
    assert rows[0].arrival_rate_per_hour is None  # the first batch has nothing to compare with
    assert [r.arrival_rate_per_hour for r in rows[1:]] == pytest.approx([60.0] * 2 + [6.0])
    assert [r.volume_drop_accepted for r in rows] == [False] * 3 + [True]
