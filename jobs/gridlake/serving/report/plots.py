"""The report's charts (matplotlib, rendered to PNG)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import date
from typing import Any

from gridlake.serving.report.model import Row

# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def _figure(panels: int = 2, width: float = 10.0, height: float = 3.6):  # noqa: ANN202
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "svg.hashsalt": "gridlake",
        }
    )
    fig, axes = plt.subplots(1, panels, figsize=(width, height), squeeze=False)
    return fig, list(axes[0])


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    # No software/date metadata: the same data gives the same bytes.
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _error_bars(
    values: Sequence[float], rows: Sequence[Row], low: str, high: str
) -> list[list[float]]:
    """matplotlib xerr (distances below and above each value) from interval columns."""
    return [
        [max(0.0, v - (r.get(low) or v)) for v, r in zip(values, rows, strict=True)],
        [max(0.0, (r.get(high) or v) - v) for v, r in zip(values, rows, strict=True)],
    ]


def _no_data(ax: Any, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _wk(d: date) -> str:
    return f"W{d.isocalendar()[1]:02d}"


def _trend(
    ax: Any,
    rows: Sequence[Row],
    series: Sequence[tuple[str, str, str]],
    title: str,
    percent: bool = True,
) -> int:
    """Lines over the weeks of ``rows``; returns the points drawn."""
    drawn = 0
    labels = [_wk(r["week"]) for r in rows]
    for key, label, color in series:
        ys = [r.get(key) for r in rows]
        xs = [i for i, y in enumerate(ys) if y is not None]
        if not xs:
            continue
        scale = 100.0 if percent else 1.0
        ax.plot(xs, [ys[i] * scale for i in xs], marker="o", label=label, color=color)
        drawn += len(xs)
    if not drawn:
        _no_data(ax, "no data in the trend window")
        return 0
    ax.set_xticks(range(len(labels)), labels)
    ax.set_title(title)
    if percent:
        ax.set_ylabel("%")
    ax.legend(fontsize=8, frameon=False)
    return drawn


def _hbars(
    ax: Any,
    labels: Sequence[str],
    series: Sequence[tuple[Sequence[float | None], str, str]],
    title: str,
    xlabel: str,
) -> int:
    """Grouped horizontal bars (one group per label); returns the bars drawn."""
    if not labels:
        _no_data(ax, "no data this week")
        return 0
    n = len(series)
    height = 0.8 / n
    drawn = 0
    for j, (values, label, color) in enumerate(series):
        ys = [i + (j - (n - 1) / 2) * height for i in range(len(labels))]
        vals = [0.0 if v is None else v for v in values]
        ax.barh(ys, vals, height=height, label=label, color=color)
        drawn += sum(1 for v in values if v is not None)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    if n > 1:
        ax.legend(fontsize=8, frameon=True, framealpha=0.9, loc="best")
    return drawn
