"""Superset over the gold layer: the dashboard in a real browser, chart data against an independent
PyHive query, and an idempotent re-import of the asset bundle.

Superset lives in its own venv (infra/superset.sh), so it is driven through that script; these tests
only talk to it over HTTP (Playwright and the REST API). The module fixture `superset` starts it for
instance `test` (ports +100: Superset 8188, Thrift 10100) and stops it again only if it started it.
Depends on conftest's `gold_demo` (the demo week through the pipeline: gold.site_efficiency_weekly
has rows) and `thrift` (the Spark Thrift Server of the instance serves it).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import time
import zipfile
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import requests

from gridlake.settings import get_settings

REPO = Path(__file__).resolve().parent.parent
SUPERSET_SH = REPO / "infra" / "superset.sh"
DASHBOARD_SLUG = "grid-operations"
SCHEMA = os.environ.get("GRIDLAKE_SUPERSET_SCHEMA", "gold")
TABLE = f"{SCHEMA}.site_efficiency_weekly"
# Fixed uuids of superset/assets/charts/*.yaml
CHART_UUIDS = {
    "cpu_efficiency": "9d737ec0-9b15-5287-a87b-f355d54d89b4",
    "core_hours": "a21683a4-5309-5d0d-9a1c-7902eb9498c5",
    "site_vo_table": "dc4164e0-ee6d-5459-952e-621a62c5ba11",
    "total_jobs": "e5e0e71c-d86d-5fb6-bb4d-f91f9f57177c",
}
DASHBOARD_UUID = "80abdfbf-bce2-551c-94c5-192f42b24b52"
DATABASE_UUID = "7ca962d9-2f42-5a18-b5d0-6f71cbf50dc0"
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


def superset_sh(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SUPERSET_SH), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def read_admin_login(path: Path) -> tuple[str, str]:
    fields = dict(line.split(": ", 1) for line in path.read_text().splitlines() if ": " in line)
    return fields["user"].strip(), fields["password"].strip()


class SupersetAPI:
    """Minimal REST client: JWT for reads, plus session cookie and CSRF token for writes."""

    def __init__(self, base_url: str, user: str, password: str):
        self.base = base_url.rstrip("/")
        self.http = requests.Session()
        resp = self.http.post(
            f"{self.base}/api/v1/security/login",
            json={"username": user, "password": password, "provider": "db", "refresh": False},
            timeout=60,
        )
        resp.raise_for_status()
        self.http.headers["Authorization"] = f"Bearer {resp.json()['access_token']}"
        csrf = self.get("/api/v1/security/csrf_token/")["result"]
        self.http.headers.update({"X-CSRFToken": csrf, "Referer": self.base + "/"})

    def get(self, path: str, **params) -> dict:
        resp = self.http.get(self.base + path, params=params or None, timeout=180)
        assert resp.status_code == 200, f"GET {path}: {resp.status_code} {resp.text[:2000]}"
        return resp.json()

    def put(self, path: str, body: dict) -> dict:
        resp = self.http.put(self.base + path, json=body, timeout=60)
        assert resp.status_code == 200, f"PUT {path}: {resp.status_code} {resp.text[:2000]}"
        return resp.json()

    def count(self, resource: str) -> int:
        return self.get(f"/api/v1/{resource}/", q="(page_size:1)")["count"]

    def find_by_uuid(self, resource: str, uuid: str) -> list[dict]:
        """Objects of `resource` with this uuid (the list API filters on it; checked again here)."""
        rows = self.get(
            f"/api/v1/{resource}/",
            q=f"(columns:!(id,uuid),filters:!((col:uuid,opr:eq,value:'{uuid}')),page_size:100)",
        )["result"]
        return [r for r in rows if str(r.get("uuid")) == uuid]

    def chart_id(self, uuid: str) -> int:
        rows = self.find_by_uuid("chart", uuid)
        assert len(rows) == 1, f"chart {uuid}: {len(rows)} found"
        return rows[0]["id"]

    def chart_data(self, uuid: str) -> dict:
        """GET /api/v1/chart/{id}/data/ (runs the saved query_context), bypassing the cache."""
        result = self.get(f"/api/v1/chart/{self.chart_id(uuid)}/data/", force="true")["result"]
        assert len(result) == 1, result
        assert not result[0].get("error"), str(result[0]["error"])[:1000]
        return result[0]


@pytest.fixture(scope="module")
def superset(gold_demo, thrift):
    """Superset of the test instance, started here unless it already runs; assets imported."""
    settings = get_settings()
    assert settings.instance != "demo", "the tests never run on the demo instance"
    pid_file = settings.state / "run" / "superset.pid"
    was_running = "running" in superset_sh("status").stdout
    started = superset_sh("start", timeout=1500)
    assert started.returncode == 0, started.stdout[-6000:]
    pid = pid_file.read_text().strip()
    user, password = read_admin_login(settings.state / "secrets" / "superset_admin.txt")
    info = {
        "url": f"http://127.0.0.1:{settings.superset_port}",
        "user": user,
        "password": password,
        "settings": settings,
        "pid": pid,
    }
    yield info
    if not was_running and pid_file.exists() and pid_file.read_text().strip() == pid:
        stopped = superset_sh("stop", timeout=120)
        assert stopped.returncode == 0, stopped.stdout


@pytest.fixture(scope="module")
def api(superset) -> SupersetAPI:
    return SupersetAPI(superset["url"], superset["user"], superset["password"])


@pytest.fixture(scope="module")
def hive_rows(superset):
    """run(sql) -> list of dicts: independent queries over PyHive, next to Superset."""
    from pyhive import hive

    conn = hive.connect(
        host="127.0.0.1", port=superset["settings"].thrift_port, username="gridlake"
    )

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
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def load_build_bundle():
    spec = importlib.util.spec_from_file_location(
        "gridlake_build_bundle", REPO / "superset" / "build_bundle.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the bundle (no services needed) -------------------------------------------------------------
def test_bundle_templates_port_and_links_assets(tmp_path):
    bb = load_build_bundle()
    out = bb.build_bundle(12345, tmp_path / "bundle.zip")
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert {n.split("/", 1)[0] for n in names} == {bb.TOP_FOLDER}, names
        files = {n.split("/", 1)[1]: zf.read(n).decode() for n in names}
    assert "hive://gridlake@127.0.0.1:12345/gold" in files["databases/gridlake.yaml"]
    assert "${" not in "".join(files.values())
    charts = bb.load_assets(12345)
    chart_files = [c for rel, c in charts.items() if rel.startswith("charts/")]
    assert {c["uuid"] for c in chart_files} == set(CHART_UUIDS.values())
    for chart in chart_files:
        query_context = json.loads(chart["query_context"])
        assert query_context["queries"]
        assert query_context["form_data"]["viz_type"] == chart["viz_type"]
    (dashboard,) = [c for rel, c in charts.items() if rel.startswith("dashboards/")]
    assert dashboard["slug"] == DASHBOARD_SLUG and dashboard["uuid"] == DASHBOARD_UUID
    in_layout = {
        n["meta"]["uuid"]
        for n in dashboard["position"].values()
        if isinstance(n, dict) and n.get("type") == "CHART"
    }
    assert in_layout == set(CHART_UUIDS.values())


def test_bundle_rejects_broken_reference(tmp_path):
    bb = load_build_bundle()
    assets = tmp_path / "assets"
    for path in bb.ASSETS_DIR.rglob("*.yaml"):
        target = assets / path.relative_to(bb.ASSETS_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    chart = assets / "charts" / "total_jobs.yaml"
    chart.write_text(
        chart.read_text().replace(
            "dataset_uuid: 6bc7848b-5fcc-59ec-b133-0a26c7c00266",
            "dataset_uuid: 00000000-0000-0000-0000-000000000000",
        )
    )
    with pytest.raises(bb.BundleError, match="dataset_uuid"):
        bb.build_bundle(10000, tmp_path / "bundle.zip", assets)


# --- (a) the dashboard in a real browser ---------------------------------------------------------
CHARTS_SETTLED_JS = """(want) => {
  const charts = [...document.querySelectorAll('[data-test="chart-grid-component"]')];
  if (charts.length < want) return false;
  return charts.every(c => {
    if (c.querySelector('.ant-alert-error, .alert-danger')) return true;
    const body = c.querySelector('[data-test="slice-container"]');
    if (!body || body.querySelector('[data-test="loading-indicator"]')) return false;
    return !!body.querySelector('canvas, svg, table tbody tr, .header-line');
  });
}"""

CHART_STATES_JS = """() => {
  const charts = [...document.querySelectorAll('[data-test="chart-grid-component"]')];
  return charts.map(c => {
  const body = c.querySelector('[data-test="slice-container"]');
  return {
    name: c.getAttribute('data-test-chart-name'),
    viz: c.getAttribute('data-test-viz-type'),
    error: ((c.querySelector('.ant-alert-error, .alert-danger') || {}).innerText || '')
      .slice(0, 300) || null,
    canvas: body ? body.querySelectorAll('canvas').length : 0,
    svg: body ? body.querySelectorAll('svg').length : 0,
    rows: body ? body.querySelectorAll('table tbody tr').length : 0,
    text: body ? body.innerText.slice(0, 200) : '',
  };
  });
}"""


@pytest.mark.integration
@pytest.mark.slow
def test_dashboard_renders_in_browser(superset):
    from playwright.sync_api import sync_playwright

    shots = superset["settings"].state / "screenshots"  # $GRIDLAKE_HOME/test/screenshots
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "grid_operations.png"
    shot.unlink(missing_ok=True)
    base = superset["url"]
    chart_responses: list[tuple[int, str]] = []
    console_errors: list[str] = []

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1100})
            page.on(
                "response",
                lambda r: (
                    chart_responses.append((r.status, r.url))
                    if "/api/v1/chart/data" in r.url
                    else None
                ),
            )
            page.on(
                "console", lambda m: console_errors.append(m.text) if m.type == "error" else None
            )
            page.goto(f"{base}/login/", wait_until="domcontentloaded")
            page.fill('[data-test="username-input"]', superset["user"])
            page.fill('[data-test="password-input"]', superset["password"])
            page.click('[data-test="login-button"]')
            page.wait_for_url("**/superset/welcome/**", timeout=60_000)

            started = time.monotonic()
            page.goto(f"{base}/superset/dashboard/{DASHBOARD_SLUG}/", wait_until="domcontentloaded")
            page.wait_for_selector('[data-test="dashboard-header-container"]', timeout=60_000)
            assert "Grid operations" in page.inner_text('[data-test="dashboard-header-container"]')
            page.wait_for_function(
                CHARTS_SETTLED_JS, arg=len(CHART_UUIDS), timeout=180_000, polling=500
            )
            seconds = time.monotonic() - started
            page.wait_for_timeout(1500)  # let the ECharts animations finish for the screenshot
            states = page.evaluate(CHART_STATES_JS)
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()

    print(f"dashboard rendered in {seconds:.1f}s: {states}")
    assert len(states) == len(CHART_UUIDS), states
    errors = [s for s in states if s["error"]]
    assert not errors, f"charts in error state: {errors}"
    for state in states:
        if state["viz"].startswith("echarts_"):
            assert state["canvas"] >= 1, f"no ECharts canvas: {state}"
        elif state["viz"] == "table":
            assert state["rows"] >= 1, f"empty table: {state}"
        elif state["viz"] == "big_number_total":
            assert any(ch.isdigit() for ch in state["text"]), f"no number: {state}"
        else:
            pytest.fail(f"unexpected chart type: {state}")
    assert chart_responses, "the browser made no chart data request"
    bad = [(status, url) for status, url in chart_responses if status != 200]
    assert not bad, f"chart data requests failed: {bad}"
    assert shot.stat().st_size > 20_000, "screenshot missing or blank"


# --- (b) chart data through the REST API equals an independent PyHive query --------------------
@pytest.mark.integration
@pytest.mark.slow
def test_chart_data_matches_pyhive(api, hive_rows):
    # Big number: total jobs
    total = hive_rows(f"SELECT SUM(jobs) AS jobs, COUNT(*) AS n FROM {TABLE}")[0]
    assert total["n"] > 0, f"{TABLE} is empty"
    big = api.chart_data(CHART_UUIDS["total_jobs"])
    assert big["data"] == [{"jobs": total["jobs"]}], big["data"]

    # Bar chart: core-hours and wasted core-hours per site
    want = {
        r["site"]: r
        for r in hive_rows(
            f"SELECT site, SUM(core_hours) AS core_hours, SUM(wasted_core_hours) AS wasted "
            f"FROM {TABLE} GROUP BY site"
        )
    }
    bar = api.chart_data(CHART_UUIDS["core_hours"])
    got = {r["site"]: r for r in bar["data"]}
    assert set(got) == set(want)
    for site, row in want.items():
        assert close(got[site]["core_hours"], row["core_hours"]), (site, got[site], row)
        assert close(got[site]["wasted_core_hours"], row["wasted"]), (site, got[site], row)
    hours = [r["core_hours"] for r in bar["data"]]
    assert hours == sorted(hours, reverse=True), "bars are not sorted by core-hours"

    # Line chart: weekly CPU efficiency per site, weeks truncated to Mondays by the P1W grain
    want = {
        (as_date(r["week"]), r["site"]): r["eff"]
        for r in hive_rows(
            f"SELECT week, site, SUM(cpu_hours) / NULLIF(SUM(core_hours), 0) AS eff "
            f"FROM {TABLE} GROUP BY week, site"
        )
    }
    line = api.chart_data(CHART_UUIDS["cpu_efficiency"])
    got = {(as_date(r["week"]), r["site"]): r["cpu_efficiency"] for r in line["data"]}
    assert set(got) == set(want)
    assert all(week.isoweekday() == 1 for week, _ in got), "weekly grain gave non-Mondays"
    for key, eff in want.items():
        assert close(got[key], eff), (key, got[key], eff)

    # Table: totals and ratios per site and VO
    want = {
        (r["site"], r["vo"]): r
        for r in hive_rows(
            f"SELECT site, vo, SUM(jobs) AS jobs, SUM(failed_jobs) AS failed_jobs, "
            f"SUM(core_hours) AS core_hours, SUM(wasted_core_hours) AS wasted_core_hours, "
            f"SUM(cpu_hours) / NULLIF(SUM(core_hours), 0) AS cpu_efficiency, "
            f"SUM(failed_jobs) / NULLIF(SUM(jobs), 0) AS failure_rate "
            f"FROM {TABLE} GROUP BY site, vo"
        )
    }
    table = api.chart_data(CHART_UUIDS["site_vo_table"])
    got = {(r["site"], r["vo"]): r for r in table["data"]}
    assert set(got) == set(want)
    for key, row in want.items():
        for col in ("jobs", "failed_jobs"):
            assert got[key][col] == row[col], (key, col, got[key], row)
        for col in ("core_hours", "wasted_core_hours", "cpu_efficiency", "failure_rate"):
            assert close(got[key][col], row[col]), (key, col, got[key], row)
    assert sum(r["jobs"] for r in table["data"]) == total["jobs"]


@pytest.mark.integration
@pytest.mark.slow
def test_sql_lab_lists_the_gold_tables(api):
    """Spark answers SHOW TABLES with (namespace, tableName, isTemporary): the config's
    FLASK_APP_MUTATOR makes Superset list table names, not the database name."""
    (db,) = api.find_by_uuid("database", DATABASE_UUID)
    tables = api.get(f"/api/v1/database/{db['id']}/tables/", q=f"(schema_name:{SCHEMA},force:!t)")
    names = {t["value"] for t in tables["result"]}
    assert "site_efficiency_weekly" in names, names
    assert SCHEMA not in names, names


# --- (c) re-import overwrites in place ---------------------------------------------------------
@pytest.mark.integration
@pytest.mark.slow
def test_reimport_is_idempotent(superset, api):
    resources = ("database", "dataset", "chart", "dashboard")
    before = {r: api.count(r) for r in resources}
    ids = {name: api.chart_id(uuid) for name, uuid in CHART_UUIDS.items()}

    # The database points at this instance's Thrift Server.
    (db,) = api.find_by_uuid("database", DATABASE_UUID)
    uri = api.get(f"/api/v1/database/{db['id']}/connection")["result"]["sqlalchemy_uri"]
    port = superset["settings"].thrift_port
    assert uri == f"hive://gridlake@127.0.0.1:{port}/{SCHEMA}", uri

    # Tamper with a chart and the dashboard: the import must put them back.
    chart_id = ids["total_jobs"]
    original = api.get(f"/api/v1/chart/{chart_id}")["result"]["slice_name"]
    api.put(f"/api/v1/chart/{chart_id}", {"slice_name": "tampered"})
    (dash,) = api.find_by_uuid("dashboard", DASHBOARD_UUID)
    api.put(f"/api/v1/dashboard/{dash['id']}", {"dashboard_title": "tampered"})
    assert api.get(f"/api/v1/chart/{chart_id}")["result"]["slice_name"] == "tampered"

    result = superset_sh("import", timeout=300)
    assert result.returncode == 0, result.stdout[-4000:]

    after = {r: api.count(r) for r in resources}
    assert after == before, f"object counts changed on re-import: {before} -> {after}"
    assert {name: api.chart_id(uuid) for name, uuid in CHART_UUIDS.items()} == ids
    assert api.get(f"/api/v1/chart/{chart_id}")["result"]["slice_name"] == original
    dashboard = api.get(f"/api/v1/dashboard/{DASHBOARD_SLUG}")["result"]
    assert dashboard["dashboard_title"] == "Grid operations"
    assert dashboard["id"] == dash["id"]
    charts = api.get(f"/api/v1/dashboard/{DASHBOARD_SLUG}/charts")["result"]
    assert sorted(c["id"] for c in charts) == sorted(ids.values())
