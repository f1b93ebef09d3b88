"""What the workbench lists and records: tools (`ToolInfo`, with its MCP Apps `ToolUI`), toolboxes,
server statuses, resources and prompts, and the call history.

Plain frozen data; the lists render as tables (`_repr_html_` for notebooks, a readable
`__repr__` for terminals). What a request returns (`ToolResult`, ...) is in results.py.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.rendering import description_html, description_text, esc, first_line, json_dump, shorten

if TYPE_CHECKING:
    from workbench_magic.vocabulary.identifiers import ToolIdentifier


def _identifier(toolbox: str, server: str, name: str) -> ToolIdentifier:
    from workbench_magic.vocabulary.identifiers import ToolIdentifier  # pydantic: loaded on first use

    return ToolIdentifier(toolbox=toolbox, server=server, name=name)


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

    Attributes:
        toolbox: the toolbox it belongs to.
        server: the server that offers it.
        name: its name on the server.
        description: its description (indentation removed), if any.
        input_schema: the JSON schema of its arguments (`{"type": "object"}` when the server gives none).
        output_schema: the JSON schema of its structured content, if it declares one.
        annotations: its hints (`readOnlyHint`, `destructiveHint`, ...), if any.
        title: its display title, if any.
        meta: its `_meta` (where an MCP App's `ui` is), if any.
        execution: its `execution` (`taskSupport`), if any.

    Example:
        ```python
        tool = wb.tool("demo/datasets/query")
        tool.required  # ['dataset']
        list(tool.parameters)  # ['dataset', 'columns', 'where', 'order_by', 'descending', 'limit']
        tool.identifier == wb.tool(tool.path).identifier  # True
        ```
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
        """Build from an SDK `Tool`.

        Args:
            toolbox: the toolbox the server belongs to.
            server: the server that listed the tool.
            tool: the SDK `Tool`.

        Returns:
            The tool's info.
        """
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
    def for_model(self) -> bool:
        """Whether a model may see and call the tool (MCP Apps: a tool only its app may call is not offered)."""
        ui = self.ui
        return ui is None or not ui.app_only

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
        """JSON-ready form (camelCase schema keys, as MCP clients expect).

        Returns:
            `toolbox`, `server`, `name`, `description` (`""` when none) and `inputSchema`; `title`,
            `outputSchema` and `annotations` when set.
        """
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
        return f"<ToolInfo {self.path}: {first_line(description_text(self.description), 70)}>"


def tools_table_html(tools: Sequence[ToolInfo], limit: int | None = None) -> str:
    """An HTML table of tools (used by reprs of tool lists and toolboxes)."""
    shown = tools if limit is None else tools[:limit]
    rows = "".join(
        f"<tr><td><code>{esc(t.path)}</code>{_ui_mark(t)}</td><td>{esc(', '.join(t.parameters))}</td>"
        f"<td>{description_html(first_line(description_text(t.description)))}</td></tr>"
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
        return "\n".join(
            f"{t.path:<{width}}  {first_line(description_text(t.description), 70)}{_ui_mark(t, True)}" for t in self
        )

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


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
            f"<tr><td><b>{esc(t.name)}</b></td><td>{'open' if t.open else 'closed'}</td>"
            f"<td>{esc(', '.join(t.servers))}</td><td>{esc(t.description)}</td></tr>"
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


IDLE = "idle"
"""The status of a lazy server shown from its cached catalog, with no process (engine/lazy.py)."""
AVAILABLE = ("connected", IDLE)
"""Statuses whose tools are known: a live server's, or an idle one's from its cached catalog."""


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
    extensions: tuple[str, ...] = ()
    """The ids of the extensions the server declares (`io.modelcontextprotocol/ui`, `/skills`,
    `/tasks`, any other by its id); those the workbench also offers are the ones in use."""

    @property
    def connected(self) -> bool:
        """Whether the server runs and is connected."""
        return self.status == "connected"

    @property
    def available(self) -> bool:
        """Whether its tools are known: connected, or `idle` (listed from its cached catalog, not
        started; the first use starts it)."""
        return self.status in AVAILABLE

    def __repr__(self) -> str:
        detail = self.error if self.error else f"{self.tool_count} tools, protocol {self.protocol}"
        if self.extensions and not self.error:
            detail += f", extensions {', '.join(short_extension(e) for e in self.extensions)}"
        if self.status == IDLE:
            detail += " (cached catalog, not started)"
        return f"{self.name}: {self.status} ({self.transport}) {detail}"


OFFICIAL_EXTENSIONS = "io.modelcontextprotocol/"


def short_extension(identifier: str) -> str:
    """An extension id as a status line shows it: an official one by its last part (`skills`,
    `tasks`, `ui`), any other whole."""
    return identifier.removeprefix(OFFICIAL_EXTENSIONS)


def status_table_html(servers: Iterable[ServerStatus]) -> str:
    """HTML table of server statuses."""
    rows = []
    for s in servers:
        color = {"connected": "#1b5e20", "failed": "#b00020", "idle": "#555"}.get(s.status, "#8a6d00")
        detail = esc(s.error) if s.error else f"{s.tool_count} tools, protocol {esc(s.protocol)}"
        if s.extensions and not s.error:
            detail += f", extensions {esc(', '.join(short_extension(e) for e in s.extensions))}"
        if s.status == IDLE:
            detail += " <i>(cached catalog, not started)</i>"
        rows.append(
            f"<tr><td><b>{esc(s.name)}</b></td><td style='color:{color}'>{esc(s.status)}</td>"
            f"<td>{esc(s.transport)}</td><td>{detail}</td></tr>"
        )
    return (
        "<table><thead><tr><th>server</th><th>status</th><th>transport</th><th>detail</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


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
    raw: Any = field(default=None, compare=False, repr=False)
    """The SDK's `Resource` or `ResourceTemplate` as the server listed it (what `serve` passes on)."""

    @classmethod
    def from_sdk(cls, toolbox: str, server: str, res: Any, *, template: bool) -> ResourceInfo:
        uri = res.uri_template if template else res.uri
        return cls(toolbox, server, str(uri), res.name, res.description, res.mime_type, template, res)

    def __repr__(self) -> str:
        kind = "template " if self.template else ""
        summary = first_line(description_text(self.description), 60)
        return f"<Resource {kind}{self.toolbox}/{self.server} {self.uri}: {summary}>"


@dataclass(frozen=True)
class PromptInfo:
    """A prompt a server offers, with its arguments."""

    toolbox: str
    server: str
    name: str
    description: str | None = None
    arguments: tuple[tuple[str, bool, str | None], ...] = ()
    raw: Any = field(default=None, compare=False, repr=False)
    """The SDK's `Prompt` as the server listed it (what `serve` passes on)."""

    @classmethod
    def from_sdk(cls, toolbox: str, server: str, prompt: Any) -> PromptInfo:
        args = tuple((a.name, bool(a.required), a.description) for a in (prompt.arguments or []))
        return cls(toolbox, server, prompt.name, prompt.description, args, prompt)

    @property
    def identifier(self) -> ToolIdentifier:
        return _identifier(self.toolbox, self.server, self.name)

    def __repr__(self) -> str:
        args = ", ".join(f"{n}{'' if req else '?'}" for n, req, _ in self.arguments)
        summary = first_line(description_text(self.description), 60)
        return f"<Prompt {self.toolbox}/{self.server}/{self.name}({args}): {summary}>"


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a tool call returned, as the history keeps it (what `wb.export_tests` expects): its
    structured content, else its text (the text of a result with structured content is not kept:
    servers send the same JSON as text)."""

    is_error: bool
    structured_content: Any
    text: str


@dataclass(frozen=True)
class CallRecord:
    """One entry of `Workbench.history`.

    `kind` is `tool` for a tool call, whose `answer` is what the tool returned (a `ToolAnswer`;
    None when the call raised). A request a server
    made of the client is `sampling`, `elicitation` or `roots`, with `identifier.name` that kind,
    `arguments` what was asked and `answer` what was answered.

    A record older than what `Workbench.history_bytes` keeps whole is its summary: `answer` None
    with `answer_dropped` True, and long `arguments` values shortened (`"abc… (+N chars)"`).
    """

    identifier: ToolIdentifier
    arguments: dict[str, Any]
    started: float
    elapsed: float
    ok: bool
    error: str | None = None
    kind: str = "tool"
    answer: Any = None
    answer_dropped: bool = False
    """The answer was dropped to keep the history within `Workbench.history_bytes`."""

    @property
    def label(self) -> str:
        """`toolbox/server/tool`, or `toolbox/server <- kind` for a server's request."""
        ident = self.identifier
        return str(ident) if self.kind == "tool" else f"{ident.toolbox}/{ident.server} <- {self.kind}"

    def __repr__(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.started))
        answer = f" -> {_shown(self.answer)}" if self.kind != "tool" else ""
        return f"{when} {self.label} {_shown(self.arguments)}{answer} {self.elapsed * 1000:.0f} ms {_status(self)}"


def _status(record: CallRecord) -> str:
    """`ok` or `error: ...`, and `(answer dropped)` for a summary."""
    status = "ok" if record.ok else f"error: {record.error or ''}"
    return f"{status} (answer dropped)" if record.answer_dropped else status


def _shown(value: Any) -> str:
    """`value` as one line of JSON, long values shortened (a listing shows a summary)."""
    return json_dump(shorten(value)[0], None)


class History(list[CallRecord]):
    """Every call of the session, oldest first."""

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{esc(time.strftime('%H:%M:%S', time.localtime(r.started)))}</td>"
            f"<td><code>{esc(r.label)}</code></td><td><code>{esc(_shown(r.arguments))}</code>"
            f"{'' if r.kind == 'tool' else ' → <code>' + esc(_shown(r.answer)) + '</code>'}</td>"
            f"<td>{r.elapsed * 1000:.0f} ms</td><td>{esc(_status(r))}</td></tr>"
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
