"""`wb.doctor` (api/toolboxes/opening.py), `%workbench doctor`, `workbench-magic doctor`, and the
explorer's hint when a server failed: the connection doctor's faces, on real servers (the steps
themselves are tests/engine/test_doctor.py's)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import python_command, stdio_server, toolbox, write_config
from IPython.core.interactiveshell import InteractiveShell

from workbench_magic import NotFoundError, Workbench

BOXES = {"toolboxes": {"t": toolbox({"good": stdio_server(), "gone": {"command": "/nonexistent/server"}})}}


def test_the_doctor_names_the_failing_step_and_passes_a_healthy_server(
    make_workbench: Callable[..., Workbench],
) -> None:
    wb = make_workbench(BOXES)
    bad = wb.doctor("t/gone")
    assert not bad.ok and bad.failed is not None and bad.failed.name == "command"
    assert "/nonexistent/server" in bad.failed.finding
    assert all(s.status == "skipped" for s in bad.steps[[s.name for s in bad.steps].index("command") + 1 :])
    good = wb.doctor("t/good")
    assert good.ok and good.step("tools").status == "ok"
    assert not wb.is_open("t")  # the doctor leaves the toolbox as it was
    with pytest.raises(NotFoundError):
        wb.doctor("t/nobody")


def test_the_magic_and_the_command_line(
    make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    wb = make_workbench(BOXES)
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        report = shell.run_line_magic("workbench", "doctor t/gone")
        assert not report.ok and "<table" in report._repr_html_()
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")
    config = write_config(tmp_path / "workbench-config.json", BOXES)
    command = [*python_command("-m", "workbench_magic"), "doctor", "--config", str(config)]
    failed = subprocess.run([*command, "t/gone"], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1 and "command" in failed.stdout
    passed = subprocess.run([*command, "t/good"], capture_output=True, text=True, timeout=120)
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_the_explorer_offers_the_doctor_for_a_failed_server(make_workbench: Callable[..., Workbench]) -> None:
    from workbench_magic.notebook.widgets.chooser import server_html

    wb = make_workbench(BOXES)
    wb.open("t")
    failed = wb.toolbox_state("t").servers["gone"]
    assert failed.status == "failed"
    assert "%workbench doctor t/gone" in server_html(failed)
    assert "doctor" not in server_html(wb.toolbox_state("t").servers["good"])
