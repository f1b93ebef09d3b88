"""Models in the loop (api/models/resolving.py, engine/model_exchanges.py, api/models/sampling.py): a model answers
servers' sampling requests; a model's turns are recorded, replayed with no key, and traced.

Servers are real: server-everything's `trigger-sampling-request` (it exists only for a client that
offers sampling), our client-feature server (tests/servers/clientserver.py) on both eras, and an
in-process server that sends a sampling request with every parameter. Models are pydantic-ai's
`FunctionModel` and `TestModel`; no test needs a key or the network.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Annotated, Any

import mcp_types as types
import pytest
from conftest import PYTHON, SERVERS, npm_server, toolbox, wait_until
from mcp.server import MCPServer
from mcp.server.mcpserver.resolve import Resolve, Sample
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from workbench_magic import CallTimeoutError, MissingExtraError, UsageError, Workbench
from workbench_magic.api.models.resolving import NO_MODEL, ModelSampler, resolve_model
from workbench_magic.api.models.sampling import sampling_answer, sampling_messages, sampling_parameters
from workbench_magic.engine.cassette import CassetteError
from workbench_magic.engine.model_exchanges import MODEL_LANE, UnresolvedModel, WorkbenchModel

PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


class Asked:
    """A `FunctionModel` that answers `text` and keeps what each request carried."""

    def __init__(self, text: str = "four", **response: Any) -> None:
        self.text = text
        self.response = response
        self.requests: list[tuple[list[ModelMessage], AgentInfo]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append((messages, info))
        return ModelResponse(parts=[TextPart(self.text)], **self.response)

    def model(self, name: str = "fm") -> FunctionModel:
        return FunctionModel(self, model_name=name)


def everything(make_workbench: Any, **kwargs: Any) -> Workbench:
    wb: Workbench = make_workbench({"toolboxes": {"e": toolbox({"ev": npm_server("everything")})}}, **kwargs)
    wb.open("e")
    return wb


def clientserver(*extra: str) -> dict[str, Any]:
    return {"command": PYTHON, "args": [str(SERVERS / "clientserver.py"), *extra]}


# ---- an in-process server that sends a sampling request with every parameter ------------------
def every_parameter(prompt: str) -> Sample:
    """Resolver of `rich/ask`: text and an image, an earlier answer, then the question."""
    return Sample(
        [
            types.SamplingMessage(
                role="user",
                content=[
                    types.TextContent(type="text", text=prompt),
                    types.ImageContent(type="image", data=PIXEL, mime_type="image/png"),
                ],
            ),
            types.SamplingMessage(role="assistant", content=types.TextContent(type="text", text="A red pixel.")),
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text="And its size?")),
        ],
        max_tokens=33,
        system_prompt="You describe images.",
        temperature=0.2,
        stop_sequences=["STOP"],
        metadata={"purpose": "test"},
        include_context="thisServer",
        model_preferences=types.ModelPreferences(
            hints=[types.ModelHint(name="claude-sonnet"), types.ModelHint(name="gpt")], intelligence_priority=0.8
        ),
    )


async def ask(result: Annotated[types.CreateMessageResult, Resolve(every_parameter)], prompt: str) -> dict[str, Any]:
    """Ask the client's model about a picture."""
    content = result.content if isinstance(result.content, list) else [result.content]
    text = "".join(block.text for block in content if isinstance(block, types.TextContent))
    return {"model": result.model, "text": text, "stop_reason": result.stop_reason}


def rich_server() -> MCPServer:
    server = MCPServer("rich")
    server.add_tool(ask)
    return server


# ---- sampling answered by a model -----------------------------------------------------------------
def test_everything_sampling_is_answered_by_a_function_model(make_workbench) -> None:
    asked = Asked("four", finish_reason="stop")
    wb = everything(make_workbench, sampling_handler=asked.model("fm"))
    assert isinstance(wb.sampling_handler, ModelSampler) and isinstance(wb.sampling_handler.model, WorkbenchModel)
    result = wb.call("e/ev/trigger-sampling-request", {"prompt": "what is 2+2?", "maxTokens": 42})
    answer = json.loads(result.text.split("\n", 1)[1])
    assert answer == {
        "model": "fm",
        "stopReason": "endTurn",
        "role": "assistant",
        "content": {"type": "text", "text": "four"},
    }
    ((messages, info),) = asked.requests
    (request,) = messages
    assert isinstance(request, ModelRequest)
    system, user = request.parts
    assert isinstance(system, SystemPromptPart) and system.content == "You are a helpful test server."
    assert isinstance(user, UserPromptPart)
    assert user.content == "Resource trigger-sampling-request context: what is 2+2?"
    assert info.model_settings == {"max_tokens": 42, "temperature": 0.7}
    assert info.function_tools == []  # the server offered the model no tools
    record = next(r for r in reversed(wb.history) if r.kind == "sampling")
    assert record.answer == "four"


def test_every_sampling_parameter_is_mapped(make_workbench) -> None:
    asked = Asked("One pixel.", finish_reason="length")
    wb = make_workbench({"toolboxes": {}}, sampling_handler=asked.model("vision"))
    wb.add_server("t/rich", rich_server)
    answer = wb.call("t/rich/ask", {"prompt": "What is this?"}).data
    assert answer == {"model": "vision", "text": "One pixel.", "stop_reason": "maxTokens"}  # finish "length"
    ((messages, info),) = asked.requests
    first, earlier, question = messages
    assert isinstance(first, ModelRequest) and isinstance(earlier, ModelResponse) and isinstance(question, ModelRequest)
    system, picture = first.parts
    assert isinstance(system, SystemPromptPart) and system.content == "You describe images."
    assert isinstance(picture, UserPromptPart)
    text, image = picture.content
    assert text == "What is this?"
    assert isinstance(image, BinaryContent) and image.media_type == "image/png" and image.is_image
    assert image.data == base64.b64decode(PIXEL)
    assert earlier.parts == [TextPart("A red pixel.")]
    assert [p.content for p in question.parts if isinstance(p, UserPromptPart)] == ["And its size?"]
    assert info.model_settings == {"max_tokens": 33, "temperature": 0.2, "stop_sequences": ["STOP"]}
    # the server's preferences ride in the request's metadata: the model set as the handler answers
    assert question.metadata == {
        "sampling": {
            "modelPreferences": {"hints": [{"name": "claude-sonnet"}, {"name": "gpt"}], "intelligencePriority": 0.8},
            "includeContext": "thisServer",
            "metadata": {"purpose": "test"},
        }
    }


@pytest.mark.parametrize("server", ["cs", "csl"], ids=["2026-07-28", "2025-11-25"])
def test_a_model_name_answers_sampling_on_both_eras(make_workbench, server: str) -> None:
    wb = make_workbench(
        {"toolboxes": {"t": toolbox({"cs": clientserver(), "csl": clientserver("--legacy")})}},
        sampling_handler="test",  # pydantic-ai's offline test model, by name
    )
    wb.open("t")
    assert wb.sampling_handler.spec == "test"  # type: ignore[union-attr]
    answer = wb.call(f"t/{server}/sample", {"prompt": "hello", "max_tokens": 9}).data
    assert answer == {"model": "test", "role": "assistant", "text": "success (no tool calls)", "stop_reason": "endTurn"}
    wb.sampling_handler = "ask"  # the person still answers with "ask"
    assert wb.sampling_handler == "ask"


def test_a_model_that_cannot_be_built_says_so_in_one_line(make_workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    wb = make_workbench({"toolboxes": {}})
    with pytest.raises(
        UsageError, match=r"^The model 'openai:gpt-4o' cannot be used: Set the `OPENAI_API_KEY`"
    ) as no_key:
        wb.sampling_handler = "openai:gpt-4o"
    assert "\n" not in str(no_key.value) and no_key.value.__context__ is None
    with pytest.raises(UsageError, match=r"^The model 'nonsense:x' cannot be used: Unknown model: nonsense:x$"):
        resolve_model(wb, "nonsense:x")
    with pytest.raises(
        MissingExtraError, match=r"^The model 'anthropic:claude-x' needs its provider's package: pip install"
    ):
        resolve_model(wb, "anthropic:claude-x")
    with pytest.raises(UsageError, match="must be a function"):
        wb.sampling_handler = 42  # type: ignore[assignment]
    assert wb.sampling_handler is None  # nothing changed


def test_the_default_model_is_chat_model_or_workbench_model(make_workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    wb = make_workbench({"toolboxes": {}})
    assert wb.chat_model is None
    with pytest.raises(UsageError) as unset:
        resolve_model(wb)
    assert str(unset.value) == NO_MODEL and 'wb.chat_model = "openai:gpt-4o"' in NO_MODEL
    # and how to chat offline, with no key: "test", a scripted model, a recorded cassette; still one line
    assert "\n" not in NO_MODEL
    assert 'offline, with no key: "test" (pydantic-ai\'s TestModel, which calls every tool once' in NO_MODEL
    assert "a scripted pydantic-ai FunctionModel" in NO_MODEL and "wb.replay(path)" in NO_MODEL
    wb.chat_model = "test"
    model = resolve_model(wb)
    assert isinstance(model, WorkbenchModel) and isinstance(model.wrapped, TestModel)
    assert resolve_model(wb, model) is model  # already this workbench's
    monkeypatch.setenv("WORKBENCH_MODEL", "test")
    assert make_workbench({"toolboxes": {}}).chat_model == "test"
    other = make_workbench({"toolboxes": {}})
    assert resolve_model(other, model).wrapped is model.wrapped  # re-wrapped for the other workbench
    with pytest.raises(UsageError, match="pydantic-ai Model"):
        resolve_model(wb, 3.5)  # type: ignore[arg-type]


def test_chat_model_is_a_name_or_a_model(make_workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    from traitlets import TraitError
    from traitlets.config import Config

    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    wb = make_workbench({"toolboxes": {}})
    asked = Asked("from the trait")
    model = asked.model("fm")
    wb.chat_model = model  # a pydantic-ai Model object
    assert wb.chat_model is model
    resolved = resolve_model(wb)
    assert isinstance(resolved, WorkbenchModel) and resolved.wrapped is model
    assert Agent(resolved).run_sync("hi").output == "from the trait"
    wb.chat_model = "test"
    assert isinstance(resolve_model(wb).wrapped, TestModel)
    wb.chat_model = None
    with pytest.raises(UsageError):
        resolve_model(wb)
    with pytest.raises(TraitError, match=r'a "provider:model" name or a pydantic-ai Model'):
        wb.chat_model = 42
    assert wb.chat_model is None  # nothing changed
    # configurable by name (a config, %config); a model object as an attribute or a keyword
    assert "chat_model" in Workbench.class_traits(config=True)
    assert make_workbench(Config({"Workbench": {"chat_model": "test"}})).chat_model == "test"
    assert make_workbench({"toolboxes": {}}, chat_model=model).chat_model is model


def test_a_model_name_as_chat_model_imports_no_framework() -> None:
    code = (
        "import sys\n"
        "from workbench_magic import Workbench\n"
        "wb = Workbench({'toolboxes': {}}, chat_model='openai:gpt-4o')\n"
        "print(wb.chat_model, sorted(m for m in ('pydantic_ai', 'openai') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "openai:gpt-4o []"


def test_a_failing_model_answers_the_server_with_one_line(make_workbench) -> None:
    from pydantic_ai.exceptions import ModelHTTPError

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelHTTPError(429, "gpt-4o", {"error": {"message": "Rate limit reached.", "type": "requests"}})

    wb = everything(make_workbench, sampling_handler=FunctionModel(broken, model_name="fm"))
    result = wb.call("e/ev/trigger-sampling-request", {"prompt": "x"})
    assert result.is_error
    assert result.text.endswith("Model 'function:fm' failed: HTTP 429: Rate limit reached.")
    assert "\n" not in result.text
    record = next(r for r in reversed(wb.history) if r.kind == "sampling")
    assert "Model 'function:fm' failed: HTTP 429: Rate limit reached." in str(record.answer)


# ---- the loop thread and cancellation ---------------------------------------------------------
def test_a_slow_model_blocks_nothing_and_a_cancel_reaches_it(make_workbench) -> None:
    events: list[str] = []
    gate = threading.Event()

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        events.append("started")
        try:
            while not gate.is_set():
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return ModelResponse(parts=[TextPart("late")])

    servers = {"ev": npm_server("everything"), "csl": clientserver("--legacy")}
    wb = make_workbench({"toolboxes": {"t": toolbox(servers)}}, sampling_handler=FunctionModel(slow, model_name="slow"))
    wb.open("t")
    answers: list[Any] = []
    waiting = threading.Thread(target=lambda: answers.append(wb.call("t/ev/trigger-sampling-request", {"prompt": "x"})))
    waiting.start()
    assert wait_until(lambda: events == ["started"], 10)
    assert wb.call("t/ev/echo", {"message": "still here"}).text == "Echo: still here"  # the loop runs on
    gate.set()
    waiting.join(10)
    assert "late" in answers[0].text and events == ["started"]

    # the server cancels its request when the call times out: the model request is cancelled
    gate.clear()
    events.clear()
    with pytest.raises(CallTimeoutError):
        wb.call("t/csl/sample", {"prompt": "x"}, timeout=1)
    assert wait_until(lambda: events == ["started", "cancelled"], 10)

    # server-everything does not cancel it: the model gets the workbench's timeout, no more
    events.clear()
    wb.timeout = 1
    with pytest.raises(CallTimeoutError):
        wb.call("t/ev/trigger-sampling-request", {"prompt": "x"})
    assert wait_until(lambda: events == ["started", "cancelled"], 10)
    gate.set()


# ---- traces ---------------------------------------------------------------------------------
def test_model_turns_show_on_a_lifeline_of_their_own(make_workbench) -> None:
    wb = everything(make_workbench, sampling_handler=Asked("four").model("fm"))
    with wb.trace("e") as trace:
        wb.call("e/ev/trigger-sampling-request", {"prompt": "2+2?"})
    sampling = next(m for m in trace.messages if m.label.startswith("sampling/createMessage"))
    answered = f"result #{sampling.message['id']}"
    # server-everything sends notifications of its own meanwhile: only the sampling exchange and the model
    labels = [
        (m.direction, m.server, m.label)
        for m in trace.messages
        if m.server == MODEL_LANE or m.message is sampling.message or (m.direction, m.label) == ("sent", answered)
    ]
    number = next(label for _, server, label in labels if server == MODEL_LANE).split("#")[1]
    assert labels == [
        ("received", "e/ev", sampling.label),  # the server asks
        ("sent", MODEL_LANE, f"model/request #{number}"),  # the workbench asks the model
        ("received", MODEL_LANE, f"result #{number}"),
        ("sent", "e/ev", answered),  # and answers the server
    ]
    sent = next(m.message for m in trace.messages if m.server == MODEL_LANE and m.direction == "sent")
    assert sent["params"]["model"] == "function:fm"
    assert sent["params"]["settings"] == {"max_tokens": 100, "temperature": 0.7}
    assert [p["part_kind"] for p in sent["params"]["messages"][0]["parts"]] == ["system-prompt", "user-prompt"]
    got = next(m.message for m in trace.messages if m.server == MODEL_LANE and m.direction == "received")
    assert got["result"]["parts"] == [{"content": "four", "part_kind": "text"}]
    text = repr(trace)
    assert f"-> {MODEL_LANE}  model/request #" in text and f"<- {MODEL_LANE}    result #" in text
    assert f">{MODEL_LANE}</b>" in trace._repr_html_()  # its lane in the sequence diagram


def test_an_agents_turns_and_a_failed_turn_are_traced(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {}})

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("the provider is down")

    with wb.trace() as trace:
        assert Agent(resolve_model(wb, "test")).run_sync("hi").output == "success (no tool calls)"
        with pytest.raises(RuntimeError, match="the provider is down"):
            Agent(resolve_model(wb, FunctionModel(broken, model_name="broken"))).run_sync("hi")
    assert [(m.server, m.label) for m in trace.messages] == [
        (MODEL_LANE, "model/request #1"),
        (MODEL_LANE, "result #1"),
        (MODEL_LANE, "model/request #2"),
        (MODEL_LANE, "error #2"),
    ]
    assert trace.messages[-1].message["error"]["message"] == "the provider is down"


# ---- record and replay ------------------------------------------------------------------------
def chat_model() -> FunctionModel:
    """A chat model: it calls the `add` tool once, then answers with the sum; it streams too."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in getattr(m, "parts", ()) if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 2}, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart(f"The sum is {returns[-1].content}.")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        for piece in ("Stre", "amed ", "answer."):
            yield piece

    return FunctionModel(respond, stream_function=stream, model_name="chatty")


def agent_of(model: Any) -> Agent[None, str]:
    agent = Agent(model)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    return agent


async def streamed(agent: Agent[None, str], prompt: str) -> list[str]:
    async with agent.run_stream(prompt) as stream:
        return [piece async for piece in stream.stream_text(delta=True)]


REPLAY = textwrap.dedent(
    """
    import asyncio, json, sys
    from pydantic_ai import Agent
    from workbench_magic import Workbench
    from workbench_magic.api.models.resolving import resolve_model

    def agent_of(model):
        agent = Agent(model)

        @agent.tool_plain
        def add(a: int, b: int) -> int:
            return a + b

        return agent

    async def streamed(agent, prompt):
        async with agent.run_stream(prompt) as stream:
            return [piece async for piece in stream.stream_text(delta=True)]

    wb = Workbench(replay={cassette!r}, sampling_handler="openai:gpt-4o")  # no key: the cassette answers
    sampled = wb.call("e/ev/trigger-sampling-request", {{"prompt": "2+2?"}}).text
    agent = agent_of(resolve_model(wb, "openai:gpt-4o"))
    answer = agent.run_sync("add two and two").output
    pieces = asyncio.run(streamed(agent, "stream it"))
    default = resolve_model(wb).model_name  # no chat_model: the recorded one
    try:
        agent.run_sync("never recorded")
        missed = None
    except Exception as exc:
        missed = f"{{type(exc).__name__}}: {{exc}}"
    print(json.dumps({{"sampled": sampled, "answer": answer, "pieces": pieces, "default": default,
                      "missed": missed, "openai_loaded": "openai" in sys.modules}}))
    wb.close_all()
    """
)


def test_recorded_model_turns_replay_in_a_fresh_process_with_no_key(make_workbench, tmp_path: Path) -> None:
    cassette = tmp_path / "models.json"
    wb = everything(make_workbench, sampling_handler=Asked("four").model("fm"))
    with wb.record(cassette):
        sampled = wb.call("e/ev/trigger-sampling-request", {"prompt": "2+2?"}).text
        agent = agent_of(resolve_model(wb, chat_model()))
        answer = agent.run_sync("add two and two").output
        pieces = asyncio.run(streamed(agent, "stream it"))
    assert answer == "The sum is 4." and "".join(pieces) == "Streamed answer."
    recorded = json.loads(cassette.read_text())["interactions"]
    assert [(i["kind"], i["name"]) for i in recorded] == [
        ("model", "function:fm"),  # the sampling model answered during the tool call
        ("tool", "trigger-sampling-request"),
        ("model", "function:chatty"),  # the agent asked for the tool
        ("model", "function:chatty"),  # then answered with its result
        ("model", "function:chatty"),  # the stream, recorded as its final response
    ]
    assert recorded[3]["request"]["tools"][0]["name"] == "add"
    assert recorded[4]["response"]["parts"] == [{"content": "Streamed answer.", "part_kind": "text"}]

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "WORKBENCH_MODEL"))}
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9"  # were it asked, the provider would fail at once
    script = REPLAY.format(cassette=str(cassette))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    replayed = json.loads(done.stdout.strip().splitlines()[-1])
    assert replayed["sampled"] == sampled
    assert replayed["answer"] == answer and "".join(replayed["pieces"]) == "Streamed answer."
    assert replayed["default"] == "fm"
    assert replayed["missed"].startswith("CassetteError: No recorded model turn for this request to openai:gpt-4o")
    assert replayed["openai_loaded"] is False  # the provider was never built


def test_replay_modes_for_model_turns(make_workbench, tmp_path: Path) -> None:
    cassette = tmp_path / "turns.json"
    wb = make_workbench({"toolboxes": {}})
    with wb.record(cassette):
        assert Agent(resolve_model(wb, "test")).run_sync("hi").output == "success (no tool calls)"
    strict = make_workbench({"toolboxes": {}}, replay=cassette)
    model = resolve_model(strict, "openai:gpt-4o")
    assert isinstance(model.wrapped, UnresolvedModel)  # replaying: the provider is not built
    assert Agent(model).run_sync("hi").output == "success (no tool calls)"
    assert Agent(model).run_sync("hi").output == "success (no tool calls)"  # the last answer again
    with pytest.raises(CassetteError, match=r"No recorded model turn .* \(prompt 'other'\)"):
        Agent(model).run_sync("other")
    auto = make_workbench({"toolboxes": {}})
    auto.replay(cassette, mode="auto")
    live = Asked("live answer")
    assert Agent(resolve_model(auto, live.model())).run_sync("other").output == "live answer"
    assert len(live.requests) == 1
    assert Agent(resolve_model(auto, live.model())).run_sync("hi").output == "success (no tool calls)"
    assert len(live.requests) == 1  # answered from the cassette


def test_a_toolbox_replay_of_a_discovered_config_answers_model_turns(
    make_workbench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "turns.json"
    recording = make_workbench({"toolboxes": {}})
    with recording.record(cassette):
        Agent(resolve_model(recording, Asked("recorded").model())).run_sync("hi")
    config = {"toolboxes": {"t": {**toolbox({"cs": clientserver()}), "replay": cassette.name}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv("WORKBENCH_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    wb = make_workbench()  # the config is discovered on first use
    wb.sampling_handler = "openai:gpt-4o"  # the config's cassette holds model turns: no key needed
    assert isinstance(wb.sampling_handler.model.wrapped, UnresolvedModel)  # type: ignore[union-attr]
    assert Agent(resolve_model(wb)).run_sync("hi").output == "recorded"  # the recorded model, by default


# ---- the mapping on its own -------------------------------------------------------------------
def test_sampling_with_tools_maps_tool_uses_both_ways() -> None:
    params = types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Weather in Paris?")),
            types.SamplingMessage(
                role="assistant",
                content=[types.ToolUseContent(type="tool_use", id="u1", name="weather", input={"city": "Paris"})],
            ),
            types.SamplingMessage(
                role="user",
                content=[
                    types.ToolResultContent(
                        type="tool_result", tool_use_id="u1", content=[types.TextContent(type="text", text="sunny")]
                    )
                ],
            ),
        ],
        max_tokens=10,
        tools=[types.Tool(name="weather", description="The weather.", input_schema={"type": "object"})],
        tool_choice=types.ToolChoice(mode="required"),
    )
    _, call, result = sampling_messages(params)
    assert isinstance(call, ModelResponse) and call.parts == [ToolCallPart("weather", {"city": "Paris"}, "u1")]
    assert isinstance(result, ModelRequest)
    (returned,) = result.parts
    assert isinstance(returned, ToolReturnPart) and (returned.tool_name, returned.content) == ("weather", "sunny")
    parameters = sampling_parameters(params)
    assert [t.name for t in parameters.function_tools] == ["weather"] and parameters.allow_text_output is False
    none = params.model_copy(update={"tool_choice": types.ToolChoice(mode="none")})
    assert sampling_parameters(none).function_tools == []

    answer = sampling_answer(
        ModelResponse(parts=[ToolCallPart("weather", {"city": "Lyon"}, "u2")], model_name="m"), TestModel()
    )
    assert isinstance(answer, types.CreateMessageResultWithTools) and answer.stop_reason == "toolUse"
    assert answer.content == [types.ToolUseContent(type="tool_use", id="u2", name="weather", input={"city": "Lyon"})]


def test_importing_the_package_imports_no_model_framework() -> None:
    code = (
        "import sys, workbench_magic\n"
        "from workbench_magic import Workbench\n"
        "wb = Workbench({'toolboxes': {}})\n"
        "wb.sampling_handler = lambda messages, params: 'hi'\n"
        "wb.sampling_handler = 'ask'\n"
        "print(sorted(m for m in ('pydantic_ai', 'openai', 'mcp') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_models_name_says_each_part_once() -> None:
    from workbench_magic.engine.model_exchanges import model_label

    def boom(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("x")])

    async def chunks(messages: list[ModelMessage], info: AgentInfo) -> Any:
        yield "x"

    assert model_label(FunctionModel(boom)) == "function:boom"  # pydantic-ai: function:function:boom:
    assert model_label(FunctionModel(stream_function=chunks)) == "function:chunks"
    assert model_label(FunctionModel(boom, stream_function=chunks)) == "function:boom:chunks"
    assert model_label(FunctionModel(boom, model_name="fm")) == "function:fm"
    assert model_label(TestModel()) == "test"  # pydantic-ai: test:test
