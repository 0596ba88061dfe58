"""``gridlake report``: the weekly site reports, the grid-wide summary and their index.

For an ISO week, each site with jobs gets one report (HTML, and PDF printed from it by headless
Chromium) under ``<state>/reports/<week>/``: its CPU efficiency against its previous 8 weeks and
the grid, by job type; badput and failures by mode; job length advice for its job types; CPU
speed against the benchmark for its CPU models; I/O signatures and saturated nodes; network
paths from and to it (cost, congestion, alarms); and its entries on the outlier list. Each
section has one plot and one plain sentence saying what changed. The summary does the same for
the whole grid; ``index.html`` links everything.

Every number comes from ``gridlake.serving.report_queries`` (SQL over the ``grid`` views, the
layer the dashboards read); this module only words and draws them. A report depends only on the gold
tables and the week: no clock, no randomness, fixed plot metadata, so building it again gives
byte-identical HTML (the PDF differs only in the creation date Chromium embeds).
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from gridlake.serving import report_queries as rq
from gridlake.settings import Settings, get_settings

__all__ = [
    "SITE_SECTIONS",
    "SUMMARY_SECTIONS",
    "NoGoldDataError",
    "Report",
    "Section",
    "build_site_report",
    "build_summary_report",
    "ensure_views",
    "html_to_pdf",
    "parse_week",
    "render_html",
    "report_dir",
    "site_file_stem",
    "week_label",
    "write_index",
    "write_report",
]

Row = dict[str, Any]

# Section keys and titles, in report order (the tests check every one is present).
SITE_SECTIONS = (
    ("efficiency", "CPU efficiency"),
    ("failures", "Badput and failures by mode"),
    ("job_length", "Job length advice"),
    ("cpu_speed", "CPU speed vs benchmark"),
    ("io", "I/O signatures and saturated nodes"),
    ("network", "Network paths to and from the site"),
    ("outliers", "Outliers"),
)
SUMMARY_SECTIONS = (
    ("efficiency", "CPU efficiency by site"),
    ("failures", "Badput by site and failure mode"),
    ("io", "Core-hours lost to I/O and memory limits"),
    ("network", "Network alarms and costly paths"),
    ("outliers", "Outlier list"),
    ("cpu_speed", "CPU speed vs benchmark"),
)
SIGNATURE_COLORS = {
    "cpu_bound": "#4c9f70",
    "io_wait_bound": "#d1495b",
    "memory_bound": "#edae49",
    "remote_read_bound": "#00798c",
    "init_dominated": "#8f6bb3",
    "mixed": "#a0a0a0",
}
SITE_COLOR, GRID_COLOR, PREVIOUS_COLOR = "#1f77b4", "#ff7f0e", "#9ecae1"


class NoGoldDataError(RuntimeError):
    """The gold tables hold nothing for the week (or the site): analytics has not run yet."""


@dataclass
class Section:
    key: str
    title: str
    sentence: str
    figure: bytes | None = None
    points: int = 0  # data points drawn in the figure (0: the figure says "no data")
    table: str = ""
    note: str = ""


@dataclass
class Report:
    kind: str  # "site" | "summary"
    week: date
    title: str
    subtitle: str
    sections: list[Section] = field(default_factory=list)
    stem: str = ""  # file name without extension


# --------------------------------------------------------------------------------------------
# Weeks and paths
# --------------------------------------------------------------------------------------------


def parse_week(text: str) -> date:
    """``2026-W46`` (ISO week) or a date ``2026-11-11`` (its ISO week) -> the Monday."""
    text = text.strip()
    match = re.fullmatch(r"(\d{4})-W(\d{1,2})", text)
    if match:
        try:
            return date.fromisocalendar(int(match.group(1)), int(match.group(2)), 1)
        except ValueError as exc:
            raise ValueError(f"no such ISO week: {text}") from exc
    try:
        day = datetime.fromisoformat(text).date() if "T" in text else date.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"--week takes 2026-W46 or a date (YYYY-MM-DD), not {text!r}") from exc
    return day - timedelta(days=day.weekday())


def week_label(monday: date) -> str:
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def report_dir(week: date, settings: Settings | None = None) -> Path:
    return (settings or get_settings()).state / "reports" / week_label(week)


def site_file_stem(site: str) -> str:
    """A file name for a site (grid site names are mostly safe; anything else becomes _)."""
    return "site-" + re.sub(r"[^A-Za-z0-9._-]", "_", site)


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


# --------------------------------------------------------------------------------------------
# Site report
# --------------------------------------------------------------------------------------------


class _Q:
    """Runs the report's queries for one site and week (and keeps their rows)."""

    def __init__(
        self, spark: SparkSession, week: date, site: str | None = None, views: str = rq.VIEWS
    ) -> None:
        self.spark, self.week, self.site, self.views = spark, week, site, views

    def __call__(self, name: str) -> list[Row]:
        params: dict[str, Any] = {"week": self.week}
        if self.site is not None:
            params["site"] = self.site
        return rq.run(self.spark, name, self.views, **params)

    def one(self, name: str) -> Row:
        rows = self(name)
        return rows[0] if rows else {}


def _efficiency_section(q: _Q) -> Section:
    head, weeks, types = q.one("site_headline"), q("site_weeks"), q("site_job_types")
    prev_n = head.get("previous_weeks") or 0
    sentence = f"CPU efficiency was {_pct(head.get('efficiency'))} this week"
    if prev_n:
        sentence += (
            f", {_points(head.get('efficiency_change'))} from "
            f"{_pct(head.get('previous_efficiency'))} over the previous {prev_n} weeks"
        )
    vs = head.get("efficiency_vs_grid")
    if vs is not None:
        where = "above" if vs > 0 else "below"
        sentence += (
            f", {abs(100 * vs):.1f} points {where} the grid ({_pct(head.get('grid_efficiency'))})"
        )
    worst = next((t for t in types if (t.get("gap_to_grid") or 0) > 0), None)
    if worst:
        sentence += (
            f"; the widest gap to the grid is {worst['job_type']} "
            f"({_pct(worst['efficiency'], 0)} here, {_pct(worst['grid_efficiency'], 0)} on the "
            "grid)"
        )
    sentence += "."
    fig, (a, b) = _figure()
    drawn = _trend(
        a,
        weeks,
        [
            ("site_efficiency", q.site or "site", SITE_COLOR),
            ("grid_efficiency", "grid", GRID_COLOR),
        ],
        "CPU efficiency per week",
    )
    pct = lambda k: [None if t.get(k) is None else 100 * t[k] for t in types]  # noqa: E731
    drawn += _hbars(
        b,
        [t["job_type"] for t in types],
        [
            (pct("efficiency"), "this week", SITE_COLOR),
            (pct("previous_efficiency"), "previous weeks", PREVIOUS_COLOR),
            (pct("grid_efficiency"), "grid this week", GRID_COLOR),
        ],
        "By job type",
        "CPU efficiency, %",
    )
    table = _table(
        types,
        [
            ("job_type", "job type", _text),
            ("core_hours", "core-hours", _num),
            ("efficiency", "efficiency", _pct),
            ("previous_efficiency", f"previous weeks (up to {rq.TREND_WEEKS})", _pct),
            ("grid_efficiency", "grid", _pct),
        ],
    )
    return Section("efficiency", "", sentence, _png(fig), drawn, table)


def _failures_section(q: _Q) -> Section:
    head, weeks, modes = q.one("site_headline"), q("site_weeks"), q("site_failure_modes")
    modes = [m for m in modes if m["failed_jobs"]]
    sentence = (
        f"Failed attempts ({_num(head.get('failed_jobs'))} of {_num(head.get('jobs'))}) wasted "
        f"{_num(head.get('badput_core_hours'), 1)} core-hours, "
        f"{_pct(head.get('badput_share'))} of the site's core-hours"
    )
    if head.get("previous_weeks"):
        sentence += (
            f" ({_points(head.get('badput_share_change'))} from "
            f"{_pct(head.get('previous_badput_share'))} over the previous weeks)"
        )
    if modes:
        top = modes[0]
        sentence += (
            f"; most of it to {top['failure_mode']} ({_pct(top['wasted_share'], 0)}, "
            f"{top['failed_jobs']} attempts"
        )
        before = top.get("previous_failed_jobs_per_week")
        if before is not None:
            sentence += f", {before:.1f} a week over the previous weeks"
        sentence += ")"
    sentence += "."
    fig, (a, b) = _figure()
    drawn = _trend(
        a,
        weeks,
        [
            ("site_badput_share", q.site or "site", SITE_COLOR),
            ("grid_badput_share", "grid", GRID_COLOR),
        ],
        "Badput: failed core-hours / all core-hours",
    )
    drawn += _hbars(
        b,
        [m["failure_mode"] for m in modes],
        [([m["wasted_core_hours"] for m in modes], "this week", SITE_COLOR)],
        "Wasted core-hours by failure mode",
        "core-hours",
    )
    table = _table(
        modes,
        [
            ("failure_mode", "failure mode", _text),
            ("failed_jobs", "failed attempts", _num),
            ("wasted_core_hours", "wasted core-hours", lambda x: _num(x, 1)),
            ("wasted_share", "share", _pct),
            ("previous_failed_jobs_per_week", "per week before", lambda x: _num(x, 1)),
        ],
    )
    note = (
        f"Retried attempts held {_num(head.get('retry_waste_core_hours'), 1)} core-hours this "
        "week (retry waste, failed or not)."
    )
    return Section("failures", "", sentence, _png(fig), drawn, table, note)


def _job_length_section(q: _Q) -> Section:
    rows = q("site_job_length")
    gain = next((r for r in rows if (r.get("site_core_hours_saved") or 0) > 0.05), None)
    if gain:
        sentence = (
            f"{gain['job_type']} jobs would gain most from another length: their median payload "
            f"is {gain['current_median_hours']:.1f} h against an optimal "
            f"{gain['optimal_hours']:.1f} h, which would have saved "
            f"{_num(gain['site_core_hours_saved'], 1)} of the site's "
            f"{_num(gain['site_core_hours'], 1)} {gain['job_type']} core-hours this week."
        )
    elif rows:
        sentence = "The job types run here are already close to their optimal length."
    else:
        sentence = "No job length advice covers the job types run here this week."
    fig, (a, b) = _figure()
    labels = [r["job_type"] for r in rows]
    drawn = _hbars(
        a,
        labels,
        [
            ([r.get("current_median_hours") for r in rows], "median today", PREVIOUS_COLOR),
            ([r.get("optimal_hours") for r in rows], "optimal", SITE_COLOR),
        ],
        "Payload length per job",
        "hours",
    )
    drawn += _hbars(
        b,
        labels,
        [([r.get("site_core_hours_saved") for r in rows], "saved this week", SITE_COLOR)],
        "Site core-hours the optimal length would save",
        "core-hours",
    )
    table = _table(
        rows,
        [
            ("job_type", "job type", _text),
            ("site_core_hours", "site core-hours", _num),
            ("init_seconds", "init s", _num),
            ("current_median_hours", "median h", lambda x: _num(x, 1)),
            ("optimal_hours", "optimal h", lambda x: _num(x, 1)),
            ("current_useful_fraction", "useful now", _pct),
            ("expected_useful_fraction", "useful at optimum", _pct),
            ("site_core_hours_saved", "saved core-hours", lambda x: _num(x, 1)),
        ],
    )
    note = "Advice from every week loaded (gold.job_length_advice has no week)."
    return Section("job_length", "", sentence, _png(fig), drawn, table, note)


def _cpu_speed_section(q: _Q) -> Section:
    models, term = q("site_cpu_models"), q.one("site_speed_term")
    parts = []
    if term.get("slowdown") is not None:
        s = term["slowdown"]
        flag = " (flagged)" if term.get("flagged") else ""
        if abs(s - 1) < 0.005:
            parts.append(
                "jobs here need as much CPU time per event as at the median site on the same "
                f"CPU models{flag}"
            )
        else:
            how = "more" if s > 1 else "less"
            parts.append(
                f"jobs here need {abs(100 * (s - 1)):.0f}% {how} CPU time per event than the "
                f"median site on the same CPU models{flag}"
            )
    with_bench = [m for m in models if m.get("ratio") is not None]
    off = [m for m in with_bench if m.get("benchmark_mismatch")]
    if off:
        worst = max(off, key=lambda m: abs(m["ratio"] - 1))
        parts.append(
            f"the benchmark mispredicts {len(off)} of its {len(with_bench)} CPU models "
            f"({worst['cpu_model']} runs at {worst['ratio']:.2f} of its HS23 rating)"
        )
    elif with_bench:
        parts.append(f"the benchmark predicts all {len(with_bench)} of its CPU models")
    by_type = [m for m in models if m.get("mismatch_job_types")]
    if by_type:
        m = by_type[0]
        parts.append(
            f"for {m['mismatch_job_types']} jobs it mispredicts {m['cpu_model']} (down to "
            f"{m['mismatch_min_ratio']:.2f} of its rating)"
        )
    sentence = (
        (parts[0][0].upper() + parts[0][1:] + "".join(f"; {p}" for p in parts[1:]) + ".")
        if parts
        else "No CPU speed figures cover this site yet."
    )
    fig, (a, b) = _figure()
    drawn = 0
    if with_bench:
        xs = [m["benchmark_factor"] for m in with_bench]
        ys = [m["speed_factor"] for m in with_bench]
        colors = ["#d1495b" if m.get("benchmark_mismatch") else SITE_COLOR for m in with_bench]
        a.scatter(xs, ys, c=colors, zorder=3)
        lo, hi = min(xs + ys) * 0.95, max(xs + ys) * 1.05
        a.plot([lo, hi], [lo, hi], color="0.6", linestyle="--", label="benchmark = measured")
        a.set_xlabel("declared HS23 per core, relative")
        a.set_ylabel("measured speed, relative")
        a.set_title("Measured speed vs benchmark (red: mismatch)")
        a.legend(fontsize=8, frameon=False)
        drawn += len(with_bench)
    else:
        _no_data(a, "no benchmark figures for the site's models")
    slow = [m for m in models if m.get("slowdown") is not None]
    if slow:
        ys = list(range(len(slow)))
        vals = [m["slowdown"] for m in slow]
        err = _error_bars(vals, slow, "slowdown_ci_low", "slowdown_ci_high")
        colors = ["#d1495b" if m.get("slow_here") else SITE_COLOR for m in slow]
        b.barh(ys, vals, xerr=err, color=colors)
        b.axvline(1.0, color="0.4", linestyle="--")
        b.set_yticks(ys, [m["cpu_model"][:38] for m in slow], fontsize=7)
        b.invert_yaxis()
        b.set_xlim(left=min(0.8, min(vals) * 0.95))
        b.set_title("CPU time per event here vs elsewhere")
        b.set_xlabel("slowdown (1 = as elsewhere)")
        drawn += len(slow)
    else:
        _no_data(b, "no site-level speed figures")
    table = _table(
        models,
        [
            ("cpu_model", "CPU model", _text),
            ("site_jobs", "jobs here", _num),
            ("slowdown", "slowdown here", lambda x: _num(x, 3)),
            ("benchmark_factor", "benchmark", lambda x: _num(x, 3)),
            ("speed_factor", "measured", lambda x: _num(x, 3)),
            ("ratio", "measured / benchmark", lambda x: _num(x, 3)),
            ("benchmark_mismatch", "mismatch", _text),
            ("mismatch_job_types", "mismatch for", _text),
        ],
    )
    note = "Speed factors from every week loaded (relative to each group's reference model)."
    return Section("cpu_speed", "", sentence, _png(fig), drawn, table, note)


def _io_section(q: _Q) -> Section:
    weeks, head, hosts = q("site_io_weeks"), q.one("site_io_headline"), q("site_saturated_hosts")
    if head.get("io_wait_share") is None and not hosts:
        sentence = "No node samples from this site this week: its I/O limits are unknown."
    else:
        sentence = (
            f"{_pct(head.get('io_wait_share'), 0)} of the classified core-hours were I/O-wait bound"
        )
        if head.get("previous_io_wait_share") is not None:
            sentence += f" ({_pct(head.get('previous_io_wait_share'), 0)} in the previous weeks)"
        sentence += f" and {_pct(head.get('memory_share'), 0)} memory bound"
        saturated = sum(1 for h in hosts if h["saturated_hours"])
        sentence += (
            f"; {saturated} of {len(hosts)} monitored hosts were saturated at some hour, "
            f"{_pct(head.get('saturated_share'), 0)} of the host-hours"
        )
        if head.get("previous_saturated_share") is not None:
            sentence += f" ({_pct(head.get('previous_saturated_share'), 0)} before)"
        sentence += "."
    fig, (a, b) = _figure()
    drawn = 0
    if weeks:
        left = [0.0] * len(weeks)
        xs = range(len(weeks))
        for sig, color in SIGNATURE_COLORS.items():
            vals = [100 * (w.get(f"share_{sig}") or 0.0) for w in weeks]
            a.bar(xs, vals, bottom=left, color=color, label=sig.replace("_", " "))
            left = [x + v for x, v in zip(left, vals, strict=True)]
            drawn += sum(1 for w in weeks if w.get(f"share_{sig}"))
        a.set_xticks(list(xs), [_wk(w["week"]) for w in weeks])
        a.set_ylabel("% of classified core-hours")
        a.set_title("I/O signatures per week")
        a.legend(fontsize=7, frameon=False, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    else:
        _no_data(a, "no node samples in the trend window")
    drawn += _hbars(
        b,
        [h["host"] for h in hosts],
        [
            ([h["hours"] for h in hosts], "hours with samples", PREVIOUS_COLOR),
            ([h["saturated_hours"] for h in hosts], "saturated hours", "#d1495b"),
        ],
        "Monitored hosts this week",
        "hours",
    )
    table = _table(
        hosts,
        [
            ("host", "host", _text),
            ("hours", "hours", _num),
            ("saturated_hours", "saturated", _num),
            ("disk_saturated_hours", "disk", _num),
            ("memory_pressure_hours", "memory", _num),
            ("disk_util_p95_max", "max disk util p95 %", lambda x: _num(x, 0)),
        ],
    )
    return Section("io", "", sentence, _png(fig), drawn, table)


def _network_section(q: _Q) -> Section:
    paths, head, alarms = (
        q("site_network_paths"),
        q.one("site_network_headline"),
        q("site_network_alarms"),
    )
    if not paths:
        sentence = "No perfSONAR measurements from or to this site this week."
    else:
        sentence = f"Moving 1 GB to the site took a median {_num(head.get('incoming_cost'), 1)} s"
        if head.get("previous_incoming_cost") is not None:
            sentence += f" ({_num(head.get('previous_incoming_cost'), 1)} s the week before)"
        sentence += f" and from it {_num(head.get('outgoing_cost'), 1)} s"
        if head.get("previous_outgoing_cost") is not None:
            sentence += f" ({_num(head.get('previous_outgoing_cost'), 1)} s)"
        sentence += (
            f"; {head.get('congested_paths', 0)} of {head.get('paths', 0)} paths were congested "
            "more than a tenth of the time"
        )
        if alarms:
            kinds: dict[str, int] = {}
            for r in alarms:
                kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
            listing = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(kinds.items()))
            n = len(alarms)
            sentence += f", and {n} alarm{'s were' if n > 1 else ' was'} open ({listing})."
        else:
            sentence += ", and no alarm was open."
    fig, axes = _figure()
    drawn = 0
    for ax, direction, title in (
        (axes[0], "incoming", "To the site: seconds per GB from each source"),
        (axes[1], "outgoing", "From the site: seconds per GB to each destination"),
    ):
        rows = [p for p in paths if p["direction"] == direction and p["cost_seconds_per_gb"]]
        drawn += _hbars(
            ax,
            [p["peer"] for p in rows],
            [
                ([p["cost_seconds_per_gb"] for p in rows], "this week", SITE_COLOR),
                ([p["previous_cost_seconds_per_gb"] for p in rows], "week before", PREVIOUS_COLOR),
            ],
            title,
            "s / GB",
        )
    table = _table(
        alarms,
        [
            ("kind", "alarm", _text),
            ("src_site", "from", _text),
            ("dst_site", "to", _text),
            ("start_ts", "start (UTC)", _ts),
            ("end_ts", "end (UTC)", _ts),
            ("value", "value", lambda x: _num(x, 3)),
        ],
    )
    return Section("network", "", sentence, _png(fig), drawn, table)


def _outliers_section(q: _Q) -> Section:
    rows, weeks = q("site_outliers"), q("site_outlier_weeks")
    before = [w["outliers"] for w in weeks if w["week"] < q.week]

    def entries(n: int) -> str:
        return f"{n} {'entry' if n == 1 else 'entries'}"

    if rows:
        sentence = f"The site has {entries(len(rows))} on this week's outlier list"
        if before:
            sentence += f" ({before[-1]} the week before)"
        sentence += f"; the strongest: {rows[0]['evidence']}"
        sentence = sentence.rstrip(".") + "."
    else:
        sentence = "The site is on none of this week's outlier lists"
        sentence += f" ({entries(before[-1])} the week before)." if before else "."
    fig, (a, b) = _figure()
    drawn = 0
    if weeks:
        a.bar(range(len(weeks)), [w["outliers"] for w in weeks], color=SITE_COLOR)
        a.set_xticks(range(len(weeks)), [_wk(w["week"]) for w in weeks])
        a.set_title("Outlier entries per week")
        drawn += sum(1 for w in weeks if w["outliers"])
    else:
        _no_data(a, "no weeks")
    labels = [f"{r['job_type']} {r['metric'].replace('_', ' ')} ({r['comparison']})" for r in rows]
    drawn += _hbars(
        b,
        labels,
        [([r["robust_z"] for r in rows], "robust z", "#d1495b")],
        "This week's entries: robust z",
        "robust z (log scale, vs baseline)",
    )
    table = _table(
        rows,
        [
            ("job_type", "job type", _text),
            ("metric", "metric", _text),
            ("value", "value", lambda x: _num(x, 3)),
            ("baseline", "baseline", lambda x: _num(x, 3)),
            ("deviation_pct", "deviation %", lambda x: _num(x, 1)),
            ("robust_z", "z", lambda x: _num(x, 1)),
            ("comparison", "vs", _text),
            ("rule_id", "rule", _text),
        ],
    )
    return Section("outliers", "", sentence, _png(fig), drawn, table)


_SITE_BUILDERS: dict[str, Callable[[_Q], Section]] = {
    "efficiency": _efficiency_section,
    "failures": _failures_section,
    "job_length": _job_length_section,
    "cpu_speed": _cpu_speed_section,
    "io": _io_section,
    "network": _network_section,
    "outliers": _outliers_section,
}


def _week_range(week: date) -> str:
    return f"{week_label(week)}, {week:%a %d %b} to {week + timedelta(days=6):%a %d %b %Y} (UTC)"


def week_sites(spark: SparkSession, week: date, views: str = rq.VIEWS) -> list[str]:
    """Sites with jobs in the week; raises NoGoldDataError when there are none."""
    sites = [r["site"] for r in rq.run(spark, "week_sites", views, week=week)]
    if not sites:
        raise NoGoldDataError(
            f"grid.site_efficiency_weekly has no rows for {week_label(week)}: has grid_analytics "
            "(gridlake analyze) run over that week's data?"
        )
    return sites


def build_site_report(spark: SparkSession, site: str, week: date, views: str = rq.VIEWS) -> Report:
    sites = week_sites(spark, week, views)
    if site not in sites:
        raise NoGoldDataError(
            f"site {site!r} ran no jobs in {week_label(week)}; sites with jobs: {', '.join(sites)}"
        )
    q = _Q(spark, week, site, views)
    report = Report(
        "site",
        week,
        f"{site}: weekly site report",
        _week_range(week),
        stem=site_file_stem(site),
    )
    for key, title in SITE_SECTIONS:
        section = _SITE_BUILDERS[key](q)
        section.title = title
        report.sections.append(section)
    return report


# --------------------------------------------------------------------------------------------
# Grid-wide summary
# --------------------------------------------------------------------------------------------


def _stacked_by_site(
    ax: Any,
    rows: Sequence[Row],
    key: str,
    value: str,
    title: str,
    xlabel: str,
    colors: dict[str, str] | None = None,
) -> int:
    sites = sorted({r["site"] for r in rows})
    cats = sorted({r[key] for r in rows})
    if not sites:
        _no_data(ax, "no data this week")
        return 0
    left = [0.0] * len(sites)
    drawn = 0
    for i, cat in enumerate(cats):
        vals = [
            sum(r[value] or 0.0 for r in rows if r["site"] == s and r[key] == cat) for s in sites
        ]
        color = (colors or {}).get(cat, f"C{i % 10}")
        ax.barh(range(len(sites)), vals, left=left, label=cat.replace("_", " "), color=color)
        left = [x + v for x, v in zip(left, vals, strict=True)]
        drawn += sum(1 for v in vals if v)
    ax.set_yticks(range(len(sites)), sites, fontsize=7)
    ax.invert_yaxis()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=7, frameon=False)
    return drawn


def _summary_efficiency(q: _Q) -> Section:
    head, weeks, sites = q.one("grid_headline"), q("grid_weeks"), q("grid_sites")
    sentence = (
        f"Grid CPU efficiency was {_pct(head.get('efficiency'))} over "
        f"{_num(head.get('core_hours'))} core-hours at {head.get('sites', 0)} sites"
    )
    if head.get("previous_weeks"):
        sentence += (
            f", {_points(head.get('efficiency_change'))} from "
            f"{_pct(head.get('previous_efficiency'))} over the previous weeks"
        )
    if sites:
        sentence += f"; lowest: {sites[0]['site']} at {_pct(sites[0]['efficiency'])}"
        drops = [s for s in sites if (s.get("efficiency_change") or 0) < 0]
        if drops:
            d = min(drops, key=lambda s: s["efficiency_change"])
            sentence += f", largest drop: {d['site']} ({_points(d['efficiency_change'])})"
    sentence += "."
    fig, (a, b) = _figure()
    drawn = _trend(a, weeks, [("efficiency", "grid", GRID_COLOR)], "Grid CPU efficiency per week")
    pct = lambda k: [None if s.get(k) is None else 100 * s[k] for s in sites]  # noqa: E731
    drawn += _hbars(
        b,
        [s["site"] for s in sites],
        [
            (pct("efficiency"), "this week", SITE_COLOR),
            (pct("previous_efficiency"), "previous weeks", PREVIOUS_COLOR),
        ],
        "Sites, least efficient first",
        "CPU efficiency, %",
    )
    table = _table(
        sites,
        [
            ("site", "site", _text),
            ("jobs", "jobs", _num),
            ("core_hours", "core-hours", _num),
            ("efficiency", "efficiency", _pct),
            ("efficiency_change", "change", _points),
            ("badput_share", "badput", _pct),
            ("io_lost_core_hours", "lost to I/O h", _num),
            ("outliers", "outliers", _num),
            ("alarms", "net alarms", _num),
        ],
    )
    return Section("efficiency", "", sentence, _png(fig), drawn, table)


def _summary_failures(q: _Q) -> Section:
    head, rows = q.one("grid_headline"), q("grid_failure_modes")
    sentence = f"Failures wasted {_pct(head.get('badput_share'))} of the grid's core-hours"
    if head.get("previous_weeks"):
        sentence += f" ({_pct(head.get('previous_badput_share'))} over the previous weeks)"
    by_site: dict[str, float] = {}
    by_mode: dict[str, float] = {}
    for r in rows:
        by_site[r["site"]] = by_site.get(r["site"], 0.0) + (r["wasted_core_hours"] or 0.0)
        by_mode[r["failure_mode"]] = by_mode.get(r["failure_mode"], 0.0) + (
            r["wasted_core_hours"] or 0.0
        )
    if by_site:
        site = max(sorted(by_site), key=lambda s: by_site[s])
        mode = max(sorted(by_mode), key=lambda m: by_mode[m])
        sentence += (
            f"; {site} wasted most ({_num(by_site[site], 1)} core-hours), and {mode} was the "
            "costliest mode"
        )
    sentence += "."
    fig, (a,) = _figure(1)
    drawn = _stacked_by_site(
        a,
        rows,
        "failure_mode",
        "wasted_core_hours",
        "Wasted core-hours by site and failure mode",
        "core-hours",
    )
    return Section("failures", "", sentence, _png(fig), drawn)


def _summary_io(q: _Q) -> Section:
    rows = q("grid_io_lost")
    limits = [k for k in SIGNATURE_COLORS if k != "cpu_bound"]
    long_rows = [
        {"site": r["site"], "limit": k, "hours": r.get(k) or 0.0} for r in rows for k in limits
    ]
    total = sum(x["hours"] for x in long_rows)
    if rows:
        worst = max(rows, key=lambda r: (sum(r.get(k) or 0.0 for k in limits), r["site"]))
        limit = max(limits, key=lambda k: worst.get(k) or 0.0)
        sentence = (
            f"Jobs lost {_num(total, 1)} core-hours to I/O, memory and initialisation limits; "
            f"{worst['site']} lost most ({_num(sum(worst.get(k) or 0.0 for k in limits), 1)}, "
            f"mostly {limit.replace('_', ' ')})."
        )
    else:
        sentence = "No node samples this week: the I/O limits are unknown."
    fig, (a,) = _figure(1)
    drawn = _stacked_by_site(
        a,
        long_rows,
        "limit",
        "hours",
        "Core-hours lost by site and limit",
        "core-hours",
        SIGNATURE_COLORS,
    )
    return Section("io", "", sentence, _png(fig), drawn)


def _summary_network(q: _Q) -> Section:
    alarms, paths = q("grid_alarms"), q("grid_costly_paths")
    n = sum(a["alarms"] for a in alarms)
    sentence = f"{n} network alarms were open this week"
    if alarms:
        kinds = ", ".join(f"{a['alarms']} {a['kind'].replace('_', ' ')}" for a in alarms)
        sentence += f" ({kinds})"
    if paths:
        p = paths[0]
        sentence += (
            f"; the costliest path was {p['src_site']} to {p['dst_site']} at "
            f"{_num(p['cost_seconds_per_gb'], 1)} s per GB"
        )
    sentence += "."
    fig, (a, b) = _figure()
    drawn = _hbars(
        a,
        [x["kind"].replace("_", " ") for x in alarms],
        [([x["alarms"] for x in alarms], "alarms", "#d1495b")],
        "Alarms by kind",
        "alarms",
    )
    drawn += _hbars(
        b,
        [f"{p['src_site']} > {p['dst_site']}" for p in paths],
        [([p["cost_seconds_per_gb"] for p in paths], "s / GB", SITE_COLOR)],
        "Costliest paths",
        "seconds per GB",
    )
    return Section("network", "", sentence, _png(fig), drawn)


def _summary_outliers(q: _Q) -> Section:
    rows = q("grid_outliers")
    by_entity: dict[str, int] = {}
    for r in rows:
        by_entity[r["entity"]] = by_entity.get(r["entity"], 0) + 1
    if rows:
        listing = ", ".join(f"{n} {e}" for e, n in sorted(by_entity.items()))
        top = rows[0]
        sentence = (
            f"{len(rows)} entries on this week's outlier list ({listing}); strongest: "
            f"{top['entity']} {top['entity_value']}, {top['job_type']} {top['metric']} "
            f"{_num(top['deviation_pct'], 0)}% from its baseline."
        )
    else:
        sentence = "Nothing on this week's outlier list."
    fig, (a,) = _figure(1, height=4.2)
    top = rows[:15]
    drawn = _hbars(
        a,
        [f"{r['entity']} {r['entity_value'][:28]} {r['job_type']}" for r in top],
        [([r["robust_z"] for r in top], "robust z", "#d1495b")],
        "Strongest entries: robust z",
        "robust z",
    )
    table = _table(
        rows,
        [
            ("entity", "entity", _text),
            ("entity_value", "which", _text),
            ("job_type", "job type", _text),
            ("metric", "metric", _text),
            ("deviation_pct", "deviation %", lambda x: _num(x, 1)),
            ("robust_z", "z", lambda x: _num(x, 1)),
            ("comparison", "vs", _text),
        ],
    )
    return Section("outliers", "", sentence, _png(fig), drawn, table)


def _summary_cpu_speed(q: _Q) -> Section:
    rows = q("grid_benchmark")
    flagged = [r for r in rows if r.get("flagged")]
    models = {r["cpu_model"] for r in rows if r["job_type"] == "ALL"}
    if flagged:
        w = flagged[0]
        sentence = (
            f"The declared benchmark mispredicts {len(flagged)} (CPU model, job type) pairs of "
            f"{len(models)} models measured; the largest: {w['cpu_model']} for {w['job_type']} "
            f"jobs at {w['ratio']:.2f} of its HS23 rating."
        )
    elif rows:
        sentence = f"The declared benchmark predicts all {len(models)} CPU models measured."
    else:
        sentence = "No CPU speed factors yet."
    fig, (a,) = _figure(1, height=4.2)
    drawn = 0
    if rows:
        ys = list(range(len(rows)))
        vals = [r["ratio"] for r in rows]
        err = _error_bars(vals, rows, "ratio_ci_low", "ratio_ci_high")
        colors = ["#d1495b" if r.get("flagged") else SITE_COLOR for r in rows]
        a.barh(ys, vals, xerr=err, color=colors)
        a.axvline(1.0, color="0.4", linestyle="--")
        a.set_yticks(ys, [f"{r['cpu_model'][:40]} ({r['job_type']})" for r in rows], fontsize=7)
        a.invert_yaxis()
        a.set_xlim(left=min(0.6, min(vals) * 0.95))
        a.set_title("Measured speed / declared benchmark (red: flagged)")
        drawn = len(rows)
    else:
        _no_data(a, "no speed factors")
    return Section("cpu_speed", "", sentence, _png(fig), drawn)


_SUMMARY_BUILDERS: dict[str, Callable[[_Q], Section]] = {
    "efficiency": _summary_efficiency,
    "failures": _summary_failures,
    "io": _summary_io,
    "network": _summary_network,
    "outliers": _summary_outliers,
    "cpu_speed": _summary_cpu_speed,
}


def build_summary_report(spark: SparkSession, week: date, views: str = rq.VIEWS) -> Report:
    week_sites(spark, week, views)  # fails clearly without gold data for the week
    q = _Q(spark, week, views=views)
    report = Report(
        "summary", week, "Grid-wide weekly summary", _week_range(week), stem="grid-summary"
    )
    for key, title in SUMMARY_SECTIONS:
        section = _SUMMARY_BUILDERS[key](q)
        section.title = title
        report.sections.append(section)
    return report


# --------------------------------------------------------------------------------------------
# HTML, PDF, files
# --------------------------------------------------------------------------------------------

_CSS = """
@page { size: A4 landscape; margin: 12mm; }
body { font-family: 'DejaVu Sans', sans-serif; font-size: 10pt; color: #222; margin: 0 8px; }
header h1 { font-size: 17pt; margin: 0 0 2px 0; }
header p { margin: 0 0 6px 0; color: #555; }
nav ol { margin: 4px 0; columns: 2; }
section + section { page-break-before: always; break-before: page; }
section h2 { font-size: 14pt; margin: 0 0 4px 0; }
p.changed { font-size: 11pt; margin: 2px 0 6px 0; }
p.note { color: #666; font-size: 8.5pt; margin: 2px 0; }
img.plot { width: 100%; max-height: 105mm; object-fit: contain; }
table { border-collapse: collapse; font-size: 8pt; margin-top: 4px; }
th, td { border-bottom: 1px solid #ddd; padding: 1px 6px; text-align: left; }
th { background: #f3f3f3; }
"""


def render_html(report: Report) -> str:
    toc = "".join(f'<li><a href="#{s.key}">{_esc(s.title)}</a></li>' for s in report.sections)
    body = []
    for i, s in enumerate(report.sections, 1):
        img = ""
        if s.figure is not None:
            data = base64.b64encode(s.figure).decode()
            img = (
                f'<img class="plot" data-points="{s.points}" alt="{_esc(s.title)}" '
                f'src="data:image/png;base64,{data}">'
            )
        note = f'<p class="note">{_esc(s.note)}</p>' if s.note else ""
        body.append(
            f'<section id="{s.key}" data-section="{s.key}">'
            f"<h2>{i}. {_esc(s.title)}</h2>"
            f'<p class="changed">{_esc(s.sentence)}</p>{img}{note}{s.table}</section>'
        )
    source = (
        "Figures from the gold tables through the grid views (gridlake.serving.report_queries), "
        "the query layer of the dashboards."
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(report.title)} {_esc(week_label(report.week))}</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<header><h1>{_esc(report.title)}</h1><p>{_esc(report.subtitle)}</p>"
        f'<p class="note">{_esc(source)}</p><nav><ol>{toc}</ol></nav></header>'
        + "".join(body)
        + "</body></html>\n"
    )


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def chromium_path() -> str:
    exe = os.environ.get("GRIDLAKE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(exe).is_file():
        raise FileNotFoundError(
            f"no Chromium at {exe} (PDF reports print the HTML with headless Chromium; install "
            "it with infra/install_system.sh or set GRIDLAKE_CHROMIUM)"
        )
    return exe


def html_to_pdf(html_path: Path, pdf_path: Path, timeout: float = 180.0) -> None:
    """Print an HTML file to PDF with headless Chromium (fresh profile, no network)."""
    with tempfile.TemporaryDirectory(prefix="gridlake-chromium-") as profile:
        tmp = pdf_path.with_name(f".{pdf_path.name}.tmp")
        cmd = [
            chromium_path(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            f"--user-data-dir={profile}",
            "--no-pdf-header-footer",
            f"--print-to-pdf={tmp}",
            html_path.resolve().as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if proc.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
            tail = (proc.stderr or proc.stdout)[-2000:]
            raise RuntimeError(
                f"Chromium could not print {html_path} (exit {proc.returncode}): {tail}"
            )
        os.replace(tmp, pdf_path)


def write_report(report: Report, out_dir: Path, pdf: bool = True) -> list[Path]:
    """Write ``<stem>.html`` (and ``<stem>.pdf``) under ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path = out_dir / f"{report.stem}.html"
    _atomic_write(html_path, render_html(report).encode())
    paths = [html_path]
    if pdf:
        pdf_path = out_dir / f"{report.stem}.pdf"
        html_to_pdf(html_path, pdf_path)
        paths.append(pdf_path)
    return paths


def write_index(spark: SparkSession, week: date, out_dir: Path) -> Path:
    """``index.html``: the week's summary and every site report, with each site's headline."""
    sites = rq.run(spark, "grid_sites", week=week)
    if not sites:
        week_sites(spark, week)  # raises with the reason
    rows = []
    for s in sites:
        stem = site_file_stem(s["site"])
        links = (
            " ".join(
                f'<a href="{stem}.{ext}">{ext.upper()}</a>'
                for ext in ("html", "pdf")
                if (out_dir / f"{stem}.{ext}").is_file()
            )
            or "(not built)"
        )
        rows.append(
            f"<tr><td>{_esc(s['site'])}</td><td>{links}</td><td>{_pct(s['efficiency'])}</td>"
            f"<td>{_esc(_points(s['efficiency_change']))}</td><td>{_pct(s['badput_share'])}</td>"
            f"<td>{_num(s['io_lost_core_hours'])}</td><td>{s['outliers']}</td>"
            f"<td>{s['alarms']}</td></tr>"
        )
    summary = (
        " ".join(
            f'<a href="grid-summary.{ext}">{ext.upper()}</a>'
            for ext in ("html", "pdf")
            if (out_dir / f"grid-summary.{ext}").is_file()
        )
        or "(not built)"
    )
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>gridlake reports {week_label(week)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>Weekly reports {week_label(week)}</h1><p>{_esc(_week_range(week))}</p>"
        f"</header><p>Grid-wide summary: {summary}</p>"
        "<table><thead><tr><th>site</th><th>report</th><th>CPU efficiency</th>"
        f"<th>vs previous {rq.TREND_WEEKS} weeks</th><th>badput</th><th>core-hours lost to "
        "I/O limits</th><th>outliers</th><th>network alarms</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></body></html>\n"
    )
    path = out_dir / "index.html"
    _atomic_write(path, page.encode())
    return path


def ensure_views(spark: SparkSession) -> list[str]:
    """Create the grid views the reports read when one is missing (a fresh instance, or a table
    added since ``gridlake init``); returns the views created."""
    from gridlake.catalog import ensure_all
    from gridlake.serving.views import create_views

    used = sorted(
        set(re.findall(rf"\b{rq.VIEWS}\.(\w+)", " ".join(q.sql for q in rq.QUERIES.values())))
    )
    if all(spark.catalog.tableExists(f"{rq.VIEWS}.{name}") for name in used):
        return []
    ensure_all(spark)
    return create_views(spark)


def build_reports(
    spark: SparkSession,
    week: date,
    sites: Iterable[str] | None = None,
    summary: bool = False,
    pdf: bool = True,
    settings: Settings | None = None,
    progress: bool = False,
) -> list[Path]:
    """Site reports for ``sites`` (every site of the week when None and not summary-only),
    then the summary and the index when ``summary``; returns the files written."""
    out_dir = report_dir(week, settings)
    written: list[Path] = []
    names = list(sites) if sites is not None else []
    bar = None
    if progress and len(names) > 1:
        from tqdm import tqdm

        bar = tqdm(total=len(names), unit="site", desc=f"reports {week_label(week)}")
    for site in names:
        written += write_report(build_site_report(spark, site, week), out_dir, pdf)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if summary:
        written += write_report(build_summary_report(spark, week), out_dir, pdf)
        written.append(write_index(spark, week, out_dir))
    return written
