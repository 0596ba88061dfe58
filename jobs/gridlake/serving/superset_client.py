"""A small client of Superset's REST API: log in, and send each dashboard's chart queries as the
browser sends them when the dashboard opens (its default native filters applied).

Used by ``gridlake superset warm`` (the demo runs it once the gold tables are written, so that the
first person to open a dashboard does not pay for a cold query server: JIT, generated code,
Delta snapshots and metastore lookups of every dashboard query) and by ``make bench``'s serving
stage (which times the same queries).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def read_login(path: Path) -> tuple[str, str]:
    """(user, password) from an instance's login file (``user: ...`` and ``password: ...``)."""
    fields = dict(x.split(": ", 1) for x in path.read_text().splitlines() if ": " in x)
    return fields["user"].strip(), fields["password"].strip()


class SupersetClient:
    """JWT-authenticated REST session (retries dropped connections, see serving.http)."""

    def __init__(self, base: str, user: str, password: str) -> None:
        from gridlake.serving.http import retrying_session

        self.base = base.rstrip("/")
        self.http = retrying_session()
        self._login = (user, password)
        self.log_in()
        self._dataset_ids: dict[str, int] = {}

    def log_in(self) -> None:
        """A new access token (Superset's expire after 15 minutes: a client that runs longer,
        the freshness bench's watch, logs in again when told so) and its CSRF token."""
        user, password = self._login
        self.http.headers.pop("Authorization", None)
        r = self.http.post(
            f"{self.base}/api/v1/security/login",
            json={"username": user, "password": password, "provider": "db", "refresh": False},
            timeout=120,
        )
        r.raise_for_status()
        self.http.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
        csrf = self.http.get(f"{self.base}/api/v1/security/csrf_token/", timeout=60)
        csrf.raise_for_status()
        self.http.headers.update({"X-CSRFToken": csrf.json()["result"], "Referer": self.base + "/"})

    def _send(self, method: str, url: str, **kw: Any) -> Any:
        """One request; on 401 (the access token expired) log in again and send it once more."""
        r = self.http.request(method, url, **kw)
        if r.status_code == 401:
            self.log_in()
            r = self.http.request(method, url, **kw)
        return r

    def dataset_id(self, uid: str) -> int:
        if uid not in self._dataset_ids:
            q = f"(columns:!(id,uuid),filters:!((col:uuid,opr:eq,value:'{uid}')))"
            r = self._send("GET", f"{self.base}/api/v1/dataset/", params={"q": q}, timeout=60)
            r.raise_for_status()
            found = [x["id"] for x in r.json()["result"] if str(x["uuid"]) == uid]
            if not found:
                raise RuntimeError(f"Superset has no dataset {uid}: import the assets first")
            self._dataset_ids[uid] = found[0]
        return self._dataset_ids[uid]

    def data(self, query_context: dict) -> tuple[float, dict]:
        """(seconds, result) of one chart-data query."""
        t0 = time.perf_counter()
        r = self._send("POST", f"{self.base}/api/v1/chart/data", json=query_context, timeout=600)
        seconds = time.perf_counter() - t0
        if r.status_code != 200:
            raise RuntimeError(f"chart data: HTTP {r.status_code}: {r.text[:500]}")
        (result,) = r.json()["result"]
        return seconds, result


def default_filters(api: SupersetClient, dash: Any) -> dict[str, tuple[str, Any]]:
    """The values the dashboard's default-first filters open on: {filter key: (column, value)}."""
    out = {}
    for f in dash.filters:
        if not f.default_first:
            continue
        qc = {
            "datasource": {"id": api.dataset_id(f.dataset.uuid), "type": "table"},
            "force": True,
            "queries": [
                {
                    "columns": [f.column],
                    "metrics": [],
                    "orderby": [[f.column, f.ascending]],
                    "row_limit": 1,
                    "filters": [],
                }
            ],
            "result_format": "json",
            "result_type": "full",
        }
        _, result = api.data(qc)
        if result["data"]:
            out[f.key] = (f.column, result["data"][0][f.column])
    return out


def dashboard_queries(api: SupersetClient, dash: Any) -> list[tuple[str, dict]]:
    """(chart key, query context) as the dashboard sends them when it opens."""
    from gridlake.serving.superset_assets import chart_query_context

    defaults = default_filters(api, dash)
    out = []
    for chart in dash.charts:
        qc = chart_query_context(chart)
        qc["datasource"] = {"id": api.dataset_id(chart.dataset.uuid), "type": "table"}
        qc["force"] = True
        for f in dash.filters:
            if f.key in defaults and chart.key not in f.exclude:
                col, value = defaults[f.key]
                if col in chart.dataset.column_names():
                    qc["queries"][0]["filters"].append({"col": col, "op": "IN", "val": [value]})
        out.append((chart.key, qc))
    return out


def warm_dashboards(api: SupersetClient, dashboards: list[Any]) -> dict[str, float]:
    """Send every chart query of each dashboard once: {slug: seconds for all its queries}.

    Raises on the first query that fails (the error names the chart)."""
    seconds = {}
    for dash in dashboards:
        t0 = time.perf_counter()
        for key, qc in dashboard_queries(api, dash):
            try:
                api.data(qc)
            except RuntimeError as e:
                raise RuntimeError(f"dashboard {dash.slug}, chart {key}: {e}") from e
        seconds[dash.slug] = round(time.perf_counter() - t0, 1)
    return seconds
