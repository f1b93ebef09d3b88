"""The explorer's Models tab at the Python level: the chosen server's schema report, its toolbox's context
cost and the workbench's last evaluation, against the demo toolbox's real servers (in-process) and a
server that fails to start. The model of the evaluation is a pydantic-ai `FunctionModel`: no key, no network.

Outside a kernel the explorer's channel is a queue: what the pane's worker thread posts waits there until
this thread drains it (`Explorer.wait_until`), which is how the tests see that widgets change on this
thread only.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import toolbox, wait_until
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from workbench_magic import Workbench
from workbench_magic.engine.runtime import QueueChannel
from workbench_magic.notebook.widgets.explorer import TABS, TICKING, Explorer
from workbench_magic.notebook.widgets.models_pane import ModelsPane
from workbench_magic.vocabulary.errors import WorkbenchError

DEMO = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}
BROKEN = {"ok": DEMO["notes"], "bad": {"command": "sh", "args": ["-c", "echo cannot-start >&2; exit 2"]}}


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    workbench = make_workbench({"toolboxes": {"demo": toolbox(DEMO), "broken": toolbox(BROKEN)}})
    workbench.open("demo")
    return workbench


@contextmanager
def explorer_of(wb: Workbench, name: str = "demo") -> Iterator[Explorer]:
    explorer = Explorer(wb, name)
    try:
        yield explorer
    finally:
        explorer.close()


def show_models(explorer: Explorer) -> ModelsPane:
    explorer.tabs.selected_index = TABS.index("Models")
    pane = explorer.models
    assert isinstance(pane, ModelsPane)
    return pane


def loaded(explorer: Explorer, pane: ModelsPane) -> None:
    """Run what the pane's worker posted until the load shows."""
    assert explorer.wait_until(lambda: not pane.loading, 60)


def answers(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted model: lists the datasets, then names them."""
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("demo__datasets__list_datasets", "{}", tool_call_id="c1")])
    return ModelResponse(parts=[TextPart("penguins, sales and weather")])


def test_the_tab_comes_after_protocol_and_the_explorer_computes_nothing_until_it_shows(wb: Workbench) -> None:
    with explorer_of(wb) as explorer:
        assert explorer.tabs.titles == TABS and TABS[-2:] == ("Protocol", "Models") and "Models" in TICKING
        pane = explorer.models
        assert "wb-models" in pane.widget._dom_classes
        explorer.chooser.server_select.value = "notes"  # another server while the Tools tab shows
        assert not pane.loading and pane.target is None and pane.schemas is None and pane.cost is None
        assert pane.schemas_view.value == "" and pane.cost_view.value == ""
        assert "Select a server" in pane.hint.value
        assert "No evaluation in this workbench yet" in pane.evaluation_view.value
        with pytest.raises(WorkbenchError, match="Select a server first"):
            pane.copy_as_cell()


def test_showing_the_tab_checks_the_chosen_servers_schemas_and_measures_its_toolbox(wb: Workbench) -> None:
    with explorer_of(wb) as explorer:
        assert explorer.server_select.value == "datasets"
        pane = show_models(explorer)
        assert pane.target == "demo/datasets" and pane.loading
        assert "checking the schemas" in pane.status.value and "(loading)" in pane.schemas_view.value
        loaded(explorer, pane)
        assert pane.status.value == "" and pane.schemas_error is None and pane.cost_error is None
        assert pane.schemas is not None and pane.cost is not None
        # the server's tools only, one column per provider, the reasons of each rejection
        assert pane.schemas.providers == ("openai", "anthropic", "gemini")
        assert pane.schemas.tools == [str(t.identifier) for t in wb.tools("demo/datasets") if t.for_model]
        schemas = pane.schemas_view.value
        assert "Schema report of demo/datasets: " in schemas
        assert all(f"<th>{p}<br><small>" in schemas for p in ("openai", "anthropic", "gemini"))
        assert "demo/datasets/query" in schemas and "demo/notes/" not in schemas
        assert ("demo/datasets/query", "openai") in {(tool, p) for tool, p, _ in pane.schemas.rejected}
        assert "argument &#x27;limit&#x27;: is optional" in schemas
        # the toolbox's context cost, three ways: what wb.context_cost says
        cost = wb.context_cost("demo")
        assert [(r.mode, r.bytes) for r in pane.cost.rows] == [(r.mode, r.bytes) for r in cost.rows]
        shown = pane.cost_view.value
        assert "Context cost of toolbox &#x27;demo&#x27;" in shown
        assert all(f"<b>{mode}</b>" in shown for mode in ("flat", "proxy", "dynamic"))
        assert f"{cost['flat'].bytes:,}" in shown and "estimate: bytes / 4" in shown

        # another server while the tab shows: its report, the same toolbox's cost
        explorer.chooser.server_select.value = "notes"
        assert pane.target == "demo/notes" and pane.loading
        loaded(explorer, pane)
        assert pane.schemas is not None and pane.schemas.tools
        assert all(tool.startswith("demo/notes/") for tool in pane.schemas.tools)
        assert "Schema report of demo/notes: " in pane.schemas_view.value
        assert pane.copy_as_cell() == (
            "from workbench_magic import Workbench\n\nwb = Workbench.shared()\n"
            'display(wb.check_schemas("demo/notes"), wb.context_cost("demo"))'
        )
        assert pane.cell_text.value == pane.cell and pane.cell_text.layout.display is None


def test_the_outcome_is_set_on_the_kernel_thread_and_one_for_a_server_left_is_dropped(wb: Workbench) -> None:
    with explorer_of(wb) as explorer:
        assert isinstance(explorer._channel, QueueChannel)
        pane = explorer.models
        threads: set[int] = set()
        values: list[str] = []

        def seen(change: dict[str, Any]) -> None:
            threads.add(threading.get_ident())
            values.append(change["new"])

        for view in (pane.schemas_view, pane.cost_view, pane.status):
            view.observe(seen, names="value")
        pane = show_models(explorer)  # demo/datasets: its load starts on the worker
        # the worker's outcome waits in the channel: nothing shows until this thread runs it
        assert wait_until(lambda: not explorer._channel.queue.empty(), 60)
        assert pane.loading and pane.schemas is None and "(loading)" in pane.schemas_view.value
        explorer.chooser.server_select.value = "notes"  # before the outcome ran: it is for a server left
        loaded(explorer, pane)
        explorer._channel.drain()
        assert threads == {threading.get_ident()}
        assert pane.target == "demo/notes" and pane.schemas is not None
        assert all(tool.startswith("demo/notes/") for tool in pane.schemas.tools)
        left = values.index(next(v for v in values if "Schemas of demo/notes" in v))  # loading notes
        assert not any("demo/datasets/query" in v for v in values[left:])  # datasets' report never showed after


def test_the_tab_shows_the_last_evaluation_of_the_workbench(wb: Workbench) -> None:
    with explorer_of(wb) as explorer:
        pane = show_models(explorer)
        loaded(explorer, pane)
        assert pane.evaluation is None
        assert "wb.evaluate(cases, toolbox=&quot;demo&quot;)" in pane.evaluation_view.value
        report = wb.evaluate(
            [
                {
                    "name": "datasets",
                    "prompt": "What datasets are there?",
                    "expect_tools": ["demo/datasets/list_datasets"],
                }
            ],
            toolbox="demo",
            model=FunctionModel(answers, model_name="scripted"),
            runs=2,
        )
        pane.sync()  # what the explorer's tick does every second while the tab shows
        assert pane.evaluation is report
        shown = pane.evaluation_view.value
        assert "Last evaluation" in shown and "wb-eval-report" in shown
        assert "Evaluation of 1 case over demo with function:scripted, 2 runs each: 100% of the runs passed" in shown
        before = pane.evaluation_view.value
        pane.sync()  # the same report: nothing set
        assert pane.evaluation_view.value is before


def test_an_evaluation_over_another_toolbox_says_so(wb: Workbench) -> None:
    wb.open("broken")
    with explorer_of(wb, "broken") as explorer:
        wb.evaluate(
            [{"prompt": "What datasets are there?"}],
            toolbox="demo",
            model=FunctionModel(answers, model_name="s"),
            runs=1,
        )
        pane = show_models(explorer)
        assert "(over toolbox 'demo', not this one)" in pane.evaluation_view.value


def test_a_failed_server_is_one_red_line_and_its_toolbox_is_still_measured(wb: Workbench) -> None:
    wb.open("broken")
    with explorer_of(wb, "broken") as explorer:
        explorer.chooser.server_select.value = "bad"
        pane = show_models(explorer)
        assert pane.target == "broken/bad"
        loaded(explorer, pane)
        assert pane.schemas is None and pane.schemas_error is not None and "cannot-start" in pane.schemas_error
        assert "wb-error" in pane.schemas_view.value and "cannot-start" in pane.schemas_view.value
        assert "Schemas of broken/bad, per provider" in pane.schemas_view.value
        assert pane.cost is not None and pane.cost.toolbox == "broken"  # the server that connected
        assert pane.cost["flat"].parts[0].label == f"{len(wb.tools('broken/ok'))} tools"
        # measuring opens the toolbox, which tries the failed server again: its new status (an event,
        # a refresh of the pane) asks for no other load, the tools being the same
        explorer.wait_until(lambda: explorer._channel.queue.empty(), 10)
        explorer._channel.drain()
        assert not pane.loading
        explorer.chooser.update()  # what a StatusChanged of the toolbox does
        assert not pane.loading


def test_check_again_computes_anew_and_a_hidden_tab_computes_nothing(wb: Workbench) -> None:
    with explorer_of(wb) as explorer:
        pane = show_models(explorer)
        loaded(explorer, pane)
        first = pane.schemas
        pane.refresh()  # the tools are the same: nothing to compute
        assert not pane.loading and pane.schemas is first
        pane.check_button.click()
        assert pane.loading and "(loading)" in pane.schemas_view.value
        loaded(explorer, pane)
        assert first is not None and pane.schemas is not None and pane.schemas is not first
        assert pane.schemas.tools == first.tools
        # another tab: the pane shows nothing and computes nothing; shown again, it computes anew
        explorer.tabs.selected_index = 0
        assert pane.target is None and not pane.loading and pane.schemas is None
        explorer.chooser.server_select.value = "notes"
        assert pane.target is None and not pane.loading
        show_models(explorer)
        assert pane.target == "demo/notes" and pane.loading


def test_close_drops_a_load_under_way(wb: Workbench) -> None:
    with explorer_of(wb) as explorer:
        pane = show_models(explorer)
        assert pane.loading
        worker = pane._executor
        assert worker is not None
        pane.close()
        assert pane.closed and pane._executor is None
        worker.shutdown(wait=True)  # the load under way, if it started, has posted its outcome
        explorer._channel.drain()
        assert pane.loading and pane.schemas is None  # dropped: nothing was set on the closed widgets


def css_rules(html_text: str) -> dict[str, dict[str, str]]:
    """The rules of the `<style>` elements in `html_text`: each selector's declarations."""
    rules: dict[str, dict[str, str]] = {}
    for style in re.findall(r"<style>(.*?)</style>", html_text, flags=re.S):
        for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", style):
            declarations = dict(
                (k.strip(), v.strip()) for k, _, v in (d.partition(":") for d in body.split(";")) if v.strip()
            )
            for selector in selectors.split(","):
                rules.setdefault(" ".join(selector.split()), {}).update(declarations)
    return rules


def test_the_schema_report_keeps_its_tool_names_in_view_and_the_cost_headers_stand_over_their_columns(
    wb: Workbench,
) -> None:
    """Scrolled either way, the report keeps its tool column (sticky left) and its provider header
    (sticky top); the context cost's number headers are right-aligned as their numbers are."""
    with explorer_of(wb) as explorer:
        pane = show_models(explorer)
        loaded(explorer, pane)
        schemas = css_rules(pane.style.value)
        name_cell = schemas[".wb-models-schemas tbody td:first-child"]
        assert name_cell["position"] == "sticky" and name_cell["left"] == "0" and name_cell["vertical-align"] == "top"
        assert "background" in name_cell  # the cells scrolled under it do not show through
        header = schemas[".wb-models-schemas thead th"]
        assert header["position"] == "sticky" and header["top"] == "0" and "background" in header
        assert schemas[".wb-models-schemas thead th:first-child"]["left"] == "0"
        # a row taller than the view keeps its name in view under the header, while the row shows
        name = schemas[".wb-models-schemas tbody td:first-child code"]
        assert name["position"] == "sticky" and name["display"] == "block"
        assert int(name["top"].removesuffix("px")) >= int(header["height"].removesuffix("px"))
        assert header["white-space"] == "nowrap"  # the header keeps its height
        assert pane.schemas_view.layout.overflow == "auto" and pane.schemas_view.layout.max_height

        shown = pane.cost_view.value
        titles = re.findall(r"<th>(.*?)</th>", shown.split("<thead>", 1)[1].split("</thead>", 1)[0])
        assert [t.split(" ")[0] for t in titles] == ["mode", "bytes", "tokens", "vs", "what"]
        cost = css_rules(pane.style.value)
        for column in (2, 3, 4):  # bytes, tokens, vs flat: numbers, right-aligned in their cells
            assert cost[f".wb-models-cost th:nth-child({column})"]["text-align"] == "right"
        assert cost[".wb-models-cost th"]["text-align"] == "left"
        assert cost[".wb-models-cost th"]["padding"] == cost[".wb-models-cost td"]["padding"]
