"""What `wb.map` returns: `Batch`, one tool's answers to many rows of arguments, in row order.

A batch is a `list` with one `ToolResult` per row: the row's answer (a tool error included: its
`.is_error` is set), or, where the call raised, an error result whose text is what was raised;
`.errors` maps those rows' indices to the `WorkbenchError` each raised (a timeout, arguments that
do not fit the schema, a lost connection).
Plain data: no SDK import; pandas is imported by `to_pandas()` only.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import UsageError, WorkbenchError, import_pandas
from workbench_magic.vocabulary.masking import mask
from workbench_magic.vocabulary.rendering import esc, first_line, json_dump

if TYPE_CHECKING:
    import pandas as pd

    from workbench_magic.api.batches.checkpoints import Mark
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.results import ToolResult

_Row = tuple["ToolResult", WorkbenchError | None, dict[str, Any]]
"""A row read from a checkpoint: its result, what its call raised, its arguments."""
_View = tuple[str, str, dict[str, Any]]
"""A row as the reprs show it: status, shown value, arguments."""
SHOWN = 50
"""Rows the HTML table shows; failures the text repr lists (a checkpointed run keeps that many failed rows' indices)."""
_CELL = 120
"""Characters of a value shown in a cell."""


class Batch(list["ToolResult"]):
    """The answers of `wb.map(target, rows)`, one per row, in row order.

    Each item is that row's `ToolResult` (`.is_error` when the tool reported an error); a row
    whose call raised holds an error result with what was raised as its text, and `errors` maps
    each such row's index to its `WorkbenchError`.

    Attributes:
        identifier: the tool called.
        arguments: each row's arguments, as given to its call (a missing value, which the call
            left out or refused, as NaN).
        errors: `{row index: WorkbenchError}` for the rows whose call raised, in row order.
        elapsed: seconds the whole batch took.
        output_keys: the data keys the tool's output schema declares (`to_pandas()` has a column
            for each, also when no row has data); empty when it declares none (or was not looked up).

    Example:
        ```python
        batch = wb.map("demo/datasets/describe_dataset", [{"name": "penguins"}, {"name": "nope"}])
        len(batch.ok), batch.tool_errors  # 1, {1: <the tool error's result>}
        batch.error_text(1)  # the tool error's text, one line
        batch.to_pandas()  # one line per row: arguments, data, error
        ```
    """

    def __init__(
        self,
        results: Iterable[ToolResult] = (),
        *,
        identifier: ToolIdentifier | None = None,
        arguments: Iterable[Mapping[str, Any]] = (),
        errors: Mapping[int, WorkbenchError] | None = None,
        elapsed: float = 0.0,
        output_keys: Iterable[str] = (),
    ) -> None:
        super().__init__(results)
        self.identifier = identifier
        self.arguments: list[dict[str, Any]] = [dict(a) for a in arguments]
        self.errors: dict[int, WorkbenchError] = dict(sorted((errors or {}).items()))
        self.elapsed = elapsed
        self.output_keys: list[str] = list(output_keys)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Batch:
        """The rows a checkpoint holds (`wb.map(..., checkpoint=path)`), in row order.

        Args:
            path: the checkpoint file.

        Returns:
            A batch of the rows finished so far (a row not finished yet is not in it).

        Raises:
            UsageError: there is no such file, or it is not a checkpoint.
        """
        from workbench_magic.api.batches.checkpoints import read_checkpoint, restored
        from workbench_magic.vocabulary.identifiers import parse_identifier

        tool, records = read_checkpoint(path)
        ident = parse_identifier(tool)
        rows = [restored(ident, record) for record in records]
        errors = {n: error for n, (_, error) in enumerate(rows) if error is not None}
        return cls([r for r, _ in rows], identifier=ident, arguments=[r.arguments for r in records], errors=errors)

    # ---- counts ------------------------------------------------------------------------
    @property
    def tool_errors(self) -> dict[int, ToolResult]:
        """`{row index: ToolResult}` for the rows whose tool reported an error (`is_error`)."""
        return {i: r for i, r in enumerate(self) if r.is_error and i not in self.errors}

    @property
    def ok(self) -> list[ToolResult]:
        """The results of the rows that succeeded, in row order."""
        return [r for r in self if not r.is_error]

    def _counts(self) -> tuple[int, int, int]:
        raised = len(self.errors)
        tool_errors = sum(1 for r in self if r.is_error) - raised
        return len(self) - tool_errors - raised, tool_errors, raised

    def _summary(self) -> str:
        ok, tool_errors, raised = self._counts()
        n = len(self)
        name = f" {self.identifier}" if self.identifier is not None else ""
        took = f"{self.elapsed:.2f} s" if self.elapsed >= 1 else f"{self.elapsed * 1000:.0f} ms"
        return (
            f"Batch{name}: {n} row{'s' if n != 1 else ''}, {ok} ok, "
            f"{tool_errors} tool error{'s' if tool_errors != 1 else ''}, {raised} raised, {took}"
        )

    def _secrets(self) -> frozenset[str]:
        return frozenset(s for r in self for s in r.secrets)

    def error_text(self, index: int) -> str | None:
        """The error of row `index` as one line (a tool error's text, or what the call raised).

        Args:
            index: the row's index.

        Returns:
            The error's text; None when the row succeeded.
        """
        if index in self.errors:
            return str(self.errors[index])
        result = self[index]
        return result.error_message() if result.is_error else None

    # ---- pandas -----------------------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """One line per row, in row order: the row's arguments as columns, then its data, then `error`.

        The data of a result whose `.data` is a dict is one column per key (a key that is also an
        argument's name becomes `result.KEY`), first those the tool's output schema declares
        (`output_keys`); other data goes in a `result` column (`.data`, or `.text` when there is no
        data). `error` holds the text of a tool error or of what the call raised, None for rows
        that succeeded. A `wb.map` over a Dask DataFrame gives the same columns. Needs the `pandas`
        extra.

        Returns:
            The table.

        Raises:
            MissingExtraError: pandas is not installed.
        """
        pd = import_pandas()

        argument_columns = list(dict.fromkeys(k for row in self.arguments for k in row))
        column = data_column(argument_columns)
        data_columns: dict[str, None] = dict.fromkeys(column(key) for key in self.output_keys)
        records = []
        for index, result in enumerate(self):
            record: dict[str, Any] = dict(self.arguments[index]) if index < len(self.arguments) else {}
            error = self.error_text(index)
            if error is None:
                for key, value in row_data(result).items():
                    record[column(key)] = value
                    data_columns[column(key)] = None
            record["error"] = error
            records.append(record)
        columns = [*argument_columns, *data_columns, "error"]
        return pd.DataFrame.from_records(records, columns=columns)

    # ---- reprs ------------------------------------------------------------------------------
    def _failed_shown(self) -> list[int]:
        """The failed rows the text repr lists (the first `SHOWN`)."""
        return [i for i in range(len(self)) if self.error_text(i) is not None][:SHOWN]

    def _row_view(self, index: int) -> _View:
        """(status, shown value, arguments) of a row, as the reprs show it."""
        arguments = self.arguments[index] if index < len(self.arguments) else {}
        return _view(self[index], self.errors.get(index), arguments)

    def __repr__(self) -> str:
        lines = [self._summary()]
        for index in self._failed_shown():
            status, shown, _ = self._row_view(index)
            lines.append(f"  row {index}: {status}: {first_line(shown, _CELL)}")
        _, tool_errors, raised = self._counts()
        if tool_errors + raised > SHOWN:
            lines.append(f"  … {tool_errors + raised - SHOWN} more failed rows")
        return mask("\n".join(lines), self._secrets())

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if not cycle else "Batch(...)")

    def _repr_html_(self) -> str:
        colors = {"ok": "#1b5e20", "tool error": "#b00020", "raised": "#b00020"}
        body = []
        for index in range(min(len(self), SHOWN)):
            status, shown, arguments = self._row_view(index)
            body.append(
                f"<tr><td>{index}</td><td><code>{esc(first_line(json_dump(arguments, None), _CELL))}</code></td>"
                f"<td style='color:{colors[status]}'>{status}</td><td>{esc(first_line(shown, _CELL))}</td></tr>"
            )
        more = f"<i>… {len(self) - SHOWN} more rows</i>" if len(self) > SHOWN else ""
        table = (
            "<table><thead><tr><th>row</th><th>arguments</th><th>status</th><th>result</th></tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{more}"
            if len(self)
            else ""
        )
        return mask(f"<div><b>{esc(self._summary())}</b>{table}</div>", self._secrets())


class CheckpointBatch(Batch):
    """The batch of a `wb.map` with a checkpoint, its rows read back from the checkpoint.

    Its rows stay in the checkpoint, so that a batch of any size costs the kernel no memory for its
    answers. Its length, counts and reprs need only the rows they show; the rows are read from the checkpoint
    the first time they are used (an item, iteration, `.arguments`, `.errors`, `to_pandas()`), and
    kept from then on. The batch is the rows of its run: at each index, the row written there last
    when the run ended (a later run with the same checkpoint does not change it).

    Attributes:
        path: the checkpoint.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        identifier: ToolIdentifier,
        count: int,
        until: Mark,
        counts: tuple[int, int, int],
        failed: Iterable[int],
        elapsed: float,
        output_keys: Iterable[str] = (),
    ) -> None:
        self._loaded = False
        super().__init__(identifier=identifier, elapsed=elapsed, output_keys=output_keys)
        self.path = Path(path)
        self._count = count
        self._until = until
        self._known = counts
        self._failed = sorted(failed)[:SHOWN]
        self._preview: dict[int, _Row] | None = None

    # `Batch.__init__` sets these two; read, they are the checkpoint's
    @property  # type: ignore[override]
    def arguments(self) -> list[dict[str, Any]]:
        self._load()
        return self._arguments

    @arguments.setter
    def arguments(self, value: list[dict[str, Any]]) -> None:
        self._arguments = value

    @property  # type: ignore[override]
    def errors(self) -> dict[int, WorkbenchError]:
        self._load()
        return self._errors

    @errors.setter
    def errors(self, value: dict[int, WorkbenchError]) -> None:
        self._errors = value

    def _load(self) -> None:
        """Read the rows from the checkpoint (once)."""
        if self._loaded:
            return
        rows = self._read(None)
        self._loaded = True
        list.extend(self, (rows[i][0] for i in range(self._count)))
        self._arguments = [rows[i][2] for i in range(self._count)]
        self._errors = {i: error for i in range(self._count) if (error := rows[i][1]) is not None}
        self._preview = None

    def _read(self, wanted: Iterable[int] | None) -> dict[int, _Row]:
        from workbench_magic.api.batches.checkpoints import Checkpoint, restored

        assert self.identifier is not None
        wanted_rows = None if wanted is None else set(wanted)
        records = Checkpoint(self.path, str(self.identifier)).rows(self._count, self._until, wanted_rows)
        for index in range(self._count) if wanted_rows is None else sorted(wanted_rows):
            if index not in records:
                raise UsageError(f"The checkpoint {self.path} has no row {index}: it changed after the batch ran")
        return {i: (*restored(self.identifier, r), r.arguments) for i, r in records.items()}

    def __len__(self) -> int:
        return list.__len__(self) if self._loaded else self._count

    def _counts(self) -> tuple[int, int, int]:
        return super()._counts() if self._loaded else self._known

    def _failed_shown(self) -> list[int]:
        return super()._failed_shown() if self._loaded else self._failed

    def _row_view(self, index: int) -> _View:
        if self._loaded:
            return super()._row_view(index)
        if self._preview is None:
            self._preview = self._read({*range(min(self._count, SHOWN)), *self._failed})
        return _view(*self._preview[index])

    def _secrets(self) -> frozenset[str]:
        if self._loaded:
            return super()._secrets()
        return frozenset(s for result, _, _ in (self._preview or {}).values() for s in result.secrets)


def declared_keys(output_schema: Mapping[str, Any] | None) -> list[str]:
    """The data keys a tool's output schema declares: the properties of its object (the MCP SDK's
    `{"result": ...}` of a tool that returns a string or a list too); `[]` when it declares none."""
    if not isinstance(output_schema, Mapping) or output_schema.get("type", "object") != "object":
        return []
    properties = output_schema.get("properties")
    return [str(key) for key in properties] if isinstance(properties, Mapping) else []


def row_data(result: ToolResult) -> dict[str, Any]:
    """A row's data as a table's columns hold it (`Batch.to_pandas`, a Dask map): a dict's keys, else
    `result` (its data, or its text when it has none)."""
    data = result.data
    if isinstance(data, dict):
        return data
    return {"result": data if data is not None else (result.text or None)}


def data_column(arguments: Iterable[str]) -> Callable[[Any], str]:
    """The name of a data key's column beside these argument columns and `error`: the key, or
    `result.KEY` when an argument (or `error`) has its name."""
    taken = {*arguments, "error"}

    def column(key: Any) -> str:
        return f"result.{key}" if key in taken else str(key)

    return column


def _view(result: ToolResult, raised: WorkbenchError | None, arguments: dict[str, Any]) -> _View:
    """(status, shown value, arguments) of a row: its answer, or what its call raised."""
    if raised is not None:
        return "raised", str(raised), arguments
    if result.is_error:
        return "tool error", result.error_message(), arguments
    data = result.data
    return "ok", json_dump(data, None) if data is not None else result.text, arguments


def _reading(name: str) -> Callable[..., Any]:
    method = getattr(list, name)

    @functools.wraps(method)
    def read_first(self: CheckpointBatch, *args: Any, **kwargs: Any) -> Any:
        self._load()
        return method(self, *args, **kwargs)

    return read_first


for _name in (
    "__getitem__", "__iter__", "__reversed__", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__add__", "__mul__", "__rmul__", "__iadd__", "__imul__", "__setitem__", "__delitem__", "__reduce_ex__",
    "append", "extend", "insert", "pop", "remove", "index", "count", "sort", "reverse", "clear", "copy",
):  # fmt: skip
    setattr(CheckpointBatch, _name, _reading(_name))


__all__ = ["SHOWN", "Batch", "CheckpointBatch", "data_column", "declared_keys", "row_data"]
