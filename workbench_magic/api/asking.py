"""Asking the person with `input()`: a server's elicitation request, field by field.

Runs on the thread that made the call (the main thread, which waits for the call anyway). In a
kernel, `input()` is the front end's input box; where nobody can answer (nbconvert, a script
without a terminal) the request is declined and one line says so.

The asker is chosen by whoever makes the call: a waiting call asks with `input()`
(`waiting_channel`); an awaited one (`acall`) with the asker of the workbench's presenters
(`Presenters.asker`: in a kernel, the notebook's widget form; else `input()`).

The workbench's own question, whether a tool marked destructive may run (`wb.chat`, and the
toolsets for agent frameworks), is `ask_to_run` (or `ask_to_run_now` from sync code): one yes/no
field; its `RunAnswer` tells refused from unanswered (nobody could type an answer).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench_magic.engine.runtime import Channel, QueueChannel

logger = logging.getLogger("workbench_magic")

_DECLINE: dict[str, Any] = {"action": "decline"}
_MAX_TRIES = 5


class NoWayToAsk(Exception):
    """Nobody can type an answer here."""


def _default_input(prompt: str) -> str:
    """`input()`, or `NoWayToAsk` where it cannot reach a person."""
    try:
        from IPython.core.error import StdinNotImplementedError
    except ImportError:  # pragma: no cover - IPython is a dependency
        StdinNotImplementedError = RuntimeError  # type: ignore[misc,assignment]
    shell = _shell()
    in_kernel = shell is not None and getattr(shell, "kernel", None) is not None
    if not in_kernel and not (sys.stdin and sys.stdin.isatty()):
        raise NoWayToAsk("stdin is not a terminal")
    try:
        return input(prompt)
    except (StdinNotImplementedError, EOFError) as exc:
        raise NoWayToAsk(str(exc) or type(exc).__name__) from None


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return None
    return get_ipython()


def _kind(spec: dict[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "enum" in spec or "oneOf" in spec or ("anyOf" in spec and kind in (None, "string")):
        return "enum"
    return str(kind or "string")


def _choices(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(value, label) pairs of an enum field (plain `enum`, or titled `oneOf`/`anyOf` consts)."""
    if "enum" in spec:
        names = spec.get("enumNames") or spec["enum"]
        return [(str(v), str(n)) for v, n in zip(spec["enum"], names, strict=False)]
    options = spec.get("oneOf") or spec.get("anyOf") or []
    return [(str(o.get("const")), str(o.get("title") or o.get("const"))) for o in options if "const" in o]


def parse_answer(text: str, spec: dict[str, Any]) -> Any:
    """One typed answer for a field, or ValueError with what is wrong."""
    kind = _kind(spec)
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer y or n")
    if kind in ("integer", "number"):
        try:
            value: float | int = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise ValueError(f"expected {'a whole number' if kind == 'integer' else 'a number'}") from None
        if "minimum" in spec and value < spec["minimum"]:
            raise ValueError(f"at least {spec['minimum']}")
        if "maximum" in spec and value > spec["maximum"]:
            raise ValueError(f"at most {spec['maximum']}")
        return value
    if kind == "enum":
        choices = _choices(spec)
        for choice, label in choices:
            if text in (choice, label):
                return choice
        if text.isdigit() and 1 <= int(text) <= len(choices):
            return choices[int(text) - 1][0]
        raise ValueError(f"one of {', '.join(v for v, _ in choices)}")
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    return _text(text, spec)


def _text(text: str, spec: dict[str, Any]) -> str:
    if "minLength" in spec and len(text) < spec["minLength"]:
        raise ValueError(f"at least {spec['minLength']} characters")
    if "maxLength" in spec and len(text) > spec["maxLength"]:
        raise ValueError(f"at most {spec['maxLength']} characters")
    return text


def _prompt_of(name: str, spec: dict[str, Any], required: bool) -> str:
    kind = _kind(spec)
    label = spec.get("title") or name
    hint = kind
    if kind == "enum":
        hint = "/".join(label for _, label in _choices(spec))
    elif kind == "boolean":
        hint = "y/n"
    default = spec.get("default")
    shown = f" [{'y' if default else 'n'}]" if kind == "boolean" and default is not None else ""
    if kind != "boolean" and default is not None:
        shown = f" [{default}]"
    mark = "" if required else ", optional"
    description = f" - {spec['description']}" if spec.get("description") else ""
    return f"  {label} ({hint}{mark}){description}{shown}: "


class TerminalAsker:
    """Asks with `input()`: the message, then each field (types and choices checked, defaults
    offered). An empty answer to a required field without a default declines the request."""

    def __init__(self, read: Callable[[str], str] | None = None, write: Callable[[str], None] | None = None) -> None:
        self._read = read or _default_input
        self._write = write or print

    def form(self, server: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.answered_form(server, message, schema)
        except NoWayToAsk as exc:
            logger.warning("%s asked for input and nobody can answer here (%s): declined", server, exc)
            return _DECLINE

    def answered_form(self, server: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """`form`, raising `NoWayToAsk` where nobody can answer (`form` declines then)."""
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or [])
        self._write(f"{server} asks: {message}  (empty answer to a required field declines)")
        content: dict[str, Any] = {}
        for name, spec in (properties or {}).items():
            spec = spec if isinstance(spec, dict) else {}
            prompt = _prompt_of(name, spec, name in required)
            for _ in range(_MAX_TRIES):
                text = self._read(prompt).strip()
                if not text:
                    if "default" in spec:
                        content[name] = spec["default"]
                    elif name in required:
                        self._write(f"{server}: declined")
                        return _DECLINE
                    break
                try:
                    content[name] = parse_answer(text, spec)
                    break
                except ValueError as exc:
                    self._write(f"    {exc}; try again (empty to {'decline' if name in required else 'skip'})")
            else:
                return _DECLINE
        return {"action": "accept", "content": content}

    def sample(self, server: str, messages: list[dict[str, Any]], system_prompt: str | None) -> str | None:
        """Show the conversation; the person types the model's reply (empty declines)."""
        try:
            self._write(f"{server} asks for a model's reply (you answer; empty declines):")
            if system_prompt:
                self._write(f"  [system] {system_prompt}")
            for message in messages:
                self._write(f"  [{message['role']}] {message['text']}")
            text = self._read("  reply: ").strip()
        except NoWayToAsk as exc:
            logger.warning("%s asked for a model's reply and nobody can answer here (%s): declined", server, exc)
            return None
        return text or None

    def url(self, server: str, message: str, url: str) -> dict[str, Any]:
        try:
            self._write(f"{server} asks you to open a link: {message}\n  {url}")
            text = self._read("  Press Enter when you are done there, or type 'decline': ").strip().lower()
        except NoWayToAsk as exc:
            logger.warning("%s asked to open %s and nobody can answer here (%s): declined", server, url, exc)
            return _DECLINE
        return _DECLINE if text in ("decline", "d", "no", "n") else {"action": "accept"}


CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"run": {"type": "boolean", "title": "Run it"}},
    "required": ["run"],
}
"""The question asked before a destructive tool runs: one yes/no field."""

NO_ANSWER = "nobody answered (no input)"
"""How a question nobody could answer is told (not as a refusal)."""


@dataclass(frozen=True)
class RunAnswer:
    """The answer to "may this tool, marked destructive, run?".

    Attributes:
        allowed: the person said yes.
        answered: False when nobody could answer (no input): the tool did not run, and nobody refused.
    """

    allowed: bool
    answered: bool = True

    def told(self, identifier: object) -> str:
        """What the model is told when the tool did not run. No answer counts as no (the person's
        line and the log say nobody answered); the model reads the same either way, as the chats
        recorded in cassettes read it."""
        return f"The person did not allow {identifier} to run (the tool is marked destructive), so it did not run."

    def shown(self, identifier: object) -> str:
        """What the person's line says when the tool did not run: unanswered is not a refusal."""
        if not self.answered:
            return (
                f"{NO_ANSWER.capitalize()} whether {identifier} may run (the tool is marked destructive), "
                "so it did not run."
            )
        return self.told(identifier)


def _question(identifier: object, arguments: Mapping[str, Any]) -> str:
    shown = json.dumps(dict(arguments), ensure_ascii=False, default=str)
    return f"the model wants to run {identifier} {shown}, a tool marked destructive."


def _put(asker: Any, who: str, identifier: object, arguments: Mapping[str, Any]) -> Any:
    """Ask (on the asker's thread): its answer (or a future of it), or `NoWayToAsk` when nobody can answer."""
    message = _question(identifier, arguments)
    strict = getattr(asker, "answered_form", None)  # a TerminalAsker tells "no input" from "no"
    try:
        return strict(who, message, CONFIRM_SCHEMA) if callable(strict) else asker.form(who, message, CONFIRM_SCHEMA)
    except NoWayToAsk as exc:
        return exc


def _verdict(answer: Any, identifier: object) -> RunAnswer:
    if isinstance(answer, NoWayToAsk):
        logger.warning("%s whether %s may run (%s): it did not run", NO_ANSWER, identifier, answer)
        return RunAnswer(allowed=False, answered=False)
    if not isinstance(answer, dict) or answer.get("action") != "accept":
        return RunAnswer(allowed=False)
    content = answer.get("content")
    return RunAnswer(allowed=isinstance(content, dict) and content.get("run") is True)


async def ask_to_run(channel: Channel | None, who: str, identifier: object, arguments: Mapping[str, Any]) -> RunAnswer:
    """Ask the person, on `channel`'s thread (its `asker`), whether a destructive tool may run.

    Args:
        channel: the way to the person (None, or no asker: refused, as nobody may be asked).
        who: who asks (`chat`, `agent`): the question's first word.
        identifier: the tool.
        arguments: the arguments the model gave.

    Returns:
        Allowed, refused, or unanswered (nobody could answer: no input).
    """
    asker = getattr(channel, "asker", None)
    if channel is None or asker is None:
        return RunAnswer(allowed=False)
    answer = await asyncio.wrap_future(channel.submit(lambda: _put(asker, who, identifier, arguments)))
    return _verdict(answer, identifier)


def ask_to_run_now(who: str, identifier: object, arguments: Mapping[str, Any]) -> RunAnswer:
    """`ask_to_run` from sync code, on this thread, with `input()` (as `wb.call` asks a server's questions)."""
    return _verdict(_put(TerminalAsker(), who, identifier, arguments), identifier)


def waiting_channel(server_log: Callable[[str], None] | None = None) -> QueueChannel:
    """The way back to a thread that waits for its call: it asks the person with `input()` and
    hears the server's log lines (`server_log`)."""
    from workbench_magic.engine.runtime import QueueChannel

    return QueueChannel(asker=TerminalAsker(), notice=server_log)
