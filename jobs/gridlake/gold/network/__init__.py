"""Network analytics from perfSONAR telemetry (domain.md, "perfSONAR network analytics").

Modules: ``params`` (thresholds and windows), ``tables`` (the four gold tables),
``features`` (samples, baselines, interval features), ``predictor`` (the congestion model and
``gold.network_link_status``), ``alarms``, ``cost_matrix``; this package module wires them into
``compute`` and the gold group, and re-exports the public names.

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
    that a run is repeatable (l-bfgs is sensitive to row order), in one partition per 250,000
    rows up to one per core (``training_partitions``: the fits are ~100 small jobs each). On the
    simulated grid of ``tests/test_network_analytics.py`` GBT is kept: pooled held-out AUC 0.968
    against 0.961 for the MLP and 0.80 for the empirical filter (which calls every interval of a
    drifting-clock link "not quiet"); on the congested links alone GBT and the filter rank about
    equally (AUC 0.975-0.978 against 0.966-0.978), GBT with better probabilities (MSE
    0.007-0.009 against 0.008-0.010) and precision (0.99-1.0 against 0.94-0.96). The MLP is the
    less stable of the two: the same data in four partitions instead of one gave it 0.918.
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
    ``recurring_weekend_spike`` (one row per destination site) and ``recurring_weekly_spike``
    (one row per destination site and weekday; src columns null in both): an hour of a path is
    *elevated* when its median delay exceeds the baseline by more than max(2 ms, 5 sd). A
    site-hour is elevated when at least 80 % of the site's incoming links (>= 3) are elevated
    together (a congested link rises alone). A slot (destination site, day of week, hour UTC)
    recurs when it is elevated in >= 2 distinct ISO weeks and in >= 75 % of the weeks observed
    at that slot, and the same hour is elevated on at most 10 % of the days that are not such
    slots (a site slow every afternoon has no weekly pattern). Saturday and Sunday slots make
    the weekend alarm (one weekend day or both), weekday slots the weekly one. The alarm spans
    the first to the last elevated hour of its slots; evidence gives the days of the week, the
    hours (UTC), the weeks seen out of the weeks observed, the dates and the extra delay.
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

import logging
from collections.abc import Sequence

from pyspark.ml import PipelineModel
from pyspark.sql import DataFrame

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.gold.network.alarms import _alarms, network_alarms, recurring_spikes
from gridlake.gold.network.cost_matrix import network_cost_matrix
from gridlake.gold.network.features import interval_features, latency_samples, path_baselines
from gridlake.gold.network.params import (
    BASELINE_DAYS,
    CONGESTION_SLOWDOWN,
    FEATURE_COLUMNS,
    LINK,
    MODEL_TYPES,
    PATH,
    SETUP_RTTS,
)
from gridlake.gold.network.predictor import (
    CongestionModel,
    _status_from_features,
    interval_labels,
    load_model,
    network_link_status,
    save_model,
    train_congestion_model,
)
from gridlake.gold.network.tables import (
    GOLD_NETWORK_ALARMS,
    GOLD_NETWORK_COST_MATRIX,
    GOLD_NETWORK_LINK_STATUS,
    GOLD_NETWORK_MODEL_RUNS,
    TABLES,
)
from gridlake.settings import Settings
from gridlake.silver.tables import SILVER_NETWORK

log = logging.getLogger(__name__)


__all__ = [
    "BASELINE_DAYS",
    "CONGESTION_SLOWDOWN",
    "FEATURE_COLUMNS",
    "GOLD_NETWORK_ALARMS",
    "GOLD_NETWORK_COST_MATRIX",
    "GOLD_NETWORK_LINK_STATUS",
    "GOLD_NETWORK_MODEL_RUNS",
    "LINK",
    "MODEL_TYPES",
    "PATH",
    "SETUP_RTTS",
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
    "recurring_spikes",
    "save_model",
    "train_congestion_model",
]


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
