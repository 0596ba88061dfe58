"""Every dashboard of the spec, in menu order (one module per dashboard)."""

from __future__ import annotations

from gridlake.serving.superset_assets.cpu_models import CPU_MODELS
from gridlake.serving.superset_assets.failures import FAILURES_DASHBOARD
from gridlake.serving.superset_assets.grid_operations import GRID_OPERATIONS
from gridlake.serving.superset_assets.io_signatures import IO_SIGNATURES
from gridlake.serving.superset_assets.network import NETWORK
from gridlake.serving.superset_assets.site_drilldown import SITE_DRILLDOWN
from gridlake.serving.superset_assets.spec import Dashboard

DASHBOARDS: tuple[Dashboard, ...] = (
    GRID_OPERATIONS, SITE_DRILLDOWN, CPU_MODELS, IO_SIGNATURES, NETWORK, FAILURES_DASHBOARD,
)  # fmt: skip
