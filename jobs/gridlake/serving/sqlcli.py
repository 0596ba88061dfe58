"""``gridlake sql``: ad hoc SQL on the warehouse, printed as a table, CSV or JSON lines."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
import sys
from typing import TextIO

from pyspark.sql import SparkSession


def _plain(value: object) -> object:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def run_sql(
    spark: SparkSession, query: str, fmt: str = "table", limit: int = 1000, out: TextIO = sys.stdout
) -> int:
    """Run ``query`` and print at most ``limit`` rows; returns the number printed."""
    df = spark.sql(query)
    columns = df.columns
    rows = [[_plain(v) for v in r] for r in df.limit(limit).collect()]  # bounded by limit
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)
    elif fmt == "json":
        for r in rows:
            out.write(json.dumps(dict(zip(columns, r, strict=True)), default=str) + "\n")
    else:
        out.write(format_table(columns, rows))
    return len(rows)


def format_table(columns: list[str], rows: list[list[object]]) -> str:
    def cell(v: object) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, float):
            return f"{v:.6g}"
        return str(v)

    text = [[cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(columns)]
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(vals: list[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(vals, widths, strict=True)) + " |"

    body = [sep, line(columns), sep, *[line(r) for r in text], sep]
    return "\n".join(body) + f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})\n"
