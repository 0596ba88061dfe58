"""Canonical JSON-lines files as bronze-shaped DataFrames, and silver built from them in memory.

For benchmarks, what-if runs and tests of the analytics on simulated grids: the same pure
transforms as ``gridlake refine`` (validate, clean, newest per key), without Kafka or Delta.
Kafka coordinates are synthesised: partition 0, the file's line order as offset, one timestamp.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gridlake.settings import TOPICS


def bronze_from_jsonl(spark: SparkSession, path: str, name: str) -> DataFrame:
    """One row per non-empty line with the bronze columns (key is left null)."""
    lines = spark.read.text(path).filter(F.length(F.trim("value")) > 0)
    return lines.select(
        F.lit(None).cast("string").alias("key"),
        "value",
        F.lit(TOPICS[name]).alias("topic"),
        F.lit(0).alias("partition"),
        F.monotonically_increasing_id().alias("offset"),
        F.current_timestamp().alias("kafka_timestamp"),
    )


def silver_jobs_from_jsonl(spark: SparkSession, path: str, batch_id: str = "file") -> DataFrame:
    """silver.jobs rows (valid, derived, newest per job_id) from a canonical jobs file."""
    from gridlake.reference.cpu_models import reference_table
    from gridlake.silver.jobs import clean_rows, latest_per_key, validate_jobs

    validated = validate_jobs(bronze_from_jsonl(spark, path, "jobs"))
    return latest_per_key(clean_rows(validated, batch_id, reference_table(spark)), "job_id")


def silver_nodes_from_jsonl(
    spark: SparkSession, path: str, batch_id: str = "file"
) -> tuple[DataFrame, DataFrame]:
    """(silver.node_samples, silver.node_disk_samples) rows from a canonical nodes file."""
    from gridlake.silver.common import latest_per_key
    from gridlake.silver.nodes import NODE_KEYS, clean_node_rows, explode_disks, validate_nodes

    samples = latest_per_key(
        clean_node_rows(validate_nodes(bronze_from_jsonl(spark, path, "nodes")), batch_id),
        list(NODE_KEYS),
    )
    return samples, explode_disks(samples)


def silver_network_from_jsonl(spark: SparkSession, path: str, batch_id: str = "file") -> DataFrame:
    """silver.network rows (valid, sites resolved from host names, newest per key) from a
    canonical network file; the site directory is learnt from the file itself."""
    from gridlake.silver.common import latest_per_key, valid_rows
    from gridlake.silver.network import (
        NETWORK_KEYS,
        clean_network_rows,
        site_directory,
        validate_network,
    )

    # Checkpointed: the directory and the rows both read it, and parsing is the costly step.
    validated = validate_network(bronze_from_jsonl(spark, path, "network")).localCheckpoint()
    directory = site_directory(valid_rows(validated))
    return latest_per_key(clean_network_rows(validated, batch_id, directory), list(NETWORK_KEYS))
