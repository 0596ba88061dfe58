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


# --------------------------------------------------------------------------------------------
# A real grid's jobs end to end: the LCG/EGEE cluster at LPC Clermont-Ferrand (SWF)
# --------------------------------------------------------------------------------------------

LPC_EGEE = REALDATA / "pwa-lpc-egee-2004-swf" / "LPC-EGEE-2004-1.2-cln.part1_2004-09_2005-01.swf.gz"
LPC_JOBS = 134_667  # job lines in the file (its SOURCE.txt; the header's comment lines aside)


def _lpc_by_week_and_group():  # -> pandas.DataFrame
    """The weekly CPU and core hours per group computed from the raw file with pandas alone:
    SWF fields 2 submit, 3 wait, 4 run, 5 processors (8 requested when 5 is unknown), 6 CPU
    per processor, 11 status, 13 group; times after the header's UnixStartTime (UTC epoch).
    A job is kept when its submit, wait, run and CPU times are known and its status is 0, 1 or
    5 (the other codes are partial records); its week is the Monday of its end (UTC)."""
    import pandas as pd

    start = next(
        int(line.split(":", 1)[1])
        for line in __import__("gzip").open(LPC_EGEE, "rt")
        if line.startswith(";") and "UnixStartTime" in line
    )
    raw = pd.read_csv(LPC_EGEE, sep=r"\s+", comment=";", header=None, dtype="int64")
    assert len(raw) == LPC_JOBS
    f = {i: raw[i - 1] for i in range(1, 19)}
    procs = f[5].where(f[5] > 0, f[8])
    kept = (f[2] >= 0) & (f[3] >= 0) & (f[4] >= 0) & (f[6] >= 0) & f[11].isin([0, 1, 5])
    kept &= procs > 0
    end = pd.to_datetime(start + f[2] + f[3] + f[4], unit="s", utc=True)
    df = pd.DataFrame({
        "week": (end.dt.normalize() - pd.to_timedelta(end.dt.weekday, unit="D")).dt.date,
        "vo": f[13].astype(str).where(f[13] >= 0, "unknown"),
        "cpu": f[6] * procs,
        "core": f[4] * procs,
    })[kept]  # fmt: skip
    out = df.groupby(["week", "vo"]).agg(
        jobs=("cpu", "size"), cpu_hours=("cpu", "sum"), core_hours=("core", "sum")
    )
    out[["cpu_hours", "core_hours"]] /= 3600.0
    return out.reset_index(), int((~kept).sum())


@pytest.fixture(scope="module")
def lpc_egee(spark, kafka):
    if not LPC_EGEE.is_file():
        pytest.skip(f"real trace not found at {LPC_EGEE}")
    from gridlake.bronze.ingest import ingest
    from gridlake.gold.analyze import analyze
    from gridlake.silver.refine import refine

    out = gridlake_cli(
        "publish", "--quiet", "--format", "swf", "--opt", "site=LPC-EGEE", str(LPC_EGEE)
    )
    ingest(spark, ("jobs",))
    refine(spark, "jobs")
    analyze(spark, groups=("site_efficiency",), skip_current=True)
    return out


def test_every_job_of_the_real_grid_trace_is_accounted_for(lpc_egee, spark) -> None:
    """Each of the file's 134,667 jobs is in silver once, or in quarantine with its reason, or
    dead-lettered at publish with its reason; counts reconcile."""
    from gridlake.catalog import QUARANTINE_JOBS, SILVER_JOBS

    assert lpc_egee.returncode == 1, lpc_egee.stderr[-2000:]  # some records could not be mapped
    assert "grid.jobs: 124618 published, 10049 dead-lettered" in lpc_egee.stdout, lpc_egee.stdout
    assert "0 delivery errors" in lpc_egee.stdout
    ours = F.col("job_id").startswith("LPC-EGEE:")
    silver = spark.read.format("delta").load(SILVER_JOBS.path()).where(ours)
    assert silver.count() == silver.select("job_id").distinct().count()
    quarantined = (
        spark.read.format("delta").load(QUARANTINE_JOBS.path())
        .where(F.col("raw").contains('"site":"LPC-EGEE"'))
        .count()
    )  # fmt: skip
    assert silver.count() + quarantined + 10_049 == LPC_JOBS
    _, not_kept = _lpc_by_week_and_group()
    assert not_kept == 10_049  # the independent count of jobs without run or CPU time
    assert quarantined == 0


def test_gold_weekly_cpu_and_wall_per_group_equal_the_raw_files(lpc_egee, spark) -> None:
    """gold.site_efficiency_weekly for the site: jobs, CPU hours and core hours per week and
    group (the VO) equal a computation from the raw file with pandas (floats to 1e-9)."""
    from gridlake.gold.site_efficiency import GOLD_SITE_EFFICIENCY_WEEKLY

    expected, _ = _lpc_by_week_and_group()
    gold = (
        spark.read.format("delta").load(GOLD_SITE_EFFICIENCY_WEEKLY.path())
        .where(F.col("site") == "LPC-EGEE")
        .select("week", "vo", "jobs", "cpu_hours", "core_hours", "cpu_efficiency")
        .collect()
    )  # fmt: skip
    got = {(r.week, r.vo): r for r in gold}
    want = {(r.week, r.vo): r for r in expected.itertuples()}
    assert set(got) == set(want)
    assert len(got) > 50  # ~20 weeks x several groups
    for key, w in want.items():
        g = got[key]
        assert g.jobs == w.jobs, key
        assert g.cpu_hours == pytest.approx(w.cpu_hours, rel=1e-9, abs=1e-12), key
        assert g.core_hours == pytest.approx(w.core_hours, rel=1e-9, abs=1e-12), key
        if w.core_hours > 0:
            assert g.cpu_efficiency == pytest.approx(w.cpu_hours / w.core_hours, rel=1e-9), key
    # the whole trace, as its SOURCE.txt states it over jobs with CPU and wall > 0: 0.894
    cpu = sum(w.cpu_hours for w in want.values())
    core = sum(w.core_hours for w in want.values())
    assert cpu / core == pytest.approx(0.894, abs=0.0015)
