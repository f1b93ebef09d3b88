"""The `workbench-magic` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import stdio_server, toolbox, write_config


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench_magic", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_list_tools_and_call(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "wb.json", {"toolboxes": {"t": toolbox({"s": stdio_server()}, "a test box")}})
    listed = run("--config", str(cfg), "list", cwd=tmp_path)
    assert listed.returncode == 0 and "t [closed] s: a test box" in listed.stdout
    tools = run("--config", str(cfg), "tools", "t", cwd=tmp_path)
    assert tools.returncode == 0 and "t/s/echo" in tools.stdout
    called = run("--config", str(cfg), "call", "t/s/add", json.dumps({"a": 1, "b": 2}), cwd=tmp_path)
    assert called.returncode == 0 and '"sum": 3' in called.stdout


def test_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"toolboxes": {"t": {"mcpServers": {"s": {"args": []}}}}}')
    out = run("--config", str(bad), "list", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and len(out.stderr.strip().splitlines()) == 1
    assert "toolboxes.t.mcpServers.s" in out.stderr
    missing = run("call", "nope/s/t", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip() == "error: Toolbox 'nope' not found. Available toolboxes: demo"
