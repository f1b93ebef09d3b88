"""IPython magics: `%workbench`, `%%use_tool` and `%use_tool`, driving `Workbench.shared()`.

Loading the extension imports neither the MCP SDK nor pydantic; both load with the first
command that needs them. Every `WorkbenchError` shows as one line (`ToolError: ...`), never
as a traceback through our internals.
"""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any, NoReturn, cast

from IPython.core.completer import SimpleCompletion, context_matcher
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand

from workbench_magic.notebook import install
from workbench_magic.notebook.cellargs import parse_body, parse_pairs, substitute
from workbench_magic.vocabulary.errors import UsageError, WorkbenchError, raise_alone

if TYPE_CHECKING:
    from IPython.core.completer import CompletionContext
    from IPython.core.interactiveshell import InteractiveShell

    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.results import ToolResult

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "status": ("%workbench [status]", "What is configured and open: the config file, toolboxes, servers."),
    "help": ("%workbench help [SUBCOMMAND]", "This overview, or the help of one subcommand."),
    "config": ("%workbench config [PATH]", "Show the config in use, or load another config file."),
    "list": ("%workbench list", "The configured toolboxes: name, servers, open or closed, description."),
    "open": (
        "%workbench open TOOLBOX [TOOLBOX ...]",
        "Open toolboxes: every server starts and connects, concurrently. Returns the OpenedToolbox;\n"
        "servers that failed are listed with the reason, the others work.",
    ),
    "add": (
        "%workbench add TOOLBOX/NAME VARIABLE",
        "Add the MCPServer in VARIABLE (written in this notebook) as server NAME of TOOLBOX and connect\n"
        "it in-process; the toolbox is created when needed. Again with a changed server replaces it.",
    ),
    "close": ("%workbench close TOOLBOX [TOOLBOX ...] | --all", "Close toolboxes; their server processes end."),
    "tools": (
        "%workbench tools [TOOLBOX[/SERVER]] [--search TEXT]",
        "List the tools of open toolboxes (or of one toolbox or server), or those matching TEXT.",
    ),
    "describe": (
        "%workbench describe TOOLBOX/SERVER/TOOL",
        "A tool's description, input schema, and a ready %%use_tool cell to copy.",
    ),
    "explore": ("%workbench explore", "The explorer: toolboxes, servers, tools, forms, results, history."),
    "resources": ("%workbench resources [TOOLBOX[/SERVER]]", "Resources and resource templates of servers."),
    "read": (
        "%workbench read TOOLBOX/SERVER URI [name=value ...]",
        "Read one resource; a template URI (city://{country}/{city}) is filled in from name=value words.\n"
        "Tab completes URIs, variable names and, where the server offers them, values.",
    ),
    "prompts": ("%workbench prompts [TOOLBOX[/SERVER]]", "Prompts of servers, with their arguments."),
    "prompt": (
        "%workbench prompt TOOLBOX/SERVER/PROMPT [key=value ...]",
        "Render one prompt. Tab completes argument names and, where the server offers them, values.",
    ),
    "reconnect": ("%workbench reconnect TOOLBOX[/SERVER]", "Restart and reconnect a server or a whole toolbox."),
    "logs": ("%workbench logs TOOLBOX/SERVER", "A server's log: its stderr and the log messages it sent."),
    "history": ("%workbench history", "Every tool call of this session: tool, arguments, time, ok or error."),
    "record": (
        "%workbench record PATH | stop",
        "Record every tool call, resource read and prompt get to a cassette (JSON, secrets masked),\n"
        "until %workbench record stop.",
    ),
    "replay": (
        "%workbench replay PATH [--auto]",
        "Answer the toolboxes recorded in a cassette from it (no server starts); --auto calls the\n"
        "live servers for what the cassette lacks.",
    ),
    "export": (
        "%workbench export PATH.ipynb",
        "Write this session as a notebook: the opens, one %%use_tool cell per call, and the replay\n"
        "line of a recorded cassette.",
    ),
}

USE_TOOL_HELP = """\
%%use_tool TOOLBOX/SERVER/TOOL [-o NAME] [--timeout S] [--no-raise]
<arguments as a YAML or JSON mapping>

result = %use_tool TOOLBOX/SERVER/TOOL key=value ... [-o NAME] [--timeout S] [--no-raise]

A whole value `$name` is the Python object `name` (`$$` writes a literal `$`).
The cell's value is the ToolResult; -o NAME also stores it in NAME. When the tool reports an
error, the result is shown and ToolError is raised (--no-raise, or
%config Workbench.raise_on_error = False, to go on)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports mistakes as one-line `UsageError`s instead of exiting."""

    def __init__(self, prog: str, hint: str) -> None:
        super().__init__(prog=prog, add_help=False, exit_on_error=False)
        self.hint = hint

    def error(self, message: str) -> NoReturn:
        raise_alone(UsageError(f"{self.prog}: {message}. {self.hint}"))

    def parse(self, argv: list[str]) -> argparse.Namespace:
        try:
            return self.parse_args(argv)
        except argparse.ArgumentError as exc:
            message = str(exc)
        raise_alone(UsageError(f"{self.prog}: {message}. {self.hint}"))


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line, posix=True)
    except ValueError as exc:
        message = str(exc)
    raise_alone(UsageError(f"Cannot parse the magic's arguments: {message}"))


# ---- the magics -----------------------------------------------------------------------
@magics_class
class WorkbenchMagics(Magics):
    """`%workbench`, `%%use_tool`, `%use_tool`."""

    def __init__(self, shell: InteractiveShell, workbench: Workbench | None = None) -> None:
        super().__init__(shell)
        self._workbench = workbench

    @property
    def workbench(self) -> Workbench:
        if self._workbench is None:
            from workbench_magic.api.workbench import Workbench

            self._workbench = Workbench.shared()
        return self._workbench

    # ---- %workbench ---------------------------------------------------------------------
    @line_magic("workbench")  # type: ignore[arg-type]  # IPython's decorator types are too narrow
    def workbench_magic(self, line: str) -> Any:
        """Toolboxes of MCP servers. `%workbench help` lists the subcommands."""
        argv = _split(line)
        sub, args = (argv[0], argv[1:]) if argv else ("status", [])
        handler = getattr(self, f"_cmd_{sub}", None)
        if sub not in SUBCOMMANDS or handler is None:
            import difflib

            close = difflib.get_close_matches(sub, SUBCOMMANDS, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise_alone(UsageError(f"Unknown subcommand '{sub}'.{hint} Subcommands: {', '.join(SUBCOMMANDS)}"))
        return handler(args)

    def _parser(self, sub: str) -> _Parser:
        return _Parser(f"%workbench {sub}", f"See %workbench help {sub}")

    def _cmd_status(self, args: list[str]) -> Any:
        self._parser("status").parse(args)
        from workbench_magic.notebook.views import StatusView

        return StatusView(self.workbench)

    def _cmd_help(self, args: list[str]) -> Any:
        from workbench_magic.notebook.views import TextView

        p = self._parser("help")
        p.add_argument("subcommand", nargs="?")
        ns = p.parse(args)
        if ns.subcommand in ("use_tool", "%%use_tool", "%use_tool"):
            return TextView(USE_TOOL_HELP)
        if ns.subcommand:
            if ns.subcommand not in SUBCOMMANDS:
                raise_alone(UsageError(f"No help for '{ns.subcommand}'. Subcommands: {', '.join(SUBCOMMANDS)}"))
            usage, text = SUBCOMMANDS[ns.subcommand]
            return TextView(f"{usage}\n\n{text}")
        width = max(len(u) for u, _ in SUBCOMMANDS.values())
        lines = [f"{u:<{width}}  {t.splitlines()[0]}" for u, t in SUBCOMMANDS.values()]
        lines += ["", USE_TOOL_HELP, "", "Settings: %config Workbench"]
        return TextView("\n".join(lines), title="MCP Workbench magics")

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
        ns = p.parse(args)
        from workbench_magic.notebook.widgets import ExploredToolbox

        for name in ns.toolboxes:
            self.workbench.open(name)
        boxes = [ExploredToolbox(self.workbench, name) for name in ns.toolboxes]
        return boxes[0] if len(boxes) == 1 else boxes

    def _cmd_add(self, args: list[str]) -> Any:
        p = self._parser("add")
        p.add_argument("target")
        p.add_argument("variable")
        ns = p.parse(args)
        namespace = self.shell.user_ns if self.shell is not None else {}
        if ns.variable not in namespace:
            raise_alone(UsageError(f"Name '{ns.variable}' is not defined. Define the server in a cell first"))
        from workbench_magic.notebook.widgets import ExploredToolbox

        self.workbench.add_server(ns.target, namespace[ns.variable])
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
            (f"{r.toolbox}/{r.server}", r.uri, "template" if r.template else "resource", r.description or "")
            for r in self.workbench.resources(ns.target)
        ]
        return TableView(("server", "uri", "kind", "description"), rows, "Resources", "(no resources)")

    def _cmd_read(self, args: list[str]) -> Any:
        p = self._parser("read")
        p.add_argument("server")
        p.add_argument("uri")
        p.add_argument("pairs", nargs="*")
        ns = p.parse(args)
        variables = substitute(parse_pairs(ns.pairs), self.shell.user_ns if self.shell else {})
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
                pr.description or "",
            )
            for pr in self.workbench.prompts(ns.target)
        ]
        return TableView(("prompt", "arguments", "description"), rows, "Prompts", "(no prompts)")

    def _cmd_prompt(self, args: list[str]) -> Any:
        p = self._parser("prompt")
        p.add_argument("prompt")
        p.add_argument("pairs", nargs="*")
        ns = p.parse(args)
        arguments = substitute(parse_pairs(ns.pairs), self.shell.user_ns if self.shell else {})
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
        ns = p.parse(args)
        return TextView(f"Exported the session to {self.workbench.export_notebook(ns.path)}")

    # ---- %%use_tool / %use_tool -------------------------------------------------------------
    @no_var_expand  # $name is resolved by us, keeping the object's type
    @line_cell_magic("use_tool")  # type: ignore[arg-type]  # IPython's decorator types are too narrow
    def use_tool(self, line: str, cell: str | None = None) -> Any:
        """Call a tool: `%%use_tool dev/server/tool` with a YAML/JSON body, or `%use_tool ... key=value`."""
        magic = "%%use_tool" if cell is not None else "%use_tool"
        p = _Parser(magic, "See %workbench help use_tool")
        p.add_argument("tool")
        p.add_argument("pairs", nargs="*")
        p.add_argument("-o", "--output", dest="output", default=None)
        p.add_argument("--timeout", type=float, default=None)
        p.add_argument("--no-raise", dest="no_raise", action="store_true")
        ns = p.parse(_split(line))
        if cell is not None and ns.pairs:
            raise_alone(UsageError("%%use_tool takes its arguments from the cell body, not key=value words"))
        if ns.output is not None and not ns.output.isidentifier():
            raise_alone(UsageError(f"-o needs a Python variable name, got {ns.output!r}"))
        raw = parse_body(cell) if cell is not None else parse_pairs(ns.pairs)
        namespace = self.shell.user_ns if self.shell is not None else {}
        arguments = substitute(raw, namespace)
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

    # ---- completion -----------------------------------------------------------------------
    def completions(self, full_text: str, cursor: int) -> list[str] | None:
        """Candidates for the word at `cursor`, or None when the text is not ours."""
        before = full_text[:cursor]
        lines = before.split("\n")
        current = lines[-1]
        first = before.lstrip().split("\n", 1)[0]
        if len(lines) > 1 and first.startswith("%%use_tool"):
            if current[:1] in (" ", "\t", "-") or ":" in current:
                return []
            words = _safe_words(first)
            return [f"{name}: " for name in self._argument_names(words[1] if len(words) > 1 else "")]
        stripped = current.lstrip()
        words = _safe_words(stripped)
        completing_new = stripped.endswith((" ", "\t"))
        index = len(words) if completing_new else len(words) - 1
        if stripped.startswith("%workbench"):
            if index <= 0:
                return None
            if index == 1:
                return list(SUBCOMMANDS)
            current = "" if completing_new else words[-1]
            return self._subcommand_targets(words[1], index, words[2:index], current)
        if stripped.startswith(("%%use_tool", "%use_tool")):
            if index <= 0:
                return None
            if index == 1:
                return self._tool_paths()
            if stripped.startswith("%use_tool"):
                return [f"{name}=" for name in self._argument_names(words[1])]
            return []
        return None

    def _subcommand_targets(self, sub: str, index: int, before: list[str] | None = None, word: str = "") -> list[str]:
        before = before or []
        if sub == "add" and index == 3:
            return self._server_variables()
        if sub == "prompt" and index >= 3:
            return self._prompt_arguments(before[0], before[1:], word)
        if sub == "read" and index == 3:
            return self._resource_uris(before[0])
        if sub == "read" and index >= 4:
            return self._template_variables(before[0], before[1], before[2:], word)
        if sub == "help":
            return [*SUBCOMMANDS, "use_tool"] if index == 2 else []
        if sub in ("open", "close", "list"):
            names = [tb.name for tb in self._toolbox_infos()]
            return ([*names, "--all"] if sub == "close" else names) if sub != "list" else []
        if sub in ("describe", "prompt") and index == 2:
            return self._tool_paths()
        if sub in ("tools", "resources", "prompts", "reconnect", "logs", "read") and index == 2:
            return self._server_paths(include_toolboxes=sub not in ("logs", "read"))
        if sub == "tools":
            return ["--search"]
        return []

    def _prompt_arguments(self, prompt: str, pairs: list[str], word: str) -> list[str]:
        """`name=` words of a prompt's arguments, or a server's completions of the value being typed."""
        toolbox, server, name = [*prompt.split("/", 2), "", "", ""][:3]
        if not (toolbox and server and name):
            return []
        target = f"{toolbox}/{server}"
        if "=" in word:
            argument, _, value = word.partition("=")
            context = _pairs_dict(pairs)
            found = self.workbench.complete(target, f"prompt:{name}", argument, value, context)
            return [f"{argument}={v}" for v in found]
        try:
            prompts = self.workbench.prompts(target)
        except WorkbenchError:
            return []
        return [f"{arg}=" for p in prompts if p.name == name for arg, _, _ in p.arguments]

    def _server_variables(self) -> list[str]:
        import sys

        if "mcp.server" not in sys.modules:  # no server defined yet: do not import the SDK to look
            return []
        from workbench_magic.engine.inprocess import is_server

        namespace = self.shell.user_ns if self.shell is not None else {}
        return sorted(k for k, v in namespace.items() if not k.startswith("_") and is_server(v))

    def _resource_uris(self, target: str) -> list[str]:
        try:
            return [r.uri for r in self.workbench.resources(target)]
        except WorkbenchError:
            return []

    def _template_variables(self, target: str, uri: str, pairs: list[str], word: str) -> list[str]:
        """`name=` words of a template's variables, or the server's completions of the value."""
        if "=" in word:
            variable, _, value = word.partition("=")
            found = self.workbench.complete(target, uri, variable, value, _pairs_dict(pairs))
            return [f"{variable}={v}" for v in found]
        try:
            from mcp.shared.uri_template import UriTemplate

            names = UriTemplate.parse(uri).variable_names
        except Exception:
            return []
        given = _pairs_dict(pairs)
        return [f"{name}=" for name in names if name not in given]

    def _toolbox_infos(self) -> list[Any]:
        try:
            return list(self.workbench.toolboxes())
        except WorkbenchError:
            return []

    def _server_paths(self, include_toolboxes: bool = True) -> list[str]:
        out: list[str] = []
        try:
            settings = self.workbench.settings
        except WorkbenchError:
            return out
        for name, tb in settings.toolboxes.items():
            if include_toolboxes:
                out.append(name)
            out += [f"{name}/{server}" for server in tb.mcp_servers]
        return out

    def _tool_paths(self) -> list[str]:
        wb = self.workbench
        paths = [f"{p}/" for p in self._server_paths(include_toolboxes=True)]
        return paths + [t.path for t in wb.tools()]

    def _argument_names(self, tool: str) -> list[str]:
        try:
            return list(self.workbench.tool(tool).parameters)
        except (WorkbenchError, ValueError):
            return []


def _pairs_dict(pairs: list[str]) -> dict[str, str]:
    return {k: v for k, sep, v in (p.partition("=") for p in pairs) if sep and k}


def _safe_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# ---- extension entry points ---------------------------------------------------------------
_STATE: dict[int, dict[str, Any]] = {}


def _short_traceback(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: int | None = None
) -> list[str]:
    """One line for every `WorkbenchError`, in the notebook and the terminal alike.

    IPython ignores what a custom handler returns, so it shows the line itself; ipykernel turns
    this into an `error` message (ename, evalue, a one-line traceback), so "Run all" stops.
    """
    shell._showtraceback(etype, value, [f"{etype.__name__}: {value}"])
    return []


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """`%load_ext workbench_magic`: register the magics, the settings, completion, short errors."""
    if id(ipython) in _STATE:
        return
    install()
    magics = WorkbenchMagics(ipython)
    ipython.register_magics(magics)

    @context_matcher(priority=100)  # ahead of IPython's own matchers, which would suppress ours
    def workbench_matcher(context: CompletionContext) -> dict[str, Any]:
        # cursor_position counts within the cursor's line, not the whole cell
        lines = context.full_text.split("\n")
        offset = sum(len(line) + 1 for line in lines[: context.cursor_line]) + context.cursor_position
        try:
            candidates = magics.completions(context.full_text, offset)
        except Exception:
            candidates = None
        if candidates is None:
            return {"completions": [], "suppress": False}
        token = context.token
        # IPython's token may be only the end of our word (it splits `key=value` at `=`): offer
        # what replaces the token, so `language=es<Tab>` becomes `language=esperanto`.
        before = context.full_text[:offset]
        word = before[len(before.rstrip().rsplit(None, 1)[0]) :].lstrip() if before.strip() else ""
        if before[-1:].isspace():
            word = ""
        chosen = []
        for c in dict.fromkeys(candidates):
            if word != token and word.endswith(token) and c.startswith(word):
                chosen.append(token + c[len(word) :])
            elif c.startswith(token):
                chosen.append(c)
        return {
            "completions": [SimpleCompletion(c, type="workbench") for c in chosen],
            "suppress": bool(chosen),
        }

    ipython.Completer.custom_matchers.append(workbench_matcher)
    previous_handler = getattr(ipython, "CustomTB", None), tuple(getattr(ipython, "custom_exceptions", ()))
    ipython.set_custom_exc((WorkbenchError,), _short_traceback)
    _STATE[id(ipython)] = {"magics": magics, "matcher": workbench_matcher, "previous": previous_handler}
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
    for kind, name in (("line", "workbench"), ("line", "use_tool"), ("cell", "use_tool")):
        ipython.magics_manager.magics[kind].pop(name, None)


__all__ = ["WorkbenchMagics", "load_ipython_extension", "parse_body", "substitute", "unload_ipython_extension"]
