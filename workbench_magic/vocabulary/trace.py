"""A message trace: the JSON-RPC messages between the workbench and its servers, as on the wire,
and how they show: text in a terminal, a sequence diagram in HTML.

Each `TraceMessage` is one message: its `direction` from the workbench's side (`"sent"` or
`"received"`), its `server` (`"toolbox/server"`), its `time` in seconds since the trace began, and
the `message` itself as a dict. The diagram draws the workbench and each server as lanes and an
arrow per message, each response right under its request, and the rounds of a multi-round-trip
request (a 2026-07-28 `input_required` result, then the retry naming its `requestState`) as one
exchange; clicking an arrow opens the message as JSON (plain HTML `<details>`, no script).

The diagram stays small for any trace (a notebook output of many MB trips the output rate limit
or freezes the browser): it draws the newest messages that fit `DIAGRAM_BUDGET` characters, each
message's long values shortened (`rendering.shorten`). A shortened message is whole one click away
in a static notebook too: the newest ones carry their whole JSON (within `WHOLE_BUDGET`), the
others say which `.messages[i]` of the trace holds it; the Protocol tab asks the kernel instead
(`ask_whole`). The text lists every message in the order seen.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench_magic.vocabulary.listings import short_extension
from workbench_magic.vocabulary.rendering import esc, shorten

Direction = Literal["sent", "received"]

DIAGRAM_BUDGET = 2_000_000
"""Characters the diagram's messages may take (previews included): the newest that fit are drawn."""
WHOLE_BUDGET = 1_000_000
"""Characters of whole messages (of those shown shortened) a diagram carries, newest first."""
PREVIEW_TEXT = 200
"""Characters of a string value a message's preview shows."""
PREVIEW_ITEMS = 50
"""Entries of a list or object a message's preview shows."""
PREVIEW_LIMIT = 4_000
"""Characters of a message's preview (its shortened JSON)."""


@dataclass(frozen=True)
class TraceMessage:
    """One JSON-RPC message of a trace."""

    direction: Direction
    server: str
    time: float
    message: dict[str, Any] = field(compare=False)

    @property
    def label(self) -> str:
        """`tools/call #3`, `result #3`, `result #3 (isError)`, `input_required #3`, `error #3`, or a
        notification's method."""
        m = self.message
        key = f" #{m['id']}" if "id" in m else ""
        if "method" in m:
            return f"{m['method']}{key}"
        if "error" in m:
            return f"error{key}"
        result = _part(m, "result")
        if result.get("resultType") == "input_required":
            return f"input_required{key}"
        return f"result{key} (isError)" if result.get("isError") else f"result{key}"

    @property
    def key(self) -> str:
        """What tells the message from the others of its trace (`0.012345 sent t/s tools/call #3`):
        the diagram's `data-key`, by which the Protocol tab keeps a message open and asks for it whole."""
        return f"{self.time:.6f} {self.direction} {self.server} {self.label}"

    def to_dict(self) -> dict[str, Any]:
        return {"direction": self.direction, "server": self.server, "time": self.time, "message": self.message}


def exchanges(messages: Sequence[TraceMessage]) -> list[list[TraceMessage]]:
    """The messages in exchanges, in the order each began: a request with its response; the rounds
    of a multi-round-trip request together; inside a request's exchange, the progress notifications
    naming its `progressToken`, the `notifications/cancelled` naming it (its `requestId`: a
    cancelled request gets no response, so its exchange ends there but for progress already on its
    way), and the requests and log messages the server sent while it was open (the latest open one:
    on 2025-11-25 a server asks the client mid-call); any other notification alone."""
    groups: list[list[TraceMessage]] = []
    open_requests: dict[tuple[str, str, Any], list[TraceMessage]] = {}
    asking: dict[str, list[list[TraceMessage]]] = {}  # per server: the open sent requests, oldest first
    tokens: dict[tuple[str, Any], list[TraceMessage]] = {}
    states: dict[tuple[str, Any], list[TraceMessage]] = {}
    for item in messages:
        m = item.message
        params = _part(m, "params")
        if "method" in m and "id" in m:  # a request: a new exchange, the next round of one, or inside one
            state = params.get("requestState")
            group = states.pop((item.server, state), None) if state else None
            if group is None and item.direction == "received":
                group = next(iter(reversed(asking.get(item.server, []))), None)
            if group is None:
                group = []
                groups.append(group)
            group.append(item)
            open_requests[(item.server, item.direction, m["id"])] = group
            if item.direction == "sent" and m["method"] != "subscriptions/listen":
                asking.setdefault(item.server, []).append(group)
                token = (params.get("_meta") or {}).get("progressToken")
                if token is not None:
                    tokens[(item.server, token)] = group
        elif "id" in m and ("result" in m or "error" in m):  # a response: under its request
            asked = "received" if item.direction == "sent" else "sent"
            group = open_requests.pop((item.server, asked, m["id"]), None)
            if group is None:
                groups.append([item])
                continue
            group.append(item)
            result = _part(m, "result")
            if result.get("resultType") == "input_required":
                states[(item.server, result.get("requestState"))] = group
            elif asked == "sent":
                _forget(asking.get(item.server, []), group)
                tokens = {key: g for key, g in tokens.items() if g is not group}
        elif (
            m.get("method") == "notifications/cancelled"
            and isinstance(cancelled := params.get("requestId"), str | int)
            and (group := open_requests.get((item.server, item.direction, cancelled)))
        ):
            group.append(item)  # the request stays open: a response may still come
            if item.direction == "sent":
                _forget(asking.get(item.server, []), group)  # it asks the server nothing any more
        elif m.get("method") == "notifications/progress" and (item.server, params.get("progressToken")) in tokens:
            tokens[(item.server, params.get("progressToken"))].append(item)
        elif m.get("method") == "notifications/message" and item.direction == "received" and asking.get(item.server):
            asking[item.server][-1].append(item)
        else:
            groups.append([item])
    return groups


def _part(message: dict[str, Any], key: str) -> dict[str, Any]:
    """`message[key]` when it is an object, else an empty one."""
    value = message.get(key)
    return value if isinstance(value, dict) else {}


def _forget(groups: list[list[TraceMessage]], group: list[TraceMessage]) -> None:
    for n, open_group in enumerate(groups):
        if open_group is group:
            del groups[n]
            return


def lanes(messages: Iterable[TraceMessage]) -> list[str]:
    """The servers of a trace, in the order they first appear."""
    return list(dict.fromkeys(item.server for item in messages))


def render_text(messages: Sequence[TraceMessage], *, dropped: int = 0) -> str:
    """One line per message, in the order seen (`0.012 s  -> t/s  tools/call #3`); a message that
    belongs to an exchange begun before it (a response, progress, a cancel) is indented."""
    if not messages:
        return "(no messages)"
    inside = {id(item) for group in exchanges(messages) for item in group[1:]}
    lines = [f"({dropped} older messages dropped)"] if dropped else []
    for item in messages:
        arrow = "->" if item.direction == "sent" else "<-"
        indent = "  " if id(item) in inside else ""
        lines.append(f"{item.time:8.3f} s  {arrow} {item.server}  {indent}{item.label}")
    return "\n".join(lines)


def render_html(
    messages: Sequence[TraceMessage],
    *,
    dropped: int = 0,
    budget: int = DIAGRAM_BUDGET,
    whole: int = WHOLE_BUDGET,
    ask_whole: bool = False,
    extensions: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """A sequence diagram: the workbench and each server as lanes, an arrow per message between
    their lifelines, each exchange on its own shade; click an arrow for the message as JSON.
    `extensions` (server -> the ids of its extensions) show under each server's name.

    It draws the newest messages whose HTML fits `budget` characters (at least one), each as a
    preview with long values shortened. A shortened message carries its whole JSON while `whole`
    characters last (newest first), else it names the `.messages[i]` that holds it; with
    `ask_whole` it has a `wb-whole` button instead, for a front end to ask for it (`TraceMessage.key`).
    """
    if not messages:
        return "<p>(no messages)</p>"
    servers = lanes(messages)
    drawn: dict[int, str] = {}
    used, whole_left = 0, whole
    for index in range(len(messages) - 1, -1, -1):
        item = messages[index]
        body, took = _body(item, index, whole_left, ask_whole)
        arrow = _arrow(item, servers, body)
        if drawn and used + len(arrow) > budget:
            break
        drawn[id(item)] = arrow
        used, whole_left = used + len(arrow), whole_left - took
    parts = [_head(servers, extensions or {})]
    if dropped:
        parts.append(f"<div><i>{dropped} older messages dropped</i></div>")
    if len(drawn) < len(messages):
        parts.append(
            f"<div><i>{len(messages) - len(drawn)} older messages not drawn (too many to show: the trace's "
            "<code>.messages</code> and <code>.to_json()</code> keep them)</i></div>"
        )
    for number, group in enumerate(exchanges(messages)):
        shown = [drawn[id(item)] for item in group if id(item) in drawn]
        if shown:
            parts.append(_exchange_html(shown, number))
    return f"<div class='wb-trace' style='font:12px monospace'>{''.join(parts)}</div>"


def _grid(servers: Sequence[str]) -> str:
    # Each lane is two columns, so that its lifeline (the line between them) is its centre.
    columns = f"6em repeat({2 * (len(servers) + 1)}, minmax(4.5em, 1fr))"
    return f"display:grid;grid-template-columns:{columns};align-items:end"


def _head(servers: Sequence[str], extensions: Mapping[str, Sequence[str]]) -> str:
    def under(name: str) -> str:
        ids = extensions.get(name)
        if not ids:
            return ""
        shown = " · ".join(short_extension(e) for e in ids)
        return f"<br><span class='wb-trace-extensions' style='font-weight:normal;color:#555'>{esc(shown)}</span>"

    names = "".join(
        f"<b style='grid-column:{2 + 2 * n} / span 2;text-align:center;overflow-wrap:anywhere'>{esc(name)}"
        f"{under(name)}</b>"
        for n, name in enumerate(["workbench", *servers])
    )
    return f"<div style='{_grid(servers)};border-bottom:1px solid #ccc'>{names}</div>"


def _exchange_html(arrows: Sequence[str], number: int) -> str:
    """One exchange, shaded every other time; its parts are messages, each with its lifelines."""
    shade = "#f6f8fa" if number % 2 else "transparent"
    return f"<div class='wb-exchange' style='background:{shade}'>{''.join(arrows)}</div>"


def _color(item: TraceMessage) -> str:
    if "error" in item.message:
        return "#b00020"
    if _part(item.message, "result").get("isError"):
        return "#e65100"
    return "#1565c0" if item.direction == "sent" else "#2e7d32"


def _arrow(item: TraceMessage, servers: Sequence[str], body: str) -> str:
    lane = servers.index(item.server) + 1
    sent = item.direction == "sent"
    color = _color(item)
    response = "method" not in item.message
    lifelines = "".join(
        f"<span style='grid-row:1;grid-column:{3 + 2 * n};align-self:stretch;border-left:1px dotted #aaa'></span>"
        for n in range(len(servers) + 1)
    )
    label = f"{esc(item.label)} ▶" if sent else f"◀ {esc(item.label)}"
    arrow = (
        f"<span class='wb-arrow wb-{item.direction}' style='grid-row:1;grid-column:3 / {3 + 2 * lane};"
        f"border-bottom:2px {'dashed' if response else 'solid'} {color};text-align:{'right' if sent else 'left'};"
        f"color:{color};padding:0 2px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis'>{label}</span>"
    )
    time = f"<span style='grid-row:1;grid-column:1'>{item.time:.3f} s</span>"
    summary = f"<summary style='{_grid(servers)};cursor:pointer;list-style:none'>{time}{lifelines}{arrow}</summary>"
    # data-key: which message a person opened, kept open when the Protocol tab draws again
    return f"<details data-key='{esc(item.key)}'>{summary}{body}</details>"


_PRE = "<pre class='wb-json' style='margin:2px 0 6px 6em;white-space:pre-wrap'>"
_NOTE = "margin:0 0 6px 6em;color:#777"


def _body(item: TraceMessage, index: int, whole_left: int, ask_whole: bool) -> tuple[str, int]:
    """What an opened arrow shows: the message's preview, and for a shortened one the way to the
    whole; and the characters of `whole_left` it took (all of them once one no longer fits)."""
    preview, cut = shorten(item.message, text=PREVIEW_TEXT, items=PREVIEW_ITEMS)
    text = json.dumps(preview, indent=2, ensure_ascii=False, default=str)
    if len(text) > PREVIEW_LIMIT:
        text, cut = f"{text[:PREVIEW_LIMIT]}\n… (+{len(text) - PREVIEW_LIMIT} chars)", True
    pre = f"{_PRE}{esc(text)}</pre>"
    if not cut:
        return pre, 0
    if ask_whole:
        return f"{pre}<button type='button' class='wb-whole' style='{_NOTE}'>whole message</button>", 0
    if whole_left > 0:
        full = esc(json.dumps(item.message, indent=2, ensure_ascii=False, default=str))
        if len(full) <= whole_left:
            opener = f"<summary style='cursor:pointer;{_NOTE}'>whole message</summary>"
            return f"{pre}<details class='wb-whole'>{opener}{_PRE}{full}</pre></details>", len(full)
        taken = whole_left  # the budget ends at the first that does not fit: no more whole dumps
    else:
        taken = 0
    where = f"shortened: the trace's <code>.messages[{index}]</code> holds it whole (and its <code>.to_json()</code>)"
    return f"{pre}<div style='{_NOTE}'>{where}</div>", taken


__all__ = ["Direction", "TraceMessage", "exchanges", "lanes", "render_html", "render_text"]
