"""The explorer's Skills pane at the Python level, against the FastMCP skills server (SEP-2640)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SERVERS, extension_server, stdio_server, toolbox
from test_widgets_panes import outputs_text, run_in_shell, showing

from workbench_magic import Workbench
from workbench_magic.notebook.widgets.explorer import TABS, Explorer
from workbench_magic.notebook.widgets.skill_pane import SkillPane, without_frontmatter

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SERVERS / "skills", tmp_path / "skills"))


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench], folder: Path) -> Workbench:
    wb = make_workbench(
        {
            "toolboxes": {
                "k": toolbox(
                    {
                        "docs": extension_server("skills", "skills_server.py", "--folder", str(folder)),
                        "plain": stdio_server(),
                    }
                )
            }
        }
    )
    wb.open("k")
    return wb


def test_the_skills_tab_comes_after_resources() -> None:
    assert TABS.index("Skills") == TABS.index("Resources") + 1


def test_selecting_a_skill_shows_its_files_and_renders_its_instructions(wb: Workbench, folder: Path) -> None:
    with showing(SkillPane, wb, "k/docs") as pane:
        assert [s.name for s in pane.skills] == ["csv-cleaning", "release-notes"]
        assert "2 skills" in pane.hint.value
        pane.select.value = 0
        assert "references/guide.md" in pane.info.value and "scripts/normalise.py" in pane.info.value
        assert pane.skill is not None and pane.skill.name == "csv-cleaning"
        shown = outputs_text(pane.result_pane)
        body = without_frontmatter((folder / "csv-cleaning" / "SKILL.md").read_text())
        assert body.strip() and body.strip() in shown
        assert "digests checked" in shown
        assert any("text/markdown" in o.get("data", {}) for o in pane.result_pane.outputs)


def test_a_file_changed_after_listing_is_one_red_line_naming_it(wb: Workbench, folder: Path) -> None:
    with showing(SkillPane, wb, "k/docs") as pane:
        (folder / "csv-cleaning" / "references" / "guide.md").write_text("changed on disk\n")
        pane.select.value = 0
        shown = outputs_text(pane.result_pane)
        assert "wb-error" in shown and "references/guide.md" in shown
        pane.refresh()  # listed again: the new digest holds
        assert pane.skill is not None and pane.skill.files["references/guide.md"] == "changed on disk\n"


def test_a_server_without_skills_says_why(wb: Workbench) -> None:
    with showing(SkillPane, wb, "k/plain") as pane:
        assert pane.skills == []
        assert "wb-skill-note" in pane.hint.value and "neither" in pane.hint.value


def test_the_copied_cell_reads_the_skill(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    with showing(SkillPane, wb, "k/docs") as pane:
        pane.select.value = 1
        cell = pane.copy_as_cell()
        assert 'wb.skill("k/docs", "release-notes")' in cell
        assert run_in_shell(wb, monkeypatch, cell).name == "release-notes"


def test_the_explorer_has_a_skills_pane_and_names_a_servers_extensions(wb: Workbench) -> None:
    explorer = Explorer(wb, "k")
    try:
        assert isinstance(explorer.skills, SkillPane)
        explorer.select("k/docs/read_csv")
        assert "<span class='wb-server-extensions'>extensions skills" in explorer.server_info.value
        explorer.select("k/plain/echo")
        assert "wb-server-extensions" not in explorer.server_info.value
    finally:
        explorer.close()


def test_the_skill_list_fits_its_pane_and_a_long_description_is_cut(
    make_workbench: Callable[..., Workbench], folder: Path
) -> None:
    """The list is as wide as the pane (not wider: no right edge cut off), and an option's
    description is cut to one short line with an ellipsis (the info under the list has it whole)."""
    skill = folder / "csv-cleaning" / "SKILL.md"
    long = "Clean a messy CSV file " + "and then some more words " * 20
    short = "description: Clean a messy CSV file before analysis (headers, types, missing values)."
    skill.write_text(skill.read_text().replace(short, f"description: {long.strip()}"))
    wb = make_workbench(
        {"toolboxes": {"k": toolbox({"docs": extension_server("skills", "skills_server.py", "--folder", str(folder))})}}
    )
    wb.open("k")
    with showing(SkillPane, wb, "k/docs") as pane:
        layout = pane.select.layout
        assert layout.width != "100%" and layout.max_width == "100%"  # 100% plus its margins ran past the edge
        labels = [label for label, _ in pane.select.options]
        cut = next(label for label in labels if label.startswith("csv-cleaning"))
        assert cut.endswith("…") and len(cut) <= 100, cut
        pane.select.value = 0
        assert long.strip()[:60] in pane.info.value
