"""gold.network_link_hourly: the 5-minute link status summed per hour, on a hand-worked example."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from gridlake.gold.network import GOLD_NETWORK_LINK_STATUS
from gridlake.gold.serving import network_link_hourly
from gridlake.spark import rows_frame


def status_row(src, dst, start, samples, delay, loss, excess, quiet, congested, p=None):
    return {
        "src_site": src,
        "dst_site": dst,
        "src_host": f"ps.{src}",
        "dst_host": f"ps.{dst}",
        "interval_start": start,
        "interval_end": None,
        "samples": samples,
        "smoothed_delay_ms": delay,
        "smoothed_loss": loss,
        "min_delay_ms": None,
        "baseline_min_delay_ms": None,
        "baseline_delay_ms": None,
        "baseline_sd_ms": None,
        "excess_delay_ms": excess,
        "quiet": quiet,
        "congestion_index": None,
        "congested": congested,
        "p_util_over_70_next": p,
        "interval_date": start.date(),
    }


@pytest.mark.slow
def test_hourly_link_status_by_hand(spark) -> None:
    t = datetime
    rows = [
        # A -> B, 10:00 hour: three intervals, one congested, two quiet
        status_row("A", "B", t(2026, 11, 22, 10, 0), 5, 10.0, 0.0, 0.1, True, False, 0.2),
        status_row("A", "B", t(2026, 11, 22, 10, 5), 5, 12.0, 0.01, 2.5, False, True, 0.9),
        status_row("A", "B", t(2026, 11, 22, 10, 55), 4, 11.0, 0.0, -0.3, True, False, None),
        # A -> B, Monday 00:00: a new ISO week
        status_row("A", "B", t(2026, 11, 23, 0, 0), 5, 10.0, 0.0, 0.0, True, False),
        # B -> A, 10:00 hour: one interval with unknown flags (no baseline yet): not flagged
        status_row("B", "A", t(2026, 11, 22, 10, 30), 3, 9.0, 0.0, None, None, None),
    ]
    schema = ", ".join(f"{c.name} {c.ddl_type}" for c in GOLD_NETWORK_LINK_STATUS.columns)
    df = rows_frame(spark, rows, schema=schema)
    got = {(r.src_site, r.hour): r.asDict() for r in network_link_hourly(df).collect()}
    assert set(got) == {
        ("A", t(2026, 11, 22, 10)),
        ("A", t(2026, 11, 23, 0)),
        ("B", t(2026, 11, 22, 10)),
    }
    ab = got[("A", t(2026, 11, 22, 10))]
    assert (ab["intervals"], ab["samples"]) == (3, 14)
    assert (ab["congested_intervals"], ab["quiet_intervals"]) == (1, 2)
    assert ab["congested_share"] == pytest.approx(1 / 3)
    assert ab["quiet_share"] == pytest.approx(2 / 3)
    assert ab["mean_delay_ms"] == pytest.approx(11.0)
    assert ab["max_excess_delay_ms"] == pytest.approx(2.5)
    assert ab["mean_loss"] == pytest.approx(0.01 / 3)
    assert ab["max_p_util_over_70_next"] == pytest.approx(0.9)
    assert (ab["link"], got[("B", t(2026, 11, 22, 10))]["link"]) == ("A > B", "B > A")
    assert ab["week"] == date(2026, 11, 16)  # Sunday 22nd belongs to the week of Monday 16th
    assert got[("A", t(2026, 11, 23, 0))]["week"] == date(2026, 11, 23)
    ba = got[("B", t(2026, 11, 22, 10))]
    assert (ba["intervals"], ba["congested_intervals"], ba["quiet_intervals"]) == (1, 0, 0)
    assert (ba["congested_share"], ba["quiet_share"]) == (0.0, 0.0)
    assert ba["max_p_util_over_70_next"] is None
