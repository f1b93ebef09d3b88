"""SchemaForm: ipywidgets forms from tool input schemas (headless, no kernel)."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Literal

import ipywidgets as widgets
import pytest
from pydantic import BaseModel, Field

from workbench_magic.notebook.widgets.fields import UNSET, FormError
from workbench_magic.notebook.widgets.forms import SchemaForm
from workbench_magic.notebook.widgets.scalar_fields import ChoiceField
from workbench_magic.notebook.widgets.structured_fields import JsonField, ListField, ObjectField
from workbench_magic.vocabulary.errors import WorkbenchError


class Mode(StrEnum):
    fast = "fast"
    exact = "exact"


class Deep(BaseModel):
    x: int


class Inner(BaseModel):
    label: str = Field(description="A label for the run")
    weight: float = 1.0
    deeper: Deep | None = None


class Config(BaseModel):
    name: str
    mode: Mode = Mode.fast
    kind: Literal["a", "b"] = "a"
    sizes: list[int] = [1, 2]
    inner: Inner
    retries: int | None = None


class Filter(BaseModel):
    column: str
    op: Literal["==", "<"]
    value: float | str


class Args(BaseModel):
    config: Config
    filters: list[Filter] | None = Field(default=None, description="Conditions that must all hold")
    limit: int | None = None
    flag: bool | None = None
    verbose: bool = False
    count: int = Field(default=10, ge=0, le=100)
    ratio: float | None = None


SCHEMA: dict[str, Any] = Args.model_json_schema()


def make() -> SchemaForm:
    form = SchemaForm(SCHEMA)
    form.field("config.name").input.value = "run-1"
    form.field("config.inner.label").input.value = "first"
    return form


def test_pydantic_schema_builds_typed_value() -> None:
    form = make()
    assert isinstance(form.widget, widgets.VBox)
    assert "wb-form" in form.widget._dom_classes
    assert list(form.mode.options) == ["Form", "JSON"]
    assert form.value == {
        "config": {
            "name": "run-1",
            "mode": "fast",
            "kind": "a",
            "sizes": [1, 2],
            "inner": {"label": "first", "weight": 1.0},
        },
        "verbose": False,
        "count": 10,
    }


def test_widget_kinds_and_css_classes() -> None:
    form = SchemaForm(SCHEMA)
    assert isinstance(form.field("config"), ObjectField)
    assert isinstance(form.field("config.inner"), ObjectField)
    assert isinstance(form.field("config.inner.deeper"), JsonField)  # depth 2 = max_depth
    assert isinstance(form.field("filters"), JsonField)  # array of objects
    assert isinstance(form.field("config.mode"), ChoiceField)
    assert isinstance(form.field("config.sizes"), ListField)
    assert isinstance(form.field("config.name").input, widgets.Text)
    assert isinstance(form.field("count").input, widgets.IntText)
    assert isinstance(form.field("config.inner.weight").input, widgets.FloatText)
    assert isinstance(form.field("limit").input, widgets.Text)
    assert form.field("limit").input.placeholder == "integer"
    assert isinstance(form.field("verbose").input, widgets.Checkbox)
    assert isinstance(form.field("flag").input, widgets.Dropdown)
    label = form.field("config.inner.label")
    assert "wb-field-config-inner-label" in label.input._dom_classes
    assert label.input.tooltip == "A label for the run"
    assert label.input.description_allow_html is False
    assert "wb-field-limit" in form.field("limit").input._dom_classes
    with pytest.raises(KeyError):
        form.field("config.nope")
    # the fieldset is a VBox with a left border and a bold header
    fieldset = form.field("config").widget
    assert isinstance(fieldset, widgets.VBox) and fieldset.layout.border_left
    assert "<b>config</b>" in fieldset.children[0].value


def test_required_markers_in_labels() -> None:
    form = SchemaForm(SCHEMA)

    def label_html(path: str) -> str:
        widget = form.field(path).widget
        row = widget.children[0] if isinstance(widget.children[0], widgets.HBox) else widget
        return str(row.children[0].value)

    assert '<span style="color:red">*</span>' in label_html("config.name")
    assert '<span style="color:red">*</span>' in label_html("config.inner.label")
    assert "*" not in label_html("limit")
    assert "*" not in label_html("config.kind")
    assert "color:red" in form.field("config").widget.children[0].value
    # the description shows as a small grey line under the input
    texts = [c.value for c in form.field("filters").widget.children if isinstance(c, widgets.HTML)]
    assert any("Conditions that must all hold" in t for t in texts)


def test_unset_optional_fields_are_omitted_and_set_ones_typed() -> None:
    form = make()
    assert "limit" not in form.value and "flag" not in form.value and "filters" not in form.value
    form.field("limit").input.value = " 25 "
    form.field("ratio").input.value = "0.5"
    form.field("flag").input.value = False
    form.field("config.retries").input.value = "3"
    form.field("config.mode").input.value = "exact"
    form.field("config.kind").input.value = "b"
    value = form.value
    assert value["limit"] == 25 and type(value["limit"]) is int
    assert value["ratio"] == 0.5 and type(value["ratio"]) is float
    assert value["flag"] is False
    assert value["config"]["retries"] == 3 and type(value["config"]["retries"]) is int
    assert value["config"]["mode"] == "exact" and value["config"]["kind"] == "b"


def test_bad_number_names_the_path() -> None:
    form = make()
    form.field("limit").input.value = "ten"
    with pytest.raises(FormError, match=r"^limit: not an integer: 'ten'$"):
        _ = form.value
    form.field("limit").input.value = ""
    form.field("config.retries").input.value = "1.5"
    with pytest.raises(FormError, match=r"config\.retries: not an integer"):
        _ = form.value
    form.field("config.retries").input.value = ""
    form.field("count").input.value = 500
    with pytest.raises(FormError, match=r"count: must be <= 100, got 500"):
        _ = form.value
    schema = {
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": {"inner": {"type": "object", "properties": {"weight": {"type": "number"}}}},
            }
        },
    }
    nested = SchemaForm(schema)
    nested.field("config.inner.weight").input.value = "abc"
    with pytest.raises(FormError) as info:
        _ = nested.value
    assert str(info.value) == "config.inner.weight: not a number: 'abc'"
    assert isinstance(info.value, WorkbenchError) and info.value.path == "config.inner.weight"


def test_array_of_objects_uses_a_json_editor() -> None:
    form = make()
    filters = form.field("filters")
    assert isinstance(filters.input, widgets.Textarea)
    filters.input.value = '[{"column": "age", "op": "<", "value": 30}]'
    assert form.value["filters"] == [{"column": "age", "op": "<", "value": 30}]
    filters.input.value = '{"column": "age"}'
    with pytest.raises(FormError, match=r"filters: expected array, got object"):
        _ = form.value
    filters.input.value = "[{"
    with pytest.raises(FormError, match=r"^filters: invalid JSON"):
        _ = form.value
    filters.input.value = "  "
    assert "filters" not in form.value
    # a deep object gets a JSON editor too, and its value is a dict, never a string
    form.field("config.inner.deeper").input.value = '{"x": 4}'
    assert form.value["config"]["inner"]["deeper"] == {"x": 4}


def test_optional_int_from_anyof_null() -> None:
    schema = {
        "type": "object",
        "properties": {"limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}},
    }
    form = SchemaForm(schema)
    field = form.field("limit")
    assert not field.required and field.nullable
    assert field.get() is UNSET
    assert form.value == {}
    field.input.value = "7"
    assert form.value == {"limit": 7}
    # required but nullable (pydantic `x: int | None` without default): empty gives null
    schema["required"] = ["limit"]
    form = SchemaForm(schema)
    assert form.value == {"limit": None}
    assert '<span style="color:red">*</span>' in form.field("limit").widget.children[0].value


def test_oneof_of_consts_is_a_dropdown_keeping_types() -> None:
    schema = {
        "type": "object",
        "properties": {
            "level": {"oneOf": [{"const": 1, "title": "one"}, {"const": "two"}, {"const": True}, {"enum": [2.5]}]},
            "size": {"anyOf": [{"const": "S"}, {"const": "L"}], "default": "L"},
            "color": {"enum": ["red", "green"]},
        },
        "required": ["color"],
    }
    form = SchemaForm(schema)
    level = form.field("level")
    assert isinstance(level, ChoiceField)
    assert [label for label, _ in level.input.options] == ["(unset)", "1", "two", "True", "2.5"]
    assert form.value == {"size": "L", "color": "red"}
    for index, expected in [(1, 1), (2, "two"), (3, True), (4, 2.5)]:
        level.input.index = index
        got = form.value["level"]
        assert got == expected and type(got) is type(expected)
    level.set(True)
    assert form.value["level"] is True
    with pytest.raises(FormError, match="level: not one of"):
        level.set("three")
    # required enum without default: no "(unset)" option
    assert [label for label, _ in form.field("color").input.options] == ["red", "green"]
    assert [label for label, _ in form.field("size").input.options] == ["S", "L"]


def test_array_rows_add_and_remove() -> None:
    form = make()
    sizes = form.field("config.sizes")
    assert isinstance(sizes, ListField)
    assert len(sizes.rows_box.children) == 2
    assert "wb-field-config-sizes" in sizes.input._dom_classes
    sizes.add_button.click()
    assert form.value["config"]["sizes"] == [1, 2, 0]
    sizes.rows[2].input.value = 9
    remove_first = sizes.rows_box.children[0].children[1]
    assert remove_first.description == "−"
    remove_first.click()
    assert form.value["config"]["sizes"] == [2, 9]
    assert all(type(v) is int for v in form.value["config"]["sizes"])
    sizes.remove_row(0)
    sizes.remove_row(0)
    assert form.value["config"]["sizes"] == []  # default was [1, 2]: an emptied list is sent
    # optional list of strings without default: no rows means omitted
    schema = {
        "type": "object",
        "properties": {
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None},
            "modes": {"type": "array", "items": {"enum": ["x", "y"]}},
        },
    }
    tags_form = SchemaForm(schema)
    assert tags_form.value == {}
    tags = tags_form.field("tags")
    assert isinstance(tags, ListField)
    tags.add_button.click()
    tags.rows[0].input.value = "alpha"
    tags.add_row("beta")
    tags_form.field("modes").add_row("y")
    assert tags_form.value == {"tags": ["alpha", "beta"], "modes": ["y"]}


def test_form_json_form_round_trip_keeps_types() -> None:
    form = make()
    form.field("limit").input.value = "5"
    form.field("flag").input.value = True
    form.field("config.retries").input.value = "2"
    form.field("filters").input.value = '[{"column": "a", "op": "==", "value": "x"}]'
    before = form.value
    form.mode.value = "JSON"
    assert form.widget.children[1] is form.json_text
    assert json.loads(form.json_text.value) == before
    assert form.value == before
    # edit the JSON, then go back to the form
    data = json.loads(form.json_text.value)
    data["limit"] = 6
    data["config"]["inner"]["weight"] = 2
    data["config"]["sizes"] = [3]
    del data["flag"]
    form.json_text.value = json.dumps(data)
    form.mode.value = "Form"
    assert form.mode.value == "Form" and form.widget.children[1] is form.fields_box
    after = form.value
    assert after["limit"] == 6 and type(after["limit"]) is int
    assert after["config"]["inner"]["weight"] == 2.0 and type(after["config"]["inner"]["weight"]) is float
    assert after["config"]["sizes"] == [3]
    assert "flag" not in after
    assert after["filters"] == [{"column": "a", "op": "==", "value": "x"}]
    assert after["config"]["retries"] == 2


def test_bad_json_stays_in_json_mode() -> None:
    form = make()
    form.mode.value = "JSON"
    form.json_text.value = '{"limit": '
    form.mode.value = "Form"
    assert form.mode.value == "JSON"
    assert form.widget.children[1] is form.json_text
    assert "invalid JSON" in form.error.value and "color:#c62828" in form.error.value
    with pytest.raises(FormError, match="arguments: invalid JSON"):
        _ = form.value
    # a wrongly typed value also keeps JSON mode, naming the field
    form.json_text.value = '{"config": {"name": "n", "inner": {"label": "l", "weight": "heavy"}}}'
    form.mode.value = "Form"
    assert form.mode.value == "JSON"
    assert "config.inner.weight" in form.error.value
    form.json_text.value = '{"config": {"name": "n", "inner": {"label": "l"}}}'
    form.mode.value = "Form"
    assert form.mode.value == "Form" and form.error.value == ""
    assert form.value["config"]["name"] == "n"


def test_form_error_blocks_switch_to_json() -> None:
    form = make()
    form.field("limit").input.value = "x"
    form.mode.value = "JSON"
    assert form.mode.value == "Form"
    assert "limit: not an integer" in form.error.value


def test_set_value_fills_nested_fields() -> None:
    form = SchemaForm(SCHEMA)
    form.set_value(
        {
            "config": {
                "name": "n",
                "mode": "exact",
                "sizes": [4, 5, 6],
                "inner": {"label": "deep", "weight": 0.25, "deeper": {"x": 1}},
            },
            "limit": 3,
            "flag": False,
        }
    )
    assert form.field("config.inner.label").input.value == "deep"
    assert form.field("config.inner.weight").input.value == 0.25
    assert len(form.field("config.sizes").rows) == 3
    assert json.loads(form.json_text.value)["limit"] == 3
    value = form.value
    assert value["config"]["inner"] == {"label": "deep", "weight": 0.25, "deeper": {"x": 1}}
    assert value["config"]["mode"] == "exact"
    assert value["limit"] == 3 and value["flag"] is False
    with pytest.raises(FormError, match="nope: unknown argument"):
        form.set_value({"nope": 1})
    with pytest.raises(FormError, match=r"config\.sizes\[1\]: expected an integer"):
        form.set_value({"config": {"name": "n", "inner": {"label": "l"}, "sizes": [1, "two"]}})


def test_optional_object_untouched_is_omitted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "page": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"size": {"type": "integer"}, "token": {"type": "string"}},
                        "required": ["size", "token"],
                    },
                    {"type": "null"},
                ],
                "default": None,
            },
            "textual": {"type": "string", "maxLength": 1000, "format": "markdown"},
            "opaque": {"type": "object"},
        },
        "required": ["opaque"],
    }
    form = SchemaForm(schema)
    assert isinstance(form.field("textual").input, widgets.Textarea)
    assert form.field("textual").input.placeholder == "markdown"
    with pytest.raises(FormError, match="opaque: required"):
        _ = form.value
    form.field("opaque").input.value = '{"a": [1, 2]}'
    assert form.value == {"opaque": {"a": [1, 2]}}
    form.field("page.size").input.value = 20
    assert form.value["page"] == {"size": 20, "token": ""}


def test_no_arguments_and_max_depth() -> None:
    empty = SchemaForm({"type": "object", "properties": {}})
    assert empty.value == {} and empty.fields == {}
    shallow = SchemaForm(SCHEMA, max_depth=1)
    assert isinstance(shallow.field("config"), ObjectField)
    assert isinstance(shallow.field("config.inner"), JsonField)
    flat = SchemaForm(SCHEMA, max_depth=0)
    assert isinstance(flat.field("config"), JsonField)
    flat.field("config").input.value = '{"name": "x", "inner": {"label": "y"}}'
    assert flat.value["config"] == {"name": "x", "inner": {"label": "y"}}
