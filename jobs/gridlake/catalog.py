"""The table catalog: every warehouse table, collected from the modules that declare them.

Each table is declared once, beside the code that builds it: bronze in ``gridlake.bronze.tables``,
silver (with its quarantines, the refine gate's quality results and batch audit) in
``gridlake.silver.tables``, gold in its family's module under ``gridlake.gold`` (the groups of
``gridlake.gold.analyze``), the operations' own in ``gridlake.alerts`` (``ops.alerts``) and
``gridlake.contacts`` (``ops.sites``). A declaration (``gridlake.tabledef.Table``) holds the layer,
name, grain, columns with comments, partitioning and checks; jobs write
``df.select(*table.column_names)`` into it, the metastore DDL comes from it (``ensure``), and
``gridlake sql "DESCRIBE ..."`` shows the comments. Everything that lists tables (metastore set-up,
views, docs, maintenance) reads ``ALL_TABLES`` here. Layers only read downwards: bronze <- Kafka,
silver <- bronze, gold <- silver.

The catalog sits above gold in the layering (it imports every family); bronze, silver and gold
code import their own declarations, never this module.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from gridlake.alerts import TABLES as OPS_TABLES
from gridlake.bronze.tables import BRONZE
from gridlake.bronze.tables import TABLES as BRONZE_TABLES
from gridlake.contacts import TABLES as CONTACT_TABLES
from gridlake.gold.analyze import gold_tables
from gridlake.gold.site_efficiency import GOLD_SITE_EFFICIENCY_WEEKLY
from gridlake.settings import Settings
from gridlake.silver.tables import *  # noqa: F403 (re-exported for serving and operations code)
from gridlake.silver.tables import TABLES as SILVER_TABLES
from gridlake.tabledef import Check, Column, Table, ensure_tables

__all__ = [
    "ALL_TABLES",
    "BRONZE",
    "GOLD_SITE_EFFICIENCY_WEEKLY",
    "Check",
    "Column",
    "Table",
    "by_name",
    "ensure_all",
]

ALL_TABLES: tuple[Table, ...] = (
    *BRONZE_TABLES,
    *SILVER_TABLES,
    *gold_tables(),
    *OPS_TABLES,
    *CONTACT_TABLES,
)


def by_name(full_name: str) -> Table:
    for t in ALL_TABLES:
        if t.full_name == full_name:
            return t
    raise KeyError(f"unknown table {full_name}; known: {[t.full_name for t in ALL_TABLES]}")


def ensure_all(spark: SparkSession, settings: Settings | None = None) -> None:
    """Create every table of the catalog (the grid views need them all)."""
    ensure_tables(spark, ALL_TABLES, settings)
