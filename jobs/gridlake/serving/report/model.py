"""The report's structure (sections, reports, the section keys in order), weeks and paths."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from gridlake.settings import Settings, get_settings

Row = dict[str, Any]

# Section keys and titles, in report order (the tests check every one is present).
SITE_SECTIONS = (
    ("efficiency", "CPU efficiency"),
    ("failures", "Badput and failures by mode"),
    ("causes", "Why jobs failed"),
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
    "idle_or_stalled": "#5b5f97",
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
