"""Real samples from ../shared/realdata through publish --format, Kafka, bronze and silver."""

from __future__ import annotations

import os

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
# The job lines each trace gives make test (its header and first N jobs: ~5 of the LPC trace's
# 20 weeks); GRIDLAKE_REALDATA_JOBS=all (make test-realdata) takes the whole files.
REALDATA_JOBS = os.environ.get("GRIDLAKE_REALDATA_JOBS", "")
LPC_HEAD = None if REALDATA_JOBS == "all" else int(REALDATA_JOBS or 30_000)


def _lpc_by_week_and_group(path, jobs: int):  # -> (pandas.DataFrame, int)
    """The weekly CPU and core hours per group computed from the raw file with pandas alone:
    SWF fields 2 submit, 3 wait, 4 run, 5 processors (8 requested when 5 is unknown), 6 CPU
    per processor, 11 status, 13 group; times after the header's UnixStartTime (UTC epoch).
    A job is kept when its submit, wait, run and CPU times are known and its status is 0, 1 or
    5 (the other codes are partial records); its week is the Monday of its end (UTC)."""
    import pandas as pd

    start = next(
        int(line.split(":", 1)[1])
        for line in open(path)  # noqa: SIM115
        if line.startswith(";") and "UnixStartTime" in line
    )
    raw = pd.read_csv(path, sep=r"\s+", comment=";", header=None, dtype="int64")
    assert len(raw) == jobs
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
def lpc_egee(spark, kafka, tmp_path_factory):
    if not LPC_EGEE.is_file():
        pytest.skip(f"real trace not found at {LPC_EGEE}")
    from gridlake.bronze.ingest import ingest
    from gridlake.gold.analyze import analyze
    from gridlake.silver.refine import refine

    head, jobs = _swf_head(LPC_EGEE, tmp_path_factory.mktemp("lpc"), LPC_HEAD)
    out = gridlake_cli("publish", "--quiet", "--format", "swf", "--opt", "site=LPC-EGEE", str(head))
    ingest(spark, ("jobs",))
    refine(spark, "jobs")
    analyze(spark, groups=("site_efficiency",), skip_current=True)
    return out, head, jobs


def test_every_job_of_the_real_grid_trace_is_accounted_for(lpc_egee, spark) -> None:
    """Each job of the trace (its first LPC_HEAD in make test, the file's 134,667 in make
    test-realdata) is in silver once, or in quarantine with its reason, or dead-lettered at
    publish with its reason; counts reconcile with pandas on the raw lines."""
    from gridlake.catalog import QUARANTINE_JOBS, SILVER_JOBS

    out, head, jobs = lpc_egee
    expected, not_kept = _lpc_by_week_and_group(head, jobs)
    kept = int(expected["jobs"].sum())
    assert kept + not_kept == jobs and not_kept > 0
    assert out.returncode == 1, out.stderr[-2000:]  # some records could not be mapped
    assert f"grid.jobs: {kept} published, {not_kept} dead-lettered" in out.stdout, out.stdout
    assert "0 delivery errors" in out.stdout
    if LPC_HEAD is None:  # the whole file, as its SOURCE.txt counts it
        assert (jobs, kept, not_kept) == (LPC_JOBS, 124_618, 10_049)
    ours = F.col("job_id").startswith("LPC-EGEE:")
    silver = spark.read.format("delta").load(SILVER_JOBS.path()).where(ours)
    assert silver.count() == silver.select("job_id").distinct().count()
    quarantined = (
        spark.read.format("delta").load(QUARANTINE_JOBS.path())
        .where(F.col("raw").contains('"site":"LPC-EGEE"'))
        .count()
    )  # fmt: skip
    assert silver.count() + quarantined + not_kept == jobs
    assert silver.count() == kept and quarantined == 0


def test_gold_weekly_cpu_and_wall_per_group_equal_the_raw_files(lpc_egee, spark) -> None:
    """gold.site_efficiency_weekly for the site: jobs, CPU hours and core hours per week and
    group (the VO) equal a computation from the raw file with pandas (floats to 1e-9)."""
    from gridlake.gold.site_efficiency import GOLD_SITE_EFFICIENCY_WEEKLY

    _, head, jobs = lpc_egee
    expected, _ = _lpc_by_week_and_group(head, jobs)
    gold = (
        spark.read.format("delta").load(GOLD_SITE_EFFICIENCY_WEEKLY.path())
        .where(F.col("site") == "LPC-EGEE")
        .select("week", "vo", "jobs", "cpu_hours", "core_hours", "cpu_efficiency")
        .collect()
    )  # fmt: skip
    got = {(r.week, r.vo): r for r in gold}
    want = {(r.week, r.vo): r for r in expected.itertuples()}
    assert set(got) == set(want)
    assert len(got) > (50 if LPC_HEAD is None else 10)  # weeks x several groups
    for key, w in want.items():
        g = got[key]
        assert g.jobs == w.jobs, key
        assert g.cpu_hours == pytest.approx(w.cpu_hours, rel=1e-9, abs=1e-12), key
        assert g.core_hours == pytest.approx(w.core_hours, rel=1e-9, abs=1e-12), key
        if w.core_hours > 0:
            assert g.cpu_efficiency == pytest.approx(w.cpu_hours / w.core_hours, rel=1e-9), key
    if LPC_HEAD is not None:
        return
    # the whole trace, as its SOURCE.txt states it over jobs with CPU and wall > 0: 0.894
    cpu = sum(w.cpu_hours for w in want.values())
    core = sum(w.core_hours for w in want.values())
    assert cpu / core == pytest.approx(0.894, abs=0.0015)


# --------------------------------------------------------------------------------------------
# Two HPC logs end to end: multi-core jobs, CPU above wall x cores flagged
# --------------------------------------------------------------------------------------------

HPC_LOGS = {
    "HPC2N": REALDATA / "pwa-hpc2n-2002-swf" / "HPC2N-2002-2.2-cln.swf.gz",
    "SDSC-BLUE": REALDATA / "pwa-sdsc-blue-2000-swf" / "SDSC-BLUE-2000-4.2-cln.swf.gz",
}
# make test takes each log's header and first N jobs; GRIDLAKE_REALDATA_JOBS=all (make
# test-realdata) the whole logs (202,871 and 243,306 jobs).
HPC_HEAD = None if REALDATA_JOBS == "all" else int(REALDATA_JOBS or 4_000)


def _swf_head(path, out_dir, limit: int | None):
    """The log's header lines and its first ``limit`` job lines (all for None), unpacked, as a
    file of the same stem; (path, job lines)."""
    import gzip

    target = out_dir / path.name.removesuffix(".gz")
    jobs = 0
    with gzip.open(path, "rt") as src, target.open("w") as dst:
        for line in src:
            if not line.startswith(";"):
                if limit is not None and jobs >= limit:
                    break
                jobs += 1
            dst.write(line)
    return target, jobs


def _swf_weekly(path):  # -> (pandas.DataFrame, int)
    """Per week and group, from the raw file with pandas alone (as _lpc_by_week_and_group): jobs,
    CPU and core hours, and the jobs whose CPU per processor exceeds 1.05 x their run time (SWF
    field 6 > 1.05 x field 4: silver's is_outlier, CPU above wall x cores)."""
    import pandas as pd

    start = next(
        int(line.split(":", 1)[1])
        for line in open(path)  # noqa: SIM115
        if line.startswith(";") and "UnixStartTime" in line
    )
    raw = pd.read_csv(path, sep=r"\s+", comment=";", header=None, dtype="float64")
    f = {i: raw[i - 1] for i in range(1, 19)}
    procs = f[5].where(f[5] > 0, f[8])
    kept = (f[2] >= 0) & (f[3] >= 0) & (f[4] >= 0) & (f[6] >= 0) & f[11].isin([0, 1, 5])
    kept &= procs > 0
    end = pd.to_datetime((start + f[2] + f[3] + f[4]).astype("int64"), unit="s", utc=True)
    df = pd.DataFrame({
        "week": (end.dt.normalize() - pd.to_timedelta(end.dt.weekday, unit="D")).dt.date,
        "vo": f[13].astype("int64").astype(str).where(f[13] >= 0, "unknown"),
        "cpu": f[6] * procs,
        "core": f[4] * procs,
        "outlier": f[6] * procs > f[4] * procs * 1.05,
        "multicore": procs > 1,
    })[kept]  # fmt: skip
    out = df.groupby(["week", "vo"]).agg(
        jobs=("cpu", "size"), cpu_hours=("cpu", "sum"), core_hours=("core", "sum"),
        outlier_jobs=("outlier", "sum"), multicore_jobs=("multicore", "sum"),
    )  # fmt: skip
    out[["cpu_hours", "core_hours"]] /= 3600.0
    return out.reset_index(), int((~kept).sum())


@pytest.fixture(scope="module")
def hpc_logs(spark, kafka, tmp_path_factory):
    if not all(p.is_file() for p in HPC_LOGS.values()):
        pytest.skip(f"HPC logs not found under {REALDATA}")
    from gridlake.bronze.ingest import ingest
    from gridlake.gold.analyze import analyze
    from gridlake.silver.refine import refine

    out_dir = tmp_path_factory.mktemp("hpc")
    logs = {}
    for site, path in HPC_LOGS.items():
        head, jobs = _swf_head(path, out_dir, HPC_HEAD)
        out = gridlake_cli("publish", "--quiet", "--format", "swf", "--opt", f"site={site}",
                           str(head))  # fmt: skip
        logs[site] = (head, jobs, out)
    ingest(spark, ("jobs",))
    refine(spark, "jobs")
    analyze(spark, groups=("site_efficiency",), skip_current=True)
    return logs


def test_every_job_of_the_hpc_logs_is_accounted_for(hpc_logs, spark) -> None:
    """Each job line is in silver once, or in quarantine, or dead-lettered at publish with its
    reason (the logs' status -1 and unknown run or CPU times); counts reconcile with pandas."""
    from gridlake.catalog import QUARANTINE_JOBS, SILVER_JOBS

    for site, (head, jobs, out) in hpc_logs.items():
        expected, not_kept = _swf_weekly(head)
        assert f"grid.jobs: {jobs - not_kept} published, {not_kept} dead-lettered" in out.stdout, (
            site, out.stdout, out.stderr[-2000:])  # fmt: skip
        assert "0 delivery errors" in out.stdout
        silver = spark.read.format("delta").load(SILVER_JOBS.path())
        silver = silver.where(F.col("job_id").startswith(f"{site}:"))
        quarantined = (
            spark.read.format("delta").load(QUARANTINE_JOBS.path())
            .where(F.col("raw").contains(f'"site":"{site}"'))
            .count()
        )  # fmt: skip
        assert silver.count() == silver.select("job_id").distinct().count()
        assert silver.count() + quarantined + not_kept == jobs, site
        assert quarantined == 0 and silver.count() == int(expected.jobs.sum()), site


def test_hpc_gold_weekly_figures_and_flagged_jobs_equal_the_raw_files(hpc_logs, spark) -> None:
    """gold.site_efficiency_weekly per week and group equals pandas on the raw lines: jobs, CPU
    and core hours (floats to 1e-9) and the jobs flagged for CPU above wall x cores (kept and
    counted, never dropped); the logs' multi-core jobs are there with their cores."""
    from gridlake.catalog import SILVER_JOBS
    from gridlake.gold.site_efficiency import GOLD_SITE_EFFICIENCY_WEEKLY

    gold_all = spark.read.format("delta").load(GOLD_SITE_EFFICIENCY_WEEKLY.path())
    for site, (head, _, _) in hpc_logs.items():
        expected, _ = _swf_weekly(head)
        gold = gold_all.where(F.col("site") == site).collect()
        got = {(r.week, r.vo): r for r in gold}
        want = {(r.week, r.vo): r for r in expected.itertuples()}
        assert set(got) == set(want), site
        for key, w in want.items():
            g = got[key]
            assert (g.jobs, g.outlier_jobs) == (w.jobs, w.outlier_jobs), (site, key)
            assert g.cpu_hours == pytest.approx(w.cpu_hours, rel=1e-9, abs=1e-12), (site, key)
            assert g.core_hours == pytest.approx(w.core_hours, rel=1e-9, abs=1e-12), (site, key)
        multicore = int(expected.multicore_jobs.sum())
        silver = spark.read.format("delta").load(SILVER_JOBS.path())
        silver = silver.where(F.col("job_id").startswith(f"{site}:"))
        assert silver.where(F.col("cores") > 1).count() == multicore > 0, site
        print(f"{site}: {int(expected.jobs.sum())} jobs, {multicore} multi-core, "
              f"{int(expected.outlier_jobs.sum())} with CPU > 1.05 x wall x cores")  # fmt: skip
    # the flag is real: HPC2N's log has jobs above wall x cores (its SOURCE.txt: ~6,700 of all)
    hpc2n, _ = _swf_weekly(hpc_logs["HPC2N"][0])
    assert hpc2n.outlier_jobs.sum() > 0
