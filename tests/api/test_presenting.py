"""A workbench's presenters (api/presenting.py): given to each workbench, the notebook's by default
(found through the package's entry point), and nothing of the notebook imported until one is needed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import stdio_server, toolbox

from workbench_magic import Workbench, WorkbenchError
from workbench_magic.api.presenting import Presenters, installed_presenters

ROOT = Path(__file__).resolve().parents[2]


def test_reading_and_making_a_workbench_imports_nothing_of_the_notebook() -> None:
    code = (
        "import sys, workbench_magic\n"
        "workbench_magic.Workbench\n"
        "wb = workbench_magic.Workbench(config={'toolboxes': {}})\n"
        "print(sorted(m for m in sys.modules if m.startswith('workbench_magic.notebook')))\n"
        "wb.presenters\n"  # the first need: now the notebook's are loaded
        "print('workbench_magic.notebook' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"], out.stderr


def test_the_default_presenters_are_the_notebooks_through_the_entry_point() -> None:
    from workbench_magic.notebook import presenters

    installed = installed_presenters()
    assert installed == presenters()  # the same functions, registered from above
    assert installed.chat_view is not None and installed.app_framer is not None
    assert installed.exporter is not None and installed.task_display is not None
    assert Workbench(config={"toolboxes": {}}).presenters is installed


def test_each_workbench_has_its_own_presenters(make_workbench: Callable[..., Workbench], tmp_path: Path) -> None:
    written: list[tuple[Any, str]] = []

    def exporter(workbench: Any, path: Any) -> str:
        written.append((workbench, str(path)))
        return str(path)

    config = {"toolboxes": {"t": toolbox({"s": stdio_server()})}}
    mine = make_workbench(config, presenters=Presenters(exporter=exporter))
    other = make_workbench(config)
    assert mine.export_notebook(tmp_path / "a.ipynb") == str(tmp_path / "a.ipynb")
    assert written == [(mine, str(tmp_path / "a.ipynb"))]
    other.export_notebook(tmp_path / "b.ipynb")  # the notebook's exporter: a notebook file
    assert (tmp_path / "b.ipynb").read_text().startswith("{") and len(written) == 1


def test_a_workbench_without_an_exporter_says_so_in_one_line(
    make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    wb = make_workbench({"toolboxes": {}}, presenters=Presenters())
    with pytest.raises(WorkbenchError, match=r"^No notebook exporter: ") as caught:
        wb.export_notebook(tmp_path / "a.ipynb")
    assert "\n" not in str(caught.value) and not (tmp_path / "a.ipynb").exists()


def test_a_started_call_shows_through_its_workbenchs_task_display(make_workbench: Callable[..., Workbench]) -> None:
    shown: list[str] = []
    wb = make_workbench(
        {"toolboxes": {"t": toolbox({"s": stdio_server()})}},
        presenters=Presenters(task_display=lambda handle: shown.append(handle.id)),
    )
    wb.open("t")
    handle = wb.start("t/s/sleep", {"seconds": 0})
    handle.result(timeout=30)
    handle._ipython_display_()  # what IPython's display() calls
    assert shown == [handle.id]
