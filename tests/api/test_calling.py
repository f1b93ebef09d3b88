"""The arguments of `wb.call`, `acall`, `submit` and `start` against real servers: numpy and pandas
values sent as JSON values; values with no JSON form, text that cannot be encoded and arguments
that are not a mapping refused before sending (the connection and the calls in flight untouched),
whether or not `validate_arguments` is on."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import children, npm_server, stdio_server, toolbox, wait_until

from workbench_magic import ArgumentError, UsageError, Workbench, WorkbenchError


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
        ("add", {"a": float("nan"), "b": 1}, "argument 'a' is required, and its value is missing (NaN)"),
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


CALL = "tools/call"
NULL_NOTE = "argument 'n' is null, which its schema does not allow, and optional: left out (its default applies)"


def test_a_null_for_an_optional_argument_its_schema_does_not_allow_is_left_out(
    wb: Workbench, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 54 (`http-custom-headers`; models in OpenAI's strict mode): a None for an optional
    argument whose schema has no null means "absent": left out of the call (the wire and the history
    show it gone, the workbench's logger says so), whether or not `validate_arguments` is on."""
    with wb.trace("t/s") as trace, caplog.at_level("INFO", logger="workbench_magic"):
        result = wb.call("t/s/table", {"n": None})
        assert not result.is_error, result.text
        assert len(result.data["result"]) == 3  # the default applies
        assert wb.start("t/s/table", {"n": None}).result(60).data == result.data
    calls = [m.message["params"] for m in trace.messages if m.direction == "sent" and m.message.get("method") == CALL]
    assert [(c["name"], c.get("arguments")) for c in calls] == [("table", {}), ("table", {})]
    assert sent(wb, "table") == [{}, {}]
    assert [r.getMessage() for r in caplog.records if "is null" in r.getMessage()] == [f"t/s/table: {NULL_NOTE}"] * 2


def test_a_null_for_a_required_argument_stays_as_it_was_given(wb: Workbench) -> None:
    """Refused by the argument check; sent as null without it (the server refuses it then)."""
    if wb.validate_arguments:
        with pytest.raises(ArgumentError, match=r"argument 'text': None is not of type 'string'$"):
            wb.call("t/s/echo", {"text": None})
        assert sent(wb, "echo") == []
    else:
        assert wb.call("t/s/echo", {"text": None}).is_error
        assert sent(wb, "echo") == [{"text": None}]


def test_a_null_its_schema_allows_is_sent(make_workbench: Any) -> None:
    from mcp.server import MCPServer

    server = MCPServer("nullable")

    @server.tool()
    def note(text: str | None = "default") -> str:
        """Say what came."""
        return repr(text)

    wb = make_workbench({"toolboxes": {}})
    wb.add_server("n/s", server)
    assert wb.call("n/s/note", {"text": None}).text == "None"
    assert wb.call("n/s/note", {}).text == "'default'"
    assert sent(wb, "note") == [{"text": None}, {}]


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


# ---- what a person sees of an error or an interrupt --------------------------------------------
def _workbench_frames(exc: BaseException) -> list[str]:
    """The frames of the workbench's own code in the traceback `exc` carries."""
    import traceback
    from pathlib import Path

    import workbench_magic

    ours = str(Path(workbench_magic.__file__).parent)
    return [
        f"{f.filename}:{f.lineno} {f.name}"
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename.startswith(ours)
    ]


def _held(wb: Workbench) -> list[str]:
    """The keys of the server's `hold` calls waiting now (asked from this thread, beside the call)."""
    return list(wb.call("t/s/held").data["held"])


@pytest.mark.parametrize("how", ["call", "map"])
def test_an_interrupt_carries_none_of_the_workbench_frames(make_workbench: Any, how: str) -> None:
    from conftest import interrupt_main_when

    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    wb.open("t")
    watcher = interrupt_main_when(lambda: _held(wb) == ["k"], 20)
    with pytest.raises(KeyboardInterrupt) as interrupted:
        if how == "call":
            wb.call("t/s/hold", {"key": "k"})
        else:
            wb.map("t/s/hold", [{"key": "k"}], progress=False)
    watcher.join(20)
    assert _workbench_frames(interrupted.value) == []
    assert wait_until(lambda: _held(wb) == [], 10)  # the call was still cancelled on the server
    assert wb.call("t/s/echo", {"text": "still here"}).text == "still here"


def test_a_user_error_carries_none_of_the_workbench_frames(wb: Workbench) -> None:
    box = wb.opened("t")
    mistakes = {
        "an unknown tool": lambda: wb.call("t/s/nope"),
        "arguments that are not a mapping": lambda: wb.call("t/s/echo", []),
        "a map of an unknown tool": lambda: wb.map("t/s/nope", [{"x": 1}], progress=False),
        "an unknown toolbox": lambda: wb.open("nope"),
        "a lookup": lambda: wb.tool("t/s/nope"),
        "a toolbox's call": lambda: box.call("s/nope"),
        "a toolbox's unknown server": lambda: box["nope"],
    }
    if wb.validate_arguments:  # else the server answers with an error result
        mistakes["a tool as a method"] = lambda: box.s.echo(text=[])
    for mistake, make in mistakes.items():
        with pytest.raises(WorkbenchError) as raised:
            make()
        assert _workbench_frames(raised.value) == [], mistake


SCRIPT = """
from workbench_magic import Workbench

wb = Workbench({config!r})
wb.open("t")
wb.call("t/s/nope", {{}})
"""


@pytest.mark.parametrize("debug", ["", "1"], ids=["plain", "WORKBENCH_DEBUG"])
def test_a_script_shows_its_own_frames_and_the_one_line(tmp_path: Path, debug: str) -> None:
    import os
    import subprocess
    import sys

    from conftest import write_config

    config = write_config(tmp_path / "wb.json", {"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    script = tmp_path / "script.py"
    script.write_text(SCRIPT.format(config=str(config)))
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WORKBENCH_DEBUG": debug},
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert lines[-1] == (
        "workbench_magic.vocabulary.errors.ToolNotFoundError: Tool 'nope' not found in server 's' (toolbox 't')"
    )
    frames = [line for line in lines if line.lstrip().startswith("File ")]
    if debug:  # a developer sees where it was raised: the entry point, down to the core's lookup on the loop
        assert any("api/calling.py" in f for f in frames) and "in tool" in frames[-1], out.stderr
        assert "engine/core.py" in frames[-1], out.stderr
    else:
        assert frames == [f'  File "{script}", line 6, in <module>'], out.stderr
