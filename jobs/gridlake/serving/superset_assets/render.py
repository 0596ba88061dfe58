"""The spec rendered: chart params and query contexts, the YAML of every asset, the spec's
consistency check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gridlake.serving.superset_assets.dashboards import DASHBOARDS
from gridlake.serving.superset_assets.datasets import DATASETS
from gridlake.serving.superset_assets.spec import (
    ASSETS_DIR,
    DATABASE_UUID,
    RLS_CLAUSES,
    SCHEMA_PLACEHOLDER,
    Chart,
    Dashboard,
    Dataset,
    NativeFilter,
)

# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def _simple_filters(chart: Chart) -> tuple[list[dict], list[dict]]:
    """(adhoc_filters for params, filters for the query object)."""
    adhoc: list[dict] = []
    query: list[dict] = []
    if chart.x and chart.dataset.temporal(chart.x):
        adhoc.append({"clause": "WHERE", "subject": chart.x, "operator": "TEMPORAL_RANGE",
                      "comparator": "No filter", "expressionType": "SIMPLE"})  # fmt: skip
        query.append({"col": chart.x, "op": "TEMPORAL_RANGE", "val": "No filter"})
    for col, op, value in chart.where:
        item = {"clause": "WHERE", "subject": col, "operator": op, "expressionType": "SIMPLE"}
        if value is not None:
            item["comparator"] = value
        adhoc.append(item)
        query.append({"col": col, "op": op, **({"val": value} if value is not None else {})})
    if chart.where_sql:
        adhoc.append({"clause": "WHERE", "expressionType": "SQL",
                      "sqlExpression": chart.where_sql})  # fmt: skip
    return adhoc, query


def _x_column(chart: Chart) -> dict:
    assert chart.x
    col: dict[str, Any] = {"columnType": "BASE_AXIS", "sqlExpression": chart.x,
                           "label": chart.x, "expressionType": "SQL"}  # fmt: skip
    if chart.time_grain:
        col["timeGrain"] = chart.time_grain
    return col


def chart_params(chart: Chart) -> dict[str, Any]:
    """The explore form data the dashboard renders the chart from."""
    adhoc, _ = _simple_filters(chart)
    p: dict[str, Any] = {"viz_type": chart.viz_type, "adhoc_filters": adhoc}
    if chart.kind == "big_number":
        p |= {"metric": chart.metrics[0], "header_font_size": 0.4, "subheader_font_size": 0.15,
              "y_axis_format": chart.number_format, "time_format": "smart_date"}  # fmt: skip
    elif chart.kind == "table":
        p |= {
            "query_mode": "aggregate",
            "groupby": list(chart.series),
            "metrics": list(chart.metrics),
            "all_columns": [],
            "percent_metrics": [],
            "order_desc": not (chart.order_by and chart.order_by[0][1]),
            "row_limit": chart.row_limit,
            "server_page_length": 10,
            "table_timestamp_format": "%Y-%m-%d %H:%M",
            "show_cell_bars": True,
            "color_pn": True,
            "allow_render_html": False,
        }
        if chart.order_by:
            p["timeseries_limit_metric"] = chart.order_by[0][0]
    elif chart.kind == "raw_table":
        p |= {
            "query_mode": "raw",
            "groupby": [],
            "metrics": [],
            "all_columns": list(chart.columns),
            "order_by_cols": [json.dumps([c, asc]) for c, asc in chart.order_by],
            "row_limit": chart.row_limit,
            "server_page_length": 10,
            "table_timestamp_format": "%Y-%m-%d %H:%M",
            "allow_render_html": False,
        }
    elif chart.kind in ("line", "bar"):
        p |= {
            "x_axis": chart.x,
            "metrics": list(chart.metrics),
            "groupby": list(chart.series),
            "row_limit": chart.row_limit if chart.row_limit != 1000 else 10000,
            "order_desc": True,
            "show_legend": True,
            "legendType": "scroll",
            "legendOrientation": "top",
            "rich_tooltip": True,
            "y_axis_format": chart.number_format,
            "truncateYAxis": False,
            "y_axis_bounds": [None, None],
            # category labels (job types, sites) overlap unless tilted
            "xAxisLabelRotation": chart.x_label_rotation
            or (0 if chart.dataset.temporal(chart.x or "") else 30),
            "color_scheme": "supersetColors",
            "comparison_type": "values",
            "annotation_layers": [],
            "forecastPeriods": 10,
            "forecastInterval": 0.8,
            "x_axis_title_margin": 15,
            "y_axis_title_margin": 15,
            "y_axis_title_position": "Left",
            "zoomable": False,
        }
        if chart.time_grain:
            p |= {"time_grain_sqla": chart.time_grain, "x_axis_time_format": "smart_date",
                  "tooltipTimeFormat": "smart_date"}  # fmt: skip
        else:
            p |= {"x_axis_sort_asc": True}
            if chart.order_by and chart.order_by[0][0] in chart.metrics:
                p |= {"x_axis_sort": chart.order_by[0][0], "x_axis_sort_asc": chart.order_by[0][1]}
        if chart.series_limit:
            p |= {"series_limit": chart.series_limit, "series_limit_metric": chart.metrics[0]}
        if chart.number_format.endswith("%") and not chart.stack and chart.kind == "bar":
            p["y_axis_bounds"] = [0, 1]  # efficiencies, shares and probabilities
        if chart.stack and all(m.startswith("share_") for m in chart.metrics):
            p["y_axis_bounds"] = [0, 1]  # shares of a whole
        if chart.kind == "bar":
            p |= {"orientation": "vertical", "stack": "Stack" if chart.stack else None,
                  "only_total": True, "show_empty_columns": True}  # fmt: skip
        else:
            # markers show a week or a bin on its own; hourly series are dense enough without
            p |= {"markerEnabled": chart.time_grain != "PT1H", "markerSize": 6,
                  "seriesType": "line"}  # fmt: skip
    elif chart.kind == "heatmap":
        p |= {
            "x_axis": chart.x,
            "groupby": chart.series[0],
            "metric": chart.metrics[0],
            "row_limit": chart.row_limit,
            "sort_x_axis": "alpha_asc",
            "sort_y_axis": "alpha_asc",
            "normalize_across": "heatmap",
            "linear_color_scheme": "superset_seq_1",
            "legend_type": "continuous",
            "show_legend": True,
            "show_values": False,
            "show_percentage": False,
            "left_margin": "auto",
            "bottom_margin": "auto",
            "xscale_interval": -1,
            "yscale_interval": -1,
            "y_axis_format": chart.number_format,
            "value_bounds": [None, None],
        }
        if chart.time_grain:
            p["time_grain_sqla"] = chart.time_grain
        if chart.x and chart.dataset.temporal(chart.x):
            p["x_axis_time_format"] = "%m-%d %H:%M"
    elif chart.kind == "pie":
        p |= {
            "groupby": list(chart.series),
            "metric": chart.metrics[0],
            "row_limit": chart.row_limit,
            "sort_by_metric": True,
            "color_scheme": "supersetColors",
            "show_labels": True,
            "labels_outside": True,
            "label_type": "key_percent",
            "number_format": "SMART_NUMBER",
            "show_legend": True,
            "legendType": "scroll",
            "legendOrientation": "top",
            "donut": True,
            "innerRadius": 30,
            "outerRadius": 70,
        }
    else:
        raise ValueError(f"{chart.key}: unknown kind {chart.kind}")
    p |= chart.options
    p["extra_form_data"] = {}
    return p


def chart_query_context(chart: Chart) -> dict[str, Any]:
    """The query the chart-data API runs (long format: no pivoting post-processing)."""
    _, filters = _simple_filters(chart)
    q: dict[str, Any] = {
        "filters": filters,
        "extras": {"having": "", "where": f"({chart.where_sql})" if chart.where_sql else ""},
        "applied_time_extras": {},
        "annotation_layers": [],
        "series_limit": 0,
        "order_desc": True,
        "url_params": {},
        "custom_params": {},
        "custom_form_data": {},
        "post_processing": [],
    }
    if chart.time_grain:
        q["extras"]["time_grain_sqla"] = chart.time_grain
    # Aggregated queries order by metrics only: ordering by a grouped column makes Superset
    # select it a second time under the same alias, which Spark rejects (the frontend sorts axes).
    metric_names = {m.name for m in chart.dataset.metrics}
    orderby = [[c, asc] for c, asc in chart.order_by if c in metric_names]
    if chart.kind == "big_number":
        q |= {"columns": [], "metrics": [chart.metrics[0]]}
    elif chart.kind in ("table", "pie"):
        q |= {"columns": list(chart.series), "metrics": list(chart.metrics),
              "orderby": orderby or [[chart.metrics[0], False]],
              "row_limit": chart.row_limit}  # fmt: skip
    elif chart.kind == "raw_table":
        q |= {"columns": list(chart.columns), "metrics": [],
              "orderby": [[c, asc] for c, asc in chart.order_by],
              "row_limit": chart.row_limit}  # fmt: skip
    elif chart.kind in ("line", "bar"):
        q |= {
            "columns": [_x_column(chart), *chart.series],
            "metrics": list(chart.metrics),
            "orderby": orderby or [[chart.metrics[0], False]],
            "row_limit": chart.row_limit if chart.row_limit != 1000 else 10000,
            "series_columns": list(chart.series),
            "time_offsets": [],
        }
        if chart.series_limit:
            q |= {"series_limit": chart.series_limit, "series_limit_metric": chart.metrics[0]}
    elif chart.kind == "heatmap":
        q |= {
            "columns": [_x_column(chart), chart.series[0]],
            "metrics": [chart.metrics[0]],
            "row_limit": chart.row_limit,
        }
    return {
        "datasource": {"id": 0, "type": "table"},
        "force": False,
        "queries": [q],
        "form_data": chart_params(chart),
        "result_format": "json",
        "result_type": "full",
    }


def _dataset_yaml(ds: Dataset) -> dict[str, Any]:
    cols = []
    for name, ddl_type, comment, is_dttm in ds.columns():
        cols.append({"column_name": name, "verbose_name": None, "is_dttm": is_dttm,
                     "is_active": True, "type": ddl_type, "groupby": True, "filterable": True,
                     "expression": None, "description": " ".join(comment.split()),
                     "python_date_format": None, "extra": {}})  # fmt: skip
    for c in ds.calc_columns:
        cols.append({"column_name": c.name, "verbose_name": None, "is_dttm": c.is_dttm,
                     "is_active": True, "type": c.ddl_type, "groupby": True, "filterable": True,
                     "expression": c.expression, "description": c.description,
                     "python_date_format": None, "extra": {}})  # fmt: skip
    grain = ""
    if ds.table is not None:
        grain = f" Grain: {' '.join(ds.table.grain.split())}"
    return {
        "table_name": ds.name,
        "main_dttm_col": ds.main_dttm_col,
        "description": ds.description + grain,
        "default_endpoint": None,
        "offset": 0,
        "cache_timeout": None,
        "catalog": None,
        "schema": SCHEMA_PLACEHOLDER,
        "sql": ds.sql,
        "params": None,
        "template_params": None,
        "filter_select_enabled": True,
        "fetch_values_predicate": None,
        "extra": {"gridlake_rls": {"scope": ds.rls, "clause": RLS_CLAUSES[ds.rls]}},
        "normalize_columns": False,
        "always_filter_main_dttm": False,
        "uuid": ds.uuid,
        "metrics": [
            {
                "metric_name": m.name,
                "verbose_name": m.label,
                "metric_type": None,
                "expression": m.expression,
                "description": m.description or None,
                "d3format": m.d3format or None,
                "currency": None,
                "extra": {},
                "warning_text": None,
            }
            for m in ds.metrics
        ],
        "columns": cols,
        "version": "1.0.0",
        "database_uuid": DATABASE_UUID,
    }


def _chart_yaml(chart: Chart) -> dict[str, Any]:
    return {
        "slice_name": chart.title,
        "description": chart.description,
        "certified_by": None,
        "certification_details": None,
        "viz_type": chart.viz_type,
        "params": chart_params(chart),
        "query_context": json.dumps(chart_query_context(chart), indent=1),
        "cache_timeout": None,
        "uuid": chart.uuid,
        "version": "1.0.0",
        "dataset_uuid": chart.dataset.uuid,
    }


def _filter_yaml(f: NativeFilter, dash: Dashboard, ids: dict[str, int]) -> dict[str, Any]:
    excluded = sorted(
        ids[c.key]
        for c in dash.charts
        if c.key in f.exclude or f.column not in c.dataset.column_names()
    )
    return {
        "id": f"NATIVE_FILTER-{f.key}",
        "name": f.name,
        "filterType": "filter_select",
        "type": "NATIVE_FILTER",
        "description": f.description,
        "targets": [{"datasetUuid": f.dataset.uuid, "column": {"name": f.column}}],
        "controlValues": {
            "enableEmptyFilter": f.default_first,
            "defaultToFirstItem": f.default_first,
            "multiSelect": f.multi,
            "searchAllOptions": False,
            "inverseSelection": False,
            "sortAscending": f.ascending,
        },
        "defaultDataMask": {"extraFormData": {}, "filterState": {}, "ownState": {}},
        "cascadeParentIds": [],
        "scope": {"rootPath": ["ROOT_ID"], "excluded": excluded},
        # what the filter editor saves for "Select first filter value by default": the dashboard
        # then waits for the filter's first value before it loads the charts in scope
        **({"requiredFirst": True} if f.default_first else {}),
    }


def _dashboard_yaml(dash: Dashboard) -> dict[str, Any]:
    ids = {c.key: i for i, c in enumerate(dash.charts, start=1)}
    rows = [f"ROW-{i}" for i in range(len(dash.rows))]
    position: dict[str, Any] = {
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
        "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": rows, "parents": ["ROOT_ID"]},
        "HEADER_ID": {"type": "HEADER", "id": "HEADER_ID", "meta": {"text": dash.title}},
    }
    for row_id, row in zip(rows, dash.rows, strict=True):
        width = sum(c.width for c in row)
        if width > 12:
            raise ValueError(f"{dash.slug}: {row_id} is {width} columns wide (max 12)")
        position[row_id] = {
            "type": "ROW",
            "id": row_id,
            "children": [f"CHART-{c.key}" for c in row],
            "parents": ["ROOT_ID", "GRID_ID"],
            "meta": {"background": "BACKGROUND_TRANSPARENT"},
        }
        for c in row:
            position[f"CHART-{c.key}"] = {
                "type": "CHART",
                "id": f"CHART-{c.key}",
                "children": [],
                "parents": ["ROOT_ID", "GRID_ID", row_id],
                "meta": {"chartId": ids[c.key], "uuid": c.uuid, "sliceName": c.title,
                         "width": c.width, "height": c.height},
            }  # fmt: skip
    return {
        "dashboard_title": dash.title,
        "description": dash.description,
        "css": "",
        "slug": dash.slug,
        "certified_by": None,
        "certification_details": None,
        "published": True,
        "uuid": dash.uuid,
        "version": "1.0.0",
        "position": position,
        "metadata": {
            "color_scheme": "supersetColors",
            "refresh_frequency": 0,
            "timed_refresh_immune_slices": [],
            "expanded_slices": {},
            "label_colors": {},
            "shared_label_colors": [],
            "color_scheme_domain": [],
            "cross_filters_enabled": False,
            "chart_configuration": {},
            "global_chart_configuration": {
                "scope": {"rootPath": ["ROOT_ID"], "excluded": []},
                "chartsInScope": [],
            },
            "default_filters": "{}",
            "native_filter_configuration": [_filter_yaml(f, dash, ids) for f in dash.filters],
        },
    }


def _database_yaml() -> dict[str, Any]:
    return {
        "database_name": "gridlake",
        # Superset's own Thrift Server user (read-only, grid views and gold tables); the password
        # stays masked here and reaches Superset at import (build_bundle.py's `passwords`)
        "sqlalchemy_uri": "hive://superset:XXXXXXXXXX@127.0.0.1:${GRIDLAKE_THRIFT_PORT}/"
        + SCHEMA_PLACEHOLDER
        + "?auth=CUSTOM",
        "cache_timeout": None,
        "expose_in_sqllab": True,
        "allow_run_async": False,
        "allow_ctas": False,
        "allow_cvas": False,
        "allow_dml": False,
        "allow_file_upload": False,
        "impersonate_user": False,
        "extra": {
            "metadata_params": {},
            "engine_params": {},
            "metadata_cache_timeout": {},
            "schemas_allowed_for_file_upload": [],
            "allows_virtual_table_explore": True,
            "cancel_query_on_windows_unload": True,
        },
        "uuid": DATABASE_UUID,
        "version": "1.0.0",
    }


def check_spec() -> None:
    """Every chart's metrics and columns exist on its dataset; keys and uuids are unique."""
    keys = [c.key for d in DASHBOARDS for c in d.charts]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate chart keys")
    for dash in DASHBOARDS:
        for c in dash.charts:
            ds = c.dataset
            metrics = {m.name for m in ds.metrics}
            cols = ds.column_names()
            missing = [m for m in c.metrics if m not in metrics]
            missing += [x for x in (c.x, *c.series, *c.columns) if x and x not in cols]
            missing += [f for f, _, _ in c.where if f not in cols]
            missing += [o for o, _ in c.order_by if o not in cols | metrics]
            if missing:
                raise ValueError(f"{dash.slug}/{c.key}: unknown {missing} on {ds.name}")
            if c.time_grain and not ds.temporal(c.x or ""):
                raise ValueError(f"{dash.slug}/{c.key}: time grain on a non-temporal axis")
        for f in dash.filters:
            if f.column not in f.dataset.column_names():
                raise ValueError(f"{dash.slug}: filter {f.key} on unknown column {f.column}")
    for ds in DATASETS:
        if ds.rls not in RLS_CLAUSES:
            raise ValueError(f"{ds.name}: unknown RLS scope {ds.rls}")
        needs = {"site": {"site"}, "link": {"src_site", "dst_site"},
                 "site_entity": {"entity", "entity_value"}, "grid": set()}[ds.rls]  # fmt: skip
        if not needs <= {c[0] for c in ds.columns()}:
            raise ValueError(f"{ds.name}: RLS scope {ds.rls} needs columns {needs}")
        if ds.rls == "grid" and {"site", "src_site", "dst_site"} & ds.column_names():
            raise ValueError(f"{ds.name}: has site columns, cannot be grid-wide")


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _str)

HEADER = (
    "# Generated by `gridlake superset assets` from jobs/gridlake/serving/superset_assets/;"
    " do not edit.\n"
)


def render_assets() -> dict[str, str]:
    """{relative path under superset/assets: YAML text}."""
    check_spec()

    def dump(obj: dict[str, Any]) -> str:
        return HEADER + yaml.dump(obj, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                                  width=100)  # fmt: skip

    out = {
        "metadata.yaml": dump(
            {"version": "1.0.0", "type": "assets", "timestamp": "2025-01-01T00:00:00+00:00"}
        ),
        "databases/gridlake.yaml": dump(_database_yaml()),
    }
    for ds in DATASETS:
        out[f"datasets/gridlake/{ds.name}.yaml"] = dump(_dataset_yaml(ds))
    for dash in DASHBOARDS:
        for c in dash.charts:
            out[f"charts/{c.key}.yaml"] = dump(_chart_yaml(c))
        out[f"dashboards/{dash.slug.replace('-', '_')}.yaml"] = dump(_dashboard_yaml(dash))
    return out


def write_assets(directory: Path = ASSETS_DIR) -> list[Path]:
    """Write the YAML assets, delete ones the spec no longer has; returns the changed files."""
    wanted = {directory / rel: text for rel, text in render_assets().items()}
    changed = []
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    for path in directory.rglob("*.yaml"):
        if path not in wanted:
            path.unlink()
            changed.append(path)
    return changed
