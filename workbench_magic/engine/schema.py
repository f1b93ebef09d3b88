"""Checks against JSON Schemas: tool arguments (`input_schema`), results (`output_schema`).

jsonschema-rs decides (it imports in milliseconds and validates in microseconds); only when
something does not fit is `jsonschema` imported, to phrase the error as our texts always have.
A remote `$ref` is never fetched (both libraries would, by default, and so would the SDK's
result check but for its empty registry): a schema that needs one is not checked here, the
server judges the arguments and its results pass as they come (`remote_refs` names what was
left unresolved, for the server's log). A local `$ref` that points to nothing refuses the call,
in the words `check_schemas` uses (`portability.local_target`, one rule).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from collections.abc import Iterable
from typing import Any, NamedTuple

from workbench_magic.engine.sdk.session import output_validator_cache
from workbench_magic.vocabulary.errors import invalid_arguments
from workbench_magic.vocabulary.listings import ToolInfo

logger = logging.getLogger("workbench_magic")

_validators: dict[int, tuple[dict[str, Any], Any, str | None]] = {}


def _compiled(schema: dict[str, Any]) -> tuple[Any, str | None]:
    """A cached jsonschema-rs validator for the schema (`$ref`/`$defs` resolve against it, nothing
    is fetched), or None when it cannot compile the schema; and the first local `$ref` that points
    to nothing, looked for only then."""
    cached = _validators.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1], cached[2]
    import jsonschema_rs

    dangling = None
    try:
        validator = jsonschema_rs.validator_for(schema, offline=True)
    except Exception as exc:  # a server's broken (or exotic) schema is not the person's fault
        logger.debug("schema not checked (%s): %s", type(exc).__name__, exc)
        validator = None
        dangling = dangling_ref(schema)
    if len(_validators) > 4096:
        _validators.clear()
    _validators[id(schema)] = (schema, validator, dangling)
    return validator, dangling


def _validator(schema: dict[str, Any]) -> Any:
    return _compiled(schema)[0]


def remote_refs(schema: dict[str, Any] | None) -> tuple[str, ...]:
    """The remote resources `schema`'s `$ref`s point to (absolute URIs, in the order jsonschema-rs
    meets them), none fetched; `()` for a schema that compiles (the common case: one cached look)."""
    if not schema or _validator(schema) is not None:
        return ()
    import jsonschema_rs

    asked: list[str] = []

    def record(uri: str) -> dict[str, Any]:  # asked instead of the network: answers, fetches nothing
        if uri not in asked:
            asked.append(uri)
        return {}

    try:
        jsonschema_rs.validator_for(schema, retriever=record)
    except Exception:  # the schema may be broken beyond its refs: what was asked is still the answer
        pass
    return tuple(asked)


def remote_ref_note(tool: ToolInfo) -> str | None:
    """The server's log line for a tool whose schemas `$ref` remote resources, else None:
    `tool 'x': $ref 'https://...' not fetched; its input schema is not checked here`."""
    inputs, outputs = remote_refs(tool.input_schema), remote_refs(tool.output_schema)
    refs = list(dict.fromkeys(inputs + outputs))
    if not refs:
        return None
    which = "input and output schemas are" if inputs and outputs else f"{'input' if inputs else 'output'} schema is"
    shown = ", ".join(f"'{ref}'" for ref in refs)
    return f"tool '{tool.name}': $ref {shown} not fetched; its {which} not checked here"


_nullable: dict[tuple[int, str], tuple[dict[str, Any], bool]] = {}


def allows_null(schema: dict[str, Any], name: str) -> bool:
    """Whether property `name` of the input schema `schema` takes null (its local `$ref`s followed,
    nothing fetched). True where that cannot be told (no such property, a schema jsonschema-rs
    cannot compile): the null is then sent as it was given."""
    cached = _nullable.get((id(schema), name))
    if cached is not None and cached[0] is schema:
        return cached[1]
    properties = schema.get("properties")
    if not isinstance(properties, dict) or name not in properties:
        return True
    from urllib.parse import quote

    import jsonschema_rs

    # The property's schema, asked through a `$ref` from the root, so the refs in it resolve as in
    # the whole schema; the root's own keywords (an object's) do not judge a null, and the other
    # properties are left out (one of them may `$ref` what is never fetched).
    probe: dict[str, Any] = {key: schema[key] for key in ("$schema", "$id", "$defs", "definitions") if key in schema}
    pointer = name.replace("~", "~0").replace("/", "~1")
    probe |= {"properties": {name: properties[name]}, "$ref": "#/properties/" + quote(pointer, safe="~")}
    try:
        verdict = bool(jsonschema_rs.validator_for(probe, offline=True).is_valid(None))
    except Exception as exc:
        logger.debug("whether %r takes null is not known (%s): %s", name, type(exc).__name__, exc)
        verdict = True
    if len(_nullable) > 4096:
        _nullable.clear()
    _nullable[(id(schema), name)] = (schema, verdict)
    return verdict


def dangling_ref(schema: Any) -> str | None:
    """The first local `$ref` in `schema` that points to nothing in it, else None."""
    from workbench_magic.engine.rules.portability import local_target

    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#") and not local_target(ref, schema)[0]:
                return ref
            pending.extend(reversed(node.values()))
        elif isinstance(node, list):
            pending.extend(reversed(node))
    return None


def import_jsonschema() -> Any:
    """`import jsonschema` without building `rfc3987_syntax`'s grammar (seconds of CPU) on the way.

    jsonschema imports `rfc3987_syntax` only to check the `iri` / `iri-reference` formats, which
    nothing here checks. While jsonschema imports, a stand-in module answers for it; the stand-in's
    `is_valid_syntax` imports the real module on first use, so those checks still work for anyone
    who asks for them. Afterwards the stand-in is gone: importing `rfc3987_syntax` gives the real one.
    """
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    if "rfc3987_syntax" in sys.modules or importlib.util.find_spec("rfc3987_syntax") is None:
        import jsonschema

        return jsonschema
    stand_in = types.ModuleType("rfc3987_syntax", "stand-in: imports the real module on first use")

    def is_valid_syntax(rule: str, value: str) -> bool:
        real = sys.modules.get("rfc3987_syntax")
        if real is None or real is stand_in:
            sys.modules.pop("rfc3987_syntax", None)
            real = importlib.import_module("rfc3987_syntax")
        return bool(real.is_valid_syntax(rule, value))

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules["rfc3987_syntax"] = stand_in
    try:
        import jsonschema
    finally:
        if sys.modules.get("rfc3987_syntax") is stand_in:
            del sys.modules["rfc3987_syntax"]
    return jsonschema


def preload() -> None:
    """Import now what the first schema check of a connection imports (jsonschema, jsonschema-rs,
    referencing: about 0.1 s of CPU), so that no first open spends that time on the loop."""
    import jsonschema_rs  # noqa: F401
    import referencing  # noqa: F401

    import_jsonschema()


def compile_input_schemas(tools: Iterable[ToolInfo]) -> None:
    """Compile the argument checks of these tools ahead of their first call."""
    for tool in tools:
        _validator(tool.input_schema)


def prime_output_validators(session: Any, schemas: dict[str, dict[str, Any]]) -> None:
    """Fill the SDK session's cache of output-schema validators for these tools.

    The SDK checks each result against the tool's output schema with jsonschema and compiles a
    validator on a tool's first result, `check_schema` included: pure-Python metaschema
    validation, 2-25 ms a tool, which made every first call several times slower than the next.
    Here the schema is checked against its metaschema by jsonschema-rs (microseconds) and the
    jsonschema validator is built without that check, exactly as the SDK would build it. The SDK
    evicts an entry when a tool's schema changes, so an entry always matches its schema. A schema
    jsonschema-rs finds invalid is left to the SDK (which then reports it as before); an SDK
    without this cache is left alone.
    """
    cache = output_validator_cache(session)
    if cache is None or not schemas:
        return
    import jsonschema_rs
    from referencing import Registry

    jsonschema = import_jsonschema()
    for name, output_schema in schemas.items():
        if name in cache:
            continue
        try:
            if not jsonschema_rs.meta.is_valid(output_schema):
                continue
            cls = jsonschema.validators.validator_for(output_schema)
            python = cls(output_schema, registry=Registry())
            if remote_refs(output_schema):  # the SDK would fail every result that reaches the $ref
                cache[name] = Unchecked(python)
                continue
            fast = jsonschema_rs.validator_for(output_schema, validate_formats=False, offline=True)
            cache[name] = RsFirst(python, fast)
        except Exception as exc:
            logger.debug("output schema of %s not primed: %s", name, exc)


class RsFirst:
    """A jsonschema validator that asks jsonschema-rs first: a result that fits (every result of
    a working server) costs a microsecond, not the pure-Python walk the SDK pays on each call;
    one that does not gets jsonschema's own errors, so the SDK reports exactly what it did.
    Formats are not checked, as jsonschema does not check them without a format checker."""

    def __init__(self, python: Any, fast: Any) -> None:
        self.python = python
        self.fast = fast

    def iter_errors(self, instance: Any) -> Iterable[Any]:
        if _fits(self.fast, instance):
            return iter(())
        return self.python.iter_errors(instance)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.python, name)


class Unchecked:
    """The SDK's validator of an output schema that `$ref`s a remote resource: never fetched, so
    not checked (as the arguments of such a schema are not); every result passes as it comes."""

    def __init__(self, python: Any) -> None:
        self.python = python

    def iter_errors(self, instance: Any) -> Iterable[Any]:
        return iter(())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.python, name)


def first_error(schema: dict[str, Any], instance: Any) -> Any:
    """The error to show for an instance jsonschema-rs found invalid: jsonschema's `best_match`
    (its messages are the ones our texts have always quoted), imported only on this error path.
    None when jsonschema sees no error (the two disagree) or cannot judge the schema."""
    from referencing import Registry

    jsonschema = import_jsonschema()
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        # An explicit empty registry: without one, jsonschema fetches a remote `$ref`.
        return jsonschema.exceptions.best_match(cls(schema, registry=Registry()).iter_errors(instance))
    except Exception:
        return None


class Problem(NamedTuple):
    """Why an instance does not fit a schema: where (keys and indexes) and what."""

    path: tuple[str | int, ...]
    message: str


def compiles(schema: dict[str, Any]) -> bool:
    """Whether the schema can be checked at all (jsonschema-rs compiles it)."""
    return _validator(schema) is not None


def _fits(validator: Any, instance: Any) -> bool | None:
    """jsonschema-rs's verdict, or None when the instance holds a value it cannot take (a date
    from YAML, a set, an object): Python's jsonschema judges those."""
    try:
        return bool(validator.is_valid(instance))
    except (ValueError, TypeError):
        return None


def check(schema: dict[str, Any], instance: Any) -> Problem | None:
    """None when `instance` fits `schema` (or the schema cannot be compiled), else the problem."""
    validator = _validator(schema)
    if validator is None:
        return None
    fits = _fits(validator, instance)
    if fits:
        return None
    error = first_error(schema, instance)
    if error is not None:
        return Problem(tuple(error.absolute_path), str(error.message))
    if fits is None:
        return None
    seen = next(iter(validator.iter_errors(instance)))
    return Problem(tuple(seen.instance_path), str(seen.message))


def _field(path: Any) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in path]
    return ".".join(parts).replace(".[", "[")


def validate_arguments(tool: ToolInfo, arguments: dict[str, Any]) -> None:
    """Raise `ArgumentError` naming the field when `arguments` do not fit `tool.input_schema`."""
    if not isinstance(arguments, dict):
        raise invalid_arguments(
            tool.name, f"expected a mapping of argument names to values, got {type(arguments).__name__}"
        )
    validator, dangling = _compiled(tool.input_schema)
    if dangling is not None:
        from workbench_magic.engine.rules.portability import points_to_nothing

        detail = f"its input schema cannot be checked: {points_to_nothing(dangling)}"
        raise invalid_arguments(tool.name, detail, server=tool.server, toolbox=tool.toolbox)
    if validator is None:
        return
    fits = _fits(validator, arguments)
    if fits:
        return
    error = first_error(tool.input_schema, arguments)
    if error is None and fits is None:
        return
    if error is None:  # jsonschema-rs and jsonschema disagree: say what jsonschema-rs saw
        seen = next(iter(validator.iter_errors(arguments))).message
        raise invalid_arguments(tool.name, seen, server=tool.server, toolbox=tool.toolbox)
    where = _field(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [r for r in error.validator_value if r not in error.instance]
        name = f"{where}.{missing[0]}" if where and missing else missing[0] if missing else where
        detail = f"missing required argument '{name}'" if missing else error.message
    elif error.validator == "additionalProperties" and not where:
        extra = sorted(set(arguments) - set(tool.parameters))
        detail = f"unknown argument '{extra[0]}'" if extra else error.message
        if tool.parameters:
            detail += f" (expected: {', '.join(tool.parameters)})"
    else:
        detail = f"argument '{where}': {error.message}" if where else error.message
    if len(detail) > 300:
        detail = detail[:297] + "..."
    raise invalid_arguments(tool.name, detail, server=tool.server, toolbox=tool.toolbox)


def resolve(spec: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `$ref` (`#/$defs/X`, `#/definitions/X`) within `root`; non-dicts become {}."""
    seen = 0
    while isinstance(spec, dict) and isinstance(spec.get("$ref"), str) and seen < 32:
        ref = spec["$ref"]
        if not ref.startswith("#/"):
            break
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, dict) else {}
        extra = {k: v for k, v in spec.items() if k != "$ref"}
        spec = {**target, **extra} if isinstance(target, dict) else extra
        seen += 1
    return spec if isinstance(spec, dict) else {}


def example_value(spec: Any, root: dict[str, Any], depth: int) -> Any:
    """An example value for a schema (its default or const, else the first option or a typed blank)."""
    spec = resolve(spec, root)
    for key in ("default", "const"):
        if key in spec:
            return spec[key]
    if isinstance(spec.get("examples"), list) and spec["examples"]:
        return spec["examples"][0]
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return spec["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = [resolve(o, root) for o in spec.get(key) or []]
        options = [o for o in options if o.get("type") != "null"]
        if options:
            return example_value(options[0], root, depth)
    if isinstance(spec.get("allOf"), list) and spec["allOf"]:
        return example_value(spec["allOf"][0], root, depth)
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or "properties" in spec:
        if depth > 4:
            return {}
        required = set(spec.get("required") or [])
        props = spec.get("properties") or {}
        return {name: example_value(p, root, depth + 1) for name, p in props.items() if name in required}
    if kind == "array":
        return [example_value(spec.get("items", {}), root, depth + 1)] if depth <= 4 else []
    return {"string": "text", "integer": 0, "number": 0.0, "boolean": False, "null": None}.get(kind or "", "value")


def example_arguments(tool: ToolInfo) -> tuple[dict[str, Any], dict[str, Any]]:
    """Example values for a tool's arguments: (required ones, optional ones), from its schema."""
    schema = tool.input_schema
    required = set(tool.required)
    req: dict[str, Any] = {}
    opt: dict[str, Any] = {}
    for name, spec in tool.parameters.items():
        (req if name in required else opt)[name] = example_value(spec, schema, 1)
    return req, opt
