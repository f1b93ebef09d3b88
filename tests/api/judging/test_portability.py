"""Schema portability: the providers' rules (engine/rules/portability.py), a schema per rule rejected by
exactly the providers whose documented limits it breaks, the lossless rewrites and the report's
renderings; and `wb.check_schemas` (api/judging/portability.py) on real servers (server-everything,
server-filesystem, the demo toolbox), with pydantic-ai's transformers holding the verdicts too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import npm_server, stdio_server, toolbox

from workbench_magic import ConnectError, ToolboxNotFoundError, UsageError, Workbench
from workbench_magic.api.judging.portability import check_schemas
from workbench_magic.engine.rules.portability import judge, unportable
from workbench_magic.vocabulary.portability import ACCEPTED, PROVIDERS, REJECTED, REWRITTEN, RULES
from workbench_magic.vocabulary.schema_report import SchemaReport


def closed(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """An object schema every provider takes as it is: closed, every property required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
        **extra,
    }


def arg(schema: Any) -> dict[str, Any]:
    """A tool whose one required argument `x` has `schema`."""
    return closed({"x": schema})


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = closed({"n": schema})
    return schema


NODE = closed({"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}})
TREE = {**arg({"$ref": "#/$defs/Node"}), "$defs": {"Node": NODE}}
ADDRESS = closed({"street": {"type": "string"}})
DEFS = {**arg({"$ref": "#/$defs/Address"}), "$defs": {"Address": ADDRESS}}
KINDS = {
    "oneOf": [
        closed({"kind": {"const": "a"}, "a": {"type": "string"}}),
        closed({"kind": {"const": "b"}, "b": {"type": "integer"}}),
    ]
}

# (name, schema, the providers that reject it): one schema per rule, and some every provider takes
CASES: list[tuple[str, dict[str, Any], set[str]]] = [
    ("plain", arg({"type": "string"}), set()),
    ("optional argument", closed({"x": {"type": "string"}}, required=[]), {"openai"}),
    ("array without items", arg({"type": "array"}), {"openai", "gemini"}),
    ("array of untyped items", arg({"type": "array", "items": {}}), {"openai", "gemini"}),
    ("overlapping oneOf", arg({"oneOf": [{"type": "number"}, {"type": "integer"}]}), set(PROVIDERS)),
    ("disjoint oneOf", arg({"oneOf": [{"type": "string"}, {"type": "integer"}]}), set()),
    ("discriminated oneOf", arg(KINDS), set()),
    (
        "allOf of two objects",
        arg(
            {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
                ]
            }
        ),
        set(),
    ),
    (
        "allOf of two patterns",
        arg({"allOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]}),
        {"openai", "gemini"},
    ),
    ("format uri", arg({"type": "string", "format": "uri"}), {"openai"}),
    ("format regex", arg({"type": "string", "format": "regex"}), {"openai", "anthropic"}),
    ("pattern with a lookahead", arg({"type": "string", "pattern": "^(?=a)"}), {"openai", "anthropic"}),
    ("pattern with a backreference", arg({"type": "string", "pattern": r"(a)\1"}), {"anthropic"}),
    ("minimum", arg({"type": "integer", "minimum": 1}), {"anthropic"}),
    ("minLength", arg({"type": "string", "minLength": 1}), {"anthropic"}),
    ("maxItems", arg({"type": "array", "items": {"type": "string"}, "maxItems": 3}), {"anthropic"}),
    ("minItems 2", arg({"type": "array", "items": {"type": "string"}, "minItems": 2}), {"anthropic"}),
    ("uniqueItems", arg({"type": "array", "items": {"type": "string"}, "uniqueItems": True}), set(PROVIDERS)),
    ("exclusive bound on a number", arg({"type": "number", "exclusiveMinimum": 0}), {"anthropic", "gemini"}),
    ("exclusive bound on an integer", arg({"type": "integer", "exclusiveMinimum": 0}), {"anthropic"}),
    ("recursive $ref", TREE, {"anthropic", "gemini"}),
    ("$defs", DEFS, set()),
    ("type with null", arg({"type": ["string", "null"]}), set()),
    ("type list", arg({"type": ["string", "integer"]}), set()),
    ("const number", arg({"const": 1}), {"gemini"}),
    ("enum of integers", arg({"type": "integer", "enum": [1, 2]}), {"gemini"}),
    ("enum of objects", arg({"enum": [{"a": 1}]}), {"anthropic", "gemini"}),
    ("no type", arg({"description": "anything"}), {"gemini"}),
    ("free-form object argument", arg({"type": "object"}), set(PROVIDERS)),
    ("map argument", arg({"type": "object", "additionalProperties": {"type": "string"}}), set(PROVIDERS)),
    ("open root", {**arg({"type": "string"}), "additionalProperties": True}, set(PROVIDERS)),
    ("no arguments", {"type": "object", "properties": {}}, set()),
    ("parameter name with a dash", closed({"file-path": {"type": "string"}}), {"gemini"}),
    ("anyOf at the root", {"anyOf": [arg({"type": "string"}), closed({"y": {"type": "string"}})]}, set(PROVIDERS)),
    ("tuple", arg({"type": "array", "prefixItems": [{"type": "string"}]}), set(PROVIDERS)),
    ("default", arg({"type": "string", "default": "a"}), set()),
    ("not", arg({"type": "string", "not": {"enum": ["a"]}}), set(PROVIDERS)),
    ("external $ref", arg({"$ref": "https://example.com/schema.json"}), set(PROVIDERS)),
    ("pointer $ref", closed({"a": {"type": "string"}, "b": {"$ref": "#/properties/a"}}), set()),
    ("a true schema", arg(True), set(PROVIDERS)),
    ("25 optional arguments", closed({f"a{i}": {"type": "string"} for i in range(25)}, []), {"openai", "anthropic"}),
    ("17 unions", closed({f"a{i}": {"type": ["string", "null"]} for i in range(17)}), {"anthropic"}),
    ("11 levels of nesting", arg(nested(10)), {"openai"}),
    ("1,001 enum values", arg({"type": "string", "enum": [f"v{i}" for i in range(1001)]}), {"openai"}),
]


@pytest.mark.parametrize(("name", "schema", "rejecting"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_is_rejected_by_exactly_the_providers_that_reject_it(
    name: str, schema: dict[str, Any], rejecting: set[str]
) -> None:
    verdicts = {p: judge(schema, p) for p in PROVIDERS}
    assert {p for p, v in verdicts.items() if v.status == REJECTED} == rejecting, {
        p: v.reasons for p, v in verdicts.items()
    }
    for provider, verdict in verdicts.items():
        if provider in rejecting:
            assert verdict.reasons and verdict.schema is None and verdict.rewrites == ()
            assert all(f.rule.provider == provider and f.rule.source.startswith("https://") for f in verdict.findings)
        else:
            assert verdict.reasons == ()


def test_a_reason_names_the_argument_and_the_rule() -> None:
    schema = closed({"limit": {"type": "integer", "minimum": 1}, "url": {"type": "string", "format": "uri"}}, ["url"])
    openai, anthropic, gemini = (judge(schema, p) for p in PROVIDERS)
    assert openai.reasons == (
        "argument 'limit': is optional (strict mode requires every property)",
        "argument 'url': format 'uri' is not supported",
    )
    assert anthropic.reasons == ("argument 'limit': minimum not supported",)
    assert gemini.status == REWRITTEN
    (finding,) = [f for f in anthropic.findings if not f.rewrite]
    assert finding.rule is RULES[("anthropic", "numeric-constraints")]
    assert (
        finding.rule.source
        == "https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations"
    )


def test_a_schema_every_provider_takes_is_accepted_as_it_is_except_gemini_drops_additional_properties() -> None:
    schema = arg({"type": "string"})
    assert judge(schema, "openai").status == ACCEPTED
    assert judge(schema, "anthropic").status == ACCEPTED
    gemini = judge(schema, "gemini")
    assert gemini.rewrites == (
        "input schema: dropped additionalProperties: false (a Schema holds only its properties)",
    )
    assert gemini.schema == {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}


def test_gemini_rewrites_are_lossless_and_named() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "where": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
            "note": {"type": ["string", "null"]},
            "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
            "mode": {"const": "fast"},
            "value": {"type": ["string", "integer"], "maxLength": 3},
        },
        "required": ["where"],
        "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}}},
    }
    verdict = judge(schema, "gemini")
    assert verdict.status == REWRITTEN
    assert verdict.rewrites == (
        "input schema: dropped annotation $schema",
        "argument 'where[]': inlined $ref '#/$defs/Address'",
        'argument \'note\': type ["string", "null"] as nullable string',
        "argument 'count': exclusiveMinimum 0 as minimum 1 (integers)",
        "argument 'count': exclusiveMaximum 10 as maximum 9 (integers)",
        "argument 'mode': const 'fast' as a one-value enum",
        "argument 'mode': type string added to a string enum",
        'argument \'value\': type ["string", "integer"] as anyOf',
        "input schema: dropped $defs (each $ref written out)",
    )
    assert verdict.schema == {
        "type": "object",
        "properties": {
            "where": {"type": "array", "items": {"type": "object", "properties": {"street": {"type": "string"}}}},
            "note": {"type": "string", "nullable": True},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "mode": {"enum": ["fast"], "type": "string"},
            "value": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]},
        },
        "required": ["where"],
    }


def test_openai_keeps_definitions_closes_objects_and_drops_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "address": {"$ref": "#/$defs/Address", "description": "Where"},
            "mode": {"type": "string", "default": "fast"},
        },
        "required": ["address", "mode"],
        "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}},
        "definitions": {"Unused": {"type": "string"}},
    }
    verdict = judge(schema, "openai")
    assert verdict.status == REWRITTEN
    assert verdict.rewrites == (
        "argument 'address': additionalProperties: false added",
        "argument 'address': moved a $ref with sibling keywords into an anyOf",
        "argument 'mode': dropped default (every argument is sent in strict mode)",
        "input schema: additionalProperties: false added",
    )
    assert verdict.schema == {
        "type": "object",
        "properties": {
            "address": {"description": "Where", "anyOf": [{"$ref": "#/$defs/Address"}]},
            "mode": {"type": "string"},
        },
        "required": ["address", "mode"],
        "additionalProperties": False,
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"street": {"type": "string"}},
                "required": ["street"],
                "additionalProperties": False,
            }
        },
    }


def test_a_recursive_schema_is_kept_for_openai_and_rejected_where_it_cannot_be_written_out() -> None:
    openai, anthropic, gemini = (judge(TREE, p) for p in PROVIDERS)
    assert openai.status == ACCEPTED and openai.schema == TREE
    assert anthropic.reasons == ("argument 'x.children[]': recursive $ref '#/$defs/Node'",)
    assert gemini.reasons == ("argument 'x.children[]': recursive $ref '#/$defs/Node' cannot be written out",)


def test_a_tool_without_arguments_sends_no_parameters_to_gemini() -> None:
    for schema in (None, {"type": "object"}, {"type": "object", "properties": {}}):
        gemini = judge(schema, "gemini")
        assert gemini.status == REWRITTEN and gemini.schema is None
        assert gemini.rewrites[-1] == "input schema: no parameters declared: the tool takes no arguments"
        openai = judge(schema, "openai")
        assert openai.ok and openai.schema is not None
        assert openai.schema["additionalProperties"] is False and openai.schema["required"] == []


def test_unportable_names_the_providers_that_took_the_old_schema_and_refuse_the_new() -> None:
    old = arg({"type": "string"})
    new = closed({"x": {"type": "string"}, "y": {"type": "array"}}, ["x"])
    assert unportable(old, new) == [
        (
            "openai",
            ("argument 'y': an array without items", "argument 'y': is optional (strict mode requires every property)"),
        ),
        ("gemini", ("argument 'y': an array without items",)),
    ]
    assert unportable(old, old) == []
    assert unportable(new, old) == []  # portable again: not a loss


def test_an_unknown_provider_is_refused() -> None:
    with pytest.raises(ValueError, match="Unknown provider 'mistral': choose from openai, anthropic, gemini"):
        judge({}, "mistral")


# ---- the report -----------------------------------------------------------------------------------
def report() -> SchemaReport:
    tools = {
        "t/s/plain": arg({"type": "string"}),
        "t/s/query": closed({"sql": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}}, ["sql"]),
    }
    return SchemaReport([(name, {p: judge(s, p) for p in PROVIDERS}) for name, s in tools.items()], target="t <x>")


def test_the_report_lists_rejections_and_rewrites() -> None:
    r = report()
    assert r.tools == ["t/s/plain", "t/s/query"] and len(r) == 2
    assert r.rejected == [
        ("t/s/query", "openai", ("argument 'limit': is optional (strict mode requires every property)",)),
        ("t/s/query", "anthropic", ("argument 'limit': minimum not supported",)),
    ]
    assert [(tool, p) for tool, p, _ in r.rewritten] == [("t/s/plain", "gemini"), ("t/s/query", "gemini")]
    assert r.counts("openai") == {ACCEPTED: 1, REWRITTEN: 0, REJECTED: 1}
    assert r["t/s/plain"]["openai"].status == ACCEPTED


def test_the_report_renders_as_text_html_and_a_data_frame() -> None:
    r = report()
    text = repr(r)
    assert text.splitlines()[:4] == [
        "Schema report of t <x>: 2 tools; rejected by openai 1, anthropic 1, gemini 0",
        "tool       openai     anthropic  gemini",
        "t/s/plain  accepted   accepted   rewritten",
        "t/s/query  REJECTED   REJECTED   rewritten",
    ]
    assert "  t/s/query [anthropic]\n    - argument 'limit': minimum not supported" in text
    assert str(r) == text
    html = r._repr_html_()
    assert "Schema report of t &lt;x&gt;" in html and "<x>" not in html
    assert "structured-outputs#json-schema-limitations" in html and "<b>rejected</b>" in html
    frame = r.to_pandas()
    assert list(frame.columns) == ["tool", "provider", "status", "rewrites", "reasons"]
    grid = frame.pivot(index="tool", columns="provider", values="status")
    assert grid.loc["t/s/query", "openai"] == REJECTED and grid.loc["t/s/plain", "gemini"] == REWRITTEN
    assert json.loads(frame.to_json(orient="records"))[0]["status"] == ACCEPTED


def test_the_report_notes_anthropic_limits_per_request() -> None:
    many = [
        (f"t/s/tool{i}", {"anthropic": judge(closed({"a": {"type": "string"}}, []), "anthropic")}) for i in range(25)
    ]
    r = SchemaReport(many, ("anthropic",))
    assert r.notes == [
        "anthropic: 25 tools could be strict; a request takes at most 20 strict tools",
        "anthropic: 25 optional parameters across those tools; a request takes at most 24 in its strict tools",
    ]
    assert "Note: anthropic: 25 tools could be strict" in repr(r)


def test_the_input_schema_is_never_changed_in_place() -> None:
    for _, schema, _ in CASES:
        before = json.dumps(schema, sort_keys=True)
        for provider in PROVIDERS:
            judge(schema, provider)
        assert json.dumps(schema, sort_keys=True) == before


# ---- pydantic-ai's transformers -------------------------------------------------------------------
def openai_transformer() -> Any:
    from pydantic_ai.providers.openai import OpenAIProvider

    profile = OpenAIProvider.model_profile("gpt-5")
    assert profile is not None
    return profile["json_schema_transformer"]


@pytest.mark.parametrize(("name", "schema", "rejecting"), CASES, ids=[c[0] for c in CASES])
def test_pydantic_ai_finds_strict_compatible_every_schema_the_rules_send_to_openai(
    name: str, schema: dict[str, Any], rejecting: set[str]
) -> None:
    """The OpenAI transformer pydantic-ai's OpenAIProvider picks agrees with the rules: what they send is
    strict-compatible, so the cross-check of `check_schemas` changes no verdict here."""
    verdict = judge(schema, "openai")
    rejected = check_schemas([("t/s/x", schema)], ("openai",)).rejected
    if not verdict.ok:
        assert rejected == [("t/s/x", "openai", verdict.reasons)]
        return
    transformer = openai_transformer()(verdict.schema, strict=None)
    transformer.walk()
    assert transformer.is_strict_compatible
    assert rejected == []


@pytest.mark.parametrize(
    "schema",
    [
        closed({"x": {"type": "string"}}, required=[]),
        arg({"type": "array"}),
        arg({"oneOf": [{"type": "number"}, {"type": "integer"}]}),
        arg({"type": "string", "format": "uri"}),
        arg({"type": "string", "pattern": "^(?=a)"}),
        arg({"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        arg({"type": "object", "additionalProperties": {"type": "string"}}),
        arg({"type": "array", "prefixItems": [{"type": "string"}]}),
    ],
)
def test_pydantic_ai_finds_incompatible_what_the_rules_reject_for_openai(schema: dict[str, Any]) -> None:
    assert not judge(schema, "openai").ok
    transformer = openai_transformer()(schema, strict=None)
    transformer.walk()
    assert not transformer.is_strict_compatible


def test_pydantic_ai_refuses_the_gemini_form_of_what_the_rules_reject() -> None:
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.profiles.google import GoogleOpenAPISchemaTransformer

    with pytest.raises(UserError, match="Recursive"):
        GoogleOpenAPISchemaTransformer(TREE).walk()
    ((tool, provider, reasons),) = check_schemas([("t/s/tree", TREE)], ("gemini",)).rejected
    assert (tool, provider) == ("t/s/tree", "gemini")
    assert reasons == ("argument 'x.children[]': recursive $ref '#/$defs/Node' cannot be written out",)


# ---- wb.check_schemas on real servers ---------------------------------------------------------------
DEMO = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench], tmp_path: Path) -> Workbench:
    """server-everything (`ev`), server-filesystem on `tmp_path` (`fs`) and the demo toolbox, none open yet."""
    return make_workbench(
        {
            "toolboxes": {
                "ev": toolbox({"ev": npm_server("everything")}),
                "fs": toolbox({"fs": npm_server("filesystem", str(tmp_path))}),
                "demo": toolbox(DEMO),
            }
        }
    )


def by(report: SchemaReport, provider: str) -> dict[str, tuple[str, ...]]:
    return {tool: reasons for tool, p, reasons in report.rejected if p == provider}


def test_server_everythings_schemas(wb: Workbench) -> None:
    report = wb.check_schemas("ev")
    assert report.tools == [str(t.identifier) for t in wb.tools("ev") if t.for_model]
    assert report.providers == PROVIDERS and report.target == "ev"
    # its `count` is a number between 1 and 10: Anthropic's strict tool use takes no numeric bounds
    assert by(report, "anthropic") == {
        "ev/ev/get-resource-links": ("argument 'count': minimum, maximum not supported",)
    }
    # zod's `z.string().url()` is `format: uri`, which OpenAI's strict mode does not take
    openai = by(report, "openai")
    assert "argument 'data': format 'uri' is not supported" in openai["ev/ev/gzip-file-as-resource"]
    assert "argument 'url': format 'uri' is not supported" in openai["ev/ev/trigger-url-elicitation"]
    assert report["ev/ev/echo"]["openai"].status == REWRITTEN
    assert report["ev/ev/echo"]["openai"].rewrites == ("input schema: additionalProperties: false added",)
    # Gemini takes every tool once the draft-07 `$schema` (an annotation) is dropped
    assert by(report, "gemini") == {}
    for tool in report.tools:
        assert "input schema: dropped annotation $schema" in report[tool]["gemini"].rewrites


def test_server_filesystems_schemas(wb: Workbench) -> None:
    report = wb.check_schemas("fs")
    assert by(report, "anthropic") == {} and by(report, "gemini") == {}
    optional = {
        "fs/fs/read_file": ("tail", "head"),
        "fs/fs/read_text_file": ("tail", "head"),
        "fs/fs/edit_file": ("dryRun",),
        "fs/fs/list_directory_with_sizes": ("sortBy",),
        "fs/fs/directory_tree": ("excludePatterns",),
        "fs/fs/search_files": ("excludePatterns",),
    }
    assert by(report, "openai") == {
        tool: tuple(f"argument '{name}': is optional (strict mode requires every property)" for name in names)
        for tool, names in optional.items()
    }
    edit = report["fs/fs/edit_file"]["anthropic"]
    assert edit.rewrites == (
        "argument 'edits[]': additionalProperties: false added",
        "input schema: additionalProperties: false added",
    )
    assert edit.schema is not None and edit.schema["properties"]["edits"]["items"]["additionalProperties"] is False
    listing = report["fs/fs/list_allowed_directories"]["gemini"]
    assert listing.status == REWRITTEN and listing.schema is None  # declared with no parameters


def test_the_demo_toolboxs_schemas(wb: Workbench) -> None:
    report = wb.check_schemas("demo")
    assert by(report, "gemini") == {"demo/notes/set_value": ("argument 'value': no type",)}
    assert by(report, "anthropic") == {
        "demo/datasets/query": ("argument 'limit': minimum, maximum not supported",),
        "demo/datasets/profile": ("argument 'delay': minimum, maximum not supported",),
    }
    assert set(by(report, "openai")) == {
        f"demo/{tool}"
        for tool in (
            "datasets/chart",
            "datasets/query",
            "datasets/aggregate",
            "datasets/plot",
            "datasets/profile",
            "notes/add_note",
            "notes/list_notes",
        )
    }
    query = report["demo/datasets/query"]["gemini"]
    assert query.rewrites == (
        "argument 'where[]': inlined $ref '#/$defs/Filter'",
        "input schema: dropped $defs (each $ref written out)",
    )
    assert query.schema is not None and "$ref" not in json.dumps(query.schema)
    frame = report.to_pandas()
    assert len(frame) == 3 * len(report) and set(frame["status"]) == {ACCEPTED, REWRITTEN, REJECTED}


def test_a_list_of_tools_and_one_provider(wb: Workbench) -> None:
    report = wb.check_schemas(["demo/datasets/query", "demo/notes/set_value"], providers="gemini")
    assert report.providers == ("gemini",) and report.tools == ["demo/datasets/query", "demo/notes/set_value"]
    assert report.rejected == [("demo/notes/set_value", "gemini", ("argument 'value': no type",))]
    assert repr(report).splitlines()[0] == (
        "Schema report of demo/datasets/query,demo/notes/set_value: 2 tools; rejected by gemini 1"
    )


def test_what_check_schemas_refuses(wb: Workbench) -> None:
    with pytest.raises(UsageError, match=r"^Unknown provider 'mistral': choose from openai, anthropic, gemini$"):
        wb.check_schemas("demo", providers=("openai", "mistral"))
    with pytest.raises(UsageError, match=r"^No provider: choose from openai, anthropic, gemini$"):
        wb.check_schemas("demo", providers=())
    with pytest.raises(ToolboxNotFoundError):
        wb.check_schemas("nope")


def test_a_failed_server_is_its_connect_error_not_an_empty_report(make_workbench: Callable[..., Workbench]) -> None:
    """A failed server's tools are unknown, not none (it was "0 tools, nothing rejected"); its open
    toolbox is not reopened (which retried the failed server each time)."""
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(), "broken": {"command": "false"}})}})
    wb.open("t")
    with pytest.raises(ConnectError, match="Failed to connect to server 'broken' in toolbox 't'"):
        wb.check_schemas("t/broken")
    assert "t/s/echo" in wb.check_schemas("t/s").tools  # the good server of the toolbox is checked
    assert wb.status()["t"]["broken"].status == "failed"
