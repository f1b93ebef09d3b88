"""Result panes: a `ToolResult` rendered into an `ipywidgets.Output` (safe from any thread)."""

from __future__ import annotations

import html
import json
from typing import Any

from workbench_magic.vocabulary.masking import mask

_ROWS = 200


def _esc(value: object) -> str:
    return html.escape(str(value))


def counted(n: int, noun: str) -> str:
    """`1 key`, `2 keys`: a count with its noun, singular for one."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def json_tree_html(value: Any, depth: int = 0, open_depth: int = 1) -> str:
    """JSON as nested `<details>`: collapsible without any frontend code (also in nbconvert)."""
    if isinstance(value, dict):
        if not value:
            return "<code>{}</code>"
        items = "".join(
            f"<li><b>{_esc(k)}</b>: {json_tree_html(v, depth + 1, open_depth)}</li>" for k, v in value.items()
        )
        summary = f"{{…}} {counted(len(value), 'key')}"
    elif isinstance(value, list):
        if not value:
            return "<code>[]</code>"
        items = "".join(f"<li>{json_tree_html(v, depth + 1, open_depth)}</li>" for v in value[:_ROWS])
        if len(value) > _ROWS:
            items += f"<li><i>… {len(value) - _ROWS} more</i></li>"
        summary = f"[…] {counted(len(value), 'item')}"
    else:
        return f"<code>{_esc(json.dumps(value, ensure_ascii=False))}</code>"
    opened = " open" if depth < open_depth else ""
    return (
        f"<details{opened}><summary>{summary}</summary>"
        f"<ul style='margin:0;padding-left:1.2em;list-style:none'>{items}</ul></details>"
    )


def records_table_html(rows: list[dict[str, Any]]) -> str:
    """A list of records as an HTML table (first 200 rows)."""
    columns = list(dict.fromkeys(k for r in rows[:_ROWS] for k in r))
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_esc(_cell(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows[:_ROWS]
    )
    more = f"<i>… {len(rows) - _ROWS} more rows</i>" if len(rows) > _ROWS else ""
    return f"<table class='wb-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _looks_like_markdown(text: str) -> bool:
    markers = ("# ", "## ", "* ", "- ", "```", "**", "| ", "1. ")
    lines = text.splitlines()
    return any(line.lstrip().startswith(markers) for line in lines) or "](" in text


def schema_check_html(result: Any, output_schema: dict[str, Any] | None) -> str | None:
    """Check structured content against the tool's output schema; None when there is nothing to check."""
    data = result.structured_content
    if not output_schema or data is None:
        return None
    from workbench_magic.engine import schema

    if not schema.compiles(output_schema):
        return "<div style='color:#8a6d00'>output schema is not a valid JSON Schema; not checked</div>"
    found = schema.check(output_schema, data)
    if found is not None:
        where = "/".join(str(p) for p in found.path) or "(root)"
        problem = f"✗ structured content does not match the output schema at {where}: {found.message}"
        return f"<div style='color:#b00020'>{_esc(problem)}</div>"
    return "<div style='color:#1b5e20'>✓ structured content matches the output schema</div>"


_RED = "color:#b00020;white-space:pre-wrap"


def _show(out: Any, html_text: str, plain: str) -> None:
    out.append_display_data(_Bundle({"text/html": html_text, "text/plain": plain}))


def render_markdown(out: Any, text: str) -> None:
    """Show Markdown text in an `Output` (plain text where no front end renders Markdown)."""
    from IPython.display import Markdown

    out.outputs = ()
    if text:
        out.append_display_data(Markdown(text))


def render_error(out: Any, message: str) -> None:
    """An error in red, replacing what the pane showed."""
    out.outputs = ()
    _show(out, f"<div class='wb-error' style='{_RED}'><b>{_esc(message)}</b></div>", message)


def render_message(out: Any, message: str) -> None:
    out.outputs = ()
    _show(out, f"<i>{_esc(message)}</i>", message)


class _Pending:
    """Outputs collected first, so the pane changes once (no half-rendered result to see);
    config secrets are masked in every text the pane shows."""

    def __init__(self, secrets: frozenset[str] = frozenset()) -> None:
        self.outputs: tuple[dict[str, Any], ...] = ()
        self.secrets = secrets

    def append_display_data(self, obj: Any) -> None:
        from IPython.core.interactiveshell import InteractiveShell

        formatter = InteractiveShell.instance().display_formatter
        assert formatter is not None
        data, metadata = formatter.format(obj)
        if self.secrets:
            data = {
                k: mask(v, self.secrets) if isinstance(v, str) and k.startswith("text/") else v for k, v in data.items()
            }
        self.outputs += ({"output_type": "display_data", "data": data, "metadata": metadata},)


def _masked(mimetype: str, value: Any, secrets: frozenset[str]) -> Any:
    return mask(value, secrets) if isinstance(value, str) and mimetype.startswith("text/") else value


def render_result(out: Any, result: Any, output_schema: dict[str, Any] | None = None, app: Any = None) -> None:
    """Show a `ToolResult`: status line, errors in red, structured data (table and JSON tree), text
    (markdown when it looks like it), images, other blocks. Replaces what the pane showed, at once.

    `app` is the widget of the result's MCP App, shown in place of the data's table and tree (as a
    cell shows it), or the one line saying why the app cannot show (then in red, over the data)."""
    pending = _Pending(getattr(result, "secrets", frozenset()))
    _render_result(pending, result, output_schema, app)
    out.outputs = pending.outputs


def _render_result(out: _Pending, result: Any, output_schema: dict[str, Any] | None, app: Any) -> None:
    from IPython.display import Image, Markdown

    status = "error" if result.is_error else "ok"
    color = "#b00020" if result.is_error else "#1b5e20"
    replayed = getattr(result, "replayed", False)
    line = f"{result.identifier} [{status}, {result.elapsed * 1000:.0f} ms{', replayed' if replayed else ''}]"
    badge = " <span class='wb-replayed' style='background:#e3e8f4;padding:0 4px'>replayed</span>" if replayed else ""
    framed = app is not None and not isinstance(app, str) and not result.is_error
    of_app = f"(MCP App {result.app.resource_uri})" if framed else ""
    mark = f" <i>{_esc(of_app)}</i>" if framed else ""
    status_html = f"<div class='wb-result-status' style='color:{color}'><b>{_esc(line)}</b>{badge}{mark}</div>"
    _show(out, status_html, f"{line} {of_app}".rstrip())
    if result.is_error:
        text = result.text or "the tool reported an error without a message"
        _show(out, f"<div class='wb-error' style='{_RED}'>{_esc(text)}</div>", text)
        return
    if isinstance(app, str):
        _show(out, f"<div class='wb-error' style='{_RED}'>{_esc(app)}</div>", app)
    elif framed:
        out.append_display_data(app)
    data = result.structured_content
    if data is not None:
        from workbench_magic.vocabulary.results import find_table

        if not framed:  # the app shows the data its own way
            table = find_table(data)
            if isinstance(table, list):
                _show(out, records_table_html(table), repr(table))
            _show(out, f"<div class='wb-json'>{json_tree_html(data)}</div>", json.dumps(data))
        check = schema_check_html(result, output_schema)
        if check:
            _show(out, check, html.unescape(check))
    texts = [b.text for b in result.content if getattr(b, "type", None) == "text"]
    for text in texts:
        if data is not None and _same_json(text, data):
            continue  # the text block is the structured content again
        if _looks_like_markdown(text):
            out.append_display_data(Markdown(text))
        else:
            _show(out, f"<pre class='wb-text' style='white-space:pre-wrap'>{_esc(text)}</pre>", text)
    for image in result.images:
        fmt = image.mime_type.split("/")[-1]
        out.append_display_data(Image(data=image.data, format=fmt))
    for block in result.content:
        if getattr(block, "type", None) not in ("text", "image"):
            dumped = block.model_dump(mode="json", exclude_none=True)
            _show(out, json_tree_html(dumped), json.dumps(dumped))


def _same_json(text: str, data: Any) -> bool:
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return bool(parsed == data or (isinstance(data, dict) and data.get("result") == parsed))


class _Bundle:
    """A ready mime bundle for `Output.append_display_data`."""

    def __init__(self, data: dict[str, str]) -> None:
        self.data = data

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self.data
