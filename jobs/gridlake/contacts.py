"""ops.sites: the operators' reference of sites, where each site's weekly report is e-mailed.

Small (a row per site, hundreds at most): read whole, written one site at a time by
``gridlake sites set`` (a MERGE on the site), never derived from the data.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from pyspark.sql import SparkSession

from gridlake.settings import Settings, get_settings
from gridlake.spark import rows_frame
from gridlake.tabledef import Check, Column, Table, ensure_tables

OPS_SITES = Table(
    database="ops",
    name="sites",
    keys=("site",),
    grain="one row per site.",
    description=(
        "Operator-maintained site reference: the contacts each site's weekly report is e-mailed "
        "to (gridlake report --send, the grid_weekly_site_reports DAG). Set with "
        "`gridlake sites set SITE --contacts a@x,b@y`; a site without a row gets no e-mail."
    ),
    columns=(
        Column("site", "STRING", "Site name as in silver.jobs", nullable=False),
        Column("contacts", "ARRAY<STRING>", "E-mail addresses of the site's operations contacts"),
        Column("send_reports", "BOOLEAN", "false: the site's weekly report is not e-mailed"),
        Column("updated_at", "TIMESTAMP", "When the row was last set (UTC)"),
        Column("updated_by", "STRING", "The OS user who set it"),
    ),
    checks=(Check("not_null", "site"), Check("unique", "site")),
)

TABLES: tuple[Table, ...] = (OPS_SITES,)

# An address as mail systems take it from a form: local part, @, a dotted domain (no spaces).
_ADDRESS = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


def parse_contacts(text: str) -> list[str]:
    """'a@x.org, b@y.org' -> ['a@x.org', 'b@y.org']; ValueError naming any that is not one."""
    contacts = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in contacts if not _ADDRESS.match(c)]
    if bad:
        raise ValueError(f"not an e-mail address: {', '.join(bad)}")
    return contacts


def set_site(
    spark: SparkSession,
    site: str,
    contacts: Sequence[str],
    send_reports: bool = True,
    settings: Settings | None = None,
) -> None:
    """Insert or replace the site's row (MERGE on site)."""
    from delta.tables import DeltaTable

    settings = settings or get_settings()
    ensure_tables(spark, TABLES, settings)
    schema = ", ".join(f"`{c.name}` {c.ddl_type}" for c in OPS_SITES.columns)
    row = (site, list(contacts), send_reports, datetime.now(UTC).replace(tzinfo=None),
           getpass.getuser())  # fmt: skip
    new = rows_frame(spark, [row], schema)
    (
        DeltaTable.forPath(spark, OPS_SITES.path(settings))
        .alias("t")
        .merge(new.alias("s"), "t.site = s.site")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )


def read_sites(spark: SparkSession, settings: Settings | None = None) -> list[dict]:
    """Every row of ops.sites (a few hundred at most), sorted by site."""
    settings = settings or get_settings()
    ensure_tables(spark, TABLES, settings)
    rows = spark.read.format("delta").load(OPS_SITES.path(settings)).collect()
    return sorted((r.asDict() for r in rows), key=lambda r: r["site"])


def report_contacts(spark: SparkSession, settings: Settings | None = None) -> dict[str, list[str]]:
    """site -> contacts, for the sites whose reports are e-mailed (send_reports not false)."""
    return {
        r["site"]: list(r["contacts"] or [])
        for r in read_sites(spark, settings)
        if r["send_reports"] is not False and r["contacts"]
    }
