"""serve's Skills extension (SEP-2640): the skills of the downstream servers of open toolboxes,
served upstream under names made unique per toolbox and server, as registered tools are.

A host that declares `io.modelcontextprotocol/skills` lists them (`skills/list`), gets one
(`skills/get`) and reads their files as `skill://` resources; each read goes to the downstream
server that serves the file, and what it answers goes up unchanged, so the digests listed
downstream hold upstream too. A skill found in a server's `skill://` resources (no extension
downstream, so no digests) is listed with `resources: "dynamic"`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError

from workbench_magic.engine.extensions import SKILLS_EXTENSION_ID
from workbench_magic.vocabulary.served import served_skill_name
from workbench_magic.vocabulary.skills import SKILL_FILE

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.skills import SkillInfo

SCHEME = "skill://"


class GetSkillParams(types.RequestParams):
    """`skills/get`'s parameters: the `SKILL.md` URI of the skill."""

    uri: str


@dataclass(frozen=True)
class ServedSkill:
    """A downstream skill as serve lists it: its served name and where it lives downstream."""

    name: str
    info: SkillInfo

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.name}/{SKILL_FILE}"

    def downstream_uri(self, path: str) -> str | None:
        """The downstream URI of the skill's file at `path` (None: not one of its files)."""
        listed = self.info.file(path)
        if listed is not None:
            return listed.uri
        if path == SKILL_FILE:
            return self.info.uri
        return None

    def entry(self) -> dict[str, Any]:
        """Its `skills/list` entry."""
        files = self.info.files
        resources: Any = "dynamic"
        if files and all(f.digest is not None and f.size is not None for f in files):
            resources = [{"uri": f"{SCHEME}{self.name}/{f.name}", "digest": f.digest, "size": f.size} for f in files]
        return {
            "uri": self.uri,
            "frontmatter": {"name": self.name, "description": self.info.description},
            "resources": resources,
            "_meta": {"toolbox": self.info.toolbox, "server": self.info.server, "original_name": self.info.name},
        }


class SkillsForwarding(Extension):
    """The Skills extension of `workbench-magic serve` (see the module's docstring)."""

    identifier = SKILLS_EXTENSION_ID

    def __init__(self, workbench: Workbench) -> None:
        self.workbench = workbench
        self._served: dict[str, ServedSkill] = {}

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", types.PaginatedRequestParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
        )

    async def listing(self) -> list[ServedSkill]:
        """The skills of the open toolboxes' servers, named as served (the names are kept for the
        reads that follow)."""
        served: dict[str, ServedSkill] = {}
        for toolbox in (t.name for t in self.workbench.toolboxes() if t.open):
            for info in await self.workbench.askills(toolbox):
                name = served_skill_name(info.toolbox, info.server, info.name)
                if name in served:  # two names that differ only in what a skill name cannot hold
                    name = served_skill_name(name, hashlib.sha256(info.target.encode()).hexdigest()[:6], "")
                served[name] = ServedSkill(name, info)
        self._served = served
        return list(served.values())

    async def _list(self, context: Any, params: Any) -> dict[str, Any]:
        require_client_extension(context, SKILLS_EXTENSION_ID)
        return {"skills": [skill.entry() for skill in await self.listing()]}

    async def _get(self, context: Any, params: GetSkillParams) -> dict[str, Any]:
        require_client_extension(context, SKILLS_EXTENSION_ID)
        skill = await self._find(params.uri)
        if skill is None or params.uri != skill.uri:
            raise MCPError(code=types.INVALID_PARAMS, message=f"No skill at {params.uri}", data={"uri": params.uri})
        return {"skill": skill.entry()}

    async def _find(self, uri: str) -> ServedSkill | None:
        """The served skill `uri` is in (listing again once when it is not known: a host may read
        what it listed before serve restarted)."""
        name = uri[len(SCHEME) :].partition("/")[0] if uri.startswith(SCHEME) else ""
        if name and name not in self._served:
            await self.listing()
        return self._served.get(name)

    async def read(self, uri: str) -> list[ReadResourceContents] | None:
        """A served skill file, read from its downstream server (None: `uri` is no served skill's)."""
        skill = await self._find(uri)
        if skill is None:
            return None
        downstream = skill.downstream_uri(uri[len(SCHEME) + len(skill.name) + 1 :])
        if downstream is None:
            return None
        result = await self.workbench.aread_resource(f"{skill.info.toolbox}/{skill.info.server}", downstream)
        contents: list[ReadResourceContents] = []
        for content in result.contents:
            mime = getattr(content, "mime_type", None)
            text = getattr(content, "text", None)
            body: str | bytes = text if text is not None else base64.b64decode(getattr(content, "blob", "") or "")
            contents.append(ReadResourceContents(content=body, mime_type=mime))
        return contents


__all__ = ["GetSkillParams", "ServedSkill", "SkillsForwarding"]
