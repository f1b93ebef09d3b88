"""serve's Skills extension (serve/skills.py): a host that declares skills lists the skills of the
downstream servers of open toolboxes with their downstream frontmatter, each unique by its URI
(`skill://{toolbox}/{server}/{name}/SKILL.md`), and reads their files through serve with the
downstream digests intact."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
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


def skill_frontmatter(path: Path) -> dict[str, Any]:
    """The frontmatter of the `SKILL.md` at `path`, as a listing carries it."""
    head = path.read_text().removeprefix("---\n").partition("\n---")[0]
    return dict(yaml.safe_load(head))


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
            entry = next(s for s in listing["skills"] if s["frontmatter"]["name"] == "csv-cleaning")
            got = await raw_request(client.session, "skills/get", {"uri": entry["uri"]})
            guide = next(r for r in entry["resources"] if r["uri"].endswith("/references/guide.md"))
            read = await client.read_resource(guide["uri"])
            return before, listing, (entry, got, guide, read)

    before, listing, (entry, got, guide, read) = run(scenario())
    assert before["skills"] == []  # nothing open, nothing listed
    uris = [s["uri"] for s in listing["skills"]]
    assert uris == ["skill://dev/docs/csv-cleaning/SKILL.md", "skill://dev/docs/release-notes/SKILL.md"]
    for skill in listing["skills"]:  # the downstream frontmatter, as its SKILL.md has it
        assert skill["frontmatter"] == skill_frontmatter(folder / skill["frontmatter"]["name"] / "SKILL.md")
    assert entry["_meta"] == {"toolbox": "dev", "server": "docs", "original_name": "csv-cleaning"}
    assert got["skill"] == entry
    files = {r["uri"].removeprefix("skill://dev/docs/csv-cleaning/"): r for r in entry["resources"]}
    assert set(files) == {"SKILL.md", "references/guide.md", "scripts/normalise.py"}
    for name, resource in files.items():
        on_disk = folder / "csv-cleaning" / name
        assert (resource["digest"], resource["size"]) == (sha256(on_disk), on_disk.stat().st_size)
    text = read.contents[0].text
    assert text == (folder / "csv-cleaning" / "references" / "guide.md").read_text()
    assert "sha256:" + hashlib.sha256(text.encode()).hexdigest() == guide["digest"]


def test_two_servers_with_a_skill_of_one_name_are_both_listed_at_their_own_uris(tmp_path: Path, folder: Path) -> None:
    """`csv-cleaning` of two servers of one toolbox: two entries, each with its own server's
    frontmatter, got and read by its URI from its own server."""
    other = tmp_path / "other"
    (other / "csv-cleaning").mkdir(parents=True)
    own = (folder / "csv-cleaning" / "SKILL.md").read_text().replace("Clean a messy CSV", "Tidy a CSV")
    (other / "csv-cleaning" / "SKILL.md").write_text(own)
    config = write_config(
        tmp_path / "two.json",
        {
            "toolboxes": {
                "dev": toolbox(
                    {
                        "docs": extension_server("skills", "skills_server.py", "--folder", str(folder)),
                        "more": extension_server("skills", "skills_server.py", "--folder", str(other)),
                    }
                )
            }
        },
    )

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]], list[str], MCPError]:
        async with served(config, extensions=[advertise(SKILLS_EXTENSION_ID)]) as client:
            await client.call_tool("open_toolbox", {"toolbox": "dev"})
            listing = await raw_request(client.session, "skills/list", {})
            entries = [s for s in listing["skills"] if s["frontmatter"]["name"] == "csv-cleaning"]
            got = [(await raw_request(client.session, "skills/get", {"uri": s["uri"]}))["skill"] for s in entries]
            read = [(await client.read_resource(s["uri"])).contents[0].text for s in entries]
            with pytest.raises(MCPError) as unknown:
                await raw_request(client.session, "skills/get", {"uri": "skill://dev/plain/csv-cleaning/SKILL.md"})
            return listing, got, read, unknown.value

    listing, got, read, unknown = run(scenario())
    by_uri = {s["uri"]: s for s in listing["skills"]}
    assert list(by_uri) == [
        "skill://dev/docs/csv-cleaning/SKILL.md",
        "skill://dev/docs/release-notes/SKILL.md",
        "skill://dev/more/csv-cleaning/SKILL.md",
    ]
    docs, more = by_uri["skill://dev/docs/csv-cleaning/SKILL.md"], by_uri["skill://dev/more/csv-cleaning/SKILL.md"]
    assert docs["frontmatter"] == skill_frontmatter(folder / "csv-cleaning" / "SKILL.md")
    assert more["frontmatter"] == skill_frontmatter(other / "csv-cleaning" / "SKILL.md")
    assert more["frontmatter"]["description"].startswith("Tidy a CSV")
    assert (docs["_meta"]["server"], more["_meta"]["server"]) == ("docs", "more")
    assert [r["uri"] for r in more["resources"]] == ["skill://dev/more/csv-cleaning/SKILL.md"]
    assert got == [docs, more]
    assert read == [(folder / "csv-cleaning" / "SKILL.md").read_text(), own]
    assert (unknown.code, unknown.message) == (-32602, "No skill at skill://dev/plain/csv-cleaning/SKILL.md")


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
    assert [(s.name, s.uri) for s in listed] == [
        ("csv-cleaning", "skill://dev/docs/csv-cleaning/SKILL.md"),
        ("release-notes", "skill://dev/docs/release-notes/SKILL.md"),
    ]
    skill = wb.skill("up/serve", "csv-cleaning")  # its frontmatter checked against the listing
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
    assert names == ["csv-cleaning", "release-notes"]
    first = got["listing"]["skills"][0]["resources"][0]
    text = got["read"]["contents"][0]["text"]
    assert first["uri"] == "skill://dev/docs/csv-cleaning/SKILL.md"
    assert "sha256:" + hashlib.sha256(text.encode()).hexdigest() == first["digest"]
    assert text == (folder / "csv-cleaning" / "SKILL.md").read_text()
