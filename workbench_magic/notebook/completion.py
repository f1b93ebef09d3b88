"""Tab completion of the magics: subcommands, toolboxes, servers and tools, argument names, the
variables of a notebook server, resource URIs and template variables, and the values a server
offers for a prompt argument or a template variable.

`MagicCompleter` finds the candidates for the word at the cursor; `make_matcher` hands them
to IPython. Completion never raises: what cannot be looked up offers nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.completer import SimpleCompletion, context_matcher

from workbench_magic.notebook.subcommands import SUBCOMMANDS, comment_start
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from IPython.core.completer import CompletionContext

    from workbench_magic.api.workbench import Workbench


class MagicCompleter:
    """Candidates for `%workbench`, `%%use_tool` and `%use_tool` words.

    `workbench()` is the workbench to ask (called on each completion: the magics create theirs on
    first use); `namespace()` the user's variables.
    """

    def __init__(self, workbench: Callable[[], Workbench], namespace: Callable[[], dict[str, Any]]) -> None:
        self._workbench = workbench
        self._namespace = namespace

    @property
    def workbench(self) -> Workbench:
        return self._workbench()

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
        if stripped.startswith(("%workbench", "%%use_tool", "%use_tool")) and comment_start(stripped) is not None:
            return []  # the cursor is in the line's comment
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
        if sub == "import":
            return self._import_sources() if index == 2 else ["--as"]
        if sub in ("open", "close", "list"):
            names = [tb.name for tb in self._toolbox_infos()]
            return ([*names, "--all"] if sub == "close" else names) if sub != "list" else []
        if sub in ("describe", "prompt") and index == 2:
            return self._tool_paths()
        if sub in ("tools", "resources", "skills", "prompts", "reconnect", "logs", "read", "doctor") and index == 2:
            return self._server_paths(include_toolboxes=sub not in ("logs", "read", "doctor"))
        if sub == "tools":
            return ["--search"]
        return []

    def _import_sources(self) -> list[str]:
        """The clients whose MCP config exists here (`known_clients`): what `%workbench import` takes."""
        from workbench_magic.api.toolboxes.importing import known_clients

        try:
            return [client.name for client in known_clients()]
        except Exception:  # Tab never fails
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

        return sorted(k for k, v in self._namespace().items() if not k.startswith("_") and is_server(v))

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
    start = comment_start(text)
    text = text if start is None else text[:start]
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def make_matcher(completer: MagicCompleter) -> Callable[[CompletionContext], dict[str, Any]]:
    """IPython's matcher for the magics' words (`completer`'s candidates, as IPython completes
    them), for `Completer.custom_matchers`."""

    @context_matcher(priority=100)  # ahead of IPython's own matchers, which would suppress ours
    def workbench_matcher(context: CompletionContext) -> dict[str, Any]:
        # cursor_position counts within the cursor's line, not the whole cell
        lines = context.full_text.split("\n")
        offset = sum(len(line) + 1 for line in lines[: context.cursor_line]) + context.cursor_position
        try:
            candidates = completer.completions(context.full_text, offset)
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

    return workbench_matcher
