"""The arguments of `wb.call`, `acall`, `submit` and `start` against real servers: numpy and pandas
values sent as JSON values; values with no JSON form, text that cannot be encoded and arguments
that are not a mapping refused before sending (the connection and the calls in flight untouched),
whether or not `validate_arguments` is on."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import children, npm_server, stdio_server, toolbox, wait_until

from workbench_magic import ArgumentError, UsageError, Workbench


@pytest.fixture(params=[True, False], ids=["validated", "unvalidated"])
def wb(request: pytest.FixtureRequest, make_workbench: Any) -> Workbench:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}}, validate_arguments=request.param)
    wb.open("t")
    return wb


def sent(wb: Workbench, name: str) -> list[dict[str, Any]]:
    return [record.arguments for record in wb.history if record.identifier.name == name]


def test_numpy_and_pandas_values_are_sent_as_json(make_workbench: Any) -> None:
    wb = make_workbench({"toolboxes": {"dev": toolbox({"everything": npm_server("everything")})}})
    for a in (np.int64(2), np.float64(2.0), np.float32(2.0), np.array(2)):
        result = wb.call("dev/everything/get-sum", {"a": a, "b": 1})
        assert not result.is_error, result.text
        assert result.text == "The sum of 2 and 1 is 3."
    assert [type(arguments["a"]) for arguments in sent(wb, "get-sum")] == [int, float, float, int]
    wb.validate_arguments = False
    assert wb.call("dev/everything/get-sum", {"a": np.int64(40), "b": np.int32(2)}).text == "The sum of 40 and 2 is 42."


def test_every_way_of_calling_converts(wb: Workbench) -> None:
    when = pd.Timestamp("2024-05-01T12:00:00")
    assert wb.call("t/s/echo", {"text": when}).text == "2024-05-01T12:00:00"
    assert wb.call("t/s/echo", {"text": datetime.date(2024, 5, 1)}).text == "2024-05-01"
    assert wb.call("t/s/add", {"a": np.float32(0.5), "b": np.int8(1)}).data == {"sum": 1.5}

    async def awaited() -> Any:
        return await wb.acall("t/s/add", {"a": np.int64(1), "b": np.float64(2)})

    assert asyncio.run(awaited()).data == {"sum": 3.0}
    assert wb.submit("t/s/add", {"a": np.int16(2), "b": np.uint16(1)}).result(30).data == {"sum": 3.0}
    assert wb.start("t/s/add", {"a": np.uint8(4), "b": pd.Series([1.0]).iloc[0]}).result(timeout=30).data == {
        "sum": 5.0
    }
    assert sent(wb, "add") == [{"a": 0.5, "b": 1}, {"a": 1, "b": 2.0}, {"a": 2, "b": 1}, {"a": 4, "b": 1.0}]
    assert sent(wb, "echo") == [{"text": "2024-05-01T12:00:00"}, {"text": "2024-05-01"}]


@pytest.mark.parametrize(
    ("tool", "arguments", "detail"),
    [
        ("echo", {"text": object()}, "argument 'text': a value of type 'object' has no JSON form"),
        ("echo", {"text": {"a"}}, "argument 'text': a value of type 'set' has no JSON form"),
        ("echo", {"text": b"bytes"}, "argument 'text': a value of type 'bytes' has no JSON form"),
        ("add", {"a": float("nan"), "b": 1}, "argument 'a': NaN has no JSON form"),
        ("add", {"a": 1, "b": np.float64("inf")}, "argument 'b': infinity has no JSON form"),
        ("release", {"keys": ["a", "b", {1: "x"}]}, "argument 'keys[2]': key 1 is not a string"),
    ],
)
def test_a_value_with_no_json_form_is_refused_before_sending(
    wb: Workbench, tool: str, arguments: dict[str, Any], detail: str
) -> None:
    expected = f"Invalid arguments for tool '{tool}' in server 's' (toolbox 't'): {detail}"
    with pytest.raises(ArgumentError) as info:
        wb.call(f"t/s/{tool}", arguments)
    assert str(info.value) == expected
    with pytest.raises(ArgumentError) as info:
        wb.submit(f"t/s/{tool}", arguments).result(30)
    assert str(info.value) == expected
    with pytest.raises(ArgumentError) as info:
        wb.start(f"t/s/{tool}", arguments)
    assert str(info.value) == expected
    assert sent(wb, tool) == [], "nothing was sent"


def test_arguments_that_are_not_a_mapping_are_a_usage_error(wb: Workbench) -> None:
    cases: list[tuple[Any, str]] = [
        ('{"text": "x"}', "str (parse JSON text with json.loads first)"),
        ([["text", "x"]], "list"),
    ]
    for arguments, kind in cases:
        expected = f"Tool arguments must be a mapping of argument names to values, not a {kind}"
        with pytest.raises(UsageError) as info:
            wb.call("t/s/echo", arguments)
        assert str(info.value) == expected
        with pytest.raises(UsageError) as info:
            wb.start("t/s/echo", arguments)
        assert str(info.value) == expected
    assert sent(wb, "echo") == []


def test_text_that_cannot_be_encoded_is_refused_and_the_calls_in_flight_go_on(wb: Workbench) -> None:
    servers = children()
    held = wb.submit("t/s/hold", {"key": "long"})
    assert wait_until(lambda: wb.call("t/s/held").data["held"] == ["long"], 20)
    with pytest.raises(ArgumentError) as info:
        wb.call("t/s/echo", {"text": "bad \udcff.txt"})  # a file name os.listdir gave, not UTF-8
    assert str(info.value) == (
        "Invalid arguments for tool 'echo' in server 's' (toolbox 't'): argument 'text': "
        "the text cannot be encoded as UTF-8 (a lone surrogate '\\udcff' at index 4)"
    )
    with pytest.raises(ArgumentError, match=r"argument 'keys\[0\]': the text cannot be encoded"):
        wb.call("t/s/release", {"keys": ["\ud800"]})
    with pytest.raises(ArgumentError, match=r"argument '\\udc80': the name cannot be encoded"):
        wb.call("t/s/echo", {"text": "x", "\udc80": 1})
    # the call in flight is untouched; the same server process answers
    assert not held.done()
    assert wb.call("t/s/release", {"keys": ["long"]}).data == {"result": 1}
    assert held.result(30).data == {"result": "long"}
    assert wb.call("t/s/held").data["finished"] == ["long"]
    assert wb.call("t/s/echo", {"text": "naïve ✓"}).text == "naïve ✓"
    assert children() == servers, "the server was not restarted"
    assert wb.status()["t"]["s"].connected
