"""Real samples from ../shared/realdata through publish --format, Kafka, bronze and silver."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from gridlake.catalog import QUARANTINE_ACCOUNTING_SUMMARIES, SILVER_ACCOUNTING_SUMMARIES

from .conftest import REALDATA, gridlake_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.adds_records]

APEL = REALDATA / "osg-gracc-apel-summaries"


@pytest.fixture(scope="module")
def summaries(spark, kafka):
    if not APEL.is_dir():
        pytest.skip(f"real samples not found at {APEL}")
    from gridlake.bronze.ingest import ingest
    from gridlake.silver.refine import refine

    files = sorted(str(p) for p in APEL.glob("*.apel"))
    out = gridlake_cli("publish", "--quiet", "--format", "apel-summary", *files)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "grid.accounting_summaries: 4158 published, 0 dead-lettered" in out.stdout
    ingest(spark, ("accounting_summaries",))
    refine(spark, "accounting_summaries")
    return spark.read.format("delta").load(SILVER_ACCOUNTING_SUMMARIES.path())


def test_every_real_summary_reaches_silver_once(summaries, spark) -> None:
    assert summaries.count() == 4158
    assert summaries.select("summary_key").distinct().count() == 4158
    q = spark.read.format("delta").load(QUARANTINE_ACCOUNTING_SUMMARIES.path())
    assert q.count() == 0


def test_a_known_record_keeps_its_figures(summaries) -> None:
    rows = (
        summaries.filter(
            (F.col("site") == "AGLT2")
            & (F.col("vo") == "atlas")
            & (F.col("year") == 2015)
            & (F.col("month") == 1)
            & F.col("global_user_name").contains("ATLAS Data Management")
        )
        .select("wall_duration_seconds", "cpu_duration_seconds", "number_of_jobs")
        .collect()
    )
    assert [(r.wall_duration_seconds, r.cpu_duration_seconds, r.number_of_jobs) for r in rows] == [
        (41280, 2574, 1780)
    ]


def test_data_management_robot_uses_far_less_cpu_than_everyone(summaries) -> None:
    robot = F.col("global_user_name").contains("Robot: ATLAS Data Management")
    bnl = (
        summaries.filter(robot & (F.col("site") == "BNL-ATLAS"))
        .filter((F.col("year") == 2015) & (F.col("month") == 1))
        .select("cpu_efficiency")
        .collect()
    )
    # the record says WallDuration 227232, CpuDuration 9, Processors 1: 0.004%
    assert [r.cpu_efficiency for r in bnl] == [pytest.approx(9 / 227232)]

    def eff(df):
        return df.agg(F.sum("cpu_duration_seconds") / F.sum("core_wall_seconds")).first()[0]

    assert eff(summaries.filter(robot)) < 0.5 * eff(summaries.filter(~robot))


def test_publish_htcondor_with_millisecond_dates_lists_the_bad_ads_and_delivers_the_rest(
    kafka, tmp_path
) -> None:
    """`gridlake publish --format htcondor` on a file whose first ad has epoch milliseconds: exit
    status 1, the bad ad listed with file, location and reason, dead-lettered, and the good ad
    delivered to grid.jobs (it used to stop with 'year 49072 is out of range' and exit 2)."""
    from .test_adapters_jobs import _complete_ad_file, _millisecond_dates

    if not (REALDATA / "htcondor-classads-fnal-fifebatch").is_dir():
        pytest.skip("real HTCondor ads not found")
    path = _millisecond_dates(_complete_ad_file(tmp_path), "CompletionDate")
    out = gridlake_cli("publish", "--quiet", "--format", "htcondor", "--site", "FNAL", str(path))
    assert out.returncode == 1, (out.stdout, out.stderr[-2000:])
    assert "grid.jobs: 1 published, 1 dead-lettered" in out.stdout, out.stdout
    assert "0 delivery errors" in out.stdout
    listed = [ln for ln in out.stderr.splitlines() if "ad 1 (line 1)" in ln]
    assert listed and str(path) in listed[0], out.stderr[-2000:]
    assert "end time 1486408342000 is not a time in epoch seconds" in listed[0]
