"""Access control in Superset: GridOperator reads everything and writes nothing; a site user, made
by `gridlake superset add-site-user SITE USER`, sees only its site's rows through the chart-data API
and in SQL Lab (row-level security), plus grid-wide aggregates that hold no per-site rows.

Network tables have two sites per row: a site user sees the links its site is an end of (source
or destination), in both directions. Outlier rows: only those about its own site.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest

from gridlake.serving.superset_assets import DASHBOARDS, DATASETS, RLS_CLAUSES, chart_query_context
from gridlake.settings import get_settings

from .superset_helpers import REPO, SupersetAPI, read_login

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SITE = "FZK-LCG2"  # a demo-week site (the slow-storage one; any would do)
OTHER_SITE = "CERN-PROD"
CHARTS = [c for d in DASHBOARDS for c in d.charts]
SCOPE = {ds.name: ds.rls for ds in DATASETS}


def run_cli(*args: str, password: str | None = None) -> subprocess.CompletedProcess:
    env = os.environ.copy()
    env.pop("GRIDLAKE_USER_PASSWORD", None)
    if password is not None:
        env["GRIDLAKE_USER_PASSWORD"] = password
    exe = get_settings().home / "venv" / "bin" / "gridlake"
    return subprocess.run(
        [str(exe), "superset", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.fixture(scope="module")
def users(superset) -> dict:
    """A site user with a generated password, one with a password from the environment, an
    operator; all made through the gridlake CLI."""
    state = superset["settings"].state
    made = run_cli("add-site-user", SITE, "fzk-ops")
    assert made.returncode == 0, made.stdout + made.stderr
    chosen = "env-" + os.urandom(9).hex()
    made = run_cli("add-site-user", OTHER_SITE, "cern-ops", password=chosen)
    assert made.returncode == 0, made.stdout + made.stderr
    made = run_cli("add-operator", "grid-oper")
    assert made.returncode == 0, made.stdout + made.stderr
    secrets = state / "secrets" / "superset_users"
    url = superset["url"]
    return {
        "secrets": secrets,
        "chosen": chosen,
        "admin": SupersetAPI(url, superset["user"], superset["password"]),
        "site": SupersetAPI(url, *read_login(secrets / "fzk-ops.txt")),
        "other": SupersetAPI(url, "cern-ops", chosen),
        "operator": SupersetAPI(url, *read_login(secrets / "grid-oper.txt")),
    }


def test_users_get_secrets_in_ignored_files(superset, users):
    secrets = users["secrets"]
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
    for name in ("fzk-ops", "cern-ops", "grid-oper"):
        path = secrets / f"{name}.txt"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        ignored = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=REPO)
        assert ignored.returncode == 0, f"{path} is not ignored by git"
    # the environment's password is the one kept, and generated ones are not trivial
    assert read_login(secrets / "cern-ops.txt")[1] == users["chosen"]
    generated = read_login(secrets / "fzk-ops.txt")[1]
    assert len(generated) >= 20 and generated != users["chosen"]
    # re-running keeps the password: the login still works
    again = run_cli("add-site-user", SITE, "fzk-ops")
    assert again.returncode == 0, again.stdout + again.stderr
    assert read_login(secrets / "fzk-ops.txt")[1] == generated
    SupersetAPI(superset["url"], "fzk-ops", generated)
    # bad input gets a clear refusal
    bad = run_cli("add-site-user", "FZK'; DROP", "x")
    assert bad.returncode != 0
    assert "not a site name" in (bad.stdout + bad.stderr)


def secret_values(folder) -> dict[str, str]:
    """Every secret the instance keeps, {value: file}: the values of KEY=value lines (.env), of
    "password:" lines (the .txt logins), of .password files and the string values of .json
    files. Values shorter than 12 characters are left out (they could match by chance)."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        if path.suffix == ".json":
            values = [v for v in json.loads(text).values() if isinstance(v, str)]
        elif path.suffix == ".password":  # the value alone (Derby's, the Thrift Server users')
            values = [text]
        else:
            lines = text.splitlines()
            values = [x.split("=", 1)[1] for x in lines if path.suffix == ".env" and "=" in x]
            values += [x.split(":", 1)[1] for x in lines if x.startswith("password:")]
        found.update({v.strip(): path.name for v in values if len(v.strip()) >= 12})
    return found


def test_no_log_file_or_command_line_holds_a_secret(superset, users):
    """Secrets stay in their 0600 files: no other file of the instance's state (the services'
    logs, Airflow's task logs of the DAG runs, reports, configs; the warehouse's data aside) and
    no command line of any process (`ps -eo args`) holds a password, a secret key or a token."""
    state = get_settings().state
    secrets = secret_values(state / "secrets")
    kinds = set(secrets.values())
    # Superset's key and admin login, Airflow's keys and admin password, the site users' logins,
    # Derby's password, the Thrift Server users' (Superset's own among them)
    want = {"superset.env", "superset_admin.txt", "airflow.env", "fzk-ops.txt",
            "metastore_db.password", "superset.password", "operator.password"}  # fmt: skip
    assert want <= kinds, kinds
    skip = {"secrets", "warehouse", "spark-tmp"}
    # the files whose job is to hand a secret to its service (a password Derby checks; the
    # Thrift Server's and the metastore's Derby login; Kafka's admin for the brokers and the
    # Java tools): private to the owner, and nothing else may hold one
    handoff = {"derby/derby.properties", "thrift/spark.properties", "metastore/conf/hive-site.xml",
               "kafka/server.properties"}  # fmt: skip
    files = []
    for p in state.rglob("*"):
        rel = p.relative_to(state)
        if not p.is_file() or skip & set(rel.parts) or p.stat().st_size >= 5e6:
            continue
        if rel.as_posix() in handoff or rel.parts[:2] == ("kafka", "clients"):
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, rel
            continue
        files.append(p)
    assert any(p.suffix == ".log" for p in files), "no log file found: the test proves nothing"
    leaks = []
    for path in files:
        content = path.read_bytes()
        leaks += [(str(path.relative_to(state)), where)
                  for value, where in secrets.items() if value.encode() in content]  # fmt: skip
    assert not leaks, leaks
    args = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not [where for value, where in secrets.items() if value in args]


# --- chart data ---------------------------------------------------------------------------------
def rows_key(rows: list[dict]) -> list[str]:
    """Rows as comparable text (floats to 9 significant digits: sums may add in another order)."""

    def norm(v):
        return float(f"{v:.9g}") if isinstance(v, float) else v

    return sorted(json.dumps({k: norm(v) for k, v in r.items()}, sort_keys=True) for r in rows)


def on_site(row: dict, site: str) -> bool:
    if "site" in row and row["site"] is not None:
        return row["site"] == site
    if "src_site" in row or "dst_site" in row:
        return site in (row.get("src_site"), row.get("dst_site"))
    if "entity_value" in row:
        return row.get("entity") in (None, "site") and row["entity_value"] == site
    return True


def test_site_user_chart_data_holds_only_its_site(users):
    """Every chart of every dashboard, as the site user (saved query context, chart-data API):
    rows that name a site name this one. The first chart of each dataset (the row-level rule is
    the dataset's: its other charts are other queries of the same rows) equals the same query
    run by an admin with the site's condition added; a grid-wide chart is the same for both."""
    admin, site = users["admin"], users["site"]
    removed_something, compared, seen = [], [], set()
    for chart in CHARTS:
        got = site.chart_data(chart.uuid)["data"]
        assert all(on_site(r, SITE) for r in got), (chart.key, got[:5])
        if chart.dataset.name in seen:
            continue
        seen.add(chart.dataset.name)
        qc = chart_query_context(chart)
        qc["datasource"] = {"id": admin.dataset_id(chart.dataset.uuid), "type": "table"}
        qc["force"] = True
        everything = admin.query_context_data(json.loads(json.dumps(qc)))["data"]
        clause = RLS_CLAUSES[SCOPE[chart.dataset.name]]
        if clause is None:
            assert rows_key(got) == rows_key(everything), chart.key
            continue
        (query,) = qc["queries"]
        where = query["extras"].get("where") or ""
        condition = clause.format(site=SITE)
        query["extras"]["where"] = f"({where}) AND {condition}" if where else condition
        want = admin.query_context_data(qc)["data"]
        assert rows_key(got) == rows_key(want), (chart.key, got[:5], want[:5])
        compared.append(chart.key)
        if rows_key(got) != rows_key(everything):
            removed_something.append(chart.key)
    assert len(seen) == len({c.dataset.name for c in CHARTS})
    # the demo week has four sites: site-scoped charts lose rows or change totals (all eleven
    # compared on 2026-11-30)
    assert len(removed_something) >= 0.8 * len(compared), (compared, removed_something)


def test_site_user_numbers_match_an_independent_query(users, hive_rows_access):
    jobs = users["site"].chart_data(next(c for c in CHARTS if c.key == "total_jobs").uuid)
    (want,) = hive_rows_access(
        f"SELECT SUM(jobs) AS jobs FROM grid.site_efficiency_weekly WHERE site = '{SITE}'"
    )
    (total,) = hive_rows_access("SELECT SUM(jobs) AS jobs FROM grid.site_efficiency_weekly")
    assert jobs["data"] == [{"jobs": want["jobs"]}]
    assert want["jobs"] < total["jobs"]


@pytest.fixture(scope="module")
def hive_rows_access(superset):
    from gridlake.serving import thrift_auth

    conn = thrift_auth.connect("operator", superset["settings"])

    def run(sql: str) -> list[dict]:
        cur = conn.cursor()
        try:
            cur.execute(sql)
            names = [d[0].split(".")[-1] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        finally:
            cur.close()

    yield run
    conn.close()


def test_site_user_cannot_sneak_past_rls_in_chart_data(users):
    site = users["site"]
    ds = site.dataset_id(next(d for d in DATASETS if d.name == "site_efficiency_weekly").uuid)
    query = {"columns": ["site"], "metrics": ["jobs"], "filters": [], "row_limit": 100,
             "extras": {"where": "1 = 1 OR site <> ''"}}  # fmt: skip
    qc = {"datasource": {"id": ds, "type": "table"}, "force": True, "queries": [query],
          "result_format": "json", "result_type": "full"}  # fmt: skip
    assert [r["site"] for r in site.query_context_data(qc)["data"]] == [SITE]
    sneaky = "(SELECT COUNT(*) FROM gold.site_efficiency_weekly)"
    query["metrics"] = [{"expressionType": "SQL", "label": "n", "sqlExpression": sneaky}]
    resp = site.request("POST", "/api/v1/chart/data", json=qc)
    assert resp.status_code == 400 and "sub-queries" in resp.text, resp.text[:500]


# --- SQL Lab ------------------------------------------------------------------------------
def sql_rows(api: SupersetAPI, database_id: int, sql: str) -> list[dict]:
    resp = api.sql_lab(database_id, sql)
    assert resp.status_code == 200, f"{sql}: {resp.status_code} {resp.text[:1000]}"
    return resp.json()["data"]


@pytest.fixture(scope="module")
def database_id(users) -> int:
    from gridlake.serving.superset_assets import DATABASE_UUID

    (db,) = users["admin"].find_by_uuid("database", DATABASE_UUID)
    return db["id"]


def test_site_user_sql_lab_sees_only_its_site(users, database_id, hive_rows_access):
    site, admin = users["site"], users["admin"]
    run = lambda sql: sql_rows(site, database_id, sql)  # noqa: E731
    everything = sql_rows(
        admin, database_id, "SELECT DISTINCT site FROM grid.site_efficiency_weekly"
    )
    assert len(everything) == 4  # the control: an admin sees every demo site

    assert run("SELECT DISTINCT site FROM grid.site_efficiency_weekly") == [{"site": SITE}]
    (want,) = hive_rows_access(
        f"SELECT SUM(jobs) AS jobs FROM grid.site_efficiency_weekly WHERE site = '{SITE}'"
    )
    # unqualified name (the database's default schema), aggregates, CTEs, subqueries, joins,
    # unions and an OR in the user's own WHERE: RLS wraps every table
    assert run("SELECT site, SUM(jobs) AS jobs FROM site_efficiency_weekly GROUP BY site") == [
        {"site": SITE, "jobs": want["jobs"]}
    ]
    queries = [
        "WITH w AS (SELECT * FROM grid.site_efficiency_weekly) SELECT DISTINCT site FROM w",
        "SELECT DISTINCT site FROM (SELECT site, jobs FROM grid.site_efficiency_weekly) t",
        "SELECT DISTINCT s.site FROM grid.site_efficiency_weekly s "
        "JOIN grid.site_io_stress_weekly i ON i.week = s.week",
        "SELECT DISTINCT i.site FROM grid.site_efficiency_weekly s "
        "JOIN grid.site_io_stress_weekly i ON i.week = s.week",
        "SELECT site FROM grid.site_efficiency_weekly UNION SELECT site FROM grid.node_saturation",
        "SELECT DISTINCT site FROM grid.site_efficiency_weekly WHERE 1 = 1 OR site <> ''",
        "SELECT DISTINCT `site` FROM `grid`.`site_jobtype_efficiency_weekly`",
        "SELECT DISTINCT site FROM grid.workflow_io_profile",
    ]
    for sql in queries:
        assert run(sql) == [{"site": SITE}], sql
    links = run("SELECT DISTINCT src_site, dst_site FROM grid.network_cost_matrix")
    assert links and all(SITE in (r["src_site"], r["dst_site"]) for r in links), links
    assert len(links) == 2 * 3  # both directions to each of the three other demo sites
    hourly = run("SELECT DISTINCT src_site, dst_site FROM grid.network_link_hourly")
    assert sorted(map(str, hourly)) == sorted(map(str, links))
    outliers = run("SELECT entity, entity_value FROM grid.efficiency_outliers")
    assert all((r["entity"], r["entity_value"]) == ("site", SITE) for r in outliers), outliers
    # grid-wide aggregates hold no per-site rows: the site user sees them whole
    for view in ("cpu_speed_factors", "failure_vs_duration", "job_length_advice"):
        sql = f"SELECT COUNT(*) AS n FROM grid.{view}"
        assert run(sql) == sql_rows(admin, database_id, sql), view


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT DISTINCT site FROM gold.site_efficiency_weekly",  # the physical table
        "SELECT COUNT(*) FROM grid.jobs",  # a view that is no dataset (silver)
        "SELECT COUNT(*) FROM silver.jobs",
        "SELECT DISTINCT site FROM spark_catalog.grid.site_efficiency_weekly",
        "SELECT DISTINCT site FROM GRID.SITE_EFFICIENCY_WEEKLY",
        "SELECT * FROM parquet.`/tmp`",
        "SELECT reflect('java.lang.System', 'getProperty', 'user.name')",
        "DROP VIEW grid.site_efficiency_weekly",
        "INSERT INTO grid.site_efficiency_weekly SELECT * FROM grid.site_efficiency_weekly",
    ],
)
def test_site_user_sql_lab_refuses_what_rls_cannot_guard(users, database_id, sql):
    resp = users["site"].sql_lab(database_id, sql)
    assert resp.status_code != 200, f"{sql}: {resp.text[:500]}"
    assert "data" not in resp.json() or not resp.json()["data"]


# Statements that are not plain reads, on a table every role may read: refused by gridlake's
# guard (superset_config.SQL_QUERY_MUTATOR) for the operator and a site user alike (#25).
NOT_READS = [
    "SET spark.sql.runSQLOnFiles=true",
    "RESET",
    "ADD JAR /tmp/gridlake-probe.jar",
    "EXECUTE IMMEDIATE 'SELECT 1'",
    "SELECT COUNT(*) AS n FROM IDENTIFIER('grid.site_efficiency_weekly')",
    "SELECT COUNT(*) AS n FROM grid.site_efficiency_weekly VERSION AS OF 0",
    "SELECT COUNT(*) AS n FROM grid.site_efficiency_weekly TIMESTAMP AS OF '2020-01-01'",
    "SHOW CREATE TABLE grid.site_efficiency_weekly",
    "DESCRIBE EXTENDED grid.site_efficiency_weekly",
    "SELECT TRANSFORM(site) USING 'id' AS (who) FROM grid.site_efficiency_weekly",
    "SELECT java_method('java.lang.System', 'getenv', 'SUPERSET_SECRET_KEY') AS k",
    "SELECT * FROM text.`/etc/hostname`",
    "CACHE TABLE grid.site_efficiency_weekly",
]


@pytest.mark.parametrize("who", ["operator", "site"])
def test_sql_lab_runs_reads_only(users, database_id, who):
    """Every statement refused, with a reason. For the operator (who may read every table) the
    refusal is gridlake's guard, except reflection, which Superset's own DISALLOWED_SQL_FUNCTIONS
    check meets first; a site user's statement may also meet the table check first (IDENTIFIER()
    names no dataset it holds)."""
    api = users[who]
    for sql in NOT_READS:
        resp = api.sql_lab(database_id, sql)
        assert resp.status_code != 200, f"{who}: {sql}: {resp.text[:500]}"
        reasons = ["Refused by gridlake"]
        if "java_method" in sql:
            reasons = ["disallowed function"]
        elif who == "site":
            reasons.append("You need access to the following tables")
        assert any(r in resp.text for r in reasons), f"{who}: {sql}: {resp.text[:500]}"
    # the control: a query and a plain DESCRIBE of the same table still run
    rows = sql_rows(api, database_id, "SELECT COUNT(*) AS n FROM grid.site_efficiency_weekly")
    assert rows[0]["n"] > 0
    if who == "operator":
        described = sql_rows(api, database_id, "DESCRIBE grid.site_efficiency_weekly")
        assert "cpu_efficiency" in {r["col_name"] for r in described}, described


def test_chart_data_refuses_what_is_not_a_read(users):
    """The same guard on the chart-data API: an ad hoc filter calling Java reflection is
    refused for the operator (and nothing runs), the same query without it answers."""
    op = users["operator"]
    ds = op.dataset_id(next(d for d in DATASETS if d.name == "site_efficiency_weekly").uuid)
    query = {"columns": ["site"], "metrics": ["jobs"], "filters": [], "row_limit": 100,
             "extras": {"where": "site <> ''"}}  # fmt: skip
    qc = {"datasource": {"id": ds, "type": "table"}, "force": True, "queries": [query],
          "result_format": "json", "result_type": "full"}  # fmt: skip
    assert len(op.query_context_data(qc)["data"]) == 4  # the control: every demo site
    query["extras"]["where"] = "java_method('java.lang.System', 'getenv', 'HOME') IS NOT NULL"
    resp = op.request("POST", "/api/v1/chart/data", json=qc)
    assert resp.status_code != 200 and "Refused by gridlake" in resp.text, resp.text[:500]


def test_two_sites_see_disjoint_rows(users, database_id):
    sql = "SELECT DISTINCT site FROM grid.site_efficiency_weekly"
    assert sql_rows(users["other"], database_id, sql) == [{"site": OTHER_SITE}]
    assert sql_rows(users["site"], database_id, sql) == [{"site": SITE}]


# --- read-only roles -----------------------------------------------------------------------------
WRITES = [
    ("PUT", "/api/v1/chart/{chart}", {"slice_name": "x"}),
    ("DELETE", "/api/v1/chart/{chart}", None),
    ("POST", "/api/v1/dashboard/", {"dashboard_title": "x"}),
    ("PUT", "/api/v1/dataset/{dataset}", {"sql": "SELECT 1"}),
    ("DELETE", "/api/v1/dataset/{dataset}", None),
    ("PUT", "/api/v1/database/{database}", {"allow_dml": True}),
    ("POST", "/api/v1/rowlevelsecurity/", {"name": "x", "clause": "1 = 1", "filter_type": "Regular",
                                           "tables": [1], "roles": [1]}),
    ("POST", "/api/v1/saved_query/", {"db_id": 1, "label": "x", "sql": "SELECT 1"}),
]  # fmt: skip


@pytest.mark.parametrize("who", ["operator", "site"])
def test_read_only_roles_cannot_write(users, database_id, who):
    api, admin = users[who], users["admin"]
    ids = {
        "chart": admin.chart_id(CHARTS[0].uuid),
        "dataset": admin.dataset_id(DATASETS[0].uuid),
        "database": database_id,
    }
    for method, path, body in WRITES:
        resp = api.request(method, path.format(**ids), json=body)
        assert resp.status_code in (401, 403), (
            who,
            method,
            path,
            resp.status_code,
            resp.text[:300],
        )
    # nothing changed
    assert admin.get(f"/api/v1/chart/{ids['chart']}")["result"]["slice_name"] == CHARTS[0].title


def test_grid_operator_reads_everything(users, database_id):
    op, admin = users["operator"], users["admin"]
    for sql in (
        "SELECT DISTINCT site FROM gold.site_efficiency_weekly ORDER BY site",
        "SELECT COUNT(*) AS n FROM grid.jobs",
        "SELECT COUNT(*) AS n FROM grid.network_cost_matrix",
    ):
        assert sql_rows(op, database_id, sql) == sql_rows(admin, database_id, sql), sql
    assert len(sql_rows(op, database_id, "SELECT DISTINCT site FROM grid.jobs")) == 4
    for chart in CHARTS[:12]:
        assert rows_key(op.chart_data(chart.uuid)["data"]) == rows_key(
            admin.chart_data(chart.uuid)["data"]
        ), chart.key
