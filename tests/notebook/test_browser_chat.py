"""`%%chat` in a real browser: JupyterLab headless + chromium, a scripted model, the demo toolbox.

A chat cell shows the model's text, the tool call it made (identifier, arguments, how it went) and
the result's table, then the usage and cost line. A tool marked `destructiveHint` asks the person
(the kernel's input box) before it runs: the call's line says `running` and no result is there
until the answer, then the call runs and its result shows. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from conftest import toolbox, write_config
from test_browser import ARTIFACTS, Lab, _require_browser, cell_output, run_cell, wait_output

pytestmark = pytest.mark.timeout(300)

MODEL = '''\
import json
from pydantic_ai.messages import UserPromptPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

async def script(messages, info):
    """Call a tool for a new prompt (delete_note when it says delete), then answer."""
    asked = [p.content for p in messages[-1].parts if isinstance(p, UserPromptPart)]
    if not asked:
        yield "Done: "
        yield "see the result above."
        return
    if "delete" in asked[0]:
        yield {0: DeltaToolCall(name="demo__notes__delete_note", json_args=json.dumps({"id": note}), tool_call_id="d1")}
    else:
        yield "Looking at the penguins. "
        yield {1: DeltaToolCall(
            name="demo__datasets__query", json_args=json.dumps({"dataset": "penguins", "limit": 3}), tool_call_id="q1"
        )}

m = FunctionModel(stream_function=script, model_name="gpt-4o")
note = wb.call("demo/notes/add_note", {"title": "doomed note", "body": "x"}).data["id"]
print("ready", note)
'''

CELLS = [
    "%load_ext workbench_magic\nfrom workbench_magic import Workbench\nwb = Workbench.shared()\nwb.open('demo');",
    MODEL,
    "%%chat demo --model $m\nShow me three penguins",
    "%%chat demo --model $m\nPlease delete my note",
    "print('HISTORY', [str(r.identifier) for r in wb.history])",
]


@pytest.fixture
def chat_lab(tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab with chat.ipynb (CELLS) and the demo toolbox."""
    _require_browser()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "chat.ipynb")
    demo = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}
    write_config(tmp_path / "workbench-config.json", {"toolboxes": {"demo": toolbox(demo)}})
    server = Lab(tmp_path)
    yield server
    server.stop()


def test_chat_in_jupyterlab(chat_lab: Lab) -> None:
    with chat_lab.notebook_page("chat.ipynb", height=1600, failure="chat-failure.png") as page:
        run_cell(page, 0)
        run_cell(page, 1)
        wait_output(page, 1, "ready 1", timeout=120_000)

        # a tool call and its result's table, the model's text around it, then usage and cost
        run_cell(page, 2)
        text = wait_output(page, 2, "Done: see the result above.", "gpt-4o: 2 requests", timeout=120_000)
        out = cell_output(page, 2)
        assert "Looking at the penguins." in text
        call = out.locator(".wb-chat-call")
        assert call.count() == 1
        line = call.inner_text()
        assert "demo/datasets/query" in line and '{"dataset": "penguins", "limit": 3}' in line and "ok, " in line
        table = out.locator("table")
        assert table.count() >= 1 and "Adelie" in table.first.inner_text()
        assert "$0.0" in out.locator(".wb-chat-usage").inner_text()
        # in order: the text, the call, its table, the answer, the usage line
        order = [text.index(s) for s in ("Looking at", "demo/datasets/query", "Adelie", "Done:", "gpt-4o: 2")]
        assert order == sorted(order), text
        page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=True)

        # a destructive tool asks first: the call waits on the person's answer, nothing ran yet
        run_cell(page, 3)
        box = page.locator(".jp-Stdin-input")
        box.wait_for(timeout=120_000)
        asking = wait_output(page, 3, "the model wants to run demo/notes/delete_note", "Run it (y/n)")
        assert "running" in cell_output(page, 3).locator(".wb-chat-call").inner_text()
        assert "doomed note" not in asking  # no result before the answer
        page.screenshot(path=str(ARTIFACTS / "chat-asks.png"), full_page=True)
        box.fill("y")
        box.press("Enter")
        text = wait_output(page, 3, "Done: see the result above.", timeout=60_000)
        line = cell_output(page, 3).locator(".wb-chat-call").inner_text()
        assert "demo/notes/delete_note" in line and "allowed by you, ok" in line
        assert "doomed note" in text  # the deleted note, the tool's result
        assert text.index("Run it (y/n)") < text.index("doomed note")
        page.screenshot(path=str(ARTIFACTS / "chat-allowed.png"), full_page=True)

        run_cell(page, 4)
        history = wait_output(page, 4, "HISTORY")
        assert "'demo/notes/add_note', 'demo/datasets/query', 'demo/notes/delete_note'" in history
