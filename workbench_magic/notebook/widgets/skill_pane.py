"""The Skills pane of the explorer: a server's skills (SEP-2640), each with its description, its
files and its instructions rendered as Markdown.

Core ipywidgets only; widgets are touched on the kernel thread. Selecting a skill reads it whole
(`Workbench.skill`), so every file is checked against its listed digest: a mismatch shows as one
red line naming the file.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.notebook.widgets.pane import Pane, display_output, html_output, show_error
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.skills import Skill, SkillInfo

DIGEST_SHOWN = 12
"""Hex digits of a file's digest the files table shows (the whole digest is its tooltip)."""
LABEL_LENGTH = 96
"""Characters of a skill's line in the list; a longer description is cut with `…` (the info shows it whole)."""


def skill_label(info: SkillInfo) -> str:
    """The skill's line in the list: its name and its description, cut to `LABEL_LENGTH`."""
    label = f"{info.name} — {' '.join(info.description.split())}"
    if len(label) <= LABEL_LENGTH:
        return label
    cut = label[: LABEL_LENGTH - 1]
    space = cut.rfind(" ")
    if space > len(info.name) + 3:  # at a word's end, where the description has one
        cut = cut[:space]
    return cut.rstrip(" ,.;:—") + "…"


def files_table_html(info: SkillInfo) -> str:
    """A skill's files: path, size and digest (as listed)."""
    rows = []
    for f in info.files:
        size = f"{f.size:,} bytes" if f.size is not None else "size not listed"
        digest = f.digest or "no digest"
        short = digest if f.digest is None else digest[: len("sha256:") + DIGEST_SHOWN] + "…"
        rows.append(
            f"<tr><td><code>{html.escape(f.name)}</code></td><td>{size}</td>"
            f"<td title='{html.escape(digest, quote=True)}'><code>{html.escape(short)}</code></td></tr>"
        )
    head = "<tr><th>file</th><th>size</th><th>digest</th></tr>"
    return f"<table class='wb-skill-files'>{head}{''.join(rows)}</table>" if rows else "<i>no files listed</i>"


def without_frontmatter(text: str) -> str:
    """`SKILL.md` without its YAML frontmatter (the name and description the info line shows):
    Markdown would render it as a rule and a paragraph."""
    if text.startswith("---"):
        head, marker, body = text[3:].partition("\n---")
        if marker and "\n" in head:
            return body.partition("\n")[2].lstrip("\n")
    return text


class SkillPane(Pane):
    """The skills of one server (`show(toolbox, server)`).

    Selecting a skill shows its description and files, reads it (digests checked) and renders its
    instructions as Markdown in `result_pane`; `skill` is the last one read, `cell`/`copy_as_cell()`
    the cell that reads it. A server with no skills says why under the hint. CSS classes:
    `wb-skills` (root), `wb-skill-hint`, `-select`, `-info`, `-copy`, `-refresh`, `-result`,
    `-cell`; the files table is `wb-skill-files`.
    """

    result_pane: w.Output
    noun = "skills"
    # a list is as wide as its longest option unless it may shrink: within the pane, it clips them
    css = ".wb-skill-select select { min-width: 0; }"

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench, cell_height="4em")
        self.skills: list[SkillInfo] = []
        self.selected: SkillInfo | None = None
        self.skill: Skill | None = None
        # width auto fills the pane; 100% plus a widget's margins ran past its right edge
        self.select = w.Select(rows=6, layout=w.Layout(width="auto", max_width="100%"))
        self.info = w.HTML(layout=w.Layout(width="auto", max_width="100%"))
        self.result_pane = w.Output(layout=w.Layout(border="1px solid #ddd", min_height="2em", padding="4px"))
        self.select.observe(self._guard(self._on_select), names="value")
        buttons = w.HBox([self.copy_button, self.refresh_button])
        self._finish(
            "wb-skills",
            "wb-skill",
            [self.hint, self.select, self.info, buttons, self.result_pane, self.cell_text],
            {"select": self.select, "info": self.info},
        )

    def _on_show(self) -> None:
        self.result_pane.outputs = ()
        self.refresh()

    def refresh(self) -> None:
        """List the skills again, keeping the selection where it can (it is read again)."""
        if self.closed:
            return
        keep = self.selected.name if self.selected is not None else None
        notes: tuple[str, ...] = ()

        def listing(target: str) -> list[SkillInfo]:
            nonlocal notes
            found = self.workbench.skills(target)
            notes = getattr(found, "notes", ())
            return list(found)

        def summary(found: list[SkillInfo]) -> str:
            return f"{len(found)} skill{'s' if len(found) != 1 else ''}"

        self.skills = self._listing(listing, summary)
        if notes:
            self.hint.value += "".join(f"<div class='wb-skill-note'><i>{html.escape(n)}</i></div>" for n in notes)
        index = next((i for i, s in enumerate(self.skills) if s.name == keep), None)
        options = [(skill_label(s), i) for i, s in enumerate(self.skills)]
        self._choose(self.select, options, index)

    def _on_select(self, change: Any = None) -> None:
        index = self.select.value
        chosen = self.skills[index] if index is not None else None
        self.selected = chosen
        if chosen is None:
            self.info.value = ""
            self.result_pane.outputs = ()
            return
        how = "skills extension" if chosen.source == "extension" else "skill:// resources"
        self.info.value = (
            f"<div><b>{html.escape(chosen.name)}</b> <code>{html.escape(chosen.uri)}</code> · {how}</div>"
            f"<div style='white-space:pre-wrap;color:#444'>{html.escape(chosen.description.strip())}</div>"
            f"{files_table_html(chosen)}"
        )
        self.read()

    def read(self) -> Skill | None:
        """Read the selected skill (every file checked against its digest) and render its
        instructions."""
        if self.selected is None or self.target is None:
            show_error(self.result_pane, "Select a skill first")
            return None
        from IPython.display import Markdown

        self.skill = None
        self.result_pane.outputs = ()
        self.skill = self.workbench.skill(self.target, self.selected.name)
        self.result_pane.outputs = (
            html_output(
                f"<div class='wb-skill-status'><b>{html.escape(self.selected.uri)}</b> · "
                f"{len(self.skill.files)} files, digests checked</div>",
                self.selected.uri,
            ),
            display_output(Markdown(without_frontmatter(self.skill.instructions))),
        )
        self.copy_button.disabled = False
        return self.skill

    def copy_as_cell(self) -> str:
        """The cell that reads the selected skill (`wb.skill`)."""
        if self.selected is None or self.target is None:
            raise WorkbenchError("Select a skill first: the cell reads it")
        return self._show_cell(
            "from workbench_magic import Workbench\n\nwb = Workbench.shared()\n"
            f"skill = wb.skill({json.dumps(self.target)}, {json.dumps(self.selected.name)})\nskill"
        )
