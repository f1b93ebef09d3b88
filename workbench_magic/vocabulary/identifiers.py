"""Tool identifiers: `ToolIdentifier` and the parsing of every accepted spelling.

A tool is named by three parts, ``{toolbox, server, name}``. Accepted spellings:

- ``"dev/filesystem/read_file"``: split at the first two ``/`` (the tool name may contain
  ``/`` and ``.``);
- ``"dev__filesystem__read_file"``: split at the first two ``__`` (the tool name may
  contain ``__``); used when the string has no ``/`` at all;
- the mapping ``{"toolbox": ..., "server": ..., "name": ...}``;
- a `ToolIdentifier` (or any object with an ``identifier`` attribute holding one, such as a
  ``ToolInfo``).

Every failure raises `InvalidIdentifierError` (a `ValueError`) with a short message that
starts with ``Invalid tool identifier:``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from workbench_magic.vocabulary.errors import InvalidIdentifierError, invalid_identifier

__all__ = ["FIELDS", "ToolIdentifier", "parse_identifier", "parse_target", "tool_key"]

#: The fields of an identifier, in order.
FIELDS: tuple[str, str, str] = ("toolbox", "server", "name")

_EXPECTED = "(expected 'toolbox/server/tool' or 'toolbox__server__tool')"
_MISSING: Any = object()


_SHOWN = 60


def _fail(detail: str) -> InvalidIdentifierError:
    return invalid_identifier(detail)


def _show(value: object) -> str:
    """`repr(value)`, shortened so that an error message stays one readable line."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 4] + "...'"


def _check_part(field: str, value: object) -> str:
    """The part without surrounding blanks (they would not survive ``str()`` and re-parsing)."""
    if not isinstance(value, str):
        raise _fail(f"{field} must be a string")
    part = value.strip()
    if not part:
        raise _fail(f"{field} cannot be empty")
    return part


def _split(text: str) -> list[str]:
    """Split at the first two ``/`` when there is one, else at the first two ``__``."""
    return text.split("/" if "/" in text else "__", 2)


def _from_string(value: str) -> tuple[str, str, str]:
    text = value.strip()
    parts = _split(text)
    if len(parts) < 3:
        raise _fail(f"{_show(text)} {_EXPECTED}")
    return _check_part("toolbox", parts[0]), _check_part("server", parts[1]), _check_part("name", parts[2])


def _from_mapping(data: Mapping[Any, Any]) -> tuple[str, str, str]:
    if "tool" in data:
        raise _fail("use 'name' instead of 'tool' for the tool's name")
    for key in data:
        if key not in FIELDS:
            raise _fail(f"unknown field {_show(key)}")
    parts: list[str] = []
    for field in FIELDS:
        if field not in data:
            raise _fail(f"missing field {field!r}")
        parts.append(_check_part(field, data[field]))
    return parts[0], parts[1], parts[2]


def _wrong_type(value: object) -> InvalidIdentifierError:
    return _fail(
        f"expected a string like 'toolbox/server/tool', a mapping or a ToolIdentifier, got {type(value).__name__}"
    )


class ToolIdentifier(BaseModel):
    """The structured name of one tool: ``{toolbox, server, name}``.

    Frozen (hashable, equal by value) and strict: every field must be a non-empty string and
    no other field is accepted. Bad input raises `InvalidIdentifierError`, never a pydantic
    ``ValidationError``. When used as a field of another pydantic model, every spelling of
    `parse_identifier` is accepted there too (errors then surface inside that model's
    ``ValidationError``).

    Attributes:
        toolbox: the toolbox's name.
        server: the server's name in the toolbox.
        name: the tool's name on the server (it may contain ``/``, ``.`` and ``__``).

    Example:
        ```python
        ident = ToolIdentifier(toolbox="dev", server="filesystem", name="read_file")
        ident.key  # 'dev__filesystem__read_file'
        str(ident)  # 'dev/filesystem/read_file'
        ToolIdentifier.parse("dev__filesystem__read_file") == ident  # True
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    toolbox: str
    server: str
    name: str

    def __init__(
        self,
        toolbox: str = _MISSING,
        server: str = _MISSING,
        name: str = _MISSING,
        **extra: Any,
    ) -> None:
        """Build from keywords (or positionally: ``ToolIdentifier("dev", "fs", "read")``).

        Args:
            toolbox: the toolbox's name.
            server: the server's name.
            name: the tool's name.
            **extra: any other field, refused (`Invalid tool identifier: unknown field 'x'`).

        Raises:
            InvalidIdentifierError: a field is missing, empty, not a string, or unknown.
        """
        data: dict[str, Any] = {
            key: value for key, value in zip(FIELDS, (toolbox, server, name), strict=True) if value is not _MISSING
        }
        data.update(extra)
        tb, sv, nm = _from_mapping(data)
        super().__init__(toolbox=tb, server=sv, name=nm)

    # As a field of another model, pydantic would call a custom __init__ with the raw input as
    # keywords (a TypeError for a mapping with non-string keys); marked as a base __init__, the
    # field goes through `_coerce` instead, which accepts every spelling and reports the rest.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if isinstance(data, ToolIdentifier):
            return data
        if isinstance(data, str):
            parts = _from_string(data)
        elif isinstance(data, Mapping):
            parts = _from_mapping(data)
        elif isinstance(ident := getattr(data, "identifier", None), ToolIdentifier):
            return ident.model_dump()
        else:
            raise _wrong_type(data)
        return dict(zip(FIELDS, parts, strict=True))

    def __str__(self) -> str:
        """``toolbox/server/name``."""
        return f"{self.toolbox}/{self.server}/{self.name}"

    @property
    def key(self) -> str:
        """``toolbox__server__name``: the flat name used for dynamically registered tools."""
        return tool_key(self.toolbox, self.server, self.name)

    @classmethod
    def parse(cls, value: str | Mapping[str, Any] | ToolIdentifier) -> ToolIdentifier:
        """Same as `parse_identifier`.

        Args:
            value: any accepted spelling (see `parse_identifier`).

        Returns:
            The identifier.

        Raises:
            InvalidIdentifierError: `value` cannot be parsed.
        """
        return parse_identifier(value)


def parse_identifier(value: str | Mapping[str, Any] | ToolIdentifier) -> ToolIdentifier:
    """Parse any accepted spelling of a tool identifier.

    ``"dev/filesystem/read_file"`` (split at the first two ``/``), ``"dev__filesystem__read_file"``
    (split at the first two ``__``; only when the string has no ``/``), a mapping with exactly
    the keys ``toolbox``, ``server`` and ``name``, a `ToolIdentifier` (returned as is) or an
    object whose ``identifier`` attribute is a `ToolIdentifier`. Surrounding whitespace of a
    string is stripped.

    Args:
        value: the spelling to parse.

    Returns:
        The identifier.

    Raises:
        InvalidIdentifierError: `value` cannot be parsed; a short message, e.g.
            ``Invalid tool identifier: server cannot be empty``.
    """
    if isinstance(value, ToolIdentifier):
        return value
    if isinstance(value, str):
        return _parse_string(value)
    if isinstance(value, Mapping):
        return _checked(*_from_mapping(value))
    ident = getattr(value, "identifier", None)
    if isinstance(ident, ToolIdentifier):
        return ident
    raise _wrong_type(value)


@functools.lru_cache(maxsize=1024)
def _parse_string(value: str) -> ToolIdentifier:
    """Strings name the same few tools over and over (calls in a loop): parse each once."""
    return _checked(*_from_string(value))


@functools.lru_cache(maxsize=1024)
def _checked(toolbox: str, server: str, name: str) -> ToolIdentifier:
    """The identifier of parts `_from_string` or `_from_mapping` has checked (served calls name the
    same few tools over and over; pydantic's validation would check them twice more)."""
    return ToolIdentifier.model_construct(toolbox=toolbox, server=server, name=name)


def parse_target(value: str | None) -> tuple[str | None, str | None]:
    """Parse a toolbox or server target: ``"dev"``, ``"dev/server"`` or ``"dev__server"``.

    A full tool identifier (``"dev/server/tool"``) is accepted too and gives its first two parts;
    the caller decides whether that is allowed.

    Args:
        value: the target, or None.

    Returns:
        ``(toolbox, server)``; ``server`` is None for a bare toolbox and both are None for None or
        an empty string.

    Raises:
        InvalidIdentifierError: an empty part (``Invalid tool identifier: server cannot be empty``)
            or a non-string.
    """
    if value is None:
        return None, None
    if not isinstance(value, str):
        raise _fail(f"expected a toolbox name or 'toolbox/server', got {type(value).__name__}")
    text = value.strip()
    if not text:
        return None, None
    parts = _split(text)
    toolbox = _check_part("toolbox", parts[0])
    if len(parts) == 1:
        return toolbox, None
    return toolbox, _check_part("server", parts[1])


def tool_key(toolbox: str, server: str, name: str) -> str:
    """``toolbox__server__name``, the flat spelling of an identifier.

    Args:
        toolbox: the toolbox's name.
        server: the server's name.
        name: the tool's name.

    Returns:
        The parts joined with ``__``.

    Raises:
        InvalidIdentifierError: a part is empty or not a string.
    """
    return "__".join((_check_part("toolbox", toolbox), _check_part("server", server), _check_part("name", name)))
