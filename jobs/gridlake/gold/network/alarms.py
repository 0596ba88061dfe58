"""gold.network_alarms: outages, high loss, throughput drops, clock problems and weekend spikes."""

from __future__ import annotations

import logging

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gridlake.gold.network.features import _runs, latency_samples, path_baselines
from gridlake.gold.network.params import (
    DRIFT_MIN_DAYS,
    DRIFT_MIN_R2,
    DRIFT_MIN_SLOPE_MS_PER_DAY,
    DRIFT_WINDOW_DAYS,
    HIGH_LOSS,
    INTERVAL_SECONDS,
    NEGATIVE_DELAY_MERGE_SECONDS,
    OUTAGE_LOSS,
    PATH,
    SPIKE_MAX_OTHER_SHARE,
    SPIKE_MIN_EXTRA_MS,
    SPIKE_MIN_LINK_SHARE,
    SPIKE_MIN_LINKS,
    SPIKE_MIN_WEEK_SHARE,
    SPIKE_MIN_WEEKS,
    SPIKE_SD,
    THROUGHPUT_BASELINE_DAYS,
    THROUGHPUT_BASELINE_GAP_DAYS,
    THROUGHPUT_MIN_CHANGE,
    THROUGHPUT_MIN_CONSECUTIVE,
    THROUGHPUT_MIN_POINTS,
    THROUGHPUT_MIN_SD_SHARE,
    THROUGHPUT_SD_LIMIT,
)
from gridlake.gold.network.tables import GOLD_NETWORK_ALARMS

log = logging.getLogger(__name__)

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
    # Floating figures to 6 decimals: what a reader needs, and the same text whatever order the
    # sums behind them were added in (a cluster adds its partitions in another order).
    types = dict(df.select(*[c.alias(k) for k, c in evidence.items()]).dtypes)
    figures = [
        F.round(c, 6).alias(k) if types[k] in ("double", "float") else c.alias(k)
        for k, c in evidence.items()
    ]
    return df.select(
        F.lit(kind).alias("kind"),
        none.alias("src_site") if site_wide else F.col("src_site"),
        F.col("dst_site"),
        none.alias("src_host") if site_wide else F.col("src_host"),
        none.alias("dst_host") if site_wide else F.col("dst_host"),
        start.alias("start_ts"),
        end.alias("end_ts"),
        value.cast("double").alias("value"),
        F.to_json(F.struct(*figures)).alias("evidence"),
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


_DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


def recurring_spikes(baselines: DataFrame) -> DataFrame:
    """Site-hours elevated on every incoming link together, recurring at the same hour of the
    same day of the week: ``recurring_weekend_spike`` (Saturday and/or Sunday slots, one alarm
    per destination site) and ``recurring_weekly_spike`` (a weekday slot, one alarm per
    destination site and day)."""
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
        .withColumn("_dow", F.dayofweek("hour_start"))  # 1 = Sunday ... 7 = Saturday
        .withColumn("_hod", F.hour("hour_start"))
        .withColumn("_day", F.to_date("hour_start"))
        .withColumn("_week", F.to_date(F.date_trunc("week", "hour_start")))
    )
    up = F.col("_elevated")
    # A slot (site, day of week, hour) recurs when it is elevated in >= SPIKE_MIN_WEEKS weeks and
    # in >= SPIKE_MIN_WEEK_SHARE of the weeks observed at that slot ...
    candidates = (
        site_hours.groupBy("dst_site", "_dow", "_hod")
        .agg(
            F.countDistinct(F.when(up, F.col("_week"))).alias("_weeks_up"),
            F.countDistinct("_week").alias("_weeks"),
        )
        .filter(
            (F.col("_weeks_up") >= SPIKE_MIN_WEEKS)
            & (F.col("_weeks_up") >= F.col("_weeks") * SPIKE_MIN_WEEK_SHARE)
        )
    )
    # ... and the same hour is rarely elevated on the days that are not such slots (a link that
    # is slow every afternoon is not a weekly pattern).
    others = (
        site_hours.join(candidates.select("dst_site", "_dow", "_hod"), ["dst_site", "_dow", "_hod"],
                        "left_anti")
        .groupBy("dst_site", "_hod")
        .agg(
            F.countDistinct(F.when(up, F.col("_day"))).alias("_other_up"),
            F.countDistinct("_day").alias("_other_days"),
        )
    )  # fmt: skip
    slots = (
        candidates.join(others, ["dst_site", "_hod"], "left")
        .filter(
            F.coalesce(F.col("_other_up"), F.lit(0))
            <= F.coalesce(F.col("_other_days"), F.lit(0)) * SPIKE_MAX_OTHER_SHARE
        )
        .withColumn("_weekend", F.col("_dow").isin(1, 7))
        .select("dst_site", "_dow", "_hod", "_weekend", "_weeks")
    )
    hits = site_hours.filter(up).join(slots, ["dst_site", "_dow", "_hod"], "inner")
    names = F.array(*[F.lit(d) for d in _DAY_NAMES])

    def alarms(kind: str, keys: list[str]) -> DataFrame:
        weekend = kind == "recurring_weekend_spike"
        agg = (
            hits.filter(F.col("_weekend") if weekend else ~F.col("_weekend"))
            .groupBy(*keys)
            .agg(
                F.min("hour_start").alias("_start"),
                F.max("hour_start").alias("_last"),
                F.array_sort(F.collect_set("_hod")).alias("_hours"),
                F.array_sort(F.collect_set("_dow")).alias("_dows"),
                F.array_sort(F.collect_set(F.date_format("_day", "yyyy-MM-dd"))).alias("_days"),
                F.countDistinct("_week").alias("_weeks_seen"),
                F.max("_weeks").alias("_weeks_observed"),
                F.avg("_excess").alias("_extra"),
                F.max("_links").alias("_links"),
                F.count(F.lit(1)).alias("_site_hours"),
            )
        )
        return _alarm(
            agg,
            kind,
            F.col("_start"),
            F.col("_last") + F.expr("INTERVAL 1 HOUR"),
            F.col("_extra"),
            {
                "days_of_week": F.transform("_dows", lambda d: names[d - 1]),
                "hours_utc": F.col("_hours"),
                "weeks_seen": F.col("_weeks_seen"),
                "weeks_observed": F.col("_weeks_observed"),
                "days": F.col("_days"),
                "incoming_links": F.col("_links"),
                "elevated_site_hours": F.col("_site_hours"),
                "mean_extra_delay_ms": F.col("_extra"),
            },
            site_wide=True,
        )

    return alarms("recurring_weekend_spike", ["dst_site"]).unionByName(
        alarms("recurring_weekly_spike", ["dst_site", "_dow"])
    )


def _alarms(network: DataFrame, samples: DataFrame, baselines: DataFrame) -> DataFrame:
    parts = [
        _complete_loss(samples),
        _high_loss(samples),
        _throughput(network),
        _negative_delay(samples),
        _clock_drift(samples),
        recurring_spikes(baselines),
    ]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return GOLD_NETWORK_ALARMS.conform(out)


def network_alarms(network: DataFrame) -> DataFrame:
    """silver.network -> gold.network_alarms."""
    samples = latency_samples(network)
    return _alarms(network, samples, path_baselines(samples))
