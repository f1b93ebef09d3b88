"""Tool identifiers: every accepted spelling, every error text."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from workbench_magic.vocabulary.errors import InvalidIdentifierError, WorkbenchError
from workbench_magic.vocabulary.identifiers import ToolIdentifier, parse_identifier, parse_target, tool_key

EXPECTED = "(expected 'toolbox/server/tool' or 'toolbox__server__tool')"


def ident(toolbox: str, server: str, name: str) -> ToolIdentifier:
    return ToolIdentifier(toolbox=toolbox, server=server, name=name)


def fails(value: Any) -> str:
    with pytest.raises(InvalidIdentifierError) as info:
        parse_identifier(value)
    return str(info.value)


# ------------------------------------------------------------------ the model


def test_fields_str_and_key() -> None:
    t = ident("dev", "filesystem", "read_file")
    assert (t.toolbox, t.server, t.name) == ("dev", "filesystem", "read_file")
    assert str(t) == "dev/filesystem/read_file"
    assert t.key == "dev__filesystem__read_file"
    assert repr(t) == "ToolIdentifier(toolbox='dev', server='filesystem', name='read_file')"


def test_positional_construction() -> None:
    assert ToolIdentifier("dev", "fs", "read") == ident("dev", "fs", "read")


def test_frozen_hashable_equal_by_value() -> None:
    a = ident("dev", "fs", "read")
    b = parse_identifier("dev/fs/read")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, parse_identifier("dev__fs__read")}) == 1
    assert a != ident("dev", "fs", "write")
    with pytest.raises(pydantic.ValidationError):
        a.name = "other"  # type: ignore[misc]


def test_error_is_workbench_and_value_error() -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        ident("", "fs", "read")
    assert isinstance(info.value, WorkbenchError)
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, pydantic.ValidationError)


@pytest.mark.parametrize("field", ["toolbox", "server", "name"])
def test_constructor_empty_field(field: str) -> None:
    data = {"toolbox": "dev", "server": "fs", "name": "read", field: ""}
    with pytest.raises(InvalidIdentifierError, match=f"^Invalid tool identifier: {field} cannot be empty$"):
        ToolIdentifier(**data)


def test_constructor_empty_toolbox_reported_before_missing_fields() -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        ToolIdentifier(toolbox="")
    assert str(info.value) == "Invalid tool identifier: toolbox cannot be empty"


def test_constructor_errors() -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        ToolIdentifier(toolbox="dev", server="fs")
    assert str(info.value) == "Invalid tool identifier: missing field 'name'"
    with pytest.raises(InvalidIdentifierError) as info:
        ToolIdentifier(toolbox="dev", server="fs", tool="read")
    assert str(info.value) == "Invalid tool identifier: use 'name' instead of 'tool' for the tool's name"
    with pytest.raises(InvalidIdentifierError) as info:
        ToolIdentifier(toolbox="dev", server="fs", name="read", x=1)
    assert str(info.value) == "Invalid tool identifier: unknown field 'x'"
    with pytest.raises(InvalidIdentifierError) as info:
        ToolIdentifier(toolbox="dev", server=3, name="read")  # type: ignore[arg-type]
    assert str(info.value) == "Invalid tool identifier: server must be a string"


def test_parse_classmethod() -> None:
    assert ToolIdentifier.parse("a/b/c") == ident("a", "b", "c")


def test_nested_in_model_accepts_every_spelling() -> None:
    class Call(pydantic.BaseModel):
        tool: ToolIdentifier

    expected = ident("dev", "fs", "read")
    assert Call(tool="dev/fs/read").tool == expected  # type: ignore[arg-type]
    assert Call(tool="dev__fs__read").tool == expected  # type: ignore[arg-type]
    assert Call.model_validate({"tool": {"toolbox": "dev", "server": "fs", "name": "read"}}).tool == expected
    assert Call(tool=expected).tool is expected
    with pytest.raises(pydantic.ValidationError, match="use 'name' instead of 'tool'"):
        Call.model_validate({"tool": {"toolbox": "dev", "server": "fs", "tool": "read"}})
    schema = Call.model_json_schema()["$defs"]["ToolIdentifier"]
    assert schema["required"] == ["toolbox", "server", "name"]


# ------------------------------------------------------------------ spellings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dev/filesystem/read_file", ("dev", "filesystem", "read_file")),
        ("  dev/filesystem/read_file \n", ("dev", "filesystem", "read_file")),
        ("dev/filesystem/dir/read.file", ("dev", "filesystem", "dir/read.file")),
        ("dev/filesystem/a__b", ("dev", "filesystem", "a__b")),
        ("dev/my_server/v1.read", ("dev", "my_server", "v1.read")),
        ("dev__filesystem__read_file", ("dev", "filesystem", "read_file")),
        ("dev__filesystem__read__file", ("dev", "filesystem", "read__file")),
        ("dev__filesystem__read.file", ("dev", "filesystem", "read.file")),
        ("my-box__my_server__tool", ("my-box", "my_server", "tool")),
    ],
)
def test_string_spellings(text: str, expected: tuple[str, str, str]) -> None:
    t = parse_identifier(text)
    assert (t.toolbox, t.server, t.name) == expected


def test_slash_wins_over_double_underscore() -> None:
    t = parse_identifier("a__b/c__d/e__f")
    assert (t.toolbox, t.server, t.name) == ("a__b", "c__d", "e__f")


def test_mapping_and_instance_and_duck_typed() -> None:
    t = ident("dev", "fs", "read")
    assert parse_identifier({"toolbox": "dev", "server": "fs", "name": "read"}) == t
    assert parse_identifier(t) is t

    class Info:
        identifier = t

    assert parse_identifier(Info()) is t  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "t",
    [
        ToolIdentifier(toolbox="dev", server="fs", name="read_file"),
        ToolIdentifier(toolbox="dev", server="fs", name="dir/read.file"),
        ToolIdentifier(toolbox="a-b", server="c_d", name="x__y"),
    ],
)
def test_round_trips(t: ToolIdentifier) -> None:
    assert parse_identifier(str(t)) == t
    assert parse_identifier(t.model_dump()) == t
    assert ToolIdentifier.model_validate_json(t.model_dump_json()) == t
    if "/" not in t.name:
        assert parse_identifier(t.key) == t


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("/fs/read", "toolbox"),
        ("dev//read", "server"),
        ("dev/fs/", "name"),
        ("dev/ /read", "server"),
        ("//", "toolbox"),
        ("__fs__read", "toolbox"),
        ("dev____read", "server"),
        ("dev__fs__", "name"),
        ({"toolbox": "", "server": "fs", "name": "read"}, "toolbox"),
        ({"toolbox": "dev", "server": "", "name": "read"}, "server"),
        ({"toolbox": "dev", "server": "fs", "name": ""}, "name"),
        ({"toolbox": "dev", "server": "fs", "name": "  "}, "name"),
    ],
)
def test_empty_parts(value: Any, field: str) -> None:
    assert fails(value) == f"Invalid tool identifier: {field} cannot be empty"


@pytest.mark.parametrize("text", ["abc", "dev/fs", "dev__fs", "", "   "])
def test_too_few_parts(text: str) -> None:
    assert fails(text) == f"Invalid tool identifier: {text.strip()!r} {EXPECTED}"


def test_abc_exact() -> None:
    assert fails("abc") == f"Invalid tool identifier: 'abc' {EXPECTED}"


def test_mapping_errors() -> None:
    assert (
        fails({"toolbox": "dev", "server": "fs", "tool": "read"})
        == "Invalid tool identifier: use 'name' instead of 'tool' for the tool's name"
    )
    assert fails({"toolbox": "dev", "name": "read"}) == "Invalid tool identifier: missing field 'server'"
    assert (
        fails({"toolbox": "dev", "server": "fs", "name": "read", "x": 1})
        == "Invalid tool identifier: unknown field 'x'"
    )
    assert (
        fails({"toolbox": "dev", "server": None, "name": "read"}) == "Invalid tool identifier: server must be a string"
    )
    assert fails({"toolbox": "dev", "server": "fs", "name": 3}) == "Invalid tool identifier: name must be a string"


@pytest.mark.parametrize("value", [42, None, ["dev", "fs", "read"], b"dev/fs/read"])
def test_wrong_type(value: Any) -> None:
    message = fails(value)
    assert message.startswith("Invalid tool identifier: expected a string like 'toolbox/server/tool'")
    assert type(value).__name__ in message


# ------------------------------------------------------------------ targets and keys


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, (None, None)),
        ("", (None, None)),
        ("  ", (None, None)),
        ("dev", ("dev", None)),
        (" dev ", ("dev", None)),
        ("dev/server", ("dev", "server")),
        ("dev__server", ("dev", "server")),
        ("dev/server/tool", ("dev", "server")),
        ("dev/server/a/b", ("dev", "server")),
        ("dev__server__tool", ("dev", "server")),
        ("my_box", ("my_box", None)),
    ],
)
def test_parse_target(value: str | None, expected: tuple[str | None, str | None]) -> None:
    assert parse_target(value) == expected


@pytest.mark.parametrize(
    ("value", "field"), [("/server", "toolbox"), ("dev/", "server"), ("dev__", "server"), ("__x", "toolbox")]
)
def test_parse_target_empty_parts(value: str, field: str) -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        parse_target(value)
    assert str(info.value) == f"Invalid tool identifier: {field} cannot be empty"


def test_parse_target_wrong_type() -> None:
    with pytest.raises(InvalidIdentifierError):
        parse_target(3)  # type: ignore[arg-type]


def test_tool_key() -> None:
    assert tool_key("dev", "fs", "read") == "dev__fs__read"
    assert tool_key("dev", "fs", "a.b") == ident("dev", "fs", "a.b").key
    with pytest.raises(InvalidIdentifierError, match="server cannot be empty"):
        tool_key("dev", "", "read")
