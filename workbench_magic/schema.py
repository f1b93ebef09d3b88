"""Client-side checks of tool arguments against a tool's `input_schema`."""

from __future__ import annotations

from typing import Any

from workbench_magic.errors import ArgumentError
from workbench_magic.results import ToolInfo

_validators: dict[int, tuple[dict[str, Any], Any]] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A cached jsonschema validator for the schema (`$ref`/`$defs` resolve against it)."""
    cached = _validators.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    import jsonschema
    from jsonschema import validators

    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
        validator = cls(schema)
    except jsonschema.SchemaError:
        validator = None  # a server with a broken schema: let the server judge the arguments
    if len(_validators) > 4096:
        _validators.clear()
    _validators[id(schema)] = (schema, validator)
    return validator


def _field(path: Any) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in path]
    return ".".join(parts).replace(".[", "[")


def validate_arguments(tool: ToolInfo, arguments: dict[str, Any]) -> None:
    """Raise `ArgumentError` naming the field when `arguments` do not fit `tool.input_schema`."""
    if not isinstance(arguments, dict):
        raise ArgumentError(
            f"Invalid arguments for tool '{tool.name}': expected a mapping of argument names to values, "
            f"got {type(arguments).__name__}"
        )
    validator = _validator(tool.input_schema)
    if validator is None:
        return
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return
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
    raise ArgumentError(
        f"Invalid arguments for tool '{tool.name}' in server '{tool.server}' (toolbox '{tool.toolbox}'): {detail}"
    )


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
