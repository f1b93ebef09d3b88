"""A batch's checkpoint (`wb.map(..., checkpoint=PATH)`): each finished row, written as it ends, so a
batch that was interrupted, killed or lost its server resumes where it stopped.

Each finished row is a line of JSON Lines, written whole and flushed when its row ends: its key, its
index, its arguments, its outcome (`ok`, `tool error` or `raised`), the tool's answer as on the wire
(`result`) and, for a row whose call raised, what it raised (`error`, `error_type`); a first line
says what the file is and which tool it is of. A process killed mid-line leaves a last line without
its newline, which reading drops (that row runs again). A key written twice (a failed row run again,
`retry_failed`) counts as its last line says.

Where pyarrow is installed and PATH does not end in `.jsonl`, the checkpoint is a Parquet dataset:
a folder whose `journal.jsonl` takes each row as above, and whose rows move, every `PART_ROWS` rows
and when the batch ends, into a `part-NNNNN.parquet` file (written whole under another name, then
renamed; the journal is emptied after). A crash between the rename and the emptying leaves a row in
both: the same row, read once. Elsewhere PATH is a JSON Lines file.

A row's key is its `key` column, or what `key(row)` returns, else its index and a hash of its
arguments: rows that moved or changed are new rows. Plain data: no SDK import.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping
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
_COLUMNS = ("key", "index", "arguments", "outcome", "result", "error", "error_type")
_RAISED = frozenset({"error", "error_type"})
"""The fields only a row whose call raised has."""
_JSON_TEXT = frozenset({"arguments", "result"})
"""The fields a Parquet part file holds as JSON text."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


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
        """The row as a line of JSON Lines (`error` and `error_type` only for a row that raised)."""
        data = {name: getattr(self, name) for name in _COLUMNS if name not in _RAISED or self.error is not None}
        return _json(data) + "\n"

    def to_columns(self) -> dict[str, Any]:
        """The row as a Parquet part file holds it (arguments and result as JSON text)."""
        return {name: _json(getattr(self, name)) if name in _JSON_TEXT else getattr(self, name) for name in _COLUMNS}

    @classmethod
    def from_columns(cls, row: Mapping[str, Any]) -> RowRecord:
        """A row of a Parquet part file."""
        return cls.from_data({**row, "arguments": json.loads(row["arguments"]), "result": json.loads(row["result"])})

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


@dataclass(frozen=True)
class Mark:
    """Where a checkpoint ended at a moment (`Checkpoint.mark`): its part files, its journal's bytes."""

    parts: int
    journal: int


@dataclass(frozen=True)
class Finished:
    """A checkpoint as a resuming run reads it: each key's outcome and index (its last line), the
    key written last at each index, and (when asked: rows keyed by a column or a function) a digest
    of each key's arguments (`arguments_digest`)."""

    outcome: dict[str, tuple[Outcome, int]]
    latest: dict[int, str]
    digests: dict[str, str] = dataclasses.field(default_factory=dict)


def row_key(index: int, arguments: Mapping[str, Any], row: Mapping[str, Any], key: RowKey) -> str:
    """The key of a row: `row[key]` for a column name, `key(row)` for a function, else its index
    and a hash of its arguments."""
    if key is None:
        return f"{index}:{arguments_digest(arguments)}"
    if isinstance(key, str):
        if key not in row:
            raise UsageError(f"wb.map's key {key!r} is not a column of row {index}")
        return str(row[key])
    return str(key(row))


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """A short hash of a row's arguments: equal for equal arguments, as written and as read back."""
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, default=str).encode()).hexdigest()[:16]


def changed_arguments(path: Path, rows: list[int], count: int) -> str:
    """`wb.map: rows 3, 7 (and N more) have other arguments than the checkpoint P answered under
    their key: ...`: the rows a resumed run did not call again although their arguments changed
    (`rows`: the first of them; `count`: how many in all)."""
    more = f" (and {count - len(rows)} more)" if count > len(rows) else ""
    which = f"row {rows[0]} has" if count == 1 else f"rows {', '.join(map(str, rows))}{more} have"
    return (
        f"wb.map: {which} other arguments than the checkpoint {path} answered under their key: their old "
        "answers are kept (a new checkpoint, or a key that tells the rows apart, calls them again)"
    )


JOURNAL = "journal.jsonl"
"""The journal of a Parquet checkpoint: its rows not yet in a part file."""
PART_ROWS = 1000
"""Rows a Parquet checkpoint's journal takes before they move into a part file."""
_META_KEY = b"workbench-magic"


def uses_parquet(path: Path) -> bool:
    """Whether the checkpoint at `path` is a Parquet dataset: a folder there already, or pyarrow
    installed and `path` neither a file nor named `*.jsonl`."""
    if path.is_dir():
        return True
    if path.suffix == ".jsonl" or path.exists():
        return False
    return _has_pyarrow()


def _has_pyarrow() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


class Checkpoint:
    """The checkpoint of one tool's batch at `path`: `finished()` reads it, `write()` adds a row."""

    def __init__(self, path: str | os.PathLike[str], tool: str) -> None:
        self.path = Path(path)
        self.tool = tool
        self.parquet = uses_parquet(self.path)
        if self.parquet and not _has_pyarrow():
            raise UsageError(
                f"The checkpoint {self.path} is a Parquet dataset, which needs pyarrow: pip install pyarrow"
            )
        if self.parquet:
            _refuse_a_foreign_folder(self.path)
        self.journal = self.path / JOURNAL if self.parquet else self.path
        self._file: Any = None
        self._journaled = 0

    def records(self, until: Mark | None = None) -> Iterator[RowRecord]:
        """Every row line, in the order written (part files, then the journal); read as it goes.
        With `until`, only those written before it was taken.

        Raises:
            UsageError: it is not a checkpoint, or is one of another tool.
        """
        if self.parquet and self.path.is_dir():
            yield from _part_records(self.path, self.tool, None if until is None else until.parts)
        if self.journal.exists() and self.journal.stat().st_size:
            limit = None if until is None else until.journal
            yield from _records(self.journal, self.tool, limit)

    def mark(self) -> Mark:
        """Where the checkpoint ends now: a later run adds its rows after it (and never changes
        what is before: lines are appended, part files added, a journal emptied only once its rows
        are in a part)."""
        parts = len(list(self.path.glob("part-*.parquet"))) if self.parquet and self.path.is_dir() else 0
        return Mark(parts, self.journal.stat().st_size if self.journal.exists() else 0)

    def finished(self) -> dict[str, RowRecord]:
        """The rows finished so far, by key (the last line of a key counts); `{}` for a new checkpoint.

        Raises:
            UsageError: it is not a checkpoint, or is one of another tool.
        """
        return {record.key: record for record in self.records()}

    def outcomes(self, *, digests: bool = False) -> Finished:
        """What a run resuming from the checkpoint needs of it, without the rows' answers (with
        `digests`, a digest of each key's arguments)."""
        outcome: dict[str, tuple[Outcome, int]] = {}
        latest: dict[int, str] = {}
        digest: dict[str, str] = {}
        for record in self.records():
            outcome[record.key] = (record.outcome, record.index)
            latest[record.index] = record.key
            if digests:
                digest[record.key] = arguments_digest(record.arguments)
        return Finished(outcome, latest, digest)

    def rows(self, count: int, until: Mark, wanted: Collection[int] | None = None) -> dict[int, RowRecord]:
        """A batch's rows by index (`0 <= index < count`, or those `wanted`) as they were at `until`:
        at each index, the row written last there, and of each key its last line (an older line of a
        row run again is not its answer)."""
        by_key: dict[str, RowRecord] = {}
        for record in self.records(until):
            if record.index < count and (wanted is None or record.index in wanted):
                by_key.pop(record.key, None)  # re-inserted: the dict's order stays the order written
                by_key[record.key] = record
            else:
                by_key.pop(record.key, None)
        return {record.index: record for record in by_key.values()}

    def move(self, moved: Mapping[str, int]) -> None:
        """Write again, at their index in this run, the rows restored from an older run (`moved`: key ->
        index) whose index there differs, or that a row written later at that index hides."""
        if not moved:
            return
        last = {record.key: record for record in self.records() if record.key in moved}
        for key, index in moved.items():
            if key in last:
                self.write(dataclasses.replace(last[key], index=index))

    def write(self, record: RowRecord) -> None:
        """Add one finished row, whole and flushed (a killed process keeps what was written)."""
        if self._file is None:
            self._open()
        self._file.write(record.to_line())
        self._file.flush()
        self._journaled += 1
        if self.parquet and self._journaled >= PART_ROWS:
            self._to_part()

    def close(self) -> None:
        """Move a Parquet checkpoint's journal into a part file, and close."""
        if self.parquet and self._file is not None:
            self._to_part()
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open(self, *, empty: bool = False) -> None:
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        if not empty and self.journal.exists():
            _drop_partial_line(self.journal)
        new = empty or not self.journal.exists() or self.journal.stat().st_size == 0
        self._file = self.journal.open("w" if empty else "a", encoding="utf-8")
        if new:
            self._file.write(json.dumps({"format": FORMAT, "tool": self.tool}) + "\n")
            self._file.flush()

    def _to_part(self) -> None:
        """The journal's rows into the next part file (written under another name, then renamed),
        then the journal emptied."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._file.close()
        self._file = None
        rows = [r.to_columns() for r in _records(self.journal, self.tool)]
        if rows:
            parts = sorted(self.path.glob("part-*.parquet"))
            number = int(parts[-1].stem.split("-")[1]) + 1 if parts else 0
            table = pa.Table.from_pylist(rows, schema=_schema(pa)).replace_schema_metadata(
                {_META_KEY: json.dumps({"format": FORMAT, "tool": self.tool})}
            )
            target = self.path / f"part-{number:05d}.parquet"
            scratch = target.with_suffix(".parquet.tmp")
            pq.write_table(table, scratch)
            os.replace(scratch, target)
        self._open(empty=True)
        self._journaled = 0


def _drop_partial_line(path: Path) -> None:
    """Cut a last line left without its newline (a process killed mid-write), so that the next row
    does not join it."""
    with path.open("rb+") as file:
        end = file.seek(0, os.SEEK_END)
        file.seek(max(0, end - 1))
        if end == 0 or file.read(1) == b"\n":
            return
        while end > 0:
            start = max(0, end - 4096)
            file.seek(start)
            cut = file.read(end - start).rfind(b"\n")
            if cut >= 0:
                file.truncate(start + cut + 1)
                return
            end = start
        file.truncate(0)


def _schema(pa: Any) -> Any:
    """The columns of a part file (`_COLUMNS`): text, but the row's index."""
    return pa.schema([(name, pa.int64() if name == "index" else pa.string()) for name in _COLUMNS])


def _part_records(folder: Path, tool: str, parts: int | None = None) -> Iterator[RowRecord]:
    """The rows of a Parquet checkpoint's part files, oldest first (the first `parts` of them)."""
    for part in sorted(folder.glob("part-*.parquet"))[:parts]:
        table = _read_part(folder, part)
        found = _part_tool(part, table.schema)
        if found != tool:
            raise _of_another_tool(folder, found, tool)
        for row in table.to_pylist():
            try:
                record = RowRecord.from_columns(row)
            except (ValueError, KeyError, TypeError):
                record = None
            if record is None:
                raise _damaged(folder, f"a row that is not one in {part.name}: {str(row)[:80]!r}")
            yield record


def _read_part(folder: Path, part: Path, *, schema: bool = False) -> Any:
    """A part file's table (or, with `schema`, its schema alone); one line naming it when it cannot be
    read (overwritten, cut short)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(part) if schema else pq.read_table(part)
    except (pa.ArrowException, OSError):
        pass
    raise _damaged(folder, f"a part file that cannot be read as Parquet: {part.name}")


def _part_tool(part: Path, schema: Any) -> str:
    """The tool a part file's metadata names, checking that it is a part of a checkpoint."""
    try:
        head = json.loads((schema.metadata or {}).get(_META_KEY, b"{}"))
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise UsageError(f"{part} is not a part of a wb.map checkpoint")
    return str(head.get("tool"))


def _refuse_a_foreign_folder(path: Path) -> None:
    """A checkpoint is never mixed into a folder it did not make: a folder is one when it holds a
    journal or part files (the journal is written with the first row and stays), or is empty."""
    if not path.is_dir() or (path / JOURNAL).exists() or next(path.glob("part-*.parquet"), None) is not None:
        return
    if next(path.iterdir(), None) is not None:
        raise UsageError(
            f"The folder {path} holds other files and is not a wb.map checkpoint: give the checkpoint a new path"
        )


def read_checkpoint(path: str | os.PathLike[str]) -> tuple[str, list[RowRecord]]:
    """The tool of a checkpoint and its finished rows in row order (`Batch.load`).

    Raises:
        UsageError: there is no such file, or it is not a checkpoint.
    """
    found = Path(path)
    if not found.exists():
        raise UsageError(f"No checkpoint at {found}")
    _refuse_a_foreign_folder(found)
    journal = found / JOURNAL if found.is_dir() else found
    if journal.exists():
        tool = _header(journal)
    else:
        parts = sorted(found.glob("part-*.parquet"))
        if not parts:
            raise _not_a_checkpoint(found)
        Checkpoint(found, "")  # a Parquet dataset needs pyarrow: one line when it is missing
        tool = _part_tool(parts[0], _read_part(found, parts[0], schema=True))
    checkpoint = Checkpoint(found, tool)
    return tool, sorted(checkpoint.finished().values(), key=lambda r: r.index)


def _of_another_tool(path: Path, found: Any, tool: str) -> UsageError:
    return UsageError(f"The checkpoint {path} is of {found}, not {tool}: give this batch a file of its own")


def _not_a_checkpoint(path: Path) -> UsageError:
    return UsageError(f"{path} is not a wb.map checkpoint")


def _damaged(path: Path, what: str) -> UsageError:
    """`The checkpoint P has WHAT`: a checkpoint with a line or part that cannot be read."""
    return UsageError(f"The checkpoint {path} has {what}")


_HEADER_BYTES = 4096
"""Bytes of a checkpoint's first line read at most (its header is far shorter; a file of other
bytes may have no newline)."""


def _header(path: Path) -> str:
    with path.open("rb") as file:
        first = file.readline(_HEADER_BYTES)
    try:
        head = json.loads(first)  # bytes that are not UTF-8 too: a ValueError
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise _not_a_checkpoint(path)
    return str(head.get("tool"))


def _records(path: Path, tool: str, limit: int | None = None) -> Iterator[RowRecord]:
    """The rows of a JSON Lines file, in the order written (those in its first `limit` bytes)."""
    found = _header(path)
    if found != tool:
        raise _of_another_tool(path, found, tool)
    with path.open("rb") as file:
        read = len(file.readline())
        for raw in file:
            read += len(raw)
            if (limit is not None and read > limit) or not raw.endswith(b"\n"):
                break  # written after the limit, or the last line of a process killed mid-write
            try:
                record: RowRecord | None = RowRecord.from_data(json.loads(raw.decode("utf-8")))
            except (ValueError, KeyError, TypeError):  # bytes that are not UTF-8 too: a ValueError
                record = None
            if record is None:
                raise _damaged(path, f"a line that is not a row: {_shown(raw)!r}")
            yield record


def _shown(raw: bytes) -> str | bytes:
    """The start of a line as the error shows it: its text, or its bytes when they are not UTF-8."""
    try:
        return raw.decode("utf-8")[:80]
    except UnicodeDecodeError:
        return raw[:80]


__all__ = [
    "FORMAT",
    "JOURNAL",
    "PART_ROWS",
    "Checkpoint",
    "Finished",
    "Mark",
    "RowKey",
    "RowRecord",
    "arguments_digest",
    "changed_arguments",
    "read_checkpoint",
    "record_of",
    "restored",
    "row_key",
    "uses_parquet",
]
