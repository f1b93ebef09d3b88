"""A toolbox's surface and the differences between two (engine/rules/surface.py): snapshots built
from dicts, saved and loaded; which changes a diff finds, how it names them, and which break."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from workbench_magic.engine.rules.surface import (
    FORMAT,
    Change,
    Diff,
    Snapshot,
    diff_snapshots,
    input_changes,
    output_changes,
    schema_breaks,
)
from workbench_magic.vocabulary.errors import UsageError


def query_schema() -> dict[str, Any]:
    """An input schema as pydantic writes it: a nested model behind `$ref`, an optional one behind
    `anyOf` with null."""
    return {
        "type": "object",
        "properties": {
            "sql": {"type": "string", "description": "The query"},
            "limit": {"type": "number", "minimum": 1, "maximum": 1000},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit", "kelvin"]},
            "note": {"type": ["string", "null"]},
            "where": {"type": "array", "items": {"$ref": "#/$defs/Condition"}},
            "filter": {"anyOf": [{"$ref": "#/definitions/Filter"}, {"type": "null"}], "default": None},
        },
        "required": ["sql"],
        "$defs": {
            "Condition": {
                "type": "object",
                "properties": {"column": {"type": "string"}, "op": {"type": "string", "enum": ["=", "<", ">"]}},
                "required": ["column", "op"],
            }
        },
        "definitions": {"Filter": {"type": "object", "properties": {"column": {"type": ["string", "integer"]}}}},
    }


def stats_output() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"mean": {"type": "number"}, "count": {"type": "integer"}},
        "required": ["mean", "count"],
    }


def surface() -> dict[str, Any]:
    return {
        "toolbox": "demo",
        "servers": {
            "datasets": {
                "server": "datasets 1.0",
                "tools": {
                    "query": {
                        "title": "Query",
                        "description": "Run a query",
                        "inputSchema": query_schema(),
                        "outputSchema": None,
                        "annotations": {"readOnlyHint": True},
                    },
                    "stats": {
                        "title": None,
                        "description": "Column statistics",
                        "inputSchema": {"type": "object", "properties": {"column": {"type": "string"}}},
                        "outputSchema": stats_output(),
                        "annotations": None,
                    },
                },
                "resources": {"data://iris": {"name": "iris", "description": "Iris", "mimeType": "text/csv"}},
                "resourceTemplates": {"data://{name}": {"name": "dataset", "description": None, "mimeType": None}},
                "prompts": {
                    "explore": {
                        "description": "Explore a dataset",
                        "arguments": [{"name": "dataset", "required": True, "description": "Which one"}],
                    }
                },
            },
            "weather": {"server": "weather 2.1", "tools": {}, "resources": {}, "resourceTemplates": {}, "prompts": {}},
        },
    }


def changed(edit: Any) -> Diff:
    """The diff from `surface()` to a copy `edit` changed in place."""
    new = surface()
    edit(new)
    return diff_snapshots(Snapshot(surface()), Snapshot(new))


def query(data: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = data["servers"]["datasets"]["tools"]["query"]
    return tool


def findings(diff: Diff) -> list[tuple[str, str, str, str, bool]]:
    return [(c.kind, c.item, c.change, c.detail, c.breaking) for c in diff.changes]


# ---- snapshots ------------------------------------------------------------------------------------
def test_a_saved_snapshot_loads_equal_and_saves_to_the_same_bytes(tmp_path: Path) -> None:
    snapshot = Snapshot(surface())
    path = snapshot.save(tmp_path / "surface.json")
    assert path == str(tmp_path / "surface.json")
    text = Path(path).read_text(encoding="utf-8")
    assert text.endswith("}\n")
    data = json.loads(text)
    assert data["format"] == FORMAT == "workbench-magic snapshot 1"
    assert list(data) == sorted(data)
    assert list(data["servers"]["datasets"]["tools"]["query"]["inputSchema"]["properties"]) == sorted(
        query_schema()["properties"]
    )
    assert text == snapshot.to_json()

    loaded = Snapshot.load(path)
    assert loaded == snapshot
    assert "format" not in loaded.to_dict()
    again = loaded.save(tmp_path / "again.json")
    assert Path(again).read_bytes() == Path(path).read_bytes()
    assert not diff_snapshots(snapshot, loaded)


def test_a_snapshot_keeps_its_own_copy_of_the_data() -> None:
    data = surface()
    snapshot = Snapshot(data)
    data["servers"]["datasets"]["tools"].clear()
    assert sorted(snapshot.servers["datasets"]["tools"]) == ["query", "stats"]
    out = snapshot.to_dict()
    out["toolbox"] = "other"
    assert snapshot.toolbox == "demo"
    assert snapshot != Snapshot({**surface(), "toolbox": "other"})


@pytest.mark.parametrize(
    ("data", "words"),
    [({"servers": {}}, "'toolbox' string"), ({"toolbox": "demo", "servers": []}, "'servers' object")],
)
def test_a_snapshot_needs_a_toolbox_and_servers(data: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Snapshot(data)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "invalid JSON"),
        ('{"toolbox": "demo", "servers": {}}', "no 'format' key"),
        ('{"format": "something else", "toolbox": "demo", "servers": {}}', "format is 'something else'"),
        ('["a list"]', "not a JSON object"),
        ('{"format": "workbench-magic snapshot 1", "servers": {}}', "'toolbox' string"),
    ],
)
def test_loading_a_file_that_is_no_snapshot_is_a_usage_error_naming_it(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "other.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        Snapshot.load(path)
    assert type(caught.value) is UsageError
    message = str(caught.value)
    assert message.startswith(f"{path} is not a workbench-magic snapshot: ")
    assert why in message
    assert "\n" not in message
    assert caught.value.__context__ is None


def test_loading_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"Cannot read snapshot .*missing\.json: "):
        Snapshot.load(tmp_path / "missing.json")


def test_a_snapshot_shows_its_servers_counts_and_tools() -> None:
    snapshot = Snapshot(surface())
    text = repr(snapshot)
    assert text.splitlines()[0] == "Snapshot of demo: 2 servers"
    assert "  datasets (datasets 1.0): 2 tools, 1 resource, 1 resource template, 1 prompt" in text
    assert "    tools: query, stats" in text
    assert "  weather (weather 2.1): 0 tools, 0 resources, 0 resource templates, 0 prompts" in text
    html = snapshot._repr_html_()
    assert "Snapshot of demo: 2 servers" in html
    assert "<td>datasets</td><td>datasets 1.0</td><td>2</td><td>1</td><td>1</td><td>1</td>" in html
    assert "query, stats" in html


# ---- input schemas ------------------------------------------------------------------------------
def test_an_identical_schema_breaks_nothing() -> None:
    assert schema_breaks(query_schema(), query_schema()) == []
    assert input_changes(query_schema(), query_schema()) == []
    assert not diff_snapshots(Snapshot(surface()), Snapshot(surface()))


def test_a_new_required_argument_is_breaking_and_named() -> None:
    def edit(data: dict[str, Any]) -> None:
        schema = query(data)["inputSchema"]
        schema["properties"]["language"] = {"type": "string"}
        schema["required"].append("language")

    diff = changed(edit)
    assert findings(diff) == [("tool", "query", "changed", "argument 'language' is new and required", True)]
    assert diff.breaking


def test_a_new_optional_argument_is_not_breaking() -> None:
    diff = changed(lambda data: query(data)["inputSchema"]["properties"].update(language={"type": "string"}))
    assert findings(diff) == [("tool", "query", "changed", "argument 'language' is new and optional", False)]
    assert diff and not diff.breaking


def test_an_argument_that_becomes_required_or_is_removed_is_breaking() -> None:
    def edit(data: dict[str, Any]) -> None:
        schema = query(data)["inputSchema"]
        schema["required"] = ["limit"]
        del schema["properties"]["note"]

    assert findings(changed(edit)) == [
        ("tool", "query", "changed", "argument 'limit' became required", True),
        ("tool", "query", "changed", "argument 'note' was removed", True),
        ("tool", "query", "changed", "argument 'sql' is no longer required", False),
    ]


@pytest.mark.parametrize(
    ("argument", "now", "detail"),
    [
        ("limit", {"type": "integer"}, "argument 'limit': type narrowed from number to integer"),
        ("note", {"type": "string"}, "argument 'note': type narrowed from string or null to string"),
        ("sql", {"type": "boolean"}, "argument 'sql': type changed from string to boolean"),
    ],
)
def test_a_narrowed_type_is_breaking(argument: str, now: dict[str, Any], detail: str) -> None:
    old = query_schema()
    new = copy.deepcopy(old)
    new["properties"][argument].update(now)
    assert schema_breaks(old, new) == [detail]


@pytest.mark.parametrize(
    ("old", "new", "detail"),
    [
        ({"type": "integer"}, {"type": "number"}, "argument 'x': type widened from integer to number"),
        ({"type": "string"}, {"type": ["string", "null"]}, "argument 'x': type widened from string to string or null"),
        (
            {"type": "string"},
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "argument 'x': type widened from string to string or null",
        ),
    ],
)
def test_a_widened_type_is_not_breaking(old: dict[str, Any], new: dict[str, Any], detail: str) -> None:
    def schema(x: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": {"x": x}}

    assert input_changes(schema(old), schema(new)) == [(detail, False)]
    assert schema_breaks(schema(old), schema(new)) == []


def test_a_schema_of_unknown_type_is_not_compared_by_type() -> None:
    old = {"type": "object", "properties": {"x": {}}}
    new = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert input_changes(old, new) == []
    assert input_changes(new, old) == []


def test_an_enum_that_lost_a_value_breaks_and_one_that_gained_does_not() -> None:
    def edit(data: dict[str, Any]) -> None:
        query(data)["inputSchema"]["properties"]["unit"]["enum"] = ["celsius", "fahrenheit", "rankine"]

    assert findings(changed(edit)) == [
        ("tool", "query", "changed", "argument 'unit': enum lost 'kelvin'", True),
        ("tool", "query", "changed", "argument 'unit': enum gained 'rankine'", False),
    ]


def test_a_changed_const_is_breaking() -> None:
    old = {"type": "object", "properties": {"mode": {"const": "fast"}}}
    new = {"type": "object", "properties": {"mode": {"const": "slow"}}}
    assert schema_breaks(old, new) == ["argument 'mode': const changed from 'fast' to 'slow'"]


def test_tightened_bounds_break_and_loosened_ones_do_not() -> None:
    def edit(data: dict[str, Any]) -> None:
        props = query(data)["inputSchema"]["properties"]
        props["limit"].update(minimum=0, maximum=100)
        props["sql"]["maxLength"] = 5000

    assert findings(changed(edit)) == [
        ("tool", "query", "changed", "argument 'limit': minimum lowered from 1 to 0", False),
        ("tool", "query", "changed", "argument 'limit': maximum lowered from 1000 to 100", True),
        ("tool", "query", "changed", "argument 'sql': maxLength 5000 added", True),
    ]


def test_a_nested_property_behind_a_ref_is_named_by_its_path() -> None:
    def edit(data: dict[str, Any]) -> None:
        schema = query(data)["inputSchema"]
        schema["$defs"]["Condition"]["properties"]["op"]["enum"] = ["=", "<"]
        schema["definitions"]["Filter"]["properties"]["column"]["type"] = "string"

    diff = changed(edit)
    assert findings(diff) == [
        ("tool", "query", "changed", "argument 'filter.column': type narrowed from string or integer to string", True),
        ("tool", "query", "changed", "argument 'where[].op': enum lost '>'", True),
    ]


def test_a_recursive_schema_is_compared_once_per_level_of_recursion() -> None:
    def tree(leaf: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "value": {"type": leaf},
                        "left": {"$ref": "#/$defs/Node"},
                        "right": {"$ref": "#/$defs/Node"},
                    },
                }
            },
        }

    assert schema_breaks(tree("number"), tree("number")) == []
    assert schema_breaks(tree("number"), tree("integer")) == [
        "argument 'root.value': type narrowed from number to integer"
    ]


def test_schema_breaks_gives_the_same_lines_as_the_diff() -> None:
    def edit(data: dict[str, Any]) -> None:
        schema = query(data)["inputSchema"]
        schema["properties"]["limit"]["type"] = "integer"
        schema["properties"]["sql"]["description"] = "SQL text"
        schema["properties"]["language"] = {"type": "string"}
        schema["required"].append("language")

    diff = changed(edit)
    new = surface()
    edit(new)
    lines = schema_breaks(query(surface())["inputSchema"], query(new)["inputSchema"])
    assert lines == [c.detail for c in diff.changes if c.breaking]
    assert lines == [
        "argument 'language' is new and required",
        "argument 'limit': type narrowed from number to integer",
    ]
    assert "argument 'sql': description changed" in [c.detail for c in diff.changes if not c.breaking]


# ---- outputs, items, servers ----------------------------------------------------------------------
def test_an_output_field_removed_breaks_and_one_added_does_not() -> None:
    def edit(data: dict[str, Any]) -> None:
        output = data["servers"]["datasets"]["tools"]["stats"]["outputSchema"]
        del output["properties"]["mean"]
        output["required"].remove("mean")
        output["properties"]["median"] = {"type": "number"}

    assert findings(changed(edit)) == [
        ("tool", "stats", "changed", "output field 'mean' was removed", True),
        ("tool", "stats", "changed", "output field 'median' is new", False),
    ]


def test_an_output_type_that_may_now_hold_more_breaks() -> None:
    old = stats_output()
    wider = copy.deepcopy(old)
    wider["properties"]["count"]["type"] = "number"
    narrower = copy.deepcopy(old)
    narrower["properties"]["mean"]["type"] = "integer"
    assert output_changes(old, wider) == [("output field 'count': type widened from integer to number", True)]
    assert output_changes(old, narrower) == [("output field 'mean': type narrowed from number to integer", False)]
    assert output_changes(old, None) == [("output schema removed", True)]
    assert output_changes(None, old) == [("output schema added", False)]
    assert output_changes(None, None) == []


def test_a_removed_tool_breaks_and_a_rename_is_a_removal_and_an_addition() -> None:
    def edit(data: dict[str, Any]) -> None:
        tools = data["servers"]["datasets"]["tools"]
        tools["summary"] = tools.pop("stats")

    diff = changed(edit)
    assert findings(diff) == [
        ("tool", "stats", "removed", "removed", True),
        ("tool", "summary", "added", "added", False),
    ]
    assert [c.item for c in diff.removed] == ["stats"]
    assert [c.item for c in diff.added] == ["summary"]
    assert diff.changed == []
    assert len(diff) == 2 and diff.breaking


def test_a_removed_prompt_resource_or_template_breaks() -> None:
    def edit(data: dict[str, Any]) -> None:
        server = data["servers"]["datasets"]
        server["prompts"].clear()
        server["resources"].clear()
        server["resourceTemplates"].clear()

    assert findings(changed(edit)) == [
        ("resource", "data://iris", "removed", "removed", True),
        ("resource template", "data://{name}", "removed", "removed", True),
        ("prompt", "explore", "removed", "removed", True),
    ]


def test_prompt_arguments_that_become_required_break() -> None:
    def edit(data: dict[str, Any]) -> None:
        arguments = data["servers"]["datasets"]["prompts"]["explore"]["arguments"]
        arguments[0]["description"] = "The dataset"
        arguments.append({"name": "depth", "required": True})
        arguments.append({"name": "style", "required": False})

    assert findings(changed(edit)) == [
        ("prompt", "explore", "changed", "argument 'dataset': description changed", False),
        ("prompt", "explore", "changed", "argument 'depth' is new and required", True),
        ("prompt", "explore", "changed", "argument 'style' is new and optional", False),
    ]


def test_a_server_added_or_removed_is_one_change() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["servers"]["maps"] = data["servers"].pop("weather")

    diff = changed(edit)
    assert findings(diff) == [
        ("server", "maps", "added", "added", False),
        ("server", "weather", "removed", "removed", True),
    ]
    assert [c.server for c in diff.changes] == ["maps", "weather"]


def test_descriptions_titles_annotations_and_server_info_do_not_break() -> None:
    def edit(data: dict[str, Any]) -> None:
        server = data["servers"]["datasets"]
        server["server"] = "datasets 1.1"
        query(data)["description"] = "Run a SQL query"
        query(data)["title"] = "SQL query"
        query(data)["annotations"] = {"readOnlyHint": False}
        server["resources"]["data://iris"]["mimeType"] = "application/json"

    diff = changed(edit)
    assert findings(diff) == [
        ("server", "datasets", "changed", "server info changed: datasets 1.0 -> datasets 1.1", False),
        ("tool", "query", "changed", "title changed", False),
        ("tool", "query", "changed", "description changed", False),
        ("tool", "query", "changed", "annotation readOnlyHint changed: true -> false", False),
        ("resource", "data://iris", "changed", "mimeType changed: text/csv -> application/json", False),
    ]
    assert diff and not diff.breaking


def test_changes_are_ordered_by_server_kind_and_item_whatever_order_they_came_in() -> None:
    changes = [
        Change("b", "tool", "a", "added", "added", False),
        Change("a", "prompt", "p", "removed", "removed", True),
        Change("a", "tool", "z", "changed", "first", False),
        Change("a", "tool", "b", "added", "added", False),
        Change("a", "tool", "z", "changed", "second", True),
        Change("a", "server", "a", "changed", "server info changed: x -> y", False),
    ]
    ordered = Diff(changes, toolbox="t").changes
    assert [(c.server, c.kind, c.item, c.detail) for c in ordered] == [
        ("a", "server", "a", "server info changed: x -> y"),
        ("a", "tool", "b", "added"),
        ("a", "tool", "z", "first"),
        ("a", "tool", "z", "second"),
        ("a", "prompt", "p", "removed"),
        ("b", "tool", "a", "added"),
    ]


# ---- renderings ---------------------------------------------------------------------------------
def test_the_text_rendering_has_a_header_and_marks_what_breaks() -> None:
    def edit(data: dict[str, Any]) -> None:
        schema = query(data)["inputSchema"]
        schema["properties"]["language"] = {"type": "string"}
        schema["required"].append("language")
        data["servers"]["datasets"]["tools"]["plot"] = {"description": "A chart", "inputSchema": {}}

    assert repr(changed(edit)).splitlines() == [
        "Diff of demo: 2 changes, 1 breaking",
        "          datasets  tool plot: added",
        "BREAKING  datasets  tool query: argument 'language' is new and required",
    ]
    assert repr(changed(lambda data: None)) == "Diff of demo: no changes"


def test_the_html_rendering_has_the_header_and_highlights_what_breaks() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["servers"]["datasets"]["tools"].pop("stats")
        data["servers"]["datasets"]["server"] = "datasets <1.1>"

    html = changed(edit)._repr_html_()
    assert "Diff of demo: 2 changes, 1 breaking" in html
    assert "<tr style='background:#fdecee;color:#b00020'><td>BREAKING</td><td>datasets</td><td>tool</td>" in html
    assert "<tr><td></td><td>datasets</td><td>server</td>" in html
    assert "datasets &lt;1.1&gt;" in html
    assert changed(lambda data: None)._repr_html_() == "<div><b>Diff of demo: no changes</b></div>"


def test_a_change_that_makes_a_tool_unportable_is_a_breaking_finding_of_its_own() -> None:
    """An optional map argument breaks no client, but Anthropic's strict tool use and Gemini now refuse
    the tool (OpenAI strict refused it before: `column` is optional)."""

    def edit(data: dict[str, Any]) -> None:
        tool = data["servers"]["datasets"]["tools"]["stats"]
        tool["inputSchema"]["properties"]["options"] = {"type": "object", "additionalProperties": {"type": "string"}}

    diff = changed(edit)
    assert findings(diff) == [
        ("tool", "stats", "changed", "argument 'options' is new and optional", False),
        (
            "tool",
            "stats",
            "changed",
            "no longer portable to anthropic (strict tool use): argument 'options': a map (additionalProperties "
            '{"type": "string"})',
            True,
        ),
        (
            "tool",
            "stats",
            "changed",
            "no longer portable to gemini (function declarations, OpenAPI subset): argument 'options': a map "
            '(additionalProperties {"type": "string"})',
            True,
        ),
    ]
    assert diff.breaking
