"""``gridlake quality-docs``: great_expectations Data Docs of the warehouse's quality checks.

The expectation suites come from the ``Check``s of the ``Table`` definitions (the same
expectations ``gridlake.quality`` runs in the refine gate); the validation results come from
what the gate kept in ``silver.quality_results`` (one row per batch and check), the latest
``keep_batches`` batches of each table. Nothing is re-validated: the pages show what the gate
decided when each batch ran.

The site is rebuilt from scratch on each run (suites and results are derived, so a rerun gives
the same pages) in a file-backed GX project under ``<state>/quality-docs/``; the entry page is
``<state>/quality-docs/gx/uncommitted/data_docs/local_site/index.html``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from gridlake.settings import Settings, get_settings
from gridlake.tabledef import Table

__all__ = ["QualityDocs", "build_quality_docs", "suite_name", "write_quality_docs"]

_SEVERITY = {"fail": "critical", "warn": "warning"}


@dataclass
class QualityDocs:
    index: Path
    suites: int
    validations: int
    skipped_results: int  # kept results of checks the definitions no longer have


def suite_name(full_name: str) -> str:
    """GX suite name of a table: GX's file stores split keys on dots (silver.jobs would become a
    folder silver/ and a key its site builder cannot read back)."""
    return full_name.replace(".", "_")


def _parse_detail(detail: str | None) -> dict[str, Any]:
    """``unexpected_count=3, unexpected_percent=30.0`` -> {"unexpected_count": 3, ...}."""
    out: dict[str, Any] = {}
    for key, value in re.findall(r"(\w+)=([^,]+)", detail or ""):
        try:
            out[key] = int(value) if re.fullmatch(r"-?\d+", value) else float(value)
        except ValueError:
            out[key] = value.strip()
    return out


def _checked_tables() -> tuple[Table, ...]:
    from gridlake.catalog import ALL_TABLES

    return tuple(t for t in ALL_TABLES if t.checks or t.keys)


def _kept_results(spark: SparkSession, keep_batches: int, settings: Settings) -> list[Any]:
    """The rows of the latest ``keep_batches`` batches per table (bounded by construction)."""
    from gridlake.catalog import QUALITY_RESULTS

    QUALITY_RESULTS.ensure(spark, settings)
    results = spark.read.format("delta").load(QUALITY_RESULTS.path(settings))
    batches = results.groupBy("table_name", "batch_id").agg(F.max("checked_at").alias("at"))
    order = Window.partitionBy("table_name").orderBy(F.desc("at"), F.desc("batch_id"))
    latest = batches.withColumn("rn", F.row_number().over(order)).where(F.col("rn") <= keep_batches)
    return (
        results.join(latest.select("table_name", "batch_id", "at"), ["table_name", "batch_id"])
        .orderBy("table_name", "at", "batch_id", "check_kind", "check_column")
        .collect()
    )


def build_quality_docs(
    spark: SparkSession, keep_batches: int = 20, settings: Settings | None = None
) -> QualityDocs:
    """Rebuild the Data Docs under ``<state>/quality-docs/`` from the kept gate results."""
    settings = settings or get_settings()
    rows = [r.asDict() for r in _kept_results(spark, keep_batches, settings)]
    return write_quality_docs(rows, settings.state / "quality-docs")


def write_quality_docs(
    rows: list[dict[str, Any]], root: Path, tables: tuple[Table, ...] | None = None
) -> QualityDocs:
    """Data Docs from quality_results rows (dicts with its columns) and the tables' checks.

    Built in a sibling folder and swapped in when complete, so a failed build never replaces a
    good site.
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.core import (
        ExpectationSuiteValidationResult,
        ExpectationValidationResult,
    )
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    from gridlake.quality import _expectation, key_check

    build = root.with_name(f".{root.name}-build")
    shutil.rmtree(build, ignore_errors=True)
    context = gx.get_context(mode="file", project_root_dir=str(build))

    expectations: dict[str, dict[tuple[str, str | None], Any]] = {}
    for table in tables if tables is not None else _checked_tables():
        suite = context.suites.add(gx.ExpectationSuite(name=suite_name(table.full_name)))
        by_check: dict[tuple[str, str | None], Any] = {}
        key = key_check(table)
        for check in (*table.checks, *((key,) if key else ())):
            exp = _expectation(check)
            exp.severity = _SEVERITY.get(check.severity, "critical")
            by_check[(check.kind, check.column)] = suite.add_expectation(exp)
        expectations[table.full_name] = by_check

    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[(row["table_name"], row["batch_id"])].append(row)
    stored = skipped = 0
    for (table_name, batch_id), batch_rows in sorted(grouped.items()):
        known = expectations.get(table_name, {})
        results = []
        for r in batch_rows:
            exp = known.get((r["check_kind"], r["check_column"]))
            if exp is None:
                skipped += 1
                continue
            results.append(
                ExpectationValidationResult(
                    success=bool(r["success"]),
                    expectation_config=exp.configuration,
                    result=_parse_detail(r["detail"]),
                )
            )
        if not results:
            continue
        at = max(r["checked_at"] for r in batch_rows).replace(tzinfo=UTC)
        passed = sum(1 for x in results if x.success)
        name = suite_name(table_name)
        validation = ExpectationSuiteValidationResult(
            # The gate's verdict: only failed circuit-breaker (critical) checks fail a batch.
            success=all(x.success or x.expectation_config.severity != "critical" for x in results),
            results=results,
            suite_name=name,
            statistics={
                "evaluated_expectations": len(results),
                "successful_expectations": passed,
                "unsuccessful_expectations": len(results) - passed,
                "success_percent": 100.0 * passed / len(results),
            },
            meta={
                "batch_id": batch_id,
                "batch_spec": {"data_asset_name": table_name},
                "run_id": {"run_name": batch_id, "run_time": at.isoformat()},
                "active_batch_definition": {
                    "datasource_name": "gridlake refine",
                    "data_asset_name": table_name,
                    "batch_definition_name": batch_id,
                },
            },
        )
        key = ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=name),
            run_id=RunIdentifier(run_name=batch_id, run_time=at),
            batch_identifier=batch_id,
        )
        context.validation_results_store.set(key, validation)
        stored += 1
    context.build_data_docs()
    shutil.rmtree(root, ignore_errors=True)
    build.rename(root)
    index = root / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    return QualityDocs(index, len(expectations), stored, skipped)
