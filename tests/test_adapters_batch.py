"""Batch-system adapters (PBS/Torque, Grid Engine, LSF, CREAM BLAH) and SUPReMM job summaries.

Pure Python: no Spark, no services. Real samples are read from REALDATA (APEL's parser test
fixtures and XDMoD's SUPReMM test documents; never copied into the repository); the tests that
need them skip when that folder is absent. Expected values are read by hand from the samples;
broken copies are written to tmp_path.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gridlake.sources.base import Rejected
from gridlake.sources.cream import (
    VALID_AFTER,
    BlahIndex,
    BlahRecord,
    iter_blah,
    load_blah,
    parse_blah_line,
    read_blah,
)
from gridlake.sources.lsf import iter_records, read_lsf, tokenize
from gridlake.sources.pbs import exec_slots, parse_duration, parse_size_mib, read_pbs
from gridlake.sources.registry import FORMATS
from gridlake.sources.sge import read_sge
from gridlake.sources.supremm import read_supremm

from .conftest import REALDATA
from .test_adapters_jobs import check_valid, split

FIXTURES = REALDATA / "apel-parser-test-fixtures"
PBS = FIXTURES / "pbs_torque_accounting_E_records.txt"
SGE = FIXTURES / "sge_accounting_lines.txt"
LSF = FIXTURES / "lsf_lsb_acct_JOB_FINISH_lines.txt"
BLAH = FIXTURES / "cream_blah_accounting_lines.txt"
SUPREMM = REALDATA / "supremm-job-summaries"

needs_realdata = pytest.mark.skipif(
    not FIXTURES.is_dir() or not SUPREMM.is_dir(),
    reason=f"real data samples not found under {REALDATA}",
)


def test_registry_has_the_batch_formats() -> None:
    assert FORMATS["pbs"] == ("grid.jobs", read_pbs)
    assert FORMATS["sge"] == ("grid.jobs", read_sge)
    assert FORMATS["lsf"] == ("grid.jobs", read_lsf)
    assert FORMATS["cream-blah"] == ("grid.jobs", read_blah)
    assert FORMATS["supremm"] == ("grid.jobs", read_supremm)
    for name in ("pbs", "sge", "lsf", "cream-blah", "supremm"):
        assert (FORMATS[name][1].__doc__ or "").strip(), name  # `gridlake formats` shows it


# --------------------------------------------------------------------------------------------
# PBS / Torque
# --------------------------------------------------------------------------------------------


def test_pbs_helpers() -> None:
    assert parse_duration("19:23:4") == 19 * 3600 + 23 * 60 + 4
    assert parse_duration("96:00:00") == 345600
    assert parse_duration("12767") == 12767
    assert parse_duration("1-02:00:00") is None
    assert parse_size_mib("2031040kb") == pytest.approx(1983.4375)
    assert parse_size_mib("4000mb") == 4000
    assert parse_size_mib("1048576") == 1.0  # a bare number is bytes
    assert parse_size_mib("12 words") is None
    assert exec_slots("lcg1277.gridpp.rl.ac.uk/5") == ("lcg1277.gridpp.rl.ac.uk", 1)
    assert exec_slots("b372/4+b372/5+b372/6+b372/7") == ("b372", 4)
    assert exec_slots("b391/0-3") == ("b391", 4)
    assert exec_slots("wn1/0-1,5,11+wn2/0") == ("wn1", 5)
    assert exec_slots("wn1") is None
    assert exec_slots("wn1/3-1") is None


@needs_realdata
def test_pbs_real_records() -> None:
    good, bad = split(read_pbs(PBS, site="RAL-LCG2"))
    assert bad == [] and len(good) == 7
    check_valid(good)
    job = good[0]  # line 1
    assert job["job_id"] == "RAL-LCG2:21048463.lcgbatch01.gridpp.rl.ac.uk:1317509945"
    assert (job["site"], job["host"], job["queue"]) == (
        "RAL-LCG2",
        "lcg1277.gridpp.rl.ac.uk",
        "grid4000M",
    )
    assert job["vo"] == "prodatls"  # no BLAH record, no vo=: the Unix group
    assert job["submit_time"] == "2011-10-01T22:52:54Z"  # ctime=1317509574
    assert job["start_time"] == "2011-10-01T22:59:05Z"  # start=1317509945
    assert job["end_time"] == "2011-10-02T05:41:44Z"  # end=1317534104
    assert job["wall_seconds"] == 69784  # resources_used.walltime=19:23:4
    assert (job["cpu_user_seconds"], job["cpu_system_seconds"]) == (65724, 0)  # cput=18:15:24
    assert job["max_rss_mb"] == 1983.438  # mem=2031040kb
    assert (job["cores"], job["status"], job["exit_code"]) == (1, "success", 0)
    assert job["input_bytes"] is None and job["output_bytes"] is None
    assert job["source_format"] == "pbs" and job["raw"].startswith("10/02/2011 06:41:44;E;")
    assert job["defaulted_fields"] == ["cpu_system_seconds", "attempt", "cpu_model", "job_type"]

    assert good[1]["cores"] == 8  # exec_host lists lcg0766/7 ... lcg0766/0
    assert good[1]["wall_seconds"] == 0 and good[1]["start_time"] == good[1]["end_time"]

    killed, again = good[2], good[3]  # lines 3 and 4: two E records of one execution
    assert (killed["status"], killed["failure_mode"], killed["exit_code"]) == (
        "failed",
        "signal",
        143,
    )  # Exit_status=271: 256 + SIGTERM
    assert (killed["wall_seconds"], killed["cpu_user_seconds"]) == (12767, 12722)  # HH:MM:SS
    assert (again["wall_seconds"], again["cpu_user_seconds"]) == (12767, 12722)  # seconds
    assert killed["job_id"] == again["job_id"] == "RAL-LCG2:24940336.b0:1448914025"
    assert again["status"] == "success" and again["end_time"] == "2015-11-30T23:42:06Z"
    assert (killed["host"], killed["max_rss_mb"]) == ("b341", 2513.973)  # 2574308kb

    assert good[4]["cores"] == 4  # exec_host=b372/4+b372/5+b372/6+b372/7
    six = good[5]  # line 6, prefixed "20150327:" (concatenated logs)
    assert six["job_id"] == "RAL-LCG2:21430205.b0:1427422975"
    assert (six["cores"], six["host"]) == (4, "b391")  # total_execution_slots=4, b391/0-3
    assert (six["wall_seconds"], six["cpu_user_seconds"]) == (17012, 66716)  # 04:43:32, 18:31:56


def _pbs_lines() -> list[str]:
    return PBS.read_text().splitlines()


@needs_realdata
def test_pbs_broken_copy_is_dead_lettered(tmp_path: Path) -> None:
    lines = _pbs_lines()
    broken = [
        lines[0][: lines[0].index(" end=")],  # truncated line: no end, outcome, usage
        lines[1],
        lines[2].replace("start=1448914025", "start=14489x4025"),  # non-numeric
        lines[3],
        "11/30/2015 15:39:00;Q;24940999.b0;queue=atlas",  # queued event: not a finished job
        lines[4],
        "this line has no fields",
        lines[5],
        lines[6].replace("end=1481101711", "end=1481101000"),  # end before start (1481101655)
        lines[6].replace("resources_used.walltime=00:00:56", "resources_used.walltime=0:x:56"),
    ]
    path = tmp_path / "accounting.txt"
    path.write_text("\n".join(broken) + "\n")
    good, bad = split(read_pbs(path, site="S"))
    check_valid(good)
    assert len(good) == 4 and len(bad) == 5
    assert [r.location for r in bad] == ["line 1", "line 3", "line 7", "line 9", "line 10"]
    assert bad[0].reason == (
        "end time unknown; wall-clock time unknown; user CPU time unknown; "
        "outcome not in the record (fill_unknown=True assumes success)"
    )
    assert bad[1].reason.startswith("start '14489x4025' is not an integer")
    assert bad[2].reason == "expected 'date;type;job id;attributes', got 1 ';' fields"
    assert bad[3].reason == "end_time before start_time"
    assert bad[4].reason == "resources_used.walltime '0:x:56' is neither seconds nor HH:MM:SS"
    assert bad[2].raw == "this line has no fields\n"

    gz = tmp_path / "accounting.gz"
    gz.write_bytes(gzip.compress(PBS.read_bytes()))
    assert len(split(read_pbs(gz, site="S"))[0]) == 7
    nosite = list(read_pbs(PBS))
    assert all(isinstance(r, Rejected) and "site unknown" in r.reason for r in nosite)


# --------------------------------------------------------------------------------------------
# CREAM BLAH
# --------------------------------------------------------------------------------------------


@needs_realdata
def test_blah_real_lines_parse_and_are_no_jobs() -> None:
    records = list(iter_blah(BLAH))
    assert [(n, type(r)) for n, _, r in records] == [(1, BlahRecord), (2, BlahRecord)]
    first = records[0][2]
    assert isinstance(first, BlahRecord)
    assert first.timestamp == datetime(2014, 5, 18, 0, 0, 58, tzinfo=UTC).timestamp()
    assert first.lrms_id == "15876368.ce1.triumf.ca"
    assert first.grid_job_id == "CREAM663276716"
    assert first.user_dn == "/C=CA/O=Grid/OU=triumf.ca/CN=Asoka De Silva GC1"
    assert first.fqan == "/atlas/Role=pilot/Capability=NULL"  # the first of four: primary
    assert (first.vo, first.ce_id) == ("atlas", "ce1.triumf.ca:8443/cream-pbs-atlas")
    second = records[1][2]
    assert isinstance(second, BlahRecord)
    assert second.user_dn.endswith("CN=Robot: ATLAS Pilot2")  # ':' and spaces inside a value
    assert second.lrms_id == "15876480.ce1.triumf.ca"

    items = list(read_blah(BLAH, site="TRIUMF-LCG2"))
    assert all(isinstance(i, Rejected) for i in items) and len(items) == 2
    assert [i.location for i in items] == ["line 1", "line 2"]
    assert items[0].reason.startswith(
        "BLAH record of grid job CREAM663276716 = batch job 15876368.ce1.triumf.ca (VO atlas): "
        "it has no start, end, wall or CPU time, so it is no grid.jobs message"
    )
    assert "blah=FILE" in items[0].reason
    assert items[0].raw.startswith('"timestamp=2014-05-18 00:00:58"')


@needs_realdata
def test_blah_broken_lines(tmp_path: Path) -> None:
    one, two = BLAH.read_text().splitlines()
    lines = [
        one[: one.index("ceID=") + 12],  # truncated inside a quoted field
        two.replace('"lrmsID=15876480.ce1.triumf.ca" ', ""),
        one.replace("timestamp=2014-05-18 00:00:58", "timestamp=18/05/2014 00:00:58"),
        one.replace('"localUser=41200"', "localUser=41200"),
        two,
    ]
    path = tmp_path / "blahp.log"
    path.write_text("\n".join(lines) + "\n")
    reasons = [(n, r if isinstance(r, str) else r.lrms_id) for n, _, r in iter_blah(path)]
    assert reasons == [
        (1, "unterminated quoted field at column 275"),
        (2, "missing lrmsID"),
        (3, "timestamp '18/05/2014 00:00:58' is not YYYY-MM-DD HH:MM:SS"),
        (4, 'not a "key=value" field at column 372: \'localUser=41200 "clientID=cream_66327671\''),
        (5, "15876480.ce1.triumf.ca"),
    ]
    items = list(read_blah(path))
    assert [i.reason.split(":")[0] for i in items[:4]] == ["not a BLAH accounting record"] * 4
    assert len(load_blah([path])) == 1  # the index keeps the parseable record only
    with pytest.raises(ValueError, match="is not key=value"):
        parse_blah_line('"timestamp=2014-05-18 00:00:58" "novalue"')


def test_blah_index_validity_window() -> None:
    base = 1_400_000_000.0
    index = BlahIndex()
    index.add(BlahRecord(base, "42.ce", "CREAM1", None, "/atlas/Role=NULL", "atlas", None))
    index.add(BlahRecord(base + 10 * 86400, "42.ce", "CREAM2", None, "/cms", "cms", None))
    assert index.lookup("42.ce", base - 86400 + 1).grid_job_id == "CREAM1"
    assert index.lookup("42.ce", base - 2 * 86400) is None  # ended before it was submitted
    assert index.lookup("42.ce", base + 11 * 86400).grid_job_id == "CREAM2"  # the latest wins
    assert index.lookup("42.ce", base + 10 * 86400 + VALID_AFTER + 1) is None  # id reused later
    assert index.lookup("43.ce", base) is None and index.lookup("42.ce", None) is None
    assert len(index) == 2


@needs_realdata
def test_pbs_gets_the_vo_of_its_blah_record(tmp_path: Path) -> None:
    one, two = BLAH.read_text().splitlines()
    blah = tmp_path / "blahp.log-20111001"
    blah.write_text(
        # the grid job of PBS line 1 (ended 2011-10-02 05:41:44 UTC), submitted via BLAH
        one.replace("15876368.ce1.triumf.ca", "21048463.lcgbatch01.gridpp.rl.ac.uk").replace(
            "2014-05-18 00:00:58", "2011-10-01 22:52:50"
        )
        + "\n"
        # PBS line 2's job id, but three years later: a reused id, not this job
        + two.replace("15876480.ce1.triumf.ca", "21010040.lcgbatch01.gridpp.rl.ac.uk")
        + "\n"
    )
    good, _ = split(read_pbs(PBS, site="RAL-LCG2", blah=str(blah)))
    assert [j["vo"] for j in good[:2]] == ["atlas", "prodlhcb"]
    good, _ = split(read_pbs(PBS, site="RAL-LCG2", vo="lhcb", blah=f"{blah},{blah}"))
    assert [j["vo"] for j in good[:3]] == ["atlas", "lhcb", "lhcb"]  # BLAH, then vo=, then group
    check_valid(good)
    with pytest.raises(FileNotFoundError):
        list(read_pbs(PBS, site="S", blah=str(tmp_path / "missing.log")))


# --------------------------------------------------------------------------------------------
# Grid Engine
# --------------------------------------------------------------------------------------------


@needs_realdata
def test_sge_real_lines() -> None:
    good, bad = split(read_sge(SGE, site="UKI-LT2-QMUL"))
    assert bad == [] and len(good) == 4
    check_valid(good)
    mpi = good[0]  # CSIC 2011, a 9-slot MPI job killed at its s_rt limit
    assert mpi["job_id"] == "UKI-LT2-QMUL:6972834:1318560254"
    assert (mpi["host"], mpi["queue"], mpi["vo"], mpi["cores"]) == (
        "compute-4-19.local",
        "large",
        "csic",
        9,
    )
    assert (mpi["submit_time"], mpi["start_time"], mpi["end_time"]) == (
        "2011-10-14T02:44:04Z",
        "2011-10-14T02:44:14Z",
        "2011-10-16T04:44:15Z",
    )
    assert mpi["wall_seconds"] == 180001
    # ru_utime + ru_stime (0.006 + 0.013 s) are the master script's: cpu holds the job's total
    assert (mpi["cpu_user_seconds"], mpi["cpu_system_seconds"]) == (1026706.54, 0)
    assert "cpu_system_seconds" in mpi["defaulted_fields"]
    assert mpi["max_rss_mb"] is None  # ru_maxrss 1448 KiB is the master script's too
    assert (mpi["status"], mpi["failure_mode"], mpi["exit_code"]) == ("failed", "signal", 138)

    qmul = good[1]  # failed 0, exit_status 1
    assert (qmul["cpu_user_seconds"], qmul["cpu_system_seconds"]) == (1211.1274098, 61.49143143)
    assert qmul["wall_seconds"] == 20365.78  # ru_wallclock, not end - start
    assert qmul["max_rss_mb"] == 376.609  # ru_maxrss 385648 KiB
    assert (qmul["status"], qmul["failure_mode"], qmul["exit_code"]) == (
        "failed",
        "nonzero-exit",
        1,
    )
    assert "cpu_system_seconds" not in qmul["defaulted_fields"]

    univa = good[3]  # millisecond timestamps, maxrss in bytes (Univa GE 8.2)
    assert univa["job_id"] == "UKI-LT2-QMUL:3872561:1412932865"
    assert (univa["submit_time"], univa["start_time"], univa["end_time"]) == (
        "2014-10-10T09:21:00.657000Z",
        "2014-10-10T09:21:05.141000Z",
        "2014-10-10T09:24:45.629000Z",
    )
    assert univa["wall_seconds"] == 220.488
    assert (univa["cpu_user_seconds"], univa["cpu_system_seconds"]) == (7.301, 5.469)
    assert univa["max_rss_mb"] == 118.648  # maxrss 124411904 bytes
    assert (univa["vo"], univa["status"], univa["exit_code"]) == ("atlas", "success", 0)
    assert univa["raw"].endswith("qsub /tmp/cream_814542935\n")


@needs_realdata
def test_sge_broken_copy_is_dead_lettered(tmp_path: Path) -> None:
    lines = SGE.read_text().splitlines()
    fields = lines[2].split(":")
    fields[36] = "5O.796277"  # letter O for zero in cpu
    broken = [
        "# Version: 6.2u5",
        ":".join(lines[0].split(":")[:20]),  # truncated line
        lines[1].replace(":1358210574:", ":1358180000:"),  # end before start (1358190002)
        ":".join(fields),
        lines[3],
    ]
    path = tmp_path / "accounting"
    path.write_text("\n".join(broken) + "\n")
    good, bad = split(read_sge(path, site="S", vo="atlas"))
    check_valid(good)
    assert len(good) == 1 and good[0]["vo"] == "atlas"  # vo= beats the group
    assert [(r.location, r.reason) for r in bad] == [
        ("line 2", "expected at least 45 ':' fields, got 20"),
        ("line 3", "end_time before start_time"),
        ("line 4", "cpu '5O.796277' is not a non-negative number"),
    ]


# --------------------------------------------------------------------------------------------
# LSF
# --------------------------------------------------------------------------------------------


def test_lsf_tokenize() -> None:
    assert tokenize('"JOB_FINISH" "a ""b"" c" 0"" 1.5 -1 ""') == [
        "JOB_FINISH",
        'a "b" c',
        "0",
        "",
        "1.5",
        "-1",
        "",
    ]
    assert tokenize('"x" "open') is None
    assert tokenize('"x" "ends with an escaped quote ""') is None
    assert tokenize('"multi\nline" 3') == ["multi\nline", "3"]


@needs_realdata
def test_lsf_real_records_one_spanning_two_lines() -> None:
    records = list(iter_records(LSF))
    assert [(n, len(f)) for n, _, f in records] == [(1, 60), (2, 94), (4, 97)]
    assert "\n" in records[1][1] and records[1][1].count("\n") == 2  # lines 2 and 3
    good, bad = split(read_lsf(LSF, site="CERN-PROD"))
    assert bad == [] and len(good) == 3
    check_valid(good)
    job = good[0]  # CERN lxplus 2004
    assert job["job_id"] == "CERN-PROD:699195:1089406862"
    assert (job["host"], job["queue"], job["cores"]) == ("tbed0079", "8nm", 1)
    assert (job["submit_time"], job["start_time"], job["end_time"]) == (
        "2004-07-08T12:33:43Z",
        "2004-07-09T21:01:02Z",
        "2004-07-09T21:10:06Z",
    )
    assert job["wall_seconds"] == 544  # event time - startTime
    assert (job["cpu_user_seconds"], job["cpu_system_seconds"]) == (277.21, 17.28)
    assert job["max_rss_mb"] == 303.148  # maxRMem 310424 KiB
    assert (job["status"], job["exit_code"]) == ("success", 0)  # jStatus 64 (DONE)
    assert job["vo"] == "unknown" and "vo" in job["defaulted_fields"]

    array = good[1]  # 16-slot array element, exitStatus 65280 = exit(255)
    assert array["job_id"] == "CERN-PROD:436491[23]:1302184004"
    assert (array["host"], array["queue"], array["cores"]) == ("comp042", "normal", 16)
    assert (array["wall_seconds"], array["cpu_user_seconds"]) == (16, 0.472928)
    assert (array["status"], array["failure_mode"], array["exit_code"]) == (
        "failed",
        "nonzero-exit",
        255,
    )
    assert array["raw"].startswith('"JOB_FINISH" "7.06" 1302184020 436491')

    grid = good[2]  # line 4 (after the two-line record)
    assert grid["job_id"] == "CERN-PROD:31255091:1380043630"
    assert (grid["host"], grid["queue"], grid["wall_seconds"]) == ("a0052", "abcgrid", 25)
    assert (grid["cpu_user_seconds"], grid["cpu_system_seconds"]) == (15.093705, 8.511706)
    assert grid["max_rss_mb"] == 1460.258  # maxRMem 1495304 KiB


@needs_realdata
def test_lsf_broken_copy_is_dead_lettered(tmp_path: Path) -> None:
    lines = LSF.read_text().splitlines(keepends=True)
    first, second_a, _second_b, third = lines
    broken = [
        first[: first.index("277.210000")] + "\n",  # truncated before the rusage
        first.replace("1089407406", "1089406000"),  # end before start (1089406862)
        second_a,  # its continuation line lost: the string is still open at the next record
        third.replace("1380043655", "13800436x5"),  # non-numeric event time
        '"JOB_RESIZE" "9.1" 1380043700 31255091 0\n',  # another event: skipped
        "not an accounting record\n",
        first,
        third[: third.index("# Wait for the user job")],  # file ends inside the command string
    ]
    path = tmp_path / "lsb.acct"
    path.write_text("".join(broken))
    good, bad = split(read_lsf(path, site="S"))
    check_valid(good)
    assert len(good) == 1 and good[0]["job_id"] == "S:699195:1089406862"
    assert [(r.location, r.reason) for r in bad] == [
        ("line 1", "expected at least 56 fields (numAskedHosts 0, numExHosts 1), got 29 "
                   "(truncated record?)"),
        ("line 2", "end_time before start_time (event time 1089406000 < startTime 1089406862)"),
        ("line 3", "unterminated quoted string: the next line starts a new record "
                   "(truncated record?)"),
        ("line 4", "event time '13800436x5' (field 3) is not an integer"),
        ("line 6", "not an lsb.acct record (first field 'not')"),
        ("line 8", "unterminated quoted string at the end of the file (truncated?)"),
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------
# SUPReMM
# --------------------------------------------------------------------------------------------


@needs_realdata
def test_supremm_real_summaries() -> None:
    items = {p.name: list(read_supremm(p, site="UB-CCR")) for p in sorted(SUPREMM.glob("*.json"))}
    assert len(items) == 5 and all(len(v) == 1 for v in items.values())
    good = [v[0] for v in items.values() if isinstance(v[0], dict)]
    assert len(good) == 4
    check_valid(good)

    namd = items["pcp_4655275-1445928790.json"][0]  # 64 cores on 8 whole nodes
    assert namd["job_id"] == "UB-CCR:13:4655275-1445928790"
    assert (namd["host"], namd["queue"], namd["cores"], namd["vo"]) == (
        "cpn-d07-30-01",
        "general-compute",
        64,
        "xdtas",  # account "" -> group
    )
    assert (namd["submit_time"], namd["start_time"], namd["end_time"]) == (
        "2015-10-27T06:51:05Z",
        "2015-10-27T06:51:39Z",
        "2015-10-27T06:53:10Z",
    )
    assert namd["wall_seconds"] == 91
    # jobcpus missing (error 5); nodecpus counts 64 cores = ncpus: user 0.777487 x 64 x 91 s
    assert (namd["cpu_user_seconds"], namd["cpu_system_seconds"]) == (4528.084, 49.436)
    # gpfs0 read_bytes avg 20525406.75 x 8 nodes, write_bytes 3148706 x 8
    assert (namd["input_bytes"], namd["output_bytes"]) == (164203254, 25189648)
    assert (namd["status"], namd["exit_code"], namd["max_rss_mb"]) == ("success", 0, None)
    assert namd["source_format"] == "supremm" and json.loads(namd["raw"])["_id"] == (
        "4655275-1445928790"
    )

    timeout = items["pcp_5659085-1469572318.json"][0]  # 32 of the 48 cores of 4 nodes
    assert (timeout["status"], timeout["failure_mode"], timeout["exit_code"]) == (
        "failed",
        "timeout",
        1,
    )
    assert (timeout["cpu_user_seconds"], timeout["cpu_system_seconds"]) == (100012.658, 1242.206)
    assert timeout["input_bytes"] is None and timeout["output_bytes"] is None  # shared nodes

    r_job = items["pcp_8291026-1518721536.json"][0]
    assert (r_job["vo"], r_job["cores"], r_job["wall_seconds"]) == ("accountname", 16, 60)
    assert (r_job["cpu_user_seconds"], r_job["cpu_system_seconds"]) == (134.838, 19.845)
    # nfs /user read-normal 217120 x 2 + /util 99326299.5 x 2 (gpfs0 read nothing)
    assert r_job["input_bytes"] == 434240 + 198652599
    assert r_job["output_bytes"] == 439337 + 3830  # gpfs0 219668.5 x 2 + nfs /user 1915 x 2

    rejected = items["pcp_719452-1470861674.json"][0]
    assert isinstance(rejected, Rejected) and rejected.location == "document 1 (line 1)"
    assert rejected.reason == (
        "summary incomplete (summarization.complete is false); cpu.jobcpus unavailable and "
        "cpu.nodecpus counts 3 cores, not the job's 90: the job's CPU time is unknown; "
        "user CPU time unknown; outcome not in the record (fill_unknown=True assumes success)"
    )


@needs_realdata
def test_supremm_broken_copies_are_dead_lettered(tmp_path: Path) -> None:
    doc = json.loads((SUPREMM / "pcp_8291026-1518721536.json").read_text())
    backwards = json.loads(json.dumps(doc))
    backwards["acct"]["end_time"] = 1518721400  # before start_time 1518721476
    letters = json.loads(json.dumps(doc))
    letters["acct"]["start_time"] = "15187x1476"
    no_acct = {k: v for k, v in doc.items() if k != "acct"}
    text = json.dumps(doc)
    lines = [text, json.dumps(backwards), json.dumps(letters), json.dumps(no_acct), text[:5000]]
    path = tmp_path / "summaries.jsonl"
    path.write_text("\n".join(lines) + "\n")
    good, bad = split(read_supremm(path, site="S"))
    check_valid(good)
    assert len(good) == 1 and good[0]["job_id"] == "S:13:8291026-1518721536"
    assert [r.location for r in bad] == [
        "document 2 (line 2)",
        "document 3 (line 3)",
        "document 4 (line 4)",
        "document 5 (line 5)",
    ]
    assert bad[0].reason == "end_time before start_time"
    assert bad[1].reason.startswith("acct.start_time '15187x1476' is not an integer")
    assert bad[2].reason == "no acct block: not a SUPReMM job summary"
    assert bad[3].reason.startswith("invalid JSON: ")

    array = tmp_path / "summaries.json"  # a JSON array of documents reads the same
    array.write_text(json.dumps([doc, doc], indent=2))
    assert [j["job_id"] for j in read_supremm(array, site="S")] == [good[0]["job_id"]] * 2
