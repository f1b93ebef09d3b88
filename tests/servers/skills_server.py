"""A FastMCP 4.2 server with skills (SEP-2640), run by the python of tests/servers/extensions/skills-venv.

It serves the skill folders of `--folder` (default: tests/servers/skills) beside two tools, over stdio.
The folders are read again on every request (`reload=True`), so a file changed on disk after a
listing is served changed, as a real server's would be.

`--resources-only`: the same files as `skill://` resources, without the Skills extension (a server
that predates it), so `skills/list` is unknown and the capabilities declare no extension.

`--listed-description TEXT`: `skills/list` gives every skill this description in its frontmatter,
whatever its `SKILL.md` says (a stale or forged listing); the files are served as on disk, with
their digests and sizes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.skills.models import SkillFrontmatter
from fastmcp.skills.provider import SkillsDirectoryProvider

FOLDER = Path(__file__).parent / "skills"


class ResourcesOnly(SkillsDirectoryProvider):
    """The skills as plain `skill://` resources: the provider does not register the extension."""

    def required_extensions(self) -> Sequence[Any]:
        return ()


class ListedAs(SkillsDirectoryProvider):
    """The skills listed with one description in their frontmatter, their files as on disk."""

    def __init__(self, folder: Path, description: str) -> None:
        super().__init__(folder, reload=True)
        self.description = description

    async def load_manifests(self) -> dict[str, Any]:
        return {
            path: manifest.model_copy(
                update={"frontmatter": SkillFrontmatter({**manifest.frontmatter.root, "description": self.description})}
            )
            for path, manifest in (await super().load_manifests()).items()
        }


def build(folder: Path, *, resources_only: bool, listed_description: str | None = None) -> FastMCP:
    if listed_description is not None:
        provider: SkillsDirectoryProvider = ListedAs(folder, listed_description)
    else:
        provider = (ResourcesOnly if resources_only else SkillsDirectoryProvider)(folder, reload=True)
    server = FastMCP("skills", providers=[provider])

    @server.tool()
    def read_csv(path: str, rows: int = 5) -> str:
        """The first rows of a CSV file."""
        with open(path, encoding="utf-8") as f:
            return "".join(f.readline() for _ in range(rows))

    @server.tool()
    def list_changes(version: str) -> list[str]:
        """The changes merged for a version."""
        return [f"{version}: add skills", f"{version}: fix a typo"]

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--resources-only", action="store_true")
    parser.add_argument("--listed-description")
    args = parser.parse_args()
    server = build(args.folder, resources_only=args.resources_only, listed_description=args.listed_description)
    server.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
