"""The official reference servers: npm (everything, filesystem, memory) and PyPI (time, git)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import children, npm_server, toolbox

from workbench_magic import Workbench


@pytest.fixture
def ref(make_workbench, tmp_path: Path) -> Workbench:
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from the filesystem server\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    return make_workbench(
        {
            "toolboxes": {
                "ref": toolbox(
                    {
                        "everything": npm_server("everything"),
                        # the server uses the client's roots instead of its arguments (when it has any):
                        # "roots": false keeps the directory given on its command line
                        "filesystem": npm_server("filesystem", str(files), roots=False),
                        "memory": npm_server("memory", env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}),
                        "time": {
                            "command": sys.executable,
                            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                        },
                        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
                    }
                )
            }
        }
    )


def test_all_reference_servers_open_together(ref: Workbench, tmp_path: Path) -> None:
    before = children()
    box = ref.open("ref")
    assert box.failed == {}, box.failed
    assert len(children() - before) == 5
    protocols = {name: s.protocol for name, s in box.servers.items()}
    # the npm servers speak the handshake era, the Python ones 2026-07-28: both must work
    assert protocols["everything"] == "2025-11-25"
    assert protocols["time"] == "2026-07-28"

    assert ref.call("ref/everything/echo", {"message": "hi"}).text.endswith("hi")
    summed = ref.call("ref/everything/get-sum", {"a": 2, "b": 40})
    assert "42" in summed.text
    assert ref.call("ref/everything/get-tiny-image").images

    text = ref.call("ref/filesystem/read_text_file", {"path": str(tmp_path / "files" / "hello.txt")})
    assert text.text.strip() == "hello from the filesystem server"
    denied = ref.call("ref/filesystem/read_text_file", {"path": "/etc/passwd"})
    assert denied.is_error

    created = ref.call(
        "ref/memory/create_entities",
        {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]},
    )
    assert not created.is_error
    found = ref.call("ref/memory/search_nodes", {"query": "Ada"})
    assert "first program" in found.text

    now = ref.call("ref/time/get_current_time", {"timezone": "UTC"})
    assert now.data["timezone"] == "UTC"

    log = ref.call("ref/git/git_log", {"repo_path": str(tmp_path / "repo")})
    assert "first commit" in log.text

    ref.close("ref")
    assert children() - before == set()


def test_reference_server_schema_validation(ref: Workbench) -> None:
    ref.open("ref")
    from workbench_magic import ArgumentError

    with pytest.raises(ArgumentError, match="missing required argument 'message'"):
        ref.call("ref/everything/echo", {})
    with pytest.raises(ArgumentError, match="argument 'entities"):
        ref.call("ref/memory/create_entities", {"entities": [{"name": 1}]})


def test_two_toolboxes_with_a_filesystem_server_are_isolated(make_workbench, tmp_path: Path) -> None:
    dev, prod = tmp_path / "dev", tmp_path / "prod"
    for folder in (dev, prod):
        folder.mkdir()
        (folder / "which.txt").write_text(folder.name)
    before = children()
    wb = make_workbench(
        {
            "toolboxes": {
                # each server's roots are its own directory (server-filesystem serves the roots)
                "dev": toolbox({"filesystem": npm_server("filesystem", str(dev), roots=[str(dev)])}),
                "prod": toolbox({"filesystem": npm_server("filesystem", str(prod), roots=[str(prod)])}),
            }
        }
    )
    wb.open("dev")
    wb.open("prod")
    assert len(children() - before) == 2
    assert wb.call("dev/filesystem/read_text_file", {"path": str(dev / "which.txt")}).text == "dev"
    assert wb.call("prod/filesystem/read_text_file", {"path": str(prod / "which.txt")}).text == "prod"
    # each server only sees its own root
    assert wb.call("dev/filesystem/read_text_file", {"path": str(prod / "which.txt")}).is_error
    wb.close("dev")
    assert len(children() - before) == 1
    assert wb.call("prod/filesystem/read_text_file", {"path": str(prod / "which.txt")}).text == "prod"
