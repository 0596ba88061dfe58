"""The table reference (sql/grid/README.md): generated from the declarations, current, and its
examples run."""

from __future__ import annotations

import pytest

from gridlake.gold.analyze import gold_tables
from gridlake.serving.docs import REFERENCE_PATH, current_block, documented_tables, render
from gridlake.settings import REPO_ROOT

# Gold tables the demo week leaves empty: no APEL summaries are published by the demo, and
# the demo week's network samples do not reach the 5 days the congestion predictor trains on.
EMPTY_ON_DEMO = {"gold.site_efficiency_monthly", "gold.network_model_runs"}


def test_table_reference_is_current() -> None:
    assert current_block() == render(), "sql/grid/README.md is stale: run `gridlake docs`"
    assert "(sql/grid/README.md)" in (REPO_ROOT / "README.md").read_text()  # linked
    assert REFERENCE_PATH.parent == REPO_ROOT / "sql" / "grid"


def test_every_gold_table_states_question_grain_and_example() -> None:
    for t in gold_tables():
        assert t.question.endswith("?"), t.full_name
        assert t.grain.startswith("one row per"), t.full_name
        assert f"FROM {t.full_name}" in t.example, t.full_name
        assert '"' not in t.example, t.full_name  # runs inside gridlake sql "..."
    rendered = render()
    for t in documented_tables():
        assert f"#### `{t.full_name}`" in rendered
        for c in t.columns:
            assert f"| `{c.name}` | {c.ddl_type} |" in rendered, (t.full_name, c.name)
        if t.keys:
            assert "**Key:** " + ", ".join(f"`{k}`" for k in t.keys) in rendered, t.full_name


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("table", gold_tables(), ids=lambda t: t.full_name)
def test_table_example_runs_on_the_demo_warehouse(spark, gold_demo, table) -> None:
    rows = spark.sql(table.example).collect()
    if table.full_name not in EMPTY_ON_DEMO:
        assert rows, f"{table.full_name}: the example returned nothing on the demo week"
