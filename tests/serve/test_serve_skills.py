"""serve's Skills extension (serve/skills.py): a host that declares skills lists the skills of the
downstream servers of open toolboxes, named uniquely per toolbox and server, and reads their files
through serve with the downstream digests intact."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVERS, extension_server, stdio_server, toolbox, write_config
from mcp import MCPError
from mcp.client.extension import advertise
from test_server import run, served

from workbench_magic import Workbench
from workbench_magic.engine.extensions import SKILLS_EXTENSION_ID, raw_request

pytestmark = pytest.mark.timeout(240)

MISSING_CLIENT_CAPABILITY = -32021


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SERVERS / "skills", tmp_path / "skills"))


@pytest.fixture
def config(tmp_path: Path, folder: Path) -> Path:
    return write_config(
        tmp_path / "workbench-config.json",
        {
            "toolboxes": {
                "dev": toolbox(
                    {
                        "docs": extension_server("skills", "skills_server.py", "--folder", str(folder)),
                        "plain": stdio_server(),
                    }
                )
            }
        },
    )


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_a_host_that_declares_skills_lists_and_reads_the_downstream_skills(
    config: Path, folder: Path, era: str
) -> None:
    """`auto`: the SDK's probe finds 2026-07-28, whose capabilities show serve's extensions; on the
    handshake era the SDK strips them from what the host sees, and serve still answers a host
    that declared the extension."""

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with served(config, mode=era, extensions=[advertise(SKILLS_EXTENSION_ID)]) as client:
            declared = client.server_capabilities.extensions
            assert SKILLS_EXTENSION_ID in declared if era == "auto" else declared is None
            before = await raw_request(client.session, "skills/list", {})
            await client.call_tool("open_toolbox", {"toolbox": "dev"})
            listing = await raw_request(client.session, "skills/list", {})
            entry = next(s for s in listing["skills"] if s["frontmatter"]["name"] == "dev-docs-csv-cleaning")
            got = await raw_request(client.session, "skills/get", {"uri": entry["uri"]})
            guide = next(r for r in entry["resources"] if r["uri"].endswith("/references/guide.md"))
            read = await client.read_resource(guide["uri"])
            return before, listing, (entry, got, guide, read)

    before, listing, (entry, got, guide, read) = run(scenario())
    assert before["skills"] == []  # nothing open, nothing listed
    names = {s["frontmatter"]["name"] for s in listing["skills"]}
    assert names == {"dev-docs-csv-cleaning", "dev-docs-release-notes"}
    assert entry["uri"] == "skill://dev-docs-csv-cleaning/SKILL.md"
    assert entry["_meta"] == {"toolbox": "dev", "server": "docs", "original_name": "csv-cleaning"}
    assert got["skill"] == entry
    files = {r["uri"].removeprefix("skill://dev-docs-csv-cleaning/"): r for r in entry["resources"]}
    assert set(files) == {"SKILL.md", "references/guide.md", "scripts/normalise.py"}
    for name, resource in files.items():
        on_disk = folder / "csv-cleaning" / name
        assert (resource["digest"], resource["size"]) == (sha256(on_disk), on_disk.stat().st_size)
    text = read.contents[0].text
    assert text == (folder / "csv-cleaning" / "references" / "guide.md").read_text()
    assert "sha256:" + hashlib.sha256(text.encode()).hexdigest() == guide["digest"]


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_a_host_that_does_not_declare_skills_is_told_to(config: Path, era: str) -> None:
    async def scenario() -> MCPError:
        async with served(config, mode=era) as client:
            with pytest.raises(MCPError) as refused:
                await raw_request(client.session, "skills/list", {})
            return refused.value

    assert run(scenario()).code == MISSING_CLIENT_CAPABILITY


def test_the_workbench_through_serve_reads_served_skills_with_digests_checked(
    config: Path, tmp_path: Path, make_workbench: Any
) -> None:
    from test_server import serve_command

    command = serve_command(config)
    wb: Workbench = make_workbench(
        {"toolboxes": {"up": toolbox({"serve": {"command": command[0], "args": command[1:]}})}}
    )
    wb.open("up")
    wb.call("up/serve/open_toolbox", {"toolbox": "dev"})
    listed = wb.skills("up/serve")
    assert [s.name for s in listed] == ["dev-docs-csv-cleaning", "dev-docs-release-notes"]
    skill = wb.skill("up/serve", "dev-docs-csv-cleaning")
    assert skill.instructions == (tmp_path / "skills" / "csv-cleaning" / "SKILL.md").read_text()
    assert set(skill.files) >= {"references/guide.md", "scripts/normalise.py"}


def test_a_typescript_sdk_host_that_declares_skills_lists_them(config: Path, folder: Path) -> None:
    """The TypeScript SDK (its client, pinned in tests/servers/package.json) as the host."""
    node = shutil.which("node")
    sdk = SERVERS / "node_modules" / "@modelcontextprotocol" / "sdk"
    if node is None or not sdk.exists():
        pytest.skip("the TypeScript SDK is not installed (cd tests/servers && npm ci)")
    from test_server import serve_command

    command = serve_command(config)
    out = subprocess.run(
        [node, str(SERVERS / "skills_host.mjs"), "dev", *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    names = [s["frontmatter"]["name"] for s in got["listing"]["skills"]]
    assert names == ["dev-docs-csv-cleaning", "dev-docs-release-notes"]
    first = got["listing"]["skills"][0]["resources"][0]
    text = got["read"]["contents"][0]["text"]
    assert first["uri"] == "skill://dev-docs-csv-cleaning/SKILL.md"
    assert "sha256:" + hashlib.sha256(text.encode()).hexdigest() == first["digest"]
    assert text == (folder / "csv-cleaning" / "SKILL.md").read_text()
