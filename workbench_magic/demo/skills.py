"""The demo's skills (SEP-2640, `io.modelcontextprotocol/skills`): a folder of `SKILL.md` bundles
served by the datasets server, so the embedded demo shows skills offline.

`SkillsFolder` is an MCP SDK server extension: `skills/list` and `skills/get` describe each skill
(its `SKILL.md` URI, its frontmatter, each file with its size and SHA-256 digest), and every file
is a `skill://<name>/<path>` resource, read from disk when asked (so a digest describes what a
read gives). The extension is negotiated on 2026-07-28 connections; a handshake-era client finds
the same skills among the resources.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding, ResourceBinding
from mcp.server.mcpserver.resources.types import FileResource
from mcp.shared.exceptions import MCPError

from workbench_magic.engine.extensions import SKILLS_EXTENSION_ID
from workbench_magic.engine.skills import frontmatter

FOLDER = Path(__file__).parent / "data" / "skills"


class GetSkillParams(types.RequestParams):
    """`skills/get`'s parameters: the skill's `SKILL.md` URI."""

    uri: str


class SkillsFolder(Extension):
    """The skills of `folder`: each subfolder with a `SKILL.md` is one skill, named by it."""

    identifier = SKILLS_EXTENSION_ID

    def __init__(self, folder: Path = FOLDER) -> None:
        self.folder = folder

    def _dirs(self) -> list[Path]:
        return sorted(d for d in self.folder.iterdir() if (d / "SKILL.md").is_file())

    def _entry(self, skill: Path) -> dict[str, Any]:
        files = _files(skill)
        return {
            "uri": f"skill://{skill.name}/SKILL.md",
            "frontmatter": frontmatter((skill / "SKILL.md").read_text(encoding="utf-8")),
            "resources": [
                {
                    "uri": f"skill://{skill.name}/{p.relative_to(skill).as_posix()}",
                    "digest": "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest(),
                    "size": p.stat().st_size,
                }
                for p in files
            ],
        }

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", types.PaginatedRequestParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
        )

    def resources(self) -> Sequence[ResourceBinding]:
        bindings = []
        for skill in self._dirs():
            for path in _files(skill):
                relative = path.relative_to(skill).as_posix()
                mime = "text/markdown" if path.suffix == ".md" else mimetypes.guess_type(path.name)[0] or "text/plain"
                resource = FileResource(
                    uri=f"skill://{skill.name}/{relative}",
                    name=f"{skill.name}/{relative}",
                    path=path.resolve(),
                    mime_type=mime,
                )
                bindings.append(ResourceBinding(resource))
        return bindings

    async def _list(self, context: Any, params: Any) -> dict[str, Any]:
        return {"skills": [self._entry(d) for d in self._dirs()]}

    async def _get(self, context: Any, params: GetSkillParams) -> dict[str, Any]:
        for skill in self._dirs():
            if params.uri == f"skill://{skill.name}/SKILL.md":
                return {"skill": self._entry(skill)}
        raise MCPError(code=types.INVALID_PARAMS, message=f"No skill at {params.uri}")


def _files(skill: Path) -> list[Path]:
    """A skill's files, in order."""
    return sorted(p for p in skill.rglob("*") if p.is_file())


__all__ = ["FOLDER", "GetSkillParams", "SkillsFolder"]
