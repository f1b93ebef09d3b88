"""What the magics accept: the `%workbench` subcommands with their usage and help
(`SUBCOMMANDS`, `%workbench help`), the `%%use_tool` help, and the parsing of a magic's line
(mistakes are one-line `UsageError`s, never argparse's exit)."""

from __future__ import annotations

import argparse
import shlex
from typing import NoReturn

from workbench_magic.vocabulary.errors import UsageError, raise_alone

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "status": ("%workbench [status]", "What is configured and open: the config file, toolboxes, servers."),
    "help": ("%workbench help [SUBCOMMAND]", "This overview, or the help of one subcommand."),
    "config": ("%workbench config [PATH]", "Show the config in use, or load another config file."),
    "list": ("%workbench list", "The configured toolboxes: name, servers, open or closed, description."),
    "open": (
        "%workbench open TOOLBOX [TOOLBOX ...] [--lazy | --eager]",
        "Open toolboxes: every server starts and connects, concurrently. Returns the OpenedToolbox;\n"
        'servers that failed are listed with the reason, the others work. A lazy server ("start":\n'
        '"lazy") with a cached catalog starts no process: it is idle until first use. --lazy and\n'
        "--eager override the config for this open.",
    ),
    "import": (
        "%workbench import SOURCE [--as NAME]",
        "Add a toolbox for this session from another client's MCP config: claude-desktop, claude-code,\n"
        "cursor, vscode, windsurf, gemini-cli or codex (Tab lists those found here), one of their config\n"
        "files, or a registry server.json. Servers keep their names; secrets stay ${VAR} references,\n"
        "and one that is not set is asked for (without echo, kept for this session only).",
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
    "skills": (
        "%workbench skills [TOOLBOX[/SERVER]]",
        "Skills of servers (SEP-2640): name, description, files. A server without the skills extension\n"
        "has its skills found among its skill:// resources; one with neither says so. Read one with\n"
        "wb.skill('TOOLBOX/SERVER', NAME).",
    ),
    "reconnect": ("%workbench reconnect TOOLBOX[/SERVER]", "Restart and reconnect a server or a whole toolbox."),
    "doctor": (
        "%workbench doctor TOOLBOX/SERVER",
        "Which step of connecting to a server fails, and what to do: the config entry, the command, the\n"
        "process, its protocol, era, capabilities and tools (HTTP: the URL, the port, TLS, the answer, auth).",
    ),
    "logs": ("%workbench logs TOOLBOX/SERVER", "A server's log: its stderr and the log messages it sent."),
    "history": ("%workbench history", "Every tool call of this session: tool, arguments, time, ok or error."),
    "trace": (
        "%workbench trace [on [TOOLBOX[/SERVER]] | off]",
        "Record the JSON-RPC messages with servers (all, a toolbox's, one server's); show or stop.",
    ),
    "tasks": ("%workbench tasks", "The tasks of this session (%%use_tool --task, wb.start): running first."),
    "cancel": ("%workbench cancel ID", "Cancel a task of this session (an MCP task is cancelled on its server)."),
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
        "%workbench export PATH.ipynb | PATH.py [--replay CASSETTE] [--ignore JSONPATH ...]",
        "PATH.ipynb: write this session as a notebook: the opens, one %%use_tool cell per call, and\n"
        "the replay line of a recorded cassette.\n"
        "PATH.py: write its tool calls as pytest regression tests: one test per call (same arguments,\n"
        "same outcome and structured content or text) and one per tool (its input schema still\n"
        "accepts what it accepted). --replay runs them from a cassette (no server); --ignore leaves\n"
        "out a value that changes from run to run ($.created).",
    ),
    "evaluate": (
        "%workbench evaluate FILE.yaml [--toolbox TOOLBOX] [--model MODEL] [--runs N]",
        "Run the cases of a YAML file with a model over a toolbox, each several times: how often each\n"
        "passed, the tools called, tokens and time, and why the failing runs failed. The file has\n"
        "cases: (each a prompt, with expect_tools, expect_arguments, expect_text) and may set toolbox:,\n"
        "model: and runs:; the options win over it.",
    ),
}

USE_TOOL_HELP = """\
%%use_tool TOOLBOX/SERVER/TOOL [-o NAME] [--timeout S] [--no-raise] [--task]
<arguments as a YAML or JSON mapping>

result = %use_tool TOOLBOX/SERVER/TOOL key=value ... [-o NAME] [--timeout S] [--no-raise]

A whole value `$name` is the Python object `name` (`$$` writes a literal `$`).
The cell's value is the ToolResult; -o NAME also stores it in NAME. When the tool reports an
error, the result is shown and ToolError is raised (--no-raise, or
%config Workbench.raise_on_error = False, to go on). --task starts the call and returns its
TaskHandle at once (-o NAME stores the handle): one line that follows the work and becomes the
result (%workbench tasks, %workbench cancel ID)."""


def help_text(subcommand: str | None = None) -> str:
    """The help of one subcommand (`use_tool` too), or the overview of them all (None)."""
    if subcommand in ("use_tool", "%%use_tool", "%use_tool"):
        return USE_TOOL_HELP
    if subcommand:
        if subcommand not in SUBCOMMANDS:
            raise_alone(UsageError(f"No help for '{subcommand}'. Subcommands: {', '.join(SUBCOMMANDS)}"))
        usage, text = SUBCOMMANDS[subcommand]
        return f"{usage}\n\n{text}"
    width = max(len(u) for u, _ in SUBCOMMANDS.values())
    lines = [f"{u:<{width}}  {t.splitlines()[0]}" for u, t in SUBCOMMANDS.values()]
    lines += ["", USE_TOOL_HELP, "", "Settings: %config Workbench"]
    return "\n".join(lines)


class MagicParser(argparse.ArgumentParser):
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


def comment_start(line: str) -> int | None:
    """Where the comment of a magic's line starts, or None: as in a shell, a `#` that begins a
    word outside quotes (`a#b`, `"a # b"` and `\\#` are text). An unclosed quote has no comment."""
    quote: str | None = None
    word_start = True
    index = 0
    while index < len(line):
        char = line[index]
        if quote == "'":
            quote = None if char == "'" else quote
        elif quote == '"':
            if char == "\\":
                index += 1
            elif char == '"':
                quote = None
        elif char == "\\":
            index += 1
            word_start = False
        elif char in "'\"":
            quote, word_start = char, False
        elif char in " \t\r\n":  # shlex's whitespace
            word_start = True
        elif char == "#" and word_start:
            return index
        else:
            word_start = False
        index += 1
    return None


def split_line(line: str) -> list[str]:
    """A magic's line as shell words, a comment left out (`comment_start`); a quoting mistake is a
    one-line `UsageError`. Every magic's line, and the first line of a cell magic, is split here."""
    start = comment_start(line)
    try:
        return shlex.split(line if start is None else line[:start], posix=True)
    except ValueError as exc:
        message = str(exc)
    raise_alone(UsageError(f"Cannot parse the magic's arguments: {message}"))
