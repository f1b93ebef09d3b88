"""`%%chat` and `%chat reset` in a real IPython shell, and a turn streaming into the cell's output.

The model is a scripted pydantic-ai `FunctionModel` in a notebook variable (`--model $m`); the tools
are the demo toolbox's, in-process. Where a kernel is needed (the live view), the shell is given one
in name and its display publisher records what the cell would show.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import toolbox
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from workbench_magic import ToolResult, Workbench
from workbench_magic.notebook import chat as notebook_chat
from workbench_magic.vocabulary.chat import ChatTurn

DEMO = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}


class Script:
    """A streaming `FunctionModel`: each request plays the next step, its text pieces and tool calls
    (`(name, arguments)`) in order."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.seen: list[list[ModelMessage]] = []

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> Any:
        self.seen.append(list(messages))
        step = self.steps.pop(0) if self.steps else ["done"]
        for i, item in enumerate(step):
            if isinstance(item, tuple):
                name, args = item
                yield {i: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f"c{len(self.seen)}.{i}")}
            else:
                yield item

    def model(self) -> FunctionModel:
        return FunctionModel(stream_function=self.stream)

    def prompts(self, request: int) -> list[Any]:
        return [
            p.content
            for m in self.seen[request]
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart)
        ]


@pytest.fixture
def ip(make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    wb = make_workbench({"toolboxes": {"demo": toolbox(DEMO)}})
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    settings = copy.deepcopy(shell.config.get("Workbench"))
    shell.run_line_magic("load_ext", "workbench_magic")
    yield shell
    shell.run_line_magic("unload_ext", "workbench_magic")
    if settings is None:
        shell.config.pop("Workbench", None)
    else:
        shell.config["Workbench"] = settings


def run(shell: InteractiveShell, code: str) -> Any:
    result = shell.run_cell(code, store_history=True)
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return result.result


def error_of(shell: InteractiveShell, code: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run a cell that must fail; what the person sees (stdout and stderr)."""
    capsys.readouterr()
    result = shell.run_cell(code)
    assert result.error_in_exec is not None or result.error_before_exec is not None
    out = capsys.readouterr()
    return (out.out + out.err).strip()


def test_chat_cell_asks_the_model_and_the_conversation_goes_on(ip: InteractiveShell) -> None:
    script = Script([("demo__datasets__query", {"dataset": "penguins", "limit": 2})], ["Two ", "penguins."], ["Yes."])
    ip.user_ns["m"] = script.model()
    turn = run(ip, "%%chat demo --model $m\nShow two penguins")
    assert isinstance(turn, ChatTurn) and ip.user_ns["_"] is turn
    assert turn.text == "Two penguins." and turn.prompt == "Show two penguins"
    [call] = turn.tool_calls
    assert str(call.identifier) == "demo/datasets/query" and isinstance(call.result, ToolResult)
    assert len(call.result.data["rows"]) == 2
    # the next cell goes on with the same conversation; %chat reset starts over
    run(ip, "%%chat --model $m\nAre you sure?")
    assert script.prompts(2) == ["Show two penguins", "Are you sure?"]
    assert run(ip, "%chat reset") is None
    run(ip, "%%chat --model $m\nAgain")
    assert script.prompts(3) == ["Again"]


def test_without_a_model_one_line_says_how_to_set_one(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    run(ip, "%workbench open demo")
    seen = error_of(ip, "%%chat\nhello", capsys)
    assert seen.splitlines() == [
        'UsageError: No model is set: set one with wb.chat_model = "openai:gpt-4o" or $WORKBENCH_MODEL '
        '(or pass model=...); offline, with no key: "test" (pydantic-ai\'s TestModel, which calls every tool '
        "once, then answers with what they returned), a scripted pydantic-ai FunctionModel, or a cassette that "
        "recorded a chat (wb.replay(path))"
    ]


def test_mistakes_in_the_magic_are_one_line(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["m"] = Script().model()
    assert error_of(ip, "%chat hello", capsys).startswith("UsageError: %chat takes 'reset'. Usage: %%chat [TOOLBOX]")
    # the one rule of wb.chat: a prompt is non-empty text
    assert error_of(ip, "%%chat demo --model $m\n  \n", capsys) == (
        f"UsageError: %%chat needs a prompt: non-empty text, not ''. {notebook_chat.CHAT_HINT}"
    )
    assert error_of(ip, "%%chat demo --model $nothing\nhi", capsys) == (
        "UsageError: Unknown variable $nothing: define nothing in the notebook first"
    )
    assert error_of(ip, "%%chat demo extra --model $m\nhi", capsys).startswith("UsageError: %%chat: unrecognized")
    assert error_of(ip, "%%chat --model $m\nhi", capsys).startswith("UsageError: No toolbox is open to chat with")


@pytest.fixture
def kernel(ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> CapturingDisplayPublisher:
    """The shell as in a kernel (the live view is used), what it displays recorded."""
    publisher = CapturingDisplayPublisher()
    monkeypatch.setattr(ip, "display_pub", publisher)
    monkeypatch.setattr(ip, "kernel", object(), raising=False)
    monkeypatch.setattr(notebook_chat, "_streamed", [])
    yield publisher
    formatter = ip.display_formatter.ipython_display_formatter
    formatter.type_printers.pop(ChatTurn, None)


def shown(publisher: CapturingDisplayPublisher) -> list[tuple[str, str, int]]:
    """What the cell shows at the end: each output's kind (markdown, html, result), its last text, and
    how many times it was updated in place."""
    final: dict[Any, list[Any]] = {}
    for n, output in enumerate(publisher.outputs):
        data = output["data"]
        text = data.get("text/markdown") or data.get("text/html") or data.get("text/plain", "")
        kind = "markdown" if "text/markdown" in data else ("result" if "<b>ToolResult " in text else "html")
        key = (output["transient"] or {}).get("display_id") or n
        if output["update"]:
            final[key][1:] = [text, final[key][2] + 1]
        else:
            final[key] = [kind, text, 0]
    return [(kind, text, updates) for kind, text, updates in final.values()]


def test_a_turn_streams_into_the_cell_and_is_not_shown_twice(
    ip: InteractiveShell, kernel: CapturingDisplayPublisher
) -> None:
    script = Script(
        ["Let me ", "look.", ("demo__datasets__query", {"dataset": "penguins", "limit": 3})], ["Three ", "rows."]
    )
    ip.user_ns["m"] = script.model()
    run(ip, "%workbench open demo")
    kernel.outputs.clear()
    turn = run(ip, "%%chat --model $m\nThree penguins")
    outputs = shown(kernel)
    assert [kind for kind, _, _ in outputs] == ["markdown", "html", "result", "markdown", "html"], outputs
    (_, text, _), (_, line, updates), (_, result, _), (_, answer, _), (_, usage, _) = outputs
    assert text == "Let me look." and answer == "Three rows."  # the streamed text, drawn whole
    assert "demo/datasets/query" in line and "ok, " in line and updates == 1  # running, then how it went
    assert "Adelie" in result  # the result as results show (its table)
    assert "2 requests" in usage
    assert ip.user_ns["_"] is turn  # the cell's value, not drawn again
    # shown in a later cell, the turn is drawn again as it streamed
    kernel.outputs.clear()
    run(ip, "_")
    again = shown(kernel)
    assert [(kind, updates) for kind, _, updates in again] == [
        ("markdown", 0),
        ("html", 0),
        ("result", 0),
        ("markdown", 0),
        ("html", 0),
    ]
    assert again[0][1] == "Let me look." and "ok, " in again[1][1] and again[3][1] == "Three rows."


def test_the_chat_model_may_be_a_model_in_a_variable(ip: InteractiveShell) -> None:
    script = Script(["From ", "the setting."])
    ip.user_ns["m"] = script.model()
    run(ip, "%workbench open demo")
    run(ip, "from workbench_magic import Workbench\nWorkbench.shared().chat_model = m")
    turn = run(ip, "%%chat\nhello")
    assert turn.text == "From the setting."


def test_a_model_failure_is_one_line(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> Any:
        raise RuntimeError("the provider is down")

    ip.user_ns["b"] = FunctionModel(broken, model_name="broken")
    run(ip, "%workbench open demo")
    assert error_of(ip, "%%chat --model $b\nhello", capsys).splitlines() == [
        "ModelError: Model 'function:broken' failed: the provider is down"
    ]


def test_a_later_chat_cell_goes_on_with_the_conversations_model(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = Script(["One."], ["Two."]), Script(["Three."], ["Four."])
    ip.user_ns.update(m=first.model(), n=second.model())
    run(ip, "%workbench open demo")
    run(ip, "%%chat demo --model $m\none")
    assert run(ip, "%%chat\ntwo").text == "Two."  # no --model: the conversation's, not "No model is set"
    assert first.prompts(1) == ["one", "two"]
    assert run(ip, "%%chat --model $n\nthree").text == "Three."  # --model wins, and is kept
    assert run(ip, "%%chat\nfour").text == "Four."
    run(ip, "%chat reset")  # forgets the model too
    assert error_of(ip, "%%chat\nfive", capsys).startswith("UsageError: No model is set")
