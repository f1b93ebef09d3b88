"""`wb.chat`: a model calls a toolbox's tools in a conversation; its turn, streamed, asked, priced.

The model is a pydantic-ai `FunctionModel` playing a script (tool calls, then text in pieces); the
tools are the demo toolbox's, in-process. No key, no network. The person's keyboard is
`asking._default_input`, set per test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, ROOT, toolbox
from genai_prices import calc_price
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from workbench_magic import ToolIdentifier, ToolResult, UsageError, Workbench
from workbench_magic.api import asking
from workbench_magic.api.models.chat import ChatToolCall, ChatTurn
from workbench_magic.api.presenting import Presenters

DEMO = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}
QUERY = "demo__datasets__query"
DELETE = "demo__notes__delete_note"

Calls = list[tuple[str, dict[str, Any]]]
"""A step of the script that calls tools: (name, arguments) each."""


class Script:
    """A streaming `FunctionModel`: each model request plays the next step, tool calls or text pieces
    (then "done"); what each request carried is kept."""

    def __init__(self, *steps: Calls | list[str]) -> None:
        self.steps = list(steps)
        self.seen: list[list[ModelMessage]] = []
        self.infos: list[AgentInfo] = []

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> Any:
        self.seen.append(list(messages))
        self.infos.append(info)
        step: Any = self.steps.pop(0) if self.steps else ["done"]
        if step and isinstance(step[0], tuple):
            n = len(self.seen)
            yield {
                i: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f"c{n}.{i}")
                for i, (name, args) in enumerate(step)
            }
        else:
            for piece in step:
                yield piece

    def model(self, name: str | None = None) -> FunctionModel:
        return FunctionModel(stream_function=self.stream, model_name=name)

    def last_parts(self) -> list[Any]:
        """The parts of the last request the model got (tool returns, retry prompts, the prompt)."""
        last = self.seen[-1][-1]
        assert isinstance(last, ModelRequest)
        return list(last.parts)


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    wb = make_workbench({"toolboxes": {"demo": toolbox(DEMO), "other": toolbox(DEMO)}})
    wb.open("demo")
    return wb


class Recorder:
    """A `ChatView` that keeps what it was told, and on which thread."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.threads: set[threading.Thread] = set()

    def _note(self, kind: str, value: Any) -> None:
        self.threads.add(threading.current_thread())
        self.events.append((kind, value))

    def on_text_delta(self, text: str) -> None:
        self._note("text", text)

    def on_tool_call_start(self, call: ChatToolCall) -> None:
        self._note("start", call)

    def on_tool_call_end(self, call: ChatToolCall) -> None:
        self._note("end", call)

    def on_finish(self, turn: ChatTurn) -> None:
        self._note("finish", turn)


@pytest.fixture
def view(wb: Workbench) -> Recorder:
    """The view each turn of `wb` streams into (its presenters' chat view)."""
    recorder = Recorder()
    wb.presenters = Presenters(chat_view=lambda: recorder)
    return recorder


@pytest.fixture
def keyboard(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The person's answers to `input()`, in order (the test fails if more are asked)."""
    answers: list[str] = []

    def read(prompt: str) -> str:
        assert answers, f"asked {prompt!r} with no answer left"
        return answers.pop(0)

    monkeypatch.setattr(asking, "_default_input", read)
    return answers


def test_a_turn_calls_a_tool_streams_its_text_and_shows_it_in_order(wb: Workbench, view: Recorder) -> None:
    script = Script([(QUERY, {"dataset": "penguins", "limit": 3})], ["Three ", "penguins ", "listed."])
    turn = wb.chat("List three penguins", model=script.model())

    assert turn.text == "Three penguins listed."
    assert turn.prompt == "List three penguins"
    [call] = turn.tool_calls
    assert call.identifier == ToolIdentifier(toolbox="demo", server="datasets", name="query")
    assert call.arguments == {"dataset": "penguins", "limit": 3}
    assert call.name == QUERY and call.call_id == "c1.0" and call.confirmed is None and call.done
    assert isinstance(call.result, ToolResult) and not call.result.is_error
    assert len(call.result.data["rows"]) == 3
    assert turn.parts == (call, "Three penguins listed.")
    # the call went through the workbench, and the model read its result
    assert [str(r.identifier) for r in wb.history] == ["demo/datasets/query"]
    [returned] = [p for p in script.last_parts() if isinstance(p, ToolReturnPart)]
    assert returned.tool_name == QUERY and returned.content["rows"] == call.result.data["rows"]
    assert QUERY in [t.name for t in script.infos[0].function_tools]
    # the view heard it all in order, on this thread
    kinds = [kind for kind, _ in view.events]
    assert kinds == ["start", "end", "text", "text", "text", "finish"]
    started, ended = view.events[0][1], view.events[1][1]
    assert not started.done and started.result is None and started.identifier == call.identifier
    assert ended == call
    assert "".join(v for k, v in view.events if k == "text") == turn.text
    assert view.events[-1][1] is turn
    assert view.threads == {threading.current_thread()}


def test_usage_and_a_cost_only_where_the_model_is_priced(wb: Workbench) -> None:
    unknown = wb.chat("hello", model=Script(["Hi ", "there."]).model())
    assert unknown.usage.requests == 1 and unknown.usage.tool_calls == 0
    assert unknown.usage.input_tokens > 0 and unknown.usage.output_tokens > 0
    assert unknown.cost is None and "$" not in unknown.usage_line()

    wb.chat_reset()
    script = Script([(QUERY, {"dataset": "penguins", "limit": 1})], ["One."])
    priced = wb.chat("one penguin", model=script.model("gpt-4o"))
    assert priced.model == "gpt-4o"
    assert priced.usage.requests == 2 and priced.usage.tool_calls == 1
    assert isinstance(priced.cost, Decimal) and priced.cost > 0
    # the price genai-prices gives the turn's two responses
    responses: list[ModelResponse] = []
    for message in wb._chat.conversation().messages:
        if isinstance(message, ModelResponse):
            responses.append(message)
    expected = sum((calc_price(r.usage, "gpt-4o").total_price for r in responses[-2:]), Decimal(0))
    assert priced.cost == expected
    assert priced.usage_line().startswith("gpt-4o: 2 requests, ") and "$0.0" in priced.usage_line()


def test_the_conversation_goes_on_until_reset(wb: Workbench) -> None:
    script = Script(["Noted: 7."], ["It was 7."], ["Which number?"])
    model = script.model()
    wb.chat("Remember 7", model=model)
    second = wb.chat("What was it?", model=model)
    assert second.text == "It was 7."
    prompts = [
        p.content
        for m in script.seen[1]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    ]
    answers = [
        p.content for m in script.seen[1] if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, TextPart)
    ]
    assert prompts == ["Remember 7", "What was it?"] and answers == ["Noted: 7."]
    wb.chat_reset()
    wb.chat("What was it?", model=model)
    assert len(script.seen[2]) == 1  # only the new prompt


def test_a_destructive_tool_runs_only_when_the_person_allows_it(
    wb: Workbench, keyboard: list[str], view: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    note = wb.call("demo/notes/add_note", {"title": "keep", "body": "me"}).data["id"]
    keyboard.append("n")
    script = Script([(DELETE, {"id": note})], ["I left it."])
    refused = wb.chat("Delete my note", model=script.model())
    [call] = refused.tool_calls
    assert call.refused and call.confirmed is False and call.result is None
    assert "did not allow demo/notes/delete_note" in (call.error or "")
    assert [str(r.identifier) for r in wb.history] == ["demo/notes/add_note"]  # it did not run
    assert "the model wants to run demo/notes/delete_note" in capsys.readouterr().out
    told = [p for p in script.last_parts() if isinstance(p, ToolReturnPart | RetryPromptPart)]
    assert len(told) == 1 and "did not allow" in str(told[0].content)
    assert "refused by you" in call.outcome() and "refused by you" in refused._repr_html_()
    assert [k for k, _ in view.events] == ["start", "end", "text", "finish"]  # asked between start and end

    keyboard.append("y")
    allowed = wb.chat("Delete it after all", model=Script([(DELETE, {"id": note})], ["Deleted."]).model())
    [call] = allowed.tool_calls
    assert call.confirmed is True and call.result is not None and not call.result.is_error
    assert call.result.data["id"] == note
    assert [str(r.identifier) for r in wb.history][-1] == "demo/notes/delete_note"
    assert "allowed by you" in call.outcome()
    assert keyboard == []


def test_confirm_destructive_off_asks_nothing(wb: Workbench, keyboard: list[str]) -> None:
    note = wb.call("demo/notes/add_note", {"title": "t", "body": "b"}).data["id"]
    wb.confirm_destructive = False
    turn = wb.chat("Delete it", model=Script([(DELETE, {"id": note})], ["Gone."]).model())
    assert turn.tool_calls[0].confirmed is None and not turn.tool_calls[0].result.is_error  # type: ignore[union-attr]


def test_nobody_to_ask_refuses(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no person can answer (no terminal, no kernel), a destructive tool does not run; the turn
    says nobody answered (not that the person refused)."""

    def nobody(prompt: str) -> str:
        raise asking.NoWayToAsk("stdin is not a terminal")

    monkeypatch.setattr(asking, "_default_input", nobody)
    note = wb.call("demo/notes/add_note", {"title": "t", "body": "b"}).data["id"]
    turn = wb.chat("Delete it", model=Script([(DELETE, {"id": note})], ["Not allowed."]).model())
    [call] = turn.tool_calls
    assert call.result is None and not call.refused and call.confirmed is None
    assert "nobody answered (no input)" in call.outcome().lower() and "refused by you" not in call.outcome()
    assert "demo/notes/delete_note" not in [str(r.identifier) for r in wb.history]


def test_a_tool_error_reaches_the_model_and_the_turn(wb: Workbench) -> None:
    script = Script([(QUERY, {"dataset": "no-such-dataset"})], ["No such dataset."])
    turn = wb.chat("query", model=script.model())
    [call] = turn.tool_calls
    assert call.result is not None and call.result.is_error
    assert call.outcome().startswith("error: ")
    assert any(isinstance(p, ToolReturnPart | RetryPromptPart) for p in script.last_parts())


def test_a_model_that_does_not_stream_still_gives_its_text(wb: Workbench, view: Recorder) -> None:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[TextPart("Looking."), ToolCallPart(QUERY, {"dataset": "sales", "limit": 1})])
        return ModelResponse(parts=[TextPart("One sale.")])

    turn = wb.chat("a sale", model=FunctionModel(answer))
    assert turn.text == "Looking.\n\nOne sale."
    assert [type(p).__name__ for p in turn.parts] == ["str", "ChatToolCall", "str"]
    assert [k for k, _ in view.events] == ["text", "start", "end", "text", "finish"]


def test_the_toolbox_is_the_one_opened_last_or_the_one_named(wb: Workbench) -> None:
    script = Script([("other__datasets__query", {"dataset": "penguins", "limit": 1})], ["ok"])
    wb.open("other")
    turn = wb.chat("q", model=script.model())
    assert str(turn.tool_calls[0].identifier) == "other/datasets/query"
    named = Script()
    wb.chat("q", toolbox="demo", model=named.model())
    assert {t.name for t in named.infos[0].function_tools} >= {QUERY, DELETE}
    assert not any(t.name.startswith("other__") for t in named.infos[0].function_tools)


def test_mistakes_are_one_line(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench({"toolboxes": {"demo": toolbox(DEMO)}})
    model = Script().model()
    with pytest.raises(UsageError, match=r"^No toolbox is open to chat with: open one"):
        wb.chat("hi", model=model)
    with pytest.raises(UsageError, match=r"^Name each skill as toolbox/server/name, not 'x'$"):
        wb.chat("hi", toolbox="demo", model=model, skills=["x"])


def test_a_turn_renders_text_calls_results_and_usage(wb: Workbench) -> None:
    script = Script([(QUERY, {"dataset": "penguins", "limit": 2})], ["Two **penguins**, see `query`."])
    turn = wb.chat("two penguins", model=script.model("gpt-4o"))
    bundle = turn._repr_mimebundle_()
    page = bundle["text/html"]
    assert "demo/datasets/query" in page and "&quot;penguins&quot;" in page
    assert "<table>" in page and "Adelie" in page  # the result's own table
    assert "<b>penguins</b>" in page and "<code>query</code>" in page
    assert "gpt-4o: 2 requests" in page and "$" in page
    text = bundle["text/plain"]
    assert text.splitlines()[0].startswith('[tool] demo/datasets/query {"dataset": "penguins", "limit": 2} -> ok, ')
    assert "Two **penguins**" in text and text.splitlines()[-1].startswith("-- gpt-4o: 2 requests")


def test_tool_calls_made_at_once_each_keep_their_result(wb: Workbench, view: Recorder) -> None:
    both = [(QUERY, {"dataset": "penguins", "limit": 1}), (QUERY, {"dataset": "sales", "limit": 2})]
    turn = wb.chat("one penguin and two sales", model=Script(both, ["Both."]).model())
    first, second = turn.tool_calls
    assert (first.call_id, second.call_id) == ("c1.0", "c1.1")
    assert first.arguments["dataset"] == "penguins" and len(first.result.data["rows"]) == 1  # type: ignore[union-attr]
    assert second.arguments["dataset"] == "sales" and len(second.result.data["rows"]) == 2  # type: ignore[union-attr]
    ends = {call.call_id: call for kind, call in view.events if kind == "end"}
    assert ends == {"c1.0": first, "c1.1": second}
    assert [kind for kind, _ in view.events][-2:] == ["text", "finish"]


REPLAY = """
import json, sys
from workbench_magic import Workbench
wb = Workbench(json.loads(sys.argv[1]), replay=sys.argv[2])
turn = wb.chat("two penguins", toolbox="demo/datasets")
print(json.dumps([turn.text, [str(c.identifier) for c in turn.tool_calls], turn.tool_calls[0].result.replayed,
                  turn.usage.requests, str(turn.cost)]))
"""


def test_a_recorded_chat_replays_in_a_fresh_process_with_no_model_and_no_key(
    make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    config = {"toolboxes": {"demo": toolbox(DEMO)}}
    wb = make_workbench(config)
    cassette = tmp_path / "chat.json"
    wb.record(cassette)
    script = Script([(QUERY, {"dataset": "penguins", "limit": 2})], ["Two ", "penguins."])
    turn = wb.chat("two penguins", toolbox="demo/datasets", model=script.model("gpt-4o"))
    wb.record(None)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "WORKBENCH_MODEL"}
    done = subprocess.run(
        [PYTHON, "-c", REPLAY, json.dumps(config), str(cassette)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [turn.text, ["demo/datasets/query"], True, 2, str(turn.cost)]


REPLAY_TOOLBOX = """
import json, sys
from workbench_magic import Workbench
wb = Workbench(json.loads(sys.argv[1]), replay=sys.argv[2])
turn = wb.chat("two penguins", toolbox="demo")
status = wb.status()["demo"]
print(json.dumps([turn.text, [str(c.identifier) for c in turn.tool_calls], turn.tool_calls[0].result.replayed,
                  {name: [s.status, s.transport, s.tool_count] for name, s in sorted(status.items())}]))
"""


def test_a_recorded_chat_over_a_whole_toolbox_replays_with_the_same_tools(
    make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    """The cassette keeps the tool list of every server the model was offered, not only the one it called:
    the replay offers the model the same tools, so its recorded turns match."""
    config = {"toolboxes": {"demo": toolbox(DEMO)}}
    wb = make_workbench(config)
    wb.open("demo")  # before the recording: no server of it is described in the cassette yet
    cassette = tmp_path / "chat.json"
    wb.record(cassette)
    script = Script([(QUERY, {"dataset": "penguins", "limit": 2})], ["Two ", "penguins."])
    turn = wb.chat("two penguins", toolbox="demo", model=script.model("gpt-4o"))
    wb.record(None)
    offered = sorted(t.name for t in script.infos[0].function_tools)
    assert QUERY in offered and DELETE in offered  # both servers' tools
    recorded = json.loads(cassette.read_text())
    assert sorted(recorded["servers"]) == ["demo/datasets", "demo/notes"]
    notes = wb.status()["demo"]["notes"].tool_count
    assert len(recorded["servers"]["demo/notes"]["tools"]) == notes > 0
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "WORKBENCH_MODEL"}
    done = subprocess.run(
        [PYTHON, "-c", REPLAY_TOOLBOX, json.dumps(config), str(cassette)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    text, identifiers, replayed, status = json.loads(done.stdout)
    assert [text, identifiers, replayed] == [turn.text, ["demo/datasets/query"], True]
    datasets = wb.status()["demo"]["datasets"].tool_count
    assert status == {"datasets": ["connected", "replay", datasets], "notes": ["connected", "replay", notes]}


# ---- a model's own failure ---------------------------------------------------------------------
def _http_401() -> Exception:
    from pydantic_ai.exceptions import ModelHTTPError

    body = {"error": {"message": "Incorrect API key provided: sk-...abcd.", "type": "invalid_request_error"}}
    return ModelHTTPError(401, "gpt-4o", body)


def _usage_limit() -> Exception:
    from pydantic_ai.exceptions import UsageLimitExceeded

    return UsageLimitExceeded("The next request would exceed the request_limit of 50")


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (lambda: RuntimeError("the provider is down"), "the provider is down"),
        (_http_401, "HTTP 401: Incorrect API key provided: sk-...abcd."),
        (_usage_limit, "The next request would exceed the request_limit of 50."),
        (lambda: ExceptionGroup("unhandled errors", [ConnectionError("reset by peer")]), "reset by peer"),
    ],
    ids=["raised", "http", "usage-limit", "group"],
)
def test_a_model_failure_is_one_line_naming_the_model(
    wb: Workbench, failure: Callable[[], Exception], reason: str
) -> None:
    from workbench_magic import ModelError

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise failure()

    model = FunctionModel(broken, model_name="broken")
    with pytest.raises(ModelError) as failed:
        wb.chat("hello", model=model)
    assert str(failed.value) == f"Model 'function:broken' failed: {reason}"
    assert failed.value.__context__ is None and failed.value.__cause__ is None
    # the conversation stays as it was: the next turn starts from nothing
    script = Script(["Hi."])
    wb.chat("again", model=script.model())
    assert len(script.seen[0]) == 1


def test_a_model_that_misbehaves_is_a_model_error(wb: Workbench) -> None:
    """pydantic-ai's own `UnexpectedModelBehavior` (an empty answer, retried until it gives up)."""
    from workbench_magic import ModelError, WorkbenchError

    def empty(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[])

    with pytest.raises(ModelError, match=r"^Model 'function:empty' failed: Exceeded maximum output retries \(1\)$"):
        wb.chat("hello", model=FunctionModel(empty, model_name="empty"))
    assert issubclass(ModelError, WorkbenchError)


def test_a_workbench_error_inside_a_model_failure_is_raised_alone(wb: Workbench) -> None:
    """The leaf of a group that is a workbench error is raised as it is, without the group."""

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ExceptionGroup("unhandled errors", [UsageError("a mistake of the person's")])

    with pytest.raises(UsageError, match=r"^a mistake of the person's$") as failed:
        wb.chat("hello", model=FunctionModel(broken, model_name="broken"))
    assert failed.value.__context__ is None


def test_chat_model_may_be_a_model_object(wb: Workbench) -> None:
    script = Script(["From ", "the trait."])
    wb.chat_model = script.model("scripted")
    turn = wb.chat("hello")
    assert turn.text == "From the trait." and turn.model == "scripted"


# ---- a prompt -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("prompt", "shown"),
    [(None, "None"), (123, "an int (123)"), ("", "''"), (" \n\t", "' \\n\\t'")],
    ids=["none", "int", "empty", "blank"],
)
def test_a_prompt_that_is_not_non_empty_text_is_a_usage_error(wb: Workbench, prompt: Any, shown: str) -> None:
    script = Script(["never asked"])
    expected = rf"^wb\.chat needs a prompt: non-empty text, not {re.escape(shown)}$"
    with pytest.raises(UsageError, match=expected) as refused:
        wb.chat(prompt, model=script.model())
    assert refused.value.__context__ is None
    assert script.seen == [] and len(wb.history) == 0  # nothing ran


# ---- bad arguments: the model is told and tries again, up to wb.tool_retries ---------------------
BAD = {"dataset": "penguins", "limit": "many"}
"""Arguments the query tool's input schema refuses (`limit` is an integer)."""


def _told(messages: list[ModelMessage]) -> list[str]:
    """What the model was told of its last tool calls (each call's result or error, as text)."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return [str(p.content) for p in last.parts if isinstance(p, ToolReturnPart | RetryPromptPart)]


def test_a_model_told_its_bad_arguments_twice_tries_again_and_the_turn_goes_on(wb: Workbench, view: Recorder) -> None:
    assert wb.tool_retries == 3
    script = Script([(QUERY, BAD)], [(QUERY, BAD)], [(QUERY, {"dataset": "penguins", "limit": 2})], ["Two."])
    turn = wb.chat("two penguins", model=script.model())
    assert turn.text == "Two." and turn.stopped is None
    first, second, third = turn.tool_calls
    for bad in (first, second):
        assert bad.arguments == BAD and "'many' is not of type 'integer'" in (bad.error or "")
        assert bad.outcome().startswith("error: ") and "'many' is not of type 'integer'" in bad.outcome()
    assert third.error is None and third.result is not None and len(third.result.data["rows"]) == 2
    # each time the model was told why, as the call's result
    assert [len(_told(seen)) for seen in script.seen[1:3]] == [1, 1]
    assert all("'many' is not of type 'integer'" in _told(seen)[0] for seen in script.seen[1:3])


def test_a_model_that_keeps_sending_bad_arguments_ends_its_turn_at_the_limit_with_a_chat_turn(
    wb: Workbench, view: Recorder
) -> None:
    wb.tool_retries = 2
    script = Script(*[[(QUERY, BAD)] for _ in range(10)])
    turn = wb.chat("two penguins", model=script.model())
    assert isinstance(turn, ChatTurn)
    assert len(script.seen) == 3  # the first call and two more tries, each told its error
    assert len(turn.tool_calls) == 3
    assert all("'many' is not of type 'integer'" in (call.error or "") for call in turn.tool_calls)
    assert turn.stopped == (
        "The turn stopped: the model's calls of demo/datasets/query failed 3 times in a row, each told why "
        "(wb.tool_retries = 2: it may try again twice)"
    )
    assert turn.text == turn.stopped and turn.parts[-1] == turn.stopped
    assert turn.usage.requests == 3
    assert repr(turn).splitlines()[-2] == turn.stopped
    assert [k for k, _ in view.events][-2:] == ["text", "finish"] and view.events[-2][1] == turn.stopped
    # the conversation stays as it was (no dangling tool call is sent next time)
    after = Script(["Hi."])
    wb.chat("again", model=after.model())
    assert len(after.seen[0]) == 1


def test_tool_retries_zero_stops_at_the_first_bad_call(wb: Workbench) -> None:
    wb.tool_retries = 0
    turn = wb.chat("two penguins", model=Script(*[[(QUERY, BAD)] for _ in range(3)]).model())
    assert len(turn.tool_calls) == 1
    assert turn.stopped == (
        "The turn stopped: the model's call of demo/datasets/query failed (wb.tool_retries = 0: no second try)"
    )


# ---- an interrupted turn whose model hangs ----------------------------------------------------------
def test_after_interrupting_a_turn_whose_model_hangs_the_next_turn_does_not_wait_for_it(wb: Workbench) -> None:
    from conftest import interrupt_main_when

    entered, release, returned = threading.Event(), threading.Event(), threading.Event()

    def hangs(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        entered.set()
        release.wait(120)  # a synchronous model that does not return (until the test lets it)
        returned.set()
        return ModelResponse(parts=[TextPart("too late")])

    guard = threading.Timer(60, release.set)  # on the old code the next turn would wait for this
    guard.start()
    try:
        interrupt_main_when(entered.is_set, 30)
        with pytest.raises(KeyboardInterrupt):
            wb.chat("hello", model=FunctionModel(hangs))
        assert entered.is_set()
        turn = wb.chat("again", model=Script(["Here."]).model())
        assert turn.text == "Here."
        assert not returned.is_set()  # the next turn ran while the interrupted one's model still hung
        assert len(wb._chat.conversation().messages) == 2  # only the new turn: the abandoned one left nothing
    finally:
        guard.cancel()
        release.set()
    assert returned.wait(30)  # the hanging function ends (nothing is left running)


# ---- the conversation keeps its model ----------------------------------------------------------------
def test_the_conversation_keeps_the_model_it_was_given_until_reset(
    wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    wb.chat_model = None
    first, second = Script(["One."], ["Two."]), Script(["Three."], ["Four."])
    wb.chat("one", model=first.model())
    assert wb.chat("two").text == "Two."  # no model given: the conversation's
    assert len(first.seen) == 2
    assert wb.chat("three", model=second.model()).text == "Three."  # a model given wins, and is kept
    assert wb.chat("four").text == "Four." and len(first.seen) == 2
    wb.chat_reset()  # forgets the model too
    with pytest.raises(UsageError, match=r"^No model is set"):
        wb.chat("five")
    wb.chat_model = Script(["From the setting."]).model()
    assert wb.chat("six").text == "From the setting."


# ---- a model's name, said once -------------------------------------------------------------------
def test_a_model_named_after_its_function_prints_its_name_once(wb: Workbench) -> None:
    from workbench_magic import ModelError

    def boom(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("it broke")

    with pytest.raises(ModelError) as failed:
        wb.chat("hello", model=FunctionModel(boom))
    assert str(failed.value) == "Model 'function:boom' failed: it broke"

    def hello(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("Hi.")])

    turn = wb.chat("hello", model=FunctionModel(hello))
    assert turn.model == "function:hello" and turn.usage_line().startswith("function:hello: 1 request")
