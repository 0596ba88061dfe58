"""Transforms shared by every silver input: lineage, quarantine rows, newest record per key."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def with_lineage(df: DataFrame, batch_id: str) -> DataFrame:
    """Carry the Kafka coordinates of the record kept and the batch that wrote it."""
    return (
        df.withColumn("_kafka_partition", F.col("partition"))
        .withColumn("_kafka_offset", F.col("offset"))
        .withColumn("_kafka_timestamp", F.col("kafka_timestamp"))
        .withColumn("_batch_id", F.lit(batch_id))
        .withColumn("_refined_at", F.current_timestamp())
    )


def quarantine_rows(validated: DataFrame, batch_id: str) -> DataFrame:
    """Invalid records, verbatim, with every reason."""
    return validated.filter(F.size("_reasons") > 0).select(
        F.col("value").alias("raw"),
        F.col("_reasons").alias("reasons"),
        F.array_join("_reasons", "; ").alias("reason"),
        "topic",
        "partition",
        "offset",
        "kafka_timestamp",
        F.lit(batch_id).alias("batch_id"),
        F.current_timestamp().alias("quarantined_at"),
    )


def valid_rows(validated: DataFrame) -> DataFrame:
    return validated.filter(F.size("_reasons") == 0)


def latest_per_key(df: DataFrame, keys: str | Sequence[str]) -> DataFrame:
    """Keep the newest record per key: the one with the highest Kafka offset.

    A re-sent record has the same Kafka key and so lands in the same partition, after the first:
    the offset orders a key's records whatever the producers' clocks say (a correction sent from
    a host with a slow clock is still the newer one). Only when a key's records lie in more than
    one partition (the topic was re-partitioned, a producer sent without the key) does the Kafka
    timestamp decide, then the offset.
    """
    keys = [keys] if isinstance(keys, str) else list(keys)
    by_key = Window.partitionBy(*keys)
    spread = F.size(F.collect_set("_kafka_partition").over(by_key)) > 1
    order = by_key.orderBy(
        F.when(spread, F.col("_kafka_timestamp")).desc_nulls_last(), F.col("_kafka_offset").desc()
    )
    return df.withColumn("_rank", F.row_number().over(order)).filter("_rank = 1").drop("_rank")


# The MERGE's "newer" condition between a batch's record (s) and silver's row (t): the higher
# offset in the key's partition (the same rule as ``latest_per_key``); or a record produced after
# the row was refined (its Kafka timestamp later than ``_refined_at``): a send that came after, even
# at a lower offset (the topic was recreated and its offsets began again); across partitions the
# Kafka timestamp, then the offset. A replay of an old record is none of these.
NEWER_SQL = (
    "(s._kafka_partition = t._kafka_partition AND s._kafka_offset > t._kafka_offset)"
    " OR s._kafka_timestamp > t._refined_at"
    " OR (NOT (s._kafka_partition <=> t._kafka_partition) AND (s._kafka_timestamp >"
    " t._kafka_timestamp OR (s._kafka_timestamp = t._kafka_timestamp AND s._kafka_offset >"
    " t._kafka_offset)))"
)


def with_content_hash(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """SHA-256 of the given columns (as JSON): equal content, equal hash."""
    return df.withColumn(
        "_content_hash", F.sha2(F.to_json(F.struct(*[F.col(c) for c in columns])), 256)
    )
