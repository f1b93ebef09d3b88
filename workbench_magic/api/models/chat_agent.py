"""The agent of a chat turn: one pydantic-ai run, on the workbench loop (imported by `wb.chat` on first use).

`Turn` is made on the thread that made the chat (the toolset and the model are built there, with the
workbench's sync methods) and runs on the loop (`Turn.run`). It follows the run node by node: a
model request streams its text (where the model streams), and each tool call goes through
`_ChatToolset`, which wraps the workbench's toolset (`wb.toolset`) to see each call start and end;
the toolset's hooks say which tool it is, ask the person before a destructive one runs
(`before_call`) and hand over its `ToolResult` (`on_call`). What the person sees is posted on the
chat's channel, in order, to the thread that waits (`ChatView`); the question goes to the channel's
asker.

A call with bad arguments is told to the model as the call's result, and it may call again, up to
`Workbench.tool_retries` times in a row; past that, pydantic-ai gives up on the run, and the turn ends
as a `ChatTurn` whose `stopped` says so (the conversation stays as it was: the last call has no answer).

A model's synchronous function (a `FunctionModel`'s) runs on a thread of its own (`_Threads`): an
interrupted turn stops waiting for it, so the conversation's lock is free for the next turn at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import re
import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRetry, ToolFailed, UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.toolsets import WrapperToolset

from workbench_magic.api.asking import ask_to_run
from workbench_magic.api.targets import parse_identifier
from workbench_magic.engine.model_exchanges import model_run, shown_model_name
from workbench_magic.vocabulary.chat import ChatToolCall, ChatTurn, ChatUsage, retry_limit_text
from workbench_magic.vocabulary.errors import WorkbenchError, leaf_exception

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pydantic_ai.models import Model
    from pydantic_ai.tools import RunContext
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_ai.usage import RunUsage

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

_running: contextvars.ContextVar[_Running | None] = contextvars.ContextVar("chat_tool_call", default=None)
"""The tool call in flight in this task (the toolset's hooks run inside it)."""

_RETRIES_EXCEEDED = re.compile(r"Tool '(?P<name>.+?)' exceeded max retries count of \d+")
"""pydantic-ai's `UnexpectedModelBehavior` when a tool's calls failed (bad arguments) past its retries."""


class _Threads(concurrent.futures.Executor):
    """Runs each synchronous function of a turn (a `FunctionModel`'s) on a daemon thread of its own.

    pydantic-ai's default (anyio's worker threads) waits for a thread to return before a cancel goes
    through, so an interrupted turn whose model hangs held the conversation's lock until the model
    returned, and the next turn waited silently. asyncio stops waiting for an executor's future at once:
    the interrupted turn is abandoned, its thread ends when the function returns (its answer unused), and
    being a daemon it does not hold up the interpreter's exit either.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=work, name="workbench model function", daemon=True).start()
        return future


_THREADS = _Threads()


@dataclass
class _Ran:
    """How an agent run ended: its messages (all, and this turn's) and usage; `stopped` at the retry limit."""

    messages: list[Any]
    new: list[Any]
    usage: RunUsage
    stopped: str | None = None


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
        toolset: makes the toolset of `target` with the turn's hooks (`toolset(before_call=..., on_call=...)`:
            `Toolsets.toolset`'s, or one selection's, made before the runs of an evaluation).
        prompt: what the person asked.
        target: the toolbox (or `toolbox/server`) whose tools the model may call.
        model: the model (as `resolve_model` gave it).
        channel: the way back to the chat's thread (its view and its asker).
        view: where the turn shows while it runs, or None.
        confirm: ask before a tool marked `destructiveHint` runs.
        skills: skills the model follows this turn: their instructions go after the workbench's.
        tool_retries: how many times in a row the model may call a tool again after a call with bad
            arguments (each time told the error); past it the turn stops (`ChatTurn.stopped`).
    """

    def __init__(
        self,
        toolset: Callable[..., AbstractToolset[Any]],
        prompt: str,
        target: str,
        model: Model,
        channel: Channel,
        *,
        view: ChatView | None = None,
        confirm: bool = True,
        skills: Sequence[Skill] = (),
        tool_retries: int = 3,
    ) -> None:
        self._prompt = prompt
        self._tool_retries = tool_retries
        self._instructions = instructions(skills)
        self._model = model
        self._channel = channel
        self._view = view
        self._confirm = confirm
        self._toolset = _ChatToolset(toolset(before_call=self._before_call, on_call=self._on_call), turn=self)
        self._parts: list[str | ChatToolCall] = []

    # ---- the run (on the loop) ----------------------------------------------------------------
    async def run(self, conversation: Conversation, *, model: Model | str | None = None) -> ChatTurn:
        """Run the turn, the conversation's next; the conversation goes on with it.

        Args:
            conversation: the conversation the turn goes on.
            model: the model the turn was given (not the workbench's default): the conversation keeps it
                for its next turns given none. None: the conversation's model stays as it is.
        """
        with Agent.using_thread_executor(_THREADS):
            async with conversation.lock:
                generation = conversation.generation
                # the model's own failure is one line (ModelError); the conversation then stays as it was
                ran = await model_run(self._model, self._agent_run(conversation.messages))
                if conversation.generation == generation:
                    if model is not None:
                        conversation.model = model
                    if ran.stopped is None:  # a stopped run's last call has no answer: it is not sent again
                        conversation.messages = tuple(ran.messages)
        if ran.stopped is not None:
            self._text(ran.stopped, new_part=True)
        responses = [m for m in ran.new if isinstance(m, ModelResponse)]
        usage = ran.usage
        turn = ChatTurn(
            prompt=self._prompt,
            text="\n\n".join(p.strip() for p in self._parts if isinstance(p, str) and p.strip()),
            tool_calls=tuple(p for p in self._parts if isinstance(p, ChatToolCall)),
            usage=ChatUsage(usage.input_tokens, usage.output_tokens, usage.requests, usage.tool_calls),
            cost=turn_cost(responses),
            model=shown_model_name((responses[-1].model_name if responses else None) or self._model.model_name),
            parts=tuple(self._parts),
            stopped=ran.stopped,
        )
        self._show(lambda view: view.on_finish(turn))
        return turn

    async def _agent_run(self, history: tuple[Any, ...]) -> _Ran:
        """The agent's run: the model's text shown as it comes (streamed where the model streams)."""
        agent: Agent[None, str] = Agent(
            self._model,
            toolsets=[self._toolset],
            instructions=self._instructions,
            retries={"tools": self._tool_retries},
        )
        streams = _streams(self._model)
        async with agent.iter(self._prompt, message_history=list(history)) as run:
            try:
                async for node in run:
                    if streams and Agent.is_model_request_node(node):
                        async with node.stream(run.ctx) as events:
                            async for event in events:
                                self._model_event(event)
                    elif not streams and Agent.is_call_tools_node(node):
                        for part in node.model_response.parts:
                            if isinstance(part, TextPart) and part.content:
                                self._text(part.content, new_part=True)
            except Exception as exc:
                stopped = self._retry_limit(exc)
                if stopped is None:
                    raise
                return _Ran(run.all_messages(), run.new_messages(), run.usage, stopped)
        result = run.result
        assert result is not None
        return _Ran(result.all_messages(), result.new_messages(), result.usage)

    def _retry_limit(self, error: Exception) -> str | None:
        """What the turn says when `error` is pydantic-ai giving up on a tool past its retries, else None."""
        leaf = leaf_exception(error)
        found = _RETRIES_EXCEEDED.match(leaf.message) if isinstance(leaf, UnexpectedModelBehavior) else None
        if found is None:
            return None
        name = found.group("name")
        calls = [p for p in self._parts if isinstance(p, ChatToolCall) and p.name == name]
        return retry_limit_text(calls[-1].identifier if calls else name, self._tool_retries)

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
            running.error = running.error or exc.message  # the person's line may say more (nobody answered)
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
        answer = await ask_to_run(self._channel, "chat", identifier, arguments)  # on the chat's thread
        if running is not None and answer.answered:  # unanswered: nobody allowed or refused it
            running.confirmed = answer.allowed
        if not answer.allowed:
            if running is not None:
                running.error = answer.shown(identifier)
            raise ToolFailed(answer.told(identifier))

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
    and replaces them whole at its end, unless `reset` came meanwhile (`generation` moved on). `model`
    is the model its last turn given one was given (a `Model` or a name): a turn given none uses it.
    """

    def __init__(self) -> None:
        self.messages: tuple[Any, ...] = ()
        self.model: Model | str | None = None
        self.generation = 0
        self.lock = asyncio.Lock()

    def reset(self) -> None:
        """Start over: the next turn sends no earlier messages, and forgets the conversation's model."""
        self.messages = ()
        self.model = None
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
