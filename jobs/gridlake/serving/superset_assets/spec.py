"""The spec's types (metrics, calculated columns, datasets, charts, native filters,
dashboards), the assets folder and the stable uuids."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from gridlake.settings import REPO_ROOT
from gridlake.tabledef import Table

ASSETS_DIR = REPO_ROOT / "superset" / "assets"
SCHEMA_PLACEHOLDER = "${GRIDLAKE_SCHEMA}"
NAMESPACE = uuid.UUID("0f5b6a53-8a1e-4c55-9d36-6c8b8e6f4a10")
DATABASE_UUID = "7ca962d9-2f42-5a18-b5d0-6f71cbf50dc0"
# Objects that existed before the spec keep their uuids, so re-importing over an older instance
# overwrites them instead of colliding on the dashboard slug.
FIXED_UUIDS = {
    "dataset:site_efficiency_weekly": "6bc7848b-5fcc-59ec-b133-0a26c7c00266",
    "dashboard:grid-operations": "80abdfbf-bce2-551c-94c5-192f42b24b52",
    "chart:total_jobs": "e5e0e71c-d86d-5fb6-bb4d-f91f9f57177c",
    "chart:cpu_efficiency_by_site": "9d737ec0-9b15-5287-a87b-f355d54d89b4",
    "chart:core_hours_vs_wasted_by_site": "a21683a4-5309-5d0d-9a1c-7902eb9498c5",
    "chart:efficiency_by_site_and_vo": "dc4164e0-ee6d-5459-952e-621a62c5ba11",
}
RLS_CLAUSES = {
    "site": "site = '{site}'",
    "link": "(src_site = '{site}' OR dst_site = '{site}')",
    "site_entity": "(entity = 'site' AND entity_value = '{site}')",
    "grid": None,
}


def asset_uuid(kind: str, name: str) -> str:
    key = f"{kind}:{name}"
    return FIXED_UUIDS.get(key) or str(uuid.uuid5(NAMESPACE, f"gridlake:{key}"))


# --------------------------------------------------------------------------------------------
# Spec types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    name: str
    expression: str
    label: str
    d3format: str = ""
    description: str = ""


@dataclass(frozen=True)
class CalcColumn:
    name: str
    expression: str
    ddl_type: str
    description: str
    is_dttm: bool = False


@dataclass(frozen=True)
class Dataset:
    """A Superset dataset over a grid view (or a SQL query over grid views: ``sql``)."""

    name: str
    rls: str  # a key of RLS_CLAUSES
    description: str
    metrics: tuple[Metric, ...]
    table: Table | None = None  # the view's Table definition (physical datasets)
    sql: str | None = None  # virtual dataset over grid views
    sql_columns: tuple[tuple[str, str, str], ...] = ()  # (name, type, description) of ``sql``
    calc_columns: tuple[CalcColumn, ...] = ()
    main_dttm_col: str | None = None

    @property
    def uuid(self) -> str:
        return asset_uuid("dataset", self.name)

    def columns(self) -> list[tuple[str, str, str, bool]]:
        """(name, type, description, is_dttm) of the physical or SQL columns."""
        if self.table is not None:
            from gridlake.serving.views import view_columns

            cols = [(c.name, c.ddl_type, c.comment) for c in view_columns(self.table)]
        else:
            cols = list(self.sql_columns)
        return [(n, t, d, t in ("DATE", "TIMESTAMP")) for n, t, d in cols]

    def column_names(self) -> set[str]:
        return {c[0] for c in self.columns()} | {c.name for c in self.calc_columns}

    def temporal(self, name: str) -> bool:
        types = {c[0]: c[3] for c in self.columns()} | {
            c.name: c.is_dttm for c in self.calc_columns
        }
        return types[name]


@dataclass(frozen=True)
class Chart:
    """One chart. ``kind``: big_number, table, raw_table, line, bar, heatmap, pie."""

    key: str
    title: str
    description: str
    dataset: Dataset
    kind: str
    metrics: tuple[str, ...] = ()
    x: str | None = None  # x axis (line, bar, heatmap)
    time_grain: str | None = None  # for a temporal x axis
    series: tuple[str, ...] = ()  # groupby: series (line, bar), y (heatmap), rows (table, pie)
    columns: tuple[str, ...] = ()  # raw_table columns
    where: tuple[tuple[str, str, Any], ...] = ()  # simple filters (col, op, value)
    where_sql: str = ""  # a custom WHERE clause
    order_by: tuple[tuple[str, bool], ...] = ()  # (column or metric, ascending)
    row_limit: int = 1000
    series_limit: int = 0
    stack: bool = False
    number_format: str = "SMART_NUMBER"
    x_label_rotation: int = 0
    width: int = 6
    height: int = 50
    options: dict[str, Any] = field(default_factory=dict)  # extra explore params

    @property
    def uuid(self) -> str:
        return asset_uuid("chart", self.key)

    @property
    def viz_type(self) -> str:
        return {
            "big_number": "big_number_total",
            "table": "table",
            "raw_table": "table",
            "line": "echarts_timeseries_line",
            "bar": "echarts_timeseries_bar",
            "heatmap": "heatmap_v2",
            "pie": "pie",
        }[self.kind]


@dataclass(frozen=True)
class NativeFilter:
    key: str
    name: str
    dataset: Dataset
    column: str
    multi: bool = True
    default_first: bool = False  # select the first value (newest for a descending week filter)
    ascending: bool = True
    exclude: tuple[str, ...] = ()  # chart keys outside the filter's scope
    description: str = ""


@dataclass(frozen=True)
class Dashboard:
    slug: str
    title: str
    description: str
    rows: tuple[tuple[Chart, ...], ...]
    filters: tuple[NativeFilter, ...] = ()

    @property
    def uuid(self) -> str:
        return asset_uuid("dashboard", self.slug)

    @property
    def charts(self) -> list[Chart]:
        return [c for row in self.rows for c in row]
