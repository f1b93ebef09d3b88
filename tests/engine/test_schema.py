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


DANGLING = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}


def test_a_dangling_ref_is_an_argument_error_naming_the_tool_and_the_ref() -> None:
    """Issue 53: `check_schemas` flagged a `$ref` to a missing definition while calls went out
    unchecked. One rule: the same words at call time, as the tool's argument error."""
    from workbench_magic.vocabulary.portability import judge

    said = "$ref '#/$defs/Missing' points to nothing"
    assert any(said in reason for reason in judge(DANGLING, "openai").reasons)  # what check_schemas says
    with pytest.raises(ArgumentError) as info:
        schema.validate_arguments(tool(DANGLING), {"a": 1})
    assert str(info.value) == (
        f"Invalid arguments for tool 'x' in server 's' (toolbox 't'): its input schema cannot be checked: {said}"
    )
    # a pointer into a list, and escaped names (~1 for /, ~0 for ~), resolve as check_schemas resolves them
    fine = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/a~1b"}, "b": {"$ref": "#/$defs/list/1"}},
        "$defs": {"a/b": {"type": "integer"}, "list": [{}, {"type": "string"}]},
    }
    schema.validate_arguments(tool(fine), {"a": 1, "b": "x"})


def test_a_remote_ref_is_never_fetched_and_the_call_goes_to_the_server_unchecked() -> None:
    """DESIGN turn 5: a remote `$ref` in a server's schema is never fetched (jsonschema-rs and
    jsonschema both fetch one by default). A listener on the ref's port sees no connection."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    connections: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                peer, _ = listener.accept()
            except TimeoutError:
                continue
            connections.append(peer.getpeername())
            peer.close()  # answer nothing: a fetch fails at once

    watcher = threading.Thread(target=accept, daemon=True)
    watcher.start()
    remote = {
        "type": "object",
        "properties": {"a": {"$ref": f"http://127.0.0.1:{port}/defs.json#/Thing"}, "n": {"type": "integer"}},
    }
    try:
        schema.validate_arguments(tool(remote), {"a": 1, "n": 2})  # unchecked: the server judges
        schema.validate_arguments(tool(remote), {"a": 1, "n": "two"})
        assert schema.check(remote, {"n": "two"}) is None
        assert schema.first_error(remote, {"a": 1, "n": "two"}) is None  # jsonschema phrases; it must not fetch
    finally:
        stop.set()
        watcher.join()
        listener.close()
    assert connections == []
