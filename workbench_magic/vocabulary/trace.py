"""A message trace: the JSON-RPC messages between the workbench and its servers, as on the wire,
and how they show: text in a terminal, a sequence diagram in HTML.

Each `TraceMessage` is one message: its `direction` from the workbench's side (`"sent"` or
`"received"`), its `server` (`"toolbox/server"`), its `time` in seconds since the trace began, and
the `message` itself as a dict. The diagram draws the workbench and each server as lanes and an
arrow per message, each response right under its request, and the rounds of a multi-round-trip
request (a 2026-07-28 `input_required` result, then the retry naming its `requestState`) as one
exchange; clicking an arrow opens the message as JSON (plain HTML `<details>`, no script).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench_magic.vocabulary.rendering import esc

Direction = Literal["sent", "received"]


@dataclass(frozen=True)
class TraceMessage:
    """One JSON-RPC message of a trace."""

    direction: Direction
    server: str
    time: float
    message: dict[str, Any] = field(compare=False)

    @property
    def label(self) -> str:
        """`tools/call #3`, `result #3`, `error #3`, or a notification's method."""
        m = self.message
        key = f" #{m['id']}" if "id" in m else ""
        if "method" in m:
            return f"{m['method']}{key}"
        if "error" in m:
            return f"error{key}"
        kind = (m.get("result") or {}).get("resultType") if isinstance(m.get("result"), dict) else None
        return f"{kind}{key}" if kind == "input_required" else f"result{key}"

    def to_dict(self) -> dict[str, Any]:
        return {"direction": self.direction, "server": self.server, "time": self.time, "message": self.message}


def exchanges(messages: Sequence[TraceMessage]) -> list[list[TraceMessage]]:
    """The messages in exchanges, in the order each began: a request with its response, the rounds
    of a multi-round-trip request together; a notification alone."""
    groups: list[list[TraceMessage]] = []
    open_requests: dict[tuple[str, str, Any], list[TraceMessage]] = {}
    states: dict[tuple[str, Any], list[TraceMessage]] = {}
    for item in messages:
        m = item.message
        if "method" in m and "id" in m:  # a request: a new exchange, or the next round of one
            state = (m.get("params") or {}).get("requestState") if isinstance(m.get("params"), dict) else None
            group = states.pop((item.server, state), None) if state else None
            if group is None:
                group = []
                groups.append(group)
            group.append(item)
            open_requests[(item.server, item.direction, m["id"])] = group
        elif "id" in m and ("result" in m or "error" in m):  # a response: under its request
            asked = "received" if item.direction == "sent" else "sent"
            group = open_requests.pop((item.server, asked, m["id"]), None)
            if group is None:
                groups.append([item])
                continue
            group.append(item)
            result = m.get("result")
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                states[(item.server, result.get("requestState"))] = group
        else:
            groups.append([item])
    return groups


def lanes(messages: Iterable[TraceMessage]) -> list[str]:
    """The servers of a trace, in the order they first appear."""
    return list(dict.fromkeys(item.server for item in messages))


def render_text(messages: Sequence[TraceMessage], *, dropped: int = 0) -> str:
    """One line per message (`0.012 s  -> t/s  tools/call #3`), an exchange's lines together."""
    if not messages:
        return "(no messages)"
    lines = [f"({dropped} older messages dropped)"] if dropped else []
    for group in exchanges(messages):
        for n, item in enumerate(group):
            arrow = "->" if item.direction == "sent" else "<-"
            indent = "  " if n else ""
            lines.append(f"{item.time:8.3f} s  {arrow} {item.server}  {indent}{item.label}")
    return "\n".join(lines)


def render_html(messages: Sequence[TraceMessage], *, dropped: int = 0) -> str:
    """A sequence diagram: the workbench and each server as lanes, an arrow per message; click an
    arrow for the message as JSON."""
    if not messages:
        return "<p>(no messages)</p>"
    servers = lanes(messages)
    columns = f"6em repeat({len(servers) + 1}, minmax(9em, 1fr))"
    grid = f"display:grid;grid-template-columns:{columns};align-items:center;gap:0 4px"
    head = "".join(f"<b style='text-align:center'>{esc(name)}</b>" for name in ["workbench", *servers])
    rows = [f"<div style='{grid};border-bottom:1px solid #ccc'><span></span>{head}</div>"]
    if dropped:
        rows.append(f"<div><i>{dropped} older messages dropped</i></div>")
    for number, group in enumerate(exchanges(messages)):
        shade = "#f6f8fa" if number % 2 else "transparent"
        body = "".join(_arrow(item, servers.index(item.server) + 1, grid) for item in group)
        rows.append(f"<div class='wb-exchange' style='background:{shade}'>{body}</div>")
    return f"<div class='wb-trace' style='font:12px monospace'>{''.join(rows)}</div>"


def _arrow(item: TraceMessage, lane: int, grid: str) -> str:
    sent = item.direction == "sent"
    response = "method" not in item.message
    color = "#b00020" if "error" in item.message else ("#1565c0" if sent else "#2e7d32")
    line = f"border-bottom:2px {'dashed' if response else 'solid'} {color}"
    label = f"{esc(item.label)} ▶" if sent else f"◀ {esc(item.label)}"
    align = "right" if sent else "left"
    arrow = (
        f"<span class='wb-arrow wb-{item.direction}' style='grid-column:2 / span {lane + 1};"
        f"{line};text-align:{align};color:{color};padding:0 2px'>{label}</span>"
    )
    text = esc(json.dumps(item.message, indent=2, ensure_ascii=False))
    summary = f"<summary style='{grid};cursor:pointer;list-style:none'><span>{item.time:.3f} s</span>{arrow}</summary>"
    return f"<details>{summary}<pre style='margin:2px 0 6px 6em'>{text}</pre></details>"


__all__ = ["Direction", "TraceMessage", "exchanges", "lanes", "render_html", "render_text"]
