"""JSON paths that leave values out of a comparison (vocabulary/jsonpath.py)."""

from __future__ import annotations

import pytest

from workbench_magic import UsageError
from workbench_magic.vocabulary.jsonpath import parse, without

VALUE = {"id": 7, "created": "today", "rows": [{"id": 1, "x": "a"}, {"id": 2, "x": "b"}], "odd key": [1, 2, 3]}


def test_paths_name_keys_items_and_every_one() -> None:
    assert parse("$.created") == ("created",) and parse("created") == ("created",)
    assert parse("$.rows[*].id") == ("rows", None, "id") and parse("rows.*") == ("rows", None)
    assert parse("$['odd key'][-1]") == ("odd key", -1) and parse('$["a\\"b"]') == ('a"b',)
    assert without(VALUE, ["$.created", "rows[*].id", "$['odd key'][0]"]) == {
        "id": 7,
        "rows": [{"x": "a"}, {"x": "b"}],
        "odd key": [2, 3],
    }
    assert without(VALUE, ["$.missing.deeper", "rows[5]", "id[0]"]) == VALUE  # naming nothing changes nothing
    assert VALUE["created"] == "today" and VALUE["rows"][0] == {"id": 1, "x": "a"}  # a copy was changed


@pytest.mark.parametrize("path", ["$", "", "$..x", "rows[", "$.a b", "[x]"])
def test_a_bad_path_is_one_line_naming_it(path: str) -> None:
    with pytest.raises(UsageError, match="Not a JSON path") as raised:
        parse(path)
    assert repr(path) in str(raised.value) and "\n" not in str(raised.value)
