"""A model wrapped for the workbench: its exchanges recorded, replayed and traced (api/models/resolving.py
wraps it; the loop owns the `ModelHost`, one per workbench, as it owns the cassette deck).

`WorkbenchModel` is a pydantic-ai `WrapperModel` around the model that answers. Each request
(`request` or `request_stream`) is one `ModelExchange` (a chat turn holds several):

- while a replayed cassette holds model turns (`CassetteDeck.model_replay`), the turn is answered
  from it: the recorded turn whose request matches (messages, settings, tool names; timestamps and
  ids ignored), repeated identical requests in recorded order. The wrapped model is not called; a
  name is not even built (`UnresolvedModel`), so a cassette recorded with ``"openai:..."`` replays
  with no key. A request the cassette lacks is an error in ``strict`` mode and goes to the model in
  ``auto`` mode;
- otherwise the wrapped model answers, and while `wb.record(path)` records, the request and the
  response go to the cassette (`Recorder.add_model`);
- inside `wb.trace()` the request and its response show as messages on the lane ``"model"``
  (`WireTap.noted`), as JSON-RPC-shaped dicts: ``model/request #n`` and ``result #n``.

A recorded turn keeps, beside it in the cassette, the tool lists of the servers of every toolbox whose
tools the request offered (not only of the servers then called): a replay offers the model the same
tools, so the turn's request matches again.

`model_run(model, work)` is where the workbench runs a model (a chat's run, a sampling request): the
model's own failure (a provider's error, a usage limit, an answer pydantic-ai cannot use, an
exception of a model written in Python) becomes one line, `ModelError`.

A stream is recorded as its final response and replayed as a stream of the recorded parts.
The deck and the tap belong to the loop thread: a turn made on another thread or event loop
reaches them through the loop (`LoopThread.arun`, and `call_soon_threadsafe` for what nobody waits on).
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from workbench_magic.engine.cassette import CassetteError
from workbench_magic.vocabulary.errors import (
    MissingExtraError,
    UsageError,
    WorkbenchError,
    describe_exception,
    leaf_exception,
    model_failed,
    raise_alone,
)
from workbench_magic.vocabulary.identifiers import parse_identifier

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from workbench_magic.engine.cassette import Replay
    from workbench_magic.engine.cassette_deck import CassetteDeck
    from workbench_magic.engine.connection import Connection
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import LoopThread

__all__ = [
    "MODEL_LANE",
    "ModelHost",
    "UnresolvedModel",
    "WorkbenchModel",
    "failure_reason",
    "infer",
    "model_id",
    "model_label",
    "model_run",
    "request_key",
    "shown_model_name",
]

logger = logging.getLogger("workbench_magic")
T = TypeVar("T")

MODEL_LANE = "model"
"""The lifeline model turns take in a trace (`TraceMessage.server`)."""

_VOLATILE = frozenset({"timestamp", "run_id", "conversation_id"})
"""Keys of a message that change from run to run: neither recorded in a request nor matched on."""
_MATCHED_PART_KEYS = ("part_kind", "content", "tool_name", "args")
_HIDDEN_SETTINGS = frozenset({"extra_headers", "extra_body"})
"""Settings that may carry credentials: never recorded or traced."""
_SHOWN_PROMPT = 120
_SHOWN_REASON = 300


# ---- a name, built only when a turn needs it ------------------------------------------------
def infer(name: str) -> Model:
    """pydantic-ai's `infer_model(name)`, its failures as one line (`UsageError`, `MissingExtraError`)."""
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    problem: WorkbenchError
    try:
        return infer_model(name)
    except ImportError as exc:  # the provider's package (openai, anthropic, ...) is not installed
        found = re.search(r"pip install [\"'`]*([^\"'`]+)", str(exc))
        how = f": pip install '{found.group(1)}'" if found else f" ({exc})"
        problem = MissingExtraError(f"The model {name!r} needs its provider's package{how}")
    except UserError as exc:  # an unknown name, a missing key
        problem = UsageError(f"The model {name!r} cannot be used: {_sentence(str(exc))}")
    raise_alone(problem)


def _sentence(text: str) -> str:
    """The first sentence of pydantic-ai's message (the rest points to its docs)."""
    lines = text.strip().splitlines()
    first = lines[0] if lines else text
    end = first.find(". ")
    return first[: end + 1] if end > 0 else first


class UnresolvedModel(Model):
    """A model known by name only, built on its first live turn (`infer`).

    While a cassette answers, nothing builds it: no provider package, no key.
    """

    _answers_requests_itself = False

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self._built: Model | None = None

    @property
    def model_name(self) -> str:
        return self.name.split(":", 1)[-1]

    @property
    def system(self) -> str:
        return self.name.split(":", 1)[0] if ":" in self.name else self.name

    def built(self) -> Model:
        """The model itself (built now the first time: `UsageError` or `MissingExtraError` if it cannot be)."""
        if self._built is None:
            self._built = infer(self.name)
        return self._built

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        return await self.built().request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with self.built().request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream


# ---- turns as JSON --------------------------------------------------------------------------
def _compact(item: dict[str, Any]) -> dict[str, Any]:
    """A message or a part without its empty and volatile keys (its content and arguments untouched)."""
    return {k: v for k, v in item.items() if v is not None and k not in _VOLATILE}


def messages_json(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """Messages as compact JSON: each message and part without its empty keys, timestamps and ids."""
    out = []
    for message in ModelMessagesTypeAdapter.dump_python(messages, mode="json"):
        message = _compact(message)
        message["parts"] = [_compact(part) for part in message.get("parts", ())]
        if isinstance(message.get("usage"), dict):
            message["usage"] = {k: v for k, v in message["usage"].items() if v}
        out.append(message)
    return out


def response_json(response: ModelResponse) -> dict[str, Any]:
    """A response as it is recorded (it is replayed from this): compact, its timestamp kept."""
    data: dict[str, Any] = ModelMessagesTypeAdapter.dump_python([response], mode="json")[0]
    out = {k: v for k, v in data.items() if v is not None and k not in ("run_id", "conversation_id")}
    out["parts"] = [{k: v for k, v in part.items() if v is not None} for part in data.get("parts", ())]
    if isinstance(out.get("usage"), dict):
        out["usage"] = {k: v for k, v in out["usage"].items() if v}
    return out


def response_from_json(data: dict[str, Any]) -> ModelResponse:
    """A recorded response, as the model gave it."""
    response = ModelMessagesTypeAdapter.validate_python([data])[0]
    if not isinstance(response, ModelResponse):
        raise CassetteError("A recorded model turn's response is not a model response")
    return response


def settings_json(settings: ModelSettings | None) -> dict[str, Any] | None:
    if not settings:
        return None
    shown = {k: v for k, v in dict(settings).items() if k not in _HIDDEN_SETTINGS}
    return json.loads(json.dumps(shown, default=str))


def tools_json(parameters: ModelRequestParameters) -> list[dict[str, Any]]:
    """The tools a request offers (function and output tools): name, description, schema."""
    tools = [*parameters.function_tools, *parameters.output_tools]
    return [
        {
            k: v
            for k, v in {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters_json_schema,
                "kind": t.kind if t.kind != "function" else None,
            }.items()
            if v is not None
        }
        for t in tools
    ]


def request_key(request: dict[str, Any]) -> str:
    """What a recorded or live request is matched on: per message its kind and instructions, per
    part its kind, content, tool name and arguments; the settings; the tools' names."""

    def part(item: dict[str, Any]) -> dict[str, Any]:
        kept = {k: item[k] for k in _MATCHED_PART_KEYS if k in item}
        if isinstance(kept.get("args"), str):
            try:
                kept["args"] = json.loads(kept["args"])
            except ValueError:
                pass
        return kept

    messages = [
        {"kind": m.get("kind"), "instructions": m.get("instructions"), "parts": [part(p) for p in m.get("parts", ())]}
        for m in request.get("messages", ())
    ]
    tools = sorted(t.get("name", "") for t in request.get("tools", ()))
    key = {"messages": messages, "settings": request.get("settings"), "tools": tools}
    return json.dumps(key, sort_keys=True, ensure_ascii=False, default=str)


class ModelExchange:
    """One request to the model and what the workbench keeps of it."""

    def __init__(
        self,
        number: int,
        name: str,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        parameters: ModelRequestParameters,
        stream: bool,
    ) -> None:
        self.number = number
        self.name = name
        self.stream = stream
        self.started = time.perf_counter()
        self._source = (messages, settings, parameters)
        self._request: dict[str, Any] | None = None

    @property
    def request(self) -> dict[str, Any]:
        """The request as recorded: messages, settings, tools (built once, on first need)."""
        if self._request is None:
            messages, settings, parameters = self._source
            self._request = {
                "messages": messages_json(messages),
                "settings": settings_json(settings),
                "tools": tools_json(parameters),
            }
            if not parameters.allow_text_output:
                self._request["allow_text_output"] = False
        return self._request

    def toolboxes(self) -> list[str]:
        """The toolboxes whose tools the request offers (a workbench toolset's tools name their identifier)."""
        found: dict[str, None] = {}
        for tool in self._source[2].function_tools:
            identifier = (tool.metadata or {}).get("identifier")
            if isinstance(identifier, str):
                try:
                    found[parse_identifier(identifier).toolbox] = None
                except WorkbenchError:
                    continue
        return list(found)

    def sent(self) -> dict[str, Any]:
        """The trace's message for the request: the messages new since the model's last answer."""
        messages = self.request["messages"]
        last_answer = max((n for n, m in enumerate(messages) if m.get("kind") == "response"), default=-1)
        params: dict[str, Any] = {"model": self.name, "messages": messages[last_answer + 1 :]}
        if last_answer >= 0:
            params["earlier"] = last_answer + 1
        if self.request["settings"]:
            params["settings"] = self.request["settings"]
        if self.request["tools"]:
            params["tools"] = [t["name"] for t in self.request["tools"]]
        if self.stream:
            params["stream"] = True
        return {"jsonrpc": "2.0", "id": self.number, "method": "model/request", "params": params}

    def received(self, data: dict[str, Any], *, replayed: bool) -> dict[str, Any]:
        """The trace's message for the response (`data`: as `response_json` gives it)."""
        result: dict[str, Any] = {k: data[k] for k in ("model_name", "parts", "finish_reason", "usage") if k in data}
        if replayed:
            result["replayed"] = True
        return {"jsonrpc": "2.0", "id": self.number, "result": result}

    def failed(self, error: BaseException) -> dict[str, Any]:
        text = str(error).strip().splitlines()
        message = text[0] if text else type(error).__name__
        return {"jsonrpc": "2.0", "id": self.number, "error": {"code": -32000, "message": message}}

    def shown(self) -> str:
        """The request in a few words, for an error: the model and the last prompt's start."""
        prompt = ""
        for message in reversed(self.request["messages"]):
            texts = [p.get("content") for p in message.get("parts", ()) if p.get("part_kind") == "user-prompt"]
            if texts:
                prompt = texts[-1] if isinstance(texts[-1], str) else json.dumps(texts[-1], default=str)
                break
        if len(prompt) > _SHOWN_PROMPT:
            prompt = prompt[: _SHOWN_PROMPT - 1] + "…"
        return f"request to {self.name}" + (f" (prompt {prompt!r})" if prompt else "")


# ---- the workbench's side: cassettes and traces ----------------------------------------------
class ModelHost:
    """Where a workbench's model turns go: its cassette deck and wire tap, on its loop thread; its core
    says which servers a recorded turn's tools came from."""

    def __init__(self, loop: LoopThread, deck: CassetteDeck, core: Core) -> None:
        self.loop = loop
        self.deck = deck
        self.core = core
        self.tap = core.wire_tap
        self._numbers = itertools.count(1)

    def replaying(self) -> bool:
        """Whether a replayed cassette holds model turns (they then answer)."""
        return self.deck.model_replay() is not None

    def recorded_model_name(self) -> str | None:
        """The model the replayed cassette's first model turn was recorded with, if any."""
        replay = self.deck.model_replay()
        return str(replay.model_turns[0].get("name")) if replay is not None else None

    def _quiet(self) -> bool:
        """Nothing records, replays or traces: a turn goes straight to the model."""
        deck = self.deck
        return not self.tap.recordings and deck.recorder is None and deck.model_replay() is None

    async def _on_loop(self, fn: Callable[[], T]) -> T:
        if self.loop.in_loop():
            return fn()

        async def run() -> T:
            return fn()

        return await self.loop.arun(run())

    def _post(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the loop, in order with what follows there; nobody waits on it."""

        def run() -> None:
            try:
                fn()
            except WorkbenchError as exc:  # a cassette that cannot be written: the turn itself went well
                logger.warning("%s", exc)

        if self.loop.in_loop():
            run()
        elif self.loop.alive:
            self.loop.loop.call_soon_threadsafe(run)

    async def begin(self, turn: ModelExchange) -> ModelResponse | None:
        """Trace the request; the recorded response when a replayed cassette answers it."""
        if self._quiet():
            return None
        key = request_key(turn.request)  # the JSON is built here, off the loop

        def start() -> dict[str, Any] | None:
            if self.tap.recordings:
                self.tap.noted(MODEL_LANE, "sent", turn.sent())
            replay = self.deck.model_replay()
            return self._take(replay, turn, key) if replay is not None else None

        try:
            entry = await self._on_loop(start)
        except CassetteError as exc:
            self.failed(turn, exc)
            raise_alone(exc)
        return response_from_json(entry["response"]) if entry is not None else None

    def _take(self, replay: Replay, turn: ModelExchange, key: str) -> dict[str, Any] | None:
        entry = replay.take_model(key, lambda e: request_key(e.get("request") or {}))
        if entry is None and replay.mode == "strict":
            raise CassetteError(
                f"No recorded model turn for this {turn.shown()} in the cassette {replay.cassette.shown_path} "
                "(record it again, or replay with mode='auto')"
            )
        return entry

    def end(self, turn: ModelExchange, response: ModelResponse, *, replayed: bool) -> None:
        """Record a live turn while recording; trace the response."""
        if self._quiet():
            return
        elapsed = time.perf_counter() - turn.started
        # Both as JSON now, off the loop: the agent goes on with the messages and the response.
        request, answer = turn.request, response_json(response)

        def finish() -> None:
            if self.tap.recordings:
                self.tap.noted(MODEL_LANE, "received", turn.received(answer, replayed=replayed))
            if not replayed and self.deck.recorder is not None:
                servers = self._servers(turn.toolboxes())
                self.deck.recorded_model_turn(turn.name, request, answer, elapsed, servers=servers)

        self._post(finish)

    def _servers(self, toolboxes: list[str]) -> list[Connection]:
        """The connected servers of these toolboxes (loop thread): the cassette keeps their tool lists."""
        servers: list[Connection] = []
        for toolbox in toolboxes:
            box = self.core.state.get(toolbox)
            for server in box.tools if box is not None else ():
                try:
                    servers.append(self.core.connection(toolbox, server))
                except WorkbenchError:  # closed meanwhile: nothing to describe
                    continue
        return servers

    def failed(self, turn: ModelExchange, error: BaseException) -> None:
        """Trace the failure (or the cancel) of a turn."""
        if self.tap.recordings:
            self._post(lambda: self.tap.noted(MODEL_LANE, "received", turn.failed(error)))


# ---- a model's failure ------------------------------------------------------------------------
def model_label(model: Model) -> str:
    """The model's name in an error: the name it was given, else ``provider:model`` (`model_id`)."""
    return model.recorded_name if isinstance(model, WorkbenchModel) else model_id(model)


def model_id(model: Model) -> str:
    """``provider:model``, each part said once.

    pydantic-ai's own `model_id` repeats what its name already holds: a `FunctionModel` is named after
    its functions (``function:boom:``, so ``function:function:boom:``), a `TestModel` is ``test:test``.
    Here they are ``function:boom`` and ``test``.
    """
    system = model.system
    name = model.model_name
    if name.startswith(f"{system}:"):
        name = name[len(system) + 1 :]
    name = shown_model_name(name)
    return system if not name or name == system else f"{system}:{name}"


def shown_model_name(name: str) -> str:
    """A model's name without its empty parts: a `FunctionModel`'s ``function:boom:`` is ``function:boom``."""
    return ":".join(part for part in name.split(":") if part)


def failure_reason(error: BaseException) -> str:
    """A model's failure in one short line: an HTTP error's status and what the provider said, a
    pydantic-ai error's first sentence (not its body, not its pointer to the docs), else the first line."""
    from pydantic_ai.exceptions import AgentRunError, ModelHTTPError

    error = leaf_exception(error)
    if isinstance(error, ModelHTTPError):
        said = _provider_said(error.body)
        reason = f"HTTP {error.status_code}" + (f": {said}" if said else "")
    elif isinstance(error, AgentRunError) and error.message.strip():
        reason = _sentence(error.message)
    else:
        reason = describe_exception(error)
    reason = (reason.strip().splitlines() or [type(error).__name__])[0]
    return reason if len(reason) <= _SHOWN_REASON else reason[: _SHOWN_REASON - 1] + "…"


def _provider_said(body: object) -> str:
    """The message in a provider's error body (``{"error": {"message": ...}}`` and its kin), else the body."""
    if isinstance(body, dict):
        inner = body.get("error")
        for said in (
            inner.get("message") if isinstance(inner, dict) else inner,
            body.get("message"),
            body.get("detail"),
        ):
            if isinstance(said, str) and said.strip():
                return said.strip()
        return json.dumps(body, ensure_ascii=False, default=str)
    return str(body).strip() if body else ""


async def model_run(model: Model, work: Awaitable[T]) -> T:
    """Await `work`, the workbench's run of `model` (a chat's turn, a sampling request): its failure as one line.

    A `WorkbenchError` (alone or the first leaf of an exception group) is raised as it is; any other
    exception is the model's: `ModelError` (`Model 'openai:gpt-4o' failed: <reason>`). Either is raised
    without a chain (ipykernel hangs on a group in a chain). A cancel and Ctrl-C go through untouched.

    Args:
        model: the model `work` asks.
        work: what asks it.

    Returns:
        What `work` returns.

    Raises:
        ModelError: the model failed.
    """
    try:
        return await work
    except Exception as exc:
        leaf = leaf_exception(exc)
        failure = leaf if isinstance(leaf, WorkbenchError) else model_failed(model_label(model), failure_reason(leaf))
    raise_alone(failure)  # out of the `except`: no context


# ---- the model ------------------------------------------------------------------------------
class WorkbenchModel(WrapperModel):
    """A model whose turns a workbench records, replays and traces (`resolve_model` makes one).

    `spec` is what it was made from (a `Model` or a name); `host` the workbench's side.
    """

    def __init__(self, wrapped: Model, host: ModelHost, spec: Model | str) -> None:
        super().__init__(wrapped)
        self.host = host
        self.spec = spec

    @property
    def recorded_name(self) -> str:
        """The model's name in cassettes and traces: the name it was given, else `provider:model`."""
        return self.spec if isinstance(self.spec, str) else model_id(self.wrapped)

    def _turn(
        self,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        parameters: ModelRequestParameters,
        stream: bool,
    ) -> ModelExchange:
        number = next(self.host._numbers)
        return ModelExchange(number, self.recorded_name, messages, settings, parameters, stream)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        turn = self._turn(messages, model_settings, model_request_parameters, stream=False)
        replayed = await self.host.begin(turn)
        if replayed is not None:
            self.host.end(turn, replayed, replayed=True)
            return replayed
        try:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        except BaseException as exc:
            self.host.failed(turn, exc)
            raise
        self.host.end(turn, response, replayed=False)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        turn = self._turn(messages, model_settings, model_request_parameters, stream=True)
        replayed = await self.host.begin(turn)
        if replayed is not None:  # the answer is known: a stream of its parts
            self.host.end(turn, replayed, replayed=True)
            yield CompletedStreamedResponse(
                replayed, model_request_parameters=model_request_parameters, replay_events=True
            )
            return
        try:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream:
                yield stream
                response = stream.get()
        except BaseException as exc:
            self.host.failed(turn, exc)
            raise
        self.host.end(turn, response, replayed=False)
