"""The call history's two bounds (engine/history.py): records by count, whole answers by bytes,
and the cheap estimates it counts them with. Calls through real servers: tests/engine/test_runtime.py."""

from __future__ import annotations

import json

from workbench_magic.engine.history import CallHistory, estimate
from workbench_magic.vocabulary.identifiers import ToolIdentifier
from workbench_magic.vocabulary.listings import CallRecord, ToolAnswer

IDENT = ToolIdentifier(toolbox="t", server="s", name="echo")


def record(n: int, text: str = "") -> CallRecord:
    return CallRecord(IDENT, {"n": n, "text": text}, 0.0, 0.001, True, answer=ToolAnswer(False, None, text))


def test_the_oldest_whole_records_become_summaries_and_records_fall_out_by_count() -> None:
    history = CallHistory(limit=4, budget=250)
    for n in range(3):
        history.append(record(n, "x" * 100), 100)
    assert [r.answer is None for r in history.records()] == [True, False, False]  # 300 > 250
    assert history.size == 200
    history.append(record(3, "x" * 100), 100)
    history.append(record(4), 0)  # the count drops record 0, a summary: the whole ones stay counted
    assert [r.arguments["n"] for r in history.records()] == [1, 2, 3, 4]
    assert [r.answer_dropped for r in history.records()] == [True, False, False, False]
    assert history.size == 200
    history.bound(limit=2, budget=1_000)  # whole records that fall out by count leave the total
    assert [r.arguments["n"] for r in history.records()] == [3, 4] and history.size == 100
    history.bound(limit=2, budget=0)
    assert [r.answer_dropped for r in history.records()] == [True, False] and history.size == 0  # 0 fits 0
    history.bound(limit=0, budget=0)
    history.append(record(5), 0)
    assert history.records() == []


def test_a_record_with_nothing_to_drop_stays_as_it_was() -> None:
    history = CallHistory(limit=10, budget=0)
    failed = CallRecord(IDENT, {"text": "short"}, 0.0, 0.001, False, "boom")
    history.append(failed, 10)
    assert history.records() == [failed] and history.records()[0] is failed and not failed.answer_dropped


def test_estimates_look_at_a_sample_and_come_close_for_uniform_values() -> None:
    rows = [{"id": n, "name": f"row {n:06d}", "tags": ["a", "b"]} for n in range(100_000)]
    size = len(json.dumps(rows))
    assert 0.5 * size < estimate(rows) < 2 * size
    assert estimate("x" * 1_000) == 1_002 and estimate({"a": {"b": {"c": {"d": {"e": 1}}}}}) < 200
