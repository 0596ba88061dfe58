"""The Superset dashboards as code: one spec, rendered into the YAML assets of superset/assets/.

Modules: ``spec`` (the types), ``datasets``, ``filters``, one module per dashboard
(``grid_operations``, ``site_drilldown``, ``cpu_models``, ``io_signatures``, ``network``,
``failures``; ``dashboards`` lists them in order) and ``render`` (params, query contexts, YAML).

``gridlake superset assets`` (and ``gridlake docs``) writes the YAML; a test checks it is current,
as for the grid views. Why generated: every chart needs two consistent descriptions of its query,
the explore ``params`` the dashboard renders from and the saved ``query_context`` that the
chart-data API, thumbnails, alerts and reports run; and every dataset's columns and comments come
from the Table definitions of its grid view. Written by hand, 40 charts drift.

What the spec holds:

- **datasets**: one per grid view the dashboards read (never silver, never a physical table), with
  saved metrics (ratios of sums, never means of ratios), calculated columns, and the row-level
  security scope of the view in ``extra.gridlake_rls`` (``superset/access.py`` turns it into
  Superset RLS rules per site role): ``site`` (``site = 'X'``), ``link`` (the site is the source or
  the destination), ``site_entity`` (outlier rows about the site itself) or ``grid`` (grid-wide
  aggregates without per-site rows). A dataset without a scope is never granted to a site role.
- **charts**: viz type, dataset, x axis / series / metrics / filters; params and query_context
  are built from the same fields here.
- **dashboards**: rows of charts and native filters (site, VO, week, ...). A week filter defaults
  to the latest week (single select, newest first, first item by default), so a dashboard opens
  on one week even over years of data; trend charts are excluded from it.

The YAML keeps two placeholders for ``superset/build_bundle.py``: the Thrift port and the schema of
the views (``grid``).
"""

from __future__ import annotations

from gridlake.serving.superset_assets.dashboards import DASHBOARDS
from gridlake.serving.superset_assets.datasets import DATASETS
from gridlake.serving.superset_assets.render import (
    chart_params,
    chart_query_context,
    check_spec,
    render_assets,
    write_assets,
)
from gridlake.serving.superset_assets.spec import (
    ASSETS_DIR,
    DATABASE_UUID,
    RLS_CLAUSES,
    CalcColumn,
    Chart,
    Dashboard,
    Dataset,
    Metric,
    NativeFilter,
    asset_uuid,
)

__all__ = [
    "ASSETS_DIR",
    "DASHBOARDS",
    "DATABASE_UUID",
    "DATASETS",
    "RLS_CLAUSES",
    "CalcColumn",
    "Chart",
    "Dashboard",
    "Dataset",
    "Metric",
    "NativeFilter",
    "asset_uuid",
    "chart_params",
    "chart_query_context",
    "check_spec",
    "render_assets",
    "write_assets",
]
