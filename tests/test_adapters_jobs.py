"""Real-format job adapters (HTCondor, Slurm, SWF, APEL) on real samples and broken copies.

Pure Python: no Spark, no services. Real samples are read from ../shared/realdata (never copied
into the repository); the tests that need them skip when that folder is absent.
"""

from __future__ import annotations

import gzip
import inspect
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest

from gridlake.settings import SCHEMAS_DIR
from gridlake.sources import htcondor
from gridlake.sources.apel import read_apel_jobs, read_apel_summaries
from gridlake.sources.base import Rejected, file_stem, open_text, parse_fqan, rfc3339
from gridlake.sources.htcondor import (
    iter_long_ads,
    read_apel_condor_lines,
    read_condor_history,
    read_condor_history_json,
)
from gridlake.sources.registry import FORMATS
from gridlake.sources.slurm import parse_duration, parse_memory_kib, read_sacct
from gridlake.sources.swf import read_swf

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
needs_realdata = pytest.mark.skipif(
    not REALDATA.is_dir(), reason=f"real data samples not found at {REALDATA}"
)
CONDOR_ADS = REALDATA / "htcondor-classads-fnal-fifebatch" / "fifebatch1_dune_job_ads_2017.classad"
FIXTURES = REALDATA / "apel-parser-test-fixtures"
NASA = REALDATA / "pwa-nasa-ipsc-1993-swf" / "NASA-iPSC-1993-3.1-cln.swf.gz"
LPC_EGEE = REALDATA / "pwa-lpc-egee-2004-swf" / "LPC-EGEE-2004-1.2-cln.part1_2004-09_2005-01.swf.gz"
GRIDSIM = REALDATA / "pwa-swf-small-samples-gridsim"
GRACC = REALDATA / "osg-gracc-apel-summaries"


# --------------------------------------------------------------------------------------------
# Contract checks: JSON Schema + x-rules evaluated in Python
# --------------------------------------------------------------------------------------------


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS_DIR / f"grid.{name}.schema.json").read_text())


SCHEMAS = {
    "grid.jobs": _schema("jobs"),
    "grid.accounting_summaries": _schema("accounting_summaries"),
    "grid.nodes": _schema("nodes"),
    "grid.network": _schema("network"),
}
VALIDATORS = {
    topic: jsonschema.Draft202012Validator(doc, format_checker=jsonschema.FormatChecker())
    for topic, doc in SCHEMAS.items()
}
_RFC3339_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\Z")


def _value(record: dict, name: str):
    value = record.get(name)
    if isinstance(value, str) and _RFC3339_Z.match(value):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def rule_holds(sql: str, record: dict) -> bool:
    """Evaluate the x-rules dialect used in schemas/: ORs of `a IS NULL` and `a >= b`."""
    for term in sql.split(" OR "):
        term = term.strip()
        null = re.fullmatch(r"(\w+) IS NULL", term)
        if null:
            if record.get(null.group(1)) is None:
                return True
            continue
        cmp = re.fullmatch(r"(\w+) >= (\w+)", term)
        assert cmp, f"x-rule term not understood by the test: {term!r}"
        left, right = _value(record, cmp.group(1)), _value(record, cmp.group(2))
        if left is not None and right is not None and left >= right:
            return True
    return False


def check_valid(records: list[dict], topic: str = "grid.jobs") -> None:
    validator, schema = VALIDATORS[topic], SCHEMAS[topic]
    for record in records:
        errors = [e.message for e in validator.iter_errors(record)]
        assert not errors, (record.get("job_id") or record.get("summary_key"), errors)
        for rule in schema.get("x-rules", []):
            assert rule_holds(rule["sql"], record), (rule["name"], record)
        for field in schema["properties"]:
            if SCHEMAS[topic]["properties"][field].get("format") == "date-time":
                value = record.get(field)
                assert value is None or _RFC3339_Z.match(value), (field, value)
        assert isinstance(record["raw"], str) and record["raw"]


def split(items) -> tuple[list[dict], list[Rejected]]:
    items = list(items)
    good = [i for i in items if isinstance(i, dict)]
    bad = [i for i in items if isinstance(i, Rejected)]
    assert len(good) + len(bad) == len(items)
    return good, bad


def test_rule_evaluator_can_fail() -> None:
    rule = SCHEMAS["grid.jobs"]["x-rules"][0]["sql"]
    assert rule_holds(
        rule, {"end_time": "2020-01-01T00:00:01Z", "start_time": "2020-01-01T00:00:00Z"}
    )
    assert not rule_holds(
        rule, {"end_time": "2020-01-01T00:00:00Z", "start_time": "2020-01-01T00:00:01Z"}
    )


def test_accounting_summaries_schema_is_valid_json_schema() -> None:
    doc = SCHEMAS["grid.accounting_summaries"]
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["x-kafka-topic"] == "grid.accounting_summaries"
    assert doc["x-key"] in doc["required"]
    assert set(doc["required"]) <= set(doc["properties"])
    assert all(p.get("description") for p in doc["properties"].values())


# --------------------------------------------------------------------------------------------
# Shared helpers and registry
# --------------------------------------------------------------------------------------------


def test_helpers() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1486408089) == "2017-02-06T19:08:09Z"
    assert rfc3339(1.5) == "1970-01-01T00:00:01.500000Z"
    assert file_stem("/x/NASA-iPSC-1993-3.1-cln.swf.gz") == "NASA-iPSC-1993-3.1-cln"
    assert parse_fqan("/atlas/ca/Role=production/Capability=NULL") == (
        "atlas",
        "/atlas/ca",
        "production",
    )
    assert parse_fqan("/dune/Role=NULL/Capability=NULL") == ("dune", "/dune", None)
    assert parse_duration("1-02:24:13") == 95053
    assert parse_duration("01:05.753") == pytest.approx(65.753)
    assert parse_duration("00:00:02") == 2
    assert parse_duration("95053") is None
    assert parse_memory_kib("1567524K") == 1567524
    assert parse_memory_kib("438.50M") == pytest.approx(438.5 * 1024)
    assert parse_memory_kib("1.40G") == pytest.approx(1.4 * 1024 * 1024)


def test_registry_names_topic_and_streaming_reader(tmp_path: Path) -> None:
    assert set(FORMATS) >= {"htcondor", "htcondor-json", "slurm", "swf", "apel-summary", "apel-job"}
    assert FORMATS["apel-summary"][0] == "grid.accounting_summaries"
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for name, (topic, reader) in FORMATS.items():
        assert topic in SCHEMAS, name
        result = reader(empty, site="S", host=None, vo=None)
        assert inspect.isgenerator(result), name
        items = list(result)
        # an empty file yields nothing, or only rejections (never an invented record)
        assert all(isinstance(i, Rejected) for i in items), name
        if topic in ("grid.jobs", "grid.accounting_summaries"):
            assert items == [], name


def test_open_text_reads_gzip_transparently(tmp_path: Path) -> None:
    plain = tmp_path / "a.txt"
    plain.write_text("x\ny\n")
    packed = tmp_path / "a.bin"  # no .gz suffix: recognised by magic bytes
    packed.write_bytes(gzip.compress(b"x\ny\n"))
    with open_text(plain) as a, open_text(packed) as b:
        assert a.read() == b.read() == "x\ny\n"


def test_rejected_raw_is_clipped_to_64_kib() -> None:
    rejected = Rejected("f", "line 1", "why", "é" * 100_000)
    assert len(rejected.raw.encode()) <= 64 * 1024
    assert rejected.raw.startswith("éé")


# --------------------------------------------------------------------------------------------
# HTCondor
# --------------------------------------------------------------------------------------------

EXTRA_ATTRS = """JobStatus = 4
ExitCode = 0
ExitBySignal = false
NumJobStarts = 1
RemoteUserCpu = 120.0
RemoteWallClockTime = 154.0
RequestCpus = 1
ResidentSetSize_RAW = 204800
BytesRecvd = 1048576.0
BytesSent = 2048.0
MachineAttrCPUModel0 = "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz"
"""


@needs_realdata
def test_condor_real_ads_parse_exactly() -> None:
    ads = list(iter_long_ads(CONDOR_ADS))
    assert [(n, first) for n, first, _, _ in ads] == [(1, 1), (2, 47)]
    first = ads[0][3]
    assert isinstance(first, dict) and len(first) == 45
    assert first["globaljobid"] == "fifebatch1.fnal.gov#14158503.10#1486408089"
    assert first["committedtime"] == 154
    assert first["remotesyscpu"] == 6.0
    assert first["leavejobinqueue"] is False
    assert first["requirements"].startswith('( ( ( Arch == "X86_64" )')
    assert first["job_glidein_procid"] == "$$(GLIDEIN_ProcId:Unknown)"
    assert ads[1][3]["committedtime"] == 22167


@needs_realdata
def test_condor_real_ads_lack_user_cpu_and_are_rejected_not_guessed() -> None:
    good, bad = split(read_condor_history(CONDOR_ADS))
    assert good == []
    assert [(r.location, r.reason) for r in bad] == [
        ("ad 1 (line 1)", "user CPU time unknown"),
        ("ad 2 (line 47)", "user CPU time unknown"),
    ]
    assert bad[0].raw.startswith("Requirements = ") and "LastRemoteHost" in bad[0].raw


def _complete_ad_file(tmp_path: Path) -> Path:
    """The real ads with the attributes the trimmed sample lacks added (known values)."""
    blocks = CONDOR_ADS.read_text().strip().split("\n\n")
    path = tmp_path / "complete.classad"
    path.write_text("\n".join(b.strip() + "\n" + EXTRA_ATTRS for b in blocks))
    return path


@needs_realdata
def test_condor_complete_ad_maps_every_attribute(tmp_path: Path) -> None:
    good, bad = split(read_condor_history(_complete_ad_file(tmp_path)))
    assert bad == []
    check_valid(good)
    job = good[0]
    assert job["job_id"] == "fifebatch1.fnal.gov#14158503.10#1486408089"
    assert job["site"] == "FNAL_GPGrid"
    assert job["host"] == "fnpc4108.fnal.gov"
    assert job["vo"] == "dune"
    assert job["queue"] == "gpce01.fnal.gov"
    assert job["cpu_model"] == "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz"
    assert job["submit_time"] == "2017-02-06T19:08:09Z"  # QDate 1486408089
    assert job["start_time"] == "2017-02-06T19:09:48Z"  # JobCurrentStartDate 1486408188
    assert job["end_time"] == "2017-02-06T19:12:22Z"  # CompletionDate 1486408342
    assert job["wall_seconds"] == 154
    assert (job["cpu_user_seconds"], job["cpu_system_seconds"]) == (120, 6)
    assert job["max_rss_mb"] == 200.0
    assert (job["input_bytes"], job["output_bytes"]) == (1048576, 2048)
    assert (job["status"], job["exit_code"], job["attempt"], job["cores"]) == ("success", 0, 1, 1)
    assert job["source_format"] == "htcondor"
    assert job["raw"].startswith("Requirements = ")
    assert job["defaulted_fields"] == ["job_type"]
    assert good[1]["job_id"] == "fifebatch1.fnal.gov#14155293.202#1486401371"
    assert good[1]["host"] == "fnpc9051.fnal.gov"


@needs_realdata
def test_condor_outcomes_and_flags(tmp_path: Path) -> None:
    block = CONDOR_ADS.read_text().strip().split("\n\n")[0]
    variants = {
        "signal": EXTRA_ATTRS.replace(
            "ExitBySignal = false", "ExitBySignal = true\nExitSignal = 9"
        ),
        "exit": EXTRA_ATTRS.replace("ExitCode = 0", "ExitCode = 2"),
        "removed": EXTRA_ATTRS.replace("JobStatus = 4", "JobStatus = 3"),
        "running": EXTRA_ATTRS.replace("JobStatus = 4", "JobStatus = 2"),
        "nosite": EXTRA_ATTRS,
    }
    results = {}
    for name, extra in variants.items():
        text = block + "\n" + extra
        if name == "nosite":
            text = "\n".join(line for line in text.splitlines() if "Site" not in line) + "\n"
        path = tmp_path / f"{name}.classad"
        path.write_text(text)
        results[name] = list(read_condor_history(path))
    sig = results["signal"][0]
    assert (sig["status"], sig["failure_mode"], sig["exit_code"]) == ("failed", "signal", 137)
    ex = results["exit"][0]
    assert (ex["status"], ex["failure_mode"], ex["exit_code"]) == ("failed", "nonzero-exit", 2)
    assert results["removed"][0]["failure_mode"] == "removed"
    assert isinstance(results["running"][0], Rejected)
    assert "JobStatus 2" in results["running"][0].reason
    assert isinstance(results["nosite"][0], Rejected)
    assert "site unknown" in results["nosite"][0].reason
    with_flag = next(read_condor_history(tmp_path / "nosite.classad", site="FNAL", vo="x"))
    assert with_flag["site"] == "FNAL" and with_flag["vo"] == "dune"  # record beats flag
    check_valid([sig, ex, results["removed"][0], with_flag])


@needs_realdata
def test_condor_broken_copies_are_rejected_with_location(tmp_path: Path) -> None:
    text = CONDOR_ADS.read_text()
    truncated = tmp_path / "truncated.classad"
    truncated.write_text(text[: text.rindex("fnpc9051")])  # cut inside the last string
    good, bad = split(read_condor_history(truncated))
    assert len(bad) == 2 and good == []
    assert bad[1].location == "ad 2 (line 47)"
    assert "line 91" in bad[1].reason and "unterminated string" in bad[1].reason

    garbage = tmp_path / "garbage.classad"
    lines = _complete_ad_file(tmp_path).read_text().splitlines()
    lines.insert(5, "this line is not an attribute")
    garbage.write_text("\n".join(lines) + "\n")
    good, bad = split(read_condor_history(garbage))
    assert len(good) == 1 and len(bad) == 1
    assert bad[0].location == "ad 1 (line 1)"
    assert bad[0].reason == "line 6: not 'Attr = value'"

    glued = tmp_path / "glued.classad"  # blank separator lost: attributes repeat
    glued.write_text(_complete_ad_file(tmp_path).read_text().replace("\n\n", "\n"))
    good, bad = split(read_condor_history(glued))
    assert good == [] and len(bad) == 1 and "repeated" in bad[0].reason


def _millisecond_dates(path: Path, attr: str, count: int = 1) -> Path:
    """The first ``count`` occurrences of ``attr`` multiplied by 1000 (epoch milliseconds, as a
    converter that mixed units would write)."""
    seen = 0

    def times_1000(m: re.Match[str]) -> str:
        nonlocal seen
        seen += 1
        return f"{m.group(1)} = {int(m.group(2)) * 1000}" if seen <= count else m.group(0)

    path.write_text(re.sub(rf"^({attr}) = (\d+)$", times_1000, path.read_text(), flags=re.M))
    return path


@needs_realdata
def test_condor_millisecond_dates_are_rejected_with_the_reason_not_a_crash(tmp_path: Path) -> None:
    """Epoch milliseconds (year 49072 read as seconds) used to raise out of the reader and abort
    the whole file; the ad is now rejected with the reason and the others still convert."""
    path = _millisecond_dates(_complete_ad_file(tmp_path), "CompletionDate")
    good, bad = split(read_condor_history(path))
    assert [(r.location, r.reason) for r in bad] == [
        ("ad 1 (line 1)", "end time 1486408342000 is not a time in epoch seconds (milliseconds?)")
    ]
    assert [j["job_id"] for j in good] == ["fifebatch1.fnal.gov#14155293.202#1486401371"]
    check_valid(good)
    both = _millisecond_dates(_complete_ad_file(tmp_path), "JobCurrentStartDate", count=2)
    good, bad = split(read_condor_history(both))
    assert good == [] and len(bad) == 2
    assert all("start time 14864" in r.reason and "(milliseconds?)" in r.reason for r in bad)


def _json_ads(tmp_path: Path) -> Path:
    """The complete ads as condor_history -json writes them (original attribute spelling)."""
    source = _complete_ad_file(tmp_path)
    names = {}
    for line in source.read_text().splitlines():
        if " = " in line:
            names[line.split(" = ")[0].lower()] = line.split(" = ")[0]
    docs = [{names[k]: v for k, v in ad.items()} for _, _, _, ad in iter_long_ads(source)]
    path = tmp_path / "history.json"
    # condor_history -json layout: "[", ads separated by "\n,\n", "]"
    path.write_text("[\n" + "\n,\n".join(json.dumps(d, indent=2) for d in docs) + "\n]\n")
    return path


@needs_realdata
def test_condor_json_streams_across_chunks_and_matches_long_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(htcondor, "JSON_CHUNK", 97)  # force many partial decodes
    path = _json_ads(tmp_path)
    good, bad = split(read_condor_history_json(path))
    assert bad == [] and len(good) == 2
    check_valid(good)
    long_form, _ = split(read_condor_history(_complete_ad_file(tmp_path)))
    for a, b in zip(good, long_form, strict=True):
        assert {k: v for k, v in a.items() if k != "raw"} == {
            k: v for k, v in b.items() if k != "raw"
        }
    assert json.loads(good[0]["raw"])["ClusterId"] == 14158503


@needs_realdata
def test_condor_json_broken_ad_is_rejected_and_reading_resumes(tmp_path: Path) -> None:
    text = _json_ads(tmp_path).read_text()
    ads = [a.strip() for a in text.strip()[1:-1].split("\n,\n")]
    broken = ads[0].replace('"ClusterId": 14158503', '"ClusterId": 14158503 oops')
    path = tmp_path / "broken.json"
    path.write_text("[\n" + "\n,\n".join([broken, ads[1], ads[0]]) + "\n]\n")
    good, bad = split(read_condor_history_json(path))
    assert len(good) == 2 and len(bad) == 1
    assert bad[0].location == "ad 1 (line 2)" and bad[0].reason.startswith("invalid JSON")
    jsonl = tmp_path / "history.jsonl"  # -jsonl: one ad per line
    jsonl.write_text("\n".join(json.dumps(json.loads(a)) for a in ads) + "\n")
    assert len(split(read_condor_history_json(jsonl))[0]) == 2


@needs_realdata
def test_apel_condor_lines() -> None:
    path = FIXTURES / "htcondor_condor_history_apel_lines.txt"
    good, bad = split(read_apel_condor_lines(path, site="RAL-LCG2"))
    assert good == [] and len(bad) == 5
    assert all("submit time not in the record" in r.reason for r in bad)
    good, bad = split(read_apel_condor_lines(path, site="RAL-LCG2", fill_unknown=True))
    assert bad == [] and len(good) == 5
    check_valid(good)
    job = good[1]
    assert job["job_id"] == "arcce.rl.ac.uk#2376.0#1589"
    assert (job["wall_seconds"], job["cpu_user_seconds"], job["cpu_system_seconds"]) == (
        287,
        107,
        11,
    )
    assert job["start_time"] == "2015-06-30T13:40:43Z" and job["end_time"] == "2015-06-30T13:45:30Z"
    assert job["max_rss_mb"] == round(26636 / 1024, 3)
    assert {"submit_time", "status"} <= set(job["defaulted_fields"])
    assert good[0]["job_id"] == "RAL-LCG2:1234567"


# --------------------------------------------------------------------------------------------
# Slurm
# --------------------------------------------------------------------------------------------


@needs_realdata
def test_slurm_apel_fixture_without_header() -> None:
    path = FIXTURES / "slurm_sacct_pipe_lines.txt"
    good, bad = split(read_sacct(path, site="TEST"))
    assert good == [] and len(bad) == 8  # no Submit column
    good, bad = split(read_sacct(path, site="TEST", fill_unknown=True))
    assert len(good) == 3 and len(bad) == 5
    check_valid(good)
    # The 2013 lines hold CPUTimeRAW (= Elapsed x NCPUS), not CPU used: rejected, not mapped.
    assert [r.location for r in bad] == [f"line {n}" for n in range(1, 6)]
    assert all("CPUTimeRAW" in r.reason for r in bad)
    first = good[0]
    assert first["job_id"] == "TEST:5940815"
    assert first["wall_seconds"] == 177896  # 2-01:24:56
    assert first["cpu_user_seconds"] == 747636  # 8-15:40:36 TotalCPU
    assert first["cores"] == 8 and first["host"] == "wn1" and first["queue"] == "partition"
    assert first["start_time"] == "2018-06-03T02:11:12Z"
    assert good[2]["cpu_user_seconds"] == pytest.approx(65.753)
    assert good[2]["wall_seconds"] == 205


SACCT_ROWS = [
    (
        "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|St"
        "art|End|ElapsedRaw|TotalCPU|UserCPU|SystemCPU|AllocCPUS|MaxRSS|NodeList"
    ),
    (
        "100|100|lcg|grid|atlas|atl001|COMPLETED|0:0|2024-03-01T10:00:00|2024-03-01"
        "T10:01:00|2024-03-01T11:01:00|3600|06:00:00|05:50:00|00:10:00|8||wn[01-02]"
    ),
    (
        "100.batch|100.batch|lcg|||||0:0|2024-03-01T10:01:00|2024-03-01T10:01:"
        "00|2024-03-01T11:01:00|3600|05:00:00|04:55:00|00:05:00|8|2048000K|wn01"
    ),
    (
        "100.0|100.0|lcg|||||0:0|2024-03-01T10:01:00|2024-03-01T10:01:00"
        "|2024-03-01T11:01:00|3600|01:00:00|00:55:00|00:05:00|8|3.5G|wn01"
    ),
    (
        "101|101|lcg|grid|cms|cms002|OUT_OF_MEMORY|0:125|2024-03-01T10:00:00|2024-"
        "03-01T10:00:30|2024-03-01T10:10:30|600|00:09:00|00:08:00|00:01:00|1||wn03"
    ),
    (
        "102|102|lcg|grid|cms|cms002|CANCELLED by 0|0:15|2024-03-01T10:00:00|2024"
        "-03-01T10:00:30|2024-03-01T10:00:40|10|00:00:01|00:00:01|00:00:00|1||wn03"
    ),
    (
        "103|103|lcg|grid|cms|cms002|FAILED|3:0|2024-03-01T10:00:00|2024-03-0"
        "1T10:00:30|2024-03-01T10:00:40|10|00:00:01|00:00:01|00:00:00|1||wn03"
    ),
    (
        "104|104|lcg|grid|cms|cms002|RUNNING|0:0|2024-03-01T10:00:00|20"
        "24-03-01T10:00:30|Unknown|10|00:00:01|00:00:01|00:00:00|1||wn03"
    ),
]
SACCT = "\n".join(SACCT_ROWS) + "\n"


def test_slurm_with_header_folds_steps_and_maps_states(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text(SACCT)
    good, bad = split(read_sacct(path))
    check_valid(good)
    assert [j["job_id"] for j in good] == ["lcg:100", "lcg:101", "lcg:102", "lcg:103"]
    job = good[0]
    assert job["site"] == "lcg" and job["vo"] == "atlas" and job["host"] == "wn01"
    assert (job["cpu_user_seconds"], job["cpu_system_seconds"]) == (21000, 600)
    assert job["max_rss_mb"] == 3.5 * 1024  # largest step MaxRSS
    assert job["submit_time"] == "2024-03-01T10:00:00Z" and job["wall_seconds"] == 3600
    assert job["defaulted_fields"] == ["attempt", "cpu_model", "job_type"]
    assert (job["input_bytes"], job["output_bytes"]) == (None, None)  # sacct has no bytes
    modes = [(j["status"], j["failure_mode"], j["exit_code"]) for j in good[1:]]
    assert modes == [("failed", "memory", 253), ("failed", "cancelled", 143),
                     ("failed", "nonzero-exit", 3)]  # fmt: skip
    assert len(bad) == 1 and bad[0].location == "line 8" and "RUNNING" in bad[0].reason

    zoned = list(read_sacct(path, site="RAL", vo="override", tz="Europe/London"))
    assert zoned[0]["site"] == "RAL" and zoned[0]["vo"] == "override"
    assert zoned[0]["job_id"] == "lcg:100"
    summer = tmp_path / "summer.txt"
    summer.write_text(SACCT.replace("2024-03-01", "2024-07-01"))
    assert next(read_sacct(summer, tz="Europe/London"))["start_time"] == "2024-07-01T09:01:00Z"


def test_slurm_garbage_line_and_gzip(tmp_path: Path) -> None:
    lines = SACCT.splitlines()
    lines.insert(4, "garbage without pipes")
    path = tmp_path / "sacct.txt.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    good, bad = split(read_sacct(path))
    assert len(good) == 4 and len(bad) == 2
    assert bad[0].location == "line 5"
    assert bad[0].reason.startswith("expected 18 '|' fields") and bad[0].raw.startswith("garbage")


# --------------------------------------------------------------------------------------------
# SWF
# --------------------------------------------------------------------------------------------


@needs_realdata
def test_swf_nasa_trace_is_read_whole_and_rejected_for_missing_cpu_and_status() -> None:
    good, bad = split(read_swf(NASA))
    assert len(good) + len(bad) == 18239
    # The cleaned NASA iPSC log records no wait, CPU, memory or status (-1): nothing to map.
    assert good == []
    assert {r.reason for r in bad} == {
        "wait time unknown (-1); average CPU time unknown (-1); start time unknown; "
        "end time unknown; user CPU time unknown; "
        "outcome not in the record (fill_unknown=True assumes success)"
    }
    first = bad[0]
    assert first.location == "line 33"
    assert first.raw.split()[:5] == ["1", "0", "-1", "1451", "128"]  # run time 1451 s
    assert bad[-1].location == "line 18271"
    assert bad[-1].raw.split()[:4] == ["42264", "7948936", "-1", "86"]


@needs_realdata
def test_swf_lpc_egee_grid_trace_maps_groups_queues_and_ces() -> None:
    """The LCG/EGEE cluster at LPC Clermont-Ferrand (134,667 jobs, Sep 2004 - Jan 2005): groups
    become VOs, queues job types, partitions (the CEs) hosts; the jobs cancelled before they
    started (no run time, no CPU time) are rejected with the reason, nothing else is."""
    good, bad = split(read_swf(LPC_EGEE, site="LPC-EGEE"))
    assert (len(good), len(bad)) == (124_618, 10_049)
    check_valid(good[::25])  # the contract's validator on 5,000 of them (all of them: 25 s)
    reasons = Counter(r.reason for r in bad)
    assert reasons == {
        "run time unknown (-1); average CPU time unknown (-1); end time unknown; "
        "wall-clock time unknown; user CPU time unknown": 9_987,
        "average CPU time unknown (-1); user CPU time unknown": 62,
    }
    first = good[0]  # 9933  3585977  4  16 1  2  0 1  7200 -1 1  1  1 -1 2 1 -1 -1
    assert first["job_id"] == "LPC-EGEE:LPC-EGEE-2004-1.2-cln.part1_2004-09_2005-01:9933"
    assert first["submit_time"] == rfc3339(1091615532 + 3585977)
    assert first["start_time"] == rfc3339(1091615532 + 3585977 + 4)
    assert (first["wall_seconds"], first["cpu_user_seconds"], first["cores"]) == (16, 2, 1)
    assert (first["vo"], first["queue"], first["job_type"]) == ("1", "short", "short")
    assert first["host"] == "clrglop195.in2p3.fr" and first["status"] == "success"
    assert {j["host"] for j in good} == {
        "clrglop195.in2p3.fr", "clrce01.in2p3.fr", "clrce02.in2p3.fr"
    }  # fmt: skip
    assert {j["job_type"] for j in good} == {"test", "short", "long", "day", "infinite"}
    statuses = Counter((j["status"], j["failure_mode"]) for j in good)
    assert statuses == {("success", None): 118_267, ("failed", None): 5_386,
                        ("failed", "cancelled"): 965}  # fmt: skip


@needs_realdata
def test_swf_gridsim_samples() -> None:
    lanl, lanl_bad = split(read_swf(GRIDSIM / "l_lanl_o2k.swf.txt"))
    sdsc, sdsc_bad = split(read_swf(GRIDSIM / "l_sdsc_blue.swf.txt"))
    assert (len(lanl), len(lanl_bad), len(sdsc), len(sdsc_bad)) == (10, 0, 8, 2)
    check_valid(lanl + sdsc)
    job = lanl[0]
    assert job["job_id"] == "l_lanl_o2k:1" and job["site"] == "l_lanl_o2k"
    assert job["submit_time"] == "1999-11-20T22:04:53Z"  # UnixStartTime 943135493 + 0
    assert job["start_time"] == rfc3339(943135493 + 976745)
    assert job["wall_seconds"] == 58 and job["cores"] == 16
    assert job["cpu_user_seconds"] == 16  # 1 s average x 16 processors
    assert job["queue"] == "long" and job["status"] == "success" and job["max_rss_mb"] is None
    assert (lanl[2]["status"], lanl[2]["exit_code"]) == ("failed", None)  # SWF has no exit code
    assert sdsc[0]["queue"] == "high" and sdsc[0]["cores"] == 1152
    assert all("run time unknown (-1)" in r.reason for r in sdsc_bad)
    assert [r.location for r in sdsc_bad] == ["line 36", "line 37"]
    assert sdsc[0]["job_id"] != lanl[0]["job_id"]
    again = list(read_swf(GRIDSIM / "l_sdsc_blue.swf.txt", site="SDSC"))
    assert again[0]["job_id"] == "SDSC:l_sdsc_blue:1" and again[0]["site"] == "SDSC"


def test_swf_broken_lines_and_missing_start_header(tmp_path: Path) -> None:
    path = tmp_path / "trace.swf"
    path.write_text(
        "; Version: 2.2\n"
        "1 0 10 100 4 90 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 5 10 100 4\n"
        "3 6 10 100 4 90 -1 4 -1 -1 5 1 1 -1 -1 -1 -1 -1\n"
        "4 7 x 100 4 90 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
    )
    good, bad = split(read_swf(path, site="X", host="h1", vo="v"))
    check_valid(good)
    assert [(r.location, r.reason) for r in bad] == [
        ("line 3", "expected 18 fields, got 5"),
        ("line 5", "not a number in field 3"),
    ]
    first = good[0]
    assert first["submit_time"] == "1970-01-01T00:00:00Z"  # no UnixStartTime: epoch 0
    assert first["defaulted_fields"][:3] == ["submit_time", "start_time", "end_time"]
    assert (first["host"], first["vo"], first["cpu_user_seconds"]) == ("h1", "v", 360)
    assert (good[1]["status"], good[1]["failure_mode"]) == ("failed", "cancelled")


# --------------------------------------------------------------------------------------------
# APEL
# --------------------------------------------------------------------------------------------


@needs_realdata
def test_apel_summaries_real_files() -> None:
    files = sorted(GRACC.glob("*.apel"))
    assert len(files) == 15
    total = 0
    for path in files:
        good, bad = split(read_apel_summaries(path))
        assert bad == [], (path.name, bad[:1])
        separators = sum(1 for line in path.read_text().splitlines() if line.strip() == "%%")
        assert len(good) == separators, path.name
        check_valid(good, "grid.accounting_summaries")
        total += len(good)
    assert total == 4158

    jan = list(read_apel_summaries(GRACC / "01_2015.apel"))
    assert len(jan) == 264
    ddm = [
        r
        for r in jan
        if r["site"] == "AGLT2" and r["vo"] == "atlas" and "CN=ddmadmin" in r["global_user_name"]
    ]
    assert len(ddm) == 1
    rec = ddm[0]
    assert (rec["wall_duration_seconds"], rec["cpu_duration_seconds"], rec["number_of_jobs"]) == (
        41280,
        2574,
        1780,
    )
    assert (rec["normalised_wall_duration"], rec["normalised_cpu_duration"]) == (399177, 24890)
    assert (rec["month"], rec["year"], rec["processors"], rec["node_count"]) == (1, 2015, 1, 1)
    assert rec["earliest_end_time"] == "2015-01-31T00:00:00Z"
    assert rec["infrastructure"] == "Gratia-OSG" and rec["message_version"] == "v0.3"
    assert rec["raw"].startswith("Site: AGLT2\nVO: atlas\n")
    assert rec["source_format"] == "apel-summary"
    keys = Counter(r["summary_key"] for p in files for r in read_apel_summaries(p))
    assert max(keys.values()) == 1  # the key identifies a record


@needs_realdata
def test_apel_summaries_broken_copy(tmp_path: Path) -> None:
    text = (GRACC / "01_2015.apel").read_text()
    records = text.split("%%\n")
    records[1] = records[1].replace("WallDuration: 227232", "WallDuration: lots")
    records[2] = records[2] + "this is not a key value line\n"
    records[4] = records[4].replace("Site: MWT2\n", "")
    glued = records[5] + records[6]  # '%%' lost between two records
    broken = [*records[:5], glued, *records[7:]]
    path = tmp_path / "broken.apel"
    path.write_text("%%\n".join(broken))
    good, bad = split(read_apel_summaries(path))
    assert len(good) == 264 - 5 and len(bad) == 4
    reasons = [r.reason for r in bad]
    assert reasons[0] == "WallDuration 'lots' is not an integer"
    assert reasons[1].endswith("not 'Key: Value'")
    assert reasons[2] == "missing Site"
    assert "repeated (missing '%%'?)" in reasons[3]
    assert bad[0].location == "record 2 (line 18)"
    with_site = list(read_apel_summaries(path, site="MWT2"))
    assert sum(isinstance(r, Rejected) for r in with_site) == 3


APEL_JOBS = """APEL-individual-job-message: v0.3
Site: RAL-LCG2
SubmitHost: arc-ce01.gridpp.rl.ac.uk
MachineName: arc-ce01.gridpp.rl.ac.uk
Queue: grid
LocalJobId: 3917423
LocalUserId: pilatl01
GlobalUserName: /DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlpilo1/CN=614260/CN=Robot
FQAN: /atlas/Role=pilot/Capability=NULL
WallDuration: 3600
CpuDuration: 25200
Processors: 8
NodeCount: 1
StartTime: 1700000000
EndTime: 1700003600
InfrastructureDescription: APEL-ARC-HTCONDOR
InfrastructureType: grid
MemoryReal: 4194304
MemoryVirtual: 8388608
ServiceLevelType: HEPSPEC
ServiceLevel: 10.4
%%
Site: RAL-LCG2
LocalJobId: 3917424
VO: cms
WallDuration: 100
CpuDuration: 90
StartTime: 1700000000
EndTime: 1700000100
ServiceLevel: {hepscore23: 12.5}
%%
Site: RAL-LCG2
LocalJobId: 3917425
WallDuration: 100
CpuDuration: 90
StartTime: 1700000100
EndTime: 1700000000
%%
Site: RAL-LCG2
WallDuration: 100
%%
"""


def test_apel_individual_job_messages(tmp_path: Path) -> None:
    path = tmp_path / "jobs.apel"
    path.write_text(APEL_JOBS)
    good, bad = split(read_apel_jobs(path))
    assert good == [] and len(bad) == 4
    assert "outcome not in the record" in bad[0].reason
    good, bad = split(read_apel_jobs(path, fill_unknown=True, host="wn-x"))
    check_valid(good)
    assert len(good) == 2
    job = good[0]
    assert job["job_id"] == "RAL-LCG2:arc-ce01.gridpp.rl.ac.uk:3917423:1700003600"
    assert (job["vo"], job["queue"], job["cores"], job["host"]) == ("atlas", "grid", 8, "wn-x")
    assert (job["wall_seconds"], job["cpu_user_seconds"]) == (3600, 25200)
    assert job["start_time"] == "2023-11-14T22:13:20Z" and job["submit_time"] == job["start_time"]
    assert (job["benchmark_type"], job["benchmark_per_core"]) == ("hs06", 10.4)
    assert job["max_rss_mb"] == 4096
    assert job["source_format"] == "apel"
    assert {"submit_time", "status", "cpu_system_seconds"} <= set(job["defaulted_fields"])
    assert (good[1]["vo"], good[1]["benchmark_type"], good[1]["cores"]) == ("cms", "hs23", 1)
    assert [(r.location, r.reason) for r in bad] == [
        ("record 3 (line 32)", "end_time before start_time"),
        ("record 4 (line 39)", "missing LocalJobId, CpuDuration, StartTime, EndTime; "
         "no job id; start time unknown; end time unknown; user CPU time unknown"),
    ]  # fmt: skip


@needs_realdata
def test_apel_readers_refuse_the_other_message_kind(tmp_path: Path) -> None:
    items = list(read_apel_jobs(GRACC / "01_2015.apel"))
    assert len(items) == 1 and isinstance(items[0], Rejected)
    assert "use format apel-summary" in items[0].reason
    path = tmp_path / "jobs.apel"
    path.write_text(APEL_JOBS)
    items = list(read_apel_summaries(path))
    assert len(items) == 1 and "use format apel-job" in items[0].reason
