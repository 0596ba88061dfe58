"""silver -> gold: recompute the gold tables (overwrite: idempotent, reruns give the same table)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from gridlake.gold.site_efficiency import site_efficiency_weekly
from gridlake.settings import Settings, get_settings
from gridlake.tables import GOLD_SITE_EFFICIENCY_WEEKLY, SILVER_JOBS


def analyze(spark: SparkSession, settings: Settings | None = None) -> dict[str, int]:
    settings = settings or get_settings()
    SILVER_JOBS.ensure(spark, settings)
    GOLD_SITE_EFFICIENCY_WEEKLY.ensure(spark, settings)
    jobs = spark.read.format("delta").load(SILVER_JOBS.path(settings))
    out = GOLD_SITE_EFFICIENCY_WEEKLY.conform(site_efficiency_weekly(jobs))
    out.write.format("delta").mode("overwrite").save(GOLD_SITE_EFFICIENCY_WEEKLY.path(settings))
    n = spark.read.format("delta").load(GOLD_SITE_EFFICIENCY_WEEKLY.path(settings)).count()
    return {GOLD_SITE_EFFICIENCY_WEEKLY.full_name: n}
