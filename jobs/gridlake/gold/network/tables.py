"""The four gold tables of the network family: definitions, grain, keys and checks."""

from __future__ import annotations

import logging

from gridlake.gold.network.params import MODEL_TYPES
from gridlake.tabledef import Check, Column, Table

log = logging.getLogger(__name__)

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
        "rises, clock problems (negative delays, drifting minimum delay) and latency spikes on "
        "every incoming link of a site that recur at the same hours of the same day each week "
        "(weekend or weekday)."
    ),
    columns=(
        Column(
            "kind",
            "STRING",
            "complete_loss | high_loss | throughput_drop | throughput_rise | "
            "clock_negative_delay | clock_drift | recurring_weekend_spike | recurring_weekly_spike",
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
        Column("evidence", "STRING", "Supporting figures (JSON; floats to 6 decimals)"),
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
