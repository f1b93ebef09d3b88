"""What every result kind gives a notebook to show: its HTML view, never `application/json` beside it.

JupyterLab, Notebook 7 and VS Code rank a JSON viewer above HTML: a bundle with both showed a
collapsed JSON tree (`▼ root ▶ rows [] 5 items`) in place of the result's table. Each kind is made the
user's way (the demo toolbox in-process, a scripted model) and formatted as IPython formats a cell's
value; the browser test (tests/notebook/test_browser.py) checks the table on screen.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import toolbox
from IPython.core.formatters import DisplayFormatter
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from workbench_magic import Workbench

DEMO = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}
QUERY = {"dataset": "penguins", "limit": 5}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One object of each result kind, made once for the module (the demo toolbox, in-process)."""
    wb = Workbench(config={"toolboxes": {"demo": toolbox(DEMO)}}, connect_timeout=90.0)
    try:
        yield make_each(wb, tmp_path_factory.mktemp("kinds"))
    finally:
        wb.close_all()


def answer_with_a_query(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted model: query once, then say what it found."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(p.part_kind == "tool-return" for p in last.parts):
        return ModelResponse(parts=[TextPart("five penguins")])
    return ModelResponse(parts=[ToolCallPart("demo__datasets__query", json.dumps(QUERY), tool_call_id="q1")])


def make_each(wb: Workbench, folder: Path) -> dict[str, Any]:
    opened = wb.open("demo")
    model = FunctionModel(answer_with_a_query, model_name="scripted")
    kinds: dict[str, Any] = {"opened toolbox": opened}
    with wb.trace("demo/datasets") as trace:
        kinds["structured result"] = wb.call("demo/datasets/query", QUERY)
    kinds["trace"] = trace
    kinds["structured result, not a table"] = wb.call("demo/datasets/describe_dataset", {"name": "penguins"})
    kinds["image result"] = wb.call(
        "demo/datasets/plot", {"dataset": "penguins", "x": "bill_length_mm", "y": "body_mass_g"}
    )
    kinds["app result"] = wb.call("demo/datasets/chart", {"dataset": "penguins"})
    kinds["error result"] = wb.call("demo/datasets/query", {"dataset": "no-such-dataset"})
    kinds["batch"] = wb.map("demo/datasets/query", [QUERY, {**QUERY, "limit": 2}], progress=False)
    kinds["resource"] = wb.read_resource("demo/datasets", "dataset://index")
    kinds["prompt"] = wb.get_prompt("demo/datasets/analyze_dataset", {"name": "penguins"})
    kinds["tool list"] = wb.tools("demo")
    kinds["toolbox list"] = wb.toolboxes()
    kinds["history"] = wb.history
    kinds["schema report"] = wb.check_schemas("demo/datasets")
    kinds["context cost"] = wb.context_cost("demo")
    kinds["skill list"] = wb.skills("demo")
    snapshot = wb.snapshot("demo")
    kinds["snapshot"] = snapshot
    kinds["diff"] = wb.diff(snapshot, snapshot)
    kinds["chat turn"] = wb.chat("how heavy are penguins?", toolbox="demo", model=model)
    kinds["evaluation"] = wb.evaluate([{"prompt": "penguins?", "expect_tools": ["demo/datasets/query"]}], model=model)
    task = wb.start("demo/datasets/query", QUERY)
    task.result(60)
    kinds["task"] = task
    kinds["task list"] = wb.tasks()
    return kinds


KINDS = [
    "opened toolbox",
    "structured result",
    "trace",
    "structured result, not a table",
    "image result",
    "app result",
    "error result",
    "batch",
    "resource",
    "prompt",
    "tool list",
    "toolbox list",
    "history",
    "schema report",
    "context cost",
    "skill list",
    "snapshot",
    "diff",
    "chat turn",
    "evaluation",
    "task",
    "task list",
]


def shown(obj: Any) -> dict[str, Any]:
    """The MIME bundle IPython makes of `obj` (a task handle's own display sends the same)."""
    formatter = DisplayFormatter()
    formatter.ipython_display_formatter.enabled = False
    data, _ = formatter.format(obj)
    return data


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_shows_its_html_and_no_json_beside_it(made: dict[str, Any], kind: str) -> None:
    data = shown(made[kind])
    assert "text/html" in data and data["text/html"].strip(), sorted(data)
    assert "application/json" not in data, sorted(data)
    assert data["text/plain"], sorted(data)


def test_the_structured_result_shows_its_header_and_rows(made: dict[str, Any]) -> None:
    result = made["structured result"]
    data = shown(result)
    html = data["text/html"]
    head = html.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert all(f"<th>{column}</th>" in head for column in result.data["rows"][0])
    assert html.split("<tbody>", 1)[1].count("<tr>") == 5 and "Adelie" in html


def test_the_image_result_keeps_its_png_for_front_ends_without_html(made: dict[str, Any]) -> None:
    data = shown(made["image result"])
    assert data["image/png"] and "data:image/png;base64," in data["text/html"]
