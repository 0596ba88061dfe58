"""The network dashboard."""

from __future__ import annotations

from gridlake.serving.superset_assets.datasets import ALARMS, COST_MATRIX, LINK_HOURLY
from gridlake.serving.superset_assets.filters import _week_filter
from gridlake.serving.superset_assets.spec import Chart, Dashboard, NativeFilter

NETWORK = Dashboard(
    "network",
    "Network",
    "The cost of moving data between sites, link status hour by hour, and perfSONAR alarms.",
    rows=(
        (
            Chart(
                "cost_matrix_heatmap",
                "Cost matrix: seconds per GB",
                "Expected seconds to move 1 GB from source (y) to destination (x).",
                COST_MATRIX,
                "heatmap",
                metrics=("cost_s_per_gb",),
                x="dst_site",
                series=("src_site",),
                number_format=".2f",
                row_limit=10000,
                width=6,
                height=60,
                options={"show_values": True},
            ),
            Chart(
                "congestion_matrix_heatmap",
                "Congested share of 5-minute intervals",
                "Source (y) to destination (x).",
                COST_MATRIX,
                "heatmap",
                metrics=("congested_share",),
                x="dst_site",
                series=("src_site",),
                number_format=".0%",
                row_limit=10000,
                width=6,
                height=60,
                options={"show_values": True},
            ),
        ),
        (
            Chart(
                "link_congestion_timeline",
                "Link status: congested share per hour",
                "The 10 most congested links of the week, hour by hour.",
                LINK_HOURLY,
                "line",
                metrics=("congested_share",),
                x="hour",
                time_grain="PT1H",
                series=("link",),
                series_limit=10,
                number_format=".0%",
                width=12,
                height=50,
            ),
        ),
        (
            Chart(
                "link_delay_timeline",
                "Link status: excess delay per hour",
                "Largest delay above the path's baseline, the 10 worst links.",
                LINK_HOURLY,
                "line",
                metrics=("max_excess_delay_ms",),
                x="hour",
                time_grain="PT1H",
                series=("link",),
                series_limit=10,
                width=12,
                height=50,
            ),
        ),
        (
            Chart(
                "alarms_by_kind",
                "Alarms by kind",
                "Alarms that started in the week.",
                ALARMS,
                "bar",
                metrics=("alarms",),
                x="kind",
                series=("link",),
                stack=True,
                width=4,
                height=55,
            ),
            Chart(
                "network_alarm_list",
                "Alarms",
                "Every alarm, latest first.",
                ALARMS,
                "raw_table",
                columns=("kind", "src_site", "dst_site", "start_ts", "end_ts", "value", "evidence"),
                order_by=(("start_ts", False),),
                row_limit=500,
                width=8,
                height=55,
            ),
        ),
    ),
    filters=(
        _week_filter(COST_MATRIX),
        NativeFilter("src_site", "Source site", COST_MATRIX, "src_site"),
        NativeFilter("dst_site", "Destination site", COST_MATRIX, "dst_site"),
    ),
)

# 6. Failures and job length ---------------------------------------------------------------------
