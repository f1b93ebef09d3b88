"""Skills (SEP-2640), client side: `wb.skills` lists a server's skills (the extension's `skills/list`,
or the `skill://` resources of a server without it), `wb.skill` reads one whole with every file checked
against its listed digest, and `wb.chat(skills=...)` gives the model a skill's instructions.

The server is FastMCP 4.2's (tests/servers/skills_server.py, its own virtualenv) over a copy of
tests/servers/skills, which it reads again on every request: a test changes a file on disk as a
person would.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVERS, extension_server, stdio_server, toolbox
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from workbench_magic import NotFoundError, Skill, SkillDigestError, SkillInfo, UsageError, Workbench
from workbench_magic.vocabulary.skills import SkillList

pytestmark = pytest.mark.timeout(180)

NEITHER = "t/plain: no skills (the server offers neither the skills extension nor skill:// resources)"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"
"""A binary file of a skill (not UTF-8): read as bytes."""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = Path(shutil.copytree(SERVERS / "skills", tmp_path / "skills"))
    (folder / "csv-cleaning" / "assets").mkdir()
    (folder / "csv-cleaning" / "assets" / "logo.png").write_bytes(PNG)
    return folder


def skills_server(folder: Path, *args: str, protocol: str = "2026-07-28") -> dict[str, Any]:
    return extension_server("skills", "skills_server.py", "--folder", str(folder), *args, protocol=protocol)


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench], folder: Path) -> Workbench:
    return make_workbench({"toolboxes": {"t": toolbox({"s": skills_server(folder), "plain": stdio_server()})}})


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_extension_lists_each_skill_with_its_files_sizes_and_digests(wb: Workbench, folder: Path) -> None:
    listed = wb.skills("t/s")
    assert isinstance(listed, SkillList) and listed.notes == ()
    assert [s.name for s in listed] == ["csv-cleaning", "release-notes"]
    csv = listed[0]
    assert isinstance(csv, SkillInfo) and csv.source == "extension"
    assert (csv.toolbox, csv.server, csv.uri) == ("t", "s", "skill://csv-cleaning/SKILL.md")
    assert csv.description == "Clean a messy CSV file before analysis (headers, types, missing values)."
    on_disk = sorted(p.relative_to(folder / "csv-cleaning").as_posix() for p in (folder / "csv-cleaning").rglob("*.*"))
    assert sorted(f.name for f in csv.files) == on_disk
    for f in csv.files:
        path = folder / "csv-cleaning" / f.name
        assert f.uri == f"skill://csv-cleaning/{f.name}"
        assert (f.size, f.digest) == (path.stat().st_size, digest(path)), f.name
    assert repr(csv) == f"t/s/csv-cleaning: {csv.description} (4 files)"
    assert "release-notes" in listed._repr_html_()


def test_a_skill_is_read_whole_text_and_bytes(wb: Workbench, folder: Path) -> None:
    skill = wb.skill("t/s", "csv-cleaning")  # never listed: listed first
    assert isinstance(skill, Skill) and skill.name == "csv-cleaning" and skill.info.source == "extension"
    assert skill.instructions == (folder / "csv-cleaning" / "SKILL.md").read_text()
    assert skill.files["references/guide.md"] == (folder / "csv-cleaning" / "references" / "guide.md").read_text()
    assert skill.files["scripts/normalise.py"].startswith('"""Normalise the headers')
    assert skill.files["assets/logo.png"] == PNG
    assert skill._repr_markdown_() == skill.instructions
    notes = wb.skill("t/s/release-notes")  # the skill named whole
    assert list(notes.files) == ["SKILL.md"] and notes.instructions.startswith("---\nname: release-notes\n")


def test_a_file_changed_since_the_listing_is_a_digest_error_naming_it(wb: Workbench, folder: Path) -> None:
    listed = wb.skills("t/s")
    guide = folder / "csv-cleaning" / "references" / "guide.md"
    guide.write_text("Changed after the listing.\n")
    with pytest.raises(SkillDigestError) as caught:
        wb.skill("t/s", "csv-cleaning")
    listed_digest = listed[0].file("references/guide.md").digest
    assert listed_digest is not None
    assert caught.value.file == "references/guide.md"
    assert str(caught.value) == (
        "Skill 'csv-cleaning' of server 's' in toolbox 't': references/guide.md does not match its listed digest "
        f"(sha256:{listed_digest[7:19]}…): it changed since it was listed; list the skills again"
    )
    # everything else goes on: the other skill, the tools, and the skill once listed again
    assert wb.skill("t/s", "release-notes").files
    assert wb.call("t/s/list_changes", {"version": "1.0"}).data
    again = wb.skills("t/s")
    assert again[0].file("references/guide.md").digest == digest(guide)
    assert wb.skill("t/s", "csv-cleaning").files["references/guide.md"] == "Changed after the listing.\n"


def test_an_unknown_skill_is_not_found_with_the_names_listed(wb: Workbench) -> None:
    with pytest.raises(NotFoundError) as caught:
        wb.skill("t/s", "nope")
    assert str(caught.value) == (
        "Skill 'nope' not found in server 's' (toolbox 't'). Skills: csv-cleaning, release-notes"
    )
    with pytest.raises(NotFoundError, match=r"^Skill 'x' not found in server 'plain' \(toolbox 't'\)\. Skills: none$"):
        wb.skill("t/plain/x")
    with pytest.raises(NotFoundError, match=r"^Name the skill: toolbox/server/name"):
        wb.skill("t/s")


@pytest.mark.parametrize(("args", "protocol"), [(("--resources-only",), "2026-07-28"), ((), "legacy")])
def test_without_the_extension_skills_are_found_among_skill_resources(
    make_workbench: Callable[..., Workbench], folder: Path, args: tuple[str, ...], protocol: str
) -> None:
    """A server without the extension (or on the legacy era, where FastMCP serves it not): its
    `skill://` resources, read as they are (no digests to check)."""
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": skills_server(folder, *args, protocol=protocol)})}})
    listed = wb.skills("t")
    assert "io.modelcontextprotocol/skills" not in wb.status()["t"]["s"].extensions
    assert [(s.name, s.source) for s in listed] == [("csv-cleaning", "resources"), ("release-notes", "resources")]
    csv = listed[0]
    assert csv.description.startswith("Clean a messy CSV file")
    assert [f.name for f in csv.files] == ["SKILL.md", "assets/logo.png", "references/guide.md", "scripts/normalise.py"]
    assert all(f.digest is None for f in csv.files)
    assert repr(csv).endswith("(4 files; skill:// resources, no digests)")
    (folder / "csv-cleaning" / "references" / "guide.md").write_text("Changed.\n")  # nothing to check it against
    skill = wb.skill("t/s", "csv-cleaning")
    assert skill.instructions == (folder / "csv-cleaning" / "SKILL.md").read_text()
    assert skill.files["references/guide.md"] == "Changed.\n" and skill.files["assets/logo.png"] == PNG


def test_a_server_with_neither_lists_none_and_says_why(wb: Workbench) -> None:
    alone = wb.skills("t/plain")
    assert list(alone) == [] and alone.notes == (NEITHER,)
    assert repr(alone) == NEITHER
    both = wb.skills()  # every open toolbox: t was opened by the listing above
    assert [s.target for s in both] == ["t/s/csv-cleaning", "t/s/release-notes"] and both.notes == (NEITHER,)


def test_nothing_open_lists_nothing(make_workbench: Callable[..., Workbench], folder: Path) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": skills_server(folder)})}})
    assert repr(wb.skills()) == "(no skills)"
    with pytest.raises(NotFoundError, match=r"^Toolbox 'x' not found"):
        wb.skills("x")


def test_askills_and_askill_await_from_another_loop(wb: Workbench, folder: Path) -> None:
    async def main() -> tuple[SkillList, Skill]:
        return await wb.askills("t/s"), await wb.askill("t/s/release-notes")

    listed, skill = asyncio.run(main())
    assert [s.name for s in listed] == ["csv-cleaning", "release-notes"]
    assert skill.instructions == (folder / "release-notes" / "SKILL.md").read_text()


class Scripted:
    """A `FunctionModel` that answers one line and keeps the instructions of each request."""

    def __init__(self) -> None:
        self.instructions: list[str | None] = []

    def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.instructions.append(info.instructions)
        return ModelResponse(parts=[TextPart("Done.")])

    def model(self) -> FunctionModel:
        return FunctionModel(self.answer)


def test_chat_gives_the_model_the_skills_instructions(wb: Workbench, folder: Path) -> None:
    from workbench_magic.api.models.chat_agent import INSTRUCTIONS

    model = Scripted()
    wb.chat("Clean data.csv", toolbox="t", model=model.model(), skills="t/s/csv-cleaning")
    [told] = model.instructions
    assert told is not None and told.startswith(INSTRUCTIONS)
    assert (folder / "csv-cleaning" / "SKILL.md").read_text().strip() in told
    assert "Follow the skill csv-cleaning (t/s/csv-cleaning)" in told
    wb.chat("Now the notes", toolbox="t", model=model.model(), skills=["t/s/csv-cleaning", "t/s/release-notes"])
    assert "release-notes" in (model.instructions[-1] or "") and "csv-cleaning" in (model.instructions[-1] or "")
    wb.chat("And without", toolbox="t", model=model.model())
    assert model.instructions[-1] == INSTRUCTIONS  # a skill is for the turn that names it


def test_chat_with_a_changed_skill_fails_before_the_model_is_asked(wb: Workbench, folder: Path) -> None:
    model = Scripted()
    wb.skills("t/s")
    (folder / "release-notes" / "SKILL.md").write_text("---\nname: release-notes\ndescription: other\n---\nOther.\n")
    with pytest.raises(SkillDigestError, match=r"SKILL\.md does not match its listed digest"):
        wb.chat("Notes", toolbox="t", model=model.model(), skills="t/s/release-notes")
    with pytest.raises(UsageError, match=r"^Name each skill as toolbox/server/name, not 't/s'$"):
        wb.chat("Notes", toolbox="t", model=model.model(), skills=["t/s"])
    assert model.instructions == []


def test_a_toolset_with_skills_gives_an_agent_their_instructions(wb: Workbench, folder: Path) -> None:
    from pydantic_ai import Agent

    model = Scripted()
    toolset = wb.toolset("t/s", skills=["t/s/csv-cleaning"])
    Agent(model.model(), toolsets=[toolset]).run_sync("Clean data.csv")
    [told] = model.instructions
    assert told is not None and "Follow the skill csv-cleaning (t/s/csv-cleaning)" in told
    assert (folder / "csv-cleaning" / "SKILL.md").read_text().strip() in told
    Agent(model.model(), toolsets=[wb.toolset("t/s")]).run_sync("Again")
    assert not model.instructions[-1]  # no skills, no instructions of the toolset's


def test_skills_of_one_skill_and_a_skill_that_is_not_text_are_usage_errors(wb: Workbench) -> None:
    with pytest.raises(UsageError) as caught:
        wb.skills("t/s/csv-cleaning")
    assert str(caught.value) == (
        "wb.skills takes a toolbox or toolbox/server, not 't/s/csv-cleaning': "
        "wb.skill('t/s/csv-cleaning') reads that skill"
    )
    with pytest.raises(UsageError):
        asyncio.run(wb.askills("t/s/csv-cleaning"))
    for target, name in ((42, None), (None, None), ("t/s", 42)):
        with pytest.raises(UsageError) as caught:
            wb.skill(target, name)  # type: ignore[arg-type]
        shown = repr(target if name is None else name)
        assert str(caught.value) == (
            f"wb.skill takes the skill as text, 'toolbox/server/name' or ('toolbox/server', name), not {shown}"
        )
    assert [s.name for s in wb.skills("t/s")] == ["csv-cleaning", "release-notes"]  # a server still lists
