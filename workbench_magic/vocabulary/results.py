"""Results of the workbench: `ToolInfo`, `ToolResult`, call history and status records.

Everything here is plain data with rich reprs (`_repr_mimebundle_` / `_repr_html_` for
JupyterLab and nbconvert, a readable `__repr__` for terminals). The MCP SDK types are only
referenced, never imported at module import time.
"""

from __future__ import annotations

import base64
import html
import inspect
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.vocabulary.errors import MissingExtraError, ToolError, raise_alone
from workbench_magic.vocabulary.masking import mask, mask_value

if TYPE_CHECKING:
    import pandas as pd

    from workbench_magic.vocabulary.identifiers import ToolIdentifier


def _identifier(toolbox: str, server: str, name: str) -> ToolIdentifier:
    from workbench_magic.vocabulary.identifiers import ToolIdentifier  # pydantic: loaded on first use

    return ToolIdentifier(toolbox=toolbox, server=server, name=name)


_TEXT_PREVIEW = 2000
#: Structured data larger than this (as JSON text) is left out of the `application/json` output,
#: which a notebook saves whole; the HTML preview and `.data` still have it.
_JSON_OUTPUT_LIMIT = 200_000


def _esc(value: object) -> str:
    return html.escape(str(value))


def _json_dump(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


def _first_line(text: str | None, limit: int = 100) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class ToolUI:
    """A tool's MCP Apps user interface (`_meta.ui`): the `ui://` page and who may call it.

    `visibility` is `("model", "app")` unless the tool says otherwise; an app-only tool
    (no `model`) is for its app's own use and is never offered to a model.
    """

    resource_uri: str
    visibility: tuple[str, ...] = ("model", "app")

    @property
    def app_only(self) -> bool:
        return "model" not in self.visibility

    @property
    def mark(self) -> str:
        """How listings mark the tool: `app`, or `app only`."""
        return "app only" if self.app_only else "app"

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> ToolUI | None:
        """From a tool's `_meta` (`ui.resourceUri`, or the older flat `ui/resourceUri`)."""
        if not meta:
            return None
        ui = meta.get("ui")
        ui = ui if isinstance(ui, Mapping) else {}
        uri = ui.get("resourceUri") or meta.get("ui/resourceUri")
        if not isinstance(uri, str) or not uri:
            return None
        visibility = ui.get("visibility")
        if isinstance(visibility, list | tuple):
            return cls(uri, tuple(str(v) for v in visibility))
        return cls(uri)


@dataclass(frozen=True)
class ToolInfo:
    """One tool of one server of one toolbox.

    Keeps the SDK's tool fields (`name`, `description`, `input_schema`, `output_schema`,
    `annotations`, `title`, `meta`) plus where it lives (`toolbox`, `server`).
    """

    toolbox: str
    server: str
    name: str
    description: str | None = None
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    title: str | None = None
    meta: dict[str, Any] | None = None
    execution: dict[str, Any] | None = None

    @classmethod
    def from_sdk(cls, toolbox: str, server: str, tool: Any) -> ToolInfo:
        """Build from an SDK `Tool`."""
        annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
        execution = getattr(tool, "execution", None)
        return cls(
            toolbox=toolbox,
            server=server,
            name=tool.name,
            description=inspect.cleandoc(tool.description) if tool.description else tool.description,
            input_schema=dict(tool.input_schema or {"type": "object"}),
            output_schema=dict(tool.output_schema) if tool.output_schema else None,
            annotations=annotations or None,
            title=tool.title,
            meta=dict(tool.meta) if getattr(tool, "meta", None) else None,
            execution=execution.model_dump(by_alias=True, exclude_none=True) if execution is not None else None,
        )

    @property
    def identifier(self) -> ToolIdentifier:
        """The structured identifier `{toolbox, server, name}`."""
        return _identifier(self.toolbox, self.server, self.name)

    @property
    def ui(self) -> ToolUI | None:
        """The tool's MCP Apps UI (`None` for a plain tool)."""
        return ToolUI.from_meta(self.meta)

    @property
    def task_support(self) -> str | None:
        """`execution.taskSupport` of the tool (`forbidden`, `optional`, `required`), if it says."""
        value = (self.execution or {}).get("taskSupport")
        return value if isinstance(value, str) else None

    @property
    def path(self) -> str:
        """`toolbox/server/name`."""
        return f"{self.toolbox}/{self.server}/{self.name}"

    @property
    def parameters(self) -> dict[str, Any]:
        """The input schema's top-level properties."""
        props = self.input_schema.get("properties")
        return dict(props) if isinstance(props, dict) else {}

    @property
    def required(self) -> list[str]:
        """Names of required arguments."""
        req = self.input_schema.get("required")
        return list(req) if isinstance(req, list) else []

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (camelCase schema keys, as MCP clients expect)."""
        out: dict[str, Any] = {
            "toolbox": self.toolbox,
            "server": self.server,
            "name": self.name,
            "description": self.description or "",
            "inputSchema": self.input_schema,
        }
        if self.title:
            out["title"] = self.title
        if self.output_schema:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        return out

    def __repr__(self) -> str:
        return f"<ToolInfo {self.path}: {_first_line(self.description, 70)}>"


def tools_table_html(tools: Sequence[ToolInfo], limit: int | None = None) -> str:
    """An HTML table of tools (used by reprs of tool lists and toolboxes)."""
    shown = tools if limit is None else tools[:limit]
    rows = "".join(
        f"<tr><td><code>{_esc(t.path)}</code>{_ui_mark(t)}</td><td>{_esc(', '.join(t.parameters))}</td>"
        f"<td>{_esc(_first_line(t.description))}</td></tr>"
        for t in shown
    )
    more = f"<tr><td colspan=3><i>… {len(tools) - len(shown)} more</i></td></tr>" if len(shown) < len(tools) else ""
    return (
        "<table><thead><tr><th>tool</th><th>arguments</th><th>description</th></tr></thead>"
        f"<tbody>{rows}{more}</tbody></table>"
    )


def _ui_mark(tool: ToolInfo, plain: bool = False) -> str:
    if tool.ui is None:
        return ""
    return f" [{tool.ui.mark}]" if plain else f" <i>[{tool.ui.mark}]</i>"


class ToolList(list[ToolInfo]):
    """A list of `ToolInfo` that renders as a table."""

    def _repr_html_(self) -> str:
        return f"<div><b>{len(self)} tools</b>{tools_table_html(self, limit=200)}</div>"

    def __repr__(self) -> str:
        if not self:
            return "(no tools)"
        width = min(60, max(len(t.path) for t in self))
        return "\n".join(f"{t.path:<{width}}  {_first_line(t.description, 70)}{_ui_mark(t, True)}" for t in self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


def _parse_json_text(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in '[{"0123456789-tfn':
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


@dataclass
class Image:
    """An image block of a result."""

    data: bytes
    mime_type: str

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {self.mime_type: base64.b64encode(self.data).decode(), "text/plain": repr(self)}

    def __repr__(self) -> str:
        return f"<Image {self.mime_type}, {len(self.data)} bytes>"


def find_table(data: Any) -> list[dict[str, Any]] | dict[str, list[Any]] | None:
    """Find the table in structured data: records, columns, or one wrapped level of either."""
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        return data
    if isinstance(data, dict) and data:
        values = list(data.values())
        if all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1:
            if not any(isinstance(x, dict) for v in values for x in v):
                return data
        tables = [v for v in values if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
        if len(tables) == 1:
            return tables[0]
    return None


class ToolApp(Protocol):
    """A result's MCP App, as results see it (api/apps.py's `AppView` is the one there is).

    A result shows `note` where no app can run and lets `widget_bundle` put the app in its
    display data; the rest is what the app offers its user (DESIGN: `.html`, `.handle`,
    `.messages`, `.model_context`).
    """

    messages: list[dict[str, Any]]
    model_context: dict[str, Any] | None

    @property
    def note(self) -> str:
        """One line saying the tool has an app (what a front end without widgets shows)."""
        ...

    def widget_bundle(self, bundle: dict[str, Any]) -> dict[str, Any]:
        """A result's MIME bundle as displayed with its app (unchanged where no app can run)."""
        ...

    @property
    def html(self) -> str:
        """The app's HTML page."""
        ...

    def handle(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """Answer one JSON-RPC message from the app's page."""
        ...


@dataclass
class ToolResult:
    """What a tool call returned.

    Attributes:
        identifier: which tool was called.
        raw: the SDK `CallToolResult`.
        elapsed: seconds the call took, client side.
        arguments: the arguments sent.
    """

    identifier: ToolIdentifier
    raw: Any
    elapsed: float = 0.0
    arguments: dict[str, Any] = field(default_factory=dict)
    secrets: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    """Config secrets: masked in what the result shows (its data stays as the tool sent it)."""
    replayed: bool = False
    """True when the answer came from a cassette (`Workbench(replay=...)`), not a live server."""
    app: ToolApp | None = field(default=None, repr=False, compare=False)
    """The tool's MCP Apps view (`AppView`) when the tool has a UI and `render_apps` is on."""

    @property
    def is_error(self) -> bool:
        """True when the tool reported an error (`isError` in MCP)."""
        return bool(self.raw.is_error)

    @property
    def content(self) -> list[Any]:
        """The SDK content blocks (text, image, audio, resource links, embedded resources)."""
        return list(self.raw.content or [])

    @property
    def structured_content(self) -> Any:
        """The structured content the server sent, if any."""
        return self.raw.structured_content

    @property
    def text(self) -> str:
        """All text blocks joined with newlines."""
        return "\n".join(b.text for b in self.content if getattr(b, "type", None) == "text")

    @property
    def data(self) -> Any:
        """Structured content; else the text parsed as JSON when it is JSON; else None."""
        if self.raw.structured_content is not None:
            return self.raw.structured_content
        texts = [b.text for b in self.content if getattr(b, "type", None) == "text"]
        if len(texts) == 1:
            return _parse_json_text(texts[0])
        if texts:
            parsed = [_parse_json_text(t) for t in texts]
            if all(p is not None for p in parsed):
                return parsed
        return None

    @property
    def images(self) -> list[Image]:
        """Image blocks, decoded."""
        return [
            Image(base64.b64decode(b.data), b.mime_type) for b in self.content if getattr(b, "type", None) == "image"
        ]

    def to_pandas(self) -> pd.DataFrame:
        """The tabular part of `data` as a DataFrame (records, columns, or `{"rows": [...]}`).

        Needs the `pandas` extra; without it, a one-line `MissingExtraError` says how to install it.
        """
        missing = False
        try:
            import pandas as pd
        except ImportError:
            missing = True
        if missing:  # raised here, out of the `except`, to carry no context
            raise_alone(MissingExtraError("to_pandas() needs pandas: pip install 'workbench-magic[pandas]'"))

        table = find_table(self.data)
        if table is None:
            raise ToolError(f"Result of tool '{self.identifier.name}' has no tabular data to convert")
        return pd.DataFrame(table)

    def error_message(self) -> str:
        """The short error text of a failed call (its text content, first lines).

        The SDK's servers start error texts with their own `Error executing tool NAME: `; that
        prefix is dropped so the workbench's (which names server and toolbox) is not doubled.
        """
        text = self.text.strip() or "the tool reported an error without a message"
        own = f"Error executing tool {self.identifier.name}: "
        if text.startswith(own) and len(text) > len(own):
            text = text[len(own) :]
        lines = text.splitlines()
        return " ".join(lines[:3]) + (" …" if len(lines) > 3 else "")

    def to_error(self) -> ToolError:
        """The `ToolError` describing this (failed) result."""
        i = self.identifier
        return ToolError(
            f"Error executing tool '{i.name}' in server '{i.server}' (toolbox '{i.toolbox}'): {self.error_message()}",
            result=self,
        )

    def raise_for_error(self) -> ToolResult:
        """Raise `ToolError` when the tool reported an error; return self otherwise."""
        if self.is_error:
            raise self.to_error()
        return self

    # ---- reprs -------------------------------------------------------------------------
    def _summary(self) -> str:
        status = "error" if self.is_error else "ok"
        badge = ", replayed" if self.replayed else ""
        return f"ToolResult {self.identifier} [{status}, {self.elapsed * 1000:.0f} ms{badge}]"

    def __repr__(self) -> str:
        return mask(self._plain(), self.secrets)

    def _plain(self) -> str:
        parts = [self._summary()]
        data = self.raw.structured_content
        if data is not None:
            dumped = _json_dump(data)
            parts.append(dumped if len(dumped) <= _TEXT_PREVIEW else dumped[:_TEXT_PREVIEW] + "\n…")
        elif self.text:
            t = self.text
            parts.append(t if len(t) <= _TEXT_PREVIEW else t[:_TEXT_PREVIEW] + "\n…")
        for img in self.images:
            parts.append(repr(img))
        others = [b for b in self.content if getattr(b, "type", None) not in ("text", "image")]
        for b in others:
            parts.append(f"<{getattr(b, 'type', type(b).__name__)} block>")
        if self.app is not None:
            parts.append(self.app.note)
        return "\n".join(parts)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        return mask(self._html(), self.secrets)

    def _html(self) -> str:
        color = "#b00020" if self.is_error else "#1b5e20"
        out = [f"<div><div style='color:{color}'><b>{_esc(self._summary())}</b></div>"]
        data = self.raw.structured_content
        table = find_table(data) if data is not None else None
        if isinstance(table, list) and table:
            cols = list(dict.fromkeys(k for r in table[:200] for k in r))
            head = "".join(f"<th>{_esc(c)}</th>" for c in cols)
            body = "".join(
                "<tr>" + "".join(f"<td>{_esc(r.get(c, ''))}</td>" for c in cols) + "</tr>" for r in table[:50]
            )
            more = f"<i>… {len(table) - 50} more rows</i>" if len(table) > 50 else ""
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}")
        elif data is not None:
            out.append(f"<pre>{_esc(_json_dump(data)[: _TEXT_PREVIEW * 5])}</pre>")
        elif self.text:
            out.append(f"<pre style='white-space:pre-wrap'>{_esc(self.text[: _TEXT_PREVIEW * 5])}</pre>")
        for img in self.images:
            b64 = base64.b64encode(img.data).decode()
            out.append(f"<img src='data:{_esc(img.mime_type)};base64,{b64}'/>")
        if self.app is not None:
            out.append(f"<div><i>{_esc(self.app.note)}</i></div>")
        out.append("</div>")
        return "".join(out)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = {"text/plain": repr(self), "text/html": self._repr_html_()}
        data = self.data
        if data is not None:
            shown = data if isinstance(data, dict | list) else {"value": data}
            if len(_json_dump(shown, indent=None)) <= _JSON_OUTPUT_LIMIT:
                bundle["application/json"] = mask_value(shown, self.secrets)
        pngs = [img for img in self.images if img.mime_type == "image/png"]
        if pngs:
            bundle["image/png"] = base64.b64encode(pngs[0].data).decode()
        if self.app is not None:
            bundle = self.app.widget_bundle(bundle)
        return bundle


@dataclass(frozen=True)
class CallRecord:
    """One entry of `Workbench.history`.

    `kind` is `tool` for a tool call; a request a server made of the client is `sampling`,
    `elicitation` or `roots`, with `identifier.name` that kind, `arguments` what was asked and
    `answer` what was answered.
    """

    identifier: ToolIdentifier
    arguments: dict[str, Any]
    started: float
    elapsed: float
    ok: bool
    error: str | None = None
    kind: str = "tool"
    answer: Any = None

    @property
    def label(self) -> str:
        """`toolbox/server/tool`, or `toolbox/server <- kind` for a server's request."""
        ident = self.identifier
        return str(ident) if self.kind == "tool" else f"{ident.toolbox}/{ident.server} <- {self.kind}"

    def __repr__(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.started))
        status = "ok" if self.ok else f"error: {self.error}"
        answer = f" -> {_json_dump(self.answer, None)}" if self.kind != "tool" else ""
        return f"{when} {self.label} {_json_dump(self.arguments, None)}{answer} {self.elapsed * 1000:.0f} ms {status}"


class History(list[CallRecord]):
    """Every call of the session, oldest first."""

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{_esc(time.strftime('%H:%M:%S', time.localtime(r.started)))}</td>"
            f"<td><code>{_esc(r.label)}</code></td><td><code>{_esc(_json_dump(r.arguments, None))}</code>"
            f"{'' if r.kind == 'tool' else ' → <code>' + _esc(_json_dump(r.answer, None)) + '</code>'}</td>"
            f"<td>{r.elapsed * 1000:.0f} ms</td><td>{'ok' if r.ok else _esc('error: ' + (r.error or ''))}</td></tr>"
            for r in self
        )
        return (
            "<table><thead><tr><th>time</th><th>tool</th><th>arguments</th><th>elapsed</th><th>status</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )

    def __repr__(self) -> str:
        return "\n".join(repr(r) for r in self) if self else "(no calls yet)"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


@dataclass(frozen=True)
class ServerStatus:
    """State of one server connection of an opened toolbox."""

    toolbox: str
    name: str
    status: str
    transport: str
    protocol: str | None = None
    server_info: str | None = None
    error: str | None = None
    tool_count: int = 0
    tool_list_changes: int = 0

    @property
    def connected(self) -> bool:
        return self.status == "connected"

    def __repr__(self) -> str:
        detail = self.error if self.error else f"{self.tool_count} tools, protocol {self.protocol}"
        return f"{self.name}: {self.status} ({self.transport}) {detail}"


def status_table_html(servers: Iterable[ServerStatus]) -> str:
    """HTML table of server statuses."""
    rows = []
    for s in servers:
        color = {"connected": "#1b5e20", "failed": "#b00020"}.get(s.status, "#8a6d00")
        detail = _esc(s.error) if s.error else f"{s.tool_count} tools, protocol {_esc(s.protocol)}"
        rows.append(
            f"<tr><td><b>{_esc(s.name)}</b></td><td style='color:{color}'>{_esc(s.status)}</td>"
            f"<td>{_esc(s.transport)}</td><td>{detail}</td></tr>"
        )
    return (
        "<table><thead><tr><th>server</th><th>status</th><th>transport</th><th>detail</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


@dataclass(frozen=True)
class ToolboxInfo:
    """One configured toolbox, as `Workbench.toolboxes()` lists it."""

    name: str
    description: str
    servers: tuple[str, ...]
    open: bool

    def __repr__(self) -> str:
        state = "open" if self.open else "closed"
        return f"{self.name} [{state}] {', '.join(self.servers)}: {self.description}"


class ToolboxList(list[ToolboxInfo]):
    """`Workbench.toolboxes()` result; renders as a table."""

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><b>{_esc(t.name)}</b></td><td>{'open' if t.open else 'closed'}</td>"
            f"<td>{_esc(', '.join(t.servers))}</td><td>{_esc(t.description)}</td></tr>"
            for t in self
        )
        return (
            "<table><thead><tr><th>toolbox</th><th>state</th><th>servers</th><th>description</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
        )

    def __repr__(self) -> str:
        return "\n".join(repr(t) for t in self) if self else "(no toolboxes configured)"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


@dataclass(frozen=True)
class ResourceInfo:
    """A resource (or resource template) a server offers."""

    toolbox: str
    server: str
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    template: bool = False

    @classmethod
    def from_sdk(cls, toolbox: str, server: str, res: Any, *, template: bool) -> ResourceInfo:
        uri = res.uri_template if template else res.uri
        return cls(toolbox, server, str(uri), res.name, res.description, res.mime_type, template)

    def __repr__(self) -> str:
        kind = "template " if self.template else ""
        return f"<Resource {kind}{self.toolbox}/{self.server} {self.uri}: {_first_line(self.description, 60)}>"


@dataclass(frozen=True)
class ResourceResult:
    """What `read_resource` returned: `.text` of the text contents, `.contents`, `.raw`."""

    toolbox: str
    server: str
    uri: str
    raw: Any

    @property
    def contents(self) -> list[Any]:
        return list(self.raw.contents)

    @property
    def text(self) -> str:
        return "\n".join(c.text for c in self.contents if hasattr(c, "text"))

    @property
    def data(self) -> Any:
        return _parse_json_text(self.text)

    def __repr__(self) -> str:
        return f"Resource {self.uri} from {self.toolbox}/{self.server}\n{self.text[:_TEXT_PREVIEW]}"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        return (
            f"<div><b>{_esc(self.uri)}</b> ({_esc(self.toolbox)}/{_esc(self.server)})"
            f"<pre style='white-space:pre-wrap'>{_esc(self.text[: _TEXT_PREVIEW * 5])}</pre></div>"
        )


@dataclass(frozen=True)
class PromptInfo:
    """A prompt a server offers, with its arguments."""

    toolbox: str
    server: str
    name: str
    description: str | None = None
    arguments: tuple[tuple[str, bool, str | None], ...] = ()

    @classmethod
    def from_sdk(cls, toolbox: str, server: str, prompt: Any) -> PromptInfo:
        args = tuple((a.name, bool(a.required), a.description) for a in (prompt.arguments or []))
        return cls(toolbox, server, prompt.name, prompt.description, args)

    @property
    def identifier(self) -> ToolIdentifier:
        return _identifier(self.toolbox, self.server, self.name)

    def __repr__(self) -> str:
        args = ", ".join(f"{n}{'' if req else '?'}" for n, req, _ in self.arguments)
        return f"<Prompt {self.toolbox}/{self.server}/{self.name}({args}): {_first_line(self.description, 60)}>"


@dataclass(frozen=True)
class PromptResult:
    """A rendered prompt: `.messages` as (role, text) pairs, `.raw`."""

    identifier: ToolIdentifier
    raw: Any

    @property
    def messages(self) -> list[tuple[str, str]]:
        out = []
        for m in self.raw.messages:
            content = m.content
            text = getattr(content, "text", None)
            out.append((m.role, text if text is not None else f"<{getattr(content, 'type', 'content')}>"))
        return out

    @property
    def text(self) -> str:
        return "\n\n".join(text for _, text in self.messages)

    def __repr__(self) -> str:
        body = "\n".join(f"[{role}] {text}" for role, text in self.messages)
        return f"Prompt {self.identifier}\n{body}"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        body = "".join(
            f"<div><b>{_esc(role)}</b><pre style='white-space:pre-wrap'>{_esc(text)}</pre></div>"
            for role, text in self.messages
        )
        return f"<div><b>Prompt {_esc(self.identifier)}</b>{body}</div>"
