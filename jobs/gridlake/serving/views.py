"""The ``grid`` views: stable, documented names for what users query (defined in sql/grid/).

One view per silver and gold table, ``grid.<table name>``, with the table's columns, their
comments and its grain, minus what is not part of the interface (lineage columns starting with
``_``, and ``raw``, the verbatim source record an adapter converted, except in the quarantine
tables, where the rejected record is the point). Dashboards, the weekly reports and analysts query
the views, never the physical tables, so a table can be rebuilt or versioned behind a view.

The SQL files in ``sql/grid/`` are generated from the ``Table`` definitions by ``gridlake docs``
(a test checks they are current) and are what ``create_views`` runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pyspark.sql import SparkSession

from gridlake.settings import SQL_DIR, Settings, get_settings
from gridlake.tabledef import Column, Table, _q

__all__ = [
    "VIEW_DATABASE",
    "create_views",
    "ensure_views",
    "render_view",
    "view_columns",
    "view_files",
    "view_name",
    "view_sources",
    "write_view_files",
]

VIEW_DATABASE = "grid"
VIEW_DIR = SQL_DIR / VIEW_DATABASE


def view_sources() -> tuple[Table, ...]:
    """The tables behind the views: every silver table, then every gold table, but the gold
    groups' internal state (``gold._state_*``: what incremental analyze keeps between runs)."""
    from gridlake.serving.docs import documented_tables

    return tuple(t for t in documented_tables() if not t.name.startswith("_"))


def view_name(table: Table) -> str:
    return f"{VIEW_DATABASE}.{table.name}"


def view_columns(table: Table) -> tuple[Column, ...]:
    keep_raw = table.name.startswith("quarantine_")
    return tuple(
        c for c in table.columns if not c.name.startswith("_") and (c.name != "raw" or keep_raw)
    )


def render_view(table: Table) -> str:
    """The CREATE VIEW statement of a table's view, with a header comment."""
    cols = view_columns(table)
    grain = " ".join(table.grain.split())
    listing = ",\n".join(f"  `{c.name}` COMMENT {_q(' '.join(c.comment.split()))}" for c in cols)
    select = ",\n       ".join(f"`{c.name}`" for c in cols)
    comment = f"{' '.join(table.description.split())} Grain: {grain}"
    return (
        f"-- {view_name(table)}: generated from {table.full_name}'s definition by "
        "`gridlake docs`; do not edit.\n"
        f"-- Grain: {grain}\n"
        f"CREATE OR REPLACE VIEW {view_name(table)} (\n{listing}\n)\n"
        f"COMMENT {_q(comment)}\n"
        f"AS SELECT {select}\n"
        f"FROM {table.full_name}\n"
    )


def write_view_files(directory: Path = VIEW_DIR) -> list[Path]:
    """Write sql/grid/<name>.sql for every view and delete files of views that no longer exist;
    returns the files that changed."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = {directory / f"{t.name}.sql": render_view(t) for t in view_sources()}
    changed = []
    for path, text in wanted.items():
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    for path in directory.glob("*.sql"):
        if path not in wanted:
            path.unlink()
            changed.append(path)
    return changed


def view_files() -> list[Path]:
    return sorted(VIEW_DIR.glob("*.sql"))


def _view_database(spark: SparkSession, settings: Settings) -> None:
    spark.sql(
        f"CREATE DATABASE IF NOT EXISTS {VIEW_DATABASE} "
        f"LOCATION '{settings.storage_root.rstrip('/')}/{VIEW_DATABASE}'"
    )


def create_views(spark: SparkSession, settings: Settings | None = None) -> list[str]:
    """(Re)create every view in sql/grid/ (their tables must exist); returns their names."""
    settings = settings or get_settings()
    _view_database(spark, settings)
    names = []
    for path in view_files():
        spark.sql(path.read_text())
        names.append(f"{VIEW_DATABASE}.{path.stem}")
    return names


def ensure_views(
    spark: SparkSession, table_names: Iterable[str], settings: Settings | None = None
) -> list[str]:
    """Create the views of these tables (full names, e.g. what ``analyze`` wrote) that do not
    exist yet, so a fresh warehouse built by the DAGs alone is queryable through ``grid``;
    returns the views created. Existing views are left alone (``gridlake init`` replaces them
    all after an upgrade). Each job names only its own tables, so jobs running side by side
    never create the same view."""
    settings = settings or get_settings()
    wanted = set(table_names)
    tables = [t for t in view_sources() if t.full_name in wanted]
    missing = [t for t in tables if not spark.catalog.tableExists(view_name(t))]
    if not missing:
        return []
    _view_database(spark, settings)
    for table in missing:
        spark.sql((VIEW_DIR / f"{table.name}.sql").read_text())
    return [view_name(t) for t in missing]
