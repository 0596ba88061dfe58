"""silver.network transforms (pure): typed perfSONAR results with sites resolved from hosts."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.contracts import contract
from gridlake.silver.common import valid_rows, with_lineage
from gridlake.silver.tables import SILVER_NETWORK
from gridlake.silver.validate import parse_and_validate

NETWORK_KEYS = SILVER_NETWORK.keys  # the grain, as declared


def validate_network(bronze: DataFrame) -> DataFrame:
    return parse_and_validate(bronze, contract("network"))


def host_domain(col: str) -> F.Column:
    """psonar1.cern.ch -> cern.ch (the host name without its first label, lower case)."""
    return F.lower(F.regexp_extract(F.col(col), r"^[^.]+\.(.+)$", 1))


def site_directory(*frames: DataFrame) -> DataFrame:
    """(domain, site) pairs learnt from records that name both a host and its site.

    A domain seen with more than one site is ambiguous and left out: resolving it would guess.
    """
    pairs = None
    for df in frames:
        for host, site in (("src_host", "src_site"), ("dst_host", "dst_site")):
            p = df.filter(F.col(site).isNotNull()).select(
                host_domain(host).alias("domain"), F.col(site).alias("site")
            )
            pairs = p if pairs is None else pairs.unionByName(p)
    assert pairs is not None
    distinct = pairs.filter(F.col("domain") != "").distinct()
    return (
        distinct.groupBy("domain")
        .agg(F.count("*").alias("n"), F.first("site").alias("site"))
        .filter("n = 1")
        .drop("n")
    )


def resolve_sites(df: DataFrame, directory: DataFrame) -> DataFrame:
    """Fill missing src_site/dst_site from the host's domain; flag rows where that happened."""
    src = directory.select(F.col("domain").alias("_sd"), F.col("site").alias("_ss"))
    dst = directory.select(F.col("domain").alias("_dd"), F.col("site").alias("_ds"))
    out = (
        df.withColumn("_src_domain", host_domain("src_host"))
        .withColumn("_dst_domain", host_domain("dst_host"))
        .join(F.broadcast(src), F.col("_src_domain") == F.col("_sd"), "left")
        .join(F.broadcast(dst), F.col("_dst_domain") == F.col("_dd"), "left")
    )
    resolved = (F.col("src_site").isNull() & F.col("_ss").isNotNull()) | (
        F.col("dst_site").isNull() & F.col("_ds").isNotNull()
    )
    return (
        out.withColumn("sites_resolved", resolved)
        .withColumn("src_site", F.coalesce("src_site", "_ss"))
        .withColumn("dst_site", F.coalesce("dst_site", "_ds"))
        .drop("_src_domain", "_dst_domain", "_sd", "_ss", "_dd", "_ds")
    )


def clean_network_rows(validated: DataFrame, batch_id: str, directory: DataFrame) -> DataFrame:
    valid = valid_rows(validated).withColumn("measured_date", F.to_date("ts"))
    return with_lineage(resolve_sites(valid, directory), batch_id)
