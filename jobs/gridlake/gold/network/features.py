"""Latency samples, trailing path baselines and interval features (the predictor's inputs)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gridlake.gold.network.params import (
    _DELAY_LAGS,
    _LOSS_LAGS,
    BASELINE_DAYS,
    CONGESTION_INDEX_THRESHOLD,
    CONGESTION_MIN_LOSS,
    DELAY_TOLERANCE_MS,
    FEATURE_COLUMNS,
    INTERVAL_SECONDS,
    MIN_SD_MS,
    OUTAGE_LOSS,
    PATH,
    QUIET_MAX_LOSS,
    WINDOW_SAMPLES,
)

log = logging.getLogger(__name__)

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
