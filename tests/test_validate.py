"""Validation derived from the JSON Schema contracts: every bad record gets a precise reason."""

from __future__ import annotations

import json

import pytest

from gridlake.silver.jobs import clean_rows, quarantine_rows, validate_jobs
from gridlake.spark import rows_frame

GOOD = {
    "job_id": "j1", "attempt": 1, "vo": "atlas", "site": "S", "host": "h", "job_type": "simul",
    "cpu_model": "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz", "cores": 8,
    "submit_time": "2026-11-16T08:00:00Z", "start_time": "2026-11-16T08:10:00.5Z",
    "end_time": "2026-11-16T10:10:00+00:00", "wall_seconds": 7199.5,
    "cpu_user_seconds": 50000, "cpu_system_seconds": 100, "input_bytes": 10, "output_bytes": 5,
    "status": "success", "exit_code": 0, "source_format": "canonical",
}  # fmt: skip

CASES = [
    ("valid", json.dumps(GOOD), []),
    ("invalid json", "{not json", ["invalid JSON: not one JSON object"]),
    ("json array", "[1, 2]", ["invalid JSON: not one JSON object"]),
    ("empty", "", ["invalid JSON: not one JSON object"]),
    ("string for int", json.dumps({**GOOD, "cores": "eight"}),
     ["wrong type: cores (expected integer)"]),
    ("float for int", json.dumps({**GOOD, "cores": 8.5}), ["wrong type: cores (expected integer)"]),
    ("missing site", json.dumps({k: v for k, v in GOOD.items() if k != "site"}),
     ["missing required field: site"]),
    ("null site", json.dumps({**GOOD, "site": None}), ["missing required field: site"]),
    ("negative wall", json.dumps({**GOOD, "wall_seconds": -5}), ["out of range: wall_seconds < 0"]),
    ("zero cores", json.dumps({**GOOD, "cores": 0}), ["out of range: cores < 1"]),
    ("end before start", json.dumps({**GOOD, "end_time": "2026-11-16T07:00:00Z"}),
     ["end_time before start_time"]),
    ("bad status", json.dumps({**GOOD, "status": "weird"}),
     ["invalid value: status not in ['success', 'failed']"]),
    ("bad timestamp", json.dumps({**GOOD, "start_time": "yesterday"}),
     ["invalid timestamp: start_time"]),
    ("before 2000", json.dumps({**GOOD, "submit_time": "1999-12-31T23:00:00Z"}),
     ["timestamp before 2000: submit_time"]),
    ("in the future", json.dumps({**GOOD, "end_time": "2999-01-01T00:00:00Z"}),
     ["timestamp in the future: end_time"]),
    ("two problems", json.dumps({**GOOD, "cores": 0, "wall_seconds": -1}),
     ["out of range: wall_seconds < 0", "out of range: cores < 1"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def validated(spark):
    rows = [(value, "grid.jobs", 0, i, None) for i, (_, value, _) in enumerate(CASES)]
    df = rows_frame(
        spark,
        rows,
        "value string, topic string, partition int, offset long, kafka_timestamp timestamp",
    )
    return validate_jobs(df).cache()


def test_each_case_gets_its_reasons(validated) -> None:
    got = {r.offset: r._reasons for r in validated.select("offset", "_reasons").collect()}
    for i, (name, _, expected) in enumerate(CASES):
        assert sorted(got[i]) == sorted(expected), name


def test_valid_row_is_typed(validated) -> None:
    (row,) = validated.filter("offset = 0").collect()
    assert row.cores == 8
    assert row.start_time.isoformat() == "2026-11-16T08:10:00.500000"
    assert row.end_time.isoformat() == "2026-11-16T10:10:00"  # +00:00 offset understood


def test_split_reconciles(validated) -> None:
    total = validated.count()
    clean = clean_rows(validated, "b").count()
    quarantined = quarantine_rows(validated, "b")
    assert clean == 1
    assert clean + quarantined.count() == total
    reasons = {r.reason for r in quarantined.collect()}
    assert "out of range: wall_seconds < 0; out of range: cores < 1" in reasons or (
        "out of range: cores < 1; out of range: wall_seconds < 0" in reasons
    )
