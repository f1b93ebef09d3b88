"""`Workbench`: the face the magics, the widgets and `serve` use.

A thin face over the async core (`core.Core`) that lives on the loop thread
(`runtime.LoopThread`). Sync methods hand the core a coroutine and wait (Ctrl-C cancels it);
`acall`/`aopen`/`aclose` await it from another event loop; reads (`status`, `toolboxes`,
`tools`, `search`) use the core's immutable snapshot and never touch loop-owned state.

This module holds the settings and the config. The rest is done by collaborators that
`__init__` builds, each a plain class in the module of its concept, all sharing one `Context`
(context.py): toolboxes and lookups (opening.py's `Toolboxes`), calls and started work
(calling.py's `Calls`), traces, cassettes and exports (records.py), resources, prompts and skills
(server_features.py), the client side of MCP (client_features.py), toolsets (toolsets.py), chat
and evaluations (chat.py, evaluation.py), schema portability and context cost. Each of their
public names is a one-line delegation here (`call = delegate(Calls.call, to="_calls")`,
api/delegation.py).
"""

from __future__ import annotations

import atexit
import logging
import os
import weakref
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from traitlets import Any as TraitAny
from traitlets import Bool, CaselessStrEnum, Float, Int, Unicode, default, observe
from traitlets.config import Config, Configurable

from workbench_magic.api.asking import waiting_channel
from workbench_magic.api.batches.dask_map import PartitionSpec, map_dask, map_partition
from workbench_magic.api.calling import Calls
from workbench_magic.api.context import Context
from workbench_magic.api.delegation import delegate, delegate_property
from workbench_magic.api.features.client_features import ClientFeatures
from workbench_magic.api.features.server_features import ServerFeatures
from workbench_magic.api.judging.evaluations import Evaluations
from workbench_magic.api.judging.portability import Portability
from workbench_magic.api.models.chat import Chat, TurnSettings
from workbench_magic.api.models.context_cost import ContextCosts
from workbench_magic.api.models.resolving import ModelOrName
from workbench_magic.api.records.recording import Records
from workbench_magic.api.toolboxes.handles import OpenedToolbox
from workbench_magic.api.toolboxes.opening import Toolboxes
from workbench_magic.api.toolsets.making import Toolsets
from workbench_magic.engine.cassette_deck import CassetteDeck
from workbench_magic.engine.clientside import LOG_LEVELS
from workbench_magic.engine.core import Core, Options
from workbench_magic.engine.history import HISTORY_BYTES
from workbench_magic.engine.runtime import Call, LoopThread, at_the_caller
from workbench_magic.vocabulary.errors import (
    UsageError,
    WorkbenchError,
)
from workbench_magic.vocabulary.events import Event
from workbench_magic.vocabulary.listings import (
    ToolInfo,
)

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from workbench_magic.api.presenting import Presenters
    from workbench_magic.config.settings import ServerConfig, ToolboxConfig, WorkbenchConfig
    from workbench_magic.engine.clientside import AuthorizationHandler, ElicitationHandler, SamplingHandler

logger = logging.getLogger("workbench_magic")
T = TypeVar("T")


__all__ = ["Call", "OpenedToolbox", "Workbench"]


_instances: weakref.WeakSet[Workbench] = weakref.WeakSet()


def _map_partition(partition: Any, spec: PartitionSpec) -> Any:
    """One partition of a `wb.map` over a Dask DataFrame, where Dask runs it (dask_map.py): a
    function of this module, so that a worker that unpickles it has `Workbench` to make its own."""
    return map_partition(lambda config: Workbench(config=config), partition, spec)


def _close_everything() -> None:
    for wb in list(_instances):
        try:
            wb.close_all()
        except BaseException:
            pass


atexit.register(_close_everything)


class Workbench(
    Configurable,
):
    """Toolboxes of MCP servers, opened on demand, called from Python.

    `Workbench.shared()` is the kernel-wide instance the magics use; `Workbench(config=...)`
    makes an independent one (a path, a dict, a `WorkbenchConfig`, or None to discover).
    Settings are traitlets (`%config Workbench.timeout = 60`).

    Args:
        config: where the toolboxes come from: a config file's path, a dict of its content, a
            `WorkbenchConfig`, a traitlets `Config` (settings only: the toolboxes are then discovered), or
            None to discover the config on first use (`config_path`; unset: `$WORKBENCH_CONFIG`,
            `./workbench-config.json`, the embedded demo). An explicit config is loaded and checked now.
        sampling_handler: what answers servers' sampling requests: a function, a pydantic-ai `Model` or a
            `"provider:model"` name, or `"ask"` (see `sampling_handler`).
        elicitation_handler: what answers servers' questions (see `elicitation_handler`).
        authorization_handler: what gets the person to an OAuth authorization link (see
            `authorization_handler`).
        roots: the roots servers are told, paths or `file://` URIs (see `roots`).
        record: record to a new cassette at this path from the start (see `record`).
        replay: answer the toolboxes recorded in the cassette at this path from it (see `replay`).
        replay_mode: the mode of `replay`: `"strict"`, or `"auto"` (what the cassette lacks goes to the
            live servers).
        presenters: how it shows its work (see `presenters`); None: the notebook's.
        **kwargs: traitlets settings (`Workbench(timeout=30)`) and the keywords of `Configurable`.

    Raises:
        ConfigError: an explicit `config` cannot be read or is invalid; nothing was started.

    Example:
        ```python
        from workbench_magic import Workbench

        wb = Workbench()  # discovers its config on first use; Workbench("config.json") reads that file
        wb.open("demo")
        wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 3}).data
        ```
    """

    timeout = Float(60.0, help="Default seconds per tool call (a server's `timeout` and --timeout win).").tag(
        config=True
    )
    connect_timeout = Float(30.0, help="Seconds a server may take to start and answer the handshake.").tag(config=True)
    raise_on_error = Bool(True, help="%%use_tool raises ToolError when a tool reports an error.").tag(config=True)
    validate_arguments = Bool(True, help="Check arguments against the tool's input schema first.").tag(config=True)
    display_limit = Int(50, help="Rows shown in tables of tools, records and history.").tag(config=True)
    history_limit = Int(10_000, help="Calls kept in `history` (oldest first out).").tag(config=True)
    history_bytes = Int(
        HISTORY_BYTES,
        help="Bytes of arguments and answers `history` keeps whole (about: characters of their JSON); older "
        "calls keep their summary line (identifier, arguments shortened, elapsed, ok), their answer dropped.",
    ).tag(config=True)
    server_log_level = CaselessStrEnum(
        LOG_LEVELS, default_value="info", help="Lowest level of the log messages servers are asked to send."
    ).tag(config=True)
    render_apps = Bool(True, help="Offer servers the MCP Apps extension and render tool UIs in the notebook.").tag(
        config=True
    )
    map_cluster = TraitAny(
        None,
        allow_none=True,
        help="The distributed.Client a wb.map over a Dask DataFrame runs on (None: Dask's default scheduler).",
    )
    lazy_servers = Bool(
        False,
        help="Start servers on first use, listing them from their cached catalog until then (a server's or "
        'toolbox\'s "start" wins).',
    ).tag(config=True)
    config_path = Unicode(
        None, allow_none=True, help="Config file; unset = $WORKBENCH_CONFIG, ./workbench-config.json, demo."
    ).tag(config=True)
    confirm_destructive = Bool(
        True,
        help=(
            "wb.chat and the toolsets (wb.toolset, wb.langchain_tools, wb.openai_agents_tools) ask the person"
            " before a tool marked destructiveHint runs; with nobody to answer, it does not run (off: it just runs)."
        ),
    ).tag(config=True)
    tool_retries = Int(
        3,
        min=0,
        help="Times a model (wb.chat, %%chat, wb.evaluate) may call a tool again after a call with bad arguments, "
        "each time told the error; past it the turn stops, and its ChatTurn says so.",
    ).tag(config=True)
    chat_model = ModelOrName(
        None,
        allow_none=True,
        help='The model wb.chat and %%chat use when none is given: a pydantic-ai "provider:model" name '
        '("openai:gpt-4o"), or a pydantic-ai Model set as an attribute (wb.chat_model = model: a config '
        "copies its values, and a provider's model does not copy); unset = $WORKBENCH_MODEL.",
    ).tag(config=True)

    @default("chat_model")
    def _default_chat_model(self) -> str | None:
        return os.environ.get("WORKBENCH_MODEL") or None

    _shared: ClassVar[Workbench | None] = None

    def __init__(
        self,
        config: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | Config | None = None,
        *,
        sampling_handler: SamplingHandler | Model | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        authorization_handler: AuthorizationHandler | None = None,
        roots: list[str] | tuple[str, ...] | str | None = None,
        record: str | os.PathLike[str] | None = None,
        replay: str | os.PathLike[str] | None = None,
        replay_mode: str = "strict",
        presenters: Presenters | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(config, Config):
            super().__init__(config=config, **kwargs)
            config = None
        else:
            super().__init__(**kwargs)
        loop, deck = LoopThread.get(), CassetteDeck()  # the deck: record, replay, and the config the loop works from
        core = Core(Options(), connection_factory=deck.connection)  # options below, with the handlers
        self._context = Context(loop, core, deck, settings=lambda: self.settings, presenters=presenters)
        self._server = ServerFeatures(
            self._core, self._loop, settings=lambda: self.settings, timeout=lambda: self.timeout
        )
        self._client = ClientFeatures(
            self._core,
            self._loop,
            settings=lambda: self.settings,
            on_change=self._push_options,
            model_sampler=self._model_sampler,
            roots=roots,
        )
        self._toolboxes: Toolboxes[Workbench] = Toolboxes(self._context, self)
        self._records = Records(self._context, self)
        self._calls = Calls(self._context, self, render_apps=lambda: self.render_apps, map_dask=self._map_dask)
        self._toolsets = Toolsets(self._context, self, self._server.skills_named)
        self._portability = Portability(self._toolsets)
        turns = TurnSettings(self._resolve_model, lambda: self.confirm_destructive, lambda: self.tool_retries)
        self._chat = Chat(self._context, self._toolsets, self._server.skills_named, turns)
        self._evaluations = Evaluations(self._context, self._toolsets, self._chat, self)
        self._context_costs = ContextCosts(self._toolsets, self.opened, lambda: self.chat_model)
        self._core.set_options(self._options())  # the loop has not seen this core yet
        if elicitation_handler is not None:
            self.elicitation_handler = elicitation_handler
        if authorization_handler is not None:
            self.authorization_handler = authorization_handler
        self._source = config
        self._added: Mapping[tuple[str, str], ServerConfig] = MappingProxyType({})
        """The config of each server added from the notebook (its object is the core's)."""
        self._imported: Mapping[str, ToolboxConfig] = MappingProxyType({})
        """The toolboxes imported from other clients' configs this session (`import_toolbox`)."""
        self._loaded: WorkbenchConfig | None = None
        """The config as read from its source, without the notebook's servers."""
        if config is not None:  # an explicit config is loaded (and checked) now; discovery waits for first use
            self._use(self._load(config))
        _instances.add(self)
        self._begin(replay, replay_mode, sampling_handler, record)

    def _begin(
        self,
        replay: str | os.PathLike[str] | None,
        replay_mode: str,
        sampling_handler: SamplingHandler | Model | None,
        record: str | os.PathLike[str] | None,
    ) -> None:
        """What `__init__` was asked to begin with, in order: the replay, the sampling handler, the record."""
        if replay is not None:
            self.replay(replay, mode=replay_mode)
        if sampling_handler is not None:  # after the replay: a model name then needs no key
            self.sampling_handler = sampling_handler
        if record is not None:
            self.record(record)

    def _resolve_model(self, model: Model | str | None) -> Model:
        from workbench_magic.api.models.resolving import resolve_model

        return resolve_model(self, model)

    @property
    def _loop(self) -> LoopThread:
        return self._context.loop

    @property
    def _core(self) -> Core:
        return self._context.core

    @property
    def _deck(self) -> CassetteDeck:
        return self._context.deck

    def _model_sampler(self, model: Model | str) -> SamplingHandler:
        from workbench_magic.api.models.resolving import ModelSampler

        return ModelSampler(self, model)

    # ---- settings -----------------------------------------------------------------------
    def _options(self) -> Options:
        return Options(
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            validate_arguments=self.validate_arguments,
            history_limit=self.history_limit,
            history_bytes=self.history_bytes,
            server_log_level=self.server_log_level,
            render_apps=self.render_apps,
            lazy_servers=self.lazy_servers,
            **self._client.handlers,
        )

    @observe(
        "timeout",
        "connect_timeout",
        "validate_arguments",
        "history_limit",
        "history_bytes",
        "server_log_level",
        "render_apps",
        "lazy_servers",
    )
    def _options_changed(self, change: Any) -> None:
        self._push_options()

    def _push_options(self) -> None:
        context: Context | None = getattr(self, "_context", None)  # None: traits set before __init__ made it
        if context is not None:
            # Queued in order: a call made after this assignment sees the new options.
            context.loop.loop.call_soon_threadsafe(context.core.set_options, self._options())

    def _load(self, source: Any) -> WorkbenchConfig:
        from workbench_magic.config.discovery import load_config
        from workbench_magic.config.parser import parse_config
        from workbench_magic.config.settings import WorkbenchConfig

        if isinstance(source, WorkbenchConfig):
            return load_config(source)
        if isinstance(source, Mapping):
            return parse_config(dict(source), "<dict>")
        return load_config(source if source is not None else self.config_path)

    @observe("config_path")
    def _config_path_changed(self, change: Any) -> None:
        if hasattr(self, "_loaded"):
            self.load_config(change["new"])

    @property
    def settings(self) -> WorkbenchConfig:
        """The loaded toolbox config (an immutable value the loop replaces).

        It has the servers added from the notebook and the toolboxes and servers only the replayed
        cassettes know. The first read discovers the config when none was given.

        Raises:
            ConfigError: the config found on first use cannot be read or is invalid.
        """
        config = self._deck.config
        if config is None:  # first use: discover the config now
            config = self._use(self._load(self._source))
        return config

    def _use(
        self, loaded: WorkbenchConfig, added: Mapping[tuple[str, str], ServerConfig] | None = None
    ) -> WorkbenchConfig:
        """Work from `loaded` plus the notebook's servers (`added`, else those added before).

        The whole is checked first (`ConfigError`: nothing changes); the loop's deck takes it,
        with the cassettes of its toolboxes' `"replay"` (read here, not on the loop).
        """
        from workbench_magic.config.settings import with_server, with_toolbox
        from workbench_magic.engine.cassette_deck import read_config_replays

        added = self._added if added is None else MappingProxyType(dict(added))
        config = loaded
        for box, imported in self._imported.items():
            config = with_toolbox(config, box, imported)
        for (toolbox, name), server in added.items():
            config = with_server(config, toolbox, name, server)
        deck = self._deck
        read = read_config_replays(config, deck.config_replays)
        merged = self._loop.run_sync(lambda: deck.use_config(config, read))
        self._loaded, self._added = loaded, added
        return merged

    @property
    def config_source(self) -> str:
        """Where the config came from (a path or `<embedded default>`)."""
        return self.settings.source

    def load_config(self, source: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | None) -> None:
        """Load another config.

        Open toolboxes stay open until closed; servers added from the notebook stay.

        Args:
            source: a config file's path, a dict of its content, a `WorkbenchConfig`, or None to discover
                it (`config_path`; unset: `$WORKBENCH_CONFIG`, `./workbench-config.json`, the embedded demo).

        Raises:
            ConfigError: the config cannot be read or is invalid; nothing changes.
        """
        self._use(self._load(source))
        self._source = source

    @classmethod
    def shared(cls) -> Workbench:
        """The kernel-wide instance (created on first use)."""
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Hear of changes: `ToolsChanged`, `ResourcesChanged`, `PromptsChanged`, `StatusChanged`, `ToolboxClosed`.

        All five are importable from `workbench_magic`. `callback(event)` runs on the workbench loop
        thread: it must not block, and must hand anything it does with widgets to the kernel thread.

        Args:
            callback: called with each event.

        Returns:
            The unsubscribe: calling it stops the callback.

        Example:
            ```python
            from workbench_magic import ToolsChanged

            def heard(event):
                if isinstance(event, ToolsChanged):
                    print(f"new tools in {event.toolbox}/{event.server}")

            unsubscribe = wb.subscribe(heard)
            unsubscribe()
            ```
        """
        core = self._core
        self._loop.run_sync(lambda: core.subscribe(callback))

        def unsubscribe() -> None:
            if self._loop.alive:
                self._loop.loop.call_soon_threadsafe(core.unsubscribe, callback)

        return unsubscribe

    @property
    def subscriber_count(self) -> int:
        """How many subscribers are registered (for leak checks)."""
        core = self._core
        return self._loop.run_sync(lambda: core.subscriber_count)

    # ---- the loop and the presenters (context.py) -----------------------------------------------------
    presenters = delegate_property(Context.presenters, to="_context")
    run_on_loop = delegate(Context.run_on_loop, to="_context")
    in_loop_thread = delegate_property(Context.in_loop_thread, to="_context")

    # ---- the client side of MCP (client_features.py) ------------------------------------------
    sampling_handler = delegate_property(ClientFeatures.sampling_handler, to="_client")
    elicitation_handler = delegate_property(ClientFeatures.elicitation_handler, to="_client")
    authorization_handler = delegate_property(ClientFeatures.authorization_handler, to="_client")
    roots = delegate_property(ClientFeatures.roots, to="_client")
    set_server_log_level = delegate(ClientFeatures.set_server_log_level, to="_client")
    aset_server_log_level = delegate(ClientFeatures.aset_server_log_level, to="_client")
    set_roots = delegate(ClientFeatures.set_roots, to="_client")
    set_roots_source = delegate(ClientFeatures.set_roots_source, to="_client")
    roots_source_changed = delegate(ClientFeatures.roots_source_changed, to="_client")
    logout = delegate(ClientFeatures.logout, to="_client")

    # ---- toolboxes, their state and lookups (opening.py) ----------------------------------------
    toolboxes = delegate(Toolboxes.toolboxes, to="_toolboxes")
    open = delegate(Toolboxes.open, to="_toolboxes")
    aopen = delegate(Toolboxes.aopen, to="_toolboxes")
    is_open = delegate(Toolboxes.is_open, to="_toolboxes")
    toolbox_state = delegate(Toolboxes.toolbox_state, to="_toolboxes")
    opened = delegate(Toolboxes.opened, to="_toolboxes")
    close = delegate(Toolboxes.close, to="_toolboxes")
    close_all = delegate(Toolboxes.close_all, to="_toolboxes")
    aclose_all = delegate(Toolboxes.aclose_all, to="_toolboxes")
    aclose = delegate(Toolboxes.aclose, to="_toolboxes")
    reconnect = delegate(Toolboxes.reconnect, to="_toolboxes")
    logs = delegate(Toolboxes.logs, to="_toolboxes")
    doctor = delegate(Toolboxes.doctor, to="_toolboxes")
    status = delegate(Toolboxes.status, to="_toolboxes")
    history = delegate_property(Toolboxes.history, to="_toolboxes")
    tool = delegate(Toolboxes.tool, to="_toolboxes")
    tools = delegate(Toolboxes.tools, to="_toolboxes")
    search = delegate(Toolboxes.search, to="_toolboxes")

    # ---- records: traces, cassettes, exports, snapshots (records.py) -------------------------------
    trace = delegate(Records.trace, to="_records")
    record = delegate(Records.record, to="_records")
    replay = delegate(Records.replay, to="_records")
    recordings = delegate_property(Records.recordings, to="_records")
    replays = delegate_property(Records.replays, to="_records")
    export_notebook = delegate(Records.export_notebook, to="_records")
    export_tests = delegate(Records.export_tests, to="_records")
    snapshot = delegate(Records.snapshot, to="_records")
    diff = staticmethod(Records.diff)

    # ---- calls and started work (calling.py) ---------------------------------------------------------
    call = delegate(Calls.call, to="_calls")
    submit = delegate(Calls.submit, to="_calls")
    acall = delegate(Calls.acall, to="_calls")
    map = delegate(Calls.map, to="_calls")
    start = delegate(Calls.start, to="_calls")
    tasks = delegate(Calls.tasks, to="_calls")
    task = delegate(Calls.task, to="_calls")

    # ---- toolsets for agent frameworks (toolsets.py) ------------------------------------------------
    toolset = delegate(Toolsets.toolset, to="_toolsets")
    langchain_tools = delegate(Toolsets.langchain_tools, to="_toolsets")
    openai_agents_tools = delegate(Toolsets.openai_agents_tools, to="_toolsets")

    # ---- models in the loop: chat and evaluations (chat.py, evaluation.py) ----------------------------
    chat = delegate(Chat.chat, to="_chat")
    chat_reset = delegate(Chat.chat_reset, to="_chat")
    evaluate = delegate(Evaluations.evaluate, to="_evaluations")
    last_evaluation = delegate_property(Evaluations.last_evaluation, to="_evaluations")

    # ---- a toolbox's cost in a model's context (context_cost.py) --------------------------------------
    context_cost = delegate(ContextCosts.context_cost, to="_context_costs")

    # ---- whether models' providers accept the tools' schemas (portability.py) ------------------------
    check_schemas = delegate(Portability.check_schemas, to="_portability")

    # ---- what servers offer beyond tools (server_features.py) ------------------------------
    resources = delegate(ServerFeatures.resources, to="_server")
    aresources = delegate(ServerFeatures.aresources, to="_server")
    read_resource = delegate(ServerFeatures.read_resource, to="_server")
    aread_resource = delegate(ServerFeatures.aread_resource, to="_server")
    prompts = delegate(ServerFeatures.prompts, to="_server")
    aprompts = delegate(ServerFeatures.aprompts, to="_server")
    get_prompt = delegate(ServerFeatures.get_prompt, to="_server")
    aget_prompt = delegate(ServerFeatures.aget_prompt, to="_server")
    complete = delegate(ServerFeatures.complete, to="_server")
    acomplete = delegate(ServerFeatures.acomplete, to="_server")
    watch = delegate(ServerFeatures.watch, to="_server")
    awatch = delegate(ServerFeatures.awatch, to="_server")
    skills = delegate(ServerFeatures.skills, to="_server")
    skill = delegate(ServerFeatures.skill, to="_server")
    askills = delegate(ServerFeatures.askills, to="_server")
    askill = delegate(ServerFeatures.askill, to="_server")

    # ---- servers added from the notebook ---------------------------------------------------
    @at_the_caller
    def add_server(self, target: str, server: Any) -> OpenedToolbox[Workbench]:
        """Add a server written in the notebook and connect it, in-process.

        The server (an `MCPServer`, or a callable returning one) joins as ``"toolbox/name"``; the
        toolbox is created when needed. Adding the same name again replaces the server: its tools are
        listed anew, explorers follow, the old one ends. Notebook servers stay across `load_config`.

        Args:
            target: ``"toolbox/name"``: the toolbox it joins and its name there.
            server: an `MCPServer` (or a low-level `Server`), or a callable returning one.

        Returns:
            The live view of the server's toolbox (`OpenedToolbox`).

        Raises:
            UsageError: `target` is not ``"toolbox/name"``, or `server` is neither a server nor callable.

        Example:
            ```python
            from mcp.server import MCPServer

            lab = MCPServer("lab")

            @lab.tool()
            def double(x: int) -> int:
                return 2 * x

            wb.add_server("notebook/lab", lab)
            wb.call("notebook/lab/double", {"x": 21}).data
            ```
        """
        toolbox, name = self._new_server_target(target)
        from workbench_magic.config.settings import ServerConfig
        from workbench_magic.engine.inprocess import is_server

        if not (is_server(server) or callable(server)):
            raise UsageError(
                f"add_server needs an MCPServer (or a callable returning one), got {type(server).__name__}"
            )
        label = "".join(c if c.isalnum() else "_" for c in name)
        config = ServerConfig(python=f"__main__:{label if not label[0].isdigit() else '_' + label}")
        loaded = self._loaded if self._loaded is not None else self._load(self._source)
        settings = self._use(loaded, {**self._added, (toolbox, name): config})  # a bad name changes nothing
        self._context.run(self._core.add_server(toolbox, name, server, settings))
        return OpenedToolbox(self, toolbox)

    def import_toolbox(
        self, source: str | os.PathLike[str], *, name: str | None = None, prefer: str | None = None
    ) -> str:
        """Add a toolbox for this session from another client's MCP config, or a registry entry.

        Servers keep their names; the client's secret references (`${input:ID}`, `${env:NAME}`,
        `${NAME}`) become the workbench's `${VAR}` references, read from the environment (the magic
        `%workbench import` asks for one that is not set): no secret is written anywhere. The
        toolbox stays across `load_config`.

        Args:
            source: a client: `"claude-desktop"`, `"claude-code"`, `"cursor"`, `"vscode"`, `"windsurf"`,
                `"gemini-cli"`, `"codex"` (read where it keeps its config, under the home folder and in
                the current project folder); a path to one of their config files (its format told from
                its content); or a path to an MCP registry `server.json`.
            name: the toolbox's name (default: the client's name, or the last part of the
                `server.json`'s server name).
            prefer: of a `server.json` that offers both, `"package"` (run it here) or `"remote"`
                (connect to its URL); default: a package whose runtime is on PATH, else a remote.

        Returns:
            The toolbox's name: `wb.open(name)` opens it.

        Raises:
            ConfigError: the source is unknown, cannot be read, has no servers, or names a variable
                that is not set (its `.variable`); nothing changes.

        Example:
            ```python
            import workbench_magic

            workbench_magic.known_clients()  # which clients' configs this machine has
            name = wb.import_toolbox("cursor")
            wb.open(name)
            ```
        """
        from pathlib import Path

        from workbench_magic.config.imports import read_client
        from workbench_magic.config.parser import parse_config

        if prefer not in (None, "package", "remote"):
            raise UsageError(f"prefer is 'package' or 'remote', not {prefer!r}")
        imported = read_client(os.fspath(source), home=Path.home(), project=Path.cwd(), prefer=prefer)  # type: ignore[arg-type]
        box = name or imported.name
        where = ", ".join(str(p) for p in imported.source)
        raw = {"description": f"imported from {where}", "mcpServers": imported.servers}
        toolbox = parse_config({"toolboxes": {box: raw}}, f"<import {os.fspath(source)}>").toolboxes[box]
        before = self._imported
        self._imported = MappingProxyType({**before, box: toolbox})
        try:
            self._use(self._loaded if self._loaded is not None else self._load(self._source))
        except WorkbenchError:
            self._imported = before
            raise
        return box

    @staticmethod
    def _new_server_target(target: Any) -> tuple[str, str]:
        parts = target.split("/") if isinstance(target, str) else []
        if len(parts) != 2 or not all(parts):
            raise UsageError(f"add_server needs 'toolbox/name', got {target!r}")
        return parts[0], parts[1]

    @property
    def notebook_servers(self) -> frozenset[tuple[str, str]]:
        """The `(toolbox, server)` of each server added from the notebook (`add_server`)."""
        return frozenset(self._added)

    def _map_dask(self, target: Any, frame: Any, *, concurrency: int, timeout: float | None, client: Any) -> Any:
        """`map` over a Dask DataFrame (dask_map.py), on `client`, else `map_cluster`."""
        chosen = client if client is not None else self.map_cluster
        calls, context = self._calls, self._context

        def lookup(ident: Any) -> ToolInfo:
            return context.run(calls.lookup(ident), waiting_channel())  # type: ignore[no-any-return]

        return map_dask(
            self, lookup, target, frame, _map_partition, concurrency=concurrency, timeout=timeout, client=chosen
        )

    def __repr__(self) -> str:
        opened = ", ".join(n for n, s in self._core.state.items() if s.open) or "none"
        try:
            source = self.config_source
        except WorkbenchError as exc:
            source = f"<invalid: {exc}>"
        return f"<Workbench config={source!r} open={opened}>"
