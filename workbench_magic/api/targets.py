"""Targets as the api reads them: a tool identifier, a toolbox or ``toolbox/server``, each spelling
parsed by vocabulary/identifiers.py (imported when first parsed: pydantic is not imported with the api).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import NotFoundError

if TYPE_CHECKING:
    from workbench_magic.vocabulary.identifiers import ToolIdentifier

__all__ = ["names_one", "parse_identifier", "parse_target", "server_target", "toolbox_target"]


def parse_identifier(value: Any) -> ToolIdentifier:
    from workbench_magic.vocabulary.identifiers import parse_identifier as parse

    return parse(value)


def parse_target(value: str | None) -> tuple[str | None, str | None]:
    from workbench_magic.vocabulary.identifiers import parse_target as parse

    return parse(value)


def names_one(text: str) -> bool:
    """Whether a string target names one tool or skill (``toolbox/server/name``), not a toolbox or server."""
    return len(text.strip().split("/" if "/" in text else "__", 2)) == 3


def toolbox_target(target: str) -> tuple[str, str | None]:
    """`toolbox` or `toolbox/server`, or NotFoundError."""
    toolbox, server = parse_target(target)
    if toolbox is None:
        raise NotFoundError("Name a toolbox or toolbox/server")
    return toolbox, server


def server_target(target: str) -> tuple[str, str]:
    """`toolbox/server`, or NotFoundError."""
    toolbox, server = parse_target(target)
    if toolbox is None or server is None:
        raise NotFoundError(f"Name the server: toolbox/server, not {target!r}")
    return toolbox, server
