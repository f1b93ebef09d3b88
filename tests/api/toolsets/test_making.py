"""`wb.toolset`, `wb.langchain_tools`, `wb.openai_agents_tools`: a toolbox handed to an agent framework.

Each framework's agent is driven by its own fake model (pydantic-ai `FunctionModel`, a scripted
langchain-core chat model in a minimal tool-calling loop, the OpenAI Agents SDK's `ScriptedModel`
under `Runner` with tracing off) and calls real servers: our test server over stdio, the demo
toolbox, the client-side server. No key, no network.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from unittest.mock import ANY

import pytest
from conftest import PYTHON, ROOT, SERVERS, children, stdio_server, toolbox, wait_until
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field
from pydantic_ai import Agent
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import (
    BinaryImage,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage

from workbench_magic import (
    MissingExtraError,
    NotFoundError,
    ServerNotFoundError,
    ToolboxNotFoundError,
    ToolNotFoundError,
    ToolResult,
    UsageError,
    Workbench,
)
from workbench_magic.api.toolsets.framework_tools import MAX_NAME, framework_name
from workbench_magic.vocabulary.listings import ToolInfo

DEMO = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}
FRAMEWORKS = ("pydantic_ai", "langchain_core", "agents", "openai", "genai_prices")
NAME = r"[A-Za-z0-9_-]{1,64}"

Step = list[tuple[str, dict[str, Any]]]
"""One model turn: the tool calls it makes (name, arguments)."""


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    """Our test server over stdio (`t/s`) and the demo toolbox, neither open yet."""
    return make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()}), "demo": toolbox(DEMO)}})


def called(wb: Workbench) -> list[str]:
    return [str(record.identifier) for record in wb.history]


# ---- pydantic-ai -------------------------------------------------------------------------------
class PydanticScript:
    """A `FunctionModel` that makes the scripted tool calls, one turn per step, then says "done"."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []
        self.infos: list[AgentInfo] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        self.requests.append(last)
        self.infos.append(info)
        if not self.steps:
            return ModelResponse(parts=[TextPart("done")])
        turn = len(self.requests)
        calls = self.steps.pop(0)
        return ModelResponse(
            parts=[ToolCallPart(name, args, tool_call_id=f"c{turn}.{i}") for i, (name, args) in enumerate(calls)]
        )

    def returns(self) -> list[ToolReturnPart]:
        return [p for r in self.requests for p in r.parts if isinstance(p, ToolReturnPart)]


def run_pydantic(toolset: AbstractToolset[Any], steps: Sequence[Step]) -> PydanticScript:
    script = PydanticScript(steps)
    result = Agent(FunctionModel(script), toolsets=[toolset]).run_sync("go")
    assert result.output == "done"
    return script


# ---- langchain-core ----------------------------------------------------------------------------
class ScriptedChat(BaseChatModel):
    """A chat model that answers the scripted tool calls, one message per step, then "done"."""

    steps: list[Step]
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.bound = [convert_to_openai_tool(tool) for tool in tools]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        if not self.steps:
            message = AIMessage(content="done")
        else:
            turn = len(self.seen)
            calls = self.steps.pop(0)
            message = AIMessage(
                content="",
                tool_calls=[{"name": n, "args": a, "id": f"c{turn}.{i}"} for i, (n, a) in enumerate(calls)],
            )
        return ChatResult(generations=[ChatGeneration(message=message)])


async def langchain_loop(model: ScriptedChat, tools: list[BaseTool]) -> list[ToolMessage]:
    """The minimal tool-calling loop: ask the model, run the tools it calls, until it answers text."""
    by_name = {tool.name: tool for tool in tools}
    bound = model.bind_tools(tools)
    messages: list[BaseMessage] = [HumanMessage("go")]
    answers: list[ToolMessage] = []
    while True:
        reply = await bound.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            assert reply.content == "done"
            return answers
        for call in reply.tool_calls:
            answer = await by_name[call["name"]].ainvoke(call)
            answers.append(answer)
            messages.append(answer)


def run_langchain(tools: list[BaseTool], steps: Sequence[Step]) -> tuple[ScriptedChat, list[ToolMessage]]:
    model = ScriptedChat(steps=list(steps))
    return model, asyncio.run(langchain_loop(model, tools))


# ---- OpenAI Agents SDK -------------------------------------------------------------------------
def run_agents(tools: list[Any], steps: Sequence[Step]) -> list[dict[str, Any]]:
    """Run an Agents SDK agent on a scripted model; the `function_call_output` items it sent the model."""
    from agents import Agent as OpenAIAgent
    from agents import RunConfig, Runner
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    script = [
        ModelStep(output=[function_call(n, a, call_id=f"c{turn}.{i}") for i, (n, a) in enumerate(calls)])
        for turn, calls in enumerate(steps)
    ]
    model = ScriptedModel([*script, ModelStep(output=[assistant_message("done")])])
    agent = OpenAIAgent(name="tester", model=model, tools=tools)
    result = asyncio.run(Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True)))
    assert result.final_output == "done"
    last = model.calls[-1].input
    return [item for item in last if isinstance(item, dict) and item.get("type") == "function_call_output"]


@pytest.fixture(autouse=True)
def no_agents_tracing() -> Iterator[None]:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    yield


# ---- every call through the workbench, on one session ----------------------------------------
ONE_SESSION: list[Step] = [
    [("t__s__release", {"keys": ["k"]})],
    [("t__s__hold", {"key": "k"})],
    [("t__s__held", {})],
]


def held_answer(framework: str, wb: Workbench) -> Any:
    """Run the agent of `framework` over `ONE_SESSION`; what `held` answered, as the model saw it."""
    if framework == "pydantic-ai":
        script = run_pydantic(wb.toolset("t/s"), ONE_SESSION)
        return script.returns()[-1].content
    if framework == "langchain":
        _, answers = run_langchain(wb.langchain_tools("t/s"), ONE_SESSION)
        return json.loads(answers[-1].content)
    outputs = run_agents(wb.openai_agents_tools("t/s"), ONE_SESSION)
    return json.loads(outputs[-1]["output"])


@pytest.mark.parametrize("framework", ["pydantic-ai", "langchain", "openai-agents"])
def test_an_agent_calls_through_the_workbench_on_one_session(wb: Workbench, framework: str) -> None:
    """`hold("k")` returns at once only where `release(["k"])` ran before: in the same server process.
    A session (and a stdio process) per call would hang it (until `timeout`: `finished` stays empty),
    start children and count connects."""
    wb.timeout = 20
    wb.open("t")
    servers = children()
    connection = wb._core.connection("t", "s")
    assert connection.connects == 1
    first = held_answer(framework, wb)
    assert first["finished"] == ["k"] and first["held"] == []
    second = held_answer(framework, wb)  # a second agent run, a second toolset: still the same session
    assert second["finished"] == ["k", "k"]
    assert connection.connects == 1 and children() == servers
    assert wb._core.connection("t", "s") is connection
    assert called(wb) == ["t/s/release", "t/s/hold", "t/s/held"] * 2


def test_a_pydantic_ai_agent_uses_the_demo_toolbox(wb: Workbench) -> None:
    toolset = wb.toolset("demo")
    assert wb.is_open("demo")  # opened, as a call would
    script = run_pydantic(
        toolset,
        [
            [("demo__datasets__query", {"dataset": "penguins", "limit": 2})],
            [("demo__notes__count_words", {"text": "a b"})],
        ],
    )
    rows, counts = (p.content for p in script.returns())
    assert len(rows["rows"]) == 2 and rows["rows"][0]["species"] == "Adelie"
    assert counts == {"words": 2, "chars": 3, "lines": 1}
    assert called(wb) == ["demo/datasets/query", "demo/notes/count_words"]
    offered = {t.name: t for t in script.infos[0].function_tools}
    assert "demo__datasets__chart" in offered and "demo__datasets__chart_points" not in offered  # app-only
    query = offered["demo__datasets__query"]
    info = wb.tool("demo/datasets/query")
    assert query.parameters_json_schema == info.input_schema
    assert query.description == f"[demo/datasets] {info.description}"
    assert query.metadata == {"identifier": "demo/datasets/query", "annotations": info.annotations, "meta": None}


# ---- results, errors and schemas as each framework expects them ------------------------------
RESULTS: list[Step] = [
    [("t__s__add", {"a": 1, "b": 2})],
    [("t__s__table", {"n": 2})],
    [("t__s__echo", {"text": "hi"})],
    [("t__s__image", {})],
    [("t__s__fail", {"message": "boom"})],
    [("t__s__add", {"a": 1, "b": "x"})],
]
TOOLS = ["t/s/add", "t/s/table", "t/s/echo", "t/s/image", "t/s/fail"]
CALLED = ["t/s/add", "t/s/table", "t/s/echo", "t/s/image", "t/s/fail"]


def test_pydantic_ai_gets_structured_content_images_and_tool_errors(wb: Workbench) -> None:
    script = run_pydantic(wb.toolset(TOOLS), RESULTS)
    added, table, echoed, image, failed, retried = script.returns()
    assert added.content == {"sum": 3.0}
    assert table.content == [{"id": 0, "name": "row0", "value": 0.0}, {"id": 1, "name": "row1", "value": 1.5}]
    assert echoed.content == "hi"  # the SDK's {"result": ...} taken off, as pydantic-ai's MCP toolset does
    assert isinstance(image.content, BinaryImage) and image.content.media_type == "image/png"
    assert image.content.data.startswith(b"\x89PNG")
    assert (failed.outcome, failed.content) == ("failed", "boom")  # ToolFailed: the run goes on
    assert retried.outcome == "retried" and "argument 'b'" in str(retried.content)  # ModelRetry
    assert called(wb) == CALLED  # arguments that do not fit are not sent


def test_pydantic_ai_tool_definitions_carry_the_schemas(wb: Workbench) -> None:
    toolset = wb.toolset(TOOLS)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    tools = {name: tool.tool_def for name, tool in asyncio.run(toolset.get_tools(ctx)).items()}
    assert list(tools) == ["t__s__add", "t__s__table", "t__s__echo", "t__s__image", "t__s__fail"]
    add, table, echo, image = (wb.tool(f"t/s/{n}") for n in ("add", "table", "echo", "image"))
    assert tools["t__s__add"].return_schema == add.output_schema is not None
    assert tools["t__s__add"].parameters_json_schema == add.input_schema
    assert tools["t__s__echo"].return_schema == {"title": "Result", "type": "string"}
    assert tools["t__s__table"].return_schema == {
        "items": {"$ref": "#/$defs/Row"},
        "title": "Result",
        "type": "array",
        "$defs": table.output_schema["$defs"],
    }
    assert tools["t__s__image"].return_schema is None is image.output_schema
    assert tools["t__s__echo"].description == f"[t/s] {echo.description}"


def test_langchain_gets_content_artifacts_and_tool_errors(wb: Workbench) -> None:
    tools = wb.langchain_tools(TOOLS)
    model, (added, table, echoed, image, failed, refused) = run_langchain(tools, RESULTS)
    assert json.loads(added.content) == {"sum": 3.0} and added.artifact == {"structured_content": {"sum": 3.0}}
    assert added.status == "success"
    assert table.artifact == {"structured_content": {"result": [{"id": 0, "name": "row0", "value": 0.0}, ANY]}}
    assert (echoed.content, echoed.artifact) == ("hi", {"structured_content": {"result": "hi"}})
    (block,) = image.content
    assert block["type"] == "image" and block["mime_type"] == "image/png" and block["base64"]
    assert (failed.status, failed.content) == ("error", "boom")
    assert refused.status == "error" and "argument 'b'" in refused.content
    assert called(wb) == CALLED
    bound = {t["function"]["name"]: t["function"] for t in model.bound}
    info = wb.tool("t/s/add")
    assert set(bound["t__s__add"]["parameters"]["properties"]) == {"a", "b"} == set(info.input_schema["properties"])
    assert bound["t__s__add"]["description"] == f"[t/s] {info.description}"
    add = next(t for t in tools if t.name == "t__s__add")
    assert add.metadata == {"identifier": "t/s/add", "annotations": None, "output_schema": info.output_schema}


def test_langchain_tools_are_sync_too(wb: Workbench) -> None:
    (echo,) = wb.langchain_tools(["t/s/echo"])
    assert echo.invoke({"text": "hi"}) == "hi"
    message = echo.invoke({"type": "tool_call", "id": "1", "name": echo.name, "args": {"text": "yo"}})
    assert isinstance(message, ToolMessage) and message.content == "yo"
    assert message.artifact == {"structured_content": {"result": "yo"}}  # as the server sent it
    assert called(wb) == ["t/s/echo", "t/s/echo"]


def test_openai_agents_get_json_images_and_error_texts(wb: Workbench) -> None:
    tools = wb.openai_agents_tools(TOOLS)
    added, table, echoed, image, failed, refused = run_agents(tools, RESULTS)
    assert json.loads(added["output"]) == {"sum": 3.0}
    assert json.loads(table["output"])[1] == {"id": 1, "name": "row1", "value": 1.5}
    assert echoed["output"] == "hi"
    (picture,) = image["output"]
    assert picture["type"] == "input_image" and picture["image_url"].startswith("data:image/png;base64,")
    assert failed["output"] == "Error: boom"
    assert refused["output"].startswith("Error: Invalid arguments for tool 'add'")
    assert called(wb) == CALLED
    add = tools[0]
    info = wb.tool("t/s/add")
    assert add.name == "t__s__add" and add.params_json_schema["properties"] == info.input_schema["properties"]
    assert add.strict_json_schema is False and add.output_json_schema is None


def test_a_server_question_reaches_the_person_during_an_agent_call(make_workbench: Callable[..., Workbench]) -> None:
    server = {"command": PYTHON, "args": [str(SERVERS / "clientserver.py")]}
    wb = make_workbench({"toolboxes": {"c": toolbox({"cs": server})}}, elicitation_handler={"name": "Ada", "age": 36})
    script = run_pydantic(wb.toolset("c/cs"), [[("c__cs__ask_person", {})]])
    assert script.returns()[0].content == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    assert [r.kind for r in wb.history] == ["elicitation", "tool"]


# ---- the chat's hooks --------------------------------------------------------------------------
def test_before_call_can_refuse_and_on_call_sees_every_call(wb: Workbench) -> None:
    asked: list[tuple[str, dict[str, Any], bool]] = []
    seen: list[tuple[str, dict[str, Any], bool, str]] = []

    async def before_call(identifier: Any, arguments: dict[str, Any], tool: ToolInfo) -> None:
        destructive = bool((tool.annotations or {}).get("destructiveHint"))
        asked.append((str(identifier), arguments, destructive))
        if destructive:
            raise ToolFailed("The person declined this call")

    def on_call(identifier: Any, arguments: dict[str, Any], result: ToolResult) -> None:
        seen.append((str(identifier), arguments, result.is_error, result.text))

    toolset = wb.toolset("demo/notes", before_call=before_call, on_call=on_call)
    script = run_pydantic(
        toolset,
        [
            [("demo__notes__set_value", {"key": "k", "value": 1})],
            [("demo__notes__get_value", {"key": "k"})],
            [("demo__notes__get_value", {"key": 3})],
        ],
    )
    assert asked == [
        ("demo/notes/set_value", {"key": "k", "value": 1}, True),
        ("demo/notes/get_value", {"key": "k"}, False),
        ("demo/notes/get_value", {"key": 3}, False),
    ]
    refused, read, retried = script.returns()
    assert (refused.outcome, refused.content) == ("failed", "The person declined this call")
    assert (read.outcome, read.content) == ("failed", "Unknown key 'k'. Existing keys: none")  # never set
    assert retried.outcome == "retried"
    assert called(wb) == ["demo/notes/get_value"]
    assert [(s[0], s[2]) for s in seen] == [("demo/notes/get_value", True), ("demo/notes/get_value", True)]
    assert "argument 'key'" in seen[1][3]  # the call that raised, as an error result saying so


def test_the_tool_list_is_cached_until_it_changes(wb: Workbench) -> None:
    toolset = wb.toolset("t/s")
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())

    async def listed() -> dict[str, Any]:
        return await toolset.get_tools(ctx)

    first = asyncio.run(listed())
    assert asyncio.run(listed()) is first  # no rebuild while the list is the same
    wb.call("t/s/add_tool", {"name": "extra"})
    assert wait_until(lambda: any(t.name == "extra" for t in wb.tools("t/s")), 10)
    again = asyncio.run(listed())
    assert "t__s__extra" in again and "t__s__extra" not in first
    result = asyncio.run(toolset.call_tool("t__s__extra", {}, ctx, again["t__s__extra"]))
    assert result == "i am extra"
    assert called(wb) == ["t/s/add_tool", "t/s/extra"]


# ---- names -------------------------------------------------------------------------------------
def info(toolbox: str, server: str, name: str) -> ToolInfo:
    return ToolInfo(toolbox=toolbox, server=server, name=name)


def test_names_follow_the_naming_spec() -> None:
    assert framework_name(info("dev", "filesystem", "read_file")) == "dev__filesystem__read_file"
    assert framework_name(info("test", "server", "my__special__tool")) == "test__server__my__special__tool"
    assert framework_name(info("dev", "filesystem", "read_file"), prefix=False) == "read_file"
    assert framework_name(info("a-b", "c", "d-e")) == "a-b__c__d-e"


def test_odd_characters_and_long_names_are_made_to_fit_uniquely() -> None:
    odd = framework_name(info("t", "s", "ns/sub.tool"))
    assert odd.startswith("t__s__ns_sub_tool_") and len(odd) == len("t__s__ns_sub_tool_") + 8
    assert odd != framework_name(info("t", "s", "ns.sub/tool")) != framework_name(info("t", "s", "ns_sub_tool"))
    exact = info("t" * 20, "s" * 20, "x" * (MAX_NAME - 44))
    assert framework_name(exact) == f"{'t' * 20}__{'s' * 20}__{'x' * 20}"  # 64: kept whole
    longer = [info("t" * 20, "s" * 20, "x" * 30 + tail) for tail in ("a", "b", "é")]
    names = [framework_name(i) for i in longer]
    assert len(set(names)) == 3 and all(len(n) == MAX_NAME for n in names)
    assert all(n.startswith(("t" * 20) + "__") for n in names)
    for name in [odd, *names, framework_name(info("t", "s", "日本語"), prefix=False)]:
        assert re.fullmatch(NAME, name), name


def test_names_are_the_same_in_another_run() -> None:
    code = (
        "from workbench_magic.api.toolsets.framework_tools import framework_name\n"
        "from workbench_magic.vocabulary.listings import ToolInfo\n"
        "print(framework_name(ToolInfo(toolbox='t', server='s', name='ns/sub.tool')))\n"
        "print(framework_name(ToolInfo(toolbox='t' * 40, server='s' * 40, name='x')))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    here = [framework_name(info("t", "s", "ns/sub.tool")), framework_name(info("t" * 40, "s" * 40, "x"))]
    assert out.stdout.split() == here


def test_the_test_servers_awkward_names_call_the_right_tools(wb: Workbench) -> None:
    toolset = wb.toolset("t/s")
    names = {t.name: str(t.identifier) for t in toolset.selection.tools()}  # type: ignore[attr-defined]
    odd = next(n for n, ident in names.items() if ident == "t/s/ns/sub.tool")
    assert names["t__s__double__under"] == "t/s/double__under"
    assert all(re.fullmatch(NAME, n) for n in names) and len(names) == len(set(names.values()))
    script = run_pydantic(toolset, [[(odd, {"text": "a"})], [("t__s__double__under", {"text": "b"})]])
    assert [p.content for p in script.returns()] == ["a", "b"]
    assert called(wb) == ["t/s/ns/sub.tool", "t/s/double__under"]


def test_plain_names_that_collide_are_a_usage_error(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"a": stdio_server(), "b": stdio_server()})}})
    with pytest.raises(UsageError) as caught:
        wb.toolset("t", prefix=False)
    text = str(caught.value)
    assert text.startswith("Tool names collide without a prefix: 'echo' (t/a/echo, t/b/echo); 'whoami' (")
    assert text.endswith(": keep prefix=True, or name fewer tools")
    with pytest.raises(UsageError, match="'echo' \\(t/a/echo, t/b/echo\\)"):
        wb.langchain_tools(["t/a/echo", "t/b/echo"], prefix=False)
    plain = wb.openai_agents_tools(["t/a/echo", "t/b/add"], prefix=False)
    assert [t.name for t in plain] == ["echo", "add"]
    assert len({t.name for t in wb.openai_agents_tools("t")}) == 2 * len(wb.tools("t/a"))


# ---- targets -----------------------------------------------------------------------------------
@pytest.mark.parametrize("factory", ["toolset", "langchain_tools", "openai_agents_tools"])
def test_unknown_targets_raise_what_a_call_raises(wb: Workbench, factory: str) -> None:
    make = getattr(wb, factory)
    cases: list[tuple[Any, str, type[NotFoundError]]] = [
        ("nope", "nope/s/echo", ToolboxNotFoundError),
        ("t/nope", "t/nope/echo", ServerNotFoundError),
        (["t/s/nope"], "t/s/nope", ToolNotFoundError),
        ("t/s/nope", "t/s/nope", ToolNotFoundError),
    ]
    for target, identifier, kind in cases:
        with pytest.raises(kind) as by_call:
            wb.call(identifier)
        with pytest.raises(kind) as by_toolset:
            make(target)
        assert str(by_toolset.value) == str(by_call.value)


def test_targets_select_a_toolbox_a_server_or_tools(wb: Workbench) -> None:
    everything = {t.name for t in wb.openai_agents_tools("demo")}
    assert len(everything) == len(wb.tools("demo")) - 1  # less the app-only tool
    notes = [t.name for t in wb.openai_agents_tools("demo__notes")]
    assert notes == [f"demo__notes__{t.name}" for t in wb.tools("demo/notes")]
    picked = wb.openai_agents_tools(
        ["demo/notes/add_note", {"toolbox": "t", "server": "s", "name": "echo"}, "demo/notes/add_note"]
    )
    assert [t.name for t in picked] == ["demo__notes__add_note", "t__s__echo"]  # each once, in order
    assert [t.name for t in wb.langchain_tools(wb.tool("t/s/add"))] == ["t__s__add"]  # one tool, any spelling
    assert [t.name for t in wb.langchain_tools("t__s__add")] == ["t__s__add"]
    with pytest.raises(UsageError, match="the list is empty"):
        wb.toolset([])
    assert wb.is_open("t")
    assert {t.name for t in wb.langchain_tools(None)} == everything | {t.name for t in wb.langchain_tools("t")}


# ---- extras and import cost --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("factory", "module", "extra"),
    [
        ("toolset", "pydantic_ai", "pydantic-ai"),
        ("langchain_tools", "langchain_core", "langchain"),
        ("openai_agents_tools", "agents", "openai-agents"),
    ],
)
def test_a_missing_framework_names_its_extra(
    wb: Workbench, monkeypatch: pytest.MonkeyPatch, factory: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` fails, as without the extra
    with pytest.raises(MissingExtraError) as caught:
        getattr(wb, factory)("demo")
    assert str(caught.value) == f"wb.{factory} needs the {extra!r} extra: pip install 'workbench-magic[{extra}]'"
    assert caught.value.__context__ is None and not wb.is_open("demo")


def test_workbench_imports_no_framework_until_one_is_used() -> None:
    code = (
        "import sys\n"
        "from workbench_magic import Workbench\n"
        f"frameworks = {FRAMEWORKS!r}\n"
        "print(sorted(m for m in frameworks if m in sys.modules))\n"
        f"wb = Workbench({{'toolboxes': {{'demo': {{'mcpServers': {DEMO!r}}}}}}})\n"
        "wb.call('demo/datasets/list_datasets')\n"
        "print(sorted(m for m in frameworks if m in sys.modules))\n"
        "wb.toolset('demo')\n"
        "print(sorted(m for m in ('pydantic_ai', 'langchain_core', 'agents') if m in sys.modules))\n"
        "wb.close_all()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.splitlines() == ["[]", "[]", "['pydantic_ai']"]


# ---- a destructive tool asks first, as wb.chat asks (confirm_destructive) ----------------------
DELETE = "demo__notes__delete_note"
ANSWERS = ("yes", "no", "nobody")


@pytest.fixture
def person(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the person types at each `input()`, in order ("<eof>": stdin at its end, nobody answers);
    the test fails if more is asked. The prompts asked are appended to `person.asked`."""
    import builtins

    from workbench_magic.api import asking

    answers: list[str] = []

    class Terminal:
        def isatty(self) -> bool:
            return True

    def read(prompt: str = "") -> str:
        assert answers, f"asked {prompt!r} with no answer left"
        answer = answers.pop(0)
        if answer == "<eof>":
            raise EOFError("EOF when reading a line")
        return answer

    monkeypatch.setattr(asking.sys, "stdin", Terminal())
    monkeypatch.setattr(builtins, "input", read)
    return answers


def a_note(wb: Workbench) -> Any:
    return wb.call("demo/notes/add_note", {"title": "keep", "body": "me"}).data["id"]


def notes(wb: Workbench) -> list[Any]:
    return [n["id"] for n in wb.call("demo/notes/list_notes").data["notes"]]


def typed(answer: str) -> str:
    return {"yes": "y", "no": "n", "nobody": "<eof>"}[answer]


def check_told(wb: Workbench, note: Any, answer: str, told: str) -> None:
    """The note is gone only when the person said yes; otherwise the model reads why it did not run."""
    if answer == "yes":
        assert notes(wb) == [] and "demo/notes/delete_note" in called(wb)
        assert "did not run" not in told
        return
    assert notes(wb) == [note] and "demo/notes/delete_note" not in called(wb)
    # no answer counts as no: the model reads the same either way (the person's line and the log differ)
    assert told == (
        "The person did not allow demo/notes/delete_note to run (the tool is marked destructive), so it did not run."
    )


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_pydantic_ai_agent_asks_before_a_destructive_tool_runs(
    wb: Workbench, person: list[str], capsys: pytest.CaptureFixture[str], answer: str
) -> None:
    note = a_note(wb)
    person.append(typed(answer))
    script = run_pydantic(wb.toolset("demo"), [[("demo__notes__get_note", {"id": note})], [(DELETE, {"id": note})]])
    assert person == []  # asked once: before delete_note, not before get_note
    assert "the model wants to run demo/notes/delete_note" in capsys.readouterr().out
    read, deleted = script.returns()
    assert read.outcome == "success"
    if answer == "yes":
        assert deleted.outcome == "success" and deleted.content["id"] == note
    else:
        assert deleted.outcome == "failed"  # ToolFailed: the model is told, the run goes on
    check_told(wb, note, answer, str(deleted.content))


@pytest.mark.parametrize("path", ["ainvoke", "invoke"])
@pytest.mark.parametrize("answer", ANSWERS)
def test_langchain_tools_ask_before_a_destructive_tool_runs(
    wb: Workbench, person: list[str], capsys: pytest.CaptureFixture[str], answer: str, path: str
) -> None:
    note = a_note(wb)
    person.append(typed(answer))
    (delete,) = wb.langchain_tools(["demo/notes/delete_note"])
    call = {"type": "tool_call", "id": "1", "name": DELETE, "args": {"id": note}}
    message = asyncio.run(delete.ainvoke(call)) if path == "ainvoke" else delete.invoke(call)
    assert person == [] and "the model wants to run demo/notes/delete_note" in capsys.readouterr().out
    assert isinstance(message, ToolMessage)
    assert message.status == ("success" if answer == "yes" else "error")
    check_told(wb, note, answer, str(message.content))


@pytest.mark.parametrize("answer", ANSWERS)
def test_openai_agents_tools_ask_before_a_destructive_tool_runs(
    wb: Workbench, person: list[str], capsys: pytest.CaptureFixture[str], answer: str
) -> None:
    note = a_note(wb)
    person.append(typed(answer))
    (delete,) = wb.openai_agents_tools(["demo/notes/delete_note"])
    arguments = json.dumps({"id": note})
    output = asyncio.run(delete.on_invoke_tool(tool_context(DELETE, arguments), arguments))
    assert person == [] and "the model wants to run demo/notes/delete_note" in capsys.readouterr().out
    check_told(wb, note, answer, output if isinstance(output, str) else json.dumps(output))


def test_confirm_destructive_off_lets_every_framework_run_it_unasked(wb: Workbench, person: list[str]) -> None:
    wb.confirm_destructive = False
    first, second, third = a_note(wb), a_note(wb), a_note(wb)
    run_pydantic(wb.toolset("demo/notes"), [[(DELETE, {"id": first})]])
    (lc,) = wb.langchain_tools(["demo/notes/delete_note"])
    lc.invoke({"id": second})
    (oa,) = wb.openai_agents_tools(["demo/notes/delete_note"])
    arguments = json.dumps({"id": third})
    asyncio.run(oa.on_invoke_tool(tool_context(DELETE, arguments), arguments))
    assert notes(wb) == [] and person == []  # nothing asked (an `input()` would fail the test)


def tool_context(name: str, arguments: str) -> Any:
    """The Agents SDK's `ToolContext` of one call, as `Runner` makes it."""
    from agents.tool_context import ToolContext

    return ToolContext(context=None, tool_name=name, tool_call_id="1", tool_arguments=arguments)
