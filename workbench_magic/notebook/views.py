"""Display objects the magics return: readable in JupyterLab (HTML), nbconvert and terminals (text)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.listings import ServerStatus, ToolInfo, status_table_html
from workbench_magic.vocabulary.masking import mask
from workbench_magic.vocabulary.rendering import description_html, description_text

if TYPE_CHECKING:
    from workbench_magic.api.tasks.handles import TaskHandle
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.config.settings import WorkbenchConfig


def _esc(value: object) -> str:
    return html.escape(str(value))


class _View:
    """Text is the source of truth; HTML wraps or tabulates it."""

    def __repr__(self) -> str:
        return self.text()

    def text(self) -> str:
        raise NotImplementedError

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())

    def _repr_html_(self) -> str:
        return f"<pre style='white-space:pre-wrap'>{_esc(self.text())}</pre>"


@dataclass(repr=False)
class TextView(_View):
    """A block of text (help, logs), shown preformatted."""

    body: str
    title: str = ""

    def text(self) -> str:
        return f"{self.title}\n{self.body}" if self.title else self.body

    def _repr_html_(self) -> str:
        title = f"<b>{_esc(self.title)}</b>" if self.title else ""
        return f"<div>{title}<pre style='white-space:pre-wrap'>{_esc(self.body)}</pre></div>"


@dataclass(repr=False)
class TableView(_View):
    """Rows of equal-length cells with a header."""

    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    title: str = ""
    empty: str = "(nothing)"

    def text(self) -> str:
        if not self.rows:
            return f"{self.title}\n{self.empty}".strip()
        cells = [[str(c) for c in self.columns], *[[str(c) for c in r] for r in self.rows]]
        widths = [min(60, max(len(r[i]) for r in cells)) for i in range(len(self.columns))]
        lines = ["  ".join(c[:60].ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join([self.title, *lines] if self.title else lines)

    def _repr_html_(self) -> str:
        if not self.rows:
            return f"<div><b>{_esc(self.title)}</b> <i>{_esc(self.empty)}</i></div>"
        head = "".join(f"<th>{_esc(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        title = f"<b>{_esc(self.title)}</b>" if self.title else ""
        return f"<div>{title}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


class StatusView(_View):
    """`%workbench status`: the config in use, the toolboxes, and every open server."""

    def __init__(self, workbench: Workbench) -> None:
        self.source = workbench.config_source
        self.toolboxes = workbench.toolboxes()
        self.servers: dict[str, dict[str, ServerStatus]] = workbench.status()

    def text(self) -> str:
        lines = [f"config: {self.source}"]
        for tb in self.toolboxes:
            lines.append(f"{tb.name} [{'open' if tb.open else 'closed'}]: {tb.description}")
            for status in self.servers.get(tb.name, {}).values():
                lines.append(f"  {status!r}")
        if not self.toolboxes:
            lines.append("(no toolboxes configured)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = [f"<div><b>config:</b> <code>{_esc(self.source)}</code>"]
        for tb in self.toolboxes:
            state = "open" if tb.open else "closed"
            parts.append(f"<div><b>{_esc(tb.name)}</b> [{state}] <i>{_esc(tb.description)}</i></div>")
            if tb.name in self.servers:
                parts.append(status_table_html(self.servers[tb.name].values()))
        parts.append("</div>")
        return "".join(parts)


class ConfigView(_View):
    """`%workbench config`: where the config came from and what it defines (no secret values)."""

    def __init__(self, config: WorkbenchConfig) -> None:
        self.config = config

    def text(self) -> str:
        lines = [f"config: {self.config.source}"]
        for name, tb in self.config.toolboxes.items():
            lines.append(f"{name}: {tb.description}")
            for server, cfg in tb.mcp_servers.items():
                lines.append(f"  {server} ({cfg.transport}): {self._target(cfg)}")
        return "\n".join(lines)

    @staticmethod
    def _target(cfg: Any) -> str:
        if cfg.transport == "stdio":
            where = " ".join([cfg.command or "", *cfg.args])
        elif cfg.transport == "python":
            where = cfg.python or ""
        else:
            where = cfg.url or ""
        where = mask(where, cfg.secrets)
        extras = []
        if cfg.env:
            extras.append(f"env: {', '.join(cfg.env)}")
        if cfg.headers:
            extras.append(f"headers: {', '.join(cfg.headers)}")
        if cfg.tool_filters is not None:
            extras.append(f"tools: {', '.join(cfg.tool_filters)}")
        if getattr(cfg, "auth", None) is not None:
            extras.append("auth: bearer" if cfg.auth.bearer is not None else "auth: oauth")
        return where + (f" [{'; '.join(extras)}]" if extras else "")


class ToolDescription(_View):
    """`%workbench describe`: description, input schema and a ready `%%use_tool` cell."""

    def __init__(self, tool: ToolInfo) -> None:
        self.tool = tool

    def example_cell(self) -> str:
        import yaml

        from workbench_magic.engine.schema import example_arguments

        required, optional = example_arguments(self.tool)
        lines = [f"%%use_tool {self.tool.path}"]
        for name, value in required.items():
            lines.append(_yaml_line(yaml, name, value))
        for name, value in optional.items():
            lines.append("# " + _yaml_line(yaml, name, value).replace("\n", "\n# "))
        return "\n".join(lines)

    def text(self) -> str:
        t = self.tool
        badges = ", ".join(k for k, v in (t.annotations or {}).items() if v is True)
        described = description_text(t.description).strip() or "(no description)"
        lines = [t.path + (f" ({badges})" if badges else ""), "", described, ""]
        lines.append("input schema:")
        lines.append(json.dumps(t.input_schema, indent=2))
        if t.output_schema:
            lines += ["", "output schema:", json.dumps(t.output_schema, indent=2)]
        lines += ["", "example:", self.example_cell()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        t = self.tool
        badges = "".join(
            f"<span style='border:1px solid #888;border-radius:3px;padding:0 3px;margin-left:4px'>{_esc(k)}</span>"
            for k, v in (t.annotations or {}).items()
            if v is True
        )
        described = description_html((t.description or "").strip() or "(no description)")
        out = [
            f"<div><b><code>{_esc(t.path)}</code></b>{badges}",
            f"<p style='white-space:pre-wrap'>{described}</p>",
            "<details open><summary>input schema</summary>",
            f"<pre>{_esc(json.dumps(t.input_schema, indent=2))}</pre></details>",
        ]
        if t.output_schema:
            out.append(
                "<details><summary>output schema</summary>"
                f"<pre>{_esc(json.dumps(t.output_schema, indent=2))}</pre></details>"
            )
        out.append(f"<b>example</b><pre>{_esc(self.example_cell())}</pre></div>")
        return "".join(out)


def _yaml_line(yaml: Any, name: str, value: Any) -> str:
    dumped = yaml.safe_dump({name: value}, default_flow_style=None, sort_keys=False, allow_unicode=True)
    return str(dumped).rstrip("\n")


def show_task_line(handle: TaskHandle) -> None:
    """Show a `wb.start` handle as one line in the cell, updated in place on the kernel's loop as
    the task moves on; once the work has ended, the line becomes its result (or its error)."""
    import asyncio

    from IPython.display import display

    from workbench_magic.engine.runtime import LoopChannel
    from workbench_magic.vocabulary.errors import WorkbenchError

    shown = display(TextView(handle.line()), display_id=True)
    try:
        loop = asyncio.get_running_loop()  # a kernel runs its cells on its loop
    except RuntimeError:
        return  # no loop to update on: the line stays as it was when shown
    stop: Any = None

    def update(current: TaskHandle) -> None:
        if not current.done():
            shown.update(TextView(current.line()))
            return
        if stop is not None:
            stop()
        try:
            shown.update(current.result())
        except (WorkbenchError, TimeoutError):
            shown.update(TextView(current.line()))

    stop = handle.listen(update, LoopChannel(loop))

    def tick() -> None:  # the elapsed time moves on between changes of state
        if not handle.done():
            shown.update(TextView(handle.line()))
            loop.call_later(1.0, tick)

    loop.call_later(1.0, tick)
