"""The site report: one section per question, from the report queries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta

from pyspark.sql import SparkSession

import gridlake.serving.report.queries as rq
from gridlake.serving.report.model import (
    GRID_COLOR,
    PREVIOUS_COLOR,
    SIGNATURE_COLORS,
    SITE_COLOR,
    SITE_SECTIONS,
    NoGoldDataError,
    Report,
    Row,
    Section,
    site_file_stem,
    week_label,
)
from gridlake.serving.report.plots import _error_bars, _figure, _hbars, _no_data, _png, _trend, _wk
from gridlake.serving.report.wording import _num, _pct, _points, _table, _text, _ts

# --------------------------------------------------------------------------------------------
# Site report
# --------------------------------------------------------------------------------------------


class SiteRows:
    """The site queries' rows of one week for every site, each query run once (on first use)
    and shared by the week's site reports."""

    def __init__(self, spark: SparkSession, week: date, views: str = rq.VIEWS) -> None:
        self.spark, self.week, self.views = spark, week, views
        self._rows: dict[str, dict[str, list[Row]]] = {}
        self._sites: list[str] | None = None

    def rows(self, name: str, site: str) -> list[Row]:
        if name not in self._rows:
            self._rows[name] = rq.run_all_sites(self.spark, name, self.views, week=self.week)
        return self._rows[name].get(site, [])

    def sites(self) -> list[str]:
        if self._sites is None:
            self._sites = week_sites(self.spark, self.week, self.views)
        return self._sites


class _Q:
    """Runs the report's queries for one site (through the week's SiteRows) or, without a
    site, the grid summary's queries for the week."""

    def __init__(
        self,
        spark: SparkSession,
        week: date,
        site: str | None = None,
        views: str = rq.VIEWS,
        shared: SiteRows | None = None,
    ) -> None:
        self.spark, self.week, self.site, self.views = spark, week, site, views
        self.shared = shared or SiteRows(spark, week, views)

    def __call__(self, name: str) -> list[Row]:
        if self.site is not None and rq.is_site_query(name):
            return self.shared.rows(name, self.site)
        return rq.run(self.spark, name, self.views, week=self.week)

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


def _causes_section(q: _Q) -> Section:
    rows = q("site_failure_causes")
    now = [r for r in rows if r["failed_jobs"]]
    if now:
        top = now[0]
        sentence = (
            f"{_num(sum(r['failed_jobs'] for r in now))} attempts failed; the largest cause of "
            f"badput was {top['cause'].replace('_', ' ')} ({_pct(top['badput_share'], 0)}, "
            f"{_num(top['failed_jobs'])} attempts"
        )
        before = top.get("previous_failed_jobs_per_week")
        if before is not None:
            sentence += f", {before:.1f} a week over the previous weeks"
        sentence += ")"
        evicted = next((r for r in now if r["cause"] == "evicted_or_preempted"), None)
        if evicted:
            sentence += (
                f"; evictions and preemptions held {_pct(evicted['badput_share'], 0)} of the badput"
            )
        unknown = next((r for r in now if r["cause"] == "unknown"), None)
        if unknown:
            sentence += f"; no rule knows the cause of {_num(unknown['failed_jobs'])} of them"
        sentence += "."
    else:
        sentence = "No attempt failed this week."
    fig, (a, b) = _figure()
    labels = [r["cause"].replace("_", " ") for r in rows]
    drawn = _hbars(
        a,
        [r["cause"].replace("_", " ") for r in now],
        [([r["badput_core_hours"] for r in now], "this week", SITE_COLOR)],
        "Badput core-hours by cause",
        "core-hours",
    )
    drawn += _hbars(
        b,
        labels,
        [
            ([r["failed_jobs"] for r in rows], "this week", SITE_COLOR),
            ([r.get("previous_failed_jobs_per_week") for r in rows], "before", PREVIOUS_COLOR),
        ],
        "Failed attempts by cause",
        "attempts",
    )
    table = _table(
        rows,
        [
            ("cause", "cause", _text),
            ("failed_jobs", "failed attempts", _num),
            ("badput_core_hours", "badput core-hours", lambda x: _num(x, 1)),
            ("badput_share", "share of badput", _pct),
            ("previous_failed_jobs_per_week", "per week before", lambda x: _num(x, 1)),
        ],
    )
    note = (
        "Causes come from exit codes, signals, batch-system states and hold reasons through the "
        "rules of gold.failure_cause_rules (each cites its source; operators add versions)."
    )
    return Section("causes", "", sentence, _png(fig), drawn, table, note)


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
    "causes": _causes_section,
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


def build_site_report(
    spark: SparkSession,
    site: str,
    week: date,
    views: str = rq.VIEWS,
    shared: SiteRows | None = None,
) -> Report:
    """The report of ``site`` for ``week``; ``shared``: the week's SiteRows when building the
    reports of several sites (their queries then run once for all)."""
    shared = shared or SiteRows(spark, week, views)
    sites = shared.sites()
    if site not in sites:
        raise NoGoldDataError(
            f"site {site!r} ran no jobs in {week_label(week)}; sites with jobs: {', '.join(sites)}"
        )
    q = _Q(spark, week, site, views, shared)
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
