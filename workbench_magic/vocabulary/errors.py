"""Exceptions of the public surface.

Every error a user can cause is a `WorkbenchError` subclass with a short, one-line message
(the texts of DESIGN.md). None of them carries an `ExceptionGroup` in its chain. Each text is
built by one function here (`toolbox_not_found`, `server_not_found`, `tool_not_found`,
`toolbox_not_open`, `invalid_identifier`, `connect_text`, `open_failed`, `invalid_arguments`,
`request_text`, `model_failed`, `invalid_yaml`), and every layer raises what they build.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn


def leaf_exception(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (ipykernel hangs on groups in a chain)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


#: What an exception that carries no message of its own means, by its class name (anyio's stream
#: errors are named, not imported: this module stays free of imports).
_WORDLESS = {
    "TimeoutError": "timed out",
    "ClosedResourceError": "connection closed",
    "BrokenResourceError": "connection closed",
    "EndOfStream": "connection closed",
    "CancelledError": "cancelled",
}


def describe_exception(exc: BaseException) -> str:
    """A short, one-line reason for an exception from the SDK or the transport (never a bare
    class name: an exception without a message is said in words, or named with its kind)."""
    exc = leaf_exception(exc)
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    message = str(getattr(exc, "message", None) or exc).strip()
    if message:
        return message.splitlines()[0]
    name = type(exc).__name__
    return _WORDLESS.get(name, f"{name} (no details given)")


#: The one text of each kind of request a failure names: `Error reading resource 'u' from server
#: 's' (toolbox 't')`, followed by `: <reason>`.
REQUEST_TEXTS = {
    "call": "Error executing tool '{name}' in server '{server}' (toolbox '{toolbox}')",
    "read": "Error reading resource '{name}' from server '{server}' (toolbox '{toolbox}')",
    "prompt": "Error getting prompt '{name}' from server '{server}' (toolbox '{toolbox}')",
    "complete": "Error completing {name} on server '{server}' (toolbox '{toolbox}')",
    "list": "Error listing the {name} of server '{server}' (toolbox '{toolbox}')",
}


def request_text(kind: str, name: str, server: str, toolbox: str) -> str:
    """The start of a failed request's message (`REQUEST_TEXTS`), without the reason."""
    return REQUEST_TEXTS[kind].format(name=name, server=server, toolbox=toolbox)


def first_line(exc: BaseException) -> str:
    """The first line of a foreign exception's message, without CPython's advice after a `;`."""
    text = str(exc).strip().split(";")[0]
    return (text.splitlines() or [type(exc).__name__])[0]


def raise_alone(exc: BaseException) -> NoReturn:
    """Raise `exc` without a chain: ipykernel hangs on exception groups in a chain, and a user
    needs one line, not the error it replaced."""
    exc.__context__ = None
    exc.__cause__ = None
    raise exc


class WorkbenchError(Exception):
    """Base class of every error the workbench raises on purpose.

    Each has a short, one-line message and no `ExceptionGroup` in its chain.

    Example:
        ```python
        from workbench_magic import NotFoundError, WorkbenchError

        try:
            wb.call("demo/datasets/nope")
        except NotFoundError as error:
            print(error)  # Tool 'nope' not found in server 'datasets' (toolbox 'demo')
        except WorkbenchError as error:
            print(error)  # any other failure, in one line
        ```
    """


class UsageError(WorkbenchError, ValueError):
    """A magic or command was used wrongly (unknown subcommand, malformed body, unknown `$name`)."""


class ConfigError(WorkbenchError):
    """The config file is missing, malformed or invalid; nothing was started.

    Attributes:
        variable: the environment variable a `${VAR}` names that is not set, when that is the
            problem (`%workbench import` asks for it); else None.
    """

    variable: str | None = None


class InvalidIdentifierError(WorkbenchError, ValueError):
    """A tool identifier could not be parsed."""


class NotFoundError(WorkbenchError, LookupError):
    """A toolbox, server, tool, resource or prompt does not exist."""


class ToolboxNotFoundError(NotFoundError):
    """`Toolbox 'x' not found. Available toolboxes: a, b`."""


class ServerNotFoundError(NotFoundError):
    """`Server 's' not found in toolbox 't'`."""


class ToolNotFoundError(NotFoundError):
    """`Tool 'n' not found in server 's' (toolbox 't')`."""


class MissingExtraError(WorkbenchError, ImportError):
    """`to_pandas() needs pandas: pip install 'workbench-magic[pandas]'`: an optional extra is not installed."""


class ConnectError(WorkbenchError):
    """`Failed to connect to server 's' in toolbox 't': <reason>`."""


class ArgumentError(WorkbenchError, ValueError):
    """Arguments do not match the tool's input schema; the message names the field."""


class RequestError(WorkbenchError):
    """A request to a server failed: `Error reading resource 'u' from server 's' (toolbox 't'): <reason>`.

    `.code` is the JSON-RPC error code when the server answered with an error (None for a
    timeout, a lost connection or a transport failure).

    Args:
        message: the one-line message.
        code: the JSON-RPC error code, if the server answered with one.

    Attributes:
        code: the JSON-RPC error code, or None.
    """

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class ToolError(RequestError):
    """`Error executing tool 'n' in server 's' (toolbox 't'): <reason>`.

    Raised when a call fails (transport, timeout, protocol error) or, through
    `ToolResult.raise_for_error()`, when the tool reported `is_error`.

    Args:
        message: the one-line message.
        result: the `ToolResult` of a tool that reported an error.
        code: the JSON-RPC error code, if the server answered with one.

    Attributes:
        result: the `ToolResult` when the tool reported the error (`raise_for_error`), else None.
    """

    def __init__(self, message: str, result: object | None = None, *, code: int | None = None) -> None:
        super().__init__(message, code=code)
        self.result = result


class CallTimeoutError(ToolError, TimeoutError):
    """A request ran past its time limit and was cancelled on the server.

    The request is a call, a read, a prompt, a completion or a listing; the message names the
    request, the server and the limit.
    """


class UrlElicitationRequired(RequestError):
    """A server needs the person to visit links first (MCP error -32042); `.urls` holds them.

    Open each link, finish there, then call again.

    Args:
        message: the one-line message.
        urls: the links to visit.
        code: the JSON-RPC error code (-32042).

    Attributes:
        urls: the links to visit, in order.
    """

    def __init__(self, message: str, urls: list[str] | None = None, *, code: int | None = -32042) -> None:
        super().__init__(message, code=code)
        self.urls: list[str] = list(urls or [])


class TaskRequiredError(ToolError):
    """The tool must run as a task (`execution.taskSupport: required`) the workbench cannot run on its server.

    Its server speaks 2026-07-28 without the tasks extension (`io.modelcontextprotocol/tasks`,
    SEP-2663), where tasks live on that era.
    """


class SkillDigestError(RequestError):
    """A file of a skill does not match the digest its server listed: it changed since the listing.

    Its listed size, and for `SKILL.md` the listed frontmatter, are checked too (the message names
    what differs: `SKILL.md does not match its listing (description)`).

    `Skill 'x' of server 's' in toolbox 't': references/guide.md does not match its listed digest
    (sha256:ab12…): it changed since it was listed; list the skills again`. `wb.skills(...)` lists them
    again; `wb.skill(...)` then reads the skill with the new digests.

    Args:
        message: the one-line message.
        file: the file's path in the skill (`references/guide.md`).

    Attributes:
        file: the path in the skill of the file that does not match.
    """

    def __init__(self, message: str, *, file: str) -> None:
        super().__init__(message)
        self.file = file


class ModelError(WorkbenchError):
    """`Model 'openai:gpt-4o' failed: <reason>`: the model itself failed.

    A provider's error (a refused key, a rate limit, a server error), a usage limit reached, an
    answer the model's framework could not use, or an exception raised by a model written in Python:
    in a chat (`wb.chat`, `%%chat`) it is raised; a server's sampling request answered by a model gets
    it as its error answer.
    """


# ---- the one text of each user-facing error ---------------------------------------------------
def task_not_found(id: str, known: Iterable[str]) -> str:
    """`No task 't9' in this session (tasks: t1, t2)`."""
    shown = ", ".join(known) or "none yet"
    return f"No task '{id}' in this session (tasks: {shown})"


def toolbox_not_found(name: str, available: Iterable[str]) -> ToolboxNotFoundError:
    """`Toolbox 'x' not found. Available toolboxes: a, b` (`(none)` when there is none)."""
    shown = ", ".join(sorted(available)) or "(none)"
    return ToolboxNotFoundError(f"Toolbox '{name}' not found. Available toolboxes: {shown}")


def toolbox_not_open(name: str) -> NotFoundError:
    """`Toolbox 'x' is not open. Open it with %workbench open x`."""
    return NotFoundError(f"Toolbox '{name}' is not open. Open it with %workbench open {name}")


def server_not_found(server: str, toolbox: str) -> ServerNotFoundError:
    """`Server 's' not found in toolbox 't'`."""
    return ServerNotFoundError(f"Server '{server}' not found in toolbox '{toolbox}'")


def tool_not_found(name: str, server: str, toolbox: str) -> ToolNotFoundError:
    """`Tool 'n' not found in server 's' (toolbox 't')`."""
    return ToolNotFoundError(f"Tool '{name}' not found in server '{server}' (toolbox '{toolbox}')")


def invalid_identifier(detail: str) -> InvalidIdentifierError:
    """`Invalid tool identifier: toolbox cannot be empty` (and per field and problem)."""
    return InvalidIdentifierError(f"Invalid tool identifier: {detail}")


def connect_text(server: str, toolbox: str) -> str:
    """The start of a failed connect's message, without the reason: `Failed to connect to server
    's' in toolbox 't'`, followed by `: <reason>` (a connection masks its secrets in the whole)."""
    return f"Failed to connect to server '{server}' in toolbox '{toolbox}'"


def open_failed(toolbox: str, reasons: Iterable[tuple[str, str]]) -> ConnectError:
    """`Failed to open toolbox 't': no server connected (server 'a': <reason>; server 'b': <reason>)`."""
    shown = "; ".join(f"server '{server}': {reason}" for server, reason in reasons)
    return ConnectError(f"Failed to open toolbox '{toolbox}': no server connected ({shown})")


def missing_extra(feature: str, needs: str, extra: str) -> MissingExtraError:
    """`<feature> needs <needs>: pip install 'workbench-magic[<extra>]'`."""
    return MissingExtraError(f"{feature} needs {needs}: pip install 'workbench-magic[{extra}]'")


def import_pandas(feature: str = "to_pandas()") -> Any:
    """The `pandas` module; else `<feature> needs pandas: pip install 'workbench-magic[pandas]'`
    (raised alone: no ImportError in its chain)."""
    try:
        import pandas
    except ImportError:
        pass
    else:
        return pandas
    raise_alone(missing_extra(feature, "pandas", "pandas"))


def skill_text(name: str, server: str, toolbox: str) -> str:
    """The start of a skill's message: `Skill 'x' of server 's' in toolbox 't'`."""
    return f"Skill '{name}' of server '{server}' in toolbox '{toolbox}'"


def skill_not_found(name: str, server: str, toolbox: str, known: Iterable[str]) -> NotFoundError:
    """`Skill 'x' not found in server 's' (toolbox 't'). Skills: a, b` (`none` when it lists none)."""
    shown = ", ".join(sorted(known)) or "none"
    return NotFoundError(f"Skill '{name}' not found in server '{server}' (toolbox '{toolbox}'). Skills: {shown}")


def skill_digest_mismatch(name: str, server: str, toolbox: str, file: str, digest: str) -> SkillDigestError:
    """`Skill 'x' of server 's' in toolbox 't': references/guide.md does not match its listed digest
    (sha256:ab12…): it changed since it was listed; list the skills again`."""
    algorithm, _, value = digest.partition(":")
    shown = f"{algorithm}:{value[:12]}…" if value and len(value) > 12 else digest
    return skill_mismatch(name, server, toolbox, file, f"its listed digest ({shown})")


def skill_mismatch(name: str, server: str, toolbox: str, file: str, listed: str) -> SkillDigestError:
    """A file of a skill that is not what its listing said, `listed` naming what (`its listed size
    (120 bytes)`, `its listing (description)`: the frontmatter's field); the words of the digest's."""
    return SkillDigestError(
        f"{skill_text(name, server, toolbox)}: {file} does not match {listed}: "
        "it changed since it was listed; list the skills again",
        file=file,
    )


def model_failed(model: str, reason: str) -> ModelError:
    """`Model 'openai:gpt-4o' failed: <reason>`."""
    return ModelError(f"Model '{model}' failed: {reason}")


def invalid_arguments(
    name: str, detail: str, *, server: str | None = None, toolbox: str | None = None
) -> ArgumentError:
    """`Invalid arguments for tool 'n' in server 's' (toolbox 't'): <detail>` (without the
    server part when no server is named)."""
    where = f" in server '{server}' (toolbox '{toolbox}')" if server is not None else ""
    return ArgumentError(f"Invalid arguments for tool '{name}'{where}: {detail}")


def invalid_yaml(source: str, exc: BaseException) -> UsageError:
    """`Invalid YAML in <source>, line L column C: <problem>`, from what the YAML loader raised:
    one line, without PyYAML's `"<unicode string>"` and `^` markers. A value the loader cannot
    build (`2024-02-30`) says its reason; nesting too deep says so."""
    if isinstance(exc, RecursionError):
        return UsageError(f"Invalid YAML in {source}: nested too deeply")
    mark = getattr(exc, "problem_mark", None)
    where = f", line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or first_line(exc)
    return UsageError(f"Invalid YAML in {source}{where}: {problem}")
