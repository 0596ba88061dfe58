"""Pure silver transforms for nodes and network on small DataFrames."""

from __future__ import annotations

import json
from datetime import datetime

from pyspark.sql import functions as F

from gridlake.silver.common import with_content_hash
from gridlake.silver.network import resolve_sites, site_directory
from gridlake.silver.nodes import clean_node_rows, explode_disks, validate_nodes
from gridlake.spark import rows_frame

KAFKA = "value string, topic string, partition int, offset long, kafka_timestamp timestamp"


def _bronze(spark, records):
    ts = datetime(2026, 11, 16, 12)
    rows = [(json.dumps(r), "grid.nodes", 0, i, ts) for i, r in enumerate(records)]
    return rows_frame(spark, rows, KAFKA)


def test_iostat_disks_explode_one_row_per_device(spark) -> None:
    iostat = {
        "site": "S", "host": "wn1", "ts": "2026-11-16T10:00:00Z", "interval_seconds": 60,
        "kind": "iostat", "cpu_user": 50.0, "cpu_iowait": 30.0,
        "disks": [
            {"device": "sda", "r_s": 120.0, "util_pct": 97.5, "r_await_ms": 45.0},
            {"device": "sdb", "r_s": 1.0, "util_pct": 2.0, "r_await_ms": 0.4},
        ],
    }  # fmt: skip
    vmstat = {
        "site": "S", "host": "wn1", "ts": "2026-11-16T10:00:00Z", "interval_seconds": 60,
        "kind": "vmstat", "us": 40, "wa": 35, "b": 6, "si": 0, "so": 0,
    }  # fmt: skip
    bad = {**vmstat, "kind": "top"}
    perf = {
        "site": "S", "host": "wn1", "ts": "2026-11-16T10:00:00Z", "interval_seconds": 60,
        "kind": "perf", "instructions": None, "cycles": None,
        "counters_available": "not_supported",
    }  # fmt: skip
    bad_perf = {**perf, "counters_available": "maybe"}
    v = validate_nodes(_bronze(spark, [iostat, vmstat, bad, perf, bad_perf]))
    reasons = [r._reasons for r in v.orderBy("offset").collect()]
    assert reasons[2] == ["invalid value: kind not in ['vmstat', 'iostat', 'perf']"]
    assert reasons[3] == []
    assert reasons[4] == [
        "invalid value: counters_available not in ['yes', 'not_supported', 'not_counted', "
        "'not_requested', 'not_permitted', 'perf_not_installed']"
    ]
    clean = clean_node_rows(v, "b")
    assert clean.count() == 3
    disks = {r.device: r for r in explode_disks(clean).collect()}
    assert set(disks) == {"sda", "sdb"}
    assert disks["sda"].util_pct == 97.5
    assert disks["sda"].r_await_ms == 45.0
    assert disks["sdb"].host == "wn1"
    assert str(disks["sda"].sample_date) == "2026-11-16"


def test_sites_are_resolved_from_host_domains_without_guessing(spark) -> None:
    cols = "src_host string, dst_host string, src_site string, dst_site string"
    known = rows_frame(
        spark,
        [
            ("ps1.cern.ch", "ps1.gridka.de", "CERN-PROD", "FZK-LCG2"),
            # two sites share one domain: ambiguous, never used to resolve
            ("ps1.shared.org", "ps2.cern.ch", "SITE-A", "CERN-PROD"),
            ("ps2.shared.org", "ps3.cern.ch", "SITE-B", "CERN-PROD"),
        ],
        cols,
    )
    todo = rows_frame(
        spark,
        [
            ("ps9.cern.ch", "ps7.gridka.de", None, None),  # both resolvable
            ("ps5.shared.org", "ps7.gridka.de", None, "FZK-LCG2"),  # ambiguous source
            ("ps1.unknown.net", "ps2.cern.ch", None, None),  # unknown domain stays null
        ],
        cols,
    )
    out = {r.src_host: r for r in resolve_sites(todo, site_directory(known)).collect()}
    assert (out["ps9.cern.ch"].src_site, out["ps9.cern.ch"].dst_site) == ("CERN-PROD", "FZK-LCG2")
    assert out["ps9.cern.ch"].sites_resolved is True
    assert out["ps5.shared.org"].src_site is None
    assert out["ps5.shared.org"].sites_resolved is False
    assert out["ps1.unknown.net"].src_site is None
    assert out["ps1.unknown.net"].dst_site == "CERN-PROD"


def test_content_hash_ignores_nothing_it_is_given(spark) -> None:
    df = rows_frame(spark, [("a", 1), ("a", 1), ("a", 2)], "k string, v int")
    hashes = [r._content_hash for r in with_content_hash(df, ["k", "v"]).collect()]
    assert hashes[0] == hashes[1] != hashes[2]
    assert len(hashes[0]) == 64
    only_k = with_content_hash(df, ["k"]).select(F.countDistinct("_content_hash")).first()[0]
    assert only_k == 1
