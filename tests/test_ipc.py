"""gold.ipc_by_microarchitecture (gridlake.gold.ipc): instructions per cycle by microarchitecture
and job type, from whole-host perf records and the jobs that ran on the hosts.

Known answers: a host worked by hand (job types sharing it, a sample across an hour boundary, a
VM without counters, a sample with no job), and the simulated grid's planted IPC (seed 003's
table for Haswell and Ivy Bridge), which must come back within 5%.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import functions as F

from gridlake.gold import ipc
from gridlake.spark import rows_frame

pytestmark = pytest.mark.slow

CLOCK = 2.5e9


def _t(hhmm: str) -> datetime:
    return datetime.strptime(f"2026-10-20 {hhmm}", "%Y-%m-%d %H:%M")


def _job(job_id, host, job_type, start, end, cpu_seconds, arch="Haswell"):
    wall = (_t(end) - _t(start)).total_seconds()
    return (job_id, host, job_type, _t(start), _t(end), float(wall), float(cpu_seconds), arch)


JOB_SCHEMA = (
    "job_id string, host string, job_type string, start_time timestamp, end_time timestamp, "
    "wall_seconds double, cpu_seconds double, microarchitecture string"
)
SAMPLE_SCHEMA = (
    "host string, ts timestamp, interval_seconds double, kind string, instructions double, "
    "cycles double, counters_available string"
)
IPC = {"x": 1.5, "y": 0.9}


def _perf(host, ts, shares: dict[str, float], core_seconds: float, status="yes"):
    """A perf record whose instructions are exactly the planted IPCs at the given CPU shares."""
    cycles = core_seconds * CLOCK
    if status != "yes":
        return (host, _t(ts), 600.0, "perf", None, None, status)
    instructions = sum(cycles * share * IPC[t] for t, share in shares.items())
    return (host, _t(ts), 600.0, "perf", instructions, cycles, "yes")


def test_a_host_worked_by_hand(spark):
    jobs = rows_frame(
        spark,
        [
            _job("A", "h1", "x", "10:00", "10:30", 1800),  # 1 core busy
            _job("B", "h1", "y", "10:20", "11:10", 6000),  # 2 cores busy, across the hour
            _job("C", "h1", "x", "11:00", "11:30", 1800),  # starts in the next hour
            _job("D", "h1", None, "10:00", "12:00", 7200),  # no job type: not attributed
            _job("V", "vm1", "x", "10:00", "11:00", 3600, arch="Ivy Bridge"),
        ],
        JOB_SCHEMA,
    )
    # CPU core-seconds in each 600 s interval (ending at ts), by job type, worked out by hand:
    #   10:10  A 600                -> x 1
    #   10:20  A 600 (B not started) -> x 1
    #   10:30  A 600, B 1200        -> x 1/3, y 2/3
    #   10:40  B 1200               -> y 1
    #   11:05  B 1200, C 300        -> x 0.2, y 0.8 (10:55-11:05: B must count once, not twice)
    samples = rows_frame(
        spark,
        [
            _perf("h1", "10:10", {"x": 1.0}, 600),
            _perf("h1", "10:20", {"x": 1.0}, 600),
            _perf("h1", "10:30", {"x": 1 / 3, "y": 2 / 3}, 1800),
            _perf("h1", "10:40", {"y": 1.0}, 1200),
            _perf("h1", "11:05", {"x": 0.2, "y": 0.8}, 1500),
            ("h1", _t("13:00"), 600.0, "perf", 5e11, 4e11, "yes"),  # no job ran: not in the fit
            ("h1", _t("10:10"), 600.0, "vmstat", None, None, None),
            _perf("vm1", "10:30", {"x": 1.0}, 600, status="not_supported"),
        ],
        SAMPLE_SCHEMA,
    )
    shares = ipc.sample_shares(samples, jobs).where("host = 'h1'")
    got = {(r.ts.strftime("%H:%M"), r.job_type): round(r.share, 9) for r in shares.collect()}
    assert got == {
        ("10:10", "x"): 1.0,
        ("10:20", "x"): 1.0,
        ("10:30", "x"): round(1 / 3, 9),
        ("10:30", "y"): round(2 / 3, 9),
        ("10:40", "y"): 1.0,
        ("11:05", "x"): 0.2,
        ("11:05", "y"): 0.8,
    }
    rows = ipc.compute(samples, jobs, min_samples=1)["gold.ipc_by_microarchitecture"].collect()
    by_type = {(r.microarchitecture, r.job_type): r for r in rows}
    assert set(by_type) == {("Haswell", "x"), ("Haswell", "y")}  # the VM gives nothing
    x, y = by_type["Haswell", "x"], by_type["Haswell", "y"]
    assert x.ipc == pytest.approx(1.5, rel=1e-9) and y.ipc == pytest.approx(0.9, rel=1e-9)
    assert (x.samples, y.samples, x.hosts, x.fit_samples) == (4, 3, 1, 5)
    # an exact fit: the interval closes on the value
    assert x.ipc_low == pytest.approx(1.5, abs=1e-6) and x.ipc_high == pytest.approx(1.5, abs=1e-6)
    assert x.cpu_core_hours == pytest.approx((600 + 600 + 600 + 300) / 3600)
    assert y.cpu_core_hours == pytest.approx((1200 + 1200 + 1200) / 3600)

    # min_samples: y ran in 3 samples only
    rows = ipc.compute(samples, jobs, min_samples=4)["gold.ipc_by_microarchitecture"].collect()
    assert [(r.job_type, round(r.ipc, 9)) for r in rows] == [("x", 1.5)]


def test_job_types_that_always_ran_together_are_not_identified(spark):
    jobs = rows_frame(
        spark,
        [
            _job("A", "h1", "x", "10:00", "11:00", 3600),
            _job("B", "h1", "y", "10:00", "11:00", 3600),
        ],
        JOB_SCHEMA,
    )
    samples = rows_frame(
        spark,
        [_perf("h1", f"10:{m}0", {"x": 0.5, "y": 0.5}, 1200) for m in range(1, 6)],
        SAMPLE_SCHEMA,
    )
    assert ipc.compute(samples, jobs, min_samples=1)["gold.ipc_by_microarchitecture"].count() == 0


@pytest.fixture(scope="module")
def sim_ipc(spark, sim_grid, sim_jobs):
    from gridlake.silver.files import silver_nodes_from_jsonl

    folder, truth = sim_grid
    samples, _ = silver_nodes_from_jsonl(spark, str(folder / "nodes.jsonl"))
    rows = ipc.compute(samples, sim_jobs)["gold.ipc_by_microarchitecture"].collect()
    counted = samples.where(
        (F.col("kind") == "perf") & (F.col("counters_available") == "yes") & (F.col("cycles") > 0)
    ).count()
    vm_records = samples.where(
        (F.col("kind") == "perf") & (F.col("counters_available") == "not_supported")
    ).count()
    return rows, truth, counted, vm_records


def test_planted_ipc_of_the_simulated_grid_is_recovered_within_5_percent(sim_ipc):
    rows, truth, counted, vm_records = sim_ipc
    planted = truth["ipc"]
    found = {(r.microarchitecture, r.job_type): r for r in rows}
    # every job type on the two microarchitectures of seed 003's table
    for arch in ("Haswell", "Ivy Bridge"):
        assert {jt for a, jt in found if a == arch} == set(planted[arch]), arch
    for (arch, jt), r in found.items():
        assert r.ipc == pytest.approx(planted[arch][jt], rel=0.05), (arch, jt, r.ipc)
        assert r.samples >= ipc.MIN_SAMPLES and r.ipc_low <= r.ipc <= r.ipc_high
    covered = sum(r.ipc_low <= planted[a][jt] <= r.ipc_high for (a, jt), r in found.items())
    assert covered >= 0.8 * len(found), (covered, len(found))
    # seed 003's finding: Geant4 simulation gains ~55% on Haswell, event generation nothing
    simul = found["Haswell", "simul"].ipc / found["Ivy Bridge", "simul"].ipc
    evgen = found["Haswell", "evgen"].ipc / found["Ivy Bridge", "evgen"].ipc
    assert simul == pytest.approx(1.43 / 0.92, rel=0.05) and evgen == pytest.approx(1.0, abs=0.05)
    # the VM hosts' records said not_supported and count in no fit
    assert vm_records > 0
    fit = {r.microarchitecture: r.fit_samples for r in rows}
    assert 0.5 * counted < sum(fit.values()) <= counted
