"""The agent of a chat turn: one pydantic-ai run, on the workbench loop (imported by `wb.chat` on first use).

`Turn` is made on the thread that made the chat (the toolset and the model are built there, with the
workbench's sync methods) and runs on the loop (`Turn.run`). It follows the run node by node: a
model request streams its text (where the model streams), and each tool call goes through
`_ChatToolset`, which wraps the workbench's toolset (`wb.toolset`) to see each call start and end;
the toolset's hooks say which tool it is, ask the person before a destructive one runs
(`before_call`) and hand over its `ToolResult` (`on_call`). What the person sees is posted on the
chat's channel, in order, to the thread that waits (`ChatView`); the question goes to the channel's
asker.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import (
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.toolsets import WrapperToolset

from workbench_magic.api.model_turns import model_run
from workbench_magic.api.server_features import parse_identifier
from workbench_magic.vocabulary.chat import ChatToolCall, ChatTurn, ChatUsage
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pydantic_ai.agent import AgentRunResult
    from pydantic_ai.models import Model
    from pydantic_ai.tools import RunContext
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

    from workbench_magic.api.toolsets import ToolsetMethods
    from workbench_magic.engine.runtime import Channel
    from workbench_magic.vocabulary.chat import ChatView
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.listings import ToolInfo
    from workbench_magic.vocabulary.results import ToolResult
    from workbench_magic.vocabulary.skills import Skill

__all__ = ["INSTRUCTIONS", "Conversation", "Turn", "instructions", "turn_cost"]

INSTRUCTIONS = (
    "You work in a Jupyter notebook with a person, using the tools of their MCP toolbox. The person sees "
    "each tool call you make, its arguments and its result (tables, images) in the notebook: refer to a "
    "result rather than repeating it whole."
)
"""What the model is told of where it is (the same every turn, so recorded turns replay)."""

CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"run": {"type": "boolean", "title": "Run it"}},
    "required": ["run"],
}
"""The question asked before a destructive tool runs: one yes/no field."""

_running: contextvars.ContextVar[_Running | None] = contextvars.ContextVar("chat_tool_call", default=None)
"""The tool call in flight in this task (the toolset's hooks run inside it)."""


@dataclass
class _Running:
    """A tool call while it runs (on the loop); `snapshot` is what the turn and the view keep."""

    call_id: str
    name: str
    identifier: ToolIdentifier | str
    arguments: dict[str, Any]
    result: ToolResult | None = None
    confirmed: bool | None = None
    error: str | None = None

    def snapshot(self, *, done: bool) -> ChatToolCall:
        return ChatToolCall(
            identifier=self.identifier,
            arguments=self.arguments,
            result=self.result,
            confirmed=self.confirmed,
            error=self.error,
            name=self.name,
            call_id=self.call_id,
            done=done,
        )


@dataclass
class _ChatToolset(WrapperToolset[Any]):
    """The workbench's toolset, each of its calls seen by the turn (start, end)."""

    turn: Turn | None = None

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        assert self.turn is not None
        return await self.turn.tool_call(self.wrapped, name, tool_args, ctx, tool)


class Turn:
    """One chat turn: made on the chat's thread, `run` on the workbench loop.

    Args:
        workbench: the workbench (its `toolset`).
        prompt: what the person asked.
        target: the toolbox (or `toolbox/server`) whose tools the model may call.
        model: the model (as `resolve_model` gave it).
        channel: the way back to the chat's thread (its view and its asker).
        view: where the turn shows while it runs, or None.
        confirm: ask before a tool marked `destructiveHint` runs.
        skills: skills the model follows this turn: their instructions go after the workbench's.
    """

    def __init__(
        self,
        workbench: ToolsetMethods,
        prompt: str,
        target: str,
        model: Model,
        channel: Channel,
        *,
        view: ChatView | None = None,
        confirm: bool = True,
        skills: Sequence[Skill] = (),
    ) -> None:
        self._prompt = prompt
        self._instructions = instructions(skills)
        self._model = model
        self._channel = channel
        self._view = view
        self._confirm = confirm
        toolset = workbench.toolset(target, before_call=self._before_call, on_call=self._on_call)
        self._toolset = _ChatToolset(toolset, turn=self)
        self._parts: list[str | ChatToolCall] = []

    # ---- the run (on the loop) ----------------------------------------------------------------
    async def run(self, conversation: Conversation) -> ChatTurn:
        """Run the turn, the conversation's next; the conversation goes on with it."""
        async with conversation.lock:
            generation = conversation.generation
            # the model's own failure is one line (ModelError); the conversation then stays as it was
            result = await model_run(self._model, self._agent_run(conversation.messages))
            if conversation.generation == generation:
                conversation.messages = tuple(result.all_messages())
        responses = [m for m in result.new_messages() if isinstance(m, ModelResponse)]
        usage = result.usage
        turn = ChatTurn(
            prompt=self._prompt,
            text="\n\n".join(p.strip() for p in self._parts if isinstance(p, str) and p.strip()),
            tool_calls=tuple(p for p in self._parts if isinstance(p, ChatToolCall)),
            usage=ChatUsage(usage.input_tokens, usage.output_tokens, usage.requests, usage.tool_calls),
            cost=turn_cost(responses),
            model=(responses[-1].model_name if responses else None) or self._model.model_name,
            parts=tuple(self._parts),
        )
        self._show(lambda view: view.on_finish(turn))
        return turn

    async def _agent_run(self, history: tuple[Any, ...]) -> AgentRunResult[str]:
        """The agent's run: the model's text shown as it comes (streamed where the model streams)."""
        agent: Agent[None, str] = Agent(self._model, toolsets=[self._toolset], instructions=self._instructions)
        streams = _streams(self._model)
        async with agent.iter(self._prompt, message_history=list(history)) as run:
            async for node in run:
                if streams and Agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as events:
                        async for event in events:
                            self._model_event(event)
                elif not streams and Agent.is_call_tools_node(node):
                    for part in node.model_response.parts:
                        if isinstance(part, TextPart) and part.content:
                            self._text(part.content, new_part=True)
        result = run.result
        assert result is not None
        return result

    def _model_event(self, event: Any) -> None:
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            self._text(event.part.content, new_part=True)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            self._text(event.delta.content_delta)

    def _text(self, text: str, *, new_part: bool = False) -> None:
        """More text: it goes on the turn's last text, a new text part after a tool call."""
        last = self._parts[-1] if self._parts else None
        if isinstance(last, str):
            if new_part and last.strip() and text:
                text = "\n\n" + text
            self._parts[-1] = last + text
        else:
            self._parts.append(text)
        if text:
            self._show(lambda view: view.on_text_delta(text))

    def _show(self, update: Callable[[ChatView], None]) -> None:
        """Run `update(view)` on the chat's thread, after what was posted before."""
        view = self._view
        if view is not None:
            self._channel.post(lambda: update(view))

    # ---- tool calls (on the loop, in the agent's tasks) ---------------------------------------
    async def tool_call(
        self, toolset: AbstractToolset[Any], name: str, arguments: dict[str, Any], ctx: RunContext[Any], tool: Any
    ) -> Any:
        """One call of the workbench's toolset, shown as it starts and as it ends."""
        metadata = tool.tool_def.metadata or {}
        identifier: ToolIdentifier | str = name
        if isinstance(metadata.get("identifier"), str):
            try:
                identifier = parse_identifier(metadata["identifier"])
            except WorkbenchError:
                pass
        running = _Running(ctx.tool_call_id or name, name, identifier, dict(arguments))
        index = len(self._parts)
        started = running.snapshot(done=False)
        self._parts.append(started)
        self._show(lambda view: view.on_tool_call_start(started))
        token = _running.set(running)
        try:
            return await toolset.call_tool(name, arguments, ctx, tool)
        except ToolFailed as exc:
            running.error = exc.message
            raise
        except ModelRetry as exc:
            running.error = str(exc.message)
            raise
        except asyncio.CancelledError:
            running.error = "cancelled"
            raise
        finally:
            _running.reset(token)
            ended = running.snapshot(done=True)
            self._parts[index] = ended
            self._show(lambda view: view.on_tool_call_end(ended))

    async def _before_call(self, identifier: ToolIdentifier, arguments: dict[str, Any], info: ToolInfo) -> None:
        """Before a call runs: a destructive tool runs only once the person allows it."""
        running = _running.get()
        if running is not None:
            running.identifier = identifier
        if not self._confirm or (info.annotations or {}).get("destructiveHint") is not True:
            return
        allowed = await self._ask(identifier, arguments)
        if running is not None:
            running.confirmed = allowed
        if not allowed:
            raise ToolFailed(
                f"The person did not allow {identifier} to run (the tool is marked destructive), so it did not run."
            )

    async def _ask(self, identifier: ToolIdentifier, arguments: dict[str, Any]) -> bool:
        """Ask the person, on the chat's thread, whether the destructive tool may run."""
        channel = self._channel
        asker = getattr(channel, "asker", None)
        if asker is None:
            return False
        shown = json.dumps(arguments, ensure_ascii=False, default=str)
        message = f"the model wants to run {identifier} {shown}, a tool marked destructive."
        answer = await asyncio.wrap_future(channel.submit(lambda: asker.form("chat", message, CONFIRM_SCHEMA)))
        content = answer.get("content") if isinstance(answer, dict) else None
        return bool(answer.get("action") == "accept" and isinstance(content, dict) and content.get("run") is True)

    async def _on_call(self, identifier: ToolIdentifier, arguments: dict[str, Any], result: ToolResult) -> None:
        running = _running.get()
        if running is not None:
            running.result = result


def instructions(skills: Sequence[Skill] = ()) -> str:
    """What the model is told: where it is (`INSTRUCTIONS`), then each skill it follows this turn,
    its `SKILL.md` whole under a line that names it (its other files stay in `Skill.files`).

    Args:
        skills: the skills read for the turn (`wb.skill`).

    Returns:
        The instructions of the turn.
    """
    parts = [INSTRUCTIONS]
    parts.extend(skill.as_instructions() for skill in skills)
    return "\n\n".join(parts)


class Conversation:
    """The model messages of a workbench's chat so far; used on the workbench loop only.

    A turn holds `lock` while it runs (turns of one workbench run one at a time), reads `messages`
    and replaces them whole at its end, unless `reset` came meanwhile (`generation` moved on).
    """

    def __init__(self) -> None:
        self.messages: tuple[Any, ...] = ()
        self.generation = 0
        self.lock = asyncio.Lock()

    def reset(self) -> None:
        """Start over: the next turn sends no earlier messages."""
        self.messages = ()
        self.generation += 1


def _streams(model: Model) -> bool:
    """Whether the model streams its responses (a `FunctionModel` does only with a `stream_function`)."""
    from pydantic_ai.models.function import FunctionModel

    current: Any = model
    while current is not None:
        if isinstance(current, FunctionModel):
            return current.stream_function is not None
        current = getattr(current, "wrapped", None)
    return True


def turn_cost(responses: list[ModelResponse]) -> Decimal | None:
    """The price of the responses (genai-prices); None when one's model is unknown there.

    Args:
        responses: the model's responses of a turn.

    Returns:
        The total in USD, or None.
    """
    from genai_prices import calc_price

    total = Decimal(0)
    for response in responses:
        if not response.model_name:
            return None
        price = None
        references: list[dict[str, Any]] = []
        if response.provider_url:
            references.append({"provider_api_url": response.provider_url})
        references.append({"provider_id": response.provider_name})
        for reference in references:
            try:
                price = calc_price(response.usage, response.model_name, **reference)
                break
            except LookupError:
                continue
            except ValueError:  # usage genai-prices cannot price (cache counts above the input)
                return None
        if price is None:
            return None
        total += price.total_price
    return total if responses else None
