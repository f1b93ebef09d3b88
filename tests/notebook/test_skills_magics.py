"""`%workbench skills` and `%%chat --skill` in a real IPython shell, against FastMCP 4.2's skills server
(tests/servers/skills_server.py) and our test server (no skills)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import SERVERS, extension_server, stdio_server, toolbox
from IPython.core.interactiveshell import InteractiveShell
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from test_magics import run, shell_of

from workbench_magic import Workbench
from workbench_magic.vocabulary.skills import SkillList

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SERVERS / "skills", tmp_path / "skills"))


@pytest.fixture
def ip(
    make_workbench: Callable[..., Workbench], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InteractiveShell]:
    skills = extension_server("skills", "skills_server.py", "--folder", str(folder), protocol="2026-07-28")
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": skills, "plain": stdio_server()})}})
    yield from shell_of(wb, monkeypatch)


def test_workbench_skills_lists_them_with_a_note_for_a_server_without(ip: InteractiveShell) -> None:
    listed = run(ip, "%workbench skills t")
    assert isinstance(listed, SkillList)
    assert repr(listed).splitlines() == [
        "t/s/csv-cleaning: Clean a messy CSV file before analysis (headers, types, missing values). (3 files)",
        "t/s/release-notes: Write release notes from the merged changes of a version. (1 file)",
        "t/plain: no skills (the server offers neither the skills extension nor skill:// resources)",
    ]
    page = listed._repr_html_()
    assert "<code>t/s/csv-cleaning</code>" in page and "neither the skills extension" in page
    assert [s.name for s in run(ip, "%workbench skills t/s")] == ["csv-cleaning", "release-notes"]
    assert repr(run(ip, "%workbench skills")).count("\n") == 2  # every open toolbox: t, opened above
    assert "%workbench skills [TOOLBOX[/SERVER]]" in repr(run(ip, "%workbench help skills"))


def test_workbench_skills_completes_toolboxes_and_servers(ip: InteractiveShell) -> None:
    run(ip, "%workbench open t")
    from workbench_magic.notebook.completion import MagicCompleter

    completer = MagicCompleter(Workbench.shared, lambda: ip.user_ns)
    line = "%workbench skills "
    found = completer.completions(line, len(line))
    assert found is not None and {"t", "t/s", "t/plain"} <= set(found)


def test_chat_cell_takes_skills(ip: InteractiveShell, folder: Path) -> None:
    told: list[str | None] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        told.append(info.instructions)
        return ModelResponse(parts=[TextPart("Done.")])

    ip.user_ns["m"] = FunctionModel(answer)
    turn = run(ip, "%%chat t --model $m --skill t/s/csv-cleaning --skill t/s/release-notes\nClean data.csv")
    assert turn.text == "Done."
    [instructions] = told
    assert instructions is not None
    assert (folder / "csv-cleaning" / "SKILL.md").read_text().strip() in instructions
    assert (folder / "release-notes" / "SKILL.md").read_text().strip() in instructions
