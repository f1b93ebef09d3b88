"""Skills (SEP-2640, `io.modelcontextprotocol/skills`): `SKILL.md` bundles a server serves beside
its tools, to teach an agent how to use them.

`SkillInfo` is a listed skill (`wb.skills`), `Skill` a read one (`wb.skill`): its instructions (the
`SKILL.md` text, frontmatter and all) and its files, each checked against the digest its listing
gave. `SkillList` is a listing with the lines that say why it is short (a server with neither the
extension nor `skill://` resources).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape

SKILL_FILE = "SKILL.md"
"""The file that holds a skill's instructions."""


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill, as its server listed it.

    Attributes:
        name: its path in the skill (`SKILL.md`, `scripts/run.py`).
        uri: its resource URI (`skill://csv-cleaning/scripts/run.py`).
        size: its size in bytes, as listed (None when the server listed none).
        digest: its digest, as listed (`sha256:<hex>`; None when the server listed none: `skill://`
            resources found without the extension).
    """

    name: str
    uri: str
    size: int | None = None
    digest: str | None = None


@dataclass(frozen=True)
class SkillInfo:
    """A skill a server lists: `.name`, `.description`, `.uri` (its `SKILL.md`), `.files`.

    `source` says how it was found: `extension` (`skills/list`) or `resources` (`skill://`
    resources of a server that does not negotiate the extension)."""

    toolbox: str
    server: str
    name: str
    description: str
    uri: str
    files: tuple[SkillFile, ...] = ()
    source: str = "extension"

    @property
    def target(self) -> str:
        """`toolbox/server/name`, as `wb.chat(skills=[...])` takes it."""
        return f"{self.toolbox}/{self.server}/{self.name}"

    def file(self, name: str) -> SkillFile | None:
        """The listed file at path `name`, if any."""
        return next((f for f in self.files if f.name == name), None)

    def __repr__(self) -> str:
        found = "; skill:// resources, no digests" if self.source == "resources" else ""
        return f"{self.target}: {self.description} ({_count(len(self.files), 'file')}{found})"


class SkillList(list[SkillInfo]):
    """`wb.skills()`: the skills found, one line each; `.notes` says why a server listed none."""

    def __init__(self, skills: Iterable[SkillInfo] = (), notes: Iterable[str] = ()) -> None:
        super().__init__(skills)
        self.notes: tuple[str, ...] = tuple(notes)

    def __repr__(self) -> str:
        lines = [repr(s) for s in self] + list(self.notes)
        return "\n".join(lines) or "(no skills)"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{escape(s.target)}</code></td><td>{escape(s.description)}</td><td>{len(s.files)}</td></tr>"
            for s in self
        )
        notes = "".join(f"<p><i>{escape(n)}</i></p>" for n in self.notes)
        if not rows:
            return notes or "<p>(no skills)</p>"
        return f"<table><tr><th>skill</th><th>description</th><th>files</th></tr>{rows}</table>{notes}"


@dataclass(frozen=True)
class Skill:
    """A skill read whole (`wb.skill`), every file checked against its listed digest.

    Attributes:
        info: the skill as listed (`SkillInfo`).
        instructions: the `SKILL.md` text, frontmatter and all (what a chat gives the model).
        files: every file of the skill, `SKILL.md` too: path -> text, or bytes for a binary file.
    """

    info: SkillInfo
    instructions: str
    files: Mapping[str, str | bytes] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def description(self) -> str:
        return self.info.description

    def __repr__(self) -> str:
        files = _count(len(self.files), "file")
        return f"<Skill {self.info.target}: {files}, {len(self.instructions)} characters of instructions>"

    def as_instructions(self) -> str:
        """What a model is told to follow: its `SKILL.md` whole, under a line that names it.

        Its other files stay in `files`."""
        return f"Follow the skill {self.name} ({self.info.target}):\n\n{self.instructions.strip()}"

    def _repr_markdown_(self) -> str:
        return self.instructions


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


__all__ = ["SKILL_FILE", "Skill", "SkillFile", "SkillInfo", "SkillList"]
