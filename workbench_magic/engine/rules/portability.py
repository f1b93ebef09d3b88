"""Whether model providers accept a tool's input schema: the rules, each next to its source, and the report.

A tool's input schema goes to a model provider as a function declaration, and each provider takes
only a subset of JSON Schema. Three providers, each in the mode that holds the model to the schema:

- ``openai``: function calling with ``strict: true`` (Structured Outputs), which the Responses API
  also applies to a tool that does not say ``strict``. Some of its rules (an array without ``items``,
  a root that is not an object) fail even without ``strict``;
- ``anthropic``: strict tool use (``strict: true``);
- ``gemini``: a function declaration's ``parameters``, the OpenAPI 3.0 subset of Gemini's ``Schema``
  (what the Live API, Vertex and most frameworks send; pydantic-ai's ``GoogleModel`` sends
  ``parametersJsonSchema`` instead, which takes JSON Schema).

`judge(schema, provider)` gives a `Verdict`: ``accepted`` as it is, ``rewritten`` (accepted after
lossless rewrites, each named: ``inlined $ref '#/$defs/Node'``), or ``rejected`` with every reason.
A rewrite is lossless when the schema sent accepts the arguments the original accepts: it changes
how the schema is written, not what it allows (annotations, which change nothing a validator
checks, may be dropped). Decisions taken here:

- an optional property under OpenAI strict is **rejected**: strict mode wants every property
  required, and making it required with ``null`` added is not lossless: the model must then send
  ``null`` where it left the argument out, and the tool gets that ``null`` (which it may refuse, or
  read differently from an absent argument) unless the caller drops it, which neither the workbench
  nor the agent frameworks do;
- ``additionalProperties: false`` added (OpenAI, Anthropic) to an object that declares its
  properties is lossless for the calls a model makes: the declaration names no other property to
  send (the providers' own normalisation, Anthropic's ``transform_schema`` and pydantic-ai do the
  same). An object that declares no property (a free-form map) is rejected: closed, it takes only
  ``{}``;
- for Gemini, ``additionalProperties: false`` is dropped (its ``Schema`` object holds only the
  properties it declares), a map is rejected;
- a keyword a provider does not take, moved into the description (what pydantic-ai's ``strict=True``
  transformers do with an unsupported ``format``), is not lossless: the provider no longer holds the
  model to it. Rejected;
- ``oneOf`` becomes ``anyOf`` only when its branches are disjoint (types that cannot overlap, or
  objects told apart by a required ``const``/``enum`` property); ``allOf`` is merged only when its
  parts declare different properties and no other keyword twice;
- ``$ref`` is inlined when it is not recursive; ``type: [X, "null"]`` becomes ``nullable`` (Gemini).

The rules are data (`provider_rules.RULES`, one `Rule` per documented limit, with its source URL)
and one walk per provider (`judge`). Where pydantic-ai's schema transformers decide strictness (OpenAI), the api
layer (api/judging/portability.py) cross-checks a verdict with them. `unportable(old, new)` is what
the snapshot diff reports. `SchemaReport` (schema_report.py) is the table of tool by provider.
Plain data: no SDK import, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from workbench_magic.engine.rules.schema_changes import subject_of
from workbench_magic.vocabulary import provider_rules as rules
from workbench_magic.vocabulary.portability import Finding, Verdict
from workbench_magic.vocabulary.provider_rules import (
    ACCEPTED,
    PROVIDERS,
    REJECTED,
    REWRITTEN,
    Rule,
)
from workbench_magic.vocabulary.rendering import json_type

__all__ = ["judge", "local_target", "points_to_nothing", "unportable"]


def judge(schema: Mapping[str, Any] | None, provider: str) -> Verdict:
    """What `provider` makes of an input schema (a tool without one takes no arguments).

    Args:
        schema: the tool's input schema.
        provider: ``openai``, ``anthropic`` or ``gemini``.

    Returns:
        The verdict: accepted, rewritten (with the rewrites) or rejected (with every reason).

    Raises:
        ValueError: an unknown provider.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"Unknown provider {provider!r}: choose from {', '.join(PROVIDERS)}")
    root = dict(schema) if isinstance(schema, Mapping) else {"type": "object", "properties": {}}
    walk = _Walk(provider, root)
    sent = walk.root()
    findings = tuple(walk.findings)
    status = REJECTED if any(not f.rewrite for f in findings) else REWRITTEN if findings else ACCEPTED
    return Verdict(provider, status, findings, None if status == REJECTED else sent, walk.optional, walk.unions)


def unportable(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, providers: Sequence[str] = PROVIDERS
) -> list[tuple[str, tuple[str, ...]]]:
    """The providers that accepted the input schema `old` (as it was or rewritten) and reject `new`.

    Args:
        old: the earlier input schema.
        new: the later one.
        providers: the providers to judge.

    Returns:
        ``(provider, reasons)`` per provider that no longer accepts it, in `providers` order.
    """
    if old == new:
        return []
    lost = []
    for provider in providers:
        now = judge(new, provider)
        if not now.ok and judge(old, provider).ok:
            lost.append((provider, now.reasons))
    return lost


# ---- the walk -----------------------------------------------------------------------------------
class _Walk:
    """One provider's walk over one schema: the schema to send, and the findings on the way."""

    def __init__(self, provider: str, root: dict[str, Any]) -> None:
        self.p = provider
        self.top = root
        self.findings: list[Finding] = []
        self._said: set[tuple[str, str, str]] = set()
        self.defs: dict[str, Any] = {}  # $ref -> walked target (refs kept as they are)
        self.stack: list[str] = []  # refs being walked or inlined
        self.properties = 0
        self.enums = 0
        self.depth = 0
        self.optional = 0
        self.unions = 0

    # ---- findings ----
    def reject(self, rule: Rule, path: str, detail: str) -> None:
        self._add(Finding(rule, subject_of(path, False), detail))

    def rewrite(self, rule: Rule, path: str, detail: str) -> None:
        self._add(Finding(rule, subject_of(path, False), detail, rewrite=True))

    def _add(self, finding: Finding) -> None:
        key = (finding.rule.name, finding.where, finding.detail)
        if key not in self._said:
            self._said.add(key)
            self.findings.append(finding)

    def rule(self, table: dict[str, Rule]) -> Rule:
        return table[self.p]

    # ---- the root ----
    def root(self) -> dict[str, Any] | None:
        schema = dict(self.top)
        definitions = {k: schema.pop(k) for k in ("$defs", "definitions") if k in schema}
        if isinstance(schema.get("$ref"), str):
            # The parameters themselves behind a $ref: written out, lossless (the root must be an object).
            ref = schema.pop("$ref")
            target = self.resolve(ref, "")
            if isinstance(target, dict):
                self.rewrite(self._ref_rule(), "", f"inlined the root $ref {ref!r}")
                schema = {**target, **schema}
        root_rule = {"openai": rules.O_ROOT, "anthropic": rules.A_ROOT, "gemini": rules.G_ROOT}[self.p]
        if schema.get("type") != "object":
            shown = schema.get("type") or next((k for k in ("anyOf", "oneOf", "allOf") if k in schema), "no type")
            self.reject(root_rule, "", f"the parameters must be an object schema, not {_show(shown)}")
        elif self.p == "openai":
            # allOf at the top is merged below when it can be (else rejected there)
            for key in ("oneOf", "anyOf", "enum", "not"):
                if key in schema:
                    self.reject(rules.O_ROOT, "", f"{key} at the top level")
        sent = self.node(schema, "", root=True)
        if not isinstance(sent, dict):
            return None
        if self.p == "gemini":
            if definitions:
                self.rewrite(rules.G_REF, "", f"dropped {' and '.join(definitions)} (each $ref written out)")
            if not sent.get("properties") and sent.get("type") == "object":
                self.rewrite(rules.G_EMPTY, "", "no parameters declared: the tool takes no arguments")
                return None
            return sent
        if self.defs:
            kept: dict[str, dict[str, Any]] = {}
            for ref, walked in self.defs.items():
                match = rules.DEFINITION_REF.fullmatch(ref)
                if match:
                    container, name = match.group(1), _unescape(ref.split("/", 2)[2])
                    kept.setdefault(container, {})[name] = walked
            sent.update(kept)
        if self.p == "openai":
            self._limits()
        if self.p == "anthropic":
            if self.optional > rules.ANTHROPIC_MAX_OPTIONAL:
                self.reject(
                    rules.A_OPTIONAL,
                    "",
                    f"{self.optional} optional parameters (at most {rules.ANTHROPIC_MAX_OPTIONAL})",
                )
            if self.unions > rules.ANTHROPIC_MAX_UNIONS:
                self.reject(rules.A_UNIONS, "", f"{self.unions} parameters with anyOf or a type list (at most 16)")
        return sent

    def _limits(self) -> None:
        if self.properties > rules.OPENAI_MAX_PROPERTIES:
            self.reject(rules.O_LIMITS, "", f"{self.properties} properties (at most {rules.OPENAI_MAX_PROPERTIES})")
        if self.depth > rules.OPENAI_MAX_DEPTH:
            self.reject(rules.O_LIMITS, "", f"{self.depth} levels of nesting (at most {rules.OPENAI_MAX_DEPTH})")
        if self.enums > rules.OPENAI_MAX_ENUM:
            self.reject(rules.O_LIMITS, "", f"{self.enums} enum values (at most {rules.OPENAI_MAX_ENUM})")

    # ---- references ----
    def _ref_rule(self) -> Rule:
        return {"openai": rules.O_REF, "anthropic": rules.A_ALLOF_REF, "gemini": rules.G_REF}[self.p]

    def resolve(self, ref: str, path: str) -> Any:
        """What a local `$ref` points to in the whole schema (None, with a reason, when it cannot)."""
        if not ref.startswith("#"):
            self.reject(self.rule(rules.EXTERNAL), path, f"$ref {ref!r} is not local")
            return None
        found, node = local_target(ref, self.top)
        if not found:
            self.reject(self.rule(rules.EXTERNAL), path, points_to_nothing(ref))
            return None
        return node

    def ref(self, schema: dict[str, Any], path: str, depth: int) -> Any:
        """A schema with a `$ref`: kept (with its target walked once) or written out, per provider."""
        ref = schema["$ref"]
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if not isinstance(ref, str):
            self.reject(self.rule(rules.EXTERNAL), path, "$ref is not a string")
            return schema
        keep = (self.p == "openai" and (ref == "#" or rules.DEFINITION_REF.fullmatch(ref) is not None)) or (
            self.p == "anthropic" and ref.startswith("#")
        )
        recursive = ref in self.stack or (ref == "#")
        if keep:
            if recursive:
                if self.p == "anthropic":
                    self.reject(rules.A_RECURSION, path, f"recursive $ref {ref!r}")
                return self._with_siblings({"$ref": ref}, siblings, path, depth)
            if ref not in self.defs:
                target = self.resolve(ref, path)
                if target is None:
                    return schema
                self.stack.append(ref)
                self.defs[ref] = {}  # a placeholder: a ref back to it is recursion, seen on the stack
                self.defs[ref] = self.node(target, path, depth=depth)
                self.stack.pop()
            return self._with_siblings({"$ref": ref}, siblings, path, depth)
        if recursive:
            self.reject(self.rule(rules.RECURSION_INLINE), path, f"recursive $ref {ref!r} cannot be written out")
            return schema
        target = self.resolve(ref, path)
        if target is None:
            return schema
        if isinstance(target, bool):
            return self.node(target, path, depth=depth)
        self.rewrite(self._ref_rule() if self.p != "anthropic" else rules.A_ALLOF_REF, path, f"inlined $ref {ref!r}")
        self.stack.append(ref)
        merged = self.node({**target, **siblings}, path, depth=depth)
        self.stack.pop()
        return merged

    def _with_siblings(self, kept: dict[str, Any], siblings: dict[str, Any], path: str, depth: int) -> dict[str, Any]:
        if not siblings:
            return kept
        walked = self.node(siblings, path, depth=depth, partial=True)
        walked = walked if isinstance(walked, dict) else {}
        if self.p == "openai" and walked:
            # strict mode takes no keyword beside a $ref, but takes them beside an anyOf around it
            self.rewrite(rules.O_REF, path, "moved a $ref with sibling keywords into an anyOf")
            return {**walked, "anyOf": [kept]}
        return {**kept, **walked}

    # ---- one schema ----
    def node(self, schema: Any, path: str, *, depth: int = 0, root: bool = False, partial: bool = False) -> Any:
        """The schema to send for `schema` at `path` (findings added on the way)."""
        if isinstance(schema, bool):
            self.reject(self.rule(rules.BOOLEAN), path, f"a boolean schema ({json.dumps(schema)})")
            return schema
        if not isinstance(schema, dict):
            self.reject(self.rule(rules.BOOLEAN), path, f"a schema that is not an object ({json_type(schema)})")
            return schema
        if "$ref" in schema:
            return self.ref(schema, path, depth)
        s = dict(schema)
        if self.p == "gemini":
            s = self._gemini_shape(s, path)
        s = self._combinations(s, path, depth)
        if "anyOf" in s:
            s["anyOf"] = [self.node(branch, path, depth=depth) for branch in _list(s["anyOf"])]
        if "allOf" in s:  # Anthropic keeps allOf
            s["allOf"] = [self.node(branch, path, depth=depth) for branch in _list(s["allOf"])]
        self._keywords(s, path, root=root)
        types = _type_names(s.get("type"))
        if "object" in types or (not types and "properties" in s and not partial):
            s = self._object(s, path, depth, root=root)
        if "array" in types or (not types and "items" in s):
            s = self._array(s, path, depth)
        if self.p == "gemini" and not partial and "type" not in s and "anyOf" not in s:
            self.reject(rules.G_TYPE, path, "no type")
        return s

    def _gemini_shape(self, s: dict[str, Any], path: str) -> dict[str, Any]:
        """Gemini's lossless rewrites of one schema: annotations dropped, type lists, const, bounds."""
        dropped = sorted(k for k in s if k in rules.ANNOTATIONS)
        if dropped:
            self.rewrite(rules.G_ANNOTATIONS, path, f"dropped annotation {', '.join(dropped)}")
            s = {k: v for k, v in s.items() if k not in rules.ANNOTATIONS}
        types = s.get("type")
        if isinstance(types, list):
            names = [t for t in types if isinstance(t, str)]
            rest = [t for t in names if t != "null"]
            if len(rest) == 1:
                s["type"] = rest[0]
                if "null" in names:
                    s["nullable"] = True
                    self.rewrite(rules.G_TYPE_LIST, path, f"type {_show(types)} as nullable {rest[0]}")
                else:
                    self.rewrite(rules.G_TYPE_LIST, path, f"type {_show(types)} as {rest[0]}")
            elif rest and "anyOf" not in s:
                self.rewrite(rules.G_TYPE_LIST, path, f"type {_show(types)} as anyOf")
                branches = []
                for t in rest:
                    moved = {k: s.pop(k) for k in rules.TYPE_KEYWORDS.get(t, ()) if k in s}
                    branches.append({"type": t, **moved})
                del s["type"]
                s["anyOf"] = branches
                if "null" in names:
                    s["nullable"] = True
            else:
                self.reject(rules.G_TYPE_LIST, path, f"type {_show(types)}")
        if "const" in s:
            const = s.pop("const")
            if isinstance(const, str):
                self.rewrite(rules.G_ENUM, path, f"const {_show(const)} as a one-value enum")
                s["enum"] = [const]
            else:
                self.reject(rules.G_ENUM, path, f"const {_show(const)} is not a string")
        enum = s.get("enum")
        if isinstance(enum, list):
            if not all(isinstance(v, str) for v in enum):
                self.reject(rules.G_ENUM, path, f"enum of {', '.join(sorted({json_type(v) for v in enum}))} values")
            elif "type" not in s and "anyOf" not in s:
                self.rewrite(rules.G_ENUM, path, "type string added to a string enum")
                s["type"] = "string"
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            if key in s:
                s = self._exclusive(s, key, path)
        if s.get("additionalProperties") is False:
            del s["additionalProperties"]
            self.rewrite(rules.G_MAPS, path, "dropped additionalProperties: false (a Schema holds only its properties)")
        return s

    def _exclusive(self, s: dict[str, Any], key: str, path: str) -> dict[str, Any]:
        """An exclusive bound on integers as an inclusive one (lossless); on numbers, rejected."""
        value = s.pop(key)
        lower = key == "exclusiveMinimum"
        bound = "minimum" if lower else "maximum"
        if isinstance(value, bool):  # draft 4: a flag on minimum/maximum
            value = s.get(bound) if value else None
            if value is None:
                return s  # false: the bound was inclusive all along
            del s[bound]
        if s.get("type") != "integer" or not _is_number(value):
            self.reject(rules.G_EXCLUSIVE, path, f"{key} {_show(value)} on {_show(s.get('type', 'no type'))}")
            return s
        inclusive = math.floor(value) + 1 if lower else math.ceil(value) - 1
        current = s.get(bound)
        if _is_number(current):
            inclusive = max(inclusive, current) if lower else min(inclusive, current)
        s[bound] = inclusive
        self.rewrite(rules.G_EXCLUSIVE, path, f"{key} {_show(value)} as {bound} {inclusive} (integers)")
        return s

    def _combinations(self, s: dict[str, Any], path: str, depth: int) -> dict[str, Any]:
        """oneOf as anyOf when its branches are disjoint; allOf merged when it can be (per provider)."""
        if "oneOf" in s:
            rule = {"openai": rules.O_ONEOF, "anthropic": rules.A_ONEOF, "gemini": rules.G_ONEOF}[self.p]
            branches = [self._resolved(b) for b in _list(s["oneOf"])]
            if "anyOf" not in s and _disjoint(branches):
                self.rewrite(rule, path, "oneOf as anyOf (its branches are disjoint)")
                s["anyOf"] = s.pop("oneOf")
            else:
                self.reject(rule, path, "oneOf whose branches may overlap")
                s.pop("oneOf")
        if "allOf" in s:
            members = [self._resolved(m) for m in _list(s["allOf"])]
            merged = _merge_all_of(s, members)
            rule = {"openai": rules.O_ALLOF, "anthropic": rules.A_ALLOF_REF, "gemini": rules.G_ALLOF}[self.p]
            if merged is not None:
                self.rewrite(rule, path, "allOf merged into one schema")
                return self._gemini_shape(merged, path) if self.p == "gemini" else merged
            if self.p != "anthropic":
                self.reject(rule, path, "allOf whose parts cannot be merged into one schema")
                s.pop("allOf")
            elif any(
                _type_names(m.get("type")) == ["object"] or "properties" in m for m in members if isinstance(m, dict)
            ):
                # each part closed on its own would refuse the others' properties
                self.reject(
                    rules.A_CLOSED, path, "allOf of objects that cannot be merged (closing each part breaks it)"
                )
                s.pop("allOf")
            elif any(isinstance(m, dict) and "$ref" in m for m in _list(s["allOf"])):
                self.rewrite(rules.A_ALLOF_REF, path, "allOf parts behind $ref written out")
                s["allOf"] = members
        return s

    def _resolved(self, schema: Any) -> Any:
        """`schema` with a local `$ref` followed (for merging and disjointness: no findings)."""
        hops = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and hops < 32:
            ref = schema["$ref"]
            if not ref.startswith("#") or ref in self.stack:
                return schema
            node: Any = self.top
            for part in ref[2:].split("/") if ref not in ("#", "#/") else []:
                part = _unescape(part)
                node = node.get(part) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                return schema
            schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
            hops += 1
        return schema

    def _keywords(self, s: dict[str, Any], path: str, *, root: bool) -> None:
        """The keywords a provider does not take, and the rules on formats, patterns, enums, bounds."""
        if self.p == "openai":
            for key in rules.OPENAI_UNSUPPORTED:
                if key in s:
                    self.reject(rules.O_KEYWORD, path, f"{key} is not supported")
            fmt = s.get("format")
            if fmt is not None and (not isinstance(fmt, str) or fmt not in rules.OPENAI_FORMATS):
                self.reject(rules.O_FORMAT, path, f"format {_show(fmt)} is not supported")
            pattern = s.get("pattern")
            if isinstance(pattern, str) and any(t in pattern for t in rules.LOOKAROUND):
                self.reject(rules.O_PATTERN, path, f"pattern {_show(pattern)} has a lookaround")
            if "default" in s:
                del s["default"]
                self.rewrite(rules.O_DEFAULT, path, "dropped default (every argument is sent in strict mode)")
            if isinstance(s.get("enum"), list):
                self.enums += len(s["enum"])
        elif self.p == "anthropic":
            for key in rules.ANTHROPIC_UNSUPPORTED:
                if key in s:
                    self.reject(rules.A_KEYWORD, path, f"{key} is not supported")
            numbers = [k for k in rules.ANTHROPIC_NUMBERS if k in s]
            if numbers:
                self.reject(rules.A_NUMBERS, path, f"{', '.join(numbers)} not supported")
            strings = [k for k in ("minLength", "maxLength") if k in s]
            if strings:
                self.reject(rules.A_STRINGS, path, f"{', '.join(strings)} not supported")
            arrays: list[str] = [k for k in ("maxItems", "uniqueItems") if k in s]
            if s.get("minItems", 0) not in (0, 1):
                arrays.insert(0, f"minItems {_show(s['minItems'])}")
            if arrays:
                self.reject(rules.A_ARRAYS, path, f"{', '.join(arrays)} not supported")
            fmt = s.get("format")
            if fmt is not None and (not isinstance(fmt, str) or fmt not in rules.ANTHROPIC_FORMATS):
                self.reject(rules.A_FORMAT, path, f"format {_show(fmt)} is not supported")
            pattern = s.get("pattern")
            if isinstance(pattern, str) and _anthropic_pattern_problem(pattern):
                self.reject(
                    rules.A_PATTERN, path, f"pattern {_show(pattern)} has {_anthropic_pattern_problem(pattern)}"
                )
            values = [*_list(s.get("enum")), *([s["const"]] if "const" in s else [])]
            if any(isinstance(v, dict | list) for v in values):
                self.reject(rules.A_ENUM, path, "enum or const with an object or array value")
        else:
            handled = ("$defs", "definitions", "additionalProperties", "prefixItems")  # by the rules on objects, arrays
            for key in sorted(k for k in s if k not in rules.GEMINI_FIELDS and k not in handled):
                self.reject(rules.G_FIELDS, path, f"unknown field {key!r} (not in Gemini's Schema)")
            if root:
                for name in _mapping(s.get("properties")):
                    if not rules.GEMINI_NAME.fullmatch(name):
                        self.reject(rules.G_NAMES, "", f"parameter name {name!r}")

    def _object(self, s: dict[str, Any], path: str, depth: int, *, root: bool) -> dict[str, Any]:
        properties = _mapping(s.get("properties"))
        required = [r for r in _list(s.get("required")) if isinstance(r, str)]
        self.properties += len(properties)
        self.depth = max(self.depth, depth + 1)
        walked = {}
        for name, sub in properties.items():
            where = f"{path}.{name}" if path else name
            walked[name] = self.node(sub, where, depth=depth + 1)
            if name not in required:
                self.optional += 1
                if self.p == "openai":
                    self.reject(rules.O_REQUIRED, where, "is optional (strict mode requires every property)")
            if isinstance(sub, dict) and (isinstance(sub.get("type"), list) or "anyOf" in sub):
                self.unions += 1
        if "properties" in s:
            s["properties"] = walked
        extra = s.get("additionalProperties", None)
        if self.p in ("openai", "anthropic"):
            closed = rules.O_CLOSED if self.p == "openai" else rules.A_CLOSED
            if extra is False:
                pass
            elif extra is None and (properties or root):
                s["additionalProperties"] = False
                self.rewrite(closed, path, "additionalProperties: false added")
            elif extra is None:
                self.reject(closed, path, "a free-form object (no properties): closed, it would only take {}")
            else:
                self.reject(closed, path, f"a map (additionalProperties {_show(extra)})")
            if self.p == "openai" and ("properties" not in s or "required" not in s) and not properties:
                s.setdefault("properties", {})
                s.setdefault("required", [])
        else:
            if extra is not None:
                self.reject(rules.G_MAPS, path, f"a map (additionalProperties {_show(extra)})")
            elif not properties and not root:
                self.reject(rules.G_EMPTY, path, "an object without properties")
        return s

    def _array(self, s: dict[str, Any], path: str, depth: int) -> dict[str, Any]:
        items = s.get("items")
        where = f"{path}[]"
        if isinstance(items, list) or "prefixItems" in s:
            rule = {"openai": rules.O_TUPLE, "anthropic": rules.A_KEYWORD, "gemini": rules.G_TUPLE}[self.p]
            self.reject(rule, path, "a tuple (prefixItems, or items as a list)")
            return s
        if items is None:
            if self.p == "openai":
                self.reject(rules.O_ITEMS, path, "an array without items")
            elif self.p == "gemini":
                self.reject(rules.G_ITEMS, path, "an array without items")
            return s
        if self.p == "openai" and not (
            isinstance(items, dict) and any(k in self._resolved(items) for k in rules.TYPE_BEARING)
        ):
            self.reject(rules.O_ITEMS, path, "an array whose items have no type")
        s["items"] = self.node(items, where, depth=depth)
        return s


# ---- pure helpers -------------------------------------------------------------------------------
def _merge_all_of(parent: dict[str, Any], members: list[Any]) -> dict[str, Any] | None:
    """`parent` with its `allOf` merged into it, when that is lossless: the parts declare different
    properties and set no other validating keyword twice (differently); None otherwise."""
    base = {k: v for k, v in parent.items() if k != "allOf"}
    parts = [base, *members]
    if not all(isinstance(p, dict) and "$ref" not in p for p in parts):
        return None
    with_properties = [p for p in parts if p.get("properties")]
    if len(with_properties) > 1 and any("additionalProperties" in p for p in parts):
        return None
    merged: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        for key, value in part.items():
            if key == "properties":
                for name, sub in _mapping(value).items():
                    if name in properties:
                        return None
                    properties[name] = sub
            elif key == "required":
                required.extend(r for r in _list(value) if r not in required)
            elif key in ("title", "description", "default", "examples", "$comment"):
                merged.setdefault(key, value)
            elif key in merged and merged[key] != value:
                return None
            else:
                merged[key] = value
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged


def _disjoint(branches: list[Any]) -> bool:
    """Whether no value can match two of the schemas `branches` (decided on types and required consts)."""
    if not all(isinstance(b, dict) for b in branches):
        return False
    types = [_branch_types(b) for b in branches]
    if all(t is not None for t in types):
        seen: set[str] = set()
        for t in types:
            assert t is not None
            widened = t | ({"number"} if "integer" in t else set()) | ({"integer"} if "number" in t else set())
            if widened & seen:
                break
            seen |= widened
        else:
            return True
    # objects told apart by a property each requires, with values of its own (a discriminator)
    if not all(_branch_types(b) in ({"object"}, None) for b in branches):
        return False
    common = set.intersection(*(set(_list(b.get("required"))) for b in branches)) if branches else set()
    for name in sorted(common):
        values = [_values(_mapping(b.get("properties")).get(name)) for b in branches]
        if all(v is not None for v in values):
            taken: set[str] = set()
            for v in values:
                assert v is not None
                if v & taken:
                    break
                taken |= v
            else:
                return True
    return False


def _branch_types(schema: dict[str, Any]) -> set[str] | None:
    names = _type_names(schema.get("type"))
    if names:
        return set(names)
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(values, list) and values:
        return {json_type(v) for v in values}
    return None


def _values(schema: Any) -> set[str] | None:
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return {json.dumps(schema["const"], sort_keys=True)}
    if isinstance(schema.get("enum"), list):
        return {json.dumps(v, sort_keys=True) for v in schema["enum"]}
    return None


def _anthropic_pattern_problem(pattern: str) -> str | None:
    """What Anthropic's grammar cannot take in a pattern: a backreference, a lookaround, a word boundary."""
    escaped = False
    for i, char in enumerate(pattern):
        if escaped:
            escaped = False
            if (char.isdigit() and char != "0") or char == "k":
                return "a backreference"
            if char in "bB":
                return "a word boundary"
            continue
        if char == "\\":
            escaped = True
        elif pattern.startswith(rules.LOOKAROUND, i):
            return "a lookaround"
    return None


def _type_names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for t in value if isinstance(t, str)]
    return []


def local_target(ref: str, root: Any) -> tuple[bool, Any]:
    """What a local `$ref` (`#`, `#/$defs/A`, `#/items/0`; `~1` is `/`, `~0` is `~`) points to in
    `root`: `(True, node)`, or `(False, None)` when it points to nothing. The one rule for a
    dangling `$ref`: `check_schemas` reports it, and a call is refused on it (engine/schema.py)."""
    node: Any = root
    if ref in ("#", "#/"):
        return True, node
    for part in ref[2:].split("/"):
        part = _unescape(part)
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def points_to_nothing(ref: str) -> str:
    """`$ref '#/$defs/A' points to nothing`."""
    return f"$ref {ref!r} points to nothing"


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _show(value: Any) -> str:
    text = f"'{value}'" if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "…"
