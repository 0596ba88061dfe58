"""analyze's scheduler of gold groups (pure Python: no Spark): groups side by side, each after
the groups it reads, and a failure that stops what has not started; the run's memo, which the
groups running side by side share (silver.jobs' changed weeks read once per run)."""

from __future__ import annotations

import threading
import time

import pytest

from gridlake.gold.analyze import DEPENDS_ON, GROUPS, Memo, _run_groups, chain_costs, group


def _recorder(fail: str | None = None, hold: dict[str, threading.Event] | None = None):
    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def run(name: str) -> dict[str, int]:
        with lock:
            events.append(("start", name))
        if hold and name in hold:
            assert hold[name].wait(5), f"{name} never ran beside the group it waits for"
        time.sleep(0.01)
        if name == fail:
            raise RuntimeError(f"planted failure in {name}")
        with lock:
            events.append(("end", name))
        return {f"gold.{name}": len(name)}

    return run, events


def test_every_group_runs_once_after_the_groups_it_reads():
    assert DEPENDS_ON["cost"]  # the check below means something
    run, events = _recorder()
    out = dict(_run_groups(list(GROUPS), run, workers=2))
    assert out == {g: {f"gold.{g}": len(g)} for g in GROUPS}
    for kind in ("start", "end"):
        assert sorted(n for k, n in events if k == kind) == sorted(GROUPS)
    for name, needs in DEPENDS_ON.items():
        start = events.index(("start", name))
        for need in needs:
            assert events.index(("end", need)) < start, (name, need)


def test_two_independent_groups_run_side_by_side():
    # the group started first waits until the other has started: only concurrency lets it
    # finish (a, the costlier of the two, starts first even with one worker)
    a, b = "efficiency", "site_efficiency"
    assert chain_costs([a, b], {n: group(n).weight for n in (a, b)})[a] > group(b).weight
    started_b = threading.Event()
    run, _events = _recorder(hold={a: started_b})

    def run_b_signals(name: str) -> dict[str, int]:
        if name == b:
            started_b.set()
        return run(name)

    assert set(dict(_run_groups([a, b], run_b_signals, workers=2))) == {a, b}
    with pytest.raises(AssertionError, match="never ran beside"):
        started_b.clear()
        list(_run_groups([a, b], run_b_signals, workers=1))  # one at a time: a waits in vain


def test_a_failure_starts_nothing_more_and_is_raised():
    # speed_factors fails: cost (which reads it) never starts, nor does any group after it
    run, events = _recorder(fail="speed_factors")
    names = list(GROUPS)
    with pytest.raises(RuntimeError, match="planted failure in speed_factors"):
        list(_run_groups(names, run, workers=1))
    started = [n for k, n in events if k == "start"]
    assert started[-1] == "speed_factors" and len(started) < len(names)
    assert [n for k, n in events if k == "end"] == started[:-1]  # one at a time, none after
    assert ("start", "cost") not in events


def test_the_costliest_chain_starts_first():
    # one worker: the start order is the scheduler's choice alone
    names = ["site_efficiency", "efficiency_outliers", "efficiency", "speed_factors"]
    run, events = _recorder()
    list(_run_groups(names, run, workers=1, weights={"site_efficiency": 287,
         "efficiency_outliers": 190, "efficiency": 625, "speed_factors": 348}))  # fmt: skip
    assert [n for k, n in events if k == "start"] == [
        "efficiency", "speed_factors", "site_efficiency", "efficiency_outliers"]  # fmt: skip
    # a light group that a heavy one reads goes before a heavier group nothing waits on:
    # cost (10) reads io_signatures (1), so io_signatures' chain is 11 against ipc's 5
    assert "io_signatures" in DEPENDS_ON["cost"] and "ipc" not in DEPENDS_ON["cost"]
    names = ["ipc", "io_signatures", "cost"]
    run, events = _recorder()
    list(_run_groups(names, run, workers=1, weights={"ipc": 5, "io_signatures": 1, "cost": 10}))
    # (then cost, ready and costlier than ipc)
    assert [n for k, n in events if k == "start"] == ["io_signatures", "cost", "ipc"]
    # equal chains: names' order
    run, events = _recorder()
    list(_run_groups(["ipc", "network"], run, workers=1, weights={"ipc": 1, "network": 1}))
    assert [n for k, n in events if k == "start"] == ["ipc", "network"]


def test_only_an_incremental_analyze_starts_the_costliest_group_first(monkeypatch):
    """A whole recompute keeps the groups' order: the two heaviest groups starting their scans
    of all of silver.jobs together ran out of heap at the bench's full scale."""
    from dataclasses import replace

    from gridlake.gold import analyze as A

    names = ["site_efficiency", "efficiency", "efficiency_outliers", "speed_factors"]  # the bench's
    starts: dict[bool, list[str]] = {}
    monkeypatch.setattr(A, "ensure_tables", lambda *args, **kwargs: None)
    monkeypatch.setattr(A, "_in_pool", lambda spark, name, run: run())  # no Spark here
    for skip_current in (True, False):
        run, events = _recorder()
        monkeypatch.setattr(A, "_analyze_group", lambda spark, name, *rest, run=run: run(name))
        one_worker = replace(A.get_settings(), analyze_workers=1)
        A.analyze(None, one_worker, names, skip_current)  # type: ignore[arg-type]
        starts[skip_current] = [n for k, n in events if k == "start"]
    assert starts[True] == ["efficiency", "speed_factors", "site_efficiency", "efficiency_outliers"]
    assert starts[False] == names


def test_the_memo_computes_a_key_once_while_groups_ask_side_by_side():
    memo = Memo()
    calls: list[tuple] = []
    started = threading.Event()

    def compute(key: tuple):
        def run():
            calls.append(key)
            started.set()
            time.sleep(0.2)  # the second group asks while the first computes
            return [key[1]]

        return run

    got: list = []
    first = threading.Thread(target=lambda: got.append(memo.get(("w", 1), compute(("w", 1)))))
    first.start()
    assert started.wait(5)
    second = memo.get(("w", 1), compute(("w", 1)))  # waits for the first, computes nothing
    first.join(5)
    assert got == [[1]] and second == [1]
    assert calls == [("w", 1)]
    assert memo.get(("w", 2), compute(("w", 2))) == [2]  # another key: computed
    assert calls == [("w", 1), ("w", 2)]
