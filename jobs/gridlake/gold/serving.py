"""Gold pre-aggregates for the dashboards (group ``serving``, after ``network``).

``gold.network_link_status`` holds one row per path and 5-minute interval: about 290 rows per path
and day, a billion a year on a full mesh of 100 sites. The Network dashboard's link status
timelines need hours, not five-minute steps, so they read ``gold.network_link_hourly`` (12x fewer
rows, partitioned by ISO week so that the dashboard's week filter reads one partition).
"""

from __future__ import annotations

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.group import GoldGroup, Inputs
from gridlake.gold.network import GOLD_NETWORK_LINK_STATUS
from gridlake.tabledef import Check, Column, Table

__all__ = ["GOLD_NETWORK_LINK_HOURLY", "TABLES", "compute", "link_label", "network_link_hourly"]

LINK = ("src_site", "dst_site", "src_host", "dst_host")

GOLD_NETWORK_LINK_HOURLY = Table(
    database="gold",
    name="network_link_hourly",
    keys=("src_host", "dst_host", "hour"),
    question="Hour by hour, which links were congested or noisy, and how much delay did they add?",
    example=(
        "SELECT src_site, dst_site, hour, congested_intervals, round(max_excess_delay_ms, 2) AS "
        "excess_ms FROM gold.network_link_hourly WHERE congested_intervals > 0 ORDER BY hour "
        "DESC, congested_intervals DESC LIMIT 20"
    ),
    grain="one row per path (src_host, dst_host) and UTC hour with 5-minute intervals.",
    description=(
        "The 5-minute link status of gold.network_link_status summed per hour, for link status "
        "timelines over weeks (shares are of the hour's intervals with latency samples)."
    ),
    columns=(
        Column("src_site", "STRING", "Source site"),
        Column("dst_site", "STRING", "Destination site"),
        Column("src_host", "STRING", "Source perfSONAR host"),
        Column("dst_host", "STRING", "Destination perfSONAR host"),
        Column("hour", "TIMESTAMP", "Start of the hour (UTC)"),
        Column("intervals", "BIGINT", "5-minute intervals with latency samples in the hour"),
        Column("samples", "BIGINT", "Latency samples in the hour"),
        Column("congested_intervals", "BIGINT", "Intervals flagged congested"),
        Column("quiet_intervals", "BIGINT", "Intervals passing the empirical quiet filter"),
        Column("congested_share", "DOUBLE", "congested_intervals / intervals"),
        Column("quiet_share", "DOUBLE", "quiet_intervals / intervals"),
        Column("mean_delay_ms", "DOUBLE", "Mean of the intervals' smoothed one-way delay, ms"),
        Column(
            "max_excess_delay_ms",
            "DOUBLE",
            "Largest excess delay over the path's baseline in the hour (may be < 0), ms",
        ),
        Column("mean_loss", "DOUBLE", "Mean of the intervals' packet loss fraction"),
        Column(
            "max_p_util_over_70_next",
            "DOUBLE",
            "Highest predicted probability of > 70 % utilisation in the next interval (null "
            "without a model)",
        ),
        Column("week", "DATE", "Monday of the ISO week of the hour (partition column)"),
        Column(
            "link",
            "STRING",
            "'source > destination' site: the dashboards' series label, stored (reading it is "
            "cheaper than a concat over a week of paths, done twice by a top-10 chart)",
        ),
    ),
    partition_by=("week",),
    checks=(
        Check("not_null", "src_host"),
        Check("not_null", "dst_host"),
        Check("not_null", "hour"),
        Check("between", "congested_share", {"min_value": 0, "max_value": 1}),
        Check("between", "quiet_share", {"min_value": 0, "max_value": 1}),
    ),
)

TABLES: tuple[Table, ...] = (GOLD_NETWORK_LINK_HOURLY,)


def link_label() -> SparkColumn:
    """'source > destination' site ('*' for a pattern over every source): the series label of
    the Network dashboard (the same expression as the other network datasets' ``link``)."""
    return F.concat(F.coalesce("src_site", F.lit("*")), F.lit(" > "), "dst_site")


def network_link_hourly(link_status: DataFrame) -> DataFrame:
    """gold.network_link_status -> gold.network_link_hourly (one row per path and hour)."""
    hour = F.date_trunc("hour", F.col("interval_start")).alias("hour")
    # an interval whose flags are unknown (no baseline yet) is not counted as flagged
    flag = lambda c: F.coalesce(F.sum(F.col(c).cast("int")), F.lit(0)).cast("bigint")  # noqa: E731
    agg = link_status.groupBy(*LINK, hour).agg(
        F.count(F.lit(1)).alias("intervals"),
        F.sum("samples").cast("bigint").alias("samples"),
        flag("congested").alias("congested_intervals"),
        flag("quiet").alias("quiet_intervals"),
        F.avg("smoothed_delay_ms").alias("mean_delay_ms"),
        F.max("excess_delay_ms").alias("max_excess_delay_ms"),
        F.avg("smoothed_loss").alias("mean_loss"),
        F.max("p_util_over_70_next").alias("max_p_util_over_70_next"),
    )
    out = agg.select(
        "*",
        (F.col("congested_intervals") / F.col("intervals")).alias("congested_share"),
        (F.col("quiet_intervals") / F.col("intervals")).alias("quiet_share"),
        F.to_date(F.date_trunc("week", F.col("hour"))).alias("week"),
        link_label().alias("link"),
    )
    return GOLD_NETWORK_LINK_HOURLY.conform(out)


def compute(link_status: DataFrame) -> dict[str, DataFrame]:
    return {GOLD_NETWORK_LINK_HOURLY.full_name: network_link_hourly(link_status)}


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    return compute(inputs.read(GOLD_NETWORK_LINK_STATUS))


# Pre-aggregates gold.network_link_status for the dashboards: runs after network.
GROUP = GoldGroup(
    "serving", TABLES, reads=(GOLD_NETWORK_LINK_STATUS,), build=_build, after=("network",)
)
