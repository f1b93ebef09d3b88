"""Models in the loop: which model answers (`resolve_model`), and a model as the sampling handler.

`resolve_model(wb, model)` takes a pydantic-ai `Model`, a ``"provider:model"`` name (pydantic-ai's
`infer_model`), or None for `Workbench.chat_model` (a name or a `Model`; ``$WORKBENCH_MODEL``), and
returns it wrapped for the workbench (engine/model_exchanges.py): while `wb.record(path)` records, each
model request and its response go to the cassette beside the MCP calls; while a replayed cassette
holds model turns, they answer from it (no key, no network: the provider is not even built);
inside `wb.trace()` each turn shows on a lifeline of its own, ``"model"``.

`wb.sampling_handler` also takes a model (a `Model` or a name): `ModelSampler` answers servers'
sampling requests with it (api/models/sampling.py maps the request and the answer).

Nothing here imports pydantic-ai before a model is asked for: `import workbench_magic` stays cheap.
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from traitlets import TraitType

from workbench_magic.api.extras import require_extra
from workbench_magic.vocabulary.errors import UsageError, WorkbenchError

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from workbench_magic.api.context import Context
    from workbench_magic.engine.model_exchanges import ModelHost

__all__ = ["NO_MODEL", "ModelOrName", "ModelSampler", "is_model", "model_host", "resolve_model"]

NO_MODEL = (
    'No model is set: set one with wb.chat_model = "openai:gpt-4o" or $WORKBENCH_MODEL (or pass model=...); '
    'offline, with no key: "test" (pydantic-ai\'s TestModel, which calls every tool once, then answers with what '
    "they returned), a scripted pydantic-ai FunctionModel, or a cassette that recorded a chat (wb.replay(path))"
)
"""What `resolve_model` says when no model is given and none is set: how to set one, and how to chat offline."""


def is_model(value: object) -> bool:
    """Whether `value` is a pydantic-ai `Model` (without importing pydantic-ai when it is not loaded)."""
    models = sys.modules.get("pydantic_ai.models")
    return models is not None and isinstance(value, models.Model)


class ModelOrName(TraitType[Any, Any]):
    """A trait holding a model: a ``"provider:model"`` name or a pydantic-ai `Model` (`Workbench.chat_model`).

    A name is kept as it is (checked when a model is asked for: `resolve_model`); an object must be a
    pydantic-ai `Model`, which is told without importing pydantic-ai (one exists only once it is loaded).
    """

    info_text = 'a "provider:model" name or a pydantic-ai Model'

    def validate(self, obj: Any, value: Any) -> Any:
        """`value` when it is a name or a `Model`; else traitlets' `TraitError` saying what is expected."""
        if isinstance(value, str) or is_model(value):
            return value
        self.error(obj, value)


class ModelOwner(Protocol):
    """The workbench whose models these are (api/workbench.py's `Workbench`, named without importing it)."""

    _context: Context
    chat_model: Any
    timeout: float

    @property
    def settings(self) -> Any: ...


def model_host(wb: ModelOwner) -> ModelHost:
    """The one `ModelHost` of a workbench: its loop, cassette deck and core (its wire tap, its servers)."""
    return wb._context.model_host


def resolve_model(wb: ModelOwner, model: Model | str | None = None) -> Model:
    """The model that answers, wrapped for the workbench: recorded, replayed and traced.

    Args:
        wb: the workbench whose cassettes and traces the model's turns join.
        model: a pydantic-ai `Model`, a ``"provider:model"`` name (``"openai:gpt-4o"``,
            ``"anthropic:claude-sonnet-4-5"``; ``"test"`` is pydantic-ai's `TestModel`, no key: it calls every
            tool once with arguments made from its schema, then answers with what they returned), or None:
            `wb.chat_model` (a name or a `Model`); when that is unset too and a replayed cassette holds model
            turns, the model they were recorded with.

    Returns:
        A pydantic-ai `Model` (a `WrapperModel`). A name is not built while a replayed cassette holds
        model turns: replaying needs neither the provider's package nor its key.

    Raises:
        UsageError: no model given and none set (one line says how to set one); an unknown name; the
            provider lacks its key.
        MissingExtraError: pydantic-ai is not installed, or the provider's package is not.

    Example:
        ```python
        from pydantic_ai import Agent
        from workbench_magic.api.models.resolving import resolve_model

        wb.chat_model = "openai:gpt-4o"
        agent = Agent(resolve_model(wb), toolsets=[wb.toolset("demo")])
        ```
    """
    require_extra("pydantic_ai", extra="pydantic-ai", feature="A model")
    from workbench_magic.engine.model_exchanges import UnresolvedModel, WorkbenchModel, infer

    host = model_host(wb)
    if isinstance(model, WorkbenchModel):  # another workbench's: the same model, this one's turns
        return model if model.host is host else WorkbenchModel(model.wrapped, host, model.spec)
    if model is None:
        _load_config_replays(wb)
        model = getattr(wb, "chat_model", None)
        if model is None or (isinstance(model, str) and not model.strip()):
            model = host.recorded_model_name()
        if not model:
            raise UsageError(NO_MODEL)
    if isinstance(model, str):
        name = model.strip()
        if not name:
            raise UsageError(NO_MODEL)
        _load_config_replays(wb)
        inner = UnresolvedModel(name) if host.replaying() else infer(name)
        return WorkbenchModel(inner, host, name)
    if not is_model(model):
        raise UsageError(f'A model is a pydantic-ai Model or a "provider:model" name, not a {type(model).__name__}')
    return WorkbenchModel(model, host, model)


def _load_config_replays(wb: ModelOwner) -> None:
    """Read the config now if it is still to be discovered: its toolboxes' `"replay"` cassettes may
    hold model turns (then a name needs no key)."""
    try:
        wb.settings  # noqa: B018  (reading it discovers and loads the config)
    except WorkbenchError:
        pass  # an invalid config says so where it is used


class ModelSampler:
    """A sampling handler that asks a model: what `wb.sampling_handler = model` sets.

    The engine calls it on the loop thread (it is async): the model request runs there without
    blocking it, a cancelled sampling request cancels it, and it takes at most the workbench's
    `timeout`. api/models/sampling.py maps the request and the answer.

    Args:
        wb: the workbench whose servers it answers (its cassettes and traces get the model's turns).
        model: a pydantic-ai `Model` or a `"provider:model"` name, as `resolve_model` takes it.

    Raises:
        UsageError: the model cannot be used (see `resolve_model`).
        MissingExtraError: pydantic-ai, or the provider's package, is not installed.
    """

    def __init__(self, wb: ModelOwner, model: Model | str) -> None:
        self.spec = model
        """What was set: the `Model` or the name."""
        self.model = resolve_model(wb, model)
        self._wb = weakref.ref(wb)  # the workbench holds its handler: no cycle

    @property
    def timeout(self) -> float | None:
        """Seconds the model may take to answer: the workbench's `timeout`, read at each request."""
        timeout = getattr(self._wb(), "timeout", None)
        return float(timeout) if timeout else None

    async def __call__(self, messages: list[Any], params: Any) -> Any:
        from workbench_magic.api.models.sampling import answer_sampling

        return await answer_sampling(self.model, params, timeout=self.timeout)

    def __repr__(self) -> str:
        return f"<ModelSampler {self.spec!r}>"
