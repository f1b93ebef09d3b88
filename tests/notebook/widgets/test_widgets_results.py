"""The result pane's pieces (widgets/results.py): JSON trees count their keys and items in words."""

from __future__ import annotations

import pytest

from workbench_magic.notebook.widgets.results import json_tree_html


@pytest.mark.parametrize(
    ("value", "summary"),
    [
        ({"a": 1}, "{…} 1 key"),
        ({"a": 1, "b": 2}, "{…} 2 keys"),
        ([1], "[…] 1 item"),
        ([1, 2, 3], "[…] 3 items"),
        ({"rows": [{"x": 1}]}, "[…] 1 item"),
    ],
)
def test_a_tree_says_one_key_and_one_item(value: object, summary: str) -> None:
    shown = json_tree_html(value)
    assert f"<summary>{summary}</summary>" in shown
    assert "1 keys" not in shown and "1 items" not in shown
