"""Parameters of the network analytics (thresholds, windows, model shapes)."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------

INTERVAL_SECONDS = 300
BASELINE_DAYS = 7
# perfSONAR archives one-way delays as histograms with 0.1 ms buckets (esmond histogram-owdelay,
# pScheduler latency results): a robust sd below one bucket is below the measurement's resolution
# and would call an interval one bucket away from the baseline "not quiet" (on real GEANT series,
# 80 % of a healthy path's intervals with a 0.05 ms floor).
MIN_SD_MS = 0.1
DELAY_TOLERANCE_MS = 1e-9
QUIET_MAX_LOSS = 1e-4
CONGESTION_INDEX_THRESHOLD = 1e-3  # ms x loss fraction
CONGESTION_MIN_LOSS = 5e-4
OUTAGE_LOSS = 0.999
HIGH_LOSS = 0.02
HIGH_LOSS_MERGE_SECONDS = 900
WINDOW_SAMPLES = 15
UTILISATION_LABEL = 0.7
THROUGHPUT_BASELINE_DAYS = 21
THROUGHPUT_BASELINE_GAP_DAYS = 1
THROUGHPUT_MIN_SD_SHARE = 0.01
THROUGHPUT_MIN_CHANGE = 0.3
THROUGHPUT_MIN_POINTS = 12
THROUGHPUT_MIN_CONSECUTIVE = 2
THROUGHPUT_SD_LIMIT = 2.0
NEGATIVE_DELAY_MERGE_SECONDS = 3600
DRIFT_WINDOW_DAYS = 7
DRIFT_MIN_DAYS = 3
DRIFT_MIN_SLOPE_MS_PER_DAY = 0.5
DRIFT_MIN_R2 = 0.8
SPIKE_MIN_EXTRA_MS = 2.0
SPIKE_SD = 5.0
SPIKE_MIN_LINK_SHARE = 0.8
SPIKE_MIN_LINKS = 3
SPIKE_MIN_WEEKS = 2
SPIKE_MIN_WEEK_SHARE = 0.75
SPIKE_MAX_OTHER_SHARE = 0.1
CONGESTION_SLOWDOWN = 4.0
SETUP_RTTS = 10.0
BYTES_PER_GB = 1e9
# gold.network_cost_matrix confidence: "high" with at least 14 throughput tests (two a day), half
# a week of 5-minute intervals and a median known to 10 %; "medium" with 4 tests and a day of
# intervals; "low" below; null without a cost.
CONFIDENCE_HIGH_TESTS = 14
CONFIDENCE_HIGH_INTERVALS = 1008
CONFIDENCE_HIGH_REL_SE = 0.10
CONFIDENCE_MEDIUM_TESTS = 4
CONFIDENCE_MEDIUM_INTERVALS = 288

MODEL_TYPES = ("mlp", "gbt")
MLP_HIDDEN_LAYERS = (24, 12, 6)

PATH = ("src_site", "dst_site", "src_host", "dst_host")
LINK = ("src_site", "dst_site")

_DELAY_LAGS = [f"delay_lag_{k:02d}" for k in range(WINDOW_SAMPLES)]
_LOSS_LAGS = [f"loss_lag_{k:02d}" for k in range(WINDOW_SAMPLES)]
FEATURE_COLUMNS: tuple[str, ...] = (
    "f_smoothed_delay",
    "f_smoothed_loss",
    *_DELAY_LAGS,
    *_LOSS_LAGS,
    "f_window_delay_mean",
    "f_window_delay_sd",
    "f_window_delay_min",
    "f_window_loss_mean",
    "f_window_loss_sd",
)
