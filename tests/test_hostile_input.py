"""Hostile input at every entry (issue #26): each malformed kind ends exactly once, with a reason.

For each input type (jobs, node samples, network results, accounting summaries) a matrix of at
least 20 malformed kinds, built from one valid record of the type: what `gridlake publish` refuses
at the door (dead-lettered with file:line: not JSON, NaN/Infinity, a key twice, nesting too deep,
bytes that are not UTF-8, a line over 1 MiB, ...) and what passes the door but breaks the contract
(quarantined by the silver layer with a reason: an empty or padded id, a control character, a
millisecond epoch for a time, "NaN" in a number field, ...). The silver layer is also checked on
its own with every kind, since another producer may write to the topics without publish.

Each reader of a source format is fuzzed (Hypothesis, derandomized: the same examples in every
run, a bounded number per format): mutated real samples never make a reader raise, and every
item it yields is a canonical record that serialises as strict JSON or a rejection with a reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridlake.contracts import contract
from gridlake.sources.base import RAW_LIMIT, Rejected
from gridlake.sources.publish import MAX_LINE_BYTES, _canonical_lines, classify_bytes
from gridlake.spark import rows_frame

from .conftest import REALDATA

GOOD: dict[str, dict[str, Any]] = {
    "jobs": {
        "job_id": "ce01.example.org#1234.0#1763280000", "attempt": 1, "vo": "atlas",
        "site": "CERN-PROD", "host": "wn001.example.org", "job_type": "simul",
        "cpu_model": "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz", "cores": 8,
        "submit_time": "2026-11-16T08:00:00Z", "start_time": "2026-11-16T08:10:00Z",
        "end_time": "2026-11-16T10:10:00Z", "wall_seconds": 7200.0,
        "cpu_user_seconds": 50000.0, "cpu_system_seconds": 100.0, "input_bytes": 10,
        "output_bytes": 5, "status": "success", "exit_code": 0, "source_format": "canonical",
    },
    "nodes": {
        "site": "CERN-PROD", "host": "wn001.example.org", "ts": "2026-11-16T08:00:00Z",
        "interval_seconds": 60.0, "kind": "vmstat", "r": 2.0, "b": 0.0, "us": 55.0, "sy": 5.0,
        "id": 38.0, "wa": 2.0, "st": 0.0,
    },
    "network": {
        "src_site": "CERN-PROD", "dst_site": "FNAL", "src_host": "ps01.cern.ch",
        "dst_host": "ps01.fnal.gov", "ts": "2026-11-16T08:00:00Z", "test": "latency",
        "delay_mean_ms": 70.2, "delay_median_ms": 70.0, "delay_min_ms": 69.5,
        "delay_sd_ms": 0.4, "packet_loss": 0.0, "tool": "owping",
    },
    "accounting_summaries": {
        "summary_key": "2026-10|AGLT2|atlas|/atlas|production|||Gratia-OSG|1|8|HEPSPEC|10.0",
        "site": "AGLT2", "month": 10, "year": 2026, "vo": "atlas",
        "wall_duration_seconds": 3600000, "cpu_duration_seconds": 3000000,
        "number_of_jobs": 1000, "service_level_type": "HEPSPEC", "service_level": 10.0,
        "earliest_end_time": "2026-10-01T00:10:00Z", "latest_end_time": "2026-10-31T23:50:00Z",
        "source_format": "apel-summary",
    },
}  # fmt: skip

# Per type: the key, a second name field, a number field, a date-time field, a field with a
# minimum (and a value below it) and an enum field, each as the type's contract has them.
SHAPE: dict[str, dict[str, Any]] = {
    "jobs": {"key": "job_id", "name": "site", "number": "wall_seconds", "when": "end_time",
             "minimum": ("cores", 0), "enum": "status"},
    "nodes": {"key": "host", "name": "site", "number": "us", "when": "ts",
              "minimum": ("interval_seconds", -60.0), "enum": "kind"},
    "network": {"key": "src_host", "name": "dst_host", "number": "packet_loss", "when": "ts",
                "minimum": ("packet_loss", 1.5), "enum": "test"},
    "accounting_summaries": {"key": "summary_key", "name": "site", "number": "service_level",
                             "when": "earliest_end_time", "minimum": ("month", 13), "enum": None},
}  # fmt: skip

DEEP = 100_000  # levels of nesting: Python's parser recurses, Spark's stops at its depth limit
# Kinds that parse as one JSON object in Spark although they are not one (Spark's parser stops
# after the first object and ignores what follows): publish is the door that refuses them.
SILVER_BLIND = {"two objects on one line", "trailing garbage"}


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record).encode()


def malformed(name: str) -> list[tuple[str, bytes, str]]:
    """(kind, the line's bytes, the first layer that must refuse it: publish or silver)."""
    good, s = GOOD[name], SHAPE[name]
    text = _line(good)
    key, field, number, when = s["key"], s["name"], s["number"], s["when"]
    low_field, low_value = s["minimum"]

    def without(f: str) -> bytes:
        return _line({k: v for k, v in good.items() if k != f})

    def with_(**changes: Any) -> bytes:
        return _line({**good, **changes})

    at_door = [
        ("not JSON", b"{not json"),
        ("cut in half", text[: len(text) // 2]),
        ("a JSON array", b"[" + text + b"]"),
        ("a bare string", b'"a record"'),
        ("a bare number", b"42"),
        ("null", b"null"),
        ("NaN literal", with_(**{number: float("nan")})),  # json.dumps writes NaN
        ("Infinity literal", with_(**{number: float("-inf")})),
        ("a number beyond a double", with_(**{number: 12345.5}).replace(b"12345.5", b"1e999")),
        ("a key twice", text[:-1] + f', "{key}": "someone-else"}}'.encode()),
        ("nested too deeply", text[:-1] + b', "deep": ' + b"[" * DEEP + b"]" * DEEP + b"}"),
        ("not UTF-8", with_(**{key: "id-XYZ"}).replace(b"XYZ", b"\xff\xfe")),
        ("over 1 MiB", with_(**{key: "x" * (MAX_LINE_BYTES + 10)})),
        ("two objects on one line", text + text),
        ("trailing garbage", text + b" and more"),
    ]
    past_door = [
        ("an empty object", b"{}"),
        ("key missing", without(key)),
        ("key null", with_(**{key: None})),
        ("key empty", with_(**{key: ""})),
        ("key only spaces", with_(**{key: "   "})),
        ("key padded with spaces", with_(**{key: " id-1 "})),
        ("key with a control character", with_(**{key: "id\u00011"})),
        ("key with a newline at its end", with_(**{key: "id-1\n"})),
        ("key too long", with_(**{key: "k" * 5000})),
        ("name empty", with_(**{field: ""})),
        ("name an object", with_(**{field: {"name": "CERN"}})),
        ("NaN as a string", with_(**{number: "NaN"})),
        ("Infinity as a string", with_(**{number: "Infinity"})),
        ("text in a number field", with_(**{number: "fast"})),
        ("true in a number field", with_(**{number: True})),
        ("time as epoch milliseconds", with_(**{when: 1763280000000})),
        ("time as milliseconds text", with_(**{when: "1763280000000"})),
        ("time not RFC 3339", with_(**{when: "16/11/2026 08:00"})),
        ("time before 2000", with_(**{when: "1999-12-31T23:00:00Z"})),
        ("time in the future", with_(**{when: "2999-01-01T00:00:00Z"})),
        ("below its minimum", with_(**{low_field: low_value})),
    ]
    if s["enum"]:
        past_door.append(("not in the enum", with_(**{s["enum"]: "something-else"})))
    return [(k, raw, "publish") for k, raw in at_door] + [
        (k, raw, "silver") for k, raw in past_door
    ]


TYPES = tuple(GOOD)


def _silver_reasons(spark, name: str, lines: list[bytes]) -> list[list[str]]:
    """The silver layer's reasons for each line, as bronze hands it over (Kafka's bytes cast to
    a string: undecodable bytes become U+FFFD)."""
    from gridlake.silver.validate import parse_and_validate

    rows = [(raw.decode("utf-8", errors="replace"), i) for i, raw in enumerate(lines)]
    df = rows_frame(spark, rows, "value string, i long")
    out = parse_and_validate(df, contract(name)).select("i", "_reasons").collect()
    return [r._reasons for r in sorted(out, key=lambda r: r.i)]


@pytest.mark.parametrize("name", TYPES)
def test_at_least_twenty_kinds_per_type_each_refused_at_the_door_or_quarantined(spark, name):
    kinds = malformed(name)
    assert len(kinds) >= 20, len(kinds)
    assert len({k for k, _, _ in kinds}) == len(kinds)

    # The door (publish): refuses exactly the kinds marked for it, each with a reason; lets the
    # others through as one JSON object, for the silver layer to judge against the contract.
    _good_text, good_record, good_reason = classify_bytes(_line(GOOD[name]))
    assert good_record == GOOD[name] and good_reason is None
    for kind, raw, layer in kinds:
        _text, record, reason = classify_bytes(raw)
        if layer == "publish":
            assert record is None and reason, (kind, reason)
        else:
            assert reason is None and isinstance(record, dict), (kind, reason)

    # The silver layer: every kind that passed the door is quarantined with a reason, and so is
    # every kind it can see on its own (a producer that bypasses publish), the valid record not.
    lines = [_line(GOOD[name])] + [raw for _, raw, _ in kinds]
    reasons = _silver_reasons(spark, name, lines)
    assert reasons[0] == [], reasons[0]
    by_kind = {k: r for (k, _, _), r in zip(kinds, reasons[1:], strict=True)}
    missed = [k for k, r in by_kind.items() if not r and k not in SILVER_BLIND]
    assert not missed, f"{name}: kinds the silver layer let through: {missed}"
    # what the door refuses but silver cannot see is exactly the documented blind spot
    assert {k for k, r in by_kind.items() if not r} == SILVER_BLIND

    # Every malformed record ends in exactly one place: dead letter (the door) or quarantine.
    dead = [k for k, _, layer in kinds if layer == "publish"]
    quarantined = [k for k, _, layer in kinds if layer == "silver" and by_kind[k]]
    assert len(dead) + len(quarantined) == len(kinds)

    # The reasons say what is wrong.
    s = SHAPE[name]
    key, number, when = s["key"], s["number"], s["when"]
    assert f"too short: {key} (minLength 1)" in by_kind["key empty"]
    assert f"invalid format: {key} (pattern)" in by_kind["key padded with spaces"]
    assert f"invalid format: {key} (pattern)" in by_kind["key with a control character"]
    assert f"invalid format: {key} (pattern)" in by_kind["key with a newline at its end"]
    assert any(r.startswith(f"too long: {key} (maxLength") for r in by_kind["key too long"])
    # quoted "NaN"/"Infinity" in a number field: Spark's parser, told to refuse non-numeric
    # numbers, refuses the quoted forms as well; 1e999 it reads as infinity, caught after it
    assert f"wrong type: {number} (expected number)" in by_kind["NaN as a string"]
    assert f"wrong type: {number} (expected number)" in by_kind["Infinity as a string"]
    assert f"not a finite number: {number}" in by_kind["a number beyond a double"]
    assert f"invalid timestamp: {when}" in by_kind["time as epoch milliseconds"]
    assert "duplicate key in the JSON object" in by_kind["a key twice"]
    assert by_kind["NaN literal"] == ["invalid JSON: not one JSON object"]
    assert by_kind["nested too deeply"] == ["invalid JSON: not one JSON object"]
    assert "not valid UTF-8 (bytes replaced)" in by_kind["not UTF-8"]


def test_a_file_of_hostile_lines_is_dead_lettered_line_by_line(tmp_path: Path) -> None:
    """Through the reader publish uses: each refused line with its own line number, its shown
    text clipped to RAW_LIMIT bytes (a dead letter must fit in a Kafka message), the good lines
    and the ones for silver to judge passed on, blank lines skipped."""
    kinds = malformed("jobs")
    path = tmp_path / "hostile.jsonl"
    good = _line(GOOD["jobs"])
    with path.open("wb") as fh:
        for _, raw, _ in kinds:
            fh.write(raw + b"\n" + good + b"\n\n")  # each kind, a good line, a blank line
    items = list(_canonical_lines(path, None))
    dead = [i for i in items if not isinstance(i, tuple)]
    passed = [i for i in items if isinstance(i, tuple)]
    at_door = [k for k, _, layer in kinds if layer == "publish"]
    assert [d.line_number for d in dead] == [
        1 + 3 * n for n, (_, _, layer) in enumerate(kinds) if layer == "publish"
    ]
    assert len(dead) == len(at_door)
    assert len(passed) == len(kinds) - len(at_door) + len(kinds)
    for d, kind in zip(dead, at_door, strict=True):
        assert d.location == f"line {d.line_number}" and d.reason, kind
        assert len(d.raw.encode()) <= RAW_LIMIT, kind
    reasons = dict(zip(at_door, (d.reason for d in dead), strict=True))
    assert reasons["not UTF-8"].startswith("not UTF-8: byte 0xff at byte ")
    assert re.fullmatch(r"line of 1,04\d,\d{3} bytes, over the 1,048,576-byte limit",
                        reasons["over 1 MiB"]), reasons["over 1 MiB"]  # fmt: skip
    assert "duplicate key 'job_id'" in reasons["a key twice"]
    assert "non-finite number NaN" in reasons["NaN literal"]
    assert "1e999 beyond a double's range" in reasons["a number beyond a double"]
    assert reasons["nested too deeply"] == "invalid JSON: nested too deeply to parse"


# --- fuzzing the readers ------------------------------------------------------------------------

# (format, a real sample, reader options): options as an operator passes them on the command line
FUZZ_SEEDS: dict[str, tuple[str, dict[str, Any]]] = {
    "htcondor": ("htcondor-classads-fnal-fifebatch/fifebatch1_dune_job_ads_2017.classad",
                 {"site": "FNAL"}),
    "htcondor-apel": ("apel-parser-test-fixtures/htcondor_condor_history_apel_lines.txt",
                      {"site": "S"}),
    "slurm": ("apel-parser-test-fixtures/slurm_sacct_pipe_lines.txt", {"site": "S"}),
    "swf": ("pwa-swf-small-samples-gridsim/l_sdsc_blue.swf.txt", {"site": "S"}),
    "pbs": ("apel-parser-test-fixtures/pbs_torque_accounting_E_records.txt", {"site": "S"}),
    "sge": ("apel-parser-test-fixtures/sge_accounting_lines.txt", {"site": "S"}),
    "lsf": ("apel-parser-test-fixtures/lsf_lsb_acct_JOB_FINISH_lines.txt", {"site": "S"}),
    "cream-blah": ("apel-parser-test-fixtures/cream_blah_accounting_lines.txt", {}),
    "supremm": ("supremm-job-summaries/pcp_4655275-1445928790.json", {"site": "S"}),
    "apel-summary": ("osg-gracc-apel-summaries/01_2016.apel", {}),
    "vmstat": ("jc-fixtures-vmstat-iostat/ubuntu-18.04__vmstat-1-long.out",
               {"site": "S", "host": "h", "start": "2026-11-16T08:00:00Z"}),
    "iostat": ("jc-fixtures-vmstat-iostat/ubuntu-18.04__iostat-1.out",
               {"site": "S", "host": "h", "start": "2026-11-16T08:00:00Z", "keep_first": True}),
    "iostat-json": ("iostat-mpstat-json-pkb/pkb__iostat_output.json", {"site": "S", "host": "h"}),
    "sadf-json": ("sysstat-test-sa-files/sadf_j_data-12.0.0.json", {"site": "S"}),
    "esmond": ("geant-perfsonar-esmond/histogram-owdelay-300.json", {}),
    "ps5": ("pscheduler-results-json/pscheduler_results_from_esmond_util_test.json", {}),
}  # fmt: skip
# Formats without a real sample here: their tests' own documents are the seeds.
FUZZ_SEEDS_FROM_TESTS = ("htcondor-json", "apel-job", "osg-netds")
SEED_BYTES = 12_000  # the start of each sample: records of every shape, fast to re-read

NASTY = [b"\xff\xfe", b"NaN", b"-Infinity", b"1e999", b"9" * 40, b"-1", b"0", b"\x00", b"\n",
         b"\r\n", b'"', b"{", b"}", b"[", b"]", b"=", b"|", b":", b",", b"\t", b" ", b"null",
         b"1763280000000", b"2026-13-45T25:61:61Z", b"\\", b"\xc3(", b"\xe2\x82"]  # fmt: skip


def _seed(fmt: str, tmp_path: Path) -> tuple[bytes, dict[str, Any]]:
    if fmt in FUZZ_SEEDS:
        rel, opts = FUZZ_SEEDS[fmt]
        path = REALDATA / rel
        if not path.is_file():
            pytest.skip(f"real sample {path} absent")
        return path.read_bytes()[:SEED_BYTES], opts
    from . import test_adapters_jobs as tj
    from . import test_adapters_nodes as tn

    if fmt == "htcondor-json":
        if not tj.CONDOR_ADS.is_file():
            pytest.skip("real HTCondor ads absent")
        return tj._json_ads(tmp_path).read_bytes(), {"site": "FNAL"}
    if fmt == "apel-job":
        return tj.APEL_JOBS.encode(), {"fill_unknown": True, "host": "wn"}
    assert fmt == "osg-netds"
    return ("\n".join(json.dumps(d) for d in tn.OSG_DOCS) + "\n").encode(), {"dst_site": "MWT2"}


@st.composite
def mutations(draw, size: int) -> list[tuple[str, int, int, bytes]]:
    ops = []
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["delete", "insert", "duplicate", "replace", "truncate"]))
        start = draw(st.integers(0, size))
        end = draw(st.integers(start, min(size, start + 400)))
        text = draw(st.one_of(st.sampled_from(NASTY), st.binary(max_size=24)))
        ops.append((op, start, end, text))
    return ops


def _mutate(seed: bytes, ops: list[tuple[str, int, int, bytes]]) -> bytes:
    data = bytearray(seed)
    for op, start, end, text in ops:
        start, end = min(start, len(data)), min(end, len(data))
        if op == "delete":
            del data[start:end]
        elif op == "insert":
            data[start:start] = text
        elif op == "duplicate":
            data[end:end] = data[start:end]
        elif op == "replace":
            data[start:end] = text
        else:
            del data[end:]
    return bytes(data)


@pytest.mark.parametrize("fmt", sorted([*FUZZ_SEEDS, *FUZZ_SEEDS_FROM_TESTS]))
def test_fuzzed_samples_never_crash_a_reader(fmt: str, tmp_path: Path) -> None:
    from gridlake.sources.registry import FORMATS

    assert set(FORMATS) == {*FUZZ_SEEDS, *FUZZ_SEEDS_FROM_TESTS}, "a format without a fuzz seed"
    _topic, reader = FORMATS[fmt]
    seed, opts = _seed(fmt, tmp_path)
    path = tmp_path / f"fuzzed-{fmt}"

    @settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(ops=mutations(len(seed)))  # fmt: skip
    def one(ops: list[tuple[str, int, int, bytes]]) -> None:
        path.write_bytes(_mutate(seed, ops))
        for item in reader(path, **opts):  # an exception here is a reader's crash: the failure
            if isinstance(item, Rejected):
                assert item.reason and item.location, item
                assert len(item.raw.encode()) <= RAW_LIMIT
            else:
                assert isinstance(item, dict), item
                json.dumps(item, allow_nan=False)  # strict JSON: no NaN or Infinity slips out

    one()


def test_the_fuzz_seeds_hold_records(tmp_path: Path) -> None:
    """Each seed, unmutated, gives the reader records to chew on (a seed that yields nothing
    would make its fuzzing vacuous)."""
    from gridlake.sources.registry import FORMATS

    for fmt in sorted([*FUZZ_SEEDS, *FUZZ_SEEDS_FROM_TESTS]):
        try:
            seed, opts = _seed(fmt, tmp_path)
        except pytest.skip.Exception:
            continue
        path = tmp_path / f"seed-{fmt}"
        path.write_bytes(seed)
        items = list(FORMATS[fmt][1](path, **opts))
        assert items, fmt


# --- acceptance: publish of HTCondor history with millisecond dates ----------------------------


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    from gridlake.sources.kafka_auth import admin_conf

    consumer = Consumer({**admin_conf(bootstrap), "group.id": "gridlake-test-offsets",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in meta.partitions
        }
    finally:
        consumer.close()


def _read_from(bootstrap: str, topic: str, start: dict[int, int]) -> list[dict]:
    from confluent_kafka import Consumer, TopicPartition

    from gridlake.sources.kafka_auth import admin_conf

    end = _end_offsets(bootstrap, topic)
    consumer = Consumer({**admin_conf(bootstrap), "group.id": "gridlake-test-read",
                         "enable.auto.commit": False})  # fmt: skip
    out = []
    try:
        todo = {p: e for p, e in end.items() if e > start.get(p, 0)}
        consumer.assign([TopicPartition(topic, p, start.get(p, 0)) for p in todo])
        while todo:
            msg = consumer.poll(30)
            assert msg is not None, f"no message within 30 s, still to read {todo}"
            assert msg.error() is None, msg.error()
            out.append(json.loads(msg.value()))
            if msg.offset() + 1 >= todo.get(msg.partition(), -1):
                todo.pop(msg.partition(), None)
    finally:
        consumer.close()
    return out


@pytest.mark.integration
@pytest.mark.adds_records
def test_publish_htcondor_with_millisecond_dates_lists_the_bad_ad_and_delivers_the_good(
    kafka, tmp_path: Path
) -> None:
    """`gridlake publish --format htcondor` of a history file in which one ad has its dates in
    epoch milliseconds: exit 1, the bad ad listed with file, ad and line and the reason, the
    good ad on grid.jobs, the bad one on grid.deadletter."""
    from . import test_adapters_jobs as tj
    from .conftest import gridlake_cli

    if not tj.CONDOR_ADS.is_file():
        pytest.skip("real HTCondor ads absent")
    path = tj._millisecond_dates(tj._complete_ad_file(tmp_path), "CompletionDate")
    before = {t: _end_offsets(kafka, t) for t in ("grid.jobs", "grid.deadletter")}
    out = gridlake_cli("publish", "--quiet", "--format", "htcondor", str(path))
    assert out.returncode == 1, out.stdout + out.stderr
    assert re.search(
        rf"{re.escape(str(path))}:ad 1 \(line 1\): end time 1486408342000 is not a time in "
        r"epoch seconds \(milliseconds\?\)",
        out.stderr,
    ), out.stderr[-3000:]
    assert "1 published, 1 dead-lettered" in out.stdout, out.stdout
    jobs = _read_from(kafka, "grid.jobs", before["grid.jobs"])
    assert [j["job_id"] for j in jobs] == ["fifebatch1.fnal.gov#14155293.202#1486401371"]
    dead = _read_from(kafka, "grid.deadletter", before["grid.deadletter"])
    assert [(d["source_file"], d["location"]) for d in dead] == [(str(path), "ad 1 (line 1)")]
