"""Network analytics from perfSONAR telemetry (domain.md, "perfSONAR network analytics").

Four gold tables from ``silver.network``, all pure ``DataFrame -> DataFrame`` transforms with
built-in Spark functions (no Python UDF) and Spark MLlib:

``gold.network_link_status`` (path x 5-minute interval)
    One-minute latency samples are averaged per interval (a 5-minute moving average of the
    one-way delay median and of the packet loss). Each path has a robust, trailing baseline
    computed from hourly statistics of the 7 days *before* the hour (the hour itself when the
    path has no earlier data): ``baseline_min_delay_ms``, the 5th percentile of the hourly 10th
    percentiles of the minimum delay (the propagation floor); ``baseline_delay_ms``, the median
    of the hourly medians of the delay median (the path's usual delay); ``baseline_sd_ms``, the
    median hourly interquartile range of the delay median / 1.349 (a robust sd, at least
    ``MIN_SD_MS``). Medians of hourly figures make the baseline insensitive to a few congested or
    spiking hours. The empirical filter of the seed: an interval is ``quiet`` when its loss is
    below 1e-4 and its smoothed delay is within one baseline sd of the baseline delay. The
    congestion index is excess delay (ms above the baseline, >= 0) x loss, both over the samples
    that got through (loss below ``OUTAGE_LOSS``: complete loss is an outage, reported as an
    alarm, not congestion); an interval is ``congested`` when the index reaches
    ``CONGESTION_INDEX_THRESHOLD`` with loss at least ``CONGESTION_MIN_LOSS``.

The predictor (``gold.network_model_runs``)
    For every interval, features of its last one-minute sample (seed 003): the smoothed (5-minute)
    excess delay and loss, the last 15 one-minute excess delays and losses (window ``lag``), and
    the mean, sd and minimum of the excess delay plus the mean and sd of the loss over those 15
    minutes. Delays enter as excess over the path baseline (so links of different length share a
    model), losses as ``log10(loss + 1e-5) + 5`` (0 .. 5). Label: the mean planted / SNMP
    utilisation of the *next* 5-minute interval exceeds 0.7 (``labels``: src_site, dst_site, ts,
    utilisation). Candidates: ``MultilayerPerceptronClassifier`` (standardised inputs, three
    hidden layers of decreasing width, ``MLP_HIDDEN_LAYERS``; Spark's MLP hidden layers are
    sigmoid, it has no ReLU) and ``GBTClassifier``. Each is evaluated leave-one-link-out: for
    each held-out link, train on every other link and score the held-out one (MSE of the
    probabilities, ROC AUC, precision and recall at ``threshold``), next to the empirical filter
    used as a predictor (score 1 when the interval is not quiet). A pooled row per model type
    scores the held-out predictions of all folds together; the type with the best pooled AUC is
    refitted on every link and returned. The labelled set is hash-partitioned and sorted by key so
    that a run is repeatable (l-bfgs is sensitive to row order). On the simulated grid of
    ``tests/test_network_analytics.py`` GBT is kept: pooled held-out AUC 0.967 against 0.92 for
    the MLP and 0.80 for the empirical filter (which calls every interval of a drifting-clock link
    "not quiet"); on the congested links alone GBT and the filter rank about equally (AUC 0.97 to
    0.98), GBT with better probabilities (MSE 0.007-0.009 against 0.013-0.015) and precision
    (1.0 against 0.90-0.93).
    ``save_model`` (the only function that writes) stores it under the storage root.

``gold.network_alarms`` (one row per alarm: path, kind, start, end)
    ``complete_loss``: consecutive samples with loss >= ``OUTAGE_LOSS``; start = first lost
    sample, end = first sample that got through again (or the last lost one).
    ``high_loss``: 5-minute intervals whose loss (outage samples left out) exceeds 2 %,
    intervals less than ``HIGH_LOSS_MERGE_SECONDS`` apart merged into one alarm.
    ``throughput_drop`` / ``throughput_rise``: a throughput test more than 2 robust sd (1.4826 x
    the median absolute deviation) below / above the median of the path's tests in the 21 days
    before it (whatever history exists when shorter), skipping the last
    ``THROUGHPUT_BASELINE_GAP_DAYS`` so a fresh level change does not dilute its own baseline at
    once, and at least 30 % away from that median (a statistically clear but small change is not
    worth an alarm). Needs ``THROUGHPUT_MIN_POINTS`` tests in the baseline and at least
    ``THROUGHPUT_MIN_CONSECUTIVE`` consecutive tests beyond the limit (one slow test during a
    congestion episode is not a drop).
    ``clock_negative_delay``: samples with a negative minimum one-way delay (impossible with
    synchronised clocks), runs merged when less than an hour apart.
    ``clock_drift``: the daily median of the hourly minimum delays, regressed on the day over a
    trailing 7-day window (>= 3 days), moves steadily (|slope| >= 0.5 ms/day, R^2 >= 0.8);
    consecutive flagged days merged. Congestion does not move the minimum delay; a drifting clock
    does. The median of hourly minima ignores an NTP step that shifts the delays for an hour or
    two (seen on a real GEANT path: minimum 24.3 ms, 21.2 ms for two hours, then 24.3 ms again).
    ``recurring_weekend_spike`` (one row per destination site, src columns null): decided as
    follows. An hour of a path is *elevated* when its median delay exceeds the baseline by more
    than max(2 ms, 5 sd). A site-hour is elevated when at least 80 % of the site's incoming links
    (>= 3) are elevated together (a congested link rises alone). An hour of day is a recurring
    weekend hour when it is elevated on >= 2 distinct weekend days, on >= 75 % of the weekend
    days observed at that hour and on at most 10 % of the weekdays. The alarm spans the first to
    the last elevated weekend hour; evidence lists the hours (UTC), the days and the extra delay.
    Its intervals are not congestion: they have no loss, so the congestion index stays low.

``gold.network_cost_matrix`` (src_site x dst_site x ISO week)
    Median delay, mean loss, median throughput, share of congested (and quiet) intervals, and
    the throughput the path can do: the median and 10th percentile of the throughput tests that
    did not run during a congested 5-minute interval (a test during congestion measures what
    was left of the link, and congestion is counted once, through its share); then the expected
    seconds to move 1 GB: ``8e9 / throughput_clear_median x (1 + (CONGESTION_SLOWDOWN -
    1) x congested_share) / (1 - min(loss, 0.5)) + SETUP_RTTS x rtt / 1000`` (a transfer
    during a congested interval is assumed to take CONGESTION_SLOWDOWN times as long; lost
    packets are resent; connection set-up and slow start cost a few round trips). ``source_rank``
    ranks the source sites of each destination and week, 1 = cheapest. ``confidence`` (high,
    medium, low) says how many measurements support the figure and how well the throughput
    median is known (``throughput_rel_se``); a path without throughput tests has no cost (missing,
    never free). A path's latest week is its figure as of now. The round trip is the sum
    of both directions' median one-way delays, so a clock offset (which adds to one direction
    what it takes from the other) cancels out.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.classification import GBTClassifier, MultilayerPerceptronClassifier
from pyspark.ml.evaluation import BinaryClassificationEvaluator
from pyspark.ml.feature import StandardScaler, VectorAssembler
from pyspark.ml.functions import vector_to_array
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.settings import Settings, get_settings
from gridlake.silver.tables import SILVER_NETWORK
from gridlake.tabledef import Check, Column, Table

log = logging.getLogger(__name__)

__all__ = [
    "FEATURE_COLUMNS",
    "GOLD_NETWORK_ALARMS",
    "GOLD_NETWORK_COST_MATRIX",
    "GOLD_NETWORK_LINK_STATUS",
    "GOLD_NETWORK_MODEL_RUNS",
    "MODEL_TYPES",
    "TABLES",
    "CongestionModel",
    "compute",
    "interval_features",
    "interval_labels",
    "latency_samples",
    "load_model",
    "network_alarms",
    "network_cost_matrix",
    "network_link_status",
    "path_baselines",
    "save_model",
    "train_congestion_model",
]

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
SPIKE_MIN_WEEKEND_DAYS = 2
SPIKE_MIN_WEEKEND_SHARE = 0.75
SPIKE_MAX_WEEKDAY_SHARE = 0.1
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

# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------

_PATH_COLUMNS = (
    Column("src_site", "STRING", "Source site"),
    Column("dst_site", "STRING", "Destination site"),
    Column("src_host", "STRING", "Source perfSONAR host"),
    Column("dst_host", "STRING", "Destination perfSONAR host"),
)

GOLD_NETWORK_LINK_STATUS = Table(
    database="gold",
    name="network_link_status",
    keys=("src_host", "dst_host", "interval_start"),
    question=(
        "Is a link congested now, and how likely is it to be over 70% utilised in the next "
        "interval?"
    ),
    example=(
        "SELECT src_site, dst_site, max(interval_start) AS last, round(avg(congestion_index), 2) "
        "AS congestion, round(max(p_util_over_70_next), 2) AS p70 FROM gold.network_link_status "
        "GROUP BY src_site, dst_site ORDER BY congestion DESC LIMIT 10"
    ),
    grain="one row per path (src_host, dst_host) and 5-minute interval with latency samples.",
    description=(
        "Smoothed one-way delay and loss per path and 5-minute interval against a robust "
        "trailing baseline, the empirical quiet filter, the delay x loss congestion index and "
        "flag, and the predicted probability that the link runs above 70 % in the next interval."
    ),
    columns=(
        *_PATH_COLUMNS,
        Column("interval_start", "TIMESTAMP", "Start of the 5-minute interval (UTC)"),
        Column("interval_end", "TIMESTAMP", "End of the interval (exclusive)"),
        Column("samples", "BIGINT", "One-minute latency samples in the interval"),
        Column(
            "smoothed_delay_ms",
            "DOUBLE",
            "Mean of the samples' one-way delay medians (5-minute moving average), ms",
        ),
        Column("smoothed_loss", "DOUBLE", "Mean packet loss fraction of the samples"),
        Column("min_delay_ms", "DOUBLE", "Lowest one-way delay minimum in the interval, ms"),
        Column(
            "baseline_min_delay_ms",
            "DOUBLE",
            "Propagation floor: 5th percentile of the hourly 10th percentiles of the minimum "
            "delay over the 7 days before the hour, ms",
        ),
        Column(
            "baseline_delay_ms",
            "DOUBLE",
            "Usual delay: median of the hourly medians of the delay median over the 7 days "
            "before the hour, ms",
        ),
        Column(
            "baseline_sd_ms",
            "DOUBLE",
            "Robust sd of the delay: median hourly IQR / 1.349 over the same days (>= 0.1), ms",
        ),
        Column(
            "excess_delay_ms", "DOUBLE", "smoothed_delay_ms - baseline_delay_ms (may be < 0), ms"
        ),
        Column(
            "quiet",
            "BOOLEAN",
            "Empirical filter: loss < 1e-4 and |excess delay| <= baseline sd (a path whose loss "
            "is not measured is judged on its delay alone)",
        ),
        Column(
            "congestion_index",
            "DOUBLE",
            "max(excess delay, 0) x loss over the samples not at complete loss (ms x fraction; "
            "null when every sample was lost)",
        ),
        Column(
            "congested",
            "BOOLEAN",
            "congestion_index >= 1e-3 with loss >= 5e-4 over the samples that got through (an "
            "outage is not congestion)",
        ),
        Column(
            "p_util_over_70_next",
            "DOUBLE",
            "Predicted probability that utilisation exceeds 70 % in the next interval (null "
            "without a model)",
        ),
        Column("interval_date", "DATE", "UTC date of interval_start (partition column)"),
    ),
    partition_by=("interval_date",),
    checks=(
        Check("not_null", "src_host"),
        Check("not_null", "dst_host"),
        Check("not_null", "interval_start"),
        Check("between", "smoothed_loss", {"min_value": 0, "max_value": 1}),
        Check("between", "p_util_over_70_next", {"min_value": 0, "max_value": 1}),
    ),
)

GOLD_NETWORK_MODEL_RUNS = Table(
    database="gold",
    name="network_model_runs",
    question="How well does the congestion predictor do on links it never saw?",
    example=(
        "SELECT run_id, model_type, scope, round(auc, 3) AS auc, round(empirical_auc, 3) AS "
        "filter_auc, selected FROM gold.network_model_runs WHERE scope = 'pooled' ORDER BY "
        "trained_at DESC"
    ),
    grain=(
        "one row per training run, model type and evaluation scope (a held-out link, the pooled "
        "held-out predictions, or the final fit on every link)."
    ),
    description=(
        "Leave-one-link-out evaluation of the link-congestion predictor (utilisation > 70 % in "
        "the next 5-minute interval) against the empirical quiet filter."
    ),
    columns=(
        Column("run_id", "STRING", "Identifier of the training run (shared by its rows)"),
        Column("model_type", "STRING", "mlp (MultilayerPerceptronClassifier) or gbt"),
        Column("scope", "STRING", "held_out_link, pooled (all folds' held-out rows) or final"),
        Column("features", "ARRAY<STRING>", "Input feature columns, in order"),
        Column("params", "STRING", "Model parameters (JSON)"),
        Column("held_out_src_site", "STRING", "Source site of the held-out link (held_out_link)"),
        Column("held_out_dst_site", "STRING", "Destination site of the held-out link"),
        Column("train_rows", "BIGINT", "Labelled intervals the model was trained on"),
        Column("test_rows", "BIGINT", "Labelled intervals scored"),
        Column("test_positives", "BIGINT", "Scored intervals whose next interval is > 70 %"),
        Column("threshold", "DOUBLE", "Probability threshold for precision and recall"),
        Column("mse", "DOUBLE", "Mean squared error of the predicted probabilities"),
        Column("auc", "DOUBLE", "ROC AUC (null when the scored rows have one class only)"),
        Column("precision", "DOUBLE", "Precision at the threshold (null without predictions)"),
        Column("recall", "DOUBLE", "Recall at the threshold (null without positives)"),
        Column("empirical_mse", "DOUBLE", "MSE of the empirical filter (not quiet = 1)"),
        Column("empirical_auc", "DOUBLE", "ROC AUC of the empirical filter"),
        Column("empirical_precision", "DOUBLE", "Precision of the empirical filter"),
        Column("empirical_recall", "DOUBLE", "Recall of the empirical filter"),
        Column("selected", "BOOLEAN", "True for the model type kept (best pooled AUC)"),
        Column("trained_at", "TIMESTAMP", "When the run was trained (UTC)"),
    ),
    checks=(
        Check("not_null", "run_id"),
        Check("in_set", "model_type", {"value_set": list(MODEL_TYPES)}),
        Check("in_set", "scope", {"value_set": ["held_out_link", "pooled", "final"]}),
    ),
)

GOLD_NETWORK_ALARMS = Table(
    database="gold",
    name="network_alarms",
    stable_rows=False,
    question="Which links lost packets, drifted or dropped throughput, and since when?",
    example=(
        "SELECT kind, src_site, dst_site, start_ts, end_ts, evidence FROM gold.network_alarms "
        "ORDER BY start_ts DESC LIMIT 20"
    ),
    grain="one row per alarm: path (or destination site), kind and start.",
    description=(
        "Network alarms from perfSONAR: complete loss, loss above 2 %, throughput drops and "
        "rises, clock problems (negative delays, drifting minimum delay) and recurring weekend "
        "latency spikes on every incoming link of a site."
    ),
    columns=(
        Column(
            "kind",
            "STRING",
            "complete_loss | high_loss | throughput_drop | throughput_rise | "
            "clock_negative_delay | clock_drift | recurring_weekend_spike",
        ),
        Column("src_site", "STRING", "Source site (null for a site-wide pattern)"),
        Column("dst_site", "STRING", "Destination site"),
        Column("src_host", "STRING", "Source perfSONAR host (null for a site-wide pattern)"),
        Column("dst_host", "STRING", "Destination perfSONAR host (null for a site-wide pattern)"),
        Column("start_ts", "TIMESTAMP", "First observation of the problem (UTC)"),
        Column("end_ts", "TIMESTAMP", "End of the problem: recovery or last observation (UTC)"),
        Column(
            "value",
            "DOUBLE",
            "Headline figure: loss fraction, throughput ratio to baseline, minimum delay ms, "
            "drift ms/day or extra delay ms",
        ),
        Column("evidence", "STRING", "Supporting figures (JSON)"),
    ),
    checks=(
        Check("not_null", "kind"),
        Check("not_null", "dst_site"),
        Check("not_null", "start_ts"),
    ),
)

GOLD_NETWORK_COST_MATRIX = Table(
    database="gold",
    name="network_cost_matrix",
    keys=("week", "src_site", "dst_site"),
    question="What does moving a gigabyte between two sites cost this week?",
    example=(
        "SELECT src_site, dst_site, round(delay_median_ms, 1) AS delay_ms, round(loss_mean, 4) AS"
        " loss, round(cost_seconds_per_gb, 1) AS s_per_gb FROM gold.network_cost_matrix WHERE "
        "week = (SELECT max(week) FROM gold.network_cost_matrix) ORDER BY s_per_gb DESC"
    ),
    grain="one row per src_site, dst_site and ISO week.",
    description=(
        "Expected path performance between sites per week and the cost of moving 1 GB, with the "
        "rank of each source site for its destination."
    ),
    columns=(
        Column("week", "DATE", "Monday of the ISO week (UTC)"),
        Column("src_site", "STRING", "Source site"),
        Column("dst_site", "STRING", "Destination site"),
        Column("latency_samples", "BIGINT", "Latency samples in the week"),
        Column("delay_median_ms", "DOUBLE", "Median of the samples' one-way delay medians, ms"),
        Column("delay_p95_ms", "DOUBLE", "95th percentile of the delay medians, ms"),
        Column(
            "rtt_ms",
            "DOUBLE",
            "Round trip: delay_median_ms plus the reverse path's (twice the one-way delay when "
            "the reverse is not measured), ms",
        ),
        Column("loss_mean", "DOUBLE", "Mean packet loss fraction (outages included)"),
        Column("throughput_tests", "BIGINT", "Throughput tests in the week"),
        Column("throughput_median_bps", "DOUBLE", "Median achieved throughput, bits/s"),
        Column("intervals", "BIGINT", "5-minute intervals of gold.network_link_status"),
        Column("congested_share", "DOUBLE", "Share of congested intervals"),
        Column("quiet_share", "DOUBLE", "Share of quiet intervals (empirical filter)"),
        Column(
            "cost_seconds_per_gb",
            "DOUBLE",
            "Expected seconds to move 1 GB: 8e9 / throughput_clear_median_bps x (1 + 3 x "
            "congested_share) / (1 - min(loss, 0.5)) + 10 x rtt_ms / 1000 (null without "
            "throughput tests: a missing path is missing, never free)",
        ),
        Column(
            "source_rank",
            "INT",
            "Rank of the source site for its destination and week, 1 = cheapest",
        ),
        Column(
            "throughput_tests_congested",
            "BIGINT",
            "Throughput tests that ran during a congested 5-minute interval",
        ),
        Column(
            "throughput_clear_median_bps",
            "DOUBLE",
            "Median throughput of the tests outside congested intervals (all tests when every "
            "one was congested): what the path can do, bits/s",
        ),
        Column(
            "throughput_p10_bps",
            "DOUBLE",
            "10th percentile of the same tests: the throughput to plan on, bits/s",
        ),
        Column(
            "throughput_rel_se",
            "DOUBLE",
            "Relative standard error of the throughput median: 1.2533 x sd / sqrt(tests) / median",
        ),
        Column(
            "confidence",
            "STRING",
            "high (>= 14 throughput tests, >= 1008 intervals, throughput_rel_se <= 0.1), medium "
            "(>= 4 tests, >= 288 intervals) or low; null without a cost",
        ),
    ),
    checks=(
        Check("not_null", "week"),
        Check("not_null", "src_site"),
        Check("not_null", "dst_site"),
        Check("between", "congested_share", {"min_value": 0, "max_value": 1}),
    ),
)

TABLES: tuple[Table, ...] = (
    GOLD_NETWORK_LINK_STATUS,
    GOLD_NETWORK_MODEL_RUNS,
    GOLD_NETWORK_ALARMS,
    GOLD_NETWORK_COST_MATRIX,
)

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _floor_ts(col: str | SparkColumn, seconds: int) -> SparkColumn:
    c = F.col(col) if isinstance(col, str) else col
    return F.timestamp_seconds(F.floor(F.unix_seconds(c) / seconds) * seconds)


def _epoch(col: str) -> SparkColumn:
    return F.unix_seconds(F.col(col))


def _runs(df: DataFrame, keys: Sequence[str], ts: str, max_gap_seconds: int) -> DataFrame:
    """Add ``_run``: consecutive rows of ``keys`` (by ``ts``) belong to one run while they are at
    most ``max_gap_seconds`` apart."""
    w = Window.partitionBy(*keys).orderBy(ts)
    gap = _epoch(ts) - F.unix_seconds(F.lag(ts).over(w))
    new = F.when(gap.isNull() | (gap > max_gap_seconds), 1).otherwise(0)
    return df.withColumn("_new_run", new).withColumn(
        "_run", F.sum("_new_run").over(w.rowsBetween(Window.unboundedPreceding, 0))
    )


def _log_loss(col: SparkColumn) -> SparkColumn:
    return F.log10(F.coalesce(col, F.lit(0.0)) + F.lit(1e-5)) + F.lit(5.0)


# --------------------------------------------------------------------------------------------
# Latency samples, baselines and interval features
# --------------------------------------------------------------------------------------------


def latency_samples(network: DataFrame) -> DataFrame:
    """silver.network -> its latency results with ``hour_start`` and ``interval_start``."""
    return (
        network.filter(
            (F.col("test") == "latency")
            & F.col("ts").isNotNull()
            & (F.col("packet_loss").isNotNull() | F.col("delay_median_ms").isNotNull())
        )
        .select(
            *PATH,
            "ts",
            F.col("delay_median_ms").cast("double").alias("delay_median_ms"),
            F.col("delay_min_ms").cast("double").alias("delay_min_ms"),
            F.col("delay_sd_ms").cast("double").alias("delay_sd_ms"),
            F.col("packet_loss").cast("double").alias("packet_loss"),
        )
        .withColumn("hour_start", F.date_trunc("hour", "ts"))
        .withColumn("interval_start", _floor_ts("ts", INTERVAL_SECONDS))
    )


def path_baselines(samples: DataFrame, days: int = BASELINE_DAYS) -> DataFrame:
    """Latency samples -> one row per path and hour: the hour's own delay statistics and the
    path's trailing robust baseline (the ``days`` before the hour; the hour itself when the path
    has no earlier data). Samples at complete loss are left out."""
    through = F.coalesce(F.col("packet_loss"), F.lit(0.0)) < OUTAGE_LOSS
    hourly = (
        samples.groupBy(*PATH, "hour_start")
        .agg(
            F.count(F.when(through, 1)).alias("hour_samples"),
            F.percentile_approx(F.when(through, F.col("delay_min_ms")), 0.1).alias(
                "hour_min_delay_p10"
            ),
            F.percentile_approx(F.when(through, F.col("delay_median_ms")), [0.25, 0.5, 0.75]).alias(
                "_q"
            ),
        )
        .select(
            *PATH,
            "hour_start",
            "hour_samples",
            "hour_min_delay_p10",
            F.col("_q")[1].alias("hour_delay_p50"),
            (F.col("_q")[2] - F.col("_q")[0]).alias("hour_delay_iqr"),
        )
    )
    w = Window.partitionBy(*PATH).orderBy(_epoch("hour_start")).rangeBetween(-days * 86400, -1)
    prior_min = F.percentile_approx("hour_min_delay_p10", 0.05).over(w)
    prior_delay = F.percentile_approx("hour_delay_p50", 0.5).over(w)
    prior_iqr = F.percentile_approx("hour_delay_iqr", 0.5).over(w)
    return hourly.select(
        "*",
        F.count("hour_delay_p50").over(w).alias("baseline_hours"),
        F.coalesce(prior_min, F.col("hour_min_delay_p10")).alias("baseline_min_delay_ms"),
        F.coalesce(prior_delay, F.col("hour_delay_p50")).alias("baseline_delay_ms"),
        F.greatest(
            F.coalesce(prior_iqr, F.col("hour_delay_iqr")) / F.lit(1.349), F.lit(MIN_SD_MS)
        ).alias("baseline_sd_ms"),
    )


def interval_features(samples: DataFrame, baselines: DataFrame) -> DataFrame:
    """Latency samples and path baselines -> one row per path and 5-minute interval: the
    smoothed delay and loss, the baseline, the quiet and congested flags, and the model features
    (``FEATURE_COLUMNS``) of the interval's last one-minute sample."""
    base = baselines.select(
        *PATH, "hour_start", "baseline_min_delay_ms", "baseline_delay_ms", "baseline_sd_ms"
    )
    s = samples.join(base, [*PATH, "hour_start"], "left").withColumn(
        "_excess", F.coalesce(F.col("delay_median_ms") - F.col("baseline_delay_ms"), F.lit(0.0))
    )
    s = s.withColumn("_loss", _log_loss(F.col("packet_loss")))
    w = Window.partitionBy(*PATH).orderBy("ts")
    win = w.rowsBetween(-(WINDOW_SAMPLES - 1), 0)
    lags = [
        F.coalesce(F.lag("_excess", k).over(w), F.lit(0.0)).alias(_DELAY_LAGS[k])
        for k in range(WINDOW_SAMPLES)
    ] + [
        F.coalesce(F.lag("_loss", k).over(w), F.lit(0.0)).alias(_LOSS_LAGS[k])
        for k in range(WINDOW_SAMPLES)
    ]
    feats = s.select(
        "*",
        *lags,
        F.count(F.lit(1)).over(win).alias("_window_samples"),
        F.avg("_excess").over(win).alias("f_window_delay_mean"),
        F.coalesce(F.stddev_samp("_excess").over(win), F.lit(0.0)).alias("f_window_delay_sd"),
        F.min("_excess").over(win).alias("f_window_delay_min"),
        F.avg("_loss").over(win).alias("f_window_loss_mean"),
        F.coalesce(F.stddev_samp("_loss").over(win), F.lit(0.0)).alias("f_window_loss_sd"),
    )
    last = F.struct(
        "_window_samples",
        "f_window_delay_mean",
        "f_window_delay_sd",
        "f_window_delay_min",
        "f_window_loss_mean",
        "f_window_loss_sd",
        *_DELAY_LAGS,
        *_LOSS_LAGS,
    )
    through = F.coalesce(F.col("packet_loss"), F.lit(0.0)) < OUTAGE_LOSS
    agg = feats.groupBy(*PATH, "interval_start").agg(
        F.count(F.lit(1)).alias("samples"),
        F.avg("delay_median_ms").alias("smoothed_delay_ms"),
        F.avg("packet_loss").alias("smoothed_loss"),
        F.min("delay_min_ms").alias("min_delay_ms"),
        F.first("baseline_min_delay_ms", ignorenulls=True).alias("baseline_min_delay_ms"),
        F.first("baseline_delay_ms", ignorenulls=True).alias("baseline_delay_ms"),
        F.first("baseline_sd_ms", ignorenulls=True).alias("baseline_sd_ms"),
        F.avg(F.when(through, F.col("delay_median_ms"))).alias("_delay_through"),
        F.avg(F.when(through, F.col("packet_loss"))).alias("_loss_through"),
        F.avg("_excess").alias("f_smoothed_delay"),
        _log_loss(F.avg("packet_loss")).alias("f_smoothed_loss"),
        F.max_by(last, "ts").alias("_last"),
    )
    excess = F.col("smoothed_delay_ms") - F.col("baseline_delay_ms")
    loss = F.coalesce(F.col("smoothed_loss"), F.lit(0.0))
    # Congestion is judged on the samples that got through: an outage is not congestion.
    loss_through = F.coalesce(F.col("_loss_through"), F.lit(0.0))
    excess_through = F.col("_delay_through") - F.col("baseline_delay_ms")
    index = F.greatest(excess_through, F.lit(0.0)) * loss_through
    return agg.select(
        *PATH,
        "interval_start",
        (F.col("interval_start") + F.expr(f"INTERVAL {INTERVAL_SECONDS} SECONDS")).alias(
            "interval_end"
        ),
        "samples",
        "smoothed_delay_ms",
        "smoothed_loss",
        "min_delay_ms",
        "baseline_min_delay_ms",
        "baseline_delay_ms",
        "baseline_sd_ms",
        excess.alias("excess_delay_ms"),
        # Delays are decimal (0.1 ms buckets): 24.2 - 24.3 is 0.10000000000000142 in binary
        # floating point, which must not make one sd more than one sd.
        F.coalesce(
            (loss < QUIET_MAX_LOSS)
            & (F.abs(excess) <= F.col("baseline_sd_ms") + F.lit(DELAY_TOLERANCE_MS)),
            F.lit(False),
        ).alias("quiet"),
        index.alias("congestion_index"),
        F.coalesce(
            (index >= CONGESTION_INDEX_THRESHOLD) & (loss_through >= CONGESTION_MIN_LOSS),
            F.lit(False),
        ).alias("congested"),
        F.to_date("interval_start").alias("interval_date"),
        F.col("_last._window_samples").alias("window_samples"),
        "f_smoothed_delay",
        "f_smoothed_loss",
        *[F.col(f"_last.{c}").alias(c) for c in FEATURE_COLUMNS[2:]],
    )


# --------------------------------------------------------------------------------------------
# The predictor
# --------------------------------------------------------------------------------------------


def interval_labels(labels: DataFrame, threshold: float = UTILISATION_LABEL) -> DataFrame:
    """(src_site, dst_site, ts, utilisation) -> one row per link and interval *before* the one
    measured: ``label`` = 1.0 when the mean utilisation of the next interval exceeds
    ``threshold``."""
    return (
        labels.withColumn("ts", F.col("ts").cast("timestamp"))
        .withColumn("_next", _floor_ts("ts", INTERVAL_SECONDS))
        .groupBy(*LINK, "_next")
        .agg(F.avg(F.col("utilisation").cast("double")).alias("next_utilisation"))
        .select(
            *LINK,
            (F.col("_next") - F.expr(f"INTERVAL {INTERVAL_SECONDS} SECONDS")).alias(
                "interval_start"
            ),
            "next_utilisation",
            (F.col("next_utilisation") > threshold).cast("double").alias("label"),
        )
    )


def _classifier(model_type: str, n_features: int, seed: int) -> tuple[list[object], dict]:
    if model_type == "mlp":
        layers = [n_features, *MLP_HIDDEN_LAYERS, 2]
        params = {"layers": layers, "maxIter": 80, "solver": "l-bfgs", "tol": 1e-6, "seed": seed}
        scaler = StandardScaler(
            inputCol="_raw_features", outputCol="features", withMean=True, withStd=True
        )
        clf = MultilayerPerceptronClassifier(featuresCol="features", labelCol="label", **params)
        return [scaler, clf], params
    if model_type == "gbt":
        params = {"maxIter": 25, "maxDepth": 4, "stepSize": 0.1, "subsamplingRate": 0.8,
                  "seed": seed}  # fmt: skip
        clf = GBTClassifier(featuresCol="_raw_features", labelCol="label", **params)
        return [clf], params
    raise ValueError(f"unknown model type {model_type!r}: expected one of {MODEL_TYPES}")


def _fit(training: DataFrame, model_type: str, seed: int) -> tuple[PipelineModel, dict]:
    assembler = VectorAssembler(inputCols=list(FEATURE_COLUMNS), outputCol="_raw_features")
    stages, params = _classifier(model_type, len(FEATURE_COLUMNS), seed)
    return Pipeline(stages=[assembler, *stages]).fit(training), params


def _predict(model: PipelineModel, df: DataFrame) -> DataFrame:
    """Add ``p_util_over_70_next`` (probability of class 1) to rows with FEATURE_COLUMNS."""
    scored = model.transform(df)
    p = vector_to_array(F.col("probability"))[1]
    return scored.select(*df.columns, p.alias("p_util_over_70_next"))


def _metrics(scored: DataFrame, score: str, threshold: float) -> dict[str, float | int | None]:
    """MSE, AUC, precision and recall of ``score`` against ``label`` (one small aggregate)."""
    pred = F.col(score) >= threshold
    pos = F.col("label") == 1.0
    row = scored.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(F.col("label")).alias("positives"),
        F.avg((F.col(score) - F.col("label")) ** 2).alias("mse"),
        F.count(F.when(pred & pos, 1)).alias("tp"),
        F.count(F.when(pred, 1)).alias("predicted"),
    ).first()
    assert row is not None
    n, positives = int(row["n"]), int(row["positives"] or 0)
    auc = None
    if 0 < positives < n:
        evaluator = BinaryClassificationEvaluator(
            rawPredictionCol=score, labelCol="label", metricName="areaUnderROC"
        )
        auc = float(evaluator.evaluate(scored.select(score, "label")))
    tp, predicted = int(row["tp"]), int(row["predicted"])
    return {
        "n": n,
        "positives": positives,
        "mse": float(row["mse"]) if row["mse"] is not None else None,
        "auc": auc,
        "precision": tp / predicted if predicted else None,
        "recall": tp / positives if positives else None,
    }


@dataclass
class CongestionModel:
    """The result of ``train_congestion_model``: the refitted model and its evaluation."""

    model: PipelineModel
    model_type: str
    run_id: str
    runs: DataFrame


def _labelled(features: DataFrame, labels: DataFrame) -> DataFrame:
    """Intervals with a full observation window and a label. Hash-partitioned and sorted by key,
    so every run sees the same rows in the same order: l-bfgs (MLP) otherwise lands elsewhere
    from one run to the next."""
    lab = interval_labels(labels)
    keys = [*LINK, "src_host", "dst_host", "interval_start"]
    return (
        features.filter(F.col("window_samples") >= WINDOW_SAMPLES)
        .join(lab, [*LINK, "interval_start"], "inner")
        .select(*keys, "quiet", *FEATURE_COLUMNS, "label")
        .withColumn("_empirical", F.when(F.col("quiet"), 0.0).otherwise(1.0))
        .repartition(*keys)
        .sortWithinPartitions(*keys)
    )


def _default_held_out(data: DataFrame, n: int) -> list[tuple[str, str]]:
    """The ``n`` links with the most positive labels, then the most intervals that are not quiet
    (where the empirical filter raises false alarms), ties by name. One row per link reaches the
    driver, so bounded by the number of links."""
    rows = (
        data.groupBy(*LINK)
        .agg(
            F.sum("label").alias("positives"),
            F.count(F.when(~F.col("quiet"), 1)).alias("not_quiet"),
        )
        .orderBy(F.col("positives").desc(), F.col("not_quiet").desc(), *LINK)
        .limit(n)
        .collect()
    )
    return [(r["src_site"], r["dst_site"]) for r in rows]


def train_congestion_model(
    features: DataFrame,
    labels: DataFrame,
    *,
    model_types: Sequence[str] = MODEL_TYPES,
    held_out: Sequence[tuple[str, str]] | None = None,
    n_held_out: int = 3,
    threshold: float = 0.5,
    seed: int = 7,
    run_id: str | None = None,
    trained_at: datetime | None = None,
) -> CongestionModel:
    """Leave-one-link-out evaluation of each model type, then the best (pooled AUC) refitted on
    every link.

    ``features``: ``interval_features`` output; ``labels``: (src_site, dst_site, ts,
    utilisation), the planted utilisation in tests or SNMP utilisation in production. Only
    scalar metrics reach the driver; the labelled set is cached while the models train.
    """
    run_id = run_id or uuid.uuid4().hex
    trained_at = trained_at or datetime.now(UTC)
    data = _labelled(features, labels).cache()
    try:
        links = list(held_out) if held_out is not None else _default_held_out(data, n_held_out)
        rows: list[dict[str, object]] = []
        pooled: dict[str, list[DataFrame]] = {m: [] for m in model_types}
        params_of: dict[str, dict] = {}
        for src, dst in links:
            is_link = (F.col("src_site") == src) & (F.col("dst_site") == dst)
            train, test = data.filter(~is_link), data.filter(is_link)
            n_train = train.count()
            empirical = _metrics(test, "_empirical", 0.5)
            for m in model_types:
                model, params_of[m] = _fit(train, m, seed)
                scored = _predict(model, test).cache()
                met = _metrics(scored, "p_util_over_70_next", threshold)
                pooled[m].append(scored)
                rows.append(
                    _run_row(m, "held_out_link", src, dst, n_train, met, empirical, threshold)
                )
        n_all = data.count()
        best, best_auc = model_types[0], -1.0
        for m in model_types:
            if not pooled[m]:
                continue
            union = pooled[m][0]
            for df in pooled[m][1:]:
                union = union.unionByName(df)
            met = _metrics(union, "p_util_over_70_next", threshold)
            empirical = _metrics(union, "_empirical", 0.5)
            rows.append(_run_row(m, "pooled", None, None, None, met, empirical, threshold))
            if (met["auc"] or -1.0) > best_auc:
                best, best_auc = m, float(met["auc"] or -1.0)
            for df in pooled[m]:
                df.unpersist()
        final, params_of[best] = _fit(data, best, seed)
        rows.append(_run_row(best, "final", None, None, n_all, None, None, threshold))
    finally:
        data.unpersist()
    runs = _runs_frame(features, rows, run_id, best, params_of, trained_at)
    return CongestionModel(model=final, model_type=best, run_id=run_id, runs=runs)


def _run_row(
    model_type: str,
    scope: str,
    src: str | None,
    dst: str | None,
    n_train: int | None,
    met: dict[str, float | int | None] | None,
    empirical: dict[str, float | int | None] | None,
    threshold: float,
) -> dict[str, object]:
    met = met or {}
    empirical = empirical or {}
    return {
        "model_type": model_type,
        "scope": scope,
        "held_out_src_site": src,
        "held_out_dst_site": dst,
        "train_rows": n_train,
        "test_rows": met.get("n"),
        "test_positives": met.get("positives"),
        "threshold": float(threshold),
        "mse": met.get("mse"),
        "auc": met.get("auc"),
        "precision": met.get("precision"),
        "recall": met.get("recall"),
        "empirical_mse": empirical.get("mse"),
        "empirical_auc": empirical.get("auc"),
        "empirical_precision": empirical.get("precision"),
        "empirical_recall": empirical.get("recall"),
    }


_RUNS_SCHEMA = StructType(
    [
        StructField("run_id", StringType()),
        StructField("model_type", StringType()),
        StructField("scope", StringType()),
        StructField("features", ArrayType(StringType())),
        StructField("params", StringType()),
        StructField("held_out_src_site", StringType()),
        StructField("held_out_dst_site", StringType()),
        StructField("train_rows", LongType()),
        StructField("test_rows", LongType()),
        StructField("test_positives", LongType()),
        StructField("threshold", DoubleType()),
        StructField("mse", DoubleType()),
        StructField("auc", DoubleType()),
        StructField("precision", DoubleType()),
        StructField("recall", DoubleType()),
        StructField("empirical_mse", DoubleType()),
        StructField("empirical_auc", DoubleType()),
        StructField("empirical_precision", DoubleType()),
        StructField("empirical_recall", DoubleType()),
        StructField("selected", BooleanType()),
        StructField("trained_at", TimestampType()),
    ]
)


def _runs_frame(
    like: DataFrame,
    rows: list[dict[str, object]],
    run_id: str,
    best: str,
    params_of: dict[str, dict],
    trained_at: datetime,
) -> DataFrame:
    def _num(v: object, kind: type) -> object:
        return None if v is None else kind(v)

    data = []
    for r in rows:
        m = str(r["model_type"])
        data.append(
            (
                run_id,
                m,
                r["scope"],
                list(FEATURE_COLUMNS),
                json.dumps(params_of.get(m, {}), sort_keys=True),
                r["held_out_src_site"],
                r["held_out_dst_site"],
                _num(r["train_rows"], int),
                _num(r["test_rows"], int),
                _num(r["test_positives"], int),
                _num(r["threshold"], float),
                *(_num(r[k], float) for k in ("mse", "auc", "precision", "recall")),
                *(
                    _num(r[k], float)
                    for k in (
                        "empirical_mse",
                        "empirical_auc",
                        "empirical_precision",
                        "empirical_recall",
                    )
                ),
                m == best,
                trained_at,
            )
        )
    return like.sparkSession.createDataFrame(data, _RUNS_SCHEMA)


def save_model(
    model: PipelineModel, settings: Settings | None = None, name: str = "network_congestion"
) -> str:
    """Write the fitted predictor under ``<storage root>/models/<name>`` (overwriting); return
    the path. The only function here with a side effect."""
    path = f"{(settings or get_settings()).storage_root.rstrip('/')}/models/{name}"
    model.write().overwrite().save(path)
    return path


def load_model(settings: Settings | None = None, name: str = "network_congestion") -> PipelineModel:
    """The predictor saved by ``save_model``."""
    path = f"{(settings or get_settings()).storage_root.rstrip('/')}/models/{name}"
    return PipelineModel.load(path)


# --------------------------------------------------------------------------------------------
# gold.network_link_status
# --------------------------------------------------------------------------------------------


def _status_from_features(features: DataFrame, model: PipelineModel | None) -> DataFrame:
    if model is None:
        out = features.withColumn("p_util_over_70_next", F.lit(None).cast("double"))
    else:
        out = _predict(model, features)
    return GOLD_NETWORK_LINK_STATUS.conform(out)


def network_link_status(network: DataFrame, model: PipelineModel | None = None) -> DataFrame:
    """silver.network -> gold.network_link_status (predictions only with a ``model``)."""
    samples = latency_samples(network)
    features = interval_features(samples, path_baselines(samples))
    return _status_from_features(features, model)


# --------------------------------------------------------------------------------------------
# gold.network_alarms
# --------------------------------------------------------------------------------------------


def _alarm(
    df: DataFrame,
    kind: str,
    start: SparkColumn,
    end: SparkColumn,
    value: SparkColumn,
    evidence: dict[str, SparkColumn],
    site_wide: bool = False,
) -> DataFrame:
    none = F.lit(None).cast("string")
    return df.select(
        F.lit(kind).alias("kind"),
        none.alias("src_site") if site_wide else F.col("src_site"),
        F.col("dst_site"),
        none.alias("src_host") if site_wide else F.col("src_host"),
        none.alias("dst_host") if site_wide else F.col("dst_host"),
        start.alias("start_ts"),
        end.alias("end_ts"),
        value.cast("double").alias("value"),
        F.to_json(F.struct(*[c.alias(k) for k, c in evidence.items()])).alias("evidence"),
    )


def _complete_loss(samples: DataFrame) -> DataFrame:
    w = Window.partitionBy(*PATH).orderBy("ts")
    lost = F.coalesce(F.col("packet_loss"), F.lit(0.0)) >= OUTAGE_LOSS
    s = (
        samples.select(*PATH, "ts", "packet_loss")
        .withColumn("_lost", lost)
        .withColumn("_next_ts", F.lead("ts").over(w))
        .withColumn("_grp", F.sum(F.when(~F.col("_lost"), 1).otherwise(0)).over(w))
        .filter("_lost")
    )
    runs = s.groupBy(*PATH, "_grp").agg(
        F.min("ts").alias("_start"),
        F.max("ts").alias("_last"),
        F.max_by("_next_ts", "ts").alias("_recovered"),
        F.count(F.lit(1)).alias("_samples"),
    )
    runs = runs.filter(F.col("_samples") >= 2)
    end = F.coalesce(F.col("_recovered"), F.col("_last"))
    return _alarm(
        runs,
        "complete_loss",
        F.col("_start"),
        end,
        F.lit(1.0),
        {
            "samples": F.col("_samples"),
            "last_lost_ts": F.col("_last"),
            "recovered": F.col("_recovered").isNotNull(),
            "duration_minutes": (F.unix_seconds(end) - F.unix_seconds(F.col("_start"))) / 60.0,
        },
    )


def _high_loss(samples: DataFrame) -> DataFrame:
    loss = F.col("packet_loss")
    per = (
        samples.filter(loss.isNotNull() & (loss < OUTAGE_LOSS))
        .groupBy(*PATH, "interval_start")
        .agg(F.avg("packet_loss").alias("_loss"), F.count(F.lit(1)).alias("_n"))
        .filter(F.col("_loss") > HIGH_LOSS)
    )
    runs = (
        _runs(per, PATH, "interval_start", INTERVAL_SECONDS)
        .groupBy(*PATH, "_run")
        .agg(
            F.min("interval_start").alias("_start"),
            F.max("interval_start").alias("_last"),
            F.max("_loss").alias("_max"),
            F.avg("_loss").alias("_mean"),
            F.count(F.lit(1)).alias("_intervals"),
        )
    )
    return _alarm(
        runs,
        "high_loss",
        F.col("_start"),
        F.col("_last") + F.expr(f"INTERVAL {INTERVAL_SECONDS} SECONDS"),
        F.col("_max"),
        {
            "intervals": F.col("_intervals"),
            "max_loss": F.col("_max"),
            "mean_loss": F.col("_mean"),
            "limit": F.lit(HIGH_LOSS),
        },
    )


def _throughput_scores(network: DataFrame) -> DataFrame:
    """Throughput tests with the median and MAD of the path's tests in the baseline window (the
    21 days before the test, skipping the last day): a self-join of the tests, which are few
    (one every few hours per path)."""
    tp = network.filter(
        (F.col("test") == "throughput") & F.col("throughput_bps").isNotNull()
    ).select(*PATH, "ts", F.col("throughput_bps").cast("double").alias("bps"))
    b = tp.select(
        *[F.col(k).alias(f"_b_{k}") for k in PATH],
        F.col("ts").alias("_b_ts"),
        F.col("bps").alias("_b_bps"),
    )
    cond = [F.col(k) == F.col(f"_b_{k}") for k in PATH] + [
        F.col("_b_ts") >= F.col("ts") - F.expr(f"INTERVAL {THROUGHPUT_BASELINE_DAYS} DAYS"),
        F.col("_b_ts") < F.col("ts") - F.expr(f"INTERVAL {THROUGHPUT_BASELINE_GAP_DAYS} DAYS"),
    ]
    pairs = tp.join(b, cond, "left").select(*PATH, "ts", "bps", "_b_bps")
    med = pairs.groupBy(*PATH, "ts", "bps").agg(
        F.median("_b_bps").alias("_median"), F.count("_b_bps").alias("_points")
    )
    mad = (
        pairs.join(med.select(*PATH, "ts", "_median"), [*PATH, "ts"])
        .groupBy(*PATH, "ts")
        .agg(F.median(F.abs(F.col("_b_bps") - F.col("_median"))).alias("_mad"))
    )
    return (
        med.join(mad, [*PATH, "ts"], "left")
        .withColumn(
            "_sd", F.greatest(F.col("_mad") * 1.4826, F.col("_median") * THROUGHPUT_MIN_SD_SHARE)
        )
        .withColumn("_z", F.try_divide(F.col("bps") - F.col("_median"), F.col("_sd")))
        .withColumn("_ratio", F.try_divide(F.col("bps"), F.col("_median")))
        .withColumn(
            "_dir",
            F.when(F.col("_points") < THROUGHPUT_MIN_POINTS, F.lit(None))
            .when(
                (F.col("_z") < -THROUGHPUT_SD_LIMIT)
                & (F.col("_ratio") < 1 - THROUGHPUT_MIN_CHANGE),
                F.lit("throughput_drop"),
            )
            .when(
                (F.col("_z") > THROUGHPUT_SD_LIMIT) & (F.col("_ratio") > 1 + THROUGHPUT_MIN_CHANGE),
                F.lit("throughput_rise"),
            ),
        )
    )


def _throughput(network: DataFrame) -> DataFrame:
    scored = _throughput_scores(network)
    # consecutive tests in the same direction form a run
    ow = Window.partitionBy(*PATH).orderBy("ts")
    changed = F.coalesce(F.col("_dir"), F.lit("")) != F.coalesce(F.lag("_dir").over(ow), F.lit("~"))
    runs_df = scored.withColumn("_chg", F.when(changed, 1).otherwise(0)).withColumn(
        "_run", F.sum("_chg").over(ow.rowsBetween(Window.unboundedPreceding, 0))
    )
    runs = (
        runs_df.filter(F.col("_dir").isNotNull())
        .groupBy(*PATH, "_run", "_dir")
        .agg(
            F.min("ts").alias("_start"),
            F.max("ts").alias("_end"),
            F.count(F.lit(1)).alias("_tests"),
            F.percentile_approx("bps", 0.5).alias("_observed"),
            F.first("_median").alias("_baseline"),
            F.first("_sd").alias("_sd"),
            F.first("_points").alias("_points"),
            F.min("_z").alias("_zmin"),
            F.max("_z").alias("_zmax"),
        )
        .filter(F.col("_tests") >= THROUGHPUT_MIN_CONSECUTIVE)
    )
    ratio = F.try_divide(F.col("_observed"), F.col("_baseline"))
    drop = _alarm(
        runs.filter(F.col("_dir") == "throughput_drop"),
        "throughput_drop",
        F.col("_start"),
        F.col("_end"),
        ratio,
        {
            "tests": F.col("_tests"),
            "observed_median_bps": F.col("_observed"),
            "baseline_median_bps": F.col("_baseline"),
            "baseline_sd_bps": F.col("_sd"),
            "baseline_points": F.col("_points"),
            "z": F.col("_zmin"),
        },
    )
    rise = _alarm(
        runs.filter(F.col("_dir") == "throughput_rise"),
        "throughput_rise",
        F.col("_start"),
        F.col("_end"),
        ratio,
        {
            "tests": F.col("_tests"),
            "observed_median_bps": F.col("_observed"),
            "baseline_median_bps": F.col("_baseline"),
            "baseline_sd_bps": F.col("_sd"),
            "baseline_points": F.col("_points"),
            "z": F.col("_zmax"),
        },
    )
    return drop.unionByName(rise)


def _negative_delay(samples: DataFrame) -> DataFrame:
    neg = samples.filter(F.col("delay_min_ms") < 0).select(*PATH, "ts", "delay_min_ms")
    runs = (
        _runs(neg, PATH, "ts", NEGATIVE_DELAY_MERGE_SECONDS)
        .groupBy(*PATH, "_run")
        .agg(
            F.min("ts").alias("_start"),
            F.max("ts").alias("_end"),
            F.min("delay_min_ms").alias("_min"),
            F.count(F.lit(1)).alias("_samples"),
        )
    )
    return _alarm(
        runs,
        "clock_negative_delay",
        F.col("_start"),
        F.col("_end"),
        F.col("_min"),
        {"samples": F.col("_samples"), "min_delay_ms": F.col("_min")},
    )


def _clock_drift(samples: DataFrame) -> DataFrame:
    ok = F.coalesce(F.col("packet_loss"), F.lit(0.0)) < OUTAGE_LOSS
    hourly = (
        samples.filter(ok & F.col("delay_min_ms").isNotNull())
        .groupBy(*PATH, F.date_trunc("hour", "ts").alias("_hour"))
        .agg(F.min("delay_min_ms").alias("_hour_min"))
    )
    daily = (
        hourly.groupBy(*PATH, F.to_date("_hour").alias("_day"))
        .agg(F.median("_hour_min").alias("_daily"))
        .withColumn("_x", F.datediff(F.col("_day"), F.lit("2000-01-01")).cast("double"))
    )
    w = Window.partitionBy(*PATH).orderBy("_x").rangeBetween(-(DRIFT_WINDOW_DAYS - 1), 0)
    fitted = daily.select(
        "*",
        F.count(F.lit(1)).over(w).alias("_days"),
        F.regr_slope("_daily", "_x").over(w).alias("_slope"),
        F.regr_r2("_daily", "_x").over(w).alias("_r2"),
        F.min("_day").over(w).alias("_from"),
        F.first("_daily").over(w).alias("_first_daily"),
    )
    flagged = fitted.filter(
        (F.col("_days") >= DRIFT_MIN_DAYS)
        & (F.abs(F.col("_slope")) >= DRIFT_MIN_SLOPE_MS_PER_DAY)
        & (F.col("_r2") >= DRIFT_MIN_R2)
    ).withColumn("_day_ts", F.to_timestamp("_day"))
    runs = (
        _runs(flagged, PATH, "_day_ts", 86400)
        .groupBy(*PATH, "_run")
        .agg(
            F.min("_from").alias("_from"),
            F.max("_day").alias("_to"),
            F.max_by("_slope", "_day").alias("_slope"),
            F.max_by("_r2", "_day").alias("_r2"),
            F.max_by("_days", "_day").alias("_days"),
            F.min_by("_first_daily", "_day").alias("_daily_from"),
            F.max_by("_daily", "_day").alias("_daily_to"),
        )
    )
    return _alarm(
        runs,
        "clock_drift",
        F.to_timestamp("_from"),
        F.to_timestamp(F.date_add("_to", 1)),
        F.col("_slope"),
        {
            "slope_ms_per_day": F.col("_slope"),
            "r2": F.col("_r2"),
            "days": F.col("_days"),
            "daily_min_delay_first_ms": F.col("_daily_from"),
            "daily_min_delay_last_ms": F.col("_daily_to"),
        },
    )


def _weekend_spike(baselines: DataFrame) -> DataFrame:
    excess = F.col("hour_delay_p50") - F.col("baseline_delay_ms")
    limit = F.greatest(F.lit(SPIKE_MIN_EXTRA_MS), F.col("baseline_sd_ms") * SPIKE_SD)
    hours = baselines.filter(F.col("baseline_hours") > 0).select(
        "dst_site", "src_site", "hour_start", excess.alias("_excess"), (excess > limit).alias("_up")
    )
    site_hours = (
        hours.groupBy("dst_site", "hour_start")
        .agg(
            F.countDistinct("src_site").alias("_links"),
            F.countDistinct(F.when(F.col("_up"), F.col("src_site"))).alias("_up_links"),
            F.avg("_excess").alias("_excess"),
        )
        .withColumn(
            "_elevated",
            (F.col("_links") >= SPIKE_MIN_LINKS)
            & (F.col("_up_links") >= F.col("_links") * SPIKE_MIN_LINK_SHARE),
        )
        .withColumn("_weekend", F.dayofweek("hour_start").isin(1, 7))
        .withColumn("_hod", F.hour("hour_start"))
        .withColumn("_day", F.to_date("hour_start"))
    )
    slots = (
        site_hours.groupBy("dst_site", "_hod")
        .agg(
            F.countDistinct(F.when(F.col("_weekend") & F.col("_elevated"), F.col("_day"))).alias(
                "_we_up"
            ),
            F.countDistinct(F.when(F.col("_weekend"), F.col("_day"))).alias("_we_days"),
            F.countDistinct(F.when(~F.col("_weekend") & F.col("_elevated"), F.col("_day"))).alias(
                "_wd_up"
            ),
            F.countDistinct(F.when(~F.col("_weekend"), F.col("_day"))).alias("_wd_days"),
        )
        .filter(
            (F.col("_we_up") >= SPIKE_MIN_WEEKEND_DAYS)
            & (F.col("_we_up") >= F.col("_we_days") * SPIKE_MIN_WEEKEND_SHARE)
            & (F.col("_wd_up") <= F.col("_wd_days") * SPIKE_MAX_WEEKDAY_SHARE)
        )
        .select("dst_site", "_hod")
    )
    hits = site_hours.filter(F.col("_weekend") & F.col("_elevated")).join(
        slots, ["dst_site", "_hod"], "inner"
    )
    agg = hits.groupBy("dst_site").agg(
        F.min("hour_start").alias("_start"),
        F.max("hour_start").alias("_last"),
        F.array_sort(F.collect_set("_hod")).alias("_hours"),
        F.array_sort(F.collect_set(F.date_format("_day", "yyyy-MM-dd"))).alias("_days"),
        F.avg("_excess").alias("_extra"),
        F.max("_links").alias("_links"),
        F.count(F.lit(1)).alias("_site_hours"),
    )
    return _alarm(
        agg,
        "recurring_weekend_spike",
        F.col("_start"),
        F.col("_last") + F.expr("INTERVAL 1 HOUR"),
        F.col("_extra"),
        {
            "hours_utc": F.col("_hours"),
            "days": F.col("_days"),
            "incoming_links": F.col("_links"),
            "elevated_site_hours": F.col("_site_hours"),
            "mean_extra_delay_ms": F.col("_extra"),
        },
        site_wide=True,
    )


def _alarms(network: DataFrame, samples: DataFrame, baselines: DataFrame) -> DataFrame:
    parts = [
        _complete_loss(samples),
        _high_loss(samples),
        _throughput(network),
        _negative_delay(samples),
        _clock_drift(samples),
        _weekend_spike(baselines),
    ]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return GOLD_NETWORK_ALARMS.conform(out)


def network_alarms(network: DataFrame) -> DataFrame:
    """silver.network -> gold.network_alarms."""
    samples = latency_samples(network)
    return _alarms(network, samples, path_baselines(samples))


# --------------------------------------------------------------------------------------------
# gold.network_cost_matrix
# --------------------------------------------------------------------------------------------


def network_cost_matrix(network: DataFrame, link_status: DataFrame | None = None) -> DataFrame:
    """silver.network (and gold.network_link_status, computed when not given) ->
    gold.network_cost_matrix."""
    status = link_status if link_status is not None else network_link_status(network)
    week = F.to_date(F.date_trunc("week", F.col("ts"))).alias("week")
    lat = (
        network.filter(F.col("test") == "latency")
        .groupBy(week, *LINK)
        .agg(
            F.count(F.lit(1)).alias("latency_samples"),
            F.percentile_approx("delay_median_ms", [0.5, 0.95]).alias("_d"),
            F.avg("packet_loss").alias("loss_mean"),
        )
        .select(
            "week",
            *LINK,
            "latency_samples",
            F.col("_d")[0].alias("delay_median_ms"),
            F.col("_d")[1].alias("delay_p95_ms"),
            "loss_mean",
        )
    )
    # Throughput tests, each with the congestion flag of the 5-minute interval it ran in: a
    # test during congestion measures what the path had left, not what it can do (the cost
    # accounts for congestion through congested_share, so it must not count it twice).
    flags = status.select(
        *LINK,
        F.col("interval_start").alias("_interval"),
        F.col("congested").alias("_congested"),
    )
    bps = F.col("throughput_bps").cast("double")
    tests = (
        network.filter((F.col("test") == "throughput") & F.col("throughput_bps").isNotNull())
        .withColumn("_interval", _floor_ts("ts", INTERVAL_SECONDS))
        .join(flags, [*LINK, "_interval"], "left")
        .withColumn("_clear", ~F.coalesce(F.col("_congested"), F.lit(False)))
    )
    clear_bps = F.when(F.col("_clear"), bps)
    tp = (
        tests.groupBy(week, *LINK)
        .agg(
            F.count(F.lit(1)).alias("throughput_tests"),
            F.percentile_approx(bps, [0.5, 0.1]).alias("_all"),
            F.count(clear_bps).alias("_n_clear"),
            F.percentile_approx(clear_bps, [0.5, 0.1]).alias("_clear"),
            F.stddev(F.coalesce(clear_bps, bps)).alias("_sd"),
        )
        .select(
            "week",
            *LINK,
            "throughput_tests",
            F.col("_all")[0].alias("throughput_median_bps"),
            (F.col("throughput_tests") - F.col("_n_clear")).alias("throughput_tests_congested"),
            # corrected: the tests outside congested intervals (all of them when none is clear)
            F.when(F.col("_n_clear") > 0, F.col("_clear")[0])
            .otherwise(F.col("_all")[0])
            .alias("throughput_clear_median_bps"),
            F.when(F.col("_n_clear") > 0, F.col("_clear")[1])
            .otherwise(F.col("_all")[1])
            .alias("throughput_p10_bps"),
            F.col("_sd"),
            F.greatest(F.col("_n_clear"), F.lit(1)).alias("_n_used"),
        )
    )
    st = (
        status.withColumn("week", F.to_date(F.date_trunc("week", F.col("interval_start"))))
        .groupBy("week", *LINK)
        .agg(
            F.count(F.lit(1)).alias("intervals"),
            F.avg(F.col("congested").cast("double")).alias("congested_share"),
            F.avg(F.col("quiet").cast("double")).alias("quiet_share"),
        )
    )
    reverse = lat.select(
        "week",
        F.col("dst_site").alias("src_site"),
        F.col("src_site").alias("dst_site"),
        F.col("delay_median_ms").alias("_reverse_delay_ms"),
    )
    m = (
        lat.join(tp, ["week", *LINK], "full")
        .join(st, ["week", *LINK], "left")
        .join(reverse, ["week", *LINK], "left")
    )
    # Round trip = both one-way delays: a clock offset adds to one and subtracts from the other.
    m = m.withColumn(
        "rtt_ms",
        F.coalesce(
            F.col("delay_median_ms") + F.col("_reverse_delay_ms"), 2 * F.col("delay_median_ms")
        ),
    )
    loss = F.least(F.coalesce(F.col("loss_mean"), F.lit(0.0)), F.lit(0.5))
    share = F.coalesce(F.col("congested_share"), F.lit(0.0))
    transfer = F.try_divide(F.lit(8 * BYTES_PER_GB), F.col("throughput_clear_median_bps"))
    cost = (
        transfer * (1 + (CONGESTION_SLOWDOWN - 1) * share) / (1 - loss)
        + F.lit(SETUP_RTTS) * F.coalesce(F.col("rtt_ms"), F.lit(0.0)) / 1000.0
    )
    m = m.withColumn("cost_seconds_per_gb", cost)
    # Relative standard error of the median throughput (the cost's main input): 1.2533 sd /
    # sqrt(n) / median for the tests used; one test alone has no spread, so no error estimate.
    rel_se = F.try_divide(
        F.lit(1.2533) * F.col("_sd") / F.sqrt(F.col("_n_used")),
        F.col("throughput_clear_median_bps"),
    )
    m = m.withColumn("throughput_rel_se", rel_se)
    n_tp = F.coalesce(F.col("throughput_tests"), F.lit(0))
    n_iv = F.coalesce(F.col("intervals"), F.lit(0))
    m = m.withColumn(
        "confidence",
        F.when(F.col("cost_seconds_per_gb").isNull(), F.lit(None).cast("string"))
        .when(
            (n_tp >= CONFIDENCE_HIGH_TESTS)
            & (n_iv >= CONFIDENCE_HIGH_INTERVALS)
            & (F.coalesce(rel_se, F.lit(1.0)) <= CONFIDENCE_HIGH_REL_SE),
            "high",
        )
        .when((n_tp >= CONFIDENCE_MEDIUM_TESTS) & (n_iv >= CONFIDENCE_MEDIUM_INTERVALS), "medium")
        .otherwise("low"),
    )
    rank = F.rank().over(
        Window.partitionBy("week", "dst_site").orderBy(
            F.col("cost_seconds_per_gb").asc_nulls_last()
        )
    )
    m = m.withColumn("source_rank", F.when(F.col("cost_seconds_per_gb").isNotNull(), rank))
    return GOLD_NETWORK_COST_MATRIX.conform(m)


# --------------------------------------------------------------------------------------------
# Everything
# --------------------------------------------------------------------------------------------


def compute(
    network: DataFrame,
    labels: DataFrame | None = None,
    *,
    model: PipelineModel | None = None,
    model_types: Sequence[str] = MODEL_TYPES,
    held_out: Sequence[tuple[str, str]] | None = None,
    seed: int = 7,
    run_id: str | None = None,
) -> dict[str, DataFrame]:
    """silver.network (and optional utilisation labels) -> {table full name: DataFrame}.

    With ``labels`` the predictor is trained and evaluated (``gold.network_model_runs``) and
    its predictions fill ``p_util_over_70_next``; without, a given ``model`` (e.g. from
    ``load_model``) is applied, else the column is null. The latency samples, hourly baselines
    and interval features feed several outputs and are computed once (local checkpoints). Pass
    at least ``BASELINE_DAYS`` of history before the period of interest: baselines are
    trailing.
    """
    # Local checkpoints, not cache: they feed several outputs, and their blocks are released
    # when the returned frames are garbage-collected (a cache would outlive them).
    samples = latency_samples(network).localCheckpoint()
    baselines = path_baselines(samples).localCheckpoint()
    features = interval_features(samples, baselines).localCheckpoint()
    out: dict[str, DataFrame] = {}
    if labels is not None:
        trained = train_congestion_model(
            features, labels, model_types=model_types, held_out=held_out, seed=seed,
            run_id=run_id,
        )  # fmt: skip
        model = trained.model
        out[GOLD_NETWORK_MODEL_RUNS.full_name] = GOLD_NETWORK_MODEL_RUNS.conform(trained.runs)
    status = _status_from_features(features, model)
    out[GOLD_NETWORK_LINK_STATUS.full_name] = status
    out[GOLD_NETWORK_ALARMS.full_name] = _alarms(network, samples, baselines)
    out[GOLD_NETWORK_COST_MATRIX.full_name] = network_cost_matrix(
        network, _status_from_features(features, None)
    )
    return out


def saved_model(settings: Settings) -> PipelineModel | None:
    """The congestion predictor saved by ``train_network``, or None before the first training."""
    try:
        return load_model(settings)
    except Exception as exc:  # a missing model is the normal state of a new warehouse
        if "does not exist" not in str(exc) and "FileNotFound" not in str(exc):
            raise
        log.info("no saved network model yet: p_util_over_70_next stays null")
        return None


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    return compute(inputs.read(SILVER_NETWORK), model=saved_model(inputs.settings))


# A retrained model changes the predictions: its runs table is an input of the group.
GROUP = GoldGroup("network", TABLES, reads=(SILVER_NETWORK, GOLD_NETWORK_MODEL_RUNS), build=_build)
