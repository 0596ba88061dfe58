"""The ``grid`` views: stable, documented names for what users query (defined in sql/grid/)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from gridlake.settings import SQL_DIR, Settings, get_settings


def view_files() -> list:
    return sorted((SQL_DIR / "grid").glob("*.sql"))


def create_views(spark: SparkSession, settings: Settings | None = None) -> list[str]:
    """(Re)create every view in sql/grid/; returns their names."""
    settings = settings or get_settings()
    spark.sql(
        f"CREATE DATABASE IF NOT EXISTS grid LOCATION '{settings.storage_root.rstrip('/')}/grid'"
    )
    names = []
    for path in view_files():
        spark.sql(path.read_text())
        names.append(f"grid.{path.stem}")
    return names
