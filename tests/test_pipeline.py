"""The pipeline end to end against a real Kafka broker, real Spark and real Delta tables."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from collections import defaultdict
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from gridlake.catalog import (
    BATCH_AUDIT,
    BRONZE,
    GOLD_SITE_EFFICIENCY_WEEKLY,
    QUARANTINE_JOBS,
    SILVER_JOBS,
)
from gridlake.settings import get_settings
from gridlake.spark import rows_frame

from .conftest import gridlake_cli
from .test_validate import GOOD

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _table(spark, table):
    return spark.read.format("delta").load(table.path())


def _expected_gold(jobs: list[dict]) -> dict[tuple[date, str, str], dict[str, float]]:
    """An independent computation of gold.site_efficiency_weekly from the canonical records."""
    acc: dict[tuple[date, str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for j in jobs:
        end = datetime.fromisoformat(j["end_time"].replace("Z", "+00:00"))
        monday = end.date() - timedelta(days=end.weekday())
        a = acc[(monday, j["site"], j["vo"])]
        alloc = j["wall_seconds"] * j["cores"]
        cpu = j["cpu_user_seconds"] + j["cpu_system_seconds"]
        a["jobs"] += 1
        a["core_hours"] += alloc / 3600
        a["cpu_hours"] += cpu / 3600
        a["outlier_jobs"] += cpu > alloc * 1.05
        if j["status"] == "failed":
            a["failed_jobs"] += 1
            a["wasted_core_hours"] += alloc / 3600
        else:
            a["good_cpu_hours"] += cpu / 3600
    return acc


def test_gold_matches_an_independent_computation_of_the_demo_week(spark, gold_demo) -> None:
    week = gold_demo
    expected = _expected_gold(week.jobs)
    sites = {j["site"] for j in week.jobs}
    got = {
        (r.week, r.site, r.vo): r
        for r in _table(spark, GOLD_SITE_EFFICIENCY_WEEKLY)
        .filter(F.col("site").isin(*sites))
        .collect()
    }
    assert set(got) == set(expected)
    for key, e in expected.items():
        g = got[key]
        assert g.jobs == e["jobs"], key
        assert g.failed_jobs == e["failed_jobs"], key
        assert g.outlier_jobs == e["outlier_jobs"], key
        assert g.core_hours == pytest.approx(e["core_hours"], rel=1e-9)
        assert g.cpu_hours == pytest.approx(e["cpu_hours"], rel=1e-9)
        assert g.cpu_efficiency == pytest.approx(e["cpu_hours"] / e["core_hours"], rel=1e-9)
        assert g.good_cpu_over_all_wall == pytest.approx(
            e["good_cpu_hours"] / e["core_hours"], rel=1e-9
        )
        assert g.wasted_core_hours == pytest.approx(e["wasted_core_hours"], rel=1e-9)
    # the planted slow-storage site is visibly less efficient than the others
    slow = week.truth["slow_storage_site"]
    eff = defaultdict(lambda: [0.0, 0.0])
    for (_, site, _), e in expected.items():
        eff[site][0] += e["cpu_hours"]
        eff[site][1] += e["core_hours"]
    assert min(eff, key=lambda s: eff[s][0] / eff[s][1]) == slow


def test_every_refine_batch_reconciles(spark, gold_demo) -> None:
    audit = _table(spark, BATCH_AUDIT).filter("input = 'jobs'").collect()
    assert audit, "refine wrote no audit rows"
    for a in audit:
        assert a.bronze_rows == a.clean_rows + a.duplicate_rows + a.quarantined_rows, a
    assert sum(a.bronze_rows for a in audit) == _table(spark, BRONZE["jobs"]).count()


def test_rerun_and_replay_change_nothing(spark, gold_demo) -> None:
    from gridlake.gold.analyze import analyze
    from gridlake.silver.refine import SPECS, RefineStats, process_batch, refine_jobs

    refine_jobs(spark)  # whatever earlier tests left in bronze
    # The site_efficiency group reads silver.jobs alone and writes the table compared below;
    # the other groups' reruns are covered by the nightly orchestration test (analytics twice).
    analyze(spark, groups=["site_efficiency"])
    silver_before = _table(spark, SILVER_JOBS).count()
    quarantine_before = _table(spark, QUARANTINE_JOBS).count()
    gold_before = sorted(_table(spark, GOLD_SITE_EFFICIENCY_WEEKLY).collect())

    assert refine_jobs(spark).batches == 0  # nothing new in bronze

    # A crash after the writes but before the checkpoint commit replays batch 0: the Delta
    # idempotent-writer options skip the appends, and the MERGE updates nothing.
    stats = RefineStats()
    process_batch(spark, SPECS["jobs"], _table(spark, BRONZE["jobs"]), 0, get_settings(), stats)
    assert stats.audit[0]["inserted_rows"] == 0
    assert stats.audit[0]["updated_rows"] == 0

    analyze(spark, groups=["site_efficiency"])
    assert _table(spark, SILVER_JOBS).count() == silver_before
    assert _table(spark, QUARANTINE_JOBS).count() == quarantine_before
    assert sorted(_table(spark, GOLD_SITE_EFFICIENCY_WEEKLY).collect()) == gold_before


def test_slow_storage_site_jobs_see_iowait_and_busy_disks(spark, gold_demo) -> None:
    """silver.job_node_features of the demo week (its node samples joined to its jobs): the
    planted slow-storage site's jobs see more iowait and busier disks, one row a job."""
    from gridlake.catalog import SILVER_JOB_NODE_FEATURES

    slow = gold_demo.truth["slow_storage_site"]
    feats = spark.read.format("delta").load(SILVER_JOB_NODE_FEATURES.path())
    with_samples = feats.filter(F.col("vmstat_samples") > 0)
    assert with_samples.count() > 20
    by_site = {
        r.is_slow: r
        for r in with_samples.groupBy((F.col("site") == slow).alias("is_slow"))
        .agg(F.avg("wa_mean").alias("wa"), F.avg("disk_util_p95").alias("util"))
        .collect()
    }
    assert by_site[True].wa > 3 * by_site[False].wa
    assert by_site[True].util > 2 * by_site[False].util
    assert feats.count() == feats.select("job_id").distinct().count()


def test_shipped_rule_upgrades_apply_and_operator_versions_win(spark, gold_demo, thrift) -> None:
    """An instance whose rules table predates a shipped rule version gets the new version added;
    a rule the operator re-versioned above the shipped one keeps the operator's row and is the
    one the outliers apply. The rules the efficiency group builds from are checked (not a whole
    analyze of the group: ~85 s of make test's lane under load; the rules' write and fingerprint
    are test_analyze_skips_a_group_whose_inputs_did_not_change's, nightly). The table then goes
    back by Delta RESTORE, as an operator would undo a bad write, and the Thrift Server serves it
    (it refused every read of a restored table until 2026-11-30)."""
    from delta.tables import DeltaTable

    from gridlake.gold import efficiency
    from gridlake.gold.analyze import FINGERPRINT_KEY, _last_fingerprint
    from gridlake.gold.efficiency.outliers import efficiency_outliers
    from gridlake.gold.group import Inputs

    table = efficiency.GOLD_EFFICIENCY_OUTLIER_RULES
    settings = get_settings()
    version = DeltaTable.forPath(spark, table.path()).history(1).first()["version"]
    fingerprint = _last_fingerprint(spark, table, settings)
    old = [r._replace(rule_version=1) if r.rule_id.startswith("task-") else r
           for r in efficiency.DEFAULT_OUTLIER_RULES]  # fmt: skip
    peers = next(r for r in old if r.rule_id == "site-efficiency-peers")
    mine = peers._replace(rule_version=7, direction="both", threshold=0.0, min_jobs=1,
                          min_baseline_points=1, description="operator: all sites")  # fmt: skip
    rows = efficiency.outlier_rules_frame(spark, [*old, mine])
    rows.write.format("delta").mode("overwrite").save(table.path())
    try:
        inputs = Inputs(spark, settings)
        rules = inputs.rules(table, efficiency.outlier_rules_frame)
        got = {(r.rule_id, r.rule_version) for r in rules.collect()}
        assert ("task-efficiency-peers", 1) in got and ("task-efficiency-peers", 2) in got
        assert ("site-efficiency-peers", 7) in got and ("site-efficiency-peers", 1) in got
        assert ("site-efficiency-peers", 2) not in got  # nothing invented
        flagged = efficiency_outliers(inputs.read(efficiency.SILVER_JOBS), rules).where(
            "rule_id = 'site-efficiency-peers'"
        )
        versions = {r.rule_version for r in flagged.select("rule_version").distinct().collect()}
        assert versions == {7}, versions  # threshold 0, both sides: every scored site is listed
    finally:
        key = "spark.databricks.delta.commitInfo.userMetadata"
        spark.conf.set(key, json.dumps({FINGERPRINT_KEY: fingerprint}))
        try:
            DeltaTable.forPath(spark, table.path()).restoreToVersion(version)
        finally:
            spark.conf.unset(key)
    # the table's last fingerprint is again that of the write it holds (current again)
    assert _last_fingerprint(spark, table, settings) == fingerprint
    assert DeltaTable.forPath(spark, table.path()).history(1).first()["operation"] == "RESTORE"
    for user in ("operator", "superset"):
        sql = "SELECT count(*) FROM grid.efficiency_outlier_rules"
        assert _thrift_error(user, sql) == "", user
    shipped = {(r.rule_id, r.rule_version) for r in efficiency.DEFAULT_OUTLIER_RULES}
    assert {(r.rule_id, r.rule_version) for r in _table(spark, table).collect()} == shipped


# nightly: ~270 s of make test's longest lane under load (three analyze runs of a group)
@pytest.mark.nightly
def test_analyze_skips_a_group_whose_inputs_did_not_change(spark, gold_demo) -> None:
    """skip_current (Airflow's runs): a group is recomputed only when its code, an input table's
    version or its rules' content changed since its tables were last written. The input-version
    half on site_efficiency (one short group), the rules half on efficiency (the group with
    rules): two runs of the long group (three if a test before this one changed its inputs).
    """
    from delta.tables import DeltaTable

    from gridlake.gold import efficiency, site_efficiency
    from gridlake.gold.analyze import analyze

    outliers, rules = efficiency.GOLD_EFFICIENCY_OUTLIERS, efficiency.GOLD_EFFICIENCY_OUTLIER_RULES
    weekly = site_efficiency.GOLD_SITE_EFFICIENCY_WEEKLY

    def version(table) -> int:
        return DeltaTable.forPath(spark, table.path()).history(1).first()["version"]

    # An input's new version: recomputed, then current again.
    # Current first (written with its fingerprint by the demo week's analyze, or now when a
    # test before this one changed an input): then a run that skips it.
    analyze(spark, groups=["site_efficiency"], skip_current=True)
    v = version(weekly)
    assert analyze(spark, groups=["site_efficiency"], skip_current=True) == {}
    assert version(weekly) == v  # nothing rewritten
    # A new version of silver.jobs that changed no row (here a property): its change data feed
    # names no week, so nothing is rewritten (rows that changed: tests/test_incremental_gold.py).
    spark.sql(f"ALTER TABLE {SILVER_JOBS.full_name} SET TBLPROPERTIES ('gridlake.test' = '1')")
    try:
        assert analyze(spark, groups=["site_efficiency"], skip_current=True) == {}
        assert version(weekly) == v
        # Without skip_current (gridlake analyze --full): recomputed whole.
        again = analyze(spark, groups=["site_efficiency"])
        assert again[weekly.full_name] == _table(spark, weekly).count() > 0
        assert version(weekly) == v + 1
        assert analyze(spark, groups=["site_efficiency"], skip_current=True) == {}
    finally:
        spark.sql(f"ALTER TABLE {SILVER_JOBS.full_name} UNSET TBLPROPERTIES ('gridlake.test')")

    # The rules: rewritten with the same content, still current; an operator's new rule
    # version (content), recomputed.
    analyze(spark, groups=["efficiency_outliers"], skip_current=True)  # current first, as above
    v = version(outliers)
    _table(spark, rules).localCheckpoint().write.format("delta").mode("overwrite").save(
        rules.path()
    )
    assert analyze(spark, groups=["efficiency_outliers"], skip_current=True) == {}
    assert version(outliers) == v
    shipped = efficiency.DEFAULT_OUTLIER_RULES
    peers = next(r for r in shipped if r.rule_id == "site-efficiency-peers")
    mine = peers._replace(rule_version=9, description="operator: test")
    rows = efficiency.outlier_rules_frame(spark, [*shipped, mine])
    rows.write.format("delta").mode("overwrite").save(rules.path())
    try:
        assert outliers.full_name in analyze(
            spark, groups=["efficiency_outliers"], skip_current=True
        )
        assert version(outliers) == v + 1
    finally:
        efficiency.outlier_rules_frame(spark).write.format("delta").mode("overwrite").save(
            rules.path()
        )
        analyze(spark, groups=["efficiency_outliers"], skip_current=True)


def test_a_duplicate_gold_key_fails_analyze_and_keeps_the_previous_version(
    spark, gold_demo, monkeypatch
) -> None:
    """Gold is gated like silver: a planted duplicate (week, site, vo) row in the frame makes
    analyze fail with the reason; the table keeps its previous version and the failed check is
    in silver.quality_results. The group's other tables, whose gates passed, keep theirs too:
    a group is written whole or not at all."""
    from delta.tables import DeltaTable

    from gridlake.catalog import QUALITY_RESULTS
    from gridlake.gold import site_efficiency
    from gridlake.gold.analyze import analyze, group_tables
    from gridlake.quality import QualityGateError

    table = site_efficiency.GOLD_SITE_EFFICIENCY_WEEKLY
    others = [t for t in group_tables("site_efficiency") if t.full_name != table.full_name]
    assert len(others) >= 3
    versions = {
        t.full_name: DeltaTable.forPath(spark, t.path()).history(1).first()["version"]
        for t in others
    }
    compute = site_efficiency.compute

    def planted(jobs, retries=None, rules=None):
        frames = compute(jobs, retries, rules)
        weekly = frames[table.full_name]
        frames[table.full_name] = weekly.unionByName(weekly.orderBy("week", "site", "vo").limit(1))
        return frames

    before = DeltaTable.forPath(spark, table.path()).history(1).first()["version"]
    rows = sorted(_table(spark, table).collect())
    monkeypatch.setattr(site_efficiency, "compute", planted)
    with pytest.raises(QualityGateError, match=r"gold.site_efficiency_weekly: unique_key"
                       r"\(week,site,vo\) 2 rows with week="):  # fmt: skip
        analyze(spark, groups=["site_efficiency"])
    assert DeltaTable.forPath(spark, table.path()).history(1).first()["version"] == before
    assert sorted(_table(spark, table).collect()) == rows
    failed = (
        _table(spark, QUALITY_RESULTS)
        .where((F.col("table_name") == table.full_name) & ~F.col("success"))
        .collect()
    )
    assert [(r.check_kind, r.check_column) for r in failed] == [("unique_key", "week,site,vo")]
    assert failed[0].batch_id.startswith("analyze-site_efficiency-")
    for t in others:  # gated and passed, but not written
        assert (
            DeltaTable.forPath(spark, t.path()).history(1).first()["version"]
            == versions[t.full_name]
        ), t.full_name
        passed = (
            _table(spark, QUALITY_RESULTS)
            .where((F.col("table_name") == t.full_name)
                   & (F.col("batch_id") == failed[0].batch_id))
            .collect()
        )  # fmt: skip
        assert passed and all(r.success for r in passed), t.full_name


def test_the_metastore_holds_exactly_the_catalog(spark, gold_demo) -> None:
    """Every table of the bronze, silver, gold and ops databases comes from the catalog, and every
    catalog table is in the metastore, at the location its declaration gives."""
    from gridlake.catalog import ALL_TABLES

    found = {
        f"{db}.{t.name}"
        for db in ("bronze", "silver", "gold", "ops")
        for t in spark.catalog.listTables(db)
        if not t.isTemporary
    }
    declared = {t.full_name for t in ALL_TABLES}
    assert found == declared, (sorted(found - declared), sorted(declared - found))
    assert len(declared) == len(ALL_TABLES)  # each declared once
    for t in ALL_TABLES:
        location = spark.sql(f"DESCRIBE DETAIL {t.full_name}").first()["location"]
        assert location.rstrip("/").endswith(t.path().rstrip("/").split("://")[-1]), t.full_name


def test_sql_cli_prints_json_and_csv(gold_demo) -> None:
    week = gold_demo
    per_site: dict[str, int] = defaultdict(int)
    for j in week.jobs:
        per_site[j["site"]] += 1
    sites = ", ".join(f"'{s}'" for s in sorted(per_site))
    query = (
        "SELECT site, CAST(sum(jobs) AS INT) AS jobs FROM grid.site_efficiency_weekly "
        f"WHERE site IN ({sites}) GROUP BY site ORDER BY site"
    )
    out = gridlake_cli("sql", query, "--format", "json")
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert {r["site"]: r["jobs"] for r in rows} == dict(per_site)

    csv_out = gridlake_cli("sql", query, "--format", "csv")
    assert csv_out.returncode == 0
    lines = [ln for ln in csv_out.stdout.splitlines() if ln]
    assert lines[0] == "site,jobs"
    assert len(lines) == 1 + len(per_site)


def test_thrift_server_serves_the_warehouse_to_pyhive(spark, thrift) -> None:
    from gridlake.serving import thrift_auth

    conn = thrift_auth.connect("superset")  # the least of the three users: grid views
    try:
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM grid.jobs")
        (n,) = cur.fetchone()
        assert n == _table(spark, SILVER_JOBS).count()
        cur.execute("DESCRIBE grid.site_efficiency_weekly")
        comments = {row[0]: row[2] for row in cur.fetchall()}
        assert comments["cpu_efficiency"] == "cpu_hours / core_hours (ratio of sums)"
    finally:
        conn.close()


def _thrift_error(user: str, sql: str, **connect) -> str:
    """The Thrift Server's refusal of sql for user ('' when it ran)."""
    from gridlake.serving import thrift_auth

    conn = None
    try:  # PyHive runs `USE default` on connecting: a refusal may come from there
        conn = thrift_auth.connect(user, **connect)
        cur = conn.cursor()
        cur.execute(sql)
        if cur.description:  # a result set: a statement's failure may show only when fetched
            cur.fetchall()
        return ""
    except Exception as exc:  # PyHive raises OperationalError with the server's message
        return str(exc)
    finally:
        if conn is not None:
            conn.close()


def test_thrift_server_reads_tables_by_name_only_and_hides_its_settings(thrift) -> None:
    """SQL on files (text, json, parquet, delta paths) is refused for every user, also after a
    session asks for it (SET, or its connection's settings): it would read the instance's
    secrets, or silver around the views. The settings reach the server in a 0600 file, not on
    its command line (GRIDLAKE_SPARK_CONF may carry object-store keys; `ps` shows arguments to
    every local user)."""
    import stat

    settings = get_settings()
    props = settings.state / "thrift" / "spark.properties"
    assert stat.S_IMODE(props.stat().st_mode) == 0o600
    assert "spark.sql.runSQLOnFiles=false" in props.read_text().splitlines()
    pid = int((settings.state / "run" / "thrift.pid").read_text())
    java = [int(c) for c in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                           text=True).stdout.split()] or [pid]  # fmt: skip
    for proc in {pid, *java}:
        args = Path(f"/proc/{proc}/cmdline").read_bytes().decode().split("\0")
        assert not [a for a in args if "spark.sql.warehouse.dir" in a or "jdbc:derby" in a], args
    secret = settings.state / "secrets" / "thrift_users" / "operator.password"
    for user in ("gridlake", "operator", "superset"):
        for sql in (
            f"SELECT * FROM text.`{secret}`",
            f"SELECT * FROM json.`{props}`",
            f"SELECT * FROM parquet.`{SILVER_JOBS.path()}`",
            f"SELECT count(*) FROM delta.`{SILVER_JOBS.path()}`",
        ):
            assert "TABLE_OR_VIEW_NOT_FOUND" in _thrift_error(user, sql), (user, sql)
        # a session that turns SQL on files back on gets nothing served any more
        on = {"set:hiveconf:spark.sql.runSQLOnFiles": "true"}
        err = _thrift_error(user, f"SELECT * FROM text.`{secret}`", configuration=on)
        assert "GRIDLAKE_ACCESS_DENIED" in err and "SQL on files" in err, (user, err[:500])
        assert "GRIDLAKE_ACCESS_DENIED" in _thrift_error(user, "SELECT 1", configuration=on)
    err = _thrift_error("gridlake", "SET spark.sql.runSQLOnFiles=true")
    assert "GRIDLAKE_ACCESS_DENIED" in err, err[:500]
    assert _thrift_error("operator", "SELECT count(*) FROM grid.jobs") == ""  # by name: served


def test_thrift_server_wants_a_password(thrift) -> None:
    """No password, a wrong one, an unknown user, another user's password: all refused. The
    server's user file holds salted hashes only, 0600."""
    import stat

    from pyhive import hive

    from gridlake.serving import thrift_auth

    settings = get_settings()
    right = thrift_auth.password("operator", settings)
    attempts = {
        "no password": dict(username="operator", auth="NONE"),
        "empty password": dict(username="operator", password="", auth="CUSTOM"),
        "wrong password": dict(username="operator", password=right + "x", auth="CUSTOM"),
        "unknown user": dict(username="mallory", password=right, auth="CUSTOM"),
        "another's password": dict(
            username="gridlake", password=thrift_auth.password("superset"), auth="CUSTOM"
        ),
    }
    for what, kwargs in attempts.items():
        with pytest.raises(Exception, match=r"Error validating the login|Bad status") as info:
            hive.connect(host="127.0.0.1", port=thrift, **kwargs).cursor().execute("SELECT 1")
        assert right not in str(info.value), what
    users = thrift_auth.users_file(settings)
    assert stat.S_IMODE(users.stat().st_mode) == 0o600
    text = users.read_text()
    assert sorted(line.split()[0] for line in text.splitlines() if not line.startswith("#")) == [
        "gridlake", "operator", "superset"]  # fmt: skip
    for user in thrift_auth.ROLES:
        pw_file = thrift_auth.password_file(settings, user)
        assert stat.S_IMODE(pw_file.stat().st_mode) == 0o600
        assert thrift_auth.password(user, settings) not in text
    conn = thrift_auth.connect("operator")
    try:
        cur = conn.cursor()
        cur.execute("SELECT current_user()")
        assert cur.fetchall() == [("operator",)]
    finally:
        conn.close()


# Statements refused on the Thrift Server, per user (None: served). Reads of silver and bronze
# are refused to Superset's user, also through a subquery, a CTE or a join; writes, settings and
# code (reflection, script transforms, jars) to both readers; code to the pipeline's user too.
THRIFT_RULES = [
    ("SELECT count(*) FROM silver.jobs", {"superset": "not silver tables"}),
    ("SELECT count(*) FROM bronze.jobs", {"superset": "not bronze tables"}),
    (
        "SELECT count(*) FROM grid.jobs WHERE site IN (SELECT site FROM silver.jobs)",
        {"superset": "not silver tables"},
    ),
    (
        "WITH j AS (SELECT * FROM spark_catalog.silver.jobs) SELECT count(*) FROM j",
        {"superset": "not silver tables"},
    ),
    (
        "SELECT count(*) FROM grid.jobs g JOIN bronze.jobs b ON g.job_id = b.key",
        {"superset": "not bronze tables"},
    ),
    ("SELECT count(*) FROM grid.jobs", {}),
    ("SELECT count(*) FROM gold.site_efficiency_weekly", {}),
    ("WITH j AS (SELECT * FROM grid.site_efficiency_weekly) SELECT count(*) FROM j", {}),
    ("SHOW TABLES IN grid", {}),
    ("DESCRIBE grid.site_efficiency_weekly", {}),
    (
        "CREATE TEMPORARY VIEW gl_probe AS SELECT 1 AS x",
        {"operator": "only reads", "superset": "only reads"},
    ),
    (
        "INSERT INTO gold.site_efficiency_weekly SELECT * FROM gold.site_efficiency_weekly LIMIT 0",
        {"operator": "only reads", "superset": "only reads"},
    ),
    ("CACHE TABLE grid.jobs", {"operator": "only reads", "superset": "only reads"}),
    ("SET spark.sql.shuffle.partitions=1", {"operator": "only reads", "superset": "only reads"}),
    (
        "SELECT reflect('java.lang.System', 'getProperty', 'user.name')",
        {u: "reflection" for u in ("gridlake", "operator", "superset")},
    ),
    (
        "SELECT java_method('java.lang.System', 'getenv', 'HOME')",
        {u: "reflection" for u in ("gridlake", "operator", "superset")},
    ),
    (
        "SELECT TRANSFORM(site) USING 'cat' AS (s) FROM gold.site_efficiency_weekly",
        {u: "not served" for u in ("gridlake", "operator", "superset")},
    ),
    (
        "ADD JAR /nonexistent/gridlake-probe.jar",
        {u: "not served" for u in ("gridlake", "operator", "superset")},
    ),
]


def test_thrift_server_gives_each_user_its_own_rights(thrift) -> None:
    for sql, refused in THRIFT_RULES:
        for user in ("gridlake", "operator", "superset"):
            err = _thrift_error(user, sql)
            if user in refused:
                assert "GRIDLAKE_ACCESS_DENIED" in err and refused[user] in err, (user, sql, err)
            else:
                assert err == "", (user, sql, err[:800])


def test_thrift_server_cancels_a_long_statement_and_serves_on(thrift) -> None:
    """Over its timeout a statement is cancelled, and the server answers the next one. A session
    may shorten the server's timeout (here to 2 s) but not lengthen or remove it."""
    from gridlake.serving import thrift_auth

    slow = "SELECT count(*) FROM range(0, 1000000000000)"  # minutes on two cores
    short = {"set:hiveconf:spark.sql.thriftServer.queryTimeout": "2s"}
    t0 = time.monotonic()
    err = _thrift_error("operator", slow, configuration=short)
    assert "TIMEDOUT" in err or "cancel" in err.lower(), err[:800]
    assert time.monotonic() - t0 < 120
    for longer in ("0", "100000s"):
        conf = {"set:hiveconf:spark.sql.thriftServer.queryTimeout": longer}
        err = _thrift_error("operator", "SELECT 1", configuration=conf)
        assert "GRIDLAKE_ACCESS_DENIED" in err and "timeout" in err, (longer, err[:500])
    conn = thrift_auth.connect("superset")
    try:
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM grid.site_efficiency_weekly")
        assert cur.fetchone()[0] > 0
    finally:
        conn.close()


def test_services_listen_on_loopback_only(thrift, kafka) -> None:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    run_dir = get_settings().state / "run"
    pids = {int(p.read_text()) for p in run_dir.glob("*.pid")}
    assert pids, "no service PID files"

    def descendants(pid: int) -> set[int]:
        found = {pid}
        for child in subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True
        ).stdout.split():
            found |= descendants(int(child))
        return found

    ours = set().union(*(descendants(p) for p in pids))
    checked = 0
    for line in out.splitlines():
        fields = line.split()
        local = fields[3]
        owners = {int(x) for x in __import__("re").findall(r"pid=(\d+)", line)}
        if owners & ours:
            checked += 1
            host = local.rsplit(":", 1)[0]
            assert host in ("127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"), line
    assert checked >= 3  # derby, kafka (broker + controller), thrift


def test_nodes_and_network_reach_silver_once_each(spark, gold_demo) -> None:
    """Demo node samples (published twice: the crash test re-sends them) and perfSONAR results."""
    from gridlake.catalog import SILVER_NETWORK, SILVER_NODE_DISK_SAMPLES, SILVER_NODE_SAMPLES
    from gridlake.silver.refine import refine

    week = gold_demo
    refine(spark, "nodes")  # drain what earlier tests (the crash test's re-send) left in bronze
    keys = {(n["host"], n["ts"], n["kind"]) for n in week.nodes}
    # the agent tests publish a few samples of this machine to the same broker: count demo hosts
    hosts = sorted({n["host"] for n in week.nodes})
    nodes = _table(spark, SILVER_NODE_SAMPLES).where(F.col("host").isin(hosts))
    assert nodes.count() == len(keys)
    assert nodes.select("host", "ts", "kind").distinct().count() == len(keys)
    disk_rows = sum(len(n.get("disks") or []) for n in week.nodes)
    disks = _table(spark, SILVER_NODE_DISK_SAMPLES).where(F.col("host").isin(hosts))
    assert disks.count() == disk_rows

    net = _table(spark, SILVER_NETWORK)
    assert net.count() == len(
        {(r["src_host"], r["dst_host"], r["ts"], r["test"]) for r in week.network}
    )
    audit = _table(spark, BATCH_AUDIT).filter("input = 'nodes'").collect()
    for a in audit:
        assert a.bronze_rows == a.clean_rows + a.duplicate_rows + a.quarantined_rows
    assert sum(a.bronze_rows for a in audit) == _table(spark, BRONZE["nodes"]).count()


def test_resending_a_whole_day_changes_nothing_in_silver(spark, gold_demo, tmp_path) -> None:
    from gridlake.bronze.ingest import ingest
    from gridlake.silver.refine import refine
    from gridlake.sources.publish import publish_files

    week = gold_demo
    day = "2026-11-18"
    resend = tmp_path / "day.jsonl"
    lines = [json.dumps(j) + "\n" for j in week.jobs if j["end_time"].startswith(day)]
    resend.write_text("".join(lines))
    assert len(lines) > 50

    ingest(spark, ("jobs",))
    refine(spark, "jobs")  # drain whatever earlier tests left
    before = sorted(_table(spark, SILVER_JOBS).drop("_refined_at").collect())

    assert publish_files("grid.jobs", [resend], progress=False).ok
    ingest(spark, ("jobs",))
    stats = refine(spark, "jobs")
    assert stats.bronze_rows == len(lines)
    assert stats.duplicate_rows == 0  # distinct job_ids within the re-send
    assert [(a["inserted_rows"], a["updated_rows"]) for a in stats.audit] == [(0, 0)] * len(
        stats.audit
    )
    after = sorted(_table(spark, SILVER_JOBS).drop("_refined_at").collect())
    assert after == before  # not one row, not one lineage column, changed


def test_a_mostly_bad_batch_is_refused_whole_and_nothing_is_written(spark, gold_demo) -> None:
    from gridlake.quality import QualityGateError
    from gridlake.silver.refine import SPECS, RefineStats, process_batch

    good = [json.dumps({**GOOD, "job_id": f"breaker-{i}"}) for i in range(40)]
    bad = [json.dumps({**GOOD, "job_id": f"breaker-bad-{i}", "cores": 0}) for i in range(160)]
    ts = datetime(2026, 11, 20)
    bronze = rows_frame(
        spark,
        [(v, "grid.jobs", 0, 10_000_000 + i, ts) for i, v in enumerate(good + bad)],
        "value string, topic string, partition int, offset long, kafka_timestamp timestamp",
    )
    counts = (_table(spark, SILVER_JOBS).count(), _table(spark, QUARANTINE_JOBS).count())
    with pytest.raises(QualityGateError, match=r"160 of 200 records \(80%\) would be quarantined"):
        process_batch(spark, SPECS["jobs"], bronze, 999_999, get_settings(), RefineStats())
    assert (_table(spark, SILVER_JOBS).count(), _table(spark, QUARANTINE_JOBS).count()) == counts


def test_a_record_neither_clean_nor_quarantined_refuses_the_batch(spark, gold_demo) -> None:
    """The batch audit counts what is written, so its identity can fail: a validation bug that
    leaves a record without its reasons (neither valid nor quarantined) is caught before
    anything is written, instead of the record vanishing."""
    from gridlake.quality import QualityGateError
    from gridlake.silver.refine import SPECS, RefineStats, process_batch

    spec = SPECS["jobs"]
    lines = [json.dumps({**GOOD, "job_id": f"unaccounted-{i}"}) for i in range(5)]
    bronze = rows_frame(
        spark,
        [(v, "grid.jobs", 0, 20_000_000 + i, datetime(2026, 11, 20)) for i, v in enumerate(lines)],
        "value string, topic string, partition int, offset long, kafka_timestamp timestamp",
    )

    def loses_one(df):  # the planted bug: one record's reasons become null
        out = spec.validate(df)
        lost = F.get_json_object("value", "$.job_id") == "unaccounted-3"
        return out.withColumn("_reasons", F.when(lost, F.lit(None)).otherwise(F.col("_reasons")))

    counts = (_table(spark, SILVER_JOBS).count(), _table(spark, QUARANTINE_JOBS).count())
    buggy = dataclasses.replace(spec, validate=loses_one)
    with pytest.raises(QualityGateError, match=r"5 bronze records but 4 valid and 0 quarantined"):
        process_batch(spark, buggy, bronze, 999_998, get_settings(), RefineStats())
    assert (_table(spark, SILVER_JOBS).count(), _table(spark, QUARANTINE_JOBS).count()) == counts


def test_gate_results_are_kept(spark, gold_demo) -> None:
    from gridlake.catalog import QUALITY_RESULTS, SILVER_JOBS

    rows = (
        _table(spark, QUALITY_RESULTS)
        .filter(F.col("table_name") == SILVER_JOBS.full_name)
        .collect()
    )
    assert rows
    assert {r.table_name for r in rows} == {"silver.jobs"}
    assert {r.severity for r in rows} <= {"fail", "warn"}
    kinds = {(r.check_kind, r.check_column) for r in rows}
    assert ("unique", "job_id") in kinds
    assert all(r.success for r in rows if r.severity == "fail")


def test_demo_cpu_models_normalise_to_their_planted_microarchitecture(spark, gold_demo) -> None:
    from gridlake.sources.demo import CPU_MODELS

    demo_sites = sorted({j["site"] for j in gold_demo.jobs})
    rows = (
        _table(spark, SILVER_JOBS)
        .filter(F.col("site").isin(*demo_sites))  # other tests' jobs declare no benchmark
        .filter(F.col("cpu_model").isin(*CPU_MODELS))
        .groupBy("cpu_model", "microarchitecture", "vendor", "hs23_source")
        .count()
        .collect()
    )
    assert {r.cpu_model for r in rows} == set(CPU_MODELS)
    for r in rows:
        assert r.microarchitecture == CPU_MODELS[r.cpu_model][0], r.cpu_model
        assert r.vendor == ("AMD" if "AMD" in r.cpu_model else "Intel")
        assert r.hs23_source == "declared-hs23"
