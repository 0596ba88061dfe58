"""Real-format adapters for node samples and perfSONAR results (pure Python: no Spark, no services).

Reads the real samples under ``shared/realdata`` (vmstat/iostat from jc's fixtures, sysstat's
``sadf -j`` test files, GEANT's esmond responses) and small fixtures written here from the
formats' public documentation (``iostat -o JSON``, pScheduler / perfSONAR 5 archive documents,
OSG network-datastore documents). Every emitted dict must validate against its topic's JSON
Schema; broken copies must give ``Rejected`` with a location and a reason.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from gridlake.sources.base import Rejected
from gridlake.sources.iostat import read_iostat, read_iostat_json
from gridlake.sources.perfsonar import histogram_stats, read_esmond, read_osg_netds, read_ps5
from gridlake.sources.registry_nodes import FORMATS
from gridlake.sources.sadf import read_sadf
from gridlake.sources.vmstat import read_vmstat

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
JC = REALDATA / "jc-fixtures-vmstat-iostat"
SYSSTAT = REALDATA / "sysstat-test-sa-files"
ESMOND = REALDATA / "geant-perfsonar-esmond"
SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

START = "2021-12-01T10:00:00Z"


def _needs(folder: Path) -> None:
    if not folder.is_dir():
        pytest.skip(f"real sample folder {folder} is absent (shared/realdata not mounted)")


def _validator(topic: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{topic}.schema.json").read_text())
    return Draft202012Validator(schema)


VALIDATORS = {t: _validator(t) for t in ("grid.nodes", "grid.network")}


def split(items, topic: str):
    """(records, rejected); every record must be valid for ``topic`` and carry ``raw``."""
    records, rejected = [], []
    for it in items:
        if isinstance(it, Rejected):
            assert it.location and it.reason, it
            assert len(it.raw.encode()) <= 64 * 1024
            rejected.append(it)
            continue
        errors = [e.message for e in VALIDATORS[topic].iter_errors(it)]
        assert not errors, (errors, {k: v for k, v in it.items() if k != "raw"})
        assert RFC3339_Z.match(it["ts"]), it["ts"]
        assert isinstance(it["raw"], str) and it["raw"]
        records.append(it)
    return records, rejected


def by_device(rec: dict) -> dict:
    return {d["device"]: d for d in rec["disks"]}


# --------------------------------------------------------------------------------------------
# vmstat
# --------------------------------------------------------------------------------------------

# file -> (samples by default, samples with keep_first=True); None = whole file rejected
VMSTAT_COUNTS = {
    "centos-7.7__vmstat.out": (0, 1),
    "centos-7.7__vmstat-a.out": (0, 1),
    "centos-7.7__vmstat-w.out": (0, 1),
    "centos-7.7__vmstat-awt.out": (0, 1),
    "centos-7.7__vmstat-at-5-10.out": (3, 4),
    "generic__vmstat-extra-wide.out": (0, 1),
    "ubuntu-18.04__vmstat-1-long.out": (36, 37),
    "centos-7.7__vmstat-d.out": None,
    "centos-7.7__vmstat-dt.out": None,
    "linux-proc__vmstat": None,
}


def test_vmstat_every_real_file():
    _needs(JC)
    files = sorted(JC.glob("*vmstat*"))
    assert {f.name for f in files} == set(VMSTAT_COUNTS)
    for f in files:
        expected = VMSTAT_COUNTS[f.name]
        for keep_first in (False, True):
            recs, rej = split(
                read_vmstat(f, site="CERN-PROD", host="wn1", start=START, keep_first=keep_first),
                "grid.nodes",
            )
            if expected is None:
                assert recs == [] and len(rej) == 1, f.name
                continue
            assert not rej, (f.name, rej)
            assert len(recs) == expected[keep_first], f.name
            assert all(r["kind"] == "vmstat" for r in recs)


def test_vmstat_values_and_start_timestamps():
    _needs(JC)
    recs, _ = split(
        read_vmstat(JC / "ubuntu-18.04__vmstat-1-long.out", site="S", host="h", start=START),
        "grid.nodes",
    )
    first = recs[0]
    assert (
        first["raw"]
        == " 0  0    524 763388 147216 819640    0    0     0     0   57   96  0  1 99  0  0"
    )
    assert first["ts"] == "2021-12-01T10:00:01Z"
    assert first["interval_seconds"] == 1
    assert (first["free_kb"], first["buff_kb"], first["cache_kb"], first["swpd_kb"]) == (
        763388,
        147216,
        819640,
        524,
    )
    assert (first["wa"], first["id"], first["sy"], first["in"], first["cs"]) == (0, 99, 1, 57, 96)
    # the header repeats after 33 data lines; the index (and the clock) continue across it
    after_header = recs[32]
    assert after_header["raw"].split()[0] == "1" and after_header["ts"] == "2021-12-01T10:00:33Z"
    assert recs[-1]["ts"] == "2021-12-01T10:00:36Z" and (recs[-1]["in"], recs[-1]["cs"]) == (
        98,
        114,
    )
    # an explicit interval scales the clock
    recs5, _ = split(
        read_vmstat(
            JC / "ubuntu-18.04__vmstat-1-long.out",
            site="S",
            host="h",
            start="2021-12-01T11:00:00+01:00",
            interval_seconds=5,
        ),
        "grid.nodes",
    )
    assert recs5[1]["ts"] == "2021-12-01T10:00:10Z" and recs5[1]["interval_seconds"] == 5


def test_vmstat_t_and_a_formats():
    _needs(JC)
    recs, _ = split(
        read_vmstat(JC / "centos-7.7__vmstat-at-5-10.out", site="S", host="h"), "grid.nodes"
    )
    r = recs[0]
    # 2021-09-16 20:33:18 PDT (UTC-7); -a prints inact/active, so buff/cache are unknown
    assert r["ts"] == "2021-09-17T03:33:18Z" and r["interval_seconds"] == 5
    assert r["free_kb"] == 2794716 and r["buff_kb"] is None and r["cache_kb"] is None
    assert (r["inact_kb"], r["active_kb"]) == (295968, 312744)
    assert r["id"] == 100 and r["in"] == 41
    # tz= overrides the header's zone
    recs_tz, _ = split(
        read_vmstat(JC / "centos-7.7__vmstat-at-5-10.out", site="S", host="h", tz="UTC"),
        "grid.nodes",
    )
    assert recs_tz[0]["ts"] == "2021-09-16T20:33:18Z"
    # since-boot line kept on request, marked as such
    (boot,) = split(
        read_vmstat(
            JC / "centos-7.7__vmstat-w.out", site="S", host="h", start=START, keep_first=True
        ),
        "grid.nodes",
    )[0]
    assert boot["since_boot"] is True and boot["interval_seconds"] == 0
    assert (boot["buff_kb"], boot["cache_kb"], boot["us"], boot["id"]) == (2108, 741208, 0, 99)


def test_vmstat_needs_start_site_host(tmp_path):
    _needs(JC)
    src = JC / "ubuntu-18.04__vmstat-1-long.out"
    items = list(read_vmstat(src, site="S", host="h"))
    assert len(items) == 1 and isinstance(items[0], Rejected)
    assert items[0].location == "line 3" and "no timestamp" in items[0].reason
    assert "--start" in items[0].reason
    items = list(read_vmstat(src, start=START))
    assert len(items) == 1 and "pass site= and host=" in items[0].reason
    # an ambiguous zone abbreviation needs tz=
    text = (JC / "centos-7.7__vmstat-at-5-10.out").read_text().replace("PDT", "CST")
    (tmp_path / "cst.out").write_text(text)
    items = list(read_vmstat(tmp_path / "cst.out", site="S", host="h"))
    assert len(items) == 1 and "pass tz=" in items[0].reason


def test_vmstat_broken_line_and_gzip(tmp_path):
    _needs(JC)
    lines = (JC / "ubuntu-18.04__vmstat-1-long.out").read_text().splitlines(keepends=True)
    # line 10: drop the last column (st)
    lines[9] = lines[9].rstrip("\n").rsplit(" ", 1)[0] + "\n"
    broken = tmp_path / "vmstat.out.gz"
    with gzip.open(broken, "wt") as fh:
        fh.writelines(lines)
    recs, rej = split(read_vmstat(broken, site="S", host="h", start=START), "grid.nodes")
    assert len(recs) == 35
    assert len(rej) == 1
    assert rej[0].location == "line 10"
    assert rej[0].reason == "expected 17 columns, found 16"
    assert rej[0].raw == lines[9].rstrip("\n")
    # the clock is not shifted by the rejected line
    assert recs[7]["ts"] == "2021-12-01T10:00:09Z"
    # a non-numeric field
    lines2 = (JC / "ubuntu-18.04__vmstat-1-long.out").read_text().splitlines(keepends=True)
    lines2[10] = lines2[10].replace("763388", "76x388")
    (tmp_path / "nan.out").write_text("".join(lines2))
    recs, rej = split(
        read_vmstat(tmp_path / "nan.out", site="S", host="h", start=START), "grid.nodes"
    )
    assert len(recs) == 35 and len(rej) == 1
    assert rej[0].location == "line 11" and "76x388" in rej[0].reason


# --------------------------------------------------------------------------------------------
# iostat text
# --------------------------------------------------------------------------------------------

IOSTAT_REPORTS = {  # file -> reports in the file (samples = reports - 1 by default)
    "centos-7.7__iostat.out": 1,
    "centos-7.7__iostat-1.out": 3,
    "centos-7.7__iostat-m.out": 1,
    "centos-7.7__iostat-mx.out": 1,
    "centos-7.7__iostat-x.out": 1,
    "ubuntu-18.04__iostat.out": 1,
    "ubuntu-18.04__iostat-1.out": 3,
    "ubuntu-18.04__iostat-m.out": 1,
    "ubuntu-18.04__iostat-mx.out": 1,
    "ubuntu-18.04__iostat-x.out": 1,
    "ubuntu-20.10__iostat.out": 1,
    "ubuntu-20.10__iostat-m.out": 1,
    "ubuntu-20.10__iostat-mx.out": 1,
    "ubuntu-20.10__iostat-x.out": 1,
}
IOSTAT_DEVICES = {"centos-7.7": 3, "ubuntu-18.04": 20, "ubuntu-20.10": 14}


def test_iostat_every_real_file():
    _needs(JC)
    files = sorted(JC.glob("*iostat*"))
    assert {f.name for f in files} == set(IOSTAT_REPORTS)
    for f in files:
        n = IOSTAT_REPORTS[f.name]
        recs, rej = split(read_iostat(f, site="S", start=START), "grid.nodes")
        assert not rej and len(recs) == n - 1, f.name
        recs, rej = split(read_iostat(f, site="S", start=START, keep_first=True), "grid.nodes")
        assert not rej and len(recs) == n, f.name
        for r in recs:
            assert r["kind"] == "iostat"
            assert len(r["disks"]) == IOSTAT_DEVICES[f.name.split("__")[0]], f.name
            assert r["cpu_idle"] is not None


def test_iostat_x_old_and_new_columns():
    _needs(JC)
    (old,) = split(
        read_iostat(JC / "centos-7.7__iostat-x.out", site="S", start=START, keep_first=True),
        "grid.nodes",
    )[0]
    assert old["host"] == "localhost.localdomain" and old["since_boot"] is True
    assert (old["cpu_user"], old["cpu_system"], old["cpu_iowait"], old["cpu_idle"]) == (
        0.14,
        0.16,
        0.0,
        99.7,
    )
    sda = by_device(old)["sda"]
    assert sda == {
        "device": "sda",
        "r_s": 0.13,
        "w_s": 0.11,
        "rkb_s": 5.27,
        "wkb_s": 1.1,
        "r_await_ms": 0.53,
        "w_await_ms": 1.29,
        "aqu_sz": 0.0,
        "util_pct": 0.01,
        "await_ms": 0.88,
    }
    (new,) = split(
        read_iostat(
            JC / "ubuntu-18.04__iostat-x.out", site="S", host="wn7", start=START, keep_first=True
        ),
        "grid.nodes",
    )[0]
    assert new["host"] == "wn7"  # host= wins over the header's nodename
    assert new["cpu_iowait"] == 2.28 and new["cpu_nice"] == 12.36
    sda = by_device(new)["sda"]
    assert (sda["r_s"], sda["w_s"], sda["rkb_s"], sda["wkb_s"]) == (
        127.92,
        67.15,
        8595.16,
        12457.33,
    )
    assert (sda["r_await_ms"], sda["w_await_ms"], sda["aqu_sz"], sda["util_pct"]) == (
        2.57,
        6.93,
        0.79,
        15.14,
    )
    assert "await_ms" not in sda
    (v12,) = split(
        read_iostat(JC / "ubuntu-20.10__iostat-x.out", site="S", start=START, keep_first=True),
        "grid.nodes",
    )[0]
    sda = by_device(v12)["sda"]
    assert (sda["r_s"], sda["rkb_s"], sda["r_await_ms"], sda["w_s"], sda["wkb_s"]) == (
        2.67,
        100.76,
        0.36,
        2.81,
        129.44,
    )
    assert (sda["w_await_ms"], sda["aqu_sz"], sda["util_pct"]) == (0.42, 0.0, 0.41)


def test_iostat_megabytes_and_plain_reports():
    _needs(JC)
    (mx,) = split(
        read_iostat(JC / "ubuntu-20.10__iostat-mx.out", site="S", start=START, keep_first=True),
        "grid.nodes",
    )[0]
    sda = by_device(mx)["sda"]
    assert sda["rkb_s"] == 102.4 and sda["wkb_s"] == 133.12  # 0.10 and 0.13 MB/s
    assert sda["util_pct"] == 0.41
    recs, _ = split(
        read_iostat(JC / "centos-7.7__iostat-1.out", site="S", start=START), "grid.nodes"
    )
    assert [r["ts"] for r in recs] == ["2021-12-01T10:00:01Z", "2021-12-01T10:00:02Z"]
    assert recs[0]["cpu_idle"] == 100.0
    sda = by_device(recs[0])["sda"]
    assert sda["tps"] == 0.0 and sda["r_s"] is None and sda["util_pct"] is None


OLD_X_COLUMNS = [
    "rrqm/s",
    "wrqm/s",
    "r/s",
    "w/s",
    "rkB/s",
    "wkB/s",
    "avgrq-sz",
    "avgqu-sz",
    "await",
    "r_await",
    "w_await",
    "svctm",
    "%util",
]
CPU_HEADER = "avg-cpu:  %user   %nice %system %iowait  %steal   %idle"


def _iostat_report(time_line: str, cpu: tuple, devices: dict[str, tuple]) -> str:
    """One ``iostat -x -t`` report of sysstat 10.x/11.x, laid out as iostat prints it."""
    lines = [time_line, CPU_HEADER, " " * 10 + "".join(f"{v:8.2f}" for v in cpu), ""]
    lines.append(f"{'Device:':<14}" + "".join(f"{c:>9}" for c in OLD_X_COLUMNS))
    for name, vals in devices.items():
        lines.append(f"{name:<14}" + "".join(f"{v:9.2f}" for v in vals))
    return "\n".join(lines) + "\n\n"


IDLE_SDB = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
IOSTAT_T_TEXT = (
    "Linux 3.10.0-1160.el7.x86_64 (wn042.example.org) \t11/20/2026 \t_x86_64_\t(16 CPU)\n\n"
    + _iostat_report(
        "11/20/2026 02:00:00 PM",
        (20.10, 0.00, 3.05, 0.41, 0.00, 76.44),
        {
            "sda": (
                0.5,
                3.22,
                11.53,
                24.0,
                812.41,
                1611.77,
                136.42,
                0.17,
                4.77,
                2.81,
                5.67,
                2.17,
                7.7,
            ),
            "sdb": (0, 0, 0.1, 0, 0.4, 0, 8.0, 0, 1.0, 1.0, 0, 1.0, 0.01),
        },
    )
    + _iostat_report(
        "11/20/2026 02:00:10 PM",
        (9.80, 0.00, 2.10, 61.30, 0.00, 26.80),
        {
            "sda": (12, 1, 412, 8, 52736, 64, 251.43, 31.52, 75.04, 76.2, 15.5, 2.38, 99.8),
            "sdb": IDLE_SDB,
        },
    )
    + _iostat_report(
        "11/20/2026 02:00:20 PM",
        (10.00, 0.00, 2.00, 60.00, 0.00, 28.00),
        {
            "sda": (10, 1, 400, 9, 51200, 72, 250.0, 30.0, 73.0, 74.0, 16.0, 2.4, 99.5),
            "sdb": IDLE_SDB,
        },
    )
)


def test_iostat_t_timestamps(tmp_path):
    f = tmp_path / "iostat-xt.out"
    f.write_text(IOSTAT_T_TEXT)
    items = list(read_iostat(f, site="S"))
    assert len(items) == 1 and "pass tz=" in items[0].reason  # local time, zone unknown
    recs, rej = split(read_iostat(f, site="S", tz="+01:00"), "grid.nodes")
    assert not rej and len(recs) == 2
    busy = recs[0]
    assert busy["host"] == "wn042.example.org"
    assert busy["ts"] == "2026-11-20T13:00:10Z" and busy["interval_seconds"] == 10
    assert busy["cpu_iowait"] == 61.3
    sda = by_device(busy)["sda"]
    assert (sda["r_await_ms"], sda["aqu_sz"], sda["util_pct"], sda["rkb_s"]) == (
        76.2,
        31.52,
        99.8,
        52736.0,
    )
    assert recs[1]["ts"] == "2026-11-20T13:00:20Z"


def test_iostat_truncated_reports(tmp_path):
    _needs(JC)
    text = (JC / "ubuntu-18.04__iostat-1.out").read_text()
    lines = text.splitlines()
    # cut in the middle of a device line of the last report
    cut = tmp_path / "cut-mid-line.out"
    cut.write_text("\n".join(lines[:-8]) + "\n" + lines[-8][:20])
    recs, rej = split(read_iostat(cut, site="S", start=START), "grid.nodes")
    assert len(recs) == 1 and len(rej) == 1
    r = rej[0]
    assert r.location.startswith("report 3 (lines ") and "expected 5 values, found" in r.reason
    assert r.raw.endswith(lines[-8][:20])
    # cut at a line boundary: fewer devices than the report before
    cut2 = tmp_path / "cut-lines.out"
    cut2.write_text("\n".join(lines[:-6]) + "\n")
    recs, rej = split(read_iostat(cut2, site="S", start=START), "grid.nodes")
    assert len(recs) == 1 and len(rej) == 1
    assert rej[0].reason.endswith("truncated: 15 devices, the report before had 20")
    # cut right after the avg-cpu header
    head = tmp_path / "cut-cpu.out"
    head.write_text("\n".join(lines[:3]) + "\n")
    items = list(read_iostat(head, site="S", start=START, keep_first=True))
    assert len(items) == 1 and "avg-cpu header without values" in items[0].reason
    # no start, no time lines
    items = list(read_iostat(JC / "ubuntu-18.04__iostat-1.out", site="S"))
    assert len(items) == 1 and items[0].reason == "no timestamp: pass --start (start=)"
    # no site
    items = list(read_iostat(JC / "ubuntu-18.04__iostat-1.out", start=START))
    assert len(items) == 1 and "pass site=" in items[0].reason


# --------------------------------------------------------------------------------------------
# iostat -o JSON (fixture written from the sysstat JSON output format)
# --------------------------------------------------------------------------------------------


def _nvme(r_s, rkb, r_await, w_s, wkb, w_await, aqu, util, rrqm=0.0, wrqm=0.0) -> dict:
    """One ``disk`` entry of ``iostat -x -o JSON`` (sysstat 12.x keys)."""
    return {
        "disk_device": "nvme0n1",
        **{"r/s": r_s, "rkB/s": rkb, "rrqm/s": rrqm, "rrqm": 0.0, "r_await": r_await},
        **{"rareq-sz": round(rkb / r_s, 2) if r_s else 0.0},
        **{"w/s": w_s, "wkB/s": wkb, "wrqm/s": wrqm, "wrqm": 0.0, "w_await": w_await},
        **{"wareq-sz": round(wkb / w_s, 2) if w_s else 0.0},
        **{"d/s": 0.0, "dkB/s": 0.0, "drqm/s": 0.0, "drqm": 0.0, "d_await": 0.0},
        **{"dareq-sz": 0.0, "f/s": 0.0, "f_await": 0.0, "aqu-sz": aqu, "util": util},
    }


def _cpu(user, system, iowait, steal, idle) -> dict:
    return {
        "user": user,
        "nice": 0.0,
        "system": system,
        "iowait": iowait,
        "steal": steal,
        "idle": idle,
    }


IOSTAT_JSON_STATS = [
    (
        "2026-11-20T14:00:00+0100",
        _cpu(20.1, 3.05, 0.41, 0.0, 76.44),
        _nvme(11.53, 812.41, 0.21, 24.0, 1611.77, 0.05, 0.01, 1.7),
    ),
    (
        "2026-11-20T14:01:00+0100",
        _cpu(88.2, 4.1, 2.5, 1.2, 4.0),
        _nvme(310.4, 39731.2, 0.43, 55.1, 7052.8, 0.09, 0.14, 35.6),
    ),
    (
        "2026-11-20T14:02:00+0100",
        _cpu(87.9, 4.0, 2.6, 1.1, 4.4),
        _nvme(305.0, 39040.0, 0.41, 50.0, 6400.0, 0.1, 0.13, 34.9),
    ),
]


def _iostat_json_text() -> str:
    """The fixture laid out as sysstat prints it (tabs, one element per line)."""
    stats = []
    for ts, cpu, disk in IOSTAT_JSON_STATS:
        stats.append(
            "\t\t\t\t{\n"
            f'\t\t\t\t\t"timestamp": "{ts}",\n'
            f'\t\t\t\t\t"avg-cpu":  {json.dumps(cpu)},\n'
            '\t\t\t\t\t"disk": [\n'
            f"\t\t\t\t\t\t{json.dumps(disk)}\n"
            "\t\t\t\t\t]\n"
            "\t\t\t\t}"
        )
    host = {
        "nodename": "wn042.example.org",
        "sysname": "Linux",
        "release": "5.14.0-362.8.1.el9_3.x86_64",
        "machine": "x86_64",
        "number-of-cpus": 16,
        "date": "11/20/2026",
    }
    head = "".join(f"\t\t\t{json.dumps(k)}: {json.dumps(v)},\n" for k, v in host.items())
    return (
        '{"sysstat": {\n\t"hosts": [\n\t\t{\n'
        + head
        + '\t\t\t"statistics": [\n'
        + ",\n".join(stats)
        + "\n\t\t\t]\n\t\t}\n\t]\n}}\n"
    )


IOSTAT_JSON = _iostat_json_text()


def test_iostat_json(tmp_path):
    f = tmp_path / "iostat.json"
    f.write_text(IOSTAT_JSON)
    recs, rej = split(read_iostat_json(f, site="T2_CH_CSCS"), "grid.nodes")
    assert not rej and len(recs) == 2
    r = recs[0]
    assert r["host"] == "wn042.example.org" and r["site"] == "T2_CH_CSCS"
    assert r["ts"] == "2026-11-20T13:01:00Z" and r["interval_seconds"] == 60
    assert (r["cpu_user"], r["cpu_system"], r["cpu_iowait"], r["cpu_steal"], r["cpu_idle"]) == (
        88.2,
        4.1,
        2.5,
        1.2,
        4.0,
    )
    nvme = by_device(r)["nvme0n1"]
    assert (nvme["r_s"], nvme["rkb_s"], nvme["r_await_ms"], nvme["w_await_ms"]) == (
        310.4,
        39731.2,
        0.43,
        0.09,
    )
    assert (nvme["aqu_sz"], nvme["util_pct"]) == (0.14, 35.6)
    assert json.loads(r["raw"])["avg-cpu"]["user"] == 88.2  # raw is the statistics element
    # keep_first, and gzip
    gz = tmp_path / "iostat.json.gz"
    gz.write_bytes(gzip.compress(IOSTAT_JSON.encode()))
    recs, _ = split(read_iostat_json(gz, site="S", keep_first=True), "grid.nodes")
    assert len(recs) == 3 and recs[0]["since_boot"] is True
    # cut in half
    cut = tmp_path / "cut.json"
    cut.write_text(IOSTAT_JSON[: len(IOSTAT_JSON) // 2])
    recs, rej = split(read_iostat_json(cut, site="S"), "grid.nodes")
    assert len(rej) == 1 and rej[0].location.startswith("record ")
    assert rej[0].reason.startswith("truncated")


# --------------------------------------------------------------------------------------------
# sadf -j
# --------------------------------------------------------------------------------------------


def test_sadf_real_files():
    _needs(SYSSTAT)
    files = sorted(SYSSTAT.glob("*.json"))
    assert [f.name for f in files] == [
        "sadf_j_data-11.6.5_converted.json",
        "sadf_j_data-12.0.0.json",
    ]
    out = {}
    for f in files:
        recs, rej = split(read_sadf(f, site="S"), "grid.nodes")
        assert not rej, rej
        assert [r["kind"] for r in recs] == ["vmstat", "iostat"]  # one statistics element each
        out[f.name] = recs
    vm, io = out["sadf_j_data-11.6.5_converted.json"]
    assert vm["host"] == "linux.home" and vm["ts"] == "2018-08-29T09:34:34Z"
    assert vm["interval_seconds"] == 46
    assert (vm["us"], vm["sy"], vm["id"], vm["wa"], vm["st"]) == (0.47, 0.71, 98.75, 0.08, 0.0)
    assert (vm["free_kb"], vm["buff_kb"], vm["cache_kb"], vm["swpd_kb"]) == (
        4066192,
        183296,
        1486360,
        0,
    )
    assert (vm["bi"], vm["bo"], vm["in"], vm["cs"], vm["r"], vm["b"]) == (
        55.16,
        173.42,
        7877.17,
        16003.44,
        1,
        0,
    )
    assert vm["si"] == 0.0 and vm["so"] == 0.0
    assert (io["cpu_user"], io["cpu_system"], io["cpu_iowait"], io["cpu_idle"]) == (
        0.47,
        0.71,
        0.08,
        98.75,
    )
    assert len(io["disks"]) == 13
    sda = by_device(io)["sda"]
    assert (sda["rkb_s"], sda["wkb_s"], sda["aqu_sz"], sda["util_pct"], sda["await_ms"]) == (
        55.16,
        173.42,
        0.04,
        1.22,
        6.68,
    )
    assert sda["r_s"] is None and sda["r_await_ms"] is None and sda["tps"] == 5.93
    vm12, _ = out["sadf_j_data-12.0.0.json"]
    assert vm12["ts"] == "2019-06-30T05:39:34Z" and vm12["free_kb"] == 3782488
    assert vm12["in"] is None  # no interrupts activity in that file


SADF_11 = {
    "sysstat": {
        "hosts": [
            {
                "nodename": "wn7.example.org",
                "sysname": "Linux",
                "release": "3.10.0-862.el7.x86_64",
                "machine": "x86_64",
                "number-of-cpus": 8,
                "file-date": "2018-08-29",
                "statistics": [
                    {
                        "timestamp": {
                            "date": "2018-08-29",
                            "time": "09:50:01",
                            "utc": 1,
                            "interval": 600,
                        },
                        "cpu-load": [
                            {
                                "cpu": "all",
                                "user": 55.0,
                                "nice": 1.0,
                                "system": 4.0,
                                "iowait": 20.0,
                                "steal": 0.5,
                                "idle": 19.5,
                            }
                        ],
                        "memory": {"memfree": 1024, "buffers": 2048, "cached": 4096, "swpused": 8},
                        "swap-pages": {"pswpin": 2.5, "pswpout": 10.0},
                        "queue": {"runq-sz": 9, "blocked": 3},
                        "disk": [
                            {
                                "disk-device": "dev8-0",
                                "tps": 120.0,
                                "rd_sec": 20480.0,
                                "wr_sec": 1024.0,
                                "avgrq-sz": 179.2,
                                "avgqu-sz": 3.2,
                                "await": 25.1,
                                "svctm": 7.3,
                                "util-percent": 88.0,
                            }
                        ],
                    }
                ],
            }
        ]
    }
}


def test_sadf_11_key_names_and_local_time(tmp_path):
    f = tmp_path / "sa.json"
    f.write_text(json.dumps(SADF_11, indent=2))
    (vm, io), rej = split(read_sadf(f, site="S"), "grid.nodes")
    assert not rej
    assert (vm["us"], vm["sy"], vm["wa"], vm["id"], vm["st"], vm["r"], vm["b"]) == (
        56.0,
        4.0,
        20.0,
        19.5,
        0.5,
        9,
        3,
    )
    assert (vm["si"], vm["so"], vm["pswpout_s"]) == (10.0, 40.0, 10.0)  # 4 KiB pages
    assert vm["interval_seconds"] == 600 and vm["bi"] is None
    d = io["disks"][0]
    assert (d["device"], d["rkb_s"], d["wkb_s"], d["aqu_sz"], d["util_pct"], d["await_ms"]) == (
        "dev8-0",
        10240.0,
        512.0,
        3.2,
        88.0,
        25.1,
    )
    assert io["cpu_user"] == 55.0 and io["cpu_system"] == 4.0
    # unknown page size (not x86) -> si/so unknown; local time needs tz=
    doc = json.loads(json.dumps(SADF_11))
    doc["sysstat"]["hosts"][0]["machine"] = "ppc64le"
    doc["sysstat"]["hosts"][0]["statistics"][0]["timestamp"]["utc"] = 0
    f2 = tmp_path / "sa2.json"
    f2.write_text(json.dumps(doc))
    items = list(read_sadf(f2, site="S"))
    assert len(items) == 1 and "pass tz=" in items[0].reason
    (vm2, _), _ = split(read_sadf(f2, site="S", tz="Europe/Zurich"), "grid.nodes")
    assert vm2["si"] is None and vm2["ts"] == "2018-08-29T07:50:01Z"


def test_sadf_cut_in_half(tmp_path):
    _needs(SYSSTAT)
    text = (SYSSTAT / "sadf_j_data-12.0.0.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    recs, rej = split(read_sadf(cut, site="S"), "grid.nodes")
    assert recs == [] and len(rej) == 1
    assert rej[0].location.startswith("record 1 (line ") and rej[0].reason.startswith("truncated")
    assert rej[0].raw.lstrip().startswith('{\n\t\t\t\t\t"timestamp"')


# --------------------------------------------------------------------------------------------
# esmond
# --------------------------------------------------------------------------------------------

OWD_URI = (
    "http://158.125.250.70/esmond/perfsonar/archive/"
    "297d7757f0524a06a7c45463f3bba0a6/histogram-owdelay/statistics/300"
)
THROUGHPUT_URI = (
    "http://158.125.250.70/esmond/perfsonar/archive/"
    "095c3f53ada84b7a91d4f1dbd9c5b7ca/throughput/averages/86400"
)
SENT_URI = (
    "http://perfsonar.debrecen3.hbone.hu/esmond/perfsonar/archive/"
    "055e327da6484ce5959dd51a93c93ed5/packet-count-sent/aggregations/86400"
)


def test_esmond_owdelay_statistics():
    _needs(ESMOND)
    recs, rej = split(
        read_esmond(
            ESMOND / "histogram-owdelay-300.json", metadata=ESMOND / "archive.json", uri=OWD_URI
        ),
        "grid.network",
    )
    assert not rej and len(recs) == 854
    r = recs[0]
    assert r["ts"] == "2016-07-03T00:50:00Z" and recs[-1]["ts"] == "2016-07-05T23:55:00Z"
    assert r["test"] == "latency" and r["tool"] == "powstream"
    assert (r["src_host"], r["dst_host"]) == ("psmp-gn-owd-01.buc.ro.geant.net", "psmall.lut.ac.uk")
    assert (r["src_ip"], r["dst_ip"]) == ("62.40.106.193", "158.125.250.70")
    assert r["delay_median_ms"] == 24.3 and r["delay_min_ms"] == 24.3
    assert r["delay_mean_ms"] == pytest.approx(24.31946666666667)
    assert r["delay_sd_ms"] == pytest.approx(0.05441552066174528)
    assert r["src_site"] is None and r["packet_loss"] is None
    assert r["summary_window_s"] == 300
    assert json.loads(r["raw"]) == {
        "ts": 1467507000,
        "val": json.loads(r["raw"])["val"],
    } and r["raw"].startswith('{"ts":1467507000,"val":{"standard-deviation":0.0544')
    # statistics are recognised without uri/metadata when hosts and sites are given
    recs2, _ = split(
        read_esmond(
            ESMOND / "histogram-owdelay-300.json",
            src_host="a.example.org",
            dst_host="b.example.org",
            src_site="RO-07-NIPNE",
            dst_site="UKI-NORTHGRID",
        ),
        "grid.network",
    )
    assert len(recs2) == 854 and recs2[3]["src_site"] == "RO-07-NIPNE" and recs2[3]["tool"] is None


def test_esmond_numeric_series():
    _needs(ESMOND)
    recs, _ = split(
        read_esmond(
            ESMOND / "throughput-86400.json", metadata=ESMOND / "archive.json", uri=THROUGHPUT_URI
        ),
        "grid.network",
    )
    assert len(recs) == 266
    r = recs[0]
    assert (r["test"], r["tool"], r["ts"], r["throughput_bps"]) == (
        "throughput",
        "iperf3",
        "2016-07-06T00:00:00Z",
        938020779.8,
    )
    assert (r["src_host"], r["dst_host"]) == ("psmall.lut.ac.uk", "psmp-gn-bw-01-gen-ch.geant.net")
    recs, _ = split(
        read_esmond(
            ESMOND / "debrecen3-86400.json",
            metadata=ESMOND / "debrecen3-archive.json",
            uri=SENT_URI,
        ),
        "grid.network",
    )
    assert len(recs) == 8 and recs[0]["packets_sent"] == 428400
    assert recs[0]["dst_host"] == "perfsonar.debrecen3.hbone.hu"
    recs, _ = split(
        read_esmond(
            ESMOND / "esmond-packet-count-lost-86400.json",
            event_type="packet-count-lost",
            src_host="a.example.org",
            dst_host="b.example.org",
        ),
        "grid.network",
    )
    assert len(recs) == 22 and sum(r["packets_lost"] for r in recs) == 22
    assert recs[7]["ts"] == "2018-10-24T00:00:00Z" and recs[7]["packets_lost"] == 6


def test_esmond_refusals(tmp_path):
    _needs(ESMOND)
    # numeric points: the event type cannot be told from the data
    items = list(read_esmond(ESMOND / "throughput-86400.json", src_host="a", dst_host="b"))
    assert len(items) == 1 and "pass event_type= or uri=" in items[0].reason
    # a metadata list needs a key
    items = list(read_esmond(ESMOND / "throughput-86400.json", metadata=ESMOND / "archive.json"))
    assert len(items) == 1 and items[0].reason == (
        "metadata has 235 entries: pass metadata_key= or uri="
    )
    # the metadata entry must have the event type
    items = list(
        read_esmond(
            ESMOND / "throughput-86400.json",
            metadata=ESMOND / "archive.json",
            metadata_key="297d7757f0524a06a7c45463f3bba0a6",
            event_type="throughput",
        )
    )
    assert len(items) == 1 and "has no event type 'throughput'" in items[0].reason
    # an event type without a grid.network field
    items = list(
        read_esmond(
            ESMOND / "throughput-86400.json", event_type="histogram-ttl", src_host="a", dst_host="b"
        )
    )
    assert len(items) == 1 and "no grid.network mapping" in items[0].reason
    # metadata documents are not data points
    recs, rej = split(
        read_esmond(ESMOND / "esmond-archive.json", src_host="a", dst_host="b"), "grid.network"
    )
    assert recs == [] and len(rej) == 21  # one per metadata entry
    assert rej[20].location == "record 21 (line 1)" and "esmond point" in rej[20].reason


def test_esmond_cut_in_half(tmp_path):
    _needs(ESMOND)
    text = (ESMOND / "histogram-owdelay-300.json").read_text()
    cut = tmp_path / "owd.json.gz"
    cut.write_bytes(gzip.compress(text[: len(text) // 2].encode()))
    recs, rej = split(
        read_esmond(cut, metadata=ESMOND / "archive.json", uri=OWD_URI), "grid.network"
    )
    complete = text[: len(text) // 2].count("}}")  # points fully inside the half
    assert len(recs) == complete and 400 < complete < 440
    assert len(rej) == 1
    assert rej[0].location == f"record {complete + 1} (line 1)"
    assert rej[0].reason.startswith("truncated")
    assert rej[0].raw.startswith('{"ts":')


def test_histogram_stats_matches_pscheduler():
    # pScheduler's own latency result-format test: median 2.60, min 2.51, mean 2.93, sd 4.32 ms
    hist = json.loads(PS5_LATENCY)["result"]["histogram-latency"]
    s = histogram_stats(hist)
    assert s["delay_median_ms"] == 2.6 and s["delay_min_ms"] == 2.51
    assert round(s["delay_mean_ms"], 2) == 2.93 and round(s["delay_sd_ms"], 2) == 4.32
    assert histogram_stats({"1": 1, "3": 1})["delay_median_ms"] == 2.0
    assert histogram_stats({}) is None and histogram_stats({"x": 1}) is None


# --------------------------------------------------------------------------------------------
# perfSONAR 5 archive documents (fixtures written from pScheduler's result schemas and the
# perfSONAR Logstash pipeline that stores them in OpenSearch pscheduler_* indices)
# --------------------------------------------------------------------------------------------

PS5_LATENCY = json.dumps(
    {
        "test": {
            "type": "latencybg",
            "spec": {
                "schema": 1,
                "source": "psonar-owd.cern.ch",
                "dest": "perfsonar-lt.grid.surfsara.nl",
                "packet-interval": 0.1,
                "packet-count": 600,
                "bucket-width": 0.001,
            },
        },
        "tool": {"name": "powstream", "version": "1.0"},
        "run": {
            "href": "https://psonar-owd.cern.ch/pscheduler/tasks/5c1f/runs/9a2b",
            "start-time": "2026-11-20T14:00:00+00:00",
            "end-time": "2026-11-20T14:01:00+00:00",
        },
        "participants": ["psonar-owd.cern.ch", "perfsonar-lt.grid.surfsara.nl"],
        "result": {
            "schema": 1,
            "succeeded": True,
            "max-clock-error": 0.27,
            "packets-sent": 600,
            "packets-received": 600,
            "packets-lost": 0,
            "packets-duplicated": 0,
            "packets-reordered": 0,
            "histogram-ttl": {"252": 600},
            "histogram-latency": {
                "2.72": 4, "2.80": 2, "2.81": 1, "88.21": 1, "2.74": 3, "2.77": 7, "2.53": 11,
                "2.52": 3, "2.51": 4, "2.57": 54, "2.56": 30, "2.55": 30, "2.54": 25, "2.71": 12,
                "2.70": 8, "2.59": 43, "2.58": 52, "2.75": 9, "32.87": 1, "27.91": 1, "2.76": 10,
                "2.79": 4, "2.78": 2, "51.17": 1, "2.68": 6, "2.69": 9, "2.66": 18, "2.67": 17,
                "2.64": 36, "2.65": 27, "2.62": 37, "2.63": 39, "2.60": 50, "2.61": 38, "2.73": 5,
            },
        },
    }
)  # fmt: skip

PS5_THROUGHPUT_HIT = json.dumps(
    {
        "_index": "pscheduler_throughput-2026.11.20",
        "_id": "m1",
        "_source": {
            "@timestamp": "2026-11-20T15:00:03.120Z",
            "test": {
                "type": "throughput",
                "spec": {
                    "source": "psonar-bw.cern.ch",
                    "dest": "perfsonar-bw.grid.surfsara.nl",
                    "duration": 20.0,
                },
            },
            "pscheduler": {
                "start_time": "2026-11-20T15:00:00Z",
                "end_time": "2026-11-20T15:00:21Z",
                "tool": "iperf3",
                "task_id": "6e0f",
                "run_id": "77aa",
            },
            "meta": {
                "source": {"ip": "188.184.1.10", "hostname": "psonar-bw.cern.ch"},
                "destination": {"ip": "145.100.1.20", "hostname": "perfsonar-bw.grid.surfsara.nl"},
                "ip_version": 4,
            },
            "result": {"succeeded": True, "throughput": 8.9e9, "retransmits": 412, "mss": 8948},
        },
    }
)

PS5_RAW_THROUGHPUT = json.dumps(
    {
        "test": {
            "type": "throughput",
            "spec": {"source": "a.example.org", "dest": "b.example.org"},
        },
        "tool": {"name": "iperf3"},
        "run": {"start-time": "2026-11-20T16:00:00-05:00"},
        "result": {
            "succeeded": True,
            "summary": {"summary": {"throughput-bits": 940000000.0, "retransmits": 0}},
        },
    }
)
PS5_TRACE = json.dumps(
    {
        "test": {"type": "trace", "spec": {"source": "a.example.org", "dest": "b.example.org"}},
        "tool": {"name": "traceroute"},
        "run": {"start-time": "2026-11-20T17:00:00Z"},
        "result": {"succeeded": True, "paths": [[{"ip": "10.0.0.1", "rtt": "PT0.0005S"}]]},
    }
)
PS5_FAILED = json.dumps(
    {
        "test": {"type": "latency", "spec": {"source": "a.example.org", "dest": "b.example.org"}},
        "run": {"start-time": "2026-11-20T18:00:00Z"},
        "result": {"succeeded": False, "error": "owping: connection refused"},
    }
)
PS5_RTT = json.dumps(
    {
        "test": {"type": "rtt", "spec": {"dest": "b.example.org"}},
        "run": {"start-time": "2026-11-20T18:00:00Z"},
        "result": {"succeeded": True},
    }
)


def test_ps5_documents(tmp_path):
    f = tmp_path / "ps5.jsonl"
    f.write_text(
        "\n".join([PS5_LATENCY, PS5_THROUGHPUT_HIT, PS5_RAW_THROUGHPUT, PS5_TRACE, PS5_FAILED])
        + "\n"
        + PS5_RTT
        + "\n"
    )
    recs, rej = split(read_ps5(f, src_site="CERN-PROD"), "grid.network")
    assert len(recs) == 4 and len(rej) == 2
    lat, thr, raw_thr, trace = recs
    assert (lat["test"], lat["tool"], lat["ts"]) == ("latency", "powstream", "2026-11-20T14:00:00Z")
    assert (lat["src_host"], lat["dst_host"]) == (
        "psonar-owd.cern.ch",
        "perfsonar-lt.grid.surfsara.nl",
    )
    assert lat["delay_median_ms"] == 2.6 and lat["delay_min_ms"] == 2.51
    assert lat["packet_loss"] == 0.0 and lat["max_clock_error_ms"] == 0.27
    assert lat["src_site"] == "CERN-PROD" and lat["dst_site"] is None
    assert lat["raw"] == PS5_LATENCY
    assert (thr["test"], thr["ts"], thr["throughput_bps"], thr["retransmits"]) == (
        "throughput",
        "2026-11-20T15:00:00Z",
        8.9e9,
        412,
    )
    assert thr["dst_ip"] == "145.100.1.20" and thr["tool"] == "iperf3"
    assert raw_thr["ts"] == "2026-11-20T21:00:00Z" and raw_thr["throughput_bps"] == 940000000.0
    assert raw_thr["retransmits"] == 0
    assert trace["test"] == "trace" and trace["tool"] == "traceroute"
    assert rej[0].location == "line 5" and "owping: connection refused" in rej[0].reason
    assert rej[1].location == "line 6" and "'rtt'" in rej[1].reason


def test_ps5_search_response_and_cut(tmp_path):
    response = {
        "took": 3,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {
            "total": {"value": 2, "relation": "eq"},
            "max_score": 1.0,
            "hits": [json.loads(PS5_THROUGHPUT_HIT), json.loads(PS5_THROUGHPUT_HIT)],
        },
    }
    f = tmp_path / "resp.json"
    f.write_text(json.dumps(response, indent=2))
    recs, rej = split(read_ps5(f), "grid.network")
    assert len(recs) == 2 and not rej
    assert recs[1]["throughput_bps"] == 8.9e9
    assert json.loads(recs[1]["raw"])["_id"] == "m1"
    text = f.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: int(len(text) * 0.75)])
    recs, rej = split(read_ps5(cut), "grid.network")
    assert len(recs) == 1 and len(rej) == 1
    assert rej[0].location.startswith("hit 2 (line ") and rej[0].reason.startswith("truncated")


# --------------------------------------------------------------------------------------------
# OSG network datastore (ps_* indices of sand-ci/ps-ingest)
# --------------------------------------------------------------------------------------------

OSG_DOCS = [
    {
        "_index": "ps_owd-000123",
        "_id": "a1",
        "_source": {
            "MA": "192.41.230.59",
            "src": "192.41.230.59",
            "dest": "131.225.205.23",
            "src_host": "psum01.aglt2.org",
            "dest_host": "psonar3.fnal.gov",
            "src_site": "AGLT2",
            "dest_site": "USCMS-FNAL-WC1",
            "src_VO": "ATLAS",
            "dest_VO": "CMS",
            "src_production": True,
            "dest_production": True,
            "ipv6": False,
            "timestamp": 1763640000000,
            "delay_mean": 12.7731,
            "delay_median": 12.7,
            "delay_sd": 0.4182,
        },
    },
    {
        "src": "192.41.230.59",
        "dest": "131.225.205.23",
        "src_host": "psum01.aglt2.org",
        "dest_host": "psonar3.fnal.gov",
        "src_site": "AGLT2",
        "dest_site": "USCMS-FNAL-WC1",
        "timestamp": 1763640060000,
        "packet_loss": 0.0016667,
    },
    {
        "_index": "ps_throughput-000045",
        "_source": {
            "src": "192.41.230.60",
            "dest": "131.225.205.24",
            "src_host": "psum02.aglt2.org",
            "dest_host": "psonar4.fnal.gov",
            "timestamp": 1763643600000,
            "throughput": 4812000000,
        },
    },
    {
        "_index": "ps_retransmits-000045",
        "_source": {
            "src": "192.41.230.60",
            "dest": "131.225.205.24",
            "timestamp": 1763643600000,
            "retransmits": 57.0,
        },
    },
    {
        "_index": "ps_trace-000210",
        "_source": {
            "src_host": "psum01.aglt2.org",
            "dest_host": "psonar3.fnal.gov",
            "timestamp": 1763640000000,
            "route-sha1": "9f1c",
            "hops": ["192.41.230.1", "198.71.45.2", "131.225.205.23"],
            "ttls": [1, 2, 3],
            "rtts": [0.4, 8.1, 12.9],
        },
    },
    {
        "srcSite": "AGLT2",
        "destSite": "MWT2",
        "src_host": "psum01.aglt2.org",
        "dest_host": "psmsu02.aglt2.org",
        "timestamp": 1763640120000,
        "packet_loss": 1.5,
    },
    {"src_host": "x", "dest_host": "y", "timestamp": 1763640000000, "utilization": 0.3},
]


def test_osg_netds(tmp_path):
    f = tmp_path / "osg.jsonl"
    f.write_text("\n".join(json.dumps(d) for d in OSG_DOCS) + "\n")
    recs, rej = split(read_osg_netds(f, dst_site="MWT2"), "grid.network")
    assert len(recs) == 5 and len(rej) == 2
    owd, loss, thr, retr, trace = recs
    assert (owd["test"], owd["ts"], owd["delay_median_ms"], owd["delay_sd_ms"]) == (
        "latency",
        "2025-11-20T12:00:00Z",
        12.7,
        0.4182,
    )
    assert (owd["src_site"], owd["dst_site"]) == ("AGLT2", "USCMS-FNAL-WC1")  # document wins
    assert owd["delay_min_ms"] is None and owd["tool"] is None and owd["src_ip"] == "192.41.230.59"
    assert loss["packet_loss"] == 0.0016667 and loss["ts"] == "2025-11-20T12:01:00Z"
    assert thr["throughput_bps"] == 4812000000 and thr["dst_site"] == "MWT2"  # from dst_site=
    assert thr["src_site"] is None
    assert retr["retransmits"] == 57 and retr["src_host"] == "192.41.230.60"  # address fallback
    assert (
        trace["test"] == "trace" and json.loads(trace["raw"])["_source"]["hops"][1] == "198.71.45.2"
    )
    assert rej[0].location == "line 6" and "packet_loss 1.5 outside [0, 1]" in rej[0].reason
    assert rej[1].location == "line 7" and "not a ps_owd" in rej[1].reason
    # the same documents as a JSON array, cut in half
    arr = tmp_path / "osg.json"
    text = json.dumps(OSG_DOCS, indent=1)
    arr.write_text(text[: len(text) // 2])
    recs, rej = split(read_osg_netds(arr), "grid.network")
    assert len(rej) == 1 and rej[0].location.startswith("record ")
    assert rej[0].reason.startswith("truncated") and len(recs) >= 1


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------


def test_registry():
    assert set(FORMATS) == {
        "vmstat",
        "iostat",
        "iostat-json",
        "sadf-json",
        "esmond",
        "ps5",
        "osg-netds",
    }
    assert {t for t, _ in FORMATS.values()} == {"grid.nodes", "grid.network"}
    assert FORMATS["vmstat"] == ("grid.nodes", read_vmstat)
    assert FORMATS["esmond"] == ("grid.network", read_esmond)
    assert FORMATS["osg-netds"][1] is read_osg_netds and FORMATS["ps5"][1] is read_ps5
    assert FORMATS["iostat-json"][1] is read_iostat_json and FORMATS["sadf-json"][1] is read_sadf
