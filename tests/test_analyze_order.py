"""analyze's scheduler of gold groups (pure Python: no Spark): groups side by side, each after
the groups it reads, and a failure that stops what has not started; the run's memo, which the
groups running side by side share (silver.jobs' changed weeks read once per run)."""

from __future__ import annotations

import threading
import time

import pytest

from gridlake.gold.analyze import DEPENDS_ON, GROUPS, Memo, _run_groups


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
    # the first group waits until the second has started: only concurrency lets it finish
    a, b = GROUPS[0], GROUPS[1]
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
    # speed_factors fails: cost (which reads it) never starts; the groups before it ran
    run, events = _recorder(fail="speed_factors")
    names = list(GROUPS)
    with pytest.raises(RuntimeError, match="planted failure in speed_factors"):
        list(_run_groups(names, run, workers=1))
    started = [n for k, n in events if k == "start"]
    assert started == names[: names.index("speed_factors") + 1]
    assert ("start", "cost") not in events


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
