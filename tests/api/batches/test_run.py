"""`wb.map` and `Batch` against our test server: order, concurrency, failures, DataFrames,
the progress bar, interrupts. Concurrency and order are shown with the server's `hold` tool
(calls wait until the test releases them), never with sleeps or timings."""

from __future__ import annotations

import datetime
import json
import math
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import children, interrupt_main_when, stdio_server, toolbox, wait_until

from workbench_magic import (
    ArgumentError,
    Batch,
    CallTimeoutError,
    InvalidIdentifierError,
    ToolboxNotFoundError,
    ToolNotFoundError,
    ToolResult,
    UsageError,
    Workbench,
)
from workbench_magic.api.batches.run import as_rows


@pytest.fixture
def wb(make_workbench: Any) -> Workbench:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    wb.open("t")
    return wb


def holds(wb: Workbench) -> dict[str, Any]:
    """What the server's `hold` calls are doing (asked from this thread, beside the batch)."""
    data = wb.call("t/s/held").data
    assert isinstance(data, dict)
    return data


def in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_rows_keep_their_order_and_at_most_concurrency_calls_run_at_once(wb: Workbench) -> None:
    keys = [f"k{i}" for i in range(9)]
    thread, out = in_thread(lambda: wb.map("t/s/hold", [{"key": k} for k in keys], concurrency=3, progress=False))
    released: list[str] = []
    while len(released) < len(keys):
        expected = min(3, len(keys) - len(released))
        # the batch keeps `concurrency` calls in flight: wait for them (never more), then let the
        # newest one return, so rows finish out of order
        assert wait_until(lambda n=expected: len(holds(wb)["held"]) >= n, 20), holds(wb)
        state = holds(wb)
        assert len(state["held"]) == expected, state
        newest = max(state["held"], key=lambda k: int(k[1:]))
        wb.call("t/s/release", {"keys": [newest]})
        released.append(newest)
    thread.join(20)
    assert "error" not in out, out.get("error")
    batch = out["value"]
    assert isinstance(batch, Batch) and len(batch) == 9
    assert [r.data["result"] for r in batch] == keys  # row order, although ...
    finished = holds(wb)["finished"]
    assert finished == ["k2", "k3", "k4", "k5", "k6", "k7", "k8", "k1", "k0"]  # ... they finished in this order
    assert holds(wb)["peak"] == 3
    assert batch.errors == {} and batch.tool_errors == {}
    assert [r.arguments for r in batch] == [{"key": k} for k in keys]


def test_a_failing_row_is_kept_and_the_others_succeed(wb: Workbench) -> None:
    rows = [{"a": 1, "b": 2}, {"a": 1, "b": 0}, {"a": "x", "b": 1}, {"a": 9, "b": 3}]
    batch = wb.map("t/s/divide", rows, concurrency=2, progress=False)
    assert len(batch) == 4 and all(isinstance(result, ToolResult) for result in batch)
    ok0, tool_error, raised, ok3 = batch
    assert ok0 is not None and ok0.data == {"result": 0.5} and not ok0.is_error
    assert tool_error is not None and tool_error.is_error and "division by zero" in tool_error.text
    assert raised.is_error and raised.text == str(batch.errors[2])  # what the call raised, as an error result
    assert ok3 is not None and ok3.data == {"result": 3.0}
    assert list(batch.errors) == [2]
    assert isinstance(batch.errors[2], ArgumentError)
    assert str(batch.errors[2]).startswith("Invalid arguments for tool 'divide' in server 's' (toolbox 't'): ")
    assert list(batch.tool_errors) == [1]
    assert batch.ok == [ok0, ok3]
    assert batch.arguments == rows
    assert repr(batch).splitlines()[0].startswith("Batch t/s/divide: 4 rows, 2 ok, 1 tool error, 1 raised, ")
    assert "row 1: tool error: division by zero" in repr(batch)
    html = batch._repr_html_()
    assert "2 ok, 1 tool error, 1 raised" in html and html.count("<tr>") == 5  # the head and 4 rows
    # every row that was sent went into the history like any call (row 2 was refused before sending)
    history = [r for r in wb.history if r.identifier.name == "divide"]
    assert sorted(json.dumps(r.arguments, sort_keys=True) for r in history) == sorted(
        json.dumps(rows[i], sort_keys=True) for i in (0, 1, 3)
    )
    assert sorted(r.ok for r in history) == [False, True, True]


def test_a_timeout_is_kept_as_that_rows_error(wb: Workbench) -> None:
    wb.call("t/s/release", {"keys": ["fast"]})
    batch = wb.map("t/s/hold", [{"key": "fast"}, {"key": "never"}], timeout=2, progress=False)
    assert batch[0] is not None and batch[0].data == {"result": "fast"}
    assert batch[1].is_error and isinstance(batch.errors[1], CallTimeoutError)
    assert "timed out after 2 s (cancelled on the server)" in str(batch.errors[1])
    assert wait_until(lambda: holds(wb)["cancelled"] == ["never"], 10), holds(wb)


def test_dataframe_rows_and_to_pandas(wb: Workbench) -> None:
    frame = pd.DataFrame({"a": np.array([1, 4, 9], dtype=np.int64), "b": [2.0, 0.0, np.nan]})
    batch = wb.map("t/s/divide", frame, progress=False)
    assert batch.arguments[:2] == [{"a": 1, "b": 2.0}, {"a": 4, "b": 0.0}]
    assert list(batch.arguments[2]) == ["a", "b"] and math.isnan(batch.arguments[2]["b"])  # the empty cell
    assert all(type(row["a"]) is int for row in batch.arguments)
    table = batch.to_pandas()
    assert list(table.columns) == ["a", "b", "result", "error"]
    assert list(table.index) == [0, 1, 2]
    assert table["a"].tolist() == [1, 4, 9]
    assert table.loc[0, "result"] == 0.5 and pd.isna(table.loc[0, "error"])
    assert pd.isna(table.loc[1, "result"]) and table.loc[1, "error"] == "division by zero"
    assert table.loc[2, "error"] == (
        "Invalid arguments for tool 'divide' in server 's' (toolbox 't'): "
        "argument 'b' is required, and its value is missing (NaN)"
    )
    assert pd.isna(table.loc[2, "b"])


def test_to_pandas_spreads_dict_data_into_columns(wb: Workbench) -> None:
    batch = wb.map("t/s/add", [{"a": 1, "b": 2}, {"a": 3, "b": 4}], progress=False)
    table = batch.to_pandas()
    assert list(table.columns) == ["a", "b", "sum", "error"]
    assert table["sum"].tolist() == [3.0, 7.0]
    assert table["error"].isna().all()
    # data keys that are also argument names do not overwrite them
    batch = wb.map("t/s/held", [{}], progress=False)
    assert list(batch.to_pandas().columns) == ["held", "peak", "finished", "cancelled", "error"]
    echoed = wb.map("t/s/echo", [{"text": "a"}], progress=False).to_pandas()
    assert list(echoed.columns) == ["text", "result", "error"] and echoed.loc[0, "result"] == "a"


def test_the_progress_bar_shows_done_of_total_and_failures(wb: Workbench, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"a": 1, "b": 1}, {"a": 1, "b": 0}, {"a": 2, "b": 1}]
    wb.map("t/s/divide", rows, progress=False)
    assert capsys.readouterr().err == ""
    wb.map("t/s/divide", rows)
    err = capsys.readouterr().err  # not a terminal: tqdm's text bar
    final = err.replace("\r", "\n").strip().splitlines()[-1]
    assert "t/s/divide" in final and "3/3" in final and "failed=1" in final, err


def test_an_interrupt_cancels_the_calls_still_running(wb: Workbench) -> None:
    watcher = interrupt_main_when(lambda: len(holds(wb)["held"]) == 2, 20)
    with pytest.raises(KeyboardInterrupt):
        wb.map("t/s/hold", [{"key": f"k{i}"} for i in range(5)], concurrency=2, progress=False)
    watcher.join(20)
    # the two running calls were cancelled on the server; the three others never started
    assert wait_until(lambda: sorted(holds(wb)["cancelled"]) == ["k0", "k1"], 10), holds(wb)
    state = holds(wb)
    assert state["finished"] == [] and state["held"] == [] and state["peak"] == 2
    calls = [r for r in wb.history if r.identifier.name == "hold"]
    assert sorted(r.arguments["key"] for r in calls) == ["k0", "k1"]
    assert all(not r.ok and r.error == "cancelled" for r in calls)
    # the connection stays
    assert wb.call("t/s/echo", {"text": "still here"}).text == "still here"


def test_a_wrong_target_raises_at_once(wb: Workbench) -> None:
    with pytest.raises(ToolNotFoundError, match=r"^Tool 'nope' not found in server 's' \(toolbox 't'\)$"):
        wb.map("t/s/nope", [{"x": 1}] * 50, progress=False)
    assert not [r for r in wb.history if r.identifier.name == "nope"]
    with pytest.raises(InvalidIdentifierError):
        wb.map("t//echo", [{"text": "x"}], progress=False)


def test_a_wrong_target_raises_before_the_progress_bar(wb: Workbench, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    with pytest.raises(ToolNotFoundError, match=r"^Tool 'nope' not found in server 's' \(toolbox 't'\)$"):
        wb.map("t/s/nope", [{"x": 1}] * 5)  # not a terminal, not a kernel: tqdm's text bar on stderr
    assert capsys.readouterr().err == ""
    with pytest.raises(ToolboxNotFoundError):
        wb.map("zz/s/echo", [{"text": "x"}])
    assert capsys.readouterr().err == ""
    wb.map("t/s/echo", [{"text": "x"}])
    assert "t/s/echo" in capsys.readouterr().err  # a tool that is there has its bar


def test_a_row_that_cannot_be_sent_is_that_rows_error(wb: Workbench) -> None:
    servers = children()
    rows = [{"text": "a"}, {"text": "bad \udcff"}, {"text": object()}, {"text": np.str_("d")}]
    batch = wb.map("t/s/echo", rows, concurrency=1, progress=False)
    assert [r.text for r in batch.ok] == ["a", "d"]
    assert list(batch.errors) == [1, 2] and all(isinstance(e, ArgumentError) for e in batch.errors.values())
    assert "argument 'text': the text cannot be encoded as UTF-8" in str(batch.errors[1])
    assert "argument 'text': a value of type 'object' has no JSON form" in str(batch.errors[2])
    assert [r.arguments for r in wb.history if r.identifier.name == "echo"] == [{"text": "a"}, {"text": "d"}]
    assert children() == servers  # the connection stayed


def test_bad_input_is_one_line(wb: Workbench) -> None:
    cases: list[tuple[Any, dict[str, Any], str]] = [
        ([{"text": "a"}, ["b"]], {}, "wb.map needs a mapping of arguments per row; row 1 is a list"),
        ({"text": "a"}, {}, "wb.map needs rows: a list of argument mappings or a DataFrame, not a dict"),
        ("text", {}, "wb.map needs rows: a list of argument mappings or a DataFrame, not a str"),
        ([{"text": "a"}], {"concurrency": 0}, "wb.map needs concurrency of at least 1 (a whole number), got 0"),
        ([{"text": "a"}], {"concurrency": 2.5}, "wb.map needs concurrency of at least 1 (a whole number), got 2.5"),
    ]
    for rows, options, text in cases:
        with pytest.raises(UsageError) as caught:
            wb.map("t/s/echo", rows, progress=False, **options)
        assert str(caught.value) == text
    assert [r for r in wb.history if r.identifier.name == "echo"] == []  # nothing ran


def test_no_rows_is_an_empty_batch(wb: Workbench) -> None:
    batch = wb.map("t/s/echo", [], progress=False)
    assert batch == [] and batch.errors == {} and repr(batch).startswith("Batch t/s/echo: 0 rows, 0 ok")
    assert list(batch.to_pandas().columns) == ["error"]


def test_rows_become_json_values() -> None:
    rows = as_rows(
        [
            {
                "n": np.int64(3),
                "x": np.float32(0.5),
                "missing": float("nan"),
                "na": pd.NA,
                "nat": pd.NaT,
                "when": pd.Timestamp("2024-05-01T12:00:00"),
                "day": datetime.date(2024, 5, 1),
                "array": np.array([1, 2]),
                "nested": {"ok": np.bool_(True), "list": (np.int32(1), "a")},
                1: "key made text",
            }
        ]
    )
    missing = {name: rows[0].pop(name) for name in ("missing", "na", "nat")}
    assert all(math.isnan(value) for value in missing.values())  # NaN, for the row's call to leave out
    assert rows == [
        {
            "n": 3,
            "x": 0.5,
            "when": "2024-05-01T12:00:00",
            "day": "2024-05-01",
            "array": [1, 2],
            "nested": {"ok": True, "list": [1, "a"]},
            "1": "key made text",
        }
    ]
    assert type(rows[0]["n"]) is int and type(rows[0]["nested"]["ok"]) is bool
    generated = as_rows({"text": str(i)} for i in range(3))
    assert generated == [{"text": "0"}, {"text": "1"}, {"text": "2"}]


def test_importing_the_package_loads_neither_tqdm_nor_pandas() -> None:
    code = (
        "import sys, workbench_magic\n"
        "from workbench_magic import Batch, Workbench\n"
        "print(sorted(m for m in ('tqdm', 'pandas', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


REQUIRED_MISSING = (
    "Invalid arguments for tool 'query' in server 'datasets' (toolbox 'demo'): "
    "argument 'dataset' is required, and its value is missing (NaN)"
)


def test_a_missing_value_leaves_an_optional_argument_out_and_a_required_one_is_refused(
    make_workbench: Any,
) -> None:
    """One rule for `wb.call` and `wb.map`: a missing value (NaN, a DataFrame's None, NA, NaT) of an
    optional argument (`limit`) leaves it out, so its default applies; of a required one (`dataset`) it
    is an `ArgumentError` naming it, and nothing is sent."""
    demo = make_workbench(None)
    frame = pd.DataFrame({"dataset": ["penguins", "penguins", np.nan, None], "limit": [2, np.nan, 3, 1]})
    batch = demo.map("demo/datasets/query", frame, concurrency=1, progress=False)
    assert [len(r.data["rows"]) for r in batch.ok] == [2, 60]  # row 1: the default limit (100) of 60 rows
    assert batch[1].arguments == {"dataset": "penguins"}  # as sent: limit left out
    assert list(batch.errors) == [2, 3] and all(isinstance(e, ArgumentError) for e in batch.errors.values())
    assert [str(e) for e in batch.errors.values()] == [REQUIRED_MISSING] * 2
    records = frame.to_dict(orient="records")
    assert len(demo.call("demo/datasets/query", records[1]).data["rows"]) == 60
    with pytest.raises(ArgumentError) as caught:
        demo.call("demo/datasets/query", records[2])
    assert str(caught.value) == REQUIRED_MISSING and caught.value.__context__ is None
    nullable = {"dataset": "penguins", "limit": pd.array([pd.NA], dtype="Int64")[0]}
    assert len(demo.call("demo/datasets/query", nullable).data["rows"]) == 60
    # a None for an optional argument whose schema does not take null is absent too (issue 54)
    assert len(demo.call("demo/datasets/query", {"dataset": "penguins", "limit": None}).data["rows"]) == 60
    sent = [r.arguments for r in demo.history if r.identifier.name == "query"]
    assert sent == [{"dataset": "penguins", "limit": 2}] + [{"dataset": "penguins"}] * 4  # in the order sent
