"""gold.network_cost_matrix: the transfer cost of every path."""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gridlake.gold.network.features import _floor_ts
from gridlake.gold.network.params import (
    BYTES_PER_GB,
    CONFIDENCE_HIGH_INTERVALS,
    CONFIDENCE_HIGH_REL_SE,
    CONFIDENCE_HIGH_TESTS,
    CONFIDENCE_MEDIUM_INTERVALS,
    CONFIDENCE_MEDIUM_TESTS,
    CONGESTION_SLOWDOWN,
    INTERVAL_SECONDS,
    LINK,
    SETUP_RTTS,
)
from gridlake.gold.network.predictor import network_link_status
from gridlake.gold.network.tables import GOLD_NETWORK_COST_MATRIX

log = logging.getLogger(__name__)

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
