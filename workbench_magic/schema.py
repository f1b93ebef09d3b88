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
