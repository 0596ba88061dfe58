"""HTML, PDF (headless Chromium) and the files of a report week, and the views the reports read."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
from datetime import date
from pathlib import Path

from pyspark.sql import SparkSession

import gridlake.serving.report.queries as rq
from gridlake.serving.report.model import Report, site_file_stem, week_label
from gridlake.serving.report.site import _week_range, week_sites
from gridlake.serving.report.wording import _esc, _num, _pct, _points

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


_CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
)


def html_to_pdf(html_path: Path, pdf_path: Path, timeout: float = 180.0) -> None:
    """Print an HTML file to PDF with headless Chromium (fresh profile, no network): one
    browser for one file. Many files: :class:`PdfPrinter`."""
    with tempfile.TemporaryDirectory(prefix="gridlake-chromium-") as profile:
        tmp = pdf_path.with_name(f".{pdf_path.name}.tmp")
        cmd = [
            chromium_path(),
            *_CHROMIUM_FLAGS,
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


class PdfPrinter:
    """One headless Chromium (through Playwright) that prints many HTML files to PDF: a
    browser start (about 3 s on two cores) once per batch of reports rather than once per
    file. The page size and margins come from the report's ``@page`` rule, as with
    ``--print-to-pdf``; requests other than the file itself and inline data are refused.
    Use as a context manager, in one thread."""

    def __init__(self, timeout: float = 180.0) -> None:
        self.timeout_ms = timeout * 1000
        self._pw = self._browser = None

    def __enter__(self) -> PdfPrinter:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        try:
            self._browser = self._pw.chromium.launch(
                executable_path=chromium_path(), args=list(_CHROMIUM_FLAGS)
            )
        except BaseException:
            self._pw.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._browser is not None:
                self._browser.close()
        finally:
            if self._pw is not None:
                self._pw.stop()

    def print(self, html_path: Path, pdf_path: Path) -> None:
        if self._browser is None:
            raise RuntimeError("PdfPrinter is used outside its with block")
        uri = html_path.resolve().as_uri()
        page = self._browser.new_page()
        try:
            page.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url == uri or route.request.url.startswith("data:")
                    else route.abort()
                ),
            )
            page.goto(uri, wait_until="load", timeout=self.timeout_ms)
            tmp = pdf_path.with_name(f".{pdf_path.name}.tmp")
            page.pdf(path=str(tmp), prefer_css_page_size=True, display_header_footer=False)
        finally:
            page.close()
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise RuntimeError(f"Chromium printed nothing for {html_path}")
        os.replace(tmp, pdf_path)


def write_report(
    report: Report, out_dir: Path, pdf: bool = True, printer: PdfPrinter | None = None
) -> list[Path]:
    """Write ``<stem>.html`` (and ``<stem>.pdf``, with ``printer`` when given) under
    ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path = out_dir / f"{report.stem}.html"
    _atomic_write(html_path, render_html(report).encode())
    paths = [html_path]
    if pdf:
        pdf_path = out_dir / f"{report.stem}.pdf"
        if printer is not None:
            printer.print(html_path, pdf_path)
        else:
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
