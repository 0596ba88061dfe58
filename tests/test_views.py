"""The grid views: generated from the Table definitions, current, and serving their tables."""

from __future__ import annotations

import pytest

from gridlake.serving.views import VIEW_DIR, render_view, view_columns, view_name, view_sources


def test_view_files_are_current() -> None:
    wanted = {f"{t.name}.sql": render_view(t) for t in view_sources()}
    files = {p.name: p.read_text() for p in VIEW_DIR.glob("*.sql")}
    assert set(files) == set(wanted), "run `gridlake docs`"
    stale = [n for n in wanted if files[n] != wanted[n]]
    assert not stale, f"stale view files {stale}: run `gridlake docs`"


def test_every_silver_and_gold_table_has_a_view_without_lineage() -> None:
    names = [view_name(t) for t in view_sources()]
    assert len(names) == len(set(names))  # one namespace: no silver and gold table share a name
    assert {t.database for t in view_sources()} == {"silver", "gold", "ops"}
    for t in view_sources():
        cols = [c.name for c in view_columns(t)]
        assert not [c for c in cols if c.startswith("_")], t.full_name
        assert ("raw" in cols) == t.name.startswith("quarantine_"), t.full_name
        assert set(cols) <= {c.name for c in t.columns}, t.full_name


@pytest.mark.integration
@pytest.mark.slow
def test_views_serve_their_tables_with_comments(spark, gold_demo) -> None:
    from pyspark.sql import functions as F

    for t in view_sources():
        view = spark.table(view_name(t))
        assert view.columns == [c.name for c in view_columns(t)], t.full_name
        assert view.count() == spark.table(t.full_name).count(), t.full_name
        described = {r.col_name: r.comment for r in spark.sql(f"DESCRIBE {view_name(t)}").collect()}
        for c in view_columns(t):
            assert described[c.name] == " ".join(c.comment.split()), (t.full_name, c.name)
    # the site view answers the question of its table (a sum over the demo week's jobs)
    jobs = spark.table("grid.jobs").count()
    weekly = spark.table("grid.site_efficiency_weekly").agg(F.sum("jobs")).first()[0]
    assert jobs == weekly > 0
