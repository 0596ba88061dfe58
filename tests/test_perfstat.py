"""The perf stat reader (gridlake.sources.perfstat) on the real reports of
shared/realdata/perf-stat-samples (107 runs on three real machines, two perf versions, a locale
grouping digits by ten thousands, counters not supported or not counted) and on this machine's own
``perf stat -x,`` output (a VM: no hardware counters)."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import datetime
from itertools import pairwise
from pathlib import Path

import pytest

from gridlake.sources.perfstat import (
    NOT_COUNTED,
    NOT_SUPPORTED,
    event_kind,
    ipc_fields,
    parse,
    parse_count,
    parse_intervals,
)

from .conftest import REALDATA

SAMPLES = REALDATA / "perf-stat-samples"
REPORTS = sorted(p for p in SAMPLES.rglob("*.txt") if p.name != "SOURCE.txt")


def _independent_ipc(text: str) -> tuple[float, float] | None:
    """(instructions, cycles) read with a plain split, separators stripped by hand."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in ("instructions", "cycles") and parts[0][0].isdigit():
            found[parts[1]] = int(parts[0].replace(",", ""))
    if len(found) < 2:
        return None
    return found["instructions"], found["cycles"]


def test_every_real_report_parses_and_its_ipc_is_the_one_perf_printed():
    assert len(REPORTS) == 107
    checked = 0
    for path in REPORTS:
        text = path.read_text()
        stat = parse(text)
        assert stat.counters, path
        assert stat.elapsed_s is not None and stat.elapsed_s > 0, path
        printed = re.search(r"#\s+([\d.]+)\s+insns? per cycle", text)
        counts = _independent_ipc(text)
        assert printed and counts, path  # every sample counted both
        assert stat.printed_ipc == float(printed.group(1)), path
        assert stat.ipc == pytest.approx(counts[0] / counts[1], rel=1e-12), path
        # perf rounds to two decimals
        assert abs(stat.ipc - stat.printed_ipc) <= 0.005 + 1e-9, (path, stat.ipc)
        checked += 1
    assert checked == 107


def test_digits_grouped_by_ten_thousands_and_repeated_runs():
    stat = parse((SAMPLES / "lab0-c-simonlee0316" / "test-sort-1000000_report.txt").read_text())
    assert stat.counters["instructions"].value == 4_812_612_694
    assert stat.counters["cycles"].value == 7_045_827_622
    assert stat.counters["instructions"].variation_pct == 0.06
    assert stat.runs == 5
    assert (stat.elapsed_s, stat.elapsed_variation_s) == (1.518, 0.0248)
    assert stat.started == datetime(2024, 3, 13, 6, 58, 37)
    assert stat.target == "./qtest -f ./perf_test/test-sort-1000000.cmd"
    assert stat.ipc == pytest.approx(4_812_612_694 / 7_045_827_622)
    assert stat.printed_ipc == 0.68


def test_not_supported_and_not_counted_are_missing_never_zero():
    stat = parse((SAMPLES / "experiments-grsm/mat_mul/omni/perf/n256/base_stats.txt").read_text())
    frontend = stat.counters["stalled-cycles-frontend"]
    assert (frontend.value, frontend.status) == (None, NOT_SUPPORTED)
    llc = stat.counters["LLC-loads"]
    assert (llc.value, llc.status, llc.share_pct) == (None, NOT_COUNTED, 0.0)
    clock = stat.counters["task-clock"]
    assert (clock.value, clock.unit) == (0.440784, "msec")
    assert stat.counters["cycles"].value == 519_317
    assert stat.counters_available == "yes"  # IPC needs only instructions and cycles


def test_bare_digits_of_the_arm_server():
    path = SAMPLES / "experiments-grsm/mat_mul/packet2a/perf/n256/base_stats.txt"
    stat = parse(path.read_text())
    assert stat.counters["cycles"].value == 1_144_081
    assert stat.counters["instructions"].value == 353_812
    assert stat.counters["LLC-loads"].status == NOT_SUPPORTED
    assert round(stat.ipc, 2) == stat.printed_ipc == 0.31


def test_csv_of_a_machine_without_hardware_counters_says_so():
    # what `perf stat -x, -a -e instructions,cycles sleep 0.5` printed on this project's VM
    stat = parse("<not supported>,,instructions,0,100.00,,\n<not supported>,,cycles,0,100.00,,\n")
    assert stat.ipc is None
    assert stat.counters_available == NOT_SUPPORTED
    fields = ipc_fields(stat, 60.0)
    assert fields == {"instructions": None, "cycles": None, "ipc": None,
                      "counters_available": NOT_SUPPORTED, "interval_seconds": 60.0}  # fmt: skip


def test_csv_counted_hybrid_pmus_are_summed_and_a_missing_event_is_named():
    text = (
        "3000000,,cpu_core/instructions/,1000,100.00,1.50,insn per cycle\n"
        "1000000,,cpu_atom/instructions/,1000,100.00,0.50,insn per cycle\n"
        "2000000,,cpu_core/cycles/,1000,100.00,,\n"
        "2000000,,cpu_atom/cycles/,1000,100.00,,\n"
    )
    stat = parse(text)
    assert stat.ipc == 1.0  # (3 + 1) / (2 + 2) million, not the mean of 1.5 and 0.5
    only_cycles = parse("2000000,,cycles:u,1000,100.00,,\n")
    assert only_cycles.ipc is None and only_cycles.counters_available == "not_requested"
    half = parse("<not counted>,,instructions,0,0.00,,\n2000000,,cycles,1000,100.00,,\n")
    assert half.ipc is None and half.counters_available == NOT_COUNTED


def test_event_kinds_and_counts():
    assert event_kind("cpu_core/instructions/") == "instructions"
    assert event_kind("cycles:u") == "cycles"
    assert event_kind("instructions") == "instructions"
    assert parse_count("48,1261,2694") == 4_812_612_694
    assert parse_count("1\u202f144\u202f081") == 1_144_081
    assert parse_count("0.440784") == 0.440784


def test_anything_else_is_refused_with_what_was_expected():
    with pytest.raises(ValueError, match="not perf stat"):
        parse("procs -----------memory---------- ---swap--\n r  b   swpd   free\n")
    with pytest.raises(ValueError, match="no counter line"):
        parse(" Performance counter stats for 'true':\n\n   0.001 seconds time elapsed\n")


@pytest.mark.skipif(shutil.which("perf") is None, reason="no perf on this machine")
def test_this_machines_perf_is_read_whatever_it_supports(tmp_path: Path):
    """perf itself, here: counted where the kernel exposes counters, else said so."""
    done = subprocess.run(
        ["perf", "stat", "-x,", "-e", "instructions,cycles", "true"],
        capture_output=True, text=True, timeout=60, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"perf stat refused here: {done.stderr[-300:]}")
    stat = parse(done.stderr)
    assert set(stat.counters) == {"instructions", "cycles"} or all(
        event_kind(n) in ("instructions", "cycles") for n in stat.counters
    )
    if stat.counters_available == "yes":
        assert stat.ipc is not None and 0 < stat.ipc < 10
    else:
        assert stat.ipc is None and stat.counters_available in (NOT_SUPPORTED, NOT_COUNTED)


def test_interval_output_is_read_per_interval():
    """perf stat -I 1000 -x, as the agent runs it: a time stamp before each CSV line."""
    text = (
        "     1.001170014,3000000,,cpu_core/instructions/,1000,100.00,1.50,insn per cycle\n"
        "     1.001170014,2000000,,cpu_core/cycles/,1000,100.00,,\n"
        "     2.002517636,<not counted>,,cpu_core/instructions/,0,0.00,,\n"
        "     2.002517636,2100000,,cpu_core/cycles/,1000,100.00,,\n"
        "# a comment line\n"
    )
    reports = parse_intervals(text)
    assert [at for at, _ in reports] == [1.001170014, 2.002517636]
    first, second = reports[0][1], reports[1][1]
    assert (first.ipc, first.counters_available) == (1.5, "yes")
    assert (second.ipc, second.counters_available) == (None, NOT_COUNTED)
    with pytest.raises(ValueError, match="perf stat -I"):
        parse_intervals("1.0 is not a perf line\n")


@pytest.mark.skipif(shutil.which("perf") is None, reason="no perf on this machine")
def test_this_machines_perf_intervals_are_read():
    done = subprocess.run(
        ["perf", "stat", "-I", "200", "-x,", "-a", "-e", "instructions,cycles", "sleep", "0.5"],
        capture_output=True, text=True, timeout=60, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"perf stat refused here: {done.stderr[-300:]}")
    reports = parse_intervals(done.stderr)
    assert len(reports) >= 2
    assert all(b > a for (a, _), (b, _) in pairwise(reports))
    for _, stat in reports:
        assert {event_kind(n) for n in stat.counters} == {"instructions", "cycles"}
        if stat.counters_available == "yes":
            assert stat.ipc is not None and 0 < stat.ipc < 10
        else:
            assert stat.ipc is None and stat.counters_available in (NOT_SUPPORTED, NOT_COUNTED)
