"""IPython magics: `%workbench`, `%%use_tool` and `%use_tool`, driving `Workbench.shared()`.

Loading the extension imports neither the MCP SDK nor pydantic; both load with the first
command that needs them. Every `WorkbenchError` shows as one line (`ToolError: ...`), never
as a traceback through our internals. What the subcommands accept (and their help) is in
subcommands.py; Tab completion in completion.py.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand

from workbench_magic.notebook.cellargs import parse_body, parse_pairs, substitute
from workbench_magic.notebook.completion import MagicCompleter, make_matcher
from workbench_magic.notebook.subcommands import SUBCOMMANDS, MagicParser, help_text, split_line
from workbench_magic.vocabulary.errors import ConfigError, UsageError, WorkbenchError, raise_alone
from workbench_magic.vocabulary.rendering import description_text

if TYPE_CHECKING:
    from types import TracebackType

    from IPython.core.interactiveshell import InteractiveShell

    from workbench_magic.api.records.tracing import Trace
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.results import ToolResult


# ---- the magics -----------------------------------------------------------------------
@magics_class
class WorkbenchMagics(Magics):
    """`%workbench`, `%%use_tool`, `%use_tool`."""

    def __init__(self, shell: InteractiveShell, workbench: Workbench | None = None) -> None:
        super().__init__(shell)
        self._workbench = workbench
        self._trace: Trace | None = None
        """The session's trace (`%workbench trace on`), recording or stopped."""

    @property
    def workbench(self) -> Workbench:
        if self._workbench is None:
            from workbench_magic.api.workbench import Workbench

            self._workbench = Workbench.shared()
        return self._workbench

    @property
    def namespace(self) -> dict[str, Any]:
        """The user's variables (`$name` in arguments, `-o NAME`, `%workbench add`)."""
        return self.shell.user_ns if self.shell is not None else {}

    # ---- %workbench ---------------------------------------------------------------------
    @line_magic("workbench")  # type: ignore[arg-type]  # IPython's decorator types are too narrow
    def workbench_magic(self, line: str) -> Any:
        """Toolboxes of MCP servers. `%workbench help` lists the subcommands."""
        argv = split_line(line)
        sub, args = (argv[0], argv[1:]) if argv else ("status", [])
        handler = getattr(self, f"_cmd_{sub}", None)
        if sub not in SUBCOMMANDS or handler is None:
            import difflib

            close = difflib.get_close_matches(sub, SUBCOMMANDS, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise_alone(UsageError(f"Unknown subcommand '{sub}'.{hint} Subcommands: {', '.join(SUBCOMMANDS)}"))
        return handler(args)

    def _parser(self, sub: str) -> MagicParser:
        return MagicParser(f"%workbench {sub}", f"See %workbench help {sub}")

    def _cmd_status(self, args: list[str]) -> Any:
        self._parser("status").parse(args)
        from workbench_magic.notebook.views import StatusView

        return StatusView(self.workbench)

    def _cmd_help(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TextView

        p = self._parser("help")
        p.add_argument("subcommand", nargs="?")
        ns = p.parse(args)
        text = help_text(ns.subcommand)
        return TextView(text) if ns.subcommand else TextView(text, title="MCP Workbench magics")

    def _cmd_config(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import ConfigView

        p = self._parser("config")
        p.add_argument("path", nargs="?")
        ns = p.parse(args)
        if ns.path:
            self.workbench.load_config(ns.path)
        return ConfigView(self.workbench.settings)

    def _cmd_list(self, args: list[str]) -> Any:
        self._parser("list").parse(args)
        return self.workbench.toolboxes()

    def _cmd_open(self, args: list[str]) -> Any:
        p = self._parser("open")
        p.add_argument("toolboxes", nargs="+")
        start = p.add_mutually_exclusive_group()
        start.add_argument("--lazy", dest="lazy", action="store_const", const=True, default=None)
        start.add_argument("--eager", dest="lazy", action="store_const", const=False)
        ns = p.parse(args)
        from workbench_magic.notebook.widgets import ExploredToolbox

        for name in ns.toolboxes:
            self.workbench.open(name, lazy=ns.lazy)
        boxes = [ExploredToolbox(self.workbench, name) for name in ns.toolboxes]
        return boxes[0] if len(boxes) == 1 else boxes

    def _cmd_import(self, args: list[str]) -> Any:
        p = self._parser("import")
        p.add_argument("source")
        p.add_argument("--as", dest="name", default=None)
        ns = p.parse(args)
        from workbench_magic.notebook.views import TextView

        name = self._import_asking(ns.source, ns.name)
        servers = ", ".join(self.workbench.settings.toolbox(name).mcp_servers)
        return TextView(f"Toolbox '{name}' imported from {ns.source}: {servers}. Open it: %workbench open {name}")

    def _import_asking(self, source: str, name: str | None) -> str:
        """`import_toolbox`, asking for each secret it names that is not set (kept in this process's
        environment for the session, never written); no answer (no stdin) is the one-line error."""
        asked: set[str] = set()
        while True:
            try:
                return self.workbench.import_toolbox(source, name=name)
            except ConfigError as error:
                variable = error.variable
                if variable is None or variable in asked or not (value := _ask_secret(variable, source)):
                    raise_alone(error)
                asked.add(variable)
                os.environ[variable] = value

    def _cmd_doctor(self, args: list[str]) -> Any:
        p = self._parser("doctor")
        p.add_argument("target")
        ns = p.parse(args)
        return self.workbench.doctor(ns.target)

    def _cmd_add(self, args: list[str]) -> Any:
        p = self._parser("add")
        p.add_argument("target")
        p.add_argument("variable")
        ns = p.parse(args)
        if ns.variable not in self.namespace:
            raise_alone(UsageError(f"Name '{ns.variable}' is not defined. Define the server in a cell first"))
        from workbench_magic.notebook.widgets import ExploredToolbox

        self.workbench.add_server(ns.target, self.namespace[ns.variable])
        return ExploredToolbox(self.workbench, ns.target.split("/")[0])

    def _cmd_close(self, args: list[str]) -> Any:
        p = self._parser("close")
        p.add_argument("toolboxes", nargs="*")
        p.add_argument("--all", action="store_true")
        ns = p.parse(args)
        if ns.all == bool(ns.toolboxes):
            raise_alone(UsageError("%workbench close: name toolboxes to close, or --all. See %workbench help close"))
        if ns.all:
            self.workbench.close_all()
        for name in ns.toolboxes:
            self.workbench.close(name)
        return None

    def _cmd_tools(self, args: list[str]) -> Any:
        p = self._parser("tools")
        p.add_argument("target", nargs="?")
        p.add_argument("--search", default=None)
        ns = p.parse(args)
        if ns.search is not None:
            return self.workbench.search(ns.search, ns.target)
        return self.workbench.tools(ns.target)

    def _cmd_describe(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import ToolDescription

        p = self._parser("describe")
        p.add_argument("tool")
        ns = p.parse(args)
        from workbench_magic.vocabulary.identifiers import parse_identifier

        ident = parse_identifier(ns.tool)
        if not self.workbench.is_open(ident.toolbox):
            self.workbench.open(ident.toolbox)
        return ToolDescription(self.workbench.tool(ident))

    def _cmd_explore(self, args: list[str]) -> Any:
        self._parser("explore").parse(args)
        from workbench_magic.notebook.widgets import Explorer

        return Explorer.of(self.workbench)

    def _cmd_resources(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TableView

        p = self._parser("resources")
        p.add_argument("target", nargs="?")
        ns = p.parse(args)
        rows = [
            (
                f"{r.toolbox}/{r.server}",
                r.uri,
                "template" if r.template else "resource",
                description_text(r.description),
            )
            for r in self.workbench.resources(ns.target)
        ]
        return TableView(("server", "uri", "kind", "description"), rows, "Resources", "(no resources)")

    def _cmd_skills(self, args: list[str]) -> Any:
        p = self._parser("skills")
        p.add_argument("target", nargs="?")
        ns = p.parse(args)
        return self.workbench.skills(ns.target)

    def _cmd_read(self, args: list[str]) -> Any:
        p = self._parser("read")
        p.add_argument("server")
        p.add_argument("uri")
        p.add_argument("pairs", nargs="*")
        ns = p.parse(args)
        variables = substitute(parse_pairs(ns.pairs), self.namespace)
        return self.workbench.read_resource(ns.server, ns.uri, **variables)

    def _cmd_prompts(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TableView

        p = self._parser("prompts")
        p.add_argument("target", nargs="?")
        ns = p.parse(args)
        rows = [
            (
                f"{pr.toolbox}/{pr.server}/{pr.name}",
                ", ".join(f"{n}{'' if req else '?'}" for n, req, _ in pr.arguments),
                description_text(pr.description),
            )
            for pr in self.workbench.prompts(ns.target)
        ]
        return TableView(("prompt", "arguments", "description"), rows, "Prompts", "(no prompts)")

    def _cmd_prompt(self, args: list[str]) -> Any:
        p = self._parser("prompt")
        p.add_argument("prompt")
        p.add_argument("pairs", nargs="*")
        ns = p.parse(args)
        arguments = substitute(parse_pairs(ns.pairs), self.namespace)
        return self.workbench.get_prompt(ns.prompt, arguments)

    def _cmd_reconnect(self, args: list[str]) -> Any:
        p = self._parser("reconnect")
        p.add_argument("target")
        ns = p.parse(args)
        return self.workbench.reconnect(ns.target)

    def _cmd_logs(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TextView

        p = self._parser("logs")
        p.add_argument("server")
        ns = p.parse(args)
        return TextView(self.workbench.logs(ns.server) or "(nothing on stderr)", title=f"log of {ns.server}")

    def _cmd_history(self, args: list[str]) -> Any:
        self._parser("history").parse(args)
        return self.workbench.history

    def _cmd_record(self, args: list[str]) -> Any:
        p = self._parser("record")
        p.add_argument("path")
        ns = p.parse(args)
        self.workbench.record(None if ns.path == "stop" else ns.path)
        return None

    def _cmd_replay(self, args: list[str]) -> Any:
        p = self._parser("replay")
        p.add_argument("path")
        p.add_argument("--auto", action="store_true")
        ns = p.parse(args)
        self.workbench.replay(ns.path, mode="auto" if ns.auto else "strict")
        return None

    def _cmd_export(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TextView

        p = self._parser("export")
        p.add_argument("path")
        p.add_argument("--replay", default=None)
        p.add_argument("--ignore", action="append", default=[])
        ns = p.parse(args)
        if ns.path.endswith(".py"):
            written = self.workbench.export_tests(ns.path, replay=ns.replay, ignore=ns.ignore)
            return TextView(f"Exported the session's calls as tests to {written} (run: pytest {written})")
        if ns.replay is not None or ns.ignore:
            raise UsageError("--replay and --ignore are for tests: %workbench export PATH.py [--replay CASSETTE]")
        return TextView(f"Exported the session to {self.workbench.export_notebook(ns.path)}")

    def _cmd_evaluate(self, args: list[str]) -> Any:
        from workbench_magic.api.judging.evaluations import read_cases

        p = self._parser("evaluate")
        p.add_argument("path")
        p.add_argument("--toolbox", default=None)
        p.add_argument("--model", default=None)
        p.add_argument("--runs", type=int, default=None)
        ns = p.parse(args)
        found = read_cases(ns.path)
        runs = ns.runs if ns.runs is not None else found.runs
        options: dict[str, Any] = {"runs": runs} if runs is not None else {}
        toolbox, model = ns.toolbox or found.toolbox, ns.model or found.model
        return self.workbench.evaluate(found.cases, toolbox=toolbox, model=model, **options)

    def _cmd_trace(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TextView

        p = self._parser("trace")
        p.add_argument("switch", nargs="?", choices=("on", "off"))
        p.add_argument("target", nargs="?")
        ns = p.parse(args)
        if ns.switch is None:  # argparse took any other first word as a wrong choice of switch
            if self._trace is None:
                return TextView("No trace yet: %workbench trace on [TOOLBOX[/SERVER]]")
            return self._trace
        if ns.switch == "off":
            if ns.target is not None:
                raise_alone(UsageError("%workbench trace off takes no target"))
            if self._trace is None or not self._trace.recording:
                return TextView("No trace is recording")
            return self._trace.stop()
        if self._trace is not None:
            self._trace.stop()
        self._trace = self.workbench.trace(ns.target)
        return TextView(f"Tracing {ns.target or 'every server'}: %workbench trace shows it, %workbench trace off stops")

    def _cmd_tasks(self, args: list[str]) -> Any:
        self._parser("tasks").parse(args)
        return self.workbench.tasks()

    def _cmd_cancel(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TextView

        p = self._parser("cancel")
        p.add_argument("id")
        ns = p.parse(args)
        handle = self.workbench.task(ns.id)
        if handle.cancel():
            return TextView(f"Cancelling {handle.id} ({handle.identifier})")
        return TextView(f"{handle.id} ({handle.identifier}) had ended: {handle.status}")

    # ---- %%use_tool / %use_tool -------------------------------------------------------------
    @no_var_expand  # $name is resolved by us, keeping the object's type
    @line_cell_magic("use_tool")  # type: ignore[arg-type]  # IPython's decorator types are too narrow
    def use_tool(self, line: str, cell: str | None = None) -> Any:
        """Call a tool: `%%use_tool dev/server/tool` with a YAML/JSON body, or `%use_tool ... key=value`."""
        magic = "%%use_tool" if cell is not None else "%use_tool"
        p = MagicParser(magic, "See %workbench help use_tool")
        p.add_argument("tool")
        p.add_argument("pairs", nargs="*")
        p.add_argument("-o", "--output", dest="output", default=None)
        p.add_argument("--timeout", type=float, default=None)
        p.add_argument("--no-raise", dest="no_raise", action="store_true")
        p.add_argument("--task", action="store_true")
        ns = p.parse(split_line(line))
        if cell is not None and ns.pairs:
            raise_alone(UsageError("%%use_tool takes its arguments from the cell body, not key=value words"))
        if ns.output is not None and not ns.output.isidentifier():
            raise_alone(UsageError(f"-o needs a Python variable name, got {ns.output!r}"))
        raw = parse_body(cell) if cell is not None else parse_pairs(ns.pairs)
        namespace = self.namespace
        arguments = substitute(raw, namespace)
        if ns.task:  # the handle at once: its line follows the work in this cell's output
            handle = self.workbench.start(ns.tool, arguments, timeout=ns.timeout)
            if ns.output:
                namespace[ns.output] = handle
            return handle
        result = self._call_with_progress(ns.tool, arguments, ns.timeout)
        if ns.output:
            namespace[ns.output] = result
        if result.is_error and self.workbench.raise_on_error and not ns.no_raise:
            from IPython.display import display

            display(result)
            raise_alone(result.to_error())
        return result

    def _call_with_progress(self, tool: str, arguments: dict[str, Any], timeout: float | None) -> ToolResult:
        """Call; progress notifications update one line of output in this cell."""
        from IPython.display import display

        from workbench_magic.notebook.views import TextView

        handle: Any = None

        def show(text: str) -> None:
            nonlocal handle
            if handle is None:
                handle = display(TextView(text), display_id=True)
            else:
                handle.update(TextView(text))

        def progress(value: float, total: float | None, message: str | None) -> None:
            share = f" ({value / total:.0%})" if total else ""
            show(f"{tool}: {value:g}{f'/{total:g}' if total else ''}{share} {message or ''}".rstrip())

        return self.workbench.call(tool, arguments, timeout=timeout, progress=progress, server_log=show)


# ---- extension entry points ---------------------------------------------------------------
_STATE: dict[int, dict[str, Any]] = {}


def _short_traceback(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: int | None = None
) -> list[str]:
    """One line for every `WorkbenchError`, in the notebook and the terminal alike; an interrupt
    shows the person's frames, none of the workbench's (`WORKBENCH_DEBUG=1`: every frame).

    IPython ignores what a custom handler returns, so it shows the line itself; ipykernel turns
    this into an `error` message (ename, evalue, a one-line traceback), so "Run all" stops.
    """
    from workbench_magic.engine.runtime import full_tracebacks

    if full_tracebacks():
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    elif isinstance(value, WorkbenchError):
        shell._showtraceback(etype, value, [f"{etype.__name__}: {value}"])
    else:
        shell.showtraceback((etype, value, _before_the_workbench(tb)), tb_offset=tb_offset)
    return []


def _before_the_workbench(tb: TracebackType | None) -> TracebackType | None:
    """A copy of `tb` that ends before its first frame of this package (a magic, `wb.chat`, ...)."""
    import os
    import types

    import workbench_magic

    ours = os.path.dirname(workbench_magic.__file__) + os.sep
    kept: list[TracebackType] = []
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(ours):
        kept.append(tb)
        tb = tb.tb_next
    shortened = None
    for entry in reversed(kept):
        shortened = types.TracebackType(shortened, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return shortened


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """`%load_ext workbench_magic`: register the magics, the settings, completion, short errors."""
    if id(ipython) in _STATE:
        return
    magics = WorkbenchMagics(ipython)
    ipython.register_magics(magics)
    from workbench_magic.notebook.chat import ChatMagics

    ipython.register_magics(ChatMagics(ipython, lambda: magics.workbench))  # %%chat, %chat reset

    matcher = make_matcher(MagicCompleter(lambda: magics.workbench, lambda: magics.namespace))
    ipython.Completer.custom_matchers.append(matcher)
    previous_handler = getattr(ipython, "CustomTB", None), tuple(getattr(ipython, "custom_exceptions", ()))
    ipython.set_custom_exc((WorkbenchError, KeyboardInterrupt), _short_traceback)
    _STATE[id(ipython)] = {"magics": magics, "matcher": matcher, "previous": previous_handler}
    _register_configurable(ipython, magics)


def _register_configurable(ipython: InteractiveShell, magics: WorkbenchMagics) -> None:
    """Make `%config Workbench` see the shared workbench (and apply the shell's config to it)."""
    from workbench_magic.api.workbench import Workbench

    workbench = Workbench.shared()
    magics._workbench = workbench
    section = ipython.config.get("Workbench") if ipython.config is not None else None
    if section:
        workbench.update_config(ipython.config)
    configurables = cast(list[Any], ipython.configurables)
    if workbench not in configurables:
        configurables.append(workbench)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """`%unload_ext workbench_magic`: close every connection and remove what was registered."""
    state = _STATE.pop(id(ipython), None)
    magics: WorkbenchMagics | None = state["magics"] if state else None
    if magics is not None and magics._workbench is not None:
        magics._workbench.close_all()
        configurables = cast(list[Any], ipython.configurables)
        if magics._workbench in configurables:
            configurables.remove(magics._workbench)
    if state is not None:
        matchers = ipython.Completer.custom_matchers
        if state["matcher"] in matchers:
            matchers.remove(state["matcher"])
        handler, exceptions = state["previous"]
        ipython.CustomTB = handler
        ipython.custom_exceptions = exceptions
    for kind, name in (
        ("line", "workbench"),
        ("line", "use_tool"),
        ("cell", "use_tool"),
        ("line", "chat"),
        ("cell", "chat"),
    ):
        ipython.magics_manager.magics[kind].pop(name, None)


def _ask_secret(variable: str, source: str) -> str:
    """The value of `variable`, typed without echo; empty when nobody can answer (no stdin)."""
    import getpass

    from IPython.core.error import StdinNotImplementedError

    try:
        return getpass.getpass(f"{variable} (for {source}; kept for this session, not written): ")
    except (EOFError, KeyboardInterrupt, StdinNotImplementedError):
        return ""


__all__ = ["WorkbenchMagics", "load_ipython_extension", "parse_body", "substitute", "unload_ipython_extension"]
