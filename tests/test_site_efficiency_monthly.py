"""gold.site_efficiency_monthly: hand-worked small frames, and the real OSG APEL summaries."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from gridlake.gold.site_efficiency_monthly import GOLD_SITE_EFFICIENCY_MONTHLY, compute
from gridlake.spark import rows_frame

from .conftest import REALDATA

SUMMARY_DDL = (
    "year int, month int, site string, vo string, global_user_name string, "
    "core_wall_seconds double, cpu_duration_seconds bigint, number_of_jobs bigint, "
    "normalised_wall_duration bigint"
)
JOBS_DDL = (
    "end_time timestamp, site string, vo string, cores_wall_seconds double, cpu_seconds double"
)
ROBOT = "/DC=ch/DC=cern/OU=Users/CN=ddmadmin/CN=Robot: ATLAS Data Management"


def _monthly(spark, summaries, jobs) -> dict[tuple, object]:
    frames = compute(rows_frame(spark, summaries, SUMMARY_DDL),
                     rows_frame(spark, jobs, JOBS_DDL))  # fmt: skip
    (df,) = frames.values()
    return {(r.month, r.site, r.vo): r for r in df.collect()}


def test_summaries_beside_jobs_with_robots_apart(spark) -> None:
    summaries = [
        # site A, Jan 2026: a user (8 cores, 90% efficient) and the transfer robot (1% CPU)
        (2026, 1, "A", "atlas", "/CN=Jane", 36_000.0 * 8, 259_200, 10, 1_000_000),
        (2026, 1, "A", "atlas", ROBOT, 72_000.0, 720, 50, 20_000),
        (2026, 1, "B", "cms", "/CN=Joe", 7_200.0, 3_600, 2, 0),  # no per-job records
    ]
    jobs = [  # site A in Jan: 20 core-hours at 75%; site C in Feb only in the per-job path
        (datetime(2026, 1, 31, 23, 0), "A", "atlas", 36_000.0, 27_000.0),
        (datetime(2026, 1, 2, 1, 0), "A", "atlas", 36_000.0, 27_000.0),
        (datetime(2026, 2, 1, 0, 30), "C", "atlas", 3_600.0, 1_800.0),
    ]
    got = _monthly(spark, summaries, jobs)
    assert set(got) == {
        (date(2026, 1, 1), "A", "atlas"),
        (date(2026, 1, 1), "B", "cms"),
        (date(2026, 2, 1), "C", "atlas"),
    }
    a = got[(date(2026, 1, 1), "A", "atlas")]
    assert (a.summary_records, a.summary_jobs) == (2, 60)
    assert a.summary_core_hours == pytest.approx(80 + 20)
    assert a.summary_cpu_hours == pytest.approx(72 + 0.2)
    assert a.summary_cpu_efficiency == pytest.approx(72.2 / 100)
    assert (a.robot_core_hours, a.robot_cpu_hours) == (pytest.approx(20), pytest.approx(0.2))
    assert a.summary_cpu_efficiency_without_robots == pytest.approx(0.9)
    assert a.summary_normalised_wall_hours == pytest.approx(1_020_000 / 3600)
    assert (a.jobs, a.core_hours, a.cpu_efficiency) == (2, pytest.approx(20), pytest.approx(0.75))
    assert a.job_coverage == pytest.approx(0.2)
    b = got[(date(2026, 1, 1), "B", "cms")]
    assert b.jobs is None and b.job_coverage is None and b.robot_core_hours == 0
    c = got[(date(2026, 2, 1), "C", "atlas")]
    assert c.summary_records is None and c.cpu_efficiency == pytest.approx(0.5)


def _records(path) -> list[dict[str, str]]:
    """The APEL summary file as plain key/value blocks (an independent reading for the test)."""
    out = []
    for block in path.read_text().split("%%"):
        d = dict(line.split(": ", 1) for line in block.strip().splitlines() if ": " in line)
        if "Site" in d:
            out.append(d)
    return out


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.adds_records
def test_real_osg_summaries_keep_known_facts(spark, kafka) -> None:
    """AGLT2, January 2016: the ATLAS Data Management robot held 4,989,712 s of wall-clock for
    2,130 s of CPU; the site's ATLAS efficiency is that of everyone else once it is set apart."""
    apel = REALDATA / "osg-gracc-apel-summaries"
    if not apel.is_dir():
        pytest.skip(f"real samples not found at {apel}")
    from gridlake.bronze.ingest import ingest
    from gridlake.catalog import SILVER_ACCOUNTING_SUMMARIES, SILVER_JOBS
    from gridlake.quality import run_checks
    from gridlake.silver.refine import refine

    from .conftest import gridlake_cli

    out = gridlake_cli("publish", "--quiet", "--format", "apel-summary", str(apel / "01_2016.apel"))
    assert out.returncode == 0, out.stderr[-2000:]
    ingest(spark, ("accounting_summaries",))
    refine(spark, "accounting_summaries")
    summaries = spark.read.format("delta").load(SILVER_ACCOUNTING_SUMMARIES.path())
    jobs = SILVER_JOBS.empty(spark)
    (df,) = compute(summaries, jobs).values()
    failed = [r for r in run_checks(GOLD_SITE_EFFICIENCY_MONTHLY, df) if not r.success]
    assert not failed, failed
    (r,) = df.where("site = 'AGLT2' AND vo = 'atlas' AND month = DATE'2016-01-01'").collect()
    assert r.robot_core_hours * 3600 == pytest.approx(4_989_712)
    assert r.robot_cpu_hours * 3600 == pytest.approx(2_130)

    recs = [
        d for d in _records(apel / "01_2016.apel") if (d["Site"], d.get("VO")) == ("AGLT2", "atlas")
    ]
    core = sum(int(d["WallDuration"]) * int(d.get("Processors") or 1) for d in recs)
    cpu = sum(int(d["CpuDuration"]) for d in recs)
    assert r.summary_records == len(recs) == 5
    assert r.summary_jobs == sum(int(d["NumberOfJobs"]) for d in recs)
    assert r.summary_core_hours * 3600 == pytest.approx(core)
    assert r.summary_cpu_efficiency == pytest.approx(cpu / core)
    others = [d for d in recs if "Robot:" not in d["GlobalUserName"]]
    others_eff = sum(int(d["CpuDuration"]) for d in others) / sum(
        int(d["WallDuration"]) * int(d.get("Processors") or 1) for d in others
    )
    assert r.summary_cpu_efficiency_without_robots == pytest.approx(others_eff)
    assert r.robot_cpu_hours / r.robot_core_hours < 0.001  # 0.04%: a slot held, no CPU used
