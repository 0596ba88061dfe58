"""Network analytics (gold.network_*) against a simulated grid whose network effects are known.

The grid: 6 sites, 5 days (Wednesday to Sunday, so one weekend) of one-minute perfSONAR latency
samples and 4-hourly throughput tests, with the simulator's planted congestion episodes on two
paths, a weekend latency spike on every incoming link of one site, a drifting clock, a
complete-loss outage and a throughput drop (``truth.json``), plus the planted utilisation of
every path at every sample (``link_truth.csv``, the labels of the predictor).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from pyspark.sql import functions as F

from gridlake.gold import network as N
from gridlake.spark import rows_frame

SIM = {
    "start": date(2026, 10, 7),  # a Wednesday: Saturday and Sunday are the last two days
    "days": 5,
    "sites": 6,
    "cpu_models": 5,
    "jobs": 500,
    "latency_interval": 60,
    "monitored_hosts_per_site": 0,
    "seed": 3,
}
LINK_TRUTH_SCHEMA = "src_site STRING, dst_site STRING, ts TIMESTAMP, utilisation DOUBLE"


def _ts(text: str) -> datetime:
    """truth.json time (RFC 3339, Z) -> naive UTC datetime, as Spark returns with UTC sessions."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


@pytest.fixture(scope="module")
def net_grid(tmp_path_factory):
    from gridlake.sources.simulate import SimConfig, simulate

    out = tmp_path_factory.mktemp("netsim")
    truth = simulate(SimConfig(**SIM), out, progress=False)
    return out, truth["network"]


@pytest.fixture(scope="module")
def planted(net_grid):
    return net_grid[1]


@pytest.fixture(scope="module")
def network(spark, net_grid):
    """silver.network rows of the simulated grid, built with refine's own transforms."""
    from gridlake.silver.files import silver_network_from_jsonl

    df = silver_network_from_jsonl(spark, str(net_grid[0] / "network.jsonl")).cache()
    df.count()
    yield df
    df.unpersist()


@pytest.fixture(scope="module")
def labels(spark, net_grid):
    return spark.read.csv(
        str(net_grid[0] / "link_truth.csv"), header=True, schema=LINK_TRUTH_SCHEMA
    )


@pytest.fixture(scope="module")
def gold(network, labels):
    """Every output of ``compute`` with the predictor trained (the slow part, done once)."""
    out = N.compute(network, labels, run_id="test-run")
    assert set(out) == {t.full_name for t in N.TABLES}
    cached = {name: df.cache() for name, df in out.items()}
    yield cached
    for df in cached.values():
        df.unpersist()


@pytest.fixture(scope="module")
def status_truth(gold, labels):
    """gold.network_link_status with the mean planted utilisation of the same interval."""
    u = (
        labels.withColumn(
            "interval_start", F.timestamp_seconds(F.floor(F.unix_seconds("ts") / 300) * 300)
        )
        .groupBy("src_site", "dst_site", "interval_start")
        .agg(F.avg("utilisation").alias("u"))
    )
    df = (
        gold[N.GOLD_NETWORK_LINK_STATUS.full_name]
        .join(u, ["src_site", "dst_site", "interval_start"], "left")
        .cache()
    )
    yield df
    df.unpersist()


@pytest.fixture(scope="module")
def alarms(gold):
    return [r.asDict() for r in gold[N.GOLD_NETWORK_ALARMS.full_name].collect()]


def _episode_frame(spark, planted, margin_minutes: int = 0):
    rows = [
        (
            e["src_site"],
            e["dst_site"],
            _ts(e["start"]) - timedelta(minutes=margin_minutes),
            _ts(e["end"]) + timedelta(minutes=margin_minutes),
            i,
        )
        for i, e in enumerate(planted["congestion_episodes"])
    ]
    return rows_frame(
        spark, rows, "e_src STRING, e_dst STRING, e_start TIMESTAMP, e_end TIMESTAMP, episode INT"
    )


def _in_episode(status, episodes):
    """status rows with the planted episode they overlap (episode null outside every episode)."""
    cond = (
        (F.col("src_site") == F.col("e_src"))
        & (F.col("dst_site") == F.col("e_dst"))
        & (F.col("interval_end") > F.col("e_start"))
        & (F.col("interval_start") < F.col("e_end"))
    )
    return status.join(episodes, cond, "left")


def _planted_paths(planted) -> set[tuple[str, str]]:
    paths = {tuple(p) for p in planted["congested_paths"]}
    for key in ("outage", "throughput_drop", "clock_drift"):
        paths.add((planted[key]["src_site"], planted[key]["dst_site"]))
    return paths


# --------------------------------------------------------------------------------------------
# Fast unit checks on hand-made rows
# --------------------------------------------------------------------------------------------


def _latency_rows(spark, values, start=datetime(2026, 10, 7, 0, 0, 30)):
    """silver-like latency rows of one path: values = [(delay_median, delay_min, loss), ...]."""
    rows = [
        (
            "A",
            "B",
            "ps.a.org",
            "ps.b.org",
            start + timedelta(minutes=i),
            "latency",
            med,
            mn,
            0.1,
            loss,
            None,
        )
        for i, (med, mn, loss) in enumerate(values)
    ]
    schema = (
        "src_site STRING, dst_site STRING, src_host STRING, dst_host STRING, ts TIMESTAMP, "
        "test STRING, delay_median_ms DOUBLE, delay_min_ms DOUBLE, delay_sd_ms DOUBLE, "
        "packet_loss DOUBLE, throughput_bps DOUBLE"
    )
    return rows_frame(spark, rows, schema)


def test_labels_are_the_next_interval(spark):
    """The label of an interval is the utilisation of the interval after it (a forecast)."""
    rows = [
        ("A", "B", datetime(2026, 10, 7, 0, 1), 0.2),
        ("A", "B", datetime(2026, 10, 7, 0, 3), 0.4),  # interval 00:00 -> mean 0.3
        ("A", "B", datetime(2026, 10, 7, 0, 6), 0.9),  # interval 00:05 -> mean 0.9
    ]
    lab = N.interval_labels(
        rows_frame(
            spark, rows, "src_site STRING, dst_site STRING, ts TIMESTAMP, utilisation DOUBLE"
        )
    )
    got = {r["interval_start"]: (r["next_utilisation"], r["label"]) for r in lab.collect()}
    assert got == {
        datetime(2026, 10, 6, 23, 55): (pytest.approx(0.3), 0.0),
        datetime(2026, 10, 7, 0, 0): (pytest.approx(0.9), 1.0),
    }


def test_features_are_lags_of_past_samples_only(spark):
    """delay_lag_k of an interval is the excess delay k samples before its last sample: a
    rising ramp shows in the lags in order, and nothing after the interval leaks in."""
    values = [(10.0 + (i if i >= 20 else 0), 9.9, 0.0) for i in range(40)]
    samples = N.latency_samples(_latency_rows(spark, values))
    feats = N.interval_features(samples, N.path_baselines(samples))
    row = feats.filter(F.col("interval_start") == datetime(2026, 10, 7, 0, 25)).first()
    assert row["samples"] == 5
    # last sample of the interval is minute 29 (delay 39), baseline 10 ms (first hour's median)
    lags = [row[c] for c in N.FEATURE_COLUMNS if c.startswith("delay_lag_")]
    diffs = [a - b for a, b in itertools.pairwise(lags)]
    assert all(d == pytest.approx(1.0) for d in diffs[:9])  # minutes 29..20 rise 1 ms a minute
    assert diffs[9] == pytest.approx(20.0)  # minute 20 (30 ms) vs minute 19 (10 ms)
    assert all(d == pytest.approx(0.0) for d in diffs[10:])
    assert row["f_window_delay_min"] == pytest.approx(lags[-1])


@pytest.mark.slow
def test_complete_loss_times_and_congestion_index(spark):
    """Complete loss: start = first lost sample, end = first sample through again; it is an
    outage, not congestion."""
    # delays look high while everything is lost: delay x loss must still not call it congestion
    values = [(5.0, 4.9, 0.0)] * 20 + [(9.0, 4.9, 1.0)] * 7 + [(5.0, 4.9, 0.0)] * 13
    net = _latency_rows(spark, values)
    alarms = N.network_alarms(net).collect()
    assert [a["kind"] for a in alarms] == ["complete_loss"]
    assert alarms[0]["start_ts"] == datetime(2026, 10, 7, 0, 20, 30)
    assert alarms[0]["end_ts"] == datetime(2026, 10, 7, 0, 27, 30)
    status = N.network_link_status(net)
    assert status.filter("congested").count() == 0
    assert status.filter("smoothed_loss = 1").count() == 1


# --------------------------------------------------------------------------------------------
# Against the simulated grid
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_congested_flags_cover_planted_episodes(spark, planted, status_truth):
    episodes = _episode_frame(spark, planted)
    s = _in_episode(status_truth, episodes)
    # The episode's core: the simulator's delay and loss react from utilisation ~0.8 upwards.
    core = s.filter(F.col("episode").isNotNull() & (F.col("u") >= 0.82))
    n_core = core.count()
    assert n_core > 50
    recall = core.filter("congested").count() / n_core
    assert recall >= 0.8, recall
    per_episode = {
        r["episode"]: r["n"]
        for r in s.filter("congested").groupBy("episode").agg(F.count("*").alias("n")).collect()
    }
    assert all(per_episode.get(i, 0) > 0 for i in range(len(planted["congestion_episodes"])))

    # Interval-level precision and recall against the planted utilisation: a planted congested
    # interval is one inside an episode whose mean utilisation reaches 0.82 (delay and loss rise
    # past ~0.8); a flag is right when it falls inside a planted episode (+-10 min: the 5-minute
    # smoothing lags the start and the end).
    episodes_wide = _episode_frame(spark, planted, margin_minutes=10)
    flagged = _in_episode(status_truth.filter("congested"), episodes_wide)
    n_flagged = flagged.count()
    precision = flagged.filter(F.col("episode").isNotNull()).count() / n_flagged
    print(f"congestion: recall {recall:.3f} over {n_core} planted intervals, precision "
          f"{precision:.3f} over {n_flagged} flagged")  # fmt: skip
    assert recall >= 0.9, recall
    assert precision >= 0.8, precision

    # Rare elsewhere: outside the planted episodes (+-10 min) almost nothing is flagged.
    wide = _in_episode(status_truth, _episode_frame(spark, planted, margin_minutes=10))
    outside = wide.filter(F.col("episode").isNull())
    false_flags = outside.filter("congested").count()
    assert false_flags <= 0.001 * outside.count(), false_flags
    congested_paths = {tuple(p) for p in planted["congested_paths"]}
    flagged_paths = {
        (r["src_site"], r["dst_site"])
        for r in status_truth.filter("congested")
        .select("src_site", "dst_site")
        .distinct()
        .collect()
    }
    assert flagged_paths == congested_paths


@pytest.mark.slow
def test_link_status_baselines_and_quiet_filter(planted, status_truth):
    st = status_truth
    assert st.count() == 30 * 5 * 288  # every path, every 5 minutes
    spike_site = planted["recurring_spike"]["dst_site"]
    drift = (planted["clock_drift"]["src_site"], planted["clock_drift"]["dst_site"])
    clean = st.filter(
        (F.col("dst_site") != spike_site)
        & ~((F.col("src_site") == drift[0]) & (F.col("dst_site") == drift[1]))
        & (F.col("u") < 0.7)
    )
    # clean, uncongested intervals are quiet; the baseline sits at the path's usual delay
    assert clean.filter("quiet").count() >= 0.95 * clean.count()
    assert clean.filter(F.abs("excess_delay_ms") > 0.5).count() == 0
    # the weekend spike does not move the baseline: excess ~ +8 ms during the spike hours
    spike = st.filter(
        (F.col("dst_site") == spike_site)
        & F.dayofweek("interval_start").isin(1, 7)
        & F.hour("interval_start").between(12, 17)
    )
    row = spike.agg(
        F.expr("percentile(excess_delay_ms, 0.5)").alias("m"),
        F.avg(F.col("quiet").cast("double")).alias("q"),
    ).first()
    assert row["m"] == pytest.approx(planted["recurring_spike"]["extra_delay_ms"], abs=0.5)
    assert row["q"] < 0.01
    # congested intervals are never quiet; the propagation floor sits below the usual delay
    assert st.filter("congested and quiet").count() == 0
    assert st.filter("baseline_min_delay_ms > baseline_delay_ms").count() == 0
    # predictions are probabilities, higher where the next interval runs hot
    p = st.agg(
        F.min("p_util_over_70_next").alias("lo"),
        F.max("p_util_over_70_next").alias("hi"),
        F.count(F.when(F.col("p_util_over_70_next").isNull(), 1)).alias("nulls"),
    ).first()
    assert p["nulls"] == 0 and p["lo"] >= 0.0 and p["hi"] <= 1.0
    hot = st.filter("u > 0.85").agg(F.avg("p_util_over_70_next")).first()[0]
    cold = st.filter("u < 0.5").agg(F.avg("p_util_over_70_next")).first()[0]
    assert hot > 0.5 > 0.05 > cold


@pytest.mark.slow
def test_outage_alarm(planted, alarms):
    outage = planted["outage"]
    lost = [a for a in alarms if a["kind"] == "complete_loss"]
    assert len(lost) == 1
    a = lost[0]
    assert (a["src_site"], a["dst_site"]) == (outage["src_site"], outage["dst_site"])
    # samples every minute: the first lost and the first recovered sample are < 1 min late
    assert timedelta(0) <= a["start_ts"] - _ts(outage["start"]) < timedelta(minutes=1)
    assert timedelta(0) <= a["end_ts"] - _ts(outage["end"]) < timedelta(minutes=1)
    assert json.loads(a["evidence"])["recovered"] is True


@pytest.mark.slow
def test_throughput_drop_alarm(planted, alarms):
    drop = planted["throughput_drop"]
    tp = [a for a in alarms if a["kind"].startswith("throughput_")]
    assert [(a["kind"], a["src_site"], a["dst_site"]) for a in tp] == [
        ("throughput_drop", drop["src_site"], drop["dst_site"])
    ]
    a = tp[0]
    # tests every 4 hours: the first test after the drop raises it
    assert timedelta(0) <= a["start_ts"] - _ts(drop["from"]) <= timedelta(hours=4)
    assert a["value"] == pytest.approx(drop["factor"], abs=0.1)  # observed / baseline median


@pytest.mark.slow
def test_clock_alarms(network, planted, alarms):
    drift = planted["clock_drift"]
    path = (drift["src_site"], drift["dst_site"])
    clock = [a for a in alarms if a["kind"].startswith("clock_")]
    assert {(a["src_site"], a["dst_site"]) for a in clock} == {path}
    drifts = [a for a in clock if a["kind"] == "clock_drift"]
    assert len(drifts) == 1
    assert drifts[0]["value"] == pytest.approx(drift["ms_per_day"], abs=0.2)
    negative = (
        network.filter(
            (F.col("src_site") == path[0])
            & (F.col("dst_site") == path[1])
            & (F.col("delay_min_ms") < 0)
        )
        .agg(F.min("ts"))
        .first()[0]
    )
    neg_alarms = [a for a in clock if a["kind"] == "clock_negative_delay"]
    if negative is None:
        assert neg_alarms == []
    else:  # the short path's delays went negative: one alarm from the first negative sample
        assert len(neg_alarms) == 1
        assert neg_alarms[0]["start_ts"] == negative
        assert neg_alarms[0]["value"] < 0


@pytest.mark.slow
def test_no_alarms_on_clean_paths(planted, alarms):
    planted_paths = _planted_paths(planted)
    congested = {tuple(p) for p in planted["congested_paths"]}
    for a in alarms:
        if a["kind"].startswith("recurring_"):
            continue
        assert (a["src_site"], a["dst_site"]) in planted_paths, a
        if a["kind"] == "high_loss":
            assert (a["src_site"], a["dst_site"]) in congested, a
    kinds = {a["kind"] for a in alarms}
    assert {"complete_loss", "throughput_drop", "clock_drift"} <= kinds


@pytest.mark.slow
def test_clean_control_grid_raises_no_alarm(spark, tmp_path):
    """The same grid (seed, sites, days, samples) without the planted effects: no congestion,
    no clock drift, no weekend spike, no outage, no throughput drop. No alarm of any kind."""
    from gridlake.silver.files import silver_network_from_jsonl
    from gridlake.sources.simulate import SimConfig, simulate

    truth = simulate(SimConfig(**{**SIM, "effects": False}), tmp_path, progress=False)
    assert truth["network"]["congestion_episodes"] == []
    network = silver_network_from_jsonl(spark, str(tmp_path / "network.jsonl"))
    alarms = N.network_alarms(network).collect()
    assert alarms == [], [(a["kind"], a["src_site"], a["dst_site"]) for a in alarms]


def test_one_weekend_is_not_a_recurring_pattern(planted, alarms):
    """The 5-day grid's spike covers one weekend only: no recurring alarm (two weeks needed)."""
    assert planted["recurring_spike"]["days"] == ["Saturday", "Sunday"]
    assert not [a for a in alarms if a["kind"].startswith("recurring_")]


# Grids of two weeks and two days with the recurring spike on the chosen days (Monday = 0), the
# other planted effects as usual; 10-minute latency samples are enough for hourly medians.
PATTERNS = {
    "saturday": ((5,), "recurring_weekend_spike"),
    "weekend": ((5, 6), "recurring_weekend_spike"),
    "wednesday": ((2,), "recurring_weekly_spike"),
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "pattern",
    # saturday alone is the weekend's kind on one day: nightly (~20 s of make test's longest lane)
    [
        pytest.param(p, marks=pytest.mark.nightly) if p == "saturday" else p
        for p in sorted(PATTERNS)
    ],
)
def test_recurring_spike_recognised(spark, tmp_path, pattern):
    from gridlake.silver.files import silver_network_from_jsonl
    from gridlake.sources.simulate import SimConfig, simulate

    days, kind = PATTERNS[pattern]
    cfg = {**SIM, "start": date(2026, 10, 5), "days": 16, "latency_interval": 600}
    truth = simulate(SimConfig(**cfg, spike_days=days), tmp_path, progress=False)
    spike = truth["network"]["recurring_spike"]
    network = silver_network_from_jsonl(spark, str(tmp_path / "network.jsonl"))
    # the recurring-pattern part of network_alarms alone (the other kinds: the tests above)
    baselines = N.path_baselines(N.latency_samples(network))
    recurring = [a.asDict() for a in N.recurring_spikes(baselines).collect()]
    # one alarm: the weekend's (its one or two days together) or the weekday's
    assert [(a["kind"], a["dst_site"]) for a in recurring] == [(kind, spike["dst_site"])]
    a = recurring[0]
    assert a["src_site"] is None and a["src_host"] is None
    ev = json.loads(a["evidence"])
    lo, hi = spike["hours_utc"]
    assert ev["hours_utc"] == list(range(lo, hi))
    assert ev["days_of_week"] == sorted(spike["days"], key=["Sunday", "Monday", "Tuesday",
        "Wednesday", "Thursday", "Friday", "Saturday"].index)  # fmt: skip
    # every planted day of the 16 (from Monday 5 October) is among the dates, and only those
    planted_dates = [
        (date(2026, 10, 5) + timedelta(days=i)).isoformat()
        for i in range(16)
        if (date(2026, 10, 5) + timedelta(days=i)).weekday() in days
    ]
    assert [d for d in ev["days"] if d in planted_dates] == ev["days"]
    assert len(ev["days"]) >= len(planted_dates) - 1  # the first may lack a baseline
    assert ev["weeks_seen"] >= 2 and ev["weeks_seen"] >= 0.75 * ev["weeks_observed"]
    assert ev["incoming_links"] == SIM["sites"] - 1
    assert a["value"] == pytest.approx(spike["extra_delay_ms"], abs=1.0)
    assert a["start_ts"].hour == lo and a["end_ts"].hour == hi


def _expected_cost(r: dict) -> float:
    """The documented cost of moving 1 GB, worked out from the row's own inputs."""
    transfer = 8e9 / r["throughput_clear_median_bps"]
    slowdown = 1 + (N.CONGESTION_SLOWDOWN - 1) * r["congested_share"]
    return transfer * slowdown / (1 - min(r["loss_mean"], 0.5)) + N.SETUP_RTTS * r["rtt_ms"] / 1e3


@pytest.mark.slow
def test_cost_matrix(planted, gold):
    cm = [r.asDict() for r in gold[N.GOLD_NETWORK_COST_MATRIX.full_name].collect()]
    assert len(cm) == 30  # one ISO week, every ordered site pair
    by = {(r["week"], r["src_site"], r["dst_site"]): r for r in cm}
    assert all(r["cost_seconds_per_gb"] > 0 and r["throughput_tests"] > 0 for r in cm)
    drop = (planted["throughput_drop"]["src_site"], planted["throughput_drop"]["dst_site"])
    for r in cm:
        assert r["cost_seconds_per_gb"] == pytest.approx(_expected_cost(r), rel=1e-9)
        assert r["throughput_tests"] >= 28 and r["intervals"] == 1440
        assert r["throughput_p10_bps"] < r["throughput_clear_median_bps"]
        if (r["src_site"], r["dst_site"]) == drop:
            continue
        # 5 days of 4-hourly tests on a steady path: a well supported figure
        assert r["confidence"] == "high" and r["throughput_rel_se"] < 0.1, r
        # the tests reach 0.6 to 0.98 of what the path can do (the simulator's draw)
        true = planted["paths"][f"{r['src_site']}->{r['dst_site']}"]["achievable_throughput_bps"]
        assert 0.6 * true < r["throughput_clear_median_bps"] < 0.98 * true, r
    # the path whose throughput halved for the last two days: the least certain median
    spread = {(r["src_site"], r["dst_site"]): r["throughput_rel_se"] for r in cm}
    assert max(spread, key=spread.get) == drop, spread
    for src, dst in planted["congested_paths"]:
        for (week, s, d), r in by.items():
            if (s, d) != (src, dst):
                continue
            reverse = by[(week, dst, src)]
            assert r["congested_share"] > 0.03 > reverse["congested_share"]
            assert r["rtt_ms"] == pytest.approx(reverse["rtt_ms"])
            # congestion costs: more than the same path would cost without it
            assert r["cost_seconds_per_gb"] > 1.05 * _expected_cost({**r, "congested_share": 0})
    # ranks: 1..n per destination and week, in order of cost
    for dst in {r["dst_site"] for r in cm}:
        rows = sorted((r for r in cm if r["dst_site"] == dst), key=lambda r: r["source_rank"])
        assert [r["source_rank"] for r in rows] == list(range(1, len(rows) + 1))
        costs = [r["cost_seconds_per_gb"] for r in rows]
        assert costs == sorted(costs)


@pytest.mark.slow
def test_cost_matrix_ranks_paths_in_the_planted_order_of_capacity(planted, gold):
    """Acceptance: for at least 90% of path pairs the cheaper path is the one with the larger
    planted achievable throughput (every pair of the 30 paths, per week)."""
    cm = [r.asDict() for r in gold[N.GOLD_NETWORK_COST_MATRIX.full_name].collect()]
    capacity = {k: v["achievable_throughput_bps"] for k, v in planted["paths"].items()}
    agree = total = 0
    for week in {r["week"] for r in cm}:
        rows = [r for r in cm if r["week"] == week]
        for a, b in itertools.combinations(rows, 2):
            ca = capacity[f"{a['src_site']}->{a['dst_site']}"]
            cb = capacity[f"{b['src_site']}->{b['dst_site']}"]
            if ca == cb:
                continue
            total += 1
            agree += (ca > cb) == (a["cost_seconds_per_gb"] < b["cost_seconds_per_gb"])
    assert total >= 400
    share = agree / total
    print(f"cost matrix vs planted capacity: {agree}/{total} path pairs in order ({share:.3f})")
    assert share >= 0.9, share


@pytest.mark.slow
def test_cost_matrix_shows_a_missing_path_as_missing(network, gold):
    """A path without throughput tests has no cost, no rank and no confidence: never zero."""
    status = gold[N.GOLD_NETWORK_LINK_STATUS.full_name]
    row = network.filter("test = 'throughput'").select("src_site", "dst_site").first()
    gone = (F.col("src_site") == row["src_site"]) & (F.col("dst_site") == row["dst_site"])
    cm = N.network_cost_matrix(network.filter(~(gone & (F.col("test") == "throughput"))), status)
    rows = {(r["src_site"], r["dst_site"]): r for r in cm.collect()}
    r = rows[(row["src_site"], row["dst_site"])]
    assert r["throughput_tests"] is None and r["latency_samples"] > 0
    assert r["cost_seconds_per_gb"] is None
    assert r["source_rank"] is None and r["confidence"] is None
    others = [v for k, v in rows.items() if k[1] == row["dst_site"] and v is not r]
    assert sorted(v["source_rank"] for v in others) == list(range(1, len(others) + 1))


def test_training_partitions_follow_rows_up_to_the_cores():
    from gridlake.gold.network.predictor import ROWS_PER_TRAINING_PARTITION as R
    from gridlake.gold.network.predictor import training_partitions

    assert training_partitions(0, 2) == 1
    assert training_partitions(41_673, 2) == 1  # the test grid: one task per step of a fit
    assert training_partitions(R, 8) == 1 and training_partitions(R + 1, 8) == 2
    assert training_partitions(5 * R, 2) == 2  # never more partitions than cores
    assert training_partitions(100 * R, 64) == 64 and training_partitions(100 * R, 1) == 1


@pytest.mark.slow
def test_predictor_leave_one_link_out(planted, gold):
    runs = [r.asDict() for r in gold[N.GOLD_NETWORK_MODEL_RUNS.full_name].collect()]
    assert {r["run_id"] for r in runs} == {"test-run"}
    held = [r for r in runs if r["scope"] == "held_out_link"]
    links = {(r["held_out_src_site"], r["held_out_dst_site"]) for r in held}
    # the default held-out links: the two links that ever run hot, and the filter's worst link
    assert {tuple(p) for p in planted["congested_paths"]} < links and len(links) == 3
    assert {r["model_type"] for r in held} == set(N.MODEL_TYPES)
    for r in held:
        assert r["train_rows"] > 30_000 and r["test_rows"] > 1000
        assert r["features"] == list(N.FEATURE_COLUMNS)
        assert r["mse"] is not None and r["empirical_mse"] is not None
        if r["test_positives"]:
            assert r["auc"] is not None and r["precision"] is not None and r["recall"] is not None
    pooled = {r["model_type"]: r for r in runs if r["scope"] == "pooled"}
    final = [r for r in runs if r["scope"] == "final"]
    assert len(final) == 1 and final[0]["selected"]
    chosen = final[0]["model_type"]
    assert pooled[chosen]["auc"] == max(p["auc"] for p in pooled.values())
    assert {r["model_type"] for r in runs if r["selected"]} == {chosen}
    best = pooled[chosen]
    print(
        json.dumps(
            [{k: v for k, v in r.items() if k not in ("features", "trained_at")} for r in runs]
        )
    )
    # The learnt predictor against the empirical quiet filter on the same held-out intervals.
    # Pooled over the held-out links it wins clearly: the filter calls every interval of the
    # drifting-clock link "not quiet" (all false alarms); the model does not.
    assert best["auc"] > best["empirical_auc"] + 0.05
    assert best["mse"] < best["empirical_mse"]
    assert best["precision"] > best["empirical_precision"]
    assert best["auc"] > 0.9 and best["mse"] < 0.02
    # On the congested links alone the two rank about equally well (what is measured, not a
    # clear win): the model's probabilities are better (MSE) and its alarms more precise.
    for src, dst in planted["congested_paths"]:
        (r,) = [
            r
            for r in held
            if r["model_type"] == chosen
            and (r["held_out_src_site"], r["held_out_dst_site"]) == (src, dst)
        ]
        assert r["test_positives"] > 50
        assert r["auc"] > 0.95 and r["auc"] > r["empirical_auc"] - 0.02
        assert r["mse"] < r["empirical_mse"]
        assert r["precision"] >= r["empirical_precision"]
        assert r["recall"] > 0.8


@pytest.mark.slow
def test_model_saved_at_the_edge(spark, settings, tmp_path):
    """train_congestion_model returns the model; only save_model writes it, under the storage
    root given; load_model gives back the same predictions."""
    # two links, 3 hours; A->B runs hot (delay and loss up) from minute 60 to 120
    values = [
        (5.0 + (3.0 if 60 <= i < 120 else 0.0), 4.9, 0.02 if 60 <= i < 120 else 0.0)
        for i in range(180)
    ]
    a = _latency_rows(spark, values)
    b = _latency_rows(spark, [(7.0, 6.9, 0.0)] * 180).replace("A", "C", subset=["src_site"])
    net = a.unionByName(b)
    t0 = datetime(2026, 10, 7, 0, 0, 30)
    labels = rows_frame(
        spark,
        [
            (src, "B", t0 + timedelta(minutes=i), 0.9 if src == "A" and 55 <= i < 115 else 0.3)
            for src in ("A", "C")
            for i in range(180)
        ],
        LINK_TRUTH_SCHEMA,
    )
    samples = N.latency_samples(net)
    features = N.interval_features(samples, N.path_baselines(samples))
    trained = N.train_congestion_model(
        features, labels, model_types=("gbt",), held_out=[], run_id="r1"
    )
    runs = trained.runs.collect()
    assert [(r["scope"], r["model_type"], r["selected"], r["run_id"]) for r in runs] == [
        ("final", "gbt", True, "r1")
    ]
    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    path = N.save_model(trained.model, local)
    assert path == str(tmp_path / "warehouse" / "models" / "network_congestion")
    again = N.load_model(local)
    keys = ["src_site", "interval_start"]
    pa = N.network_link_status(net, trained.model).select(
        *keys, F.col("p_util_over_70_next").alias("pa")
    )
    pb = N.network_link_status(net, again).select(*keys, F.col("p_util_over_70_next").alias("pb"))
    rows = {
        (r["src_site"], r["interval_start"]): (r["pa"], r["pb"])
        for r in pa.join(pb, keys).collect()
    }
    assert len(rows) == 2 * 36
    assert all(x == pytest.approx(y, abs=1e-12) for x, y in rows.values())
    hot = [
        x
        for (src, t), (x, _) in rows.items()
        if src == "A" and t0 + timedelta(minutes=60) <= t < t0 + timedelta(minutes=110)
    ]
    assert min(hot) > 0.5 > max(x for (src, _), (x, _) in rows.items() if src == "C")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.nightly  # ~245 s of make test's grid lane under load: a training run per version
def test_train_network_versions_runs_and_analyze_applies_the_model(
    spark, settings, network, net_grid, planted, tmp_path
):
    """The production path: `gridlake train-network --labels` on the warehouse's silver.network
    appends a run to gold.network_model_runs and saves the model; `analyze` then predicts.
    (A warehouse of six of the grid's paths: both congested paths, their reverse directions and
    two quiet paths, so that the three fits and two analyze runs take a fifth of the time.)"""
    from gridlake.catalog import SILVER_NETWORK, ensure_all
    from gridlake.gold.analyze import analyze, train_network

    ensure_all(spark)  # metastore entries stay on the test warehouse; this test works by path
    local = dataclasses.replace(settings, storage_root=str(tmp_path / "warehouse"))
    hot = {tuple(p) for p in planted["congested_paths"]}
    others = sorted(
        (r.src_site, r.dst_site)
        for r in network.select("src_site", "dst_site").distinct().collect()
        if (r.src_site, r.dst_site) not in _planted_paths(planted)
        and (r.dst_site, r.src_site) not in hot
    )[:2]
    paths = hot | {(d, s) for s, d in hot} | set(others)
    assert len(paths) == 6
    link = F.concat_ws("->", "src_site", "dst_site")
    network.where(link.isin([f"{s}->{d}" for s, d in paths])).write.format("delta").save(
        SILVER_NETWORK.path(local)
    )
    labels = str(net_grid[0] / "link_truth.csv")
    runs_path = N.GOLD_NETWORK_MODEL_RUNS.path(local)

    before = analyze(spark, local, groups=["network"])
    status = spark.read.format("delta").load(N.GOLD_NETWORK_LINK_STATUS.path(local))
    assert before[N.GOLD_NETWORK_LINK_STATUS.full_name] > 0
    assert status.where(F.col("p_util_over_70_next").isNotNull()).count() == 0  # no model yet

    first = train_network(spark, labels, local, model_types=("gbt",), n_held_out=1).collect()
    assert sorted(r.scope for r in first) == ["final", "held_out_link", "pooled"]
    assert len({r.run_id for r in first}) == 1
    # a second training (no held-out link this time: the final fit alone) is a second version
    second = train_network(spark, labels, local, model_types=("gbt",), n_held_out=0).collect()
    assert [r.scope for r in second] == ["final"]
    runs = spark.read.format("delta").load(runs_path)
    assert runs.count() == 4 and runs.select("run_id").distinct().count() == 2

    analyze(spark, local, groups=["network"])
    status = spark.read.format("delta").load(N.GOLD_NETWORK_LINK_STATUS.path(local))
    lab = N.interval_labels(spark.read.csv(labels, header=True, schema=LINK_TRUTH_SCHEMA))
    scored = status.join(lab, ["src_site", "dst_site", "interval_start"]).where(
        F.col("p_util_over_70_next").isNotNull()
    )
    by_label = {
        r.label: r.p
        for r in scored.groupBy("label").agg(F.avg("p_util_over_70_next").alias("p")).collect()
    }
    assert by_label[1.0] > 0.6 and by_label[0.0] < 0.05, by_label


# --------------------------------------------------------------------------------------------
# Real series: GEANT esmond responses (../shared/realdata/geant-perfsonar-esmond)
# --------------------------------------------------------------------------------------------

GEANT_OWD_URI = (
    "http://158.125.250.70/esmond/perfsonar/archive/"
    "297d7757f0524a06a7c45463f3bba0a6/histogram-owdelay/statistics/300"
)
GEANT_TP_URI = (
    "http://158.125.250.70/esmond/perfsonar/archive/"
    "095c3f53ada84b7a91d4f1dbd9c5b7ca/throughput/averages/86400"
)
GEANT_SITES = {"buc.ro.geant.net": "GEANT-BUC", "lut.ac.uk": "UK-LUT", "geant.net": "GEANT-GVA"}


def _pa(values, p):
    """percentile_approx on a few values: the element at rank ceil(p n)."""
    import math

    v = sorted(values)
    return v[max(0, math.ceil(p * len(v) - 1e-9) - 1)]


def _geant_records(tp_scale=None):
    """Canonical records of the real one-way-delay and throughput series, sites named from the
    host domains; ``tp_scale(ts, bps)`` optionally rewrites the throughput."""
    from gridlake.sources.perfsonar import read_esmond

    from .conftest import REALDATA

    folder = REALDATA / "geant-perfsonar-esmond"
    if not (folder / "archive.json").is_file():
        pytest.skip(f"real samples not found at {folder}")
    out = []
    for uri, name in ((GEANT_OWD_URI, "histogram-owdelay-300.json"),
                      (GEANT_TP_URI, "throughput-86400.json")):  # fmt: skip
        for r in read_esmond(folder / name, metadata=folder / "archive.json", uri=uri):
            assert isinstance(r, dict), r
            r = dict(r, src_site=GEANT_SITES[r["src_host"].split(".", 1)[1]],
                     dst_site=GEANT_SITES[r["dst_host"].split(".", 1)[1]])  # fmt: skip
            if tp_scale and r["test"] == "throughput":
                r["throughput_bps"] = tp_scale(r["ts"], r["throughput_bps"])
            out.append(r)
    return out


def _geant_gold(spark, tmp_path, records):
    from gridlake.silver.files import silver_network_from_jsonl

    path = tmp_path / "geant.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    net = silver_network_from_jsonl(spark, str(path))
    return {name: df.collect() for name, df in N.compute(net).items()}


def _expected_throughput_alarms(points):
    """The documented throughput rule, in plain Python: (kind, start, end, value) per alarm."""
    import statistics

    points = sorted(points)
    dirs = []
    for t, bps in points:
        base = [b for s, b in points
                if t - timedelta(days=21) <= s < t - timedelta(days=1)]  # fmt: skip
        if len(base) < 12:
            dirs.append((t, bps, None, None))
            continue
        med = statistics.median(base)
        sd = max(1.4826 * statistics.median([abs(b - med) for b in base]), 0.01 * med)
        z, ratio = (bps - med) / sd, bps / med
        kind = ("throughput_drop" if z < -2 and ratio < 0.7
                else "throughput_rise" if z > 2 and ratio > 1.3 else None)  # fmt: skip
        dirs.append((t, bps, kind, med))
    alarms = []
    for kind, run in itertools.groupby(dirs, key=lambda d: d[2]):
        run = list(run)
        if kind and len(run) >= 2:
            observed = _pa([d[1] for d in run], 0.5)
            alarms.append((kind, run[0][0], run[-1][0], observed / run[0][3]))
    return alarms


@pytest.mark.slow
def test_real_geant_latency_baselines_and_quiet_flag(spark, tmp_path):
    records = _geant_records()
    gold = _geant_gold(spark, tmp_path, records)
    status = {r.interval_start: r for r in gold[N.GOLD_NETWORK_LINK_STATUS.full_name]}
    owd = [r for r in records if r["test"] == "latency"]
    assert len(owd) == 854 and len(status) == 854  # one 5-minute statistic per interval
    # independent computation of the documented baseline from the raw points
    hours: dict[datetime, list[float]] = {}
    for r in owd:
        hours.setdefault(_ts(r["ts"]).replace(minute=0), []).append(r["delay_median_ms"])
    stats = {h: (_pa(m, 0.5), _pa(m, 0.75) - _pa(m, 0.25)) for h, m in hours.items()}
    quiet = 0
    for r in owd:
        t = _ts(r["ts"])
        h = t.replace(minute=0)
        prior = [s for k, s in stats.items() if h - timedelta(days=7) <= k < h]
        base = _pa([s[0] for s in prior], 0.5) if prior else stats[h][0]
        sd = max((_pa([s[1] for s in prior], 0.5) if prior else stats[h][1]) / 1.349, 0.1)
        got = status[t]
        assert got.smoothed_delay_ms == r["delay_median_ms"], t
        assert got.baseline_delay_ms == base and got.baseline_sd_ms == pytest.approx(sd), t
        assert got.quiet == (abs(r["delay_median_ms"] - base) <= sd + 1e-9), t
        assert not got.congested  # no loss measured on this path: no congestion index
        quiet += got.quiet
    # "within one sd of the baseline" passes about two thirds of a steady path's intervals by
    # construction; here 436 of 854, the delays being quantised to 0.1 ms buckets
    assert quiet == 436
    # the NTP step of 2016-07-05 06:00-08:00 (minimum 24.3 -> 21.2 ms and back): not quiet ...
    step = [r for t, r in status.items() if datetime(2016, 7, 5, 7) <= t < datetime(2016, 7, 5, 8)]
    assert len(step) == 12 and not any(r.quiet for r in step)
    # ... but no drifting clock, and no loss alarms without loss measurements
    assert gold[N.GOLD_NETWORK_ALARMS.full_name] == []


@pytest.mark.slow
def test_real_geant_throughput_alarms(spark, tmp_path):
    drop_from = datetime(2017, 3, 20)

    def halve(ts, bps):
        return round(bps * 0.5, 1) if _ts(ts) >= drop_from else bps

    for scale in (None, halve):
        records = _geant_records(scale)
        tp = [(_ts(r["ts"]), r["throughput_bps"]) for r in records if r["test"] == "throughput"]
        assert len(tp) == 266
        expected = _expected_throughput_alarms(tp)
        got = [(a.kind, a.start_ts, a.end_ts, a.value)
               for a in _geant_gold(spark, tmp_path, records)[N.GOLD_NETWORK_ALARMS.full_name]
               if a.kind.startswith("throughput")]  # fmt: skip
        assert len(got) == len(expected), (got, expected)
        for g, e in zip(sorted(got), sorted(expected), strict=True):
            assert g[:3] == e[:3] and g[3] == pytest.approx(e[3]), (g, e)
        if scale is None:
            assert expected == []  # nine months of a steady ~0.94 Gb/s path: no alarm
        else:  # the planted halving: one drop from its first day, at about half the baseline
            assert [e[:2] for e in expected] == [("throughput_drop", drop_from)]
            assert 0.45 < expected[0][3] < 0.55
