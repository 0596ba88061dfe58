"""The I/O-signatures dashboard."""

from __future__ import annotations

from gridlake.serving.superset_assets.datasets import (
    LIMITS,
    NODE_SATURATION,
    SIGNATURES,
    SITE_IO,
    WORKFLOW_IO,
)
from gridlake.serving.superset_assets.filters import _site_filter, _week_filter
from gridlake.serving.superset_assets.spec import Chart, Dashboard

IO_SIGNATURES = Dashboard(
    "io-signatures",
    "I/O signatures",
    "What limits the jobs (CPU, disk, memory, remote reads) by workflow and site, and which "
    "worker nodes were saturated.",
    rows=(
        (
            Chart(
                "signature_by_workflow",
                "Signature shares by workflow",
                "Share of classified core-hours per signature, per job type.",
                WORKFLOW_IO,
                "bar",
                metrics=tuple(f"share_{s}" for s in SIGNATURES),
                x="job_type",
                stack=True,
                number_format=".0%",
                width=6,
            ),
            Chart(
                "signature_by_site",
                "Signature shares by site",
                "Share of classified core-hours per signature, per site.",
                SITE_IO,
                "bar",
                metrics=tuple(f"share_{s}" for s in SIGNATURES),
                x="site",
                stack=True,
                number_format=".0%",
                width=6,
            ),
        ),
        (
            Chart(
                "saturated_nodes_heatmap",
                "Saturated nodes",
                "Host-hours flagged saturated (disk or memory), coloured by the busiest "
                "disk's %util p95.",
                NODE_SATURATION,
                "heatmap",
                metrics=("disk_util_p95",),
                x="hour",
                series=("host",),
                where=(("saturated", "IS TRUE", None),),
                row_limit=10000,
                width=8,
                height=60,
            ),
            Chart(
                "lost_core_hours_by_site",
                "Core-hours lost per limit",
                "Core-hours lost by jobs classified per limit, per site.",
                SITE_IO,
                "bar",
                metrics=tuple(f"lost_{s}" for s in LIMITS),
                x="site",
                stack=True,
                width=4,
                height=60,
            ),
        ),
        (
            Chart(
                "site_io_table",
                "Site I/O stress",
                "Saturated host-hours and iowait of each site's monitored nodes.",
                SITE_IO,
                "table",
                series=("site",),
                metrics=(
                    "saturated_share",
                    "disk_saturated_share",
                    "memory_pressure_share",
                    "iowait_mean",
                    "disk_util_p95_max",
                    "lost_io_wait_bound",
                ),
                order_by=(("saturated_share", False),),
                width=12,
                height=40,
            ),
        ),
    ),
    filters=(_week_filter(), _site_filter()),
)

# 5. Network -------------------------------------------------------------------------------------
