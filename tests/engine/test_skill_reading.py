"""Skills (SEP-2640), the engine's checks on read: a `SKILL.md` whose frontmatter is not the one its
listing gave is refused as a digest mismatch is, naming the field, before any other file of the
skill is read; a file whose size is not the listed one likewise.

The server is FastMCP 4.2's (tests/servers/skills_server.py, its own virtualenv) over a copy of
tests/servers/skills; `--listed-description` makes it list a description its `SKILL.md` does not have.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVERS, extension_server, toolbox

from workbench_magic import SkillDigestError, Workbench
from workbench_magic.engine.skills import frontmatter_mismatch, size_mismatch
from workbench_magic.vocabulary.skills import SkillFile

pytestmark = pytest.mark.timeout(180)

LISTED = "Something this skill does not say it does."


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SERVERS / "skills", tmp_path / "skills"))


def skills_server(folder: Path, *args: str) -> dict[str, Any]:
    return extension_server("skills", "skills_server.py", "--folder", str(folder), *args, protocol="2026-07-28")


def reads(messages: Any) -> list[str]:
    return [
        m.message["params"]["uri"]
        for m in messages
        if m.direction == "sent" and m.message.get("method") == "resources/read"
    ]


def test_a_skill_md_whose_frontmatter_is_not_the_listed_one_is_refused_naming_the_field(
    make_workbench: Callable[..., Workbench], folder: Path
) -> None:
    """`sep-2640-client-verify-frontmatter`: the digest fits (the server served what it listed), the
    frontmatter does not. Nothing past `SKILL.md` is read; the tools work on."""
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": skills_server(folder, "--listed-description", LISTED)})}})
    listed = wb.skills("t/s")
    assert [s.description for s in listed] == [LISTED, LISTED]
    with wb.trace("t/s") as trace, pytest.raises(SkillDigestError) as caught:
        wb.skill("t/s", "csv-cleaning")
    assert caught.value.file == "SKILL.md"
    assert str(caught.value) == (
        "Skill 'csv-cleaning' of server 's' in toolbox 't': SKILL.md does not match its listing (description): "
        "it changed since it was listed; list the skills again"
    )
    assert reads(trace.messages) == ["skill://csv-cleaning/SKILL.md"]  # not on into the skill's other files
    assert wb.call("t/s/list_changes", {"version": "1.0"}).data


def test_a_skill_md_that_matches_its_listing_is_read(make_workbench: Callable[..., Workbench], folder: Path) -> None:
    """The ordinary server: the frontmatter fits, SKILL.md is read first, then the other files."""
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": skills_server(folder)})}})
    with wb.trace("t/s") as trace:
        skill = wb.skill("t/s", "csv-cleaning")
    assert skill.instructions == (folder / "csv-cleaning" / "SKILL.md").read_text()
    assert reads(trace.messages)[0] == "skill://csv-cleaning/SKILL.md"
    assert sorted(reads(trace.messages)) == sorted(f.uri for f in skill.info.files)
    assert list(skill.files) == [f.name for f in skill.info.files]  # in the listing's order, as before


WITH_METADATA = "metadata:\n  v: '1'\n---\n"
SKILL = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nBody.\n"


@pytest.mark.parametrize(
    ("listed", "text", "field"),
    [
        ({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"}, SKILL, None),
        ({"name": "pdf-processing", "description": "  Extract, fill, and assemble PDF documents\n"}, SKILL, None),
        ({"name": "pdf-processing", "description": "Exfiltrate credentials"}, SKILL, "description"),
        ({"name": "other", "description": "Extract, fill, and assemble PDF documents"}, SKILL, "name"),
        ({"name": "pdf-processing", "license": "MIT"}, SKILL, "license"),  # listed, not in the file
        ({"name": "pdf-processing", "metadata": {"v": "1"}}, SKILL.replace("---\n\n", WITH_METADATA), None),
        ({"name": "pdf-processing"}, "No frontmatter at all.\n", "name"),
        ({}, SKILL, None),  # nothing listed, nothing to compare
    ],
)
def test_frontmatter_is_compared_field_by_field_with_the_listing(
    listed: dict[str, Any], text: str, field: str | None
) -> None:
    assert frontmatter_mismatch(listed, text) == field


def test_a_size_is_compared_only_where_one_was_listed() -> None:
    assert size_mismatch(SkillFile("SKILL.md", "skill://x/SKILL.md", 5), b"12345") is False
    assert size_mismatch(SkillFile("SKILL.md", "skill://x/SKILL.md", 5), b"123456") is True
    assert size_mismatch(SkillFile("SKILL.md", "skill://x/SKILL.md"), b"123456") is False
