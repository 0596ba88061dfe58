"""``gridlake report``: the weekly site reports, the grid-wide summary and their index.

For an ISO week, each site with jobs gets one report (HTML, and PDF printed from it by headless
Chromium) under ``<state>/reports/<week>/``: its CPU efficiency against its previous 8 weeks and
the grid, by job type; badput and failures by mode; job length advice for its job types; CPU
speed against the benchmark for its CPU models; I/O signatures and saturated nodes; network
paths from and to it (cost, congestion, alarms); and its entries on the outlier list. Each
section has one plot and one plain sentence saying what changed. The summary does the same for
the whole grid; ``index.html`` links everything.

Every number comes from ``queries`` (SQL over the ``grid`` views, the layer the dashboards
read); ``site`` and ``summary`` word them into sections, ``plots`` draws them, ``render`` writes
HTML, PDF and the index, ``model`` holds the report's structure, weeks and paths. A report
depends only on the gold tables and the week: no clock, no randomness, fixed plot metadata, so
building it again gives byte-identical HTML (the PDF differs only in the creation date
Chromium embeds).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import ExitStack
from datetime import date
from pathlib import Path

from pyspark.sql import SparkSession

from gridlake.serving.report.model import (
    SITE_SECTIONS,
    SUMMARY_SECTIONS,
    NoGoldDataError,
    Report,
    Section,
    parse_week,
    report_dir,
    site_file_stem,
    week_label,
)
from gridlake.serving.report.render import (
    PdfPrinter,
    ensure_views,
    html_to_pdf,
    render_html,
    write_index,
    write_report,
)
from gridlake.serving.report.site import SiteRows, build_site_report, week_sites
from gridlake.serving.report.summary import build_summary_report
from gridlake.settings import Settings

__all__ = [
    "SITE_SECTIONS",
    "SUMMARY_SECTIONS",
    "NoGoldDataError",
    "PdfPrinter",
    "Report",
    "Section",
    "SiteRows",
    "build_reports",
    "build_site_report",
    "build_summary_report",
    "ensure_views",
    "html_to_pdf",
    "parse_week",
    "render_html",
    "report_dir",
    "site_file_stem",
    "week_label",
    "week_sites",
    "write_index",
    "write_report",
]


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
    with ExitStack() as stack:
        printer = stack.enter_context(PdfPrinter()) if pdf and len(names) + summary > 1 else None
        shared = SiteRows(spark, week)  # each site query runs once for the week's sites
        for site in names:
            report = build_site_report(spark, site, week, shared=shared)
            written += write_report(report, out_dir, pdf, printer)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        if summary:
            written += write_report(build_summary_report(spark, week), out_dir, pdf, printer)
            written.append(write_index(spark, week, out_dir))
    return written
