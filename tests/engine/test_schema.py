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
from workbench_magic.engine.sdk.session import output_validator_cache
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
            assert set(schemas) <= set(output_validator_cache(client.session) or {})  # filled, not compiled later
            good = await client.call_tool("add", {"a": 1, "b": 2})
            assert good.structured_content == {"total": 3, "terms": [1, 2]}
            bad = types.CallToolResult(content=[], structured_content={"total": "three", "terms": []})
            with pytest.raises(RuntimeError, match="returned by tool add: 'three' is not of"):
                await client.session.validate_tool_result("add", bad)
            # a result that fits is decided by jsonschema-rs; one that does not by jsonschema's own errors
            primed = (output_validator_cache(client.session) or {})["add"]
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
    from workbench_magic.engine.rules.portability import judge

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


class Canary:
    """An HTTP server on a real socket that serves a JSON Schema at any path and counts the
    connections and requests it gets: a schema check that fetched would show here."""

    def __init__(self) -> None:
        import http.server
        import json
        import threading

        self.connections = 0
        self.requests: list[str] = []
        canary = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                canary.requests.append(self.path)
                body = json.dumps({"type": "object", "properties": {"displayName": {"type": "string"}}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            def verify_request(self, request: Any, client_address: Any) -> bool:
                canary.connections += 1
                return True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/canary.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def canary() -> Any:
    served = Canary()
    try:
        yield served
    finally:
        served.close()


def test_the_canary_counts_a_fetch(canary: Canary) -> None:
    """The canary sees a fetch (so its zero below means something)."""
    import urllib.request

    with urllib.request.urlopen(canary.url, timeout=30) as response:
        assert b"displayName" in response.read()
    assert (canary.connections, canary.requests) == (1, ["/canary.json"])


@pytest.mark.parametrize("validate", [True, False])
def test_a_servers_remote_ref_is_never_fetched_listing_checking_or_calling(
    make_workbench, canary: Canary, validate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 54 (`json-schema-ref-no-deref`): a tool whose input and output schemas `$ref` a URL
    (the canary) is listed, judged by check_schemas, called with and without the argument check:
    the canary is never asked. The server's log says so once; local `$ref`s are checked as ever."""
    from workbench_magic import ArgumentError

    monkeypatch.syspath_prepend(str(SERVERS))
    import refserver

    wb = make_workbench({"toolboxes": {}}, validate_arguments=validate)
    wb.add_server("refs/server", refserver.make(canary.url))
    listed = {t.name: t for t in wb.tools("refs")}
    assert listed["lookup_user"].input_schema["properties"]["profile"] == {
        "$ref": canary.url,
        "default": None,
        "title": "Profile",
    }
    wb.check_schemas("refs")
    found = wb.call("refs/server/lookup_user", {"user": {"id": "ada-1"}, "profile": {"displayName": "Ada"}})
    assert not found.is_error, found.text
    assert found.data == {"id": "ada-1", "profile": {"displayName": "Ada"}}
    # a schema with a remote $ref is not checked here: the server judges (pydantic refuses)
    refused = wb.call("refs/server/lookup_user", {"user": {"id": "Not Valid"}})
    assert refused.is_error and "pattern" in refused.text
    # local $refs are checked before sending, as ever (with the check on)
    if validate:
        with pytest.raises(ArgumentError, match=r"argument 'user\.id': 'Not Valid' does not match"):
            wb.call("refs/server/local_only", {"user": {"id": "Not Valid"}})
    assert wb.call("refs/server/local_only", {"user": {"id": "ada-1"}}).data == {"result": "ada-1"}
    wb.tools("refs")  # listed again
    log = wb.logs("refs/server")
    said = f"tool 'lookup_user': $ref '{canary.url}' not fetched"
    assert log.count(said) == 1, log
    assert "local_only" not in log
    assert (canary.connections, canary.requests) == (0, [])


def test_remote_refs_name_what_would_be_fetched_and_nothing_is(canary: Canary) -> None:
    """A relative `$ref` resolves against the schema's `$id`; an embedded resource (`$id` in
    `$defs`) and a local `$ref` are not remote; a schema that compiles has none."""
    base = canary.url.rsplit("/", 1)[0]
    mixed = {
        "$id": f"{base}/root.json",
        "type": "object",
        "$defs": {"e": {"$id": "https://embedded.test/e.json", "type": "string"}, "n": {"type": "integer"}},
        "properties": {
            "e": {"$ref": "https://embedded.test/e.json"},
            "n": {"$ref": "#/$defs/n"},
            "rel": {"$ref": "other.json"},
            "frag": {"$ref": f"{canary.url}#/properties/displayName"},
        },
    }
    assert set(schema.remote_refs(mixed)) == {f"{base}/other.json", canary.url}
    assert schema.remote_refs(NESTED) == ()
    assert schema.remote_refs(None) == ()
    assert schema.remote_ref_note(tool(NESTED)) is None
    note = schema.remote_ref_note(tool({"type": "object", "properties": {"p": {"$ref": canary.url}}}))
    assert note == f"tool 'x': $ref '{canary.url}' not fetched; its input schema is not checked here"
    assert (canary.connections, canary.requests) == (0, [])


@pytest.mark.parametrize(
    ("name", "nullable"),
    [
        ("flag", False),
        ("maybe", True),
        ("either", True),
        ("listed", True),
        ("defined", False),
        ("defined_nullable", True),
        ("anything", True),
        ("a b/c~%", False),  # a name that must be escaped in a JSON pointer and a URI
        ("remote", True),  # behind a remote $ref: not known (nothing fetched), the null stays
        ("undeclared", True),
    ],
)
def test_whether_a_property_takes_null(name: str, nullable: bool) -> None:
    properties = {
        "flag": {"type": "boolean"},
        "maybe": {"type": ["boolean", "null"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "listed": {"enum": ["a", None]},
        "defined": {"$ref": "#/$defs/Flag"},
        "defined_nullable": {"$ref": "#/$defs/Maybe"},
        "anything": {},
        "a b/c~%": {"type": "string"},
        "remote": {"$ref": "http://127.0.0.1:9/never.json"},
    }
    input_schema = {
        "type": "object",
        "properties": properties,
        "$defs": {"Flag": {"type": "boolean"}, "Maybe": {"type": ["string", "null"]}},
        "required": ["flag"],
    }
    assert schema.allows_null(input_schema, name) is nullable
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"b": {"$ref": "#/definitions/B"}},
        "definitions": {"B": {"type": "boolean"}},
    }
    assert schema.allows_null(draft7, "b") is False
