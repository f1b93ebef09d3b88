"""Schema checks: jsonschema-rs decides, jsonschema phrases; jsonschema imported without the IRI
grammar; the SDK's output-schema validators primed at listing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import PYTHON, SERVERS

from workbench_magic import ArgumentError
from workbench_magic.engine import schema
from workbench_magic.vocabulary.listings import ToolInfo

NESTED = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
        "config": {"$ref": "#/$defs/Config"},
    },
    "required": ["n"],
    "additionalProperties": False,
    "$defs": {
        "Config": {
            "type": "object",
            "properties": {"color": {"enum": ["red", "blue"]}, "name": {"type": "string"}},
            "required": ["name"],
        }
    },
}


def tool(input_schema: dict[str, Any]) -> ToolInfo:
    return ToolInfo(toolbox="t", server="s", name="x", description="", input_schema=input_schema)


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"n": 0},
        {"n": "1"},
        {"n": 1, "tags": [1]},
        {"n": 1, "extra": True},
        {"n": 1, "config": {"color": "green", "name": "a"}},
        {"n": 1, "config": {"color": "red"}},
    ],
)
def test_problems_are_phrased_as_jsonschema_phrases_them(arguments: dict[str, Any]) -> None:
    import jsonschema

    expected = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(NESTED).iter_errors(arguments))
    assert expected is not None
    found = schema.check(NESTED, arguments)
    assert found == schema.Problem(tuple(expected.absolute_path), expected.message)
    with pytest.raises(ArgumentError, match=r"^Invalid arguments for tool 'x' in server 's' \(toolbox 't'\): "):
        schema.validate_arguments(tool(NESTED), arguments)


def test_valid_arguments_pass_and_uncompilable_schemas_are_not_checked(caplog) -> None:
    assert schema.check(NESTED, {"n": 2, "config": {"name": "a"}}) is None
    schema.validate_arguments(tool(NESTED), {"n": 2})
    broken = {"type": "object", "properties": {"a": {"type": "no-such-type"}}}
    with caplog.at_level("DEBUG", logger="workbench_magic"):
        schema.validate_arguments(tool(broken), {"a": 1})  # sent unchecked: the server judges
    assert not schema.compiles(broken)
    assert any("schema not checked" in r.getMessage() for r in caplog.records)


def test_values_jsonschema_rs_cannot_take_are_judged_by_jsonschema() -> None:
    import datetime

    day = datetime.date(1, 1, 1)
    text = {"type": "object", "properties": {"text": {"type": "string"}}}
    assert schema.check(text, {"text": day}) == schema.Problem(("text",), f"{day!r} is not of type 'string'")
    with pytest.raises(ArgumentError, match=r"argument 'text': datetime\.date\(1, 1, 1\) is not of type 'string'$"):
        schema.validate_arguments(tool(text), {"text": day})
    schema.validate_arguments(tool({"type": "object"}), {"any": day})  # nothing to say: the server judges
    assert schema.check({"type": "object"}, {"any": {1, 2}}) is None


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987_syntax is not installed")
def test_jsonschema_is_imported_without_building_the_iri_grammar() -> None:
    code = (
        "import sys\n"
        "from workbench_magic.engine.schema import import_jsonschema\n"
        "jsonschema = import_jsonschema()\n"
        "assert 'rfc3987_syntax' not in sys.modules, 'grammar module imported'\n"
        "checker = jsonschema.FormatChecker()\n"
        "assert checker.conforms('https://example.org/ünïcode', 'iri')\n"  # the real check, loaded now
        "assert not checker.conforms('not an iri', 'iri')\n"
        "import rfc3987_syntax\n"
        "assert hasattr(rfc3987_syntax, 'RFC3987_SYNTAX_GRAMMAR') or rfc3987_syntax.__file__\n"
        "print('ok')\n"
    )
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_primed_output_validators_still_check_results(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SERVERS))
    import inproc
    from mcp import Client

    async def main() -> None:
        async with Client(inproc.mcp) as client:
            listed = await client.list_tools()
            schemas = {t.name: t.output_schema for t in listed.tools if t.output_schema}
            assert "add" in schemas
            schema.prime_output_validators(client.session, schemas)
            assert set(schemas) <= set(client.session._tool_output_validators)  # filled, not compiled later
            good = await client.call_tool("add", {"a": 1, "b": 2})
            assert good.structured_content == {"total": 3, "terms": [1, 2]}
            bad = types.CallToolResult(content=[], structured_content={"total": "three", "terms": []})
            with pytest.raises(RuntimeError, match="returned by tool add: 'three' is not of"):
                await client.session.validate_tool_result("add", bad)
            # a result that fits is decided by jsonschema-rs; one that does not by jsonschema's own errors
            primed = client.session._tool_output_validators["add"]
            assert isinstance(primed, schema.RsFirst)
            assert list(primed.iter_errors({"total": 3, "terms": [1, 2]})) == []
            assert [e.message for e in primed.iter_errors({"total": "three", "terms": []})] == [
                e.message for e in primed.python.iter_errors({"total": "three", "terms": []})
            ]

    anyio.run(main)
    assert sys.modules.get("jsonschema") is not None
