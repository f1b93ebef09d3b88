"""The ``notes`` demo server: a small notes store and a key-value store, kept in memory.

Run it as ``python -m workbench_magic.demo.notes`` (stdio). State lives as long as the
process: notes added by one call are seen by the next, and vanish when the server stops.
This makes it the demo of a stateful server (and of a destructive tool, ``delete_note``).

Tools: ``add_note``, ``list_notes``, ``get_note``, ``search_notes``, ``delete_note``,
``set_value``, ``get_value``, ``count_words``, ``my_roots``. Resources: ``notes://all`` and
``notes://count``. Prompt: ``summarize_notes``.

The client side of MCP:

* resource subscriptions: ``add_note`` and ``delete_note`` change ``notes://all`` and
  ``notes://count`` and tell the subscribers of each (``resources.subscribe`` is declared). On
  2026-07-28 the client subscribes with a ``subscriptions/listen`` stream and the update arrives on
  it; on 2025-11-25 with ``resources/subscribe``, and the update is a
  ``notifications/resources/updated`` notification;
* roots: ``my_roots`` asks the client for its roots (``roots/list`` mid-call on 2025-11-25, an
  ``InputRequiredResult`` answered by a retry on 2026-07-28) and returns them.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import ListRoots, Resolve
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from workbench_magic.engine.sdk.server import lowlevel_server, session_connection

INSTRUCTIONS = """\
An in-memory notes store for this session. add_note(title, body, tags) creates a note and
returns it with its integer id; list_notes(tag), get_note(id), search_notes(query) and
delete_note(id) work on them. set_value(key, value) and get_value(key) keep arbitrary JSON
values. count_words(text) counts words, characters and lines. Everything is lost when the
server stops. The resource notes://all holds every note as JSON, notes://count how many there are;
both can be subscribed to. my_roots lists the client's roots."""

mcp: MCPServer = MCPServer("notes", instructions=INSTRUCTIONS, log_level="WARNING")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
OVERWRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


class NotesError(ToolError, ValueError):
    """An unknown note id or key.

    It subclasses the SDK's ``ToolError`` so that the message reaches the client in the
    ``is_error`` result (the SDK hides the text of any other exception).
    """


class Note(BaseModel):
    """One note."""

    id: int = Field(description="Identifier, unique within this server process")
    title: str
    body: str
    tags: list[str]
    created: str = Field(description="Creation time, ISO 8601 UTC")


class NoteList(BaseModel):
    """A list of notes (oldest first)."""

    notes: list[Note]


class KeyValue(BaseModel):
    """One entry of the key-value store."""

    key: str
    value: Any


class TextCounts(TypedDict):
    """Word, character and line counts of a text."""

    words: int
    chars: int
    lines: int


class RootInfo(BaseModel):
    """One of the client's roots."""

    uri: str
    name: str | None


class Roots(BaseModel):
    """Result of `my_roots`."""

    roots: list[RootInfo]


class NoteStore:
    """The in-memory state: notes by id, and the key-value store."""

    def __init__(self) -> None:
        """Start empty; ids count from 1."""
        self.notes: dict[int, Note] = {}
        self.values: dict[str, Any] = {}
        self.next_id = 1

    def add(self, title: str, body: str, tags: Sequence[str]) -> Note:
        """Store a new note and return it."""
        created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        note = Note(id=self.next_id, title=title, body=body, tags=list(tags), created=created)
        self.notes[note.id] = note
        self.next_id += 1
        return note

    def get(self, note_id: int) -> Note:
        """The note ``note_id``, or a `NotesError` naming the known ids."""
        note = self.notes.get(note_id)
        if note is None:
            known = ", ".join(str(i) for i in self.notes) or "none"
            raise NotesError(f"Unknown note id {note_id}. Existing ids: {known}")
        return note


STORE = NoteStore()

ALL_URI = "notes://all"
COUNT_URI = "notes://count"


# --------------------------------------------------------------------------- subscriptions

# Handshake-era (2025-11-25) connections that sent resources/subscribe, per URI (by identity).
SUBSCRIBERS: dict[str, dict[int, Connection]] = {}


async def notify_changed(ctx: Context, *uris: str) -> None:
    """Tell the subscribers of ``uris`` that those resources changed, on both protocol eras."""
    for uri in uris:
        # 2026-07-28: the subscriptions/listen streams whose filter names the URI.
        await ctx.notify_resource_updated(uri)
        # 2025-11-25: the connections that sent resources/subscribe for it.
        for key, connection in list(SUBSCRIBERS.get(uri, {}).items()):
            try:
                await connection.send_resource_updated(uri)
            except Exception:  # a connection that is going away
                SUBSCRIBERS[uri].pop(key, None)


async def _subscribe(ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
    """``resources/subscribe`` (2025-11-25): remember the connection until it closes."""
    # Each request has its own ServerSession; the connection behind it is what lives on (and
    # unwinds its exit stack when it closes).
    connection: Connection | None = session_connection(ctx.session)
    if connection is None:  # an SDK without it (tests/engine/sdk guards mcp's): nothing to remember
        return types.EmptyResult()
    subscribers = SUBSCRIBERS.setdefault(str(params.uri), {})
    if id(connection) not in subscribers:
        subscribers[id(connection)] = connection
        connection.exit_stack.callback(subscribers.pop, id(connection), None)
    return types.EmptyResult()


async def _unsubscribe(ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    """``resources/unsubscribe`` (2025-11-25)."""
    SUBSCRIBERS.get(str(params.uri), {}).pop(id(session_connection(ctx.session)), None)
    return types.EmptyResult()


# MCPServer has no decorators for these: register them on its low-level server. Serving
# resources/subscribe is what declares `resources.subscribe` on the handshake era (on 2026-07-28 it
# follows from subscriptions/listen, which MCPServer serves).
lowlevel_server(mcp).add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)
lowlevel_server(mcp).add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, _unsubscribe)


# --------------------------------------------------------------------------- tools

NoteId = Annotated[int, Field(description="Note id, as returned by add_note")]


@mcp.tool(annotations=ADDITIVE)
async def add_note(
    title: Annotated[str, Field(description="Short title")],
    body: Annotated[str, Field(description="Text of the note")],
    ctx: Context,
    tags: Annotated[Sequence[str], Field(description="Tags for filtering with list_notes")] = (),
) -> Note:
    """Add a note and return it, with its new id. Subscribers of notes://all and notes://count are told."""
    note = STORE.add(title, body, tags)
    await notify_changed(ctx, ALL_URI, COUNT_URI)
    return note


@mcp.tool(annotations=READ_ONLY)
async def list_notes(
    tag: Annotated[str | None, Field(description="Only notes with this tag (default: all)")] = None,
) -> NoteList:
    """List the notes, oldest first, optionally only those with a tag."""
    return NoteList(notes=[n for n in STORE.notes.values() if tag is None or tag in n.tags])


@mcp.tool(annotations=READ_ONLY)
async def get_note(id: NoteId) -> Note:
    """Get one note by id."""
    return STORE.get(id)


@mcp.tool(annotations=READ_ONLY)
async def search_notes(
    query: Annotated[str, Field(description="Text to look for (case-insensitive) in titles, bodies and tags")],
) -> NoteList:
    """Find the notes whose title, body or tags contain a text."""
    needle = query.lower()
    return NoteList(
        notes=[
            n
            for n in STORE.notes.values()
            if needle in n.title.lower() or needle in n.body.lower() or any(needle in t.lower() for t in n.tags)
        ]
    )


@mcp.tool(annotations=DESTRUCTIVE)
async def delete_note(id: NoteId, ctx: Context) -> Note:
    """Delete a note for good; returns the deleted note. Subscribers of notes://all and notes://count are told."""
    note = STORE.get(id)
    del STORE.notes[id]
    await notify_changed(ctx, ALL_URI, COUNT_URI)
    return note


@mcp.tool(annotations=OVERWRITE)
async def set_value(
    key: Annotated[str, Field(description="Key to set")],
    value: Annotated[Any, Field(description="Any JSON value")],
) -> KeyValue:
    """Store a JSON value under a key, replacing any previous value."""
    STORE.values[key] = json.loads(json.dumps(value))
    return KeyValue(key=key, value=STORE.values[key])


@mcp.tool(annotations=READ_ONLY)
async def get_value(key: Annotated[str, Field(description="Key to read")]) -> KeyValue:
    """Read the JSON value stored under a key."""
    if key not in STORE.values:
        known = ", ".join(repr(k) for k in STORE.values) or "none"
        raise NotesError(f"Unknown key {key!r}. Existing keys: {known}")
    return KeyValue(key=key, value=STORE.values[key])


@mcp.tool(annotations=READ_ONLY)
async def count_words(text: Annotated[str, Field(description="Text to count")]) -> TextCounts:
    """Count the words (whitespace-separated), characters and lines of a text."""
    return TextCounts(words=len(text.split()), chars=len(text), lines=len(text.splitlines()))


def roots_question() -> ListRoots:
    """Resolver of `my_roots`: ask the client for its roots."""
    return ListRoots()


@mcp.tool(annotations=READ_ONLY)
async def my_roots(result: Annotated[types.ListRootsResult, Resolve(roots_question)]) -> Roots:
    """The client's roots: the directories (file:// URIs) it lets servers work in."""
    return Roots(roots=[RootInfo(uri=str(root.uri), name=root.name) for root in result.roots])


@mcp.resource(ALL_URI, name="all notes", mime_type="application/json")
def all_notes() -> str:
    """Every note, as a JSON array."""
    return json.dumps([n.model_dump() for n in STORE.notes.values()], indent=2)


@mcp.resource(COUNT_URI, name="note count", mime_type="text/plain")
def note_count() -> str:
    """How many notes there are; subscribe to hear when it changes."""
    return str(len(STORE.notes))


@mcp.prompt()
def summarize_notes() -> str:
    """Ask for a summary of every note in the store."""
    if not STORE.notes:
        return "There are no notes yet. Suggest three notes I could add with add_note, with titles and tags."
    listing = "\n\n".join(
        f"[{n.id}] {n.title}" + (f" (tags: {', '.join(n.tags)})" if n.tags else "") + f"\n{n.body}"
        for n in STORE.notes.values()
    )
    return (
        f"Here are my {len(STORE.notes)} notes:\n\n{listing}\n\n"
        "Summarize them in a few bullet points, group related notes, and list any open tasks."
    )


def main() -> None:
    """Run the server over stdio."""
    # Roots and resources/subscribe are deprecated at 2026-07-28 (both eras are served): keep the
    # SDK's warnings about them out of the server's stderr.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    mcp.run()


if __name__ == "__main__":
    main()
