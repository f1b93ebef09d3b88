"""ToolResult and friends: data extraction, tables, errors and reprs (on SDK result objects)."""

from __future__ import annotations

import base64
import sys

import pytest
from mcp_types import CallToolResult, ImageContent, TextContent

from workbench_magic import ToolError, ToolIdentifier, WorkbenchError
from workbench_magic.vocabulary.results import ToolResult

IDENT = ToolIdentifier(toolbox="t", server="s", name="n")
PNG = b"\x89PNG\r\n\x1a\nfake"


def result(*blocks: object, structured: object = None, is_error: bool = False) -> ToolResult:
    raw = CallToolResult(content=list(blocks), structured_content=structured, is_error=is_error)  # type: ignore[arg-type]
    return ToolResult(identifier=IDENT, raw=raw, elapsed=0.012)


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


def test_data_prefers_structured_then_json_text_then_none() -> None:
    assert result(text("ignored"), structured={"a": 1}).data == {"a": 1}
    assert result(text('{"b": [1, 2]}')).data == {"b": [1, 2]}
    assert result(text("42")).data == 42
    assert result(text("plain words")).data is None
    assert result(text("[1]"), text("[2]")).data == [[1], [2]]
    assert result().data is None


def test_text_joins_text_blocks_and_images_decode() -> None:
    img = ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")
    r = result(text("a"), img, text("b"))
    assert r.text == "a\nb"
    assert r.images[0].data == PNG and r.images[0].mime_type == "image/png"
    bundle = r._repr_mimebundle_()
    assert base64.b64decode(bundle["image/png"]) == PNG
    assert "data:image/png;base64," in bundle["text/html"]


@pytest.mark.parametrize(
    "data",
    [
        [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}],
        {"result": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}]},
        {"rows": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}], "total": 2},
        {"x": [1, 2], "y": ["a", "b"]},
    ],
)
def test_to_pandas_finds_the_table(data: object) -> None:
    frame = result(structured=data).to_pandas()
    assert list(frame["x"]) == [1, 2]
    assert list(frame["y"]) == ["a", "b"]


def test_to_pandas_without_a_table_is_a_short_error() -> None:
    with pytest.raises(ToolError, match="no tabular data"):
        result(text("hello")).to_pandas()


def test_to_pandas_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` fails, as on a plain install
    with pytest.raises(WorkbenchError) as caught:
        result(structured={"rows": [{"x": 1}]}).to_pandas()
    assert str(caught.value) == "to_pandas() needs pandas: pip install 'workbench-magic[pandas]'"
    assert isinstance(caught.value, ImportError)  # what code written for a missing pandas catches
    assert caught.value.__context__ is None and caught.value.__cause__ is None


def test_raise_for_error_has_the_design_text() -> None:
    failing = result(text("disk on fire"), is_error=True)
    with pytest.raises(ToolError) as info:
        failing.raise_for_error()
    assert str(info.value) == "Error executing tool 'n' in server 's' (toolbox 't'): disk on fire"
    assert info.value.result is failing
    assert result(text("fine")).raise_for_error().text == "fine"


def test_reprs_are_readable_everywhere() -> None:
    r = result(text("ignored"), structured=[{"k": "<b>"}])
    plain = repr(r)
    assert plain.startswith("ToolResult t/s/n [ok, 12 ms]")
    assert '"k": "<b>"' in plain
    html = r._repr_html_()
    assert "<table>" in html and "&lt;b&gt;" in html and "<b>" not in html.replace("<b>ToolResult", "")
    bundle = r._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}  # no JSON viewer to outrank the table
    err = result(text("bad"), is_error=True)
    assert "[error," in repr(err) and "#b00020" in err._repr_html_()
