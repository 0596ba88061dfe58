"""Numbers and tables as report text (HTML-escaped)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from gridlake.serving.report.model import Row

# --------------------------------------------------------------------------------------------
# Wording
# --------------------------------------------------------------------------------------------


def _pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def _points(delta: float | None) -> str:
    """A change of a share in percentage points, in words."""
    if delta is None:
        return "n/a"
    if abs(delta) < 0.0005:
        return "unchanged"
    return f"{'up' if delta > 0 else 'down'} {abs(100 * delta):.1f} points"


def _num(x: float | None, digits: int = 0) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def _esc(x: object) -> str:
    return html.escape(str(x))


def _table(rows: Sequence[Row], columns: Sequence[tuple[str, str, Callable[[Any], str]]]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{_esc(title)}</th>" for _, title, _ in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_esc(fmt(r.get(key)))}</td>" for key, _, fmt in columns) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _text(x: Any) -> str:
    return "" if x is None else str(x)


def _ts(x: Any) -> str:
    return "" if x is None else x.strftime("%Y-%m-%d %H:%M")
