"""What requests return: `ToolResult` (a tool call's answer, and how it shows), `ResourceResult`
and `PromptResult`.

Everything here is plain data with rich reprs (`_repr_mimebundle_` / `_repr_html_` for
JupyterLab and nbconvert, a readable `__repr__` for terminals). The MCP SDK types are only
referenced, never imported at module import time. What the workbench lists (`ToolInfo`, ...)
is in listings.py.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.vocabulary.errors import ToolError, import_pandas, request_text
from workbench_magic.vocabulary.masking import mask
from workbench_magic.vocabulary.rendering import esc, json_dump

if TYPE_CHECKING:
    import pandas as pd

    from workbench_magic.vocabulary.identifiers import ToolIdentifier


_TEXT_PREVIEW = 2000


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
    """A result's MCP App, as results see it (api/apps/views.py's `AppView` is the one there is).

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

    A tool that reported an error is a result too (`is_error`); `raise_for_error()` turns it into a
    `ToolError`. In a notebook it shows as a table, JSON, text or images (secrets masked), and with
    its MCP App where the tool has one.

    Attributes:
        identifier: which tool was called.
        raw: the SDK `CallToolResult`.
        elapsed: seconds the call took, client side.
        arguments: the arguments sent.
        secrets: config secrets, masked in what the result shows (its data stays as the tool sent it).
        replayed: True when the answer came from a cassette (`Workbench(replay=...)`), not a live server.
        app: the tool's MCP Apps view (`AppView`) when the tool has a UI and `render_apps` is on.

    Example:
        ```python
        result = wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 5})
        result.is_error  # False: the tool answered
        result.data["rows"][0]  # the structured content (else the text parsed as JSON)
        result.to_pandas()  # the table in `data`, as a DataFrame
        result.raise_for_error().text
        ```
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

        Returns:
            One line per record.

        Raises:
            MissingExtraError: pandas is not installed.
            ToolError: `data` holds no table (`Result of tool 'n' has no tabular data to convert`).
        """
        pd = import_pandas()

        table = find_table(self.data)
        if table is None:
            raise ToolError(f"Result of tool '{self.identifier.name}' has no tabular data to convert")
        return pd.DataFrame(table)

    def error_message(self) -> str:
        """The short error text of a failed call (its text content, first lines).

        The SDK's servers start error texts with their own `Error executing tool NAME: `; that
        prefix is dropped so the workbench's (which names server and toolbox) is not doubled.

        Returns:
            At most three lines of the text, joined in one (then `…` when there were more); `the tool
            reported an error without a message` when it sent no text.
        """
        text = self.text.strip() or "the tool reported an error without a message"
        own = f"Error executing tool {self.identifier.name}: "
        if text.startswith(own) and len(text) > len(own):
            text = text[len(own) :]
        lines = text.splitlines()
        return " ".join(lines[:3]) + (" …" if len(lines) > 3 else "")

    def to_error(self) -> ToolError:
        """The `ToolError` describing this (failed) result.

        Returns:
            `Error executing tool 'n' in server 's' (toolbox 't'): <error_message()>`, with this result
            as its `.result`.
        """
        i = self.identifier
        return ToolError(f"{request_text('call', i.name, i.server, i.toolbox)}: {self.error_message()}", result=self)

    def raise_for_error(self) -> ToolResult:
        """Raise `ToolError` when the tool reported an error; return self otherwise.

        Returns:
            This result, when the tool did not report an error.

        Raises:
            ToolError: the tool reported an error (`to_error()`).

        Example:
            ```python
            rows = wb.call("demo/datasets/query", {"dataset": "penguins"}).raise_for_error().data["rows"]
            ```
        """
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
            dumped = json_dump(data)
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
        out = [f"<div><div style='color:{color}'><b>{esc(self._summary())}</b></div>"]
        data = self.raw.structured_content
        table = find_table(data) if data is not None else None
        if isinstance(table, list) and table:
            cols = list(dict.fromkeys(k for r in table[:200] for k in r))
            head = "".join(f"<th>{esc(c)}</th>" for c in cols)
            body = "".join(
                "<tr>" + "".join(f"<td>{esc(r.get(c, ''))}</td>" for c in cols) + "</tr>" for r in table[:50]
            )
            more = f"<i>… {len(table) - 50} more rows</i>" if len(table) > 50 else ""
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}")
        elif data is not None:
            out.append(f"<pre>{esc(json_dump(data)[: _TEXT_PREVIEW * 5])}</pre>")
        elif self.text:
            out.append(f"<pre style='white-space:pre-wrap'>{esc(self.text[: _TEXT_PREVIEW * 5])}</pre>")
        for img in self.images:
            b64 = base64.b64encode(img.data).decode()
            out.append(f"<img src='data:{esc(img.mime_type)};base64,{b64}'/>")
        if self.app is not None:
            out.append(f"<div><i>{esc(self.app.note)}</i></div>")
        out.append("</div>")
        return "".join(out)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # No `application/json`: JupyterLab, Notebook 7 and VS Code rank their JSON viewer above HTML,
        # and would show a collapsed tree where the table is. `.data` has the data.
        bundle: dict[str, Any] = {"text/plain": repr(self), "text/html": self._repr_html_()}
        pngs = [img for img in self.images if img.mime_type == "image/png"]
        if pngs:
            bundle["image/png"] = base64.b64encode(pngs[0].data).decode()
        if self.app is not None:
            bundle = self.app.widget_bundle(bundle)
        return bundle


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
            f"<div><b>{esc(self.uri)}</b> ({esc(self.toolbox)}/{esc(self.server)})"
            f"<pre style='white-space:pre-wrap'>{esc(self.text[: _TEXT_PREVIEW * 5])}</pre></div>"
        )


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
            f"<div><b>{esc(role)}</b><pre style='white-space:pre-wrap'>{esc(text)}</pre></div>"
            for role, text in self.messages
        )
        return f"<div><b>Prompt {esc(self.identifier)}</b>{body}</div>"
