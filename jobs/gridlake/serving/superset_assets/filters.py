"""Native filters and number formats shared by the dashboards."""

from __future__ import annotations

from gridlake.serving.superset_assets.datasets import SITE_EFFICIENCY
from gridlake.serving.superset_assets.spec import Dataset, NativeFilter

# --------------------------------------------------------------------------------------------
# Dashboards
# --------------------------------------------------------------------------------------------

PCT = ".1%"


def _week_filter(dataset: Dataset = SITE_EFFICIENCY, exclude: tuple[str, ...] = ()) -> NativeFilter:
    return NativeFilter(
        "week",
        "Week",
        dataset,
        "week",
        multi=False,
        default_first=True,
        ascending=False,
        exclude=exclude,
        description="ISO week (Monday); opens on the latest week in the data.",
    )


def _site_filter(single: bool = False) -> NativeFilter:
    return NativeFilter("site", "Site", SITE_EFFICIENCY, "site", multi=not single,
                        default_first=single)  # fmt: skip


def _vo_filter() -> NativeFilter:
    return NativeFilter("vo", "VO", SITE_EFFICIENCY, "vo")


# 1. Grid operations ---------------------------------------------------------------------------
