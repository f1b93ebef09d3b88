"""serve's Skills extension (SEP-2640): the skills of the downstream servers of open toolboxes,
each listed as its server lists it and made unique by its URI's path, where it lives:
`skill://{toolbox}/{server}/{name}/SKILL.md`, its files `skill://{toolbox}/{server}/{name}/{path}`.

A host that declares `io.modelcontextprotocol/skills` lists them (`skills/list`), gets one by its
URI (`skills/get`) and reads their files as `skill://` resources. The frontmatter listed is the
downstream one (SEP-2640: the final segment before `SKILL.md` is its name), and each read goes to
the downstream server that serves the file and comes up unchanged, so a host that checks a skill's
frontmatter and digests against the listing finds them alike. A skill found in a server's
`skill://` resources (no extension downstream, so no digests) is listed with `resources: "dynamic"`.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError

from workbench_magic.engine.extensions import SKILLS_EXTENSION_ID
from workbench_magic.vocabulary.skills import SKILL_FILE

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.skills import SkillInfo

logger = logging.getLogger("workbench_magic")

SCHEME = "skill://"


class GetSkillParams(types.RequestParams):
    """`skills/get`'s parameters (SEP-2640): the `SKILL.md` URI of the skill, its only key."""

    uri: str


def skill_folder(toolbox: str, server: str, name: str) -> str:
    """The served URI of a skill's folder: `skill://{toolbox}/{server}/{name}/` (each segment
    percent-encoded; toolbox and server names, and a skill name, need none)."""
    return SCHEME + "/".join(quote(part, safe="") for part in (toolbox, server, name)) + "/"


@dataclass(frozen=True)
class ServedSkill:
    """A downstream skill as serve lists it: where it lives downstream, and its served URIs."""

    info: SkillInfo

    @property
    def folder(self) -> str:
        """Its served folder URI (`skill_folder`)."""
        return skill_folder(self.info.toolbox, self.info.server, self.info.name)

    @property
    def uri(self) -> str:
        """Its served `SKILL.md` URI."""
        return self.folder + SKILL_FILE

    def served_uri(self, path: str) -> str:
        """The served URI of its file at `path`."""
        return self.folder + quote(path, safe="/")

    def downstream_uri(self, path: str) -> str | None:
        """The downstream URI of the skill's file at `path` (None: not one of its files)."""
        listed = self.info.file(path)
        if listed is not None:
            return listed.uri
        if path == SKILL_FILE:
            return self.info.uri
        return None

    def entry(self) -> dict[str, Any]:
        """Its `skills/list` entry: the frontmatter as listed downstream, its files at served URIs."""
        files = self.info.files
        resources: Any = "dynamic"
        if files and all(f.digest is not None and f.size is not None for f in files):
            resources = [{"uri": self.served_uri(f.name), "digest": f.digest, "size": f.size} for f in files]
        return {
            "uri": self.uri,
            "frontmatter": {"name": self.info.name, "description": self.info.description},
            "resources": resources,
            "_meta": {"toolbox": self.info.toolbox, "server": self.info.server, "original_name": self.info.name},
        }


class SkillsForwarding(Extension):
    """The Skills extension of `workbench-magic serve` (see the module's docstring)."""

    identifier = SKILLS_EXTENSION_ID

    def __init__(self, workbench: Workbench) -> None:
        self.workbench = workbench
        self._served: dict[str, ServedSkill] = {}
        """The latest listing's skills, by served folder URI."""

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", types.PaginatedRequestParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
        )

    async def listing(self) -> list[ServedSkill]:
        """The skills of the open toolboxes' servers (kept, by served folder, for the reads that follow)."""
        served: dict[str, ServedSkill] = {}
        for toolbox in (t.name for t in self.workbench.toolboxes() if t.open):
            for info in await self.workbench.askills(toolbox):
                skill = ServedSkill(info)
                if skill.folder in served:  # one server listing two skills of one name: the SEP allows none
                    logger.warning("%s lists two skills named %r; serve lists the first", info.server, info.name)
                    continue
                served[skill.folder] = skill
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
        folder = _folder_of(uri)
        if folder is not None and folder not in self._served:
            await self.listing()
        return self._served.get(folder) if folder is not None else None

    async def read(self, uri: str) -> list[ReadResourceContents] | None:
        """A served skill file, read from its downstream server (None: `uri` is no served skill's)."""
        skill = await self._find(uri)
        if skill is None:
            return None
        downstream = skill.downstream_uri(unquote(uri[len(skill.folder) :]))
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


def _folder_of(uri: str) -> str | None:
    """The served folder URI `uri` is under (`skill://{toolbox}/{server}/{name}/`), or None when it
    is no served skill's (not `skill://`, or fewer than three segments before a file's path)."""
    if not uri.startswith(SCHEME):
        return None
    parts = uri[len(SCHEME) :].split("/", 3)
    if len(parts) < 4 or not all(parts[:3]) or not parts[3]:
        return None
    return SCHEME + "/".join(parts[:3]) + "/"


__all__ = ["GetSkillParams", "ServedSkill", "SkillsForwarding", "skill_folder"]
