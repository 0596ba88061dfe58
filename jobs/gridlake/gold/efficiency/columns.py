"""Column helpers shared by the efficiency transforms."""

from __future__ import annotations

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F

from gridlake.gold.efficiency.params import WILSON_Z

# --------------------------------------------------------------------------------------------
# Column helpers
# --------------------------------------------------------------------------------------------


def _wilson_columns(
    k: SparkColumn, n: SparkColumn, z: float = WILSON_Z
) -> tuple[SparkColumn, SparkColumn]:
    """The Wilson score interval as Spark column expressions (same formula as wilson_interval)."""
    p = k / n
    z2 = F.lit(z * z)
    denom = F.lit(1.0) + z2 / n
    centre = (p + z2 / (F.lit(2.0) * n)) / denom
    half = F.lit(z) * F.sqrt(p * (F.lit(1.0) - p) / n + z2 / (F.lit(4.0) * n * n)) / denom
    return F.greatest(centre - half, F.lit(0.0)), F.least(centre + half, F.lit(1.0))


def _success() -> SparkColumn:
    return F.col("status") == "success"


def _failed() -> SparkColumn:
    return F.col("status") == "failed"
