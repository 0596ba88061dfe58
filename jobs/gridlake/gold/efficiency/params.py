"""Parameters of the efficiency tables (interval level, duration bins, search ranges,
outlier windows)."""

from __future__ import annotations

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

WILSON_Z = 1.96  # 95% two-sided

# Failure modes that strike at the start of an attempt, whatever its planned length: they are
# not part of the duration-dependent hazard of the job-length model.
START_FAILURE_MODES: tuple[str, ...] = ("stage-in",)

# Wall-clock bin edges: 12 log-spaced bins from 10 min to 96 h (each edge x 576^(1/12) ~ 1.70),
# rounded to whole seconds; below 10 min and from 96 h on are open-ended first and last bins.
DURATION_BIN_EDGES_SECONDS: tuple[int, ...] = tuple(round(600 * 576 ** (i / 12)) for i in range(13))

# Job-length optimisation: search range of the payload length T, in hours.
JOB_LENGTH_SEARCH_HOURS = (1 / 60, 200.0)
DAYS_PER_YEAR = 365.0

# Outliers: window of the own-history comparison, and MAD -> standard deviation of a normal.
HISTORY_WEEKS = 8
MAD_TO_SD = 1.4826
