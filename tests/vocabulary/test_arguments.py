"""A call's arguments as JSON values: numpy and pandas values converted, values with no JSON form
and text that cannot be encoded refused with the argument's path, plain values not copied."""

from __future__ import annotations

import collections
import datetime
import enum
import math
import pathlib
import subprocess
import sys
import uuid
from typing import Any

import numpy as np
import pandas as pd
import pytest

from workbench_magic.vocabulary.arguments import (
    call_arguments,
    given_arguments,
    has_null,
    leave_out_nulls,
    refuse_missing,
    row_arguments,
)
from workbench_magic.vocabulary.errors import ArgumentError, UsageError
from workbench_magic.vocabulary.identifiers import ToolIdentifier
from workbench_magic.vocabulary.listings import ToolInfo

TOOL = ToolIdentifier(toolbox="t", server="s", name="echo")
PREFIX = "Invalid arguments for tool 'echo' in server 's' (toolbox 't'): "


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


def refused(arguments: Any) -> str:
    with pytest.raises(ArgumentError) as info:
        call_arguments(arguments, TOOL)
    text = str(info.value)
    assert text.startswith(PREFIX), text
    assert info.value.__context__ is None and info.value.__cause__ is None
    text.encode("utf-8")  # it prints
    return text.removeprefix(PREFIX)


def test_numpy_and_pandas_values_become_plain_json_values() -> None:
    sent = call_arguments(
        {
            "i": np.int64(2),
            "f": np.float64(1.5),
            "f32": np.float32(0.5),
            "yes": np.bool_(True),
            "s": np.str_("x"),
            "when": pd.Timestamp("2024-05-01T12:00:00"),
            "moment": np.datetime64("2024-05-01T12:00:00.000000000"),
            "days": np.array(["2024-01-01", "NaT"], dtype="datetime64[D]"),
            "zero_d": np.array(7),
            "matrix": np.array([[1, 2], [3, 4]]),
            "series": pd.Series([1.5, 2.5]),
            "frame": pd.DataFrame({"a": [1, 2]}),
            "nested": {"ok": np.bool_(False), "pair": (np.int32(1), "a"), "na": pd.NA, "nat": pd.NaT},
        },
        TOOL,
    )
    assert sent == {
        "i": 2,
        "f": 1.5,
        "f32": 0.5,
        "yes": True,
        "s": "x",
        "when": "2024-05-01T12:00:00",
        "moment": "2024-05-01T12:00:00.000000000",
        "days": ["2024-01-01", None],
        "zero_d": 7,
        "matrix": [[1, 2], [3, 4]],
        "series": [1.5, 2.5],
        "frame": [{"a": 1}, {"a": 2}],
        "nested": {"ok": False, "pair": [1, "a"], "na": None, "nat": None},
    }
    assert [type(sent[k]) for k in ("i", "f", "f32", "yes", "s", "zero_d")] == [int, float, float, bool, str, int]
    assert type(sent["nested"]["ok"]) is bool and type(sent["nested"]["pair"][0]) is int


def test_python_values_with_a_json_form() -> None:
    sent = call_arguments(
        collections.OrderedDict(
            day=datetime.date(2024, 5, 1),
            at=datetime.datetime(2024, 5, 1, 12, 30),
            time=datetime.time(8, 15),
            color=Color.RED,
            level=Level.HIGH,
            pair=(1, 2),
            view=collections.UserDict({"k": "v"}),
            big=10**30,
            text="naïve ✓",
            folder=pathlib.PurePosixPath("/data/in"),
            id=uuid.UUID(int=1),
        ),
        TOOL,
    )
    assert sent == {
        "day": "2024-05-01",
        "at": "2024-05-01T12:30:00",
        "time": "08:15:00",
        "color": "red",
        "level": 3,
        "pair": [1, 2],
        "view": {"k": "v"},
        "big": 10**30,
        "text": "naïve ✓",
        "folder": "/data/in",
        "id": "00000000-0000-0000-0000-000000000001",
    }
    assert type(sent) is dict and type(sent["color"]) is str and type(sent["level"]) is int


def test_plain_values_are_not_copied_but_the_top_mapping_is() -> None:
    rows = [{"a": 1, "b": "x", "c": None, "d": True, "e": 2.5}, [1, 2, "é"]]
    options = {"deep": {"deeper": ["ü", 1.0]}}
    arguments = {"rows": rows, "options": options, "n": 3}
    sent = call_arguments(arguments, TOOL)
    assert sent == arguments and sent is not arguments
    assert sent["rows"] is rows and sent["options"] is options
    assert call_arguments(None, TOOL) == {}
    # where one value changes, only the containers on its way are new
    rows_with_numpy: list[dict[str, Any]] = [{"a": 1}, {"a": np.int64(2)}]
    sent = call_arguments({"rows": rows_with_numpy, "options": options}, TOOL)
    assert sent == {"rows": [{"a": 1}, {"a": 2}], "options": options}
    assert sent["rows"] is not rows_with_numpy and sent["rows"][0] is rows_with_numpy[0]
    assert sent["options"] is options
    assert type(rows_with_numpy[1]["a"]) is np.int64  # the caller's values are left alone


@pytest.mark.parametrize(
    ("arguments", "detail"),
    [
        ({"x": object()}, "argument 'x': a value of type 'object' has no JSON form"),
        ({"tags": {"a"}}, "argument 'tags': a value of type 'set' has no JSON form"),
        ({"tags": frozenset()}, "argument 'tags': a value of type 'frozenset' has no JSON form"),
        ({"data": b"abc"}, "argument 'data': a value of type 'bytes' has no JSON form"),
        ({"wait": datetime.timedelta(seconds=1)}, "argument 'wait': a value of type 'timedelta' has no JSON form"),
        ({"wait": np.timedelta64(1, "s")}, "argument 'wait': a value of type 'timedelta64' has no JSON form"),
        ({"options": {1: "one"}}, "argument 'options': key 1 is not a string"),
        ({1: "one"}, "key 1 is not a string"),
        ({"a": [float("nan")]}, "argument 'a[0]': NaN has no JSON form"),
        ({"a": {"b": np.float64("nan")}}, "argument 'a.b': NaN has no JSON form"),
        ({"a": float("inf")}, "argument 'a': infinity has no JSON form"),
        ({"a": np.float32("-inf")}, "argument 'a': -infinity has no JSON form"),
        ({"rows": [{}, {}, {"x": {1, 2}}]}, "argument 'rows[2].x': a value of type 'set' has no JSON form"),
        ({"grid": [[0.5, float("nan")]]}, "argument 'grid[0][1]': NaN has no JSON form"),
        ({"values": pd.Series([1.0, np.nan])}, "argument 'values[1]': NaN has no JSON form"),
        ({"values": np.array([1.0, np.inf])}, "argument 'values[1]': infinity has no JSON form"),
        ({"pair": (1, object())}, "argument 'pair[1]': a value of type 'object' has no JSON form"),
    ],
)
def test_a_value_with_no_json_form_names_the_argument(arguments: dict[Any, Any], detail: str) -> None:
    assert refused(arguments) == detail


def test_text_that_cannot_be_encoded_names_the_argument() -> None:
    surrogate = "bad \udcff.txt"  # what os.listdir gives for a file name that is not UTF-8
    assert refused({"path": surrogate}) == (
        "argument 'path': the text cannot be encoded as UTF-8 (a lone surrogate '\\udcff' at index 4)"
    )
    assert refused({"paths": ["ok", "é", surrogate]}) == (
        "argument 'paths[2]': the text cannot be encoded as UTF-8 (a lone surrogate '\\udcff' at index 4)"
    )
    assert refused({"\ud800x": 1}) == (
        "argument '\\ud800x': the name cannot be encoded as UTF-8 (a lone surrogate '\\ud800' at index 0)"
    )
    assert refused({"env": {"NAME\udc80": "v"}}) == (
        "argument 'env.NAME\\udc80': the name cannot be encoded as UTF-8 (a lone surrogate '\\udc80' at index 4)"
    )
    assert refused({"text": np.str_("x\ud800")}).startswith("argument 'text': the text cannot be encoded")
    assert call_arguments({"text": "naïve ✓ 😀"}, TOOL) == {"text": "naïve ✓ 😀"}


def test_arguments_that_are_not_a_mapping_are_a_usage_error() -> None:
    cases = [
        ('{"text": "x"}', "not a str (parse JSON text with json.loads first)"),
        ([("text", "x")], "not a list"),
        (3, "not an int"),
    ]
    for arguments, end in cases:
        with pytest.raises(UsageError) as info:
            call_arguments(arguments, TOOL)
        assert str(info.value) == f"Tool arguments must be a mapping of argument names to values, {end}"


def test_arguments_that_contain_themselves() -> None:
    arguments: dict[str, Any] = {"a": 1}
    arguments["self"] = arguments
    assert refused(arguments) == "the arguments are nested too deeply (or contain themselves)"


def test_a_long_detail_is_cut() -> None:
    detail = refused({"k" * 400: object()})
    assert len(detail) == 300 and detail.endswith("...")


def test_map_rows_are_lenient() -> None:
    unknown = object()
    row = row_arguments(
        {"missing": float("nan"), "tags": {"a"}, 1: "one", "o": unknown, "s": "x\ud800", "i": np.int8(1)}
    )
    assert math.isnan(row.pop("missing"))  # for its call to leave out, or refuse
    assert row == {"tags": ["a"], "1": "one", "o": unknown, "s": "x\ud800", "i": 1}
    # what stays is refused by the row's call
    assert refused(row).startswith("argument 'o': a value of type 'object'")


def test_a_missing_value_leaves_its_argument_out() -> None:
    """NaN, NA and NaT as an argument's own value (a DataFrame's empty cell) are left out, and named
    with the word for each; None is a value (JSON null); deeper in a value NaN has no JSON form."""
    sent, missing = given_arguments(
        {
            "n": 1,
            "nan": float("nan"),
            "np_nan": np.float32("nan"),
            "na": pd.NA,
            "nat": pd.NaT,
            "never": np.datetime64("NaT"),
            "idle": np.timedelta64("NaT"),
            "none": None,
            "zero": np.float64(0.0),
        },
        TOOL,
    )
    assert sent == {"n": 1, "none": None, "zero": 0.0}
    assert missing == {"nan": "NaN", "np_nan": "NaN", "na": "NA", "nat": "NaT", "never": "NaT", "idle": "NaT"}
    assert call_arguments({"a": float("nan"), "b": 2}, TOOL) == {"b": 2}
    assert given_arguments({"a": 1, "b": "x"}, TOOL) == ({"a": 1, "b": "x"}, {})


def test_a_required_argument_whose_value_is_missing_is_refused() -> None:
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "required": ["a", "b"]}
    tool = ToolInfo("t", "s", "echo", input_schema=schema)
    refuse_missing(tool, {"c": "NaN"})  # optional: left out, nothing to say
    with pytest.raises(ArgumentError) as one:
        refuse_missing(tool, {"a": "NA", "c": "NaN"})
    assert str(one.value) == PREFIX + "argument 'a' is required, and its value is missing (NA)"
    assert one.value.__context__ is None
    with pytest.raises(ArgumentError) as both:
        refuse_missing(tool, {"b": "NaN", "a": "NaN"})
    assert str(both.value) == PREFIX + "arguments 'b', 'a' are required, and their values are missing (NaN)"


def test_a_null_means_absent_only_for_an_optional_argument_whose_schema_does_not_allow_it(caplog) -> None:
    """Issue 54: the optional `verbose` (a boolean) is left out, and the workbench's logger says so;
    the required `region`, the nullable `note` and the undeclared `extra` keep their null."""
    schema = {
        "type": "object",
        "properties": {"region": {}, "verbose": {}, "note": {}, "n": {}},
        "required": ["region"],
    }
    tool = ToolInfo("t", "s", "echo", input_schema=schema)
    asked: list[str] = []

    def allows_null(name: str) -> bool:
        asked.append(name)
        return name == "note"

    given = {"region": None, "verbose": None, "note": None, "extra": None, "n": 1}
    with caplog.at_level("INFO", logger="workbench_magic"):
        sent = leave_out_nulls(tool, given, allows_null)
    assert sent == {"region": None, "note": None, "extra": None, "n": 1}
    assert asked == ["verbose", "note"]  # a required or undeclared argument is not even asked about
    assert [r.getMessage() for r in caplog.records] == [
        "t/s/echo: argument 'verbose' is null, which its schema does not allow, and optional: "
        "left out (its default applies)"
    ]
    plain = {"n": 1, "note": None}
    assert leave_out_nulls(tool, plain, allows_null) is plain  # nothing left out: not copied
    assert has_null(given) and not has_null({"n": 1, "tags": [None]})  # a null inside a value is a value


def test_a_dataframe_row_keeps_its_empty_cells_as_nan() -> None:
    row = row_arguments({"a": None, "b": pd.NA, "c": pd.NaT, "d": 1, "e": [None]}, frame=True)
    assert [name for name, value in row.items() if isinstance(value, float) and math.isnan(value)] == ["a", "b", "c"]
    assert row["d"] == 1 and row["e"] == [None]
    assert row_arguments({"a": None}) == {"a": None}  # a mapping's None is a value


def test_plain_arguments_import_neither_numpy_nor_pandas() -> None:
    code = (
        "import sys\n"
        "from workbench_magic.vocabulary.arguments import call_arguments\n"
        "from workbench_magic.vocabulary.identifiers import ToolIdentifier\n"
        "ident = ToolIdentifier(toolbox='t', server='s', name='n')\n"
        "plain = {'a': [1, 2.5, 'x', None, {'b': True}], 'when': __import__('datetime').date(2024, 1, 1)}\n"
        "call_arguments(plain, ident)\n"
        "try:\n"
        "    call_arguments({'o': object()}, ident)\n"
        "except ValueError:\n"
        "    pass\n"
        "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr
