"""Export a recorded session as a notebook, then run that notebook in a fresh kernel from the cassette."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from conftest import stdio_server, toolbox
from IPython.core.interactiveshell import InteractiveShell
from nbclient import NotebookClient

from workbench_magic import Workbench
from workbench_magic.vocabulary.errors import UsageError


def recorded_session(make_workbench: Callable[..., Workbench], tmp_path: Path) -> Workbench:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    with wb.record(tmp_path / "cassettes" / "session.json"):
        wb.call("t/s/echo", {"text": "hi"})
        wb.call("t/s/echo", {"text": "$not_a_variable"})
        wb.call("t/s/nested", {"config": {"name": "n", "inner": {"label": "x"}}})
        wb.call("t/s/image")
        wb.call("t/s/fail", {"message": "on purpose"})
        wb.call("t/s/table", {"n": 2})
    return wb


def test_export_writes_the_session_as_cells(make_workbench: Callable[..., Workbench], tmp_path: Path) -> None:
    wb = recorded_session(make_workbench, tmp_path)
    path = Path(wb.export_notebook(tmp_path / "out" / "session.ipynb"))
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    assert sources[:3] == [
        "%load_ext workbench_magic",
        "%workbench replay ../cassettes/session.json",
        "%workbench open t",
    ]
    assert sources[3:] == [
        "%%use_tool t/s/echo\ntext: hi",
        "%%use_tool t/s/echo\ntext: $$not_a_variable",
        "%%use_tool t/s/nested\nconfig:\n  name: n\n  inner:\n    label: x",
        "%use_tool t/s/image",
        "%%use_tool t/s/table\nn: 2",
    ]
    failed = [c.source for c in nb.cells if c.cell_type == "markdown" and "failed" in c.source]
    assert len(failed) == 1 and "on purpose" in failed[0]
    with pytest.raises(UsageError, match=r"Export to a \.ipynb file"):
        wb.export_notebook(tmp_path / "session.txt")


def test_export_to_another_kind_of_file_names_both_kinds(
    make_workbench: Callable[..., Workbench], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`%workbench export` writes a notebook (.ipynb) or tests (.py): its error for another suffix says both."""
    monkeypatch.setattr(Workbench, "_shared", make_workbench({"toolboxes": {}}))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        result = shell.run_cell(f"%workbench export {tmp_path / 'session.txt'}")
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")
    assert isinstance(result.error_in_exec, UsageError)
    wanted = f"Export to a .ipynb file (a notebook) or a .py file (tests), not {str(tmp_path / 'session.txt')!r}"
    assert str(result.error_in_exec) == wanted
    assert not (tmp_path / "session.txt").exists()


def test_the_exported_notebook_runs_from_the_cassette(
    make_workbench: Callable[..., Workbench], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wb = recorded_session(make_workbench, tmp_path)
    path = Path(wb.export_notebook(tmp_path / "session.ipynb"))
    wb.close_all()
    monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)  # the kernel knows nothing of toolbox `t`
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    results = [c for c in nb.cells if c.cell_type == "code" and "use_tool" in c.source]
    plain = [
        str(o.get("data", {}).get("text/plain", ""))
        for c in results
        for o in c.outputs
        if o.output_type == "execute_result"
    ]
    assert len(plain) == 5 and all("replayed" in p for p in plain)
    assert "$not_a_variable" in plain[1]
    images = [o for c in results for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1
    tables = [str(o["data"].get("text/html")) for c in results[-1:] for o in c.outputs]
    assert "row1" in tables[0]


def test_a_cassette_path_with_a_space_or_a_hash_replays_from_the_exported_line(
    make_workbench: Callable[..., Workbench], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exported replay line quotes its path: a space would split it, a leading `#` start a comment."""
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    with wb.record(tmp_path / "#my cassettes" / "session.json"):
        wb.call("t/s/echo", {"text": "hi"})
    path = Path(wb.export_notebook(tmp_path / "session.ipynb"))
    sources = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert sources[1] == "%workbench replay '#my cassettes/session.json'"
    monkeypatch.chdir(tmp_path)
    replayer = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    monkeypatch.setattr(Workbench, "_shared", replayer)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        shell.run_line_magic("workbench", sources[1].removeprefix("%workbench "))
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")
    assert replayer.call("t/s/echo", {"text": "hi"}).replayed
