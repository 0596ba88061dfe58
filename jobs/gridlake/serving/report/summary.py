"""The grid-wide summary report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from pyspark.sql import SparkSession

import gridlake.serving.report.queries as rq
from gridlake.serving.report.model import (
    GRID_COLOR,
    PREVIOUS_COLOR,
    SIGNATURE_COLORS,
    SITE_COLOR,
    SUMMARY_SECTIONS,
    Report,
    Row,
    Section,
)
from gridlake.serving.report.plots import _error_bars, _figure, _hbars, _no_data, _png, _trend
from gridlake.serving.report.site import _Q, _week_range, week_sites
from gridlake.serving.report.wording import _num, _pct, _points, _table, _text

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
