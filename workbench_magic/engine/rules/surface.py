"""The surface of a toolbox (what its servers offer) as plain data, and what changed between two.

A `Snapshot` holds, per server, its server info and its tools, resources, resource templates and
prompts as the server lists them; `save()` writes it as stable JSON (sorted keys, so that two
snapshots of the same surface are the same bytes and a version control diff shows only changes)
and `Snapshot.load()` reads it back. `diff_snapshots(old, new)` returns a `Diff`: one `Change` per
finding, each marked `breaking` when a client written against `old` could fail against `new` (a
tool gone, an argument that is new and required, a type narrowed, an enum that lost a value, an
output field removed, ...), so that a server author can gate a release on `diff.breaking`.

This module compares servers, items, their plain fields and prompt arguments; a tool's input and
output schemas are compared by engine/rules/schema_changes.py, whose `schema_breaks`,
`input_changes`, `output_changes` and `SchemaChange` are re-exported here. A tool whose new input schema
a model provider rejects, where it accepted the old one, is a breaking finding of its own
(`no longer portable to gemini (...): <reasons>`, engine/rules/portability.py's rules).
Plain data: no SDK import, no I/O but `save` and `load`.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench_magic.engine.rules.portability import unportable
from workbench_magic.engine.rules.schema_changes import (
    _SHOWN,
    SchemaChange,
    _mapping,
    _required_change,
    input_changes,
    output_changes,
    schema_breaks,
)
from workbench_magic.vocabulary.errors import UsageError, raise_alone
from workbench_magic.vocabulary.portability import MODES
from workbench_magic.vocabulary.rendering import esc

FORMAT = "workbench-magic snapshot 1"
"""The `"format"` key of a saved snapshot: how a file is recognised as one."""

KINDS = ("server", "tool", "resource", "resource template", "prompt")
"""The kinds of a `Change`, in the order a diff lists them."""

#: The section of a server's surface that holds each kind of item.
_SECTIONS = {"tool": "tools", "resource": "resources", "resource template": "resourceTemplates", "prompt": "prompts"}

#: Keys whose values are prose: a change is named, not shown.
_PROSE = ("title", "description", "instructions")


# ---- snapshot -----------------------------------------------------------------------------------
class Snapshot:
    """One toolbox's surface, kept as a deep copy of the data given.

    The data: `{"toolbox": name, "servers": {server name: {"server": info, "tools": {name: tool},
    "resources": {uri: resource}, "resourceTemplates": {uriTemplate: template}, "prompts": {name: prompt}}}}`.

    `wb.snapshot(toolbox)` takes one; two snapshots are equal when their data is.

    Args:
        data: the surface, as above (a saved file's `"format"` key is dropped).

    Raises:
        ValueError: `data` has no `"toolbox"` string or no `"servers"` object.

    Example:
        ```python
        snapshot = wb.snapshot("demo")
        sorted(snapshot.servers["datasets"]["tools"])
        snapshot.save("demo-surface.json")
        Snapshot.load("demo-surface.json") == snapshot  # True
        ```
    """

    def __init__(self, data: Mapping[str, Any]) -> None:
        if not isinstance(data, Mapping):
            raise ValueError(f"A snapshot is a dict, not {type(data).__name__}")
        if not isinstance(data.get("toolbox"), str):
            raise ValueError("A snapshot needs a 'toolbox' string")
        if not isinstance(data.get("servers"), dict):
            raise ValueError("A snapshot needs a 'servers' object (server name -> surface)")
        self._data: dict[str, Any] = {k: copy.deepcopy(v) for k, v in data.items() if k != "format"}

    @property
    def toolbox(self) -> str:
        """The toolbox's name."""
        return str(self._data["toolbox"])

    @property
    def servers(self) -> dict[str, Any]:
        """`{server name: surface}`, the snapshot's own dict."""
        servers: dict[str, Any] = self._data["servers"]
        return servers

    def to_dict(self) -> dict[str, Any]:
        """The data as a deep copy (without the `"format"` key of a saved file)."""
        return copy.deepcopy(self._data)

    # ---- files ------------------------------------------------------------------------------
    def to_json(self) -> str:
        """The snapshot as the text `save()` writes; the same surface gives the same text.

        JSON with sorted keys, a two-space indent, `"format": "workbench-magic snapshot 1"` and a
        trailing newline.

        Returns:
            The JSON text.
        """
        return json.dumps({**self._data, "format": FORMAT}, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write `to_json()` to `path` (UTF-8).

        Args:
            path: the file to write.

        Returns:
            The path.
        """
        Path(path).write_text(self.to_json(), encoding="utf-8", newline="\n")
        return str(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Snapshot:
        """Read a snapshot `save()` wrote.

        Args:
            path: the file to read.

        Returns:
            The snapshot.

        Raises:
            UsageError: the file cannot be read or is not a snapshot (the message names the path).
        """
        problem = None
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problem = f"Cannot read snapshot {path}: {getattr(exc, 'strerror', None) or exc}"
        if problem is not None:
            raise_alone(UsageError(problem))
        reason = None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            reason = f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        if reason is None:
            reason = _not_a_snapshot(data)
        if reason is None:
            try:
                return cls(data)
            except ValueError as exc:
                reason = str(exc)
        raise_alone(UsageError(f"{path} is not a workbench-magic snapshot: {reason}"))

    # ---- comparison and reprs ---------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Snapshot):
            return NotImplemented
        return self._data == other._data

    __hash__ = None  # type: ignore[assignment]

    def _counts(self) -> list[tuple[str, str, list[int], list[str]]]:
        """Per server: (name, info, counts of tools/resources/templates/prompts, tool names)."""
        rows = []
        for name, surface in sorted(self.servers.items()):
            surface = surface if isinstance(surface, dict) else {}
            counts = [len(_section(surface, _SECTIONS[kind])) for kind in KINDS[1:]]
            rows.append((name, _show(surface.get("server")), counts, sorted(_section(surface, "tools"))))
        return rows

    def _summary(self) -> str:
        n = len(self.servers)
        return f"Snapshot of {self.toolbox}: {n} server{'s' if n != 1 else ''}"

    def __repr__(self) -> str:
        lines = [self._summary()]
        for name, info, counts, tools in self._counts():
            shown = ", ".join(_count(n, kind) for n, kind in zip(counts, KINDS[1:], strict=True))
            lines.append(f"  {name} ({info}): {shown}")
            if tools:
                lines.append(f"    tools: {', '.join(tools)}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if not cycle else "Snapshot(...)")

    def _repr_html_(self) -> str:
        head = "".join(
            f"<th>{h}</th>" for h in ("server", "info", "tools", "resources", "templates", "prompts", "tool names")
        )
        body = "".join(
            f"<tr><td>{esc(name)}</td><td>{esc(info)}</td>{''.join(f'<td>{n}</td>' for n in counts)}"
            f"<td>{esc(', '.join(tools))}</td></tr>"
            for name, info, counts, tools in self._counts()
        )
        return (
            f"<div><b>{esc(self._summary())}</b>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )


def _not_a_snapshot(data: Any) -> str | None:
    """Why loaded JSON is not a saved snapshot, or None when it is one."""
    if not isinstance(data, dict):
        return f"not a JSON object but {type(data).__name__}"
    if "format" not in data:
        return "no 'format' key"
    if data["format"] != FORMAT:
        return f"format is {_show(data['format'])!r}, expected {FORMAT!r}"
    return None


def _count(n: int, kind: str) -> str:
    return f"{n} {kind}{'s' if n != 1 else ''}"


# ---- diff ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """One finding of a diff.

    Attributes:
        server: the server's name.
        kind: `"server"`, `"tool"`, `"resource"`, `"resource template"` or `"prompt"`.
        item: the tool's or prompt's name, the resource's URI, the template's URI template; the
            server's name for kind `"server"`.
        change: `"added"`, `"removed"` or `"changed"`.
        detail: one readable line (`argument 'language' is new and required`; `added` and
            `removed` for an item added or removed).
        breaking: whether a client written against the old surface could fail against the new.
    """

    server: str
    kind: str
    item: str
    change: str
    detail: str
    breaking: bool


class Diff:
    """What changed between two snapshots (`diff_snapshots`): `changes`, one `Change` per finding.

    The changes are ordered by server, then kind, then item. True when anything changed;
    `breaking` when any change could break a client. `Workbench.diff(old, new)` makes one;
    `len(diff)` is the number of changes.

    Args:
        changes: the findings, in any order.
        toolbox: the toolbox compared (`old -> new` when the names differ).

    Attributes:
        toolbox: the toolbox compared.
        changes: the findings, sorted.

    Example:
        ```python
        diff = Workbench.diff("demo-surface.json", wb.snapshot("demo"))
        if diff.breaking:
            print([f"{c.server} {c.kind} {c.item}: {c.detail}" for c in diff.changes if c.breaking])
        ```
    """

    def __init__(self, changes: Iterable[Change] = (), *, toolbox: str = "") -> None:
        self.toolbox = toolbox
        self.changes: list[Change] = sorted(changes, key=lambda c: (c.server, KINDS.index(c.kind), c.item))

    @property
    def breaking(self) -> bool:
        """Whether any change could break a client."""
        return any(c.breaking for c in self.changes)

    @property
    def added(self) -> list[Change]:
        """The servers and items added."""
        return [c for c in self.changes if c.change == "added"]

    @property
    def removed(self) -> list[Change]:
        """The servers and items removed."""
        return [c for c in self.changes if c.change == "removed"]

    @property
    def changed(self) -> list[Change]:
        """The findings on servers and items present in both snapshots."""
        return [c for c in self.changes if c.change == "changed"]

    def __bool__(self) -> bool:
        return bool(self.changes)

    def __len__(self) -> int:
        return len(self.changes)

    def _summary(self) -> str:
        name = f" of {self.toolbox}" if self.toolbox else ""
        if not self.changes:
            return f"Diff{name}: no changes"
        breaking = sum(1 for c in self.changes if c.breaking)
        return f"Diff{name}: {_count(len(self.changes), 'change')}, {breaking} breaking"

    def __repr__(self) -> str:
        width = max((len(c.server) for c in self.changes), default=0)
        lines = [self._summary()]
        lines.extend(
            f"{'BREAKING' if c.breaking else '':10}{c.server:<{width}}  {c.kind} {c.item}: {c.detail}"
            for c in self.changes
        )
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if not cycle else "Diff(...)")

    def _repr_html_(self) -> str:
        rows = []
        for c in self.changes:
            style = " style='background:#fdecee;color:#b00020'" if c.breaking else ""
            rows.append(
                f"<tr{style}><td>{'BREAKING' if c.breaking else ''}</td><td>{esc(c.server)}</td><td>{esc(c.kind)}</td>"
                f"<td><code>{esc(c.item)}</code></td><td>{esc(c.change)}</td><td>{esc(c.detail)}</td></tr>"
            )
        head = "".join(f"<th>{h}</th>" for h in ("", "server", "kind", "item", "change", "detail"))
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>" if rows else ""
        return f"<div><b>{esc(self._summary())}</b>{table}</div>"


def diff_snapshots(old: Snapshot, new: Snapshot) -> Diff:
    """What changed from `old` to `new`: servers added and removed, and per server its info and
    the tools, resources, resource templates and prompts added, removed and changed (a rename is a
    removal and an addition). Removals, and schema and argument changes a client could trip on,
    are breaking."""
    changes: list[Change] = []
    for server in sorted({*old.servers, *new.servers}):
        if server not in new.servers:
            changes.append(Change(server, "server", server, "removed", "removed", True))
        elif server not in old.servers:
            changes.append(Change(server, "server", server, "added", "added", False))
        else:
            changes.extend(_server_changes(server, _mapping(old.servers[server]), _mapping(new.servers[server])))
    toolbox = new.toolbox if old.toolbox == new.toolbox else f"{old.toolbox} -> {new.toolbox}"
    return Diff(changes, toolbox=toolbox)


def _server_changes(server: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    sections = {"server", *_SECTIONS.values()}
    findings = _field_changes(old, new, skip=sections)
    if old.get("server") != new.get("server"):
        findings.insert(0, (f"server info changed: {_show(old.get('server'))} -> {_show(new.get('server'))}", False))
    changes = [Change(server, "server", server, "changed", detail, breaking) for detail, breaking in findings]
    for kind, section in _SECTIONS.items():
        before, after = _section(old, section), _section(new, section)
        for item in sorted({*before, *after}):
            if item not in after:
                changes.append(Change(server, kind, item, "removed", "removed", True))
            elif item not in before:
                changes.append(Change(server, kind, item, "added", "added", False))
            else:
                for detail, breaking in _item_changes(kind, _mapping(before[item]), _mapping(after[item])):
                    changes.append(Change(server, kind, item, "changed", detail, breaking))
    return changes


def _item_changes(kind: str, old: dict[str, Any], new: dict[str, Any]) -> list[SchemaChange]:
    if kind == "tool":
        schemas = ("inputSchema", "outputSchema")
        findings = _field_changes(old, new, first=("title", "description"), skip=(*schemas, "annotations"))
        findings += input_changes(_mapping(old.get("inputSchema")), _mapping(new.get("inputSchema")))
        findings += _portability_changes(old.get("inputSchema"), new.get("inputSchema"))
        findings += output_changes(old.get("outputSchema"), new.get("outputSchema"))
        for key in sorted({*_mapping(old.get("annotations")), *_mapping(new.get("annotations"))}):
            before, after = _mapping(old.get("annotations")).get(key), _mapping(new.get("annotations")).get(key)
            if before != after:
                findings.append((f"annotation {key} changed: {_show(before)} -> {_show(after)}", False))
        return findings
    if kind == "prompt":
        findings = _field_changes(old, new, first=("title", "description"), skip=("arguments",))
        return findings + _prompt_argument_changes(old.get("arguments"), new.get("arguments"))
    return _field_changes(old, new, first=("name", "title", "description", "mimeType"))


def _field_changes(
    old: dict[str, Any], new: dict[str, Any], *, first: Iterable[str] = (), skip: Iterable[str] = ()
) -> list[SchemaChange]:
    """The plain fields that differ: prose named (`description changed`), others shown
    (`mimeType changed: text/plain -> text/csv`); `first` in its order, then the rest sorted."""
    skipped = set(skip)
    ordered = list(first)
    keys = [*ordered, *sorted({*old, *new} - skipped - set(ordered))]
    findings: list[SchemaChange] = []
    for key in keys:
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if key in _PROSE:
            findings.append((f"{key} changed", False))
        else:
            findings.append((f"{key} changed: {_show(before)} -> {_show(after)}", False))
    return findings


def _portability_changes(old: Any, new: Any) -> list[SchemaChange]:
    """A provider that accepted the old input schema and rejects the new one: breaking, a finding of its own
    (engine/rules/portability.py's rules)."""
    if old == new:
        return []
    return [
        (f"no longer portable to {provider} ({MODES[provider]}): {'; '.join(reasons)}", True)
        for provider, reasons in unportable(_schema(old), _schema(new))
    ]


def _prompt_argument_changes(old: Any, new: Any) -> list[SchemaChange]:
    before, after = _arguments(old), _arguments(new)
    findings: list[SchemaChange] = []
    for name in sorted({*before, *after}):
        subject = f"argument '{name}'"
        if name not in after:
            findings.append((f"{subject} was removed", True))
        elif name not in before:
            required = bool(after[name].get("required"))
            findings.append((f"{subject} is new and {'required' if required else 'optional'}", required))
        else:
            findings += _required_change(subject, bool(before[name].get("required")), bool(after[name].get("required")))
            findings += [
                (f"{subject}: {detail}", False)
                for detail, _ in _field_changes(before[name], after[name], skip=("name", "required"))
            ]
    return findings


def _arguments(value: Any) -> dict[str, dict[str, Any]]:
    """A prompt's arguments by name."""
    items = value if isinstance(value, list) else []
    return {str(a["name"]): a for a in items if isinstance(a, dict) and "name" in a}


# ---- small helpers ------------------------------------------------------------------------------
def _schema(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _section(surface: dict[str, Any], key: str) -> dict[str, Any]:
    return _mapping(surface.get(key))


def _show(value: Any) -> str:
    """A field's value in a detail line: `(none)`, a string as is, the rest as JSON, cut short."""
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


__all__ = [
    "FORMAT",
    "KINDS",
    "Change",
    "Diff",
    "SchemaChange",
    "Snapshot",
    "diff_snapshots",
    "input_changes",
    "output_changes",
    "schema_breaks",
]
