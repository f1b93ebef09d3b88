"""A batch's checkpoint (`wb.map(..., checkpoint=PATH)`): each finished row, written as it ends, so a
batch that was interrupted, killed or lost its server resumes where it stopped.

The file is JSON Lines: a first line that says what it is and which tool it is of, then one line per
finished row: its key, its index, its arguments, its outcome (`ok`, `tool error` or `raised`), the
tool's answer as on the wire (`result`) and, for a row whose call raised, what it raised (`error`,
`error_type`). Each line is written whole and flushed when its row ends: a process killed mid-line
leaves a last line without its newline, which reading drops (that row runs again). A key written
twice (a failed row run again, `retry_failed`) counts as its last line says.

A row's key is its `key` column, or what `key(row)` returns, else its index and a hash of its
arguments: rows that moved or changed are new rows. Plain data: no SDK import.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from workbench_magic.vocabulary import errors as error_types
from workbench_magic.vocabulary.errors import UsageError, WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.results import ToolResult

FORMAT = "workbench-magic checkpoint 1"
Outcome = Literal["ok", "tool error", "raised"]
RowKey = str | Callable[[Mapping[str, Any]], Any] | None
"""How rows are told apart: a column's name, a function of the row, or None (index and arguments)."""


@dataclass(frozen=True)
class RowRecord:
    """One finished row as the checkpoint keeps it."""

    key: str
    index: int
    arguments: dict[str, Any]
    outcome: Outcome
    result: dict[str, Any]
    """The tool's answer (`CallToolResult`) as on the wire; for a row that raised, an error result
    whose text is what was raised."""
    error: str | None = None
    error_type: str | None = None
    """The name of the `WorkbenchError` class a raised row raised."""

    def to_line(self) -> str:
        data = {
            "key": self.key,
            "index": self.index,
            "arguments": self.arguments,
            "outcome": self.outcome,
            "result": self.result,
        }
        if self.error is not None:
            data |= {"error": self.error, "error_type": self.error_type}
        return json.dumps(data, ensure_ascii=False, default=str) + "\n"

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> RowRecord:
        return cls(
            key=str(data["key"]),
            index=int(data["index"]),
            arguments=dict(data.get("arguments") or {}),
            outcome=data["outcome"],
            result=dict(data.get("result") or {}),
            error=data.get("error"),
            error_type=data.get("error_type"),
        )


def record_of(
    key: str, index: int, arguments: Mapping[str, Any], result: ToolResult, error: WorkbenchError | None
) -> RowRecord:
    """The record of a finished row: its answer, or (`error`) what its call raised."""
    outcome: Outcome = "raised" if error is not None else "tool error" if result.is_error else "ok"
    wire = result.raw.model_dump(by_alias=True, mode="json", exclude_none=True)
    if error is None:
        return RowRecord(key, index, dict(arguments), outcome, wire)
    return RowRecord(key, index, dict(arguments), outcome, wire, str(error), type(error).__name__)


def restored(ident: ToolIdentifier, record: RowRecord) -> tuple[ToolResult, WorkbenchError | None]:
    """A finished row as a batch holds it: its `ToolResult`, and what it raised (as the error class
    it raised, where that class takes its text alone; else a `WorkbenchError`)."""
    from mcp_types import CallToolResult

    from workbench_magic.vocabulary.results import ToolResult

    raw = CallToolResult.model_validate(record.result, by_name=False)
    result = ToolResult(identifier=ident, raw=raw, arguments=record.arguments)
    if record.outcome != "raised":
        return result, None
    kind = getattr(error_types, record.error_type or "", None)
    error: WorkbenchError = WorkbenchError(record.error or "")
    if isinstance(kind, type) and issubclass(kind, WorkbenchError):
        try:
            error = kind(record.error or "")
        except TypeError:  # a class that needs more than its text
            pass
    return result, error


def row_key(index: int, arguments: Mapping[str, Any], row: Mapping[str, Any], key: RowKey) -> str:
    """The key of a row: `row[key]` for a column name, `key(row)` for a function, else its index
    and a hash of its arguments."""
    if key is None:
        digest = hashlib.sha256(json.dumps(arguments, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return f"{index}:{digest}"
    if isinstance(key, str):
        if key not in row:
            raise UsageError(f"wb.map's key {key!r} is not a column of row {index}")
        return str(row[key])
    return str(key(row))


class Checkpoint:
    """The checkpoint file of one tool's batch (`path`): `finished()` reads it, `write()` appends."""

    def __init__(self, path: str | os.PathLike[str], tool: str) -> None:
        self.path = Path(path)
        self.tool = tool
        self._file: Any = None

    def finished(self) -> dict[str, RowRecord]:
        """The rows finished so far, by key (the last line of a key counts); `{}` for a new file.

        Raises:
            UsageError: the file is not a checkpoint, or is one of another tool.
        """
        if not self.path.exists() or self.path.stat().st_size == 0:
            return {}
        records = dict(_records(self.path, self.tool))
        return records

    def write(self, record: RowRecord) -> None:
        """Append one finished row, whole, and flush it (a killed process keeps what was written)."""
        if self._file is None:
            new = not self.path.exists() or self.path.stat().st_size == 0
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
            if new:
                self._file.write(json.dumps({"format": FORMAT, "tool": self.tool}) + "\n")
        self._file.write(record.to_line())
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_checkpoint(path: str | os.PathLike[str]) -> tuple[str, list[RowRecord]]:
    """The tool of a checkpoint and its finished rows in row order (`Batch.load`).

    Raises:
        UsageError: there is no such file, or it is not a checkpoint.
    """
    file = Path(path)
    if not file.exists():
        raise UsageError(f"No checkpoint at {file}")
    tool = _header(file)
    records = dict(_records(file, tool))
    return tool, sorted(records.values(), key=lambda r: r.index)


def _header(path: Path) -> str:
    with path.open(encoding="utf-8") as file:
        first = file.readline()
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise UsageError(f"{path} is not a wb.map checkpoint")
    return str(head.get("tool"))


def _records(path: Path, tool: str) -> Iterator[tuple[str, RowRecord]]:
    found = _header(path)
    if found != tool:
        raise UsageError(f"The checkpoint {path} is of {found}, not {tool}: give this batch a file of its own")
    with path.open(encoding="utf-8") as file:
        file.readline()
        for line in file:
            if not line.endswith("\n"):
                break  # the last line of a process killed mid-write: that row runs again
            try:
                record = RowRecord.from_data(json.loads(line))
            except (ValueError, KeyError, TypeError):
                raise UsageError(f"The checkpoint {path} has a line that is not a row: {line[:80]!r}") from None
            yield record.key, record


__all__ = ["FORMAT", "Checkpoint", "RowKey", "RowRecord", "read_checkpoint", "record_of", "restored", "row_key"]
