"""publish: which lines are dead-lettered and why."""

from __future__ import annotations

from gridlake.sources.publish import classify_line


def test_object_is_accepted() -> None:
    record, reason = classify_line('{"job_id": "a"}')
    assert record == {"job_id": "a"} and reason is None


def test_non_objects_are_rejected_with_a_reason() -> None:
    for line, fragment in [
        ("{bad", "invalid JSON: Expecting property name"),
        ("[1, 2]", "expected an object, got list"),
        ("42", "expected an object, got int"),
        ('{"a": 1} trailing', "invalid JSON: Extra data"),
    ]:
        record, reason = classify_line(line)
        assert record is None
        assert reason is not None and fragment in reason, (line, reason)
