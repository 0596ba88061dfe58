"""silver.node_samples and silver.node_disk_samples transforms (pure)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.contracts import contract
from gridlake.silver.common import valid_rows, with_lineage
from gridlake.silver.tables import SILVER_NODE_DISK_SAMPLES, SILVER_NODE_SAMPLES
from gridlake.silver.validate import parse_and_validate

NODE_KEYS = SILVER_NODE_SAMPLES.keys  # the grain, as declared
DISK_KEYS = SILVER_NODE_DISK_SAMPLES.keys


def validate_nodes(bronze: DataFrame) -> DataFrame:
    return parse_and_validate(bronze, contract("nodes"))


def clean_node_rows(validated: DataFrame, batch_id: str) -> DataFrame:
    """Valid samples with sample_date and lineage; the disks array stays for explode_disks."""
    return with_lineage(valid_rows(validated).withColumn("sample_date", F.to_date("ts")), batch_id)


def explode_disks(samples: DataFrame) -> DataFrame:
    """One row per (host, ts, device) from the disks array of iostat samples."""
    d = F.col("disk")
    return (
        samples.filter(F.col("disks").isNotNull())
        .select(
            "site",
            "host",
            "ts",
            "interval_seconds",
            F.explode("disks").alias("disk"),
            "sample_date",
            "_kafka_partition",
            "_kafka_offset",
            "_kafka_timestamp",
            "_batch_id",
            "_refined_at",
        )
        .select(
            "site",
            "host",
            "ts",
            "interval_seconds",
            d["device"].alias("device"),
            d["r_s"].alias("r_s"),
            d["w_s"].alias("w_s"),
            d["rkb_s"].alias("rkb_s"),
            d["wkb_s"].alias("wkb_s"),
            d["r_await_ms"].alias("r_await_ms"),
            d["w_await_ms"].alias("w_await_ms"),
            d["aqu_sz"].alias("aqu_sz"),
            d["util_pct"].alias("util_pct"),
            "sample_date",
            "_kafka_partition",
            "_kafka_offset",
            "_kafka_timestamp",
            "_batch_id",
            "_refined_at",
        )
    )
