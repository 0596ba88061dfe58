"""The bronze tables: what arrived from Kafka, verbatim, with its Kafka coordinates.

One table per topic (settings.TOPICS), declared here beside the ingest that writes them
(``gridlake.bronze.ingest``); the catalog (``gridlake.catalog``) collects them.
"""

from __future__ import annotations

from gridlake.contracts import contract
from gridlake.settings import TOPICS
from gridlake.tabledef import Column, Table

# --------------------------------------------------------------------------------------------
# bronze: what arrived, verbatim, with its Kafka coordinates. Nothing is ever dropped here.

_BRONZE_COLUMNS = (
    Column("key", "STRING", "Kafka record key"),
    Column("value", "STRING", "The record exactly as it arrived (UTF-8 text)"),
    Column("topic", "STRING", "Kafka topic"),
    Column("partition", "INT", "Kafka partition"),
    Column("offset", "BIGINT", "Kafka offset within the partition"),
    Column("kafka_timestamp", "TIMESTAMP", "Kafka record timestamp (UTC)"),
    Column("ingested_at", "TIMESTAMP", "When gridlake ingest wrote the record (UTC)"),
    Column("ingest_date", "DATE", "UTC date of ingested_at (partition column)"),
)


def _bronze(name: str) -> Table:
    c = contract(name)
    return Table(
        database="bronze",
        name=name,
        grain="one row per Kafka record (topic, partition, offset).",
        description=f"Raw records of topic {c.topic}: {c.title}.",
        columns=_BRONZE_COLUMNS,
        partition_by=("ingest_date",),
    )


BRONZE = {name: _bronze(name) for name in TOPICS}

TABLES: tuple[Table, ...] = tuple(BRONZE.values())
