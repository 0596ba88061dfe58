"""The README's query examples run, against the test instance's warehouse."""

from __future__ import annotations

import shlex

import pytest

from gridlake.settings import REPO_ROOT

from .conftest import gridlake_cli

PREFIX = ".gridlake/venv/bin/gridlake "


def readme_commands() -> list[list[str]]:
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    return [shlex.split(ln[len(PREFIX) :]) for ln in lines if ln.startswith(PREFIX + "sql ")]


def test_readme_has_query_examples() -> None:
    assert len(readme_commands()) >= 3


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("args", readme_commands(), ids=lambda a: a[1][:40])
def test_readme_query_runs(gold_demo, args: list[str]) -> None:
    out = gridlake_cli(*args)
    assert out.returncode == 0, out.stderr[-2000:]
    body = out.stdout.strip().splitlines()
    assert body, "no output"
    if "--format" in args and args[args.index("--format") + 1] == "csv":
        assert "," in body[0]
    else:
        assert body[-1].startswith("(") and "row" in body[-1]
