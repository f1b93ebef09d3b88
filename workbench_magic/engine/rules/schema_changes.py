"""Comparing two JSON schemas of a tool: what changed, and whether it breaks a client.

`input_changes(old, new)` and `output_changes(old, new)` return one `SchemaChange` per difference, a
(detail line, breaking) pair naming the argument or output field at fault (`argument 'where[].op':
enum lost '>'`, `output field 'mean' was removed`). The rule for breaking is the client's: an input
schema breaks when it rejects something the old one accepted (a new required argument, a type
narrowed, an enum that lost a value, a bound tightened); an output schema breaks when it may send
something the old one never did (a field gone or maybe absent, a type widened). Local `$ref`s
(`#/$defs/...`, `#/definitions/...`) are resolved first, and an optional model (`anyOf` with null)
compares as the model. `schema_breaks(accepted, now)` is the input half's breaking lines, for
regression tests that pin a tool's accepted arguments.
Plain data: no SDK import, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench_magic.vocabulary.rendering import json_type

_DEPTH = 32
"""How deep schemas are compared (a backstop: recursive `$ref`s stop at their first repeat)."""
_HOPS = 32
"""How many `$ref`s in a row are followed before a schema counts as unknown."""
_SHOWN = 60
"""Characters of a value a detail line shows."""

_TYPE_ORDER = ("string", "number", "integer", "boolean", "object", "array", "null")
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_COMBINATIONS = ("allOf", "anyOf", "oneOf")

SchemaChange = tuple[str, bool]
"""A schema finding: (detail line, breaking)."""

_Add = Callable[[str, bool, bool], None]
"""Adds a finding at the current path: (detail, narrows, widens)."""


def schema_breaks(accepted: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """The ways the input schema `now` rejects arguments the schema `accepted` took, one line per
    finding naming the argument (the `detail` of the diff's breaking input-schema changes); empty
    when `now` accepts everything `accepted` did."""
    return [detail for detail, breaking in input_changes(accepted, now) if breaking]


def input_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[SchemaChange]:
    """Every finding between two input schemas as (detail, breaking): breaking when `new` may
    reject arguments `old` accepted."""
    findings: list[SchemaChange] = []
    _compare(dict(old), dict(new), _Roots(dict(old), dict(new)), "", output=False, seen=frozenset(), into=findings)
    return findings


def output_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[SchemaChange]:
    """Every finding between two output schemas (None: the tool declares none) as (detail,
    breaking): breaking when a field is gone or may hold what `old` never sent."""
    if not old and not new:
        return []
    if not new:
        root = dict(old or {})
        fields = _mapping(_view(_resolve(root, root, []), root, []).get("properties"))
        return [("output schema removed", bool(fields))]
    if not old:
        return [("output schema added", False)]
    findings: list[SchemaChange] = []
    _compare(dict(old), dict(new), _Roots(dict(old), dict(new)), "", output=True, seen=frozenset(), into=findings)
    return findings


@dataclass(frozen=True)
class _Roots:
    """The schemas `$ref`s resolve against."""

    old: dict[str, Any]
    new: dict[str, Any]


def _compare(
    old: Any,
    new: Any,
    roots: _Roots,
    path: str,
    *,
    output: bool,
    seen: frozenset[tuple[tuple[str, ...], tuple[str, ...]]],
    into: list[SchemaChange],
) -> None:
    """Compare the schemas `old` and `new` at `path`, adding the findings `into`."""
    old_refs: list[str] = []
    new_refs: list[str] = []
    before, after = _resolve(old, roots.old, old_refs), _resolve(new, roots.new, new_refs)
    old_view, new_view = _view(before, roots.old, old_refs), _view(after, roots.new, new_refs)
    visit = (tuple(old_refs), tuple(new_refs))
    # A recursive schema repeats a pair of $refs on its own path: it was compared where it began.
    if len(seen) >= _DEPTH or ((old_refs or new_refs) and visit in seen):
        return
    seen = seen | {visit}
    subject = subject_of(path, output)

    def add(detail: str, narrows: bool, widens: bool) -> None:
        # An input breaks when it rejects what it took; an output when it may send what it never did.
        into.append((f"{subject}: {detail}", widens if output else narrows))

    for key in ("title", "description"):
        if old_view.get(key) != new_view.get(key) and path:
            add(f"{key} changed", False, False)
    old_types, new_types = _types(before, roots.old), _types(after, roots.new)
    if old_types is not None and new_types is not None:
        narrows, widens = not _within(old_types, new_types), not _within(new_types, old_types)
        if narrows or widens:
            how = "changed" if narrows and widens else "narrowed" if narrows else "widened"
            add(f"type {how} from {_show_types(old_types)} to {_show_types(new_types)}", narrows, widens)
    _compare_values(old_view, new_view, add)
    if not output:
        _compare_bounds(old_view, new_view, add)
        if old_view.get("additionalProperties") is not False and new_view.get("additionalProperties") is False:
            add("additional properties no longer accepted", True, False)
        elif old_view.get("additionalProperties") is False and new_view.get("additionalProperties") is not False:
            add("additional properties now accepted", False, True)
    if "default" in old_view and "default" in new_view and old_view["default"] != new_view["default"]:
        add(f"default changed from {_value(old_view['default'])} to {_value(new_view['default'])}", False, False)

    old_items, new_items = old_view.get("items"), new_view.get("items")
    if isinstance(old_items, dict) and isinstance(new_items, dict):
        _compare(old_items, new_items, roots, f"{path}[]", output=output, seen=seen, into=into)
    _compare_properties(old_view, new_view, (old_types, new_types), roots, path, output=output, seen=seen, into=into)


def _compare_properties(
    old: dict[str, Any],
    new: dict[str, Any],
    types: tuple[frozenset[str] | None, frozenset[str] | None],
    roots: _Roots,
    path: str,
    *,
    output: bool,
    seen: frozenset[tuple[tuple[str, ...], tuple[str, ...]]],
    into: list[SchemaChange],
) -> None:
    old_props, new_props = old.get("properties"), new.get("properties")
    if not isinstance(old_props, dict) and not isinstance(new_props, dict):
        return
    # A side that is no object at all has no properties to lose: its type change says it.
    if any(t is not None and "object" not in t for t in types):
        return
    old_props, new_props = _mapping(old_props), _mapping(new_props)
    old_required, new_required = _names(old.get("required")), _names(new.get("required"))
    for name in sorted({*old_props, *new_props, *old_required, *new_required}):
        where = f"{path}.{name}" if path else name
        subject = subject_of(where, output)
        in_old, in_new = name in old_props or name in old_required, name in new_props or name in new_required
        if not in_new:
            # A client that sends it may be refused; one that reads it finds nothing.
            into.append((f"{subject} was removed", True))
        elif not in_old:
            if output:
                into.append((f"{subject} is new", False))
            else:
                required = name in new_required
                into.append((f"{subject} is new and {'required' if required else 'optional'}", required))
        else:
            into.extend(_required_change(subject, name in old_required, name in new_required, output=output))
            _compare(
                old_props.get(name, {}), new_props.get(name, {}), roots, where, output=output, seen=seen, into=into
            )


def subject_of(path: str, output: bool) -> str:
    """What a finding at `path` is about: `argument 'where[].op'`, `output field 'mean'`, or the
    whole `input schema` / `output schema`."""
    if output:
        return f"output field '{path}'" if path else "output schema"
    return f"argument '{path}'" if path else "input schema"


def _required_change(subject: str, before: bool, after: bool, *, output: bool = False) -> list[SchemaChange]:
    if before == after:
        return []
    if output:
        return [(f"{subject} is now always present", False)] if after else [(f"{subject} may now be absent", True)]
    return [(f"{subject} became required", True)] if after else [(f"{subject} is no longer required", False)]


def _compare_values(old: dict[str, Any], new: dict[str, Any], add: _Add) -> None:
    """Findings on `enum`, `const`, `pattern` and `format`."""
    old_enum, new_enum = old.get("enum"), new.get("enum")
    if isinstance(old_enum, list) and isinstance(new_enum, list):
        lost = [v for v in old_enum if _key(v) not in {_key(w) for w in new_enum}]
        gained = [v for v in new_enum if _key(v) not in {_key(w) for w in old_enum}]
        if lost:
            add(f"enum lost {_values(lost)}", True, False)
        if gained:
            add(f"enum gained {_values(gained)}", False, True)
    elif isinstance(new_enum, list):
        add(f"enum added ({_values(new_enum)})", True, False)
    elif isinstance(old_enum, list):
        add("enum removed", False, True)
    if "const" in old and "const" in new:
        if _key(old["const"]) != _key(new["const"]):
            add(f"const changed from {_value(old['const'])} to {_value(new['const'])}", True, True)
    elif "const" in new:
        add(f"const {_value(new['const'])} added", True, False)
    elif "const" in old:
        add(f"const {_value(old['const'])} removed", False, True)
    for key in ("pattern", "format"):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if before is None:
            add(f"{key} {_value(after)} added", True, False)
        elif after is None:
            add(f"{key} {_value(before)} removed", False, True)
        else:
            # Whether one pattern accepts all the other did is not decidable here: assume not.
            add(f"{key} changed from {_value(before)} to {_value(after)}", True, True)


def _compare_bounds(old: dict[str, Any], new: dict[str, Any], add: _Add) -> None:
    """Findings on the numeric, length, item and property-count bounds."""
    for key in (*_LOWER_BOUNDS, *_UPPER_BOUNDS):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        lower = key in _LOWER_BOUNDS
        if before is None:
            add(f"{key} {_value(after)} added", True, False)
        elif after is None:
            add(f"{key} {_value(before)} removed", False, True)
        elif _is_number(before) and _is_number(after):
            raised = after > before
            add(
                f"{key} {'raised' if raised else 'lowered'} from {_value(before)} to {_value(after)}",
                raised == lower,
                raised != lower,
            )
        else:  # draft 4: exclusiveMinimum and exclusiveMaximum are flags
            add(f"{key} changed from {_value(before)} to {_value(after)}", after is True, before is True)


def _resolve(schema: Any, root: dict[str, Any], refs: list[str]) -> dict[str, Any]:
    """`schema` with its local `$ref` replaced by what it points to (its other keys kept over the
    target's), following chains; the refs followed are added to `refs`. An unresolvable or
    endless `$ref` gives a schema of unknown type."""
    if not isinstance(schema, dict):
        return {}
    for _ in range(_HOPS):
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return schema
        target = _pointer(root, ref)
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        if not isinstance(target, dict):
            return rest
        refs.append(ref)
        schema = {**target, **rest}
    return {}


def _pointer(root: dict[str, Any], ref: str) -> Any:
    """What a local JSON pointer (`#/$defs/Name`, `#/definitions/Name`, `#`) names in `root`."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _view(schema: dict[str, Any], root: dict[str, Any], refs: list[str]) -> dict[str, Any]:
    """The keywords that constrain a value of `schema`: its own, over those of its `allOf`
    branches and of its only non-null `anyOf`/`oneOf` branch (`Optional[Model]` compares as
    `Model`)."""
    view: dict[str, Any] = {}
    for key in _COMBINATIONS:
        branches = [_resolve(b, root, refs) for b in _list(schema.get(key))]
        if key != "allOf":
            branches = [b for b in branches if b.get("type") != "null"]
            if len(branches) != 1:
                continue
        for branch in branches:
            view.update({k: v for k, v in branch.items() if k not in ("type", *_COMBINATIONS)})
    view.update({k: v for k, v in schema.items() if k not in _COMBINATIONS})
    return view


def _types(schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> frozenset[str] | None:
    """The JSON types `schema` accepts: its `type` with those of its `anyOf`/`oneOf` branches;
    None when unknown (any value, or a branch of unknown type)."""
    if depth > _DEPTH:
        return None
    found: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        found.add(declared)
    elif isinstance(declared, list):
        found.update(t for t in declared if isinstance(t, str))
    branches = [_resolve(b, root, []) for key in ("anyOf", "oneOf") for b in _list(schema.get(key))]
    if branches:
        known = [_types(b, root, depth + 1) for b in branches]
        if any(t is None for t in known) and not found:
            return None
        found.update(t for branch in known if branch is not None for t in branch)
    if not found:
        inferred = _inferred_types(schema, root, depth)
        if inferred is None:
            return None
        found.update(inferred)
    return frozenset(found) or None


def _inferred_types(schema: dict[str, Any], root: dict[str, Any], depth: int) -> frozenset[str] | None:
    """The types of an untyped schema, from its `allOf`, `const`, `enum`, `properties` or `items`."""
    parts = [_types(_resolve(b, root, []), root, depth + 1) for b in _list(schema.get("allOf"))]
    known = [t for t in parts if t is not None]
    if known:
        return frozenset.intersection(*known)
    if "const" in schema:
        return frozenset({json_type(schema["const"])})
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return frozenset(json_type(v) for v in schema["enum"])
    if isinstance(schema.get("properties"), dict):
        return frozenset({"object"})
    if isinstance(schema.get("items"), dict):
        return frozenset({"array"})
    return None


def _within(types: frozenset[str], of: frozenset[str]) -> bool:
    """Whether every value of `types` is one of `of` (an integer is a number)."""
    return all(t in of or (t == "integer" and "number" in of) for t in types)


def _show_types(types: frozenset[str]) -> str:
    """`string`, `string or null`: in a fixed order, so that the same set reads the same."""
    order = {t: n for n, t in enumerate(_TYPE_ORDER)}
    return " or ".join(sorted(types, key=lambda t: (order.get(t, len(order)), t)))


# ---- small helpers ------------------------------------------------------------------------------
def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _names(value: Any) -> set[str]:
    return {v for v in _list(value) if isinstance(v, str)}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _key(value: Any) -> str:
    """A value's identity for enum and const comparison (`1`, `1.0` and `true` stay apart)."""
    return json.dumps(value, sort_keys=True) + type(value).__name__


def _value(value: Any) -> str:
    """A schema value in a detail line: strings quoted (`'kelvin'`), the rest as JSON."""
    text = f"'{value}'" if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _values(values: list[Any]) -> str:
    return ", ".join(_value(v) for v in values)


__all__ = ["SchemaChange", "input_changes", "output_changes", "schema_breaks"]
