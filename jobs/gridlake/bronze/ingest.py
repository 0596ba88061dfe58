"""Kafka -> bronze: every record of every topic, verbatim, exactly once.

Structured Streaming with ``trigger(availableNow=True)`` and one checkpoint per topic: a run reads
what is on the topics now and stops; a crash and a restart resume from the checkpoint, and the
Delta sink's transactional batch commit makes the result exactly once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gridlake.bronze.tables import BRONZE
from gridlake.settings import TOPICS, Settings, get_settings
from gridlake.sources import kafka_auth

log = logging.getLogger(__name__)


def kafka_to_bronze(kafka: DataFrame) -> DataFrame:
    """Kafka source rows -> bronze columns (pure)."""
    now = F.current_timestamp()
    return kafka.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        F.col("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        now.alias("ingested_at"),
        F.to_date(now).alias("ingest_date"),
    )


@dataclass
class IngestResult:
    topic: str
    rows: int
    batches: int


def ingest(
    spark: SparkSession,
    inputs: tuple[str, ...] = tuple(TOPICS),
    settings: Settings | None = None,
    max_offsets_per_trigger: int = 200_000,
) -> list[IngestResult]:
    """Run one availableNow ingest for each input; returns rows and batches written per topic."""
    settings = settings or get_settings()
    queries = []
    for name in inputs:
        table = BRONZE[name]
        table.ensure(spark, settings)
        source = (
            spark.readStream.format("kafka")
            # signed in as the ingest principal: it may read the grid.* topics, nothing else
            .options(**kafka_auth.spark_options(settings, "ingest"))
            .option("subscribe", TOPICS[name])
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
            .option("failOnDataLoss", "true")
            .load()
        )
        query = (
            table.conform(kafka_to_bronze(source))
            .writeStream.format("delta")
            .outputMode("append")
            .option("checkpointLocation", f"{settings.checkpoint_root}/bronze_{name}")
            .queryName(f"bronze_{name}")
            .trigger(availableNow=True)
            .start(table.path(settings))
        )
        queries.append((name, query))
    results = []
    for name, query in queries:
        query.awaitTermination()
        progress = query.recentProgress
        rows = sum(int(p.get("numInputRows", 0)) for p in progress)
        batches = sum(1 for p in progress if int(p.get("numInputRows", 0)) > 0)
        results.append(IngestResult(TOPICS[name], rows, batches))
        log.info("bronze.%s: %d rows in %d batches", name, rows, batches)
    return results
