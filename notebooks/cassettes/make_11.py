"""Record `11-models-in-the-loop.json`, the model turns notebook 11 replays, with a scripted model.

Run from anywhere, with no key and no network:

    python notebooks/cassettes/make_11.py

The model is `Played`, a pydantic-ai `FunctionModel` that plays gpt-4o-mini: each request gets the
answer a script gives it (tool calls, then text that reads their results), in the shape OpenAI's
answers have (ids like `call_...` and `chatcmpl-...`, a finish reason, token counts, the model name
`gpt-4o-mini-2024-07-18`, so genai-prices prices it). `session` does what the notebook does, in
the same order and with the same prompts, so the notebook finds each of its model turns here.

The cassette keeps only the model turns. The demo toolbox runs in-process and offline, so the
notebook runs its servers for real: a replayed chat calls the real tools, a sampling request really
reaches the replayed model, and the trace shows the MCP messages beside the model's. (A cassette
recorded live by the notebook keeps everything, as any recording does, and replays it all.)
Each turn's `elapsed` is what a hosted model takes, estimated from its tokens, so that the cassette
changes only where the turns do.

The destructive tool (`set_value`) is recorded both ways: refused (nobody at a keyboard, as when CI
runs the notebook) and allowed (what the model is told after a person answers yes).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import string
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic_ai import Agent
from pydantic_ai.direct import model_request, model_request_sync
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from workbench_magic import Workbench
from workbench_magic.api.models.resolving import resolve_model
from workbench_magic.config.defaults import default_config_dict
from workbench_magic.engine.cassette import MODEL as MODEL_TURN
from workbench_magic.engine.cassette import Cassette

HERE = Path(__file__).resolve().parent
CASSETTE = HERE / "11-models-in-the-loop.json"
MODEL = "gpt-4o-mini"
SNAPSHOT = "gpt-4o-mini-2024-07-18"
"""The name OpenAI's answers carry."""
STARTED = dt.datetime(2025, 6, 2, 9, 30, tzinfo=dt.UTC)

# ---- the notebook's prompts, in its order ----------------------------------------------------
HEAVIEST = "Which penguin species is the heaviest on average?"
BY_SEX = "Does that hold for females and males alike? Draw the species' mean body mass as a bar chart too."
ISLANDS = "How many penguins of each species were measured on each island?"
KEEP = "Store the name of the heaviest penguin species under the key `heaviest`, for later."
FLIPPERS = "On which island do penguins have the longest flippers, on average?"
AGENT_INSTRUCTIONS = "Answer in one or two sentences."
LARGEST = "Which of the bundled datasets has the most rows?"
WARMEST = "Which city was the warmest on average in the weather dataset?"
SAMPLING_SYSTEM = "You are a concise data analyst."


# ---- the LangChain chat model: the code of the notebook's cell (keep the two the same) ----------
class WorkbenchChatModel(BaseChatModel):
    """A LangChain chat model answered by a pydantic-ai model (the workbench's: recorded, replayed, traced)."""

    model: Any
    tools: tuple[ToolDefinition, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "pydantic-ai"

    def bind_tools(self, tools: Any, **kwargs: Any) -> WorkbenchChatModel:  # type: ignore[override]
        specs = [convert_to_openai_tool(tool)["function"] for tool in tools]
        defs = tuple(
            ToolDefinition(name=s["name"], parameters_json_schema=s["parameters"], description=s.get("description"))
            for s in specs
        )
        return self.model_copy(update={"tools": defs})

    def _parameters(self) -> ModelRequestParameters:
        return ModelRequestParameters(function_tools=list(self.tools))

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return answer(
            model_request_sync(self.model, pydantic_ai_messages(messages), model_request_parameters=self._parameters())
        )

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        return answer(
            await model_request(self.model, pydantic_ai_messages(messages), model_request_parameters=self._parameters())
        )


def pydantic_ai_messages(messages: list[BaseMessage]) -> list[ModelMessage]:
    """LangChain's messages as pydantic-ai's: the model's (text, tool calls), and ours (prompts, tool results)."""
    out: list[ModelMessage] = []
    for m in messages:
        if isinstance(m, AIMessage):
            said = [TextPart(m.content)] if m.content else []
            out.append(ModelResponse([*said, *(ToolCallPart(c["name"], c["args"], c["id"]) for c in m.tool_calls)]))
            continue
        part = (
            ToolReturnPart(m.name, m.content, m.tool_call_id)
            if isinstance(m, ToolMessage)
            else UserPromptPart(m.content)
        )
        if out and isinstance(out[-1], ModelRequest):
            out[-1] = ModelRequest([*out[-1].parts, part])
        else:
            out.append(ModelRequest([part]))
    return out


def answer(response: ModelResponse) -> ChatResult:
    """A pydantic-ai response as LangChain's: its text and tool calls."""
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = [
        {"name": p.tool_name, "args": p.args_as_dict(), "id": p.tool_call_id}
        for p in response.parts
        if isinstance(p, ToolCallPart)
    ]
    return ChatResult(generations=[ChatGeneration(message=AIMessage(text, tool_calls=calls))])


# ---- the model, played -----------------------------------------------------------------------
Step = list[tuple[str, dict[str, Any]]] | str
"""What the model says next: tool calls (name, arguments) or its final text."""


def results(returns: list[Any]) -> list[Any]:
    """The tool results the model read since the prompt (a LangChain result is JSON text)."""
    out = []
    for part in returns:
        content = part.content
        if isinstance(content, str):
            try:
                content = json.loads(content)
            except ValueError:
                pass
        out.append(content)
    return out


def heaviest(read: list[Any]) -> Step:
    if not read:
        return [
            ("demo__datasets__aggregate", {"dataset": "penguins", "group_by": ["species"], "metric": "body_mass_g"})
        ]
    return (
        "**Gentoo** penguins are the heaviest, at about **5,068 g** on average. Chinstrap (3,729 g) and "
        "Adelie (3,723 g) penguins weigh almost the same, some 1,340 g less."
    )


def by_sex(read: list[Any]) -> Step:
    if not read:
        return [
            (
                "demo__datasets__aggregate",
                {"dataset": "penguins", "group_by": ["species", "sex"], "metric": "body_mass_g"},
            ),
            ("demo__datasets__plot", {"dataset": "penguins", "x": "species", "y": "body_mass_g", "kind": "bar"}),
        ]
    return (
        "Yes. Gentoo are the heaviest in both sexes: females average 4,778 g and males 5,383 g, against "
        "3,473 g and 3,557 g for Adelie and Chinstrap females, and 3,969 g and 3,942 g for their males. "
        "Within every species the males are heavier, by 400 to 600 g. A few penguins have no recorded sex "
        "(the `null` rows). The bar chart shows the mean body mass of each species."
    )


def islands(read: list[Any]) -> Step:
    if not read:
        arguments = {"dataset": "penguins", "group_by": ["island", "species"], "metric": "species", "agg": "count"}
        return [("demo__datasets__aggregate", arguments)]
    return (
        "Adelie penguins were measured on all three islands (9 on Biscoe, 8 on Dream, 9 on Torgersen), "
        "while Gentoo were found only on Biscoe (20) and Chinstrap only on Dream (14)."
    )


def keep(read: list[Any]) -> Step:
    if not read:
        return [("demo__notes__set_value", {"key": "heaviest", "value": "Gentoo"})]
    if "did not allow" in json.dumps(read):
        return (
            "I did not store it: `set_value` replaces whatever the key held, so it is marked destructive, and "
            "running it was not allowed. Ask again if you want me to store it."
        )
    return 'Stored: the key `heaviest` now holds `"Gentoo"`.'


def flippers(read: list[Any]) -> Step:
    if not read:
        arguments = {"dataset": "penguins", "group_by": ["island"], "metric": "flipper_length_mm"}
        return [("demo__datasets__aggregate", arguments)]
    return (
        "Penguins on Biscoe have the longest flippers, about 210 mm on average, against about 194 mm "
        "on Dream and 193 mm on Torgersen."
    )


def largest(read: list[Any]) -> Step:
    if not read:
        return [("demo__datasets__list_datasets", {})]
    return "`penguins` and `weather` have the most rows, 60 each; `sales` has 48."


def warmest(read: list[Any]) -> Step:
    if not read:
        return [("demo__datasets__aggregate", {"dataset": "weather", "group_by": ["city"], "metric": "temp_c"})]
    rows = read[0]["rows"]
    top = max(rows, key=lambda row: row["temp_c_mean"])
    others = ", ".join(f"{row['city']} {row['temp_c_mean']:.1f} °C" for row in rows if row is not top)
    return f"**{top['city']}** was the warmest, at {top['temp_c_mean']:.1f} °C on average ({others})."


def describe(read: list[Any]) -> Step:
    return (
        "The penguins table has one row per bird: its species (Adelie, Chinstrap or Gentoo) and the island "
        "where it was measured, four body measurements (bill length and depth and flipper length in "
        "millimetres, body mass in grams), its sex and the study year. The measurements are numeric and "
        "suit group comparisons by species, island or sex; a few values are missing, notably some sexes, "
        "so filter or drop them before comparing the sexes."
    )


SCRIPT: dict[str, Callable[[list[Any]], Step]] = {
    HEAVIEST: heaviest,
    BY_SEX: by_sex,
    ISLANDS: islands,
    KEEP: keep,
    FLIPPERS: flippers,
    LARGEST: largest,
    WARMEST: warmest,
    SAMPLING_SYSTEM: describe,  # a sampling request is known by its system prompt
}


def _code(seed: str, size: int) -> str:
    """An id's random-looking part, the same in every run."""
    digest = hashlib.sha256(seed.encode()).digest()
    alphabet = string.ascii_letters + string.digits
    return "".join(alphabet[b % len(alphabet)] for b in (digest * 2)[:size])


def _tokens(text: str) -> int:
    return max(1, round(len(text) / 4))


class Played(FunctionModel):
    """gpt-4o-mini, played: named and priced like it, its answers scripted (`SCRIPT`)."""

    def __init__(self) -> None:
        super().__init__(self.respond, model_name=SNAPSHOT)
        self.turns = 0

    @property
    def system(self) -> str:
        return "openai"

    @property
    def model_name(self) -> str:
        return MODEL

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt, since = _prompt(messages)
        step = SCRIPT[prompt](results([p for m in messages[since:] for p in m.parts if _is_result(p)]))
        self.turns += 1
        seed = f"{prompt}|{len(messages)}|{step}"
        if isinstance(step, str):
            parts: list[Any] = [TextPart(step)]
            written = step
        else:
            parts = [
                ToolCallPart(name, json.dumps(arguments), f"call_{_code(seed + str(n), 24)}")
                for n, (name, arguments) in enumerate(step)
            ]
            written = json.dumps(step)
        read = json.dumps([t.parameters_json_schema for t in info.function_tools]) + str(
            [getattr(p, "content", "") for m in messages for p in m.parts]
        )
        return ModelResponse(
            parts,
            usage=RequestUsage(input_tokens=_tokens(read) + 9 * len(messages), output_tokens=_tokens(written) + 5),
            timestamp=STARTED + dt.timedelta(seconds=7 * self.turns),
            provider_name="openai",
            provider_response_id=f"chatcmpl-{_code(seed, 29)}",
            finish_reason="stop" if isinstance(step, str) else "tool_call",
        )


def _is_result(part: Any) -> bool:
    return isinstance(part, ToolReturnPart | RetryPromptPart)


def _prompt(messages: list[ModelMessage]) -> tuple[str, int]:
    """The request's last prompt (a sampling request: its system prompt), and where what followed it starts."""
    for index in range(len(messages) - 1, -1, -1):
        for part in messages[index].parts:
            if isinstance(part, SystemPromptPart) and part.content == SAMPLING_SYSTEM:
                return SAMPLING_SYSTEM, index + 1
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                return part.content, index + 1
    raise ValueError("a request with no prompt")


# ---- what the notebook does --------------------------------------------------------------------
@contextmanager
def nobody_at_the_keyboard() -> Iterator[None]:
    """As in CI: no terminal, so a destructive tool's question is declined."""
    stdin = sys.stdin
    with open(os.devnull) as devnull:
        sys.stdin = devnull
        try:
            yield
        finally:
            sys.stdin = stdin


async def langchain_agent(wb: Workbench, model: Any) -> str:
    tools = wb.langchain_tools("demo")
    by_name = {tool.name: tool for tool in tools}
    llm = WorkbenchChatModel(model=resolve_model(wb, model)).bind_tools(tools)
    messages: list[BaseMessage] = [HumanMessage(LARGEST)]
    while True:
        reply = await llm.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return str(reply.content)
        for call in reply.tool_calls:
            messages.append(await by_name[call["name"]].ainvoke(call))


def session(wb: Workbench, model: Any) -> None:
    """What notebook 11 does with the model, in its order (so it finds every answer in the cassette)."""
    wb.chat(HEAVIEST, toolbox="demo", model=model)
    wb.chat(BY_SEX, model=model)
    wb.chat(ISLANDS, model=model)
    wb.chat_reset()
    with nobody_at_the_keyboard():
        refused = wb.chat(KEEP, model=model)
    assert refused.tool_calls[0].refused, refused
    agent = Agent(resolve_model(wb, model), toolsets=[wb.toolset("demo")], instructions=AGENT_INSTRUCTIONS)
    print(agent.run_sync(FLIPPERS).output)
    print(asyncio.run(langchain_agent(wb, model)))
    wb.sampling_handler = model
    wb.reconnect("demo/datasets")
    print(wb.call("demo/datasets/describe_with_model", {"dataset": "penguins"}).data["description"])
    wb.chat_reset()
    print(wb.chat(WARMEST, model=model).text)


def allowed(wb: Workbench, model: Any) -> None:
    """The destructive turn once more, a person having said yes (the model is told what confirm off tells it)."""
    wb.chat_reset()
    wb.confirm_destructive = False
    turn = wb.chat(KEEP, model=model)
    assert turn.tool_calls[0].result is not None and not turn.tool_calls[0].result.is_error, turn


def record(cassette: Path = CASSETTE) -> None:
    """Play `session` (and the allowed turn) into `cassette`, then keep its model turns only."""
    model = Played()
    wb = Workbench(config=default_config_dict())  # the embedded demo toolbox, whatever config is around
    try:
        with wb.record(cassette):
            session(wb, model)
            allowed(wb, model)
    finally:
        wb.close_all()
    recorded = Cassette.load(cassette)
    turns = [entry for entry in recorded.interactions if entry["kind"] == MODEL_TURN]
    for entry in turns:
        usage = entry["response"].get("usage", {})
        elapsed = 0.35 + usage.get("output_tokens", 0) * 0.012 + usage.get("input_tokens", 0) * 0.00005
        entry["elapsed"] = round(elapsed, 3)
    Cassette(cassette, {}, turns).save()


if __name__ == "__main__":
    record()
    print(f"recorded {CASSETTE}")
