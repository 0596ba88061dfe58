"""Superset over the grid views: the six dashboards in a real browser, chart data against
independent PyHive queries, the saved query contexts against what the dashboards ask for,
idempotent re-import and a lossless export -> import round trip of the asset bundle.

Superset lives in its own venv (infra/superset.sh), so these tests talk to it over HTTP only
(Playwright and the REST API). The session fixture ``superset`` (conftest) starts it for the test
instance with the demo week in the warehouse (``gold_demo``) behind its Thrift Server (``thrift``).
Access control has its own module (test_superset_access.py).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import time
import warnings
import zipfile
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import yaml

from gridlake.serving.superset_assets import (
    ASSETS_DIR,
    DASHBOARDS,
    DATABASE_UUID,
    DATASETS,
    chart_query_context,
    render_assets,
)
from gridlake.serving.views import VIEW_DIR

from .superset_helpers import (
    HEADER,
    REPO,
    SupersetAPI,
    browser_login,
    open_dashboard,
    superset_sh,
)

SCHEMA = "grid"
CHARTS = {c.key: c for d in DASHBOARDS for c in d.charts}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def load_build_bundle():
    spec = importlib.util.spec_from_file_location(
        "gridlake_build_bundle", REPO / "superset" / "build_bundle.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close(a, b, rel: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-9)


def as_date(value) -> date:
    """Superset returns temporal values as epoch milliseconds (UTC)."""
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value / 1000, tz=UTC).date()
    if isinstance(value, datetime):
        return value.date()
    return date.fromisoformat(str(value)[:10])


def as_datetime(value) -> datetime:
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value / 1000, tz=UTC).replace(tzinfo=None)
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime.fromisoformat(str(value)[:19])


def label(item) -> str:
    """Label of a metric or column in a query (a saved name, or an adhoc dict)."""
    if isinstance(item, dict):
        return item.get("label") or item.get("sqlExpression") or item.get("column_name")
    return item


# --- the assets and the bundle (no services) ------------------------------------------------------
def test_assets_are_current():
    wanted = render_assets()
    files = {
        p.relative_to(ASSETS_DIR).as_posix(): p.read_text() for p in ASSETS_DIR.rglob("*.yaml")
    }
    assert set(files) == set(wanted), "run `gridlake superset assets`"
    stale = [n for n in wanted if files[n] != wanted[n]]
    assert not stale, f"stale {stale}: run `gridlake superset assets`"


def test_bundle_templates_port_and_links_assets(tmp_path):
    bb = load_build_bundle()
    out = bb.build_bundle(12345, tmp_path / "bundle.zip")
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert {n.split("/", 1)[0] for n in names} == {bb.TOP_FOLDER}, names
        files = {n.split("/", 1)[1]: zf.read(n).decode() for n in names}
    # Superset's Thrift Server user; its password masked (given at import, never in a file)
    uri = "hive://superset:XXXXXXXXXX@127.0.0.1:12345/grid?auth=CUSTOM"
    assert uri in files["databases/gridlake.yaml"]
    assert "${" not in "".join(files.values())
    configs = bb.load_assets(12345)
    charts = {c["uuid"]: c for rel, c in configs.items() if rel.startswith("charts/")}
    assert set(charts) == {c.uuid for c in CHARTS.values()}
    dashboards = {d["slug"]: d for rel, d in configs.items() if rel.startswith("dashboards/")}
    assert set(dashboards) == {d.slug for d in DASHBOARDS}
    for dash in DASHBOARDS:
        layout = dashboards[dash.slug]["position"].values()
        in_layout = {
            n["meta"]["uuid"] for n in layout if isinstance(n, dict) and n["type"] == "CHART"
        }
        assert in_layout == {c.uuid for c in dash.charts}, dash.slug
    assert len(DASHBOARDS) == 6 and len(CHARTS) >= 30


def test_datasets_read_gold_grid_views_only():
    """Dashboards never scan silver (or a physical table): each dataset is a gold table's grid view
    (or the pipeline's own alerts', ops.alerts: a handful of rows), or SQL over gold views only.
    The other ops view, grid.sites (the site reference: report contacts), is no dataset."""
    gold_views = {p.stem for p in VIEW_DIR.glob("*.sql") if "FROM gold." in p.read_text()}
    ops_views = {p.stem for p in VIEW_DIR.glob("*.sql") if "FROM ops." in p.read_text()}
    assert ops_views == {"alerts", "sites"}
    assert "sites" not in {ds.name for ds in DATASETS}
    for ds in DATASETS:
        if ds.table is not None:
            assert ds.name in (gold_views | ops_views), ds.name
            assert ds.table.database == ("ops" if ds.name in ops_views else "gold"), ds.name
        else:
            refs = set(re.findall(r"\b(?:FROM|JOIN)\s+([\w.]+)", ds.sql or "", re.I))
            assert refs and all(r.startswith("grid.") and r[5:] in gold_views for r in refs), refs
    configs = load_build_bundle().load_assets(10000)
    for rel, cfg in configs.items():
        if rel.startswith("datasets/"):
            assert cfg["schema"] == SCHEMA and cfg["database_uuid"] == DATABASE_UUID, rel


def _expected_query(chart) -> tuple[list[str], list[str], list[tuple]]:
    """(metric labels, column labels, filters) a chart's query must hold, from its definition
    alone (not from the code that writes the query context)."""
    if chart.kind in ("big_number", "heatmap"):
        metrics = list(chart.metrics[:1])
    elif chart.kind == "raw_table":
        metrics = []
    else:
        metrics = list(chart.metrics)
    columns = {
        "raw_table": list(chart.columns),
        "line": [chart.x, *chart.series],
        "bar": [chart.x, *chart.series],
        "heatmap": [chart.x, *chart.series[:1]],
        "table": list(chart.series),
        "pie": list(chart.series),
    }.get(chart.kind, [])
    filters = [(col, op, value) for col, op, value in chart.where]
    if chart.x and chart.dataset.temporal(chart.x):
        filters.insert(0, (chart.x, "TEMPORAL_RANGE", "No filter"))
    return metrics, columns, filters


def test_charts_carry_a_query_context_consistent_with_their_params():
    """Each shipped chart file (what Superset imports and the dashboards run): its saved query
    context repeats the file's own params as form data, and its query and its params both ask
    for what the chart's definition says (metrics, axis and series, columns, filters)."""
    configs = load_build_bundle().load_assets(10000)
    shipped = {c["uuid"]: c for rel, c in configs.items() if rel.startswith("charts/")}
    for chart in CHARTS.values():
        cfg = shipped[chart.uuid]
        params, qc = cfg["params"], json.loads(cfg["query_context"])
        (query,) = qc["queries"]
        assert qc["form_data"] == params, chart.key
        assert params["viz_type"] == cfg["viz_type"] == chart.viz_type, chart.key
        metrics, columns, filters = _expected_query(chart)
        assert [label(m) for m in query["metrics"]] == metrics, chart.key
        assert [label(c) for c in query["columns"]] == columns, chart.key
        got = [(f["col"], f["op"], f.get("val")) for f in query["filters"]]
        assert got == filters, chart.key
        assert (query["extras"]["where"] != "") == bool(chart.where_sql), chart.key
        # the params (what the explore view and the dashboard render) say the same
        want_metrics = params.get("metrics") or ([params["metric"]] if "metric" in params else [])
        assert want_metrics == metrics, chart.key
        if chart.kind == "raw_table":
            assert params["all_columns"] == columns, chart.key
        elif chart.kind in ("line", "bar", "heatmap"):
            groupby = (
                params["groupby"] if isinstance(params["groupby"], list) else [params["groupby"]]
            )
            assert [params["x_axis"], *groupby] == columns, chart.key
        elif chart.kind in ("table", "pie"):
            assert params["groupby"] == columns, chart.key
        adhoc = [(f["subject"], f["operator"], f.get("comparator"))
                 for f in params["adhoc_filters"] if f["expressionType"] == "SIMPLE"]  # fmt: skip
        assert adhoc == filters, chart.key


def test_week_filters_open_on_the_latest_week_and_spare_the_trends():
    for dash in DASHBOARDS:
        for f in dash.filters:
            if f.column == "week":
                assert not f.multi and f.default_first and not f.ascending, dash.slug
    ops = next(d for d in DASHBOARDS if d.slug == "grid-operations")
    week = next(f for f in ops.filters if f.key == "week")
    trends = {c.key for c in ops.charts if c.x == "week"}
    assert trends and trends <= set(week.exclude)
    drill = next(d for d in DASHBOARDS if d.slug == "site-drilldown")
    assert {f.column for f in drill.filters} == {"site", "vo", "week"}


# Run in Superset's own venv: a fresh interpreter, so no dialect is loaded before the config is.
_DIALECT_RACE = r"""
import importlib.util, os, sys, threading
sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen any race
os.environ["SUPERSET_SECRET_KEY"] = "only-for-this-check"
import sqlglot
from sqlglot.dialects.dialect import Dialect
assert "hive" not in Dialect._classes, "hive loaded before the config"
spec = importlib.util.spec_from_file_location("superset_config", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
hive = Dialect._classes["hive"]
assert hive.tokenizer_class is hive.__dict__["Tokenizer"], "hive registered half set up"
sql = "SELECT `vo` AS `vo`, `vo` AS `vo` FROM grid.site_efficiency_weekly GROUP BY `vo`"
errors, gate = [], threading.Barrier(8)
def parse():
    gate.wait()
    try:
        sqlglot.parse(sql, dialect="hive")
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=parse) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
assert not errors, errors[0]
print("ok", len(Dialect._classes))
"""


def test_superset_config_loads_sql_dialects_before_requests():
    """sqlglot registers a dialect it loads lazily before setting it up, so concurrent first
    parses could use the base tokenizer on a hive query (a chart-data 422 under load): the
    config loads every dialect at worker start. Checked in a fresh Superset interpreter: the
    hive dialect is complete once the config is read, and 8 threads parse a hive query at once."""
    import os
    import subprocess

    home = Path(os.environ.get("GRIDLAKE_HOME") or REPO / ".gridlake")
    python = home / "superset-venv" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no Superset venv at {python} (make install)")
    config = REPO / "superset" / "superset_config.py"
    run = subprocess.run(
        [str(python), "-c", _DIALECT_RACE, str(config)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    loaded = int(run.stdout.split()[-1])
    assert loaded >= 30, run.stdout  # every bundled dialect, not just hive


# (sql, refused?) for gridlake's SQL guard: what Superset may send vs what it must not.
_GUARD_CASES = [
    ("SELECT `vo` AS `vo` FROM grid.site_efficiency_weekly GROUP BY `vo` LIMIT 1000", False),
    ("WITH w AS (SELECT site, jobs FROM grid.site_efficiency_weekly) SELECT site FROM w", False),
    ("SELECT site FROM grid.a UNION SELECT site FROM grid.b", False),
    (
        "SELECT date_trunc('week', week + interval '1 day') + interval '5 days' AS __timestamp, "
        "SUM(jobs) AS jobs FROM grid.site_efficiency_weekly WHERE week >= '2026-01-05' "
        "GROUP BY 1 ORDER BY jobs DESC LIMIT 10000",
        False,
    ),
    ("SELECT site FROM grid.t LATERAL VIEW explode(array(1)) e AS x", False),
    ("-- Superset's comment\nSELECT 1", False),
    ("DESCRIBE grid.site_efficiency_weekly", False),
    ("SET spark.sql.runSQLOnFiles=true", True),
    ("RESET", True),
    ("ADD JAR /tmp/x.jar", True),
    ("EXECUTE IMMEDIATE 'SELECT 1'", True),
    ("SELECT * FROM IDENTIFIER('silver.jobs')", True),
    ("SELECT * FROM grid.t VERSION AS OF 3", True),
    ("SELECT * FROM grid.t TIMESTAMP AS OF '2026-01-01'", True),
    ("SELECT * FROM grid.t@v3", True),
    ("SHOW CREATE TABLE grid.t", True),
    ("SHOW TABLES", True),
    ("DESCRIBE FORMATTED grid.t", True),
    ("SELECT TRANSFORM(site) USING 'cat /etc/passwd' AS (x) FROM grid.t", True),
    ("SELECT reflect('java.lang.System', 'getenv', 'X')", True),
    ("SELECT * FROM text.`/etc/passwd`", True),
    ("SELECT * FROM delta.`/warehouse/silver/jobs`", True),
    ("SELECT * FROM read_files('/etc')", True),
    ("SELECT * FROM range(10)", True),
    ("INSERT INTO grid.t SELECT 1", True),
    ("CREATE TABLE x AS SELECT 1", True),
    ("LOAD DATA INPATH '/x' INTO TABLE t", True),
    ("CACHE TABLE t", True),
    ("USE silver", True),
    ("SELECT 1; SET a=b", True),
    ("SELECT * FROM grid.t FOR SYSTEM_TIME AS OF 'x'", True),  # unparsable: denied
]

_GUARD = r"""
import importlib.util, json, os, sys
os.environ["SUPERSET_SECRET_KEY"] = "only-for-this-check"
spec = importlib.util.spec_from_file_location("superset_config", sys.argv[1])
config = importlib.util.module_from_spec(spec)
spec.loader.exec_module(config)
cases = json.load(sys.stdin)
print(json.dumps([config.gridlake_sql_refusal(sql) for sql, _ in cases]))
"""


def test_superset_sends_reads_only():
    """superset_config's SQL guard (SQL_QUERY_MUTATOR) on what dashboards and SQL Lab send:
    queries and a plain DESCRIBE pass, everything of issue 25's list is refused with a reason.
    The same through a live Superset, per role: test_superset_access.py."""
    import os
    import subprocess

    home = Path(os.environ.get("GRIDLAKE_HOME") or REPO / ".gridlake")
    python = home / "superset-venv" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no Superset venv at {python} (make install)")
    run = subprocess.run(
        [str(python), "-c", _GUARD, str(REPO / "superset" / "superset_config.py")],
        input=json.dumps(_GUARD_CASES),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    reasons = json.loads(run.stdout.strip().splitlines()[-1])
    wrong = [
        (sql, why) for (sql, refused), why in zip(_GUARD_CASES, reasons, strict=True)
        if refused != (why is not None)
    ]  # fmt: skip
    assert not wrong, wrong


def test_bundle_rejects_broken_reference(tmp_path):
    bb = load_build_bundle()
    assets = tmp_path / "assets"
    for path in bb.ASSETS_DIR.rglob("*.yaml"):
        target = assets / path.relative_to(bb.ASSETS_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    chart = assets / "charts" / "total_jobs.yaml"
    text = chart.read_text()
    assert "dataset_uuid: 6bc7848b-5fcc-59ec-b133-0a26c7c00266" in text
    chart.write_text(
        text.replace(
            "dataset_uuid: 6bc7848b-5fcc-59ec-b133-0a26c7c00266",
            "dataset_uuid: 00000000-0000-0000-0000-000000000000",
        )
    )
    with pytest.raises(bb.BundleError, match="dataset_uuid"):
        bb.build_bundle(10000, tmp_path / "bundle.zip", assets)


# --- fixtures over the running Superset -----------------------------------------------------
@pytest.fixture(scope="module")
def api(superset) -> SupersetAPI:
    return SupersetAPI(superset["url"], superset["user"], superset["password"])


@pytest.fixture(scope="module")
def hive_rows(superset):
    """run(sql) -> list of dicts: independent queries over PyHive, next to Superset."""
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


# --- (a) every dashboard in a real browser -----------------------------------------------------
CHART_STATES_JS = """() => {
  const charts = [...document.querySelectorAll('[data-test="chart-grid-component"]')];
  return charts.map(c => {
    const body = c.querySelector('[data-test="slice-container"]');
    const text = body ? body.innerText : '';
    return {
      name: c.getAttribute('data-test-chart-name'),
      viz: c.getAttribute('data-test-viz-type'),
      loading: !body || !!body.querySelector('[data-test="loading-indicator"]'),
      error: ((c.querySelector('.ant-alert-error, .alert-danger') || {}).innerText || '')
        .slice(0, 300) || null,
      noResults: /No results/i.test(text),
      canvas: body ? body.querySelectorAll('canvas').length : 0,
      rows: body ? body.querySelectorAll('table tbody tr').length : 0,
      number: body ? !!body.querySelector('.header-line') : false,
      text: text.slice(0, 200),
    };
  });
}"""


def settled(state: dict) -> bool:
    if state["error"] or state["noResults"]:
        return True
    return not state["loading"] and (state["canvas"] or state["rows"] or state["number"])


def is_timeout(state: dict) -> bool:
    """A chart whose query passed Superset's SUPERSET_WEBSERVER_TIMEOUT (not a query error)."""
    return bool(state["error"]) and state["error"].startswith("Timeout error")


def wait_settled(page, dash, limit_s: float = 300) -> list[dict]:
    """The dashboard's chart states once every chart drew or failed (within limit_s)."""
    deadline = time.monotonic() + limit_s
    while True:
        states = page.evaluate(CHART_STATES_JS)
        if len(states) >= len(dash.charts) and all(settled(s) for s in states):
            return states
        assert time.monotonic() < deadline, f"{dash.slug}: charts not settled {states}"
        page.wait_for_timeout(500)


def thrift_thread_dump(state: Path, shots: Path, slug: str) -> Path:
    """What the query path was doing, into shots/<slug>-thrift-threads.txt: the Thrift Server's
    threads (jstack, when it runs) and the last lines of its log and of Superset's (gunicorn's
    worker timeouts)."""
    out = shots / f"{slug}-thrift-threads.txt"
    parts = [f"load average: {os.getloadavg()}"]
    pid_file = state / "run" / "thrift.pid"
    if pid_file.exists() and shutil.which("jstack"):
        pid = pid_file.read_text().strip()
        done = subprocess.run(["jstack", pid], capture_output=True, text=True, timeout=60)
        parts.append(f"== jstack {pid}\n{done.stdout}{done.stderr}")
    for name in ("thrift.log", "superset.log"):
        log_file = state / "logs" / name
        if log_file.exists():
            tail = log_file.read_text(errors="replace").splitlines()[-200:]
            parts.append(f"== {log_file} (last 200 lines)\n" + "\n".join(tail))
    out.write_text("\n\n".join(parts) + "\n")
    return out


@pytest.mark.integration
@pytest.mark.slow
def test_dashboards_render_in_browser(superset, api):
    """Log in with headless Chromium, open every dashboard, wait for all its charts, assert none
    shows an error or "No results", save a screenshot per dashboard; and check that each chart's
    saved query context asks for the metrics and columns the dashboard itself asks for."""
    from playwright.sync_api import sync_playwright

    shots = superset["settings"].state / "screenshots"  # .gridlake/<instance>/screenshots
    shots.mkdir(parents=True, exist_ok=True)
    base = superset["url"]
    responses: list[tuple[int, str]] = []
    requests_seen: list[dict] = []
    report = {}

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            page.on(
                "response",
                lambda r: responses.append((r.status, r.url)) if "/api/v1/chart/data" in r.url
                else None,
            )  # fmt: skip
            page.on(
                "request",
                lambda r: requests_seen.append(json.loads(r.post_data))
                if "/api/v1/chart/data" in r.url and r.method == "POST" and r.post_data
                else None,
            )  # fmt: skip
            browser_login(page, base, superset["user"], superset["password"], shots)

            for dash in DASHBOARDS:
                shot = shots / f"{dash.slug}.png"
                shot.unlink(missing_ok=True)
                started = time.monotonic()
                open_dashboard(
                    page, f"{base}/superset/dashboard/{dash.slug}/", dash.slug, shots,
                    relogin=lambda: browser_login(page, base, superset["user"],
                                                  superset["password"], shots),
                )  # fmt: skip
                header = page.inner_text('[data-test="dashboard-header-container"]')
                assert dash.title in header, header
                states = wait_settled(page, dash)
                timed_out = [s["name"] for s in states if is_timeout(s)]
                if timed_out:
                    # Superset's own 120 s limit, on a machine running both CI shards (one CI
                    # run, 2026-12-01, load 5: one chart of cpu-models; its six others had
                    # answered). What the query server was doing is kept; the dashboard is
                    # opened once more, and a chart failing again fails the test.
                    dump = thrift_thread_dump(superset["settings"].state, shots, dash.slug)
                    msg = (
                        f"{dash.slug}: {timed_out} hit Superset's 120 s limit (load "
                        f"{os.getloadavg()[0]:.1f}); Thrift threads in {dump}; opening it again"
                    )
                    print(f"[superset] {msg}")
                    warnings.warn(msg, stacklevel=1)
                    page.reload(wait_until="domcontentloaded")
                    page.wait_for_selector(HEADER, timeout=240_000)
                    states = wait_settled(page, dash)
                seconds = time.monotonic() - started
                page.wait_for_timeout(1500)  # let the ECharts animations finish
                states = page.evaluate(CHART_STATES_JS)
                page.screenshot(path=str(shot), full_page=True)
                report[dash.slug] = (seconds, states, shot)
        finally:
            browser.close()

    for slug, (seconds, states, shot) in report.items():
        dash = next(d for d in DASHBOARDS if d.slug == slug)
        print(f"{slug}: {len(states)} charts in {seconds:.1f}s -> {shot}")
        assert len(states) == len(dash.charts), (slug, states)
        assert {s["name"] for s in states} == {c.title for c in dash.charts}, slug
        bad = [s for s in states if s["error"] or s["noResults"]]
        assert not bad, f"{slug}: charts with an error or no results: {bad}"
        for s in states:
            if s["viz"] == "big_number_total":
                assert s["number"] and any(ch.isdigit() for ch in s["text"]), (slug, s)
            elif s["viz"] == "table":
                assert s["rows"] >= 1, (slug, s)
            else:
                assert s["canvas"] >= 1, (slug, s)
        assert shot.stat().st_size > 30_000, f"{shot}: screenshot missing or blank"
    failed = [(status, url) for status, url in responses if status != 200]
    assert responses and not failed, f"chart data requests failed: {failed}"

    # The saved query context asks for what the dashboard renders (metrics and columns).
    by_id = {}
    for body in requests_seen:
        slice_id = body.get("form_data", {}).get("slice_id")
        if slice_id:
            by_id[slice_id] = body["queries"][0]
    checked = 0
    for chart in CHARTS.values():
        query = by_id.get(api.chart_id(chart.uuid))
        assert query is not None, f"{chart.key}: the dashboard did not query it"
        (saved,) = chart_query_context(chart)["queries"]
        assert {label(m) for m in query.get("metrics") or []} == {
            label(m) for m in saved["metrics"]
        }, chart.key
        assert {label(c) for c in query.get("columns") or []} == {
            label(c) for c in saved["columns"]
        }, (
            chart.key,
            query["columns"],
            saved["columns"],
        )
        checked += 1
    assert checked == len(CHARTS)


# --- (b) chart data through the REST API ----------------------------------------------------------
@pytest.mark.integration
@pytest.mark.slow
def test_every_chart_returns_data_through_the_api(api):
    """GET /api/v1/chart/{id}/data/ runs each chart's saved query context (what thumbnails,
    alerts and reports use): no error and rows on the demo week."""
    empty = []
    for chart in CHARTS.values():
        result = api.chart_data(chart.uuid)
        if not result["data"]:
            empty.append(chart.key)
    assert not empty, f"charts without data on the demo week: {empty}"


@pytest.mark.integration
@pytest.mark.slow
def test_chart_data_matches_pyhive(api, hive_rows):
    t = f"{SCHEMA}.site_efficiency_weekly"
    total = hive_rows(f"SELECT SUM(jobs) AS jobs, COUNT(*) AS n FROM {t}")[0]
    assert total["n"] > 0, f"{t} is empty"
    assert api.chart_data(CHARTS["total_jobs"].uuid)["data"] == [{"jobs": total["jobs"]}]

    want = {
        r["site"]: r
        for r in hive_rows(
            f"SELECT site, SUM(core_hours) AS core_hours, SUM(wasted_core_hours) AS wasted, "
            f"SUM(cpu_hours) / SUM(core_hours) AS eff FROM {t} GROUP BY site"
        )
    }
    bar = api.chart_data(CHARTS["core_hours_vs_wasted_by_site"].uuid)["data"]
    assert {r["site"] for r in bar} == set(want)
    for r in bar:
        assert close(r["core_hours"], want[r["site"]]["core_hours"])
        assert close(r["wasted_core_hours"], want[r["site"]]["wasted"])
    assert [r["core_hours"] for r in bar] == sorted((r["core_hours"] for r in bar), reverse=True)
    eff = api.chart_data(CHARTS["cpu_efficiency_by_site"].uuid)["data"]
    assert {r["site"]: r["cpu_efficiency"] for r in eff} == pytest.approx(
        {s: w["eff"] for s, w in want.items()}, rel=1e-9
    )
    assert [r["cpu_efficiency"] for r in eff] == sorted(r["cpu_efficiency"] for r in eff)

    # weekly trend: weeks truncated to Mondays by the P1W grain
    want = {
        (as_date(r["week"]), r["vo"]): r["eff"]
        for r in hive_rows(
            f"SELECT week, vo, SUM(cpu_hours) / SUM(core_hours) AS eff FROM {t} GROUP BY week, vo"
        )
    }
    trend = api.chart_data(CHARTS["efficiency_trend_by_vo"].uuid)["data"]
    got = {(as_date(r["week"]), r["vo"]): r["cpu_efficiency"] for r in trend}
    assert got == pytest.approx(want, rel=1e-9)
    assert all(week.isoweekday() == 1 for week, _ in got)

    # cost matrix heat map: one cell per source and destination
    want = {
        (r["src_site"], r["dst_site"]): r["cost"]
        for r in hive_rows(
            "SELECT src_site, dst_site, AVG(cost_seconds_per_gb) AS cost "
            "FROM grid.network_cost_matrix GROUP BY src_site, dst_site"
        )
    }
    cells = api.chart_data(CHARTS["cost_matrix_heatmap"].uuid)["data"]
    assert {(r["src_site"], r["dst_site"]): r["cost_s_per_gb"] for r in cells} == pytest.approx(
        want, rel=1e-9
    )

    # link status timeline: congested share per link and hour, the 10 most congested links
    rows = hive_rows(
        "SELECT concat(src_site, ' > ', dst_site) AS link, hour, "
        "SUM(congested_intervals) / SUM(intervals) AS share "
        "FROM grid.network_link_hourly GROUP BY 1, 2"
    )
    timeline = api.chart_data(CHARTS["link_congestion_timeline"].uuid)["data"]
    got = {(r["link"], as_datetime(r["hour"])): r["congested_share"] for r in timeline}
    links = {link for link, _ in got}
    assert len(links) == min(10, len({r["link"] for r in rows}))
    want = {(r["link"], as_datetime(r["hour"])): r["share"] for r in rows if r["link"] in links}
    assert got == pytest.approx(want, rel=1e-9)
    worst = max(rows, key=lambda r: r["share"])["link"]
    assert worst in links  # the congested link is among the series shown

    # failure probability curves
    want = {
        (r["job_type"], r["bin_index"]): r["p"]
        for r in hive_rows(
            "SELECT job_type, bin_index, SUM(failures) / SUM(attempts) AS p "
            "FROM grid.failure_vs_duration WHERE failure_mode = 'ALL' GROUP BY 1, 2"
        )
    }
    curves = api.chart_data(CHARTS["failure_probability_curves"].uuid)["data"]
    got = {(r["job_type"], int(r["duration"][:2])): r["failure_probability"] for r in curves}
    assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.integration
@pytest.mark.slow
def test_sql_lab_lists_the_grid_views(api):
    """Spark answers SHOW TABLES with (namespace, tableName, isTemporary): the config's
    FLASK_APP_MUTATOR makes Superset list view names, not the database name."""
    (db,) = api.find_by_uuid("database", DATABASE_UUID)
    tables = api.get(f"/api/v1/database/{db['id']}/tables/", q=f"(schema_name:{SCHEMA},force:!t)")
    names = {t["value"] for t in tables["result"]}
    assert {"site_efficiency_weekly", "network_link_hourly"} <= names, names
    assert SCHEMA not in names, names


# --- (c) re-import overwrites in place; export -> import is lossless -------------------------
@pytest.mark.integration
@pytest.mark.slow
def test_reimport_is_idempotent(superset, api):
    resources = ("database", "dataset", "chart", "dashboard")
    before = {r: api.count(r) for r in resources}
    ids = {key: api.chart_id(c.uuid) for key, c in CHARTS.items()}

    (db,) = api.find_by_uuid("database", DATABASE_UUID)
    uri = api.get(f"/api/v1/database/{db['id']}/connection")["result"]["sqlalchemy_uri"]
    port = superset["settings"].thrift_port
    assert uri == f"hive://superset:XXXXXXXXXX@127.0.0.1:{port}/{SCHEMA}?auth=CUSTOM", uri

    # Tamper with a chart and a dashboard: the import must put them back.
    chart_id = ids["total_jobs"]
    original = api.get(f"/api/v1/chart/{chart_id}")["result"]["slice_name"]
    api.put(f"/api/v1/chart/{chart_id}", {"slice_name": "tampered"})
    dash = DASHBOARDS[0]
    (row,) = api.find_by_uuid("dashboard", dash.uuid)
    api.put(f"/api/v1/dashboard/{row['id']}", {"dashboard_title": "tampered"})
    assert api.get(f"/api/v1/chart/{chart_id}")["result"]["slice_name"] == "tampered"

    result = superset_sh("import", timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]

    assert {r: api.count(r) for r in resources} == before
    assert {key: api.chart_id(c.uuid) for key, c in CHARTS.items()} == ids
    assert api.get(f"/api/v1/chart/{chart_id}")["result"]["slice_name"] == original
    dashboard = api.get(f"/api/v1/dashboard/{dash.slug}")["result"]
    assert dashboard["dashboard_title"] == dash.title and dashboard["id"] == row["id"]
    charts = api.get(f"/api/v1/dashboard/{dash.slug}/charts")["result"]
    assert sorted(c["id"] for c in charts) == sorted(ids[c.key] for c in dash.charts)


def _by_uuid(files: dict[str, str]) -> dict[str, tuple[str, dict]]:
    out = {}
    for name, text in files.items():
        if name == "metadata.yaml":
            continue
        cfg = yaml.safe_load(text)
        out[str(cfg["uuid"])] = (name.split("/", 1)[0], cfg)
    return out


def _normalise(kind: str, cfg: dict, chart_uuid_by_id: dict[int, str]) -> dict:
    """Drop what names this instance's numeric ids (they differ between instances by design)."""
    cfg = copy.deepcopy(cfg)
    if kind == "charts":
        cfg["params"].pop("datasource", None)
        qc = json.loads(cfg["query_context"])
        qc.pop("datasource", None)
        qc.get("form_data", {}).pop("datasource", None)
        cfg["query_context"] = qc
    if kind == "dashboards":
        for node in cfg["position"].values():
            if isinstance(node, dict) and node.get("type") == "CHART":
                node["meta"].pop("chartId", None)
        for flt in cfg["metadata"].get("native_filter_configuration", []):
            excluded = flt.get("scope", {}).get("excluded", [])
            flt["scope"]["excluded"] = sorted(chart_uuid_by_id[i] for i in excluded)
    return cfg


def _subset_diffs(ours, theirs, path: str = "") -> list[str]:
    """Where `theirs` lacks or changes something `ours` states (extra keys in theirs are fine)."""
    if isinstance(ours, dict):
        if not isinstance(theirs, dict):
            return [f"{path}: {theirs!r} is not a mapping"]
        return [d for k, v in ours.items() for d in _subset_diffs(v, theirs.get(k), f"{path}.{k}")]
    if isinstance(ours, list):
        if not isinstance(theirs, list) or len(ours) != len(theirs):
            return [f"{path}: {ours!r} != {theirs!r}"]
        for key in ("metric_name", "column_name"):  # exported in another order
            if ours and all(isinstance(x, dict) and key in x for x in ours + theirs):
                theirs_by = {x[key]: x for x in theirs}
                pairs = [(x, theirs_by.get(x[key]), f"{path}[{x[key]}]") for x in ours]
                return [d for x, y, where in pairs for d in _subset_diffs(x, y, where)]
        return [d for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
                for d in _subset_diffs(a, b, f"{path}[{i}]")]  # fmt: skip
    empty = (None, "", {}, "{}")  # an empty JSON object may come back as null
    if ours != theirs and not (ours in empty and theirs in empty):
        return [f"{path}: {ours!r} != {theirs!r}"]
    return []


@pytest.mark.integration
@pytest.mark.slow
def test_export_import_round_trip_is_lossless(superset, api):
    """Export the assets, import the export back, export again: the two exports are the same
    file for file, and every field of the source YAML survived (ids aside)."""
    first = api.export_assets()
    result = api.import_assets(first)
    assert result == {"message": "OK"}, result
    second = api.export_assets()
    first.pop("metadata.yaml"), second.pop("metadata.yaml")  # export timestamps only
    assert set(first) == set(second)
    changed = [n for n in first if first[n] != second[n]]
    assert not changed, f"export -> import -> export changed {changed}"

    # the source bundle (as built for this instance) is contained in the export
    bb = load_build_bundle()
    source = bb.load_assets(superset["settings"].thrift_port)
    exported = _by_uuid(first)
    ids = {}
    for kind, cfg in exported.values():
        if kind == "dashboards":
            for node in cfg["position"].values():
                if isinstance(node, dict) and node.get("type") == "CHART":
                    ids[node["meta"]["chartId"]] = node["meta"]["uuid"]
    ours_by_uuid = {str(cfg["uuid"]): (rel.split("/", 1)[0], cfg) for rel, cfg in source.items()
                    if rel != "metadata.yaml"}  # fmt: skip
    assert set(ours_by_uuid) <= set(exported), set(ours_by_uuid) - set(exported)
    for uid, (kind, ours) in ours_by_uuid.items():
        theirs = _normalise(kind, exported[uid][1], ids)
        ours = _normalise(kind, ours, {i: i for i in range(1000)})
        if kind == "dashboards":
            # our filter scopes name layout positions (1, 2, ...): map them to chart uuids
            pos = {n["meta"]["chartId"]: n["meta"]["uuid"] for n in source_positions(source, uid)}
            for flt in ours["metadata"].get("native_filter_configuration", []):
                flt["scope"]["excluded"] = sorted(pos[i] for i in flt["scope"]["excluded"])
                for target in flt["targets"]:
                    target.pop("datasetUuid")
            for flt in theirs["metadata"].get("native_filter_configuration", []):
                for target in flt["targets"]:
                    target.pop("datasetId", None)
        if kind == "databases":
            ours["extra"].pop("schemas_allowed_for_file_upload", None)
            ours.pop("allow_file_upload", None)
        diffs = _subset_diffs(ours, theirs)
        assert not diffs, f"{kind} {uid} lost on export: {diffs[:10]}"


def source_positions(source: dict, uid: str) -> list[dict]:
    (cfg,) = [c for rel, c in source.items() if rel.startswith("dashboards/") and c["uuid"] == uid]
    return [n for n in cfg["position"].values() if isinstance(n, dict) and n.get("type") == "CHART"]
