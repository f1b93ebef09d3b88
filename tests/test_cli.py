"""The `workbench-magic` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import python_command, stdio_server, toolbox, write_config


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        python_command("-m", "workbench_magic", *args), cwd=cwd, capture_output=True, text=True, timeout=120
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


def test_config_schema_prints_the_shipped_schema_without_the_sdk(tmp_path: Path) -> None:
    from workbench_magic.config.schema import SCHEMA_FILE, config_schema

    out = run("config-schema", cwd=tmp_path)
    assert out.returncode == 0 and out.stderr == ""
    assert json.loads(out.stdout) == config_schema()
    assert out.stdout == SCHEMA_FILE.read_text(encoding="utf-8")  # JSON, indent 2: the file it regenerates
    code = (
        "import contextlib, io, sys\n"
        "from workbench_magic.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['config-schema']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))\n"
    )
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "[]", "config-schema imported the MCP SDK"


def test_check_schemas_exits_1_when_a_provider_rejects_a_tool(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "wb.json", {"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    rejected = run("--config", str(cfg), "check-schemas", "t", cwd=tmp_path)
    assert rejected.returncode == 1, rejected.stderr
    lines = rejected.stdout.splitlines()
    assert lines[0].startswith("Schema report of t: ") and "rejected by openai " in lines[0]
    assert "  t/s/slow [openai]" in rejected.stdout  # its arguments have defaults: optional, refused by strict mode
    accepted = run("--config", str(cfg), "check-schemas", "t/s", "--provider", "gemini", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stdout
    assert accepted.stdout.splitlines()[0].endswith("; rejected by gemini 0")
    missing = run("--config", str(cfg), "check-schemas", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("error: Toolbox 'nope' not found")


def test_serve_refuses_a_port_outside_1_to_65535_at_once(tmp_path: Path) -> None:
    for port in ("70000", "-5", "0"):
        for transport in ("http", "stdio"):
            out = subprocess.run(
                python_command("-m", "workbench_magic", "serve", "--transport", transport, f"--port={port}"),
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,  # a serve that listens nowhere never ends: TimeoutExpired
                stdin=subprocess.DEVNULL,
            )
            assert out.returncode == 2 and out.stdout == "", (port, transport, out.stderr)
            last = out.stderr.strip().splitlines()[-1]
            assert last == f"workbench-magic serve: error: argument --port: {port} is not a port (1-65535)"
