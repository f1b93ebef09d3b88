"""`wb.map`: one tool called once per row of arguments, at most `concurrency` calls at a time.

The whole batch is one coroutine on the workbench loop: `concurrency` workers take the rows in
order and await, for each, the call coroutine `Workbench.call` runs (so each row is checked,
recorded and put in the history like any call), with no thread hop per row. The caller's thread
waits for that coroutine, running what it posts on the call's channel (`LoopThread.run`): the
progress bar (tqdm) is made, updated and closed on the caller's thread only, and the loop posts
its updates (at most `UPDATES_PER_SECOND`, and the last one) rather than touching it.
"""

from __future__ import annotations

import asyncio
import functools
import math
import operator
import os
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from workbench_magic.api.asking import waiting_channel
from workbench_magic.api.server_features import parse_identifier
from workbench_magic.vocabulary.arguments import row_arguments
from workbench_magic.vocabulary.batches import Batch
from workbench_magic.vocabulary.checkpoints import Checkpoint, RowKey, record_of, restored, row_key
from workbench_magic.vocabulary.errors import ConnectError, NotFoundError, UsageError, WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.engine.runtime import Channel, QueueChannel
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.results import ToolResult

CallRow = Callable[[Any, dict[str, Any], float | None, None], Coroutine[Any, Any, "ToolResult"]]
"""The call coroutine of one row: (identifier, arguments, timeout, progress) -> ToolResult."""
RunOnLoop = Callable[[Coroutine[Any, Any, Any], "QueueChannel"], Any]
"""Runs a coroutine on the workbench loop and waits, pumping the channel (`LoopThread.run`)."""

Lookup = Callable[["ToolIdentifier"], Coroutine[Any, Any, Any]]
"""Finds the tool on the loop as a call would (opening its toolbox), or raises as a call would."""

UPDATES_PER_SECOND = 20
"""How often at most the loop posts the progress bar's count to the caller's thread."""


def run_batch(
    call: CallRow,
    run: RunOnLoop,
    target: Any,
    rows: Any,
    *,
    concurrency: int = 8,
    timeout: float | None = None,
    progress: bool = True,
    lookup: Lookup | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    key: RowKey = None,
    retry_failed: bool = False,
) -> Batch:
    """`Workbench.map`: call `target` once per row, at most `concurrency` at once; a `Batch`.

    `call` is the workbench's call coroutine, `run` its way onto the loop, `lookup` finds the tool
    as a call would. A wrong target, rows that are not mappings or a `concurrency` below 1 raise a
    one-line error before anything runs (and before the progress bar shows). With `checkpoint`,
    the rows it holds are not called again (those that failed are, with `retry_failed`), and each
    row that finishes is written to it as it ends (checkpoints.py).
    """
    ident = parse_identifier(target)
    workers = _concurrency(concurrency)
    arguments = as_rows(rows)
    if not arguments:
        return Batch(identifier=ident)
    keys: list[str] = []
    store: Checkpoint | None = None
    restored_rows: dict[int, tuple[ToolResult, WorkbenchError | None]] = {}
    if checkpoint is not None:
        keys = _keys(arguments, key)
        store = Checkpoint(checkpoint, str(ident))
        finished = store.finished()
        for index, row_id in enumerate(keys):
            record = finished.get(row_id)
            if record is not None and (record.outcome == "ok" or not retry_failed):
                restored_rows[index] = restored(ident, record)
    pending = [i for i in range(len(arguments)) if i not in restored_rows]
    channel = waiting_channel()
    if lookup is not None and pending:
        run(lookup(ident), channel)  # a tool that is not there raises here, before any bar
    bar = _Bar(str(ident), len(arguments), initial=len(restored_rows)) if progress else None

    def write(index: int, result: ToolResult, error: WorkbenchError | None) -> None:
        if store is not None:
            store.write(record_of(keys[index], index, arguments[index], result, error))

    job = _Job(call, ident, arguments, workers, timeout, channel, bar.show if bar is not None else None)
    job.resume(restored_rows, pending, write)
    try:
        results, errors, elapsed = run(job.run(), channel)
    finally:
        if bar is not None:
            bar.close()
        if store is not None:
            store.close()
    return Batch(results, identifier=ident, arguments=arguments, errors=errors, elapsed=elapsed)


def _keys(arguments: list[dict[str, Any]], key: RowKey) -> list[str]:
    """Each row's key in the checkpoint; two rows with one key are a usage error."""
    keys: list[str] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(arguments):
        row_id = row_key(index, row, row, key)
        if row_id in seen:
            raise UsageError(
                f"Rows {seen[row_id]} and {index} have the same key {row_id!r}: a checkpoint needs one per row"
            )
        seen[row_id] = index
        keys.append(row_id)
    return keys


def _concurrency(value: Any) -> int:
    try:
        number = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        number = None
    if number is None or number < 1:
        raise UsageError(f"wb.map needs concurrency of at least 1 (a whole number), got {value!r}")
    return number


# ---- rows -------------------------------------------------------------------------------------
def as_rows(rows: Any) -> list[dict[str, Any]]:
    """The rows of `wb.map` as argument dicts of JSON types: an iterable of mappings, or a DataFrame
    (one row per line). Numpy values become Python ones, NaN / NA / NaT None, dates ISO text; a
    value with no JSON form stays, for its row's call to refuse (`row_arguments`)."""
    if _is_dataframe(rows):
        records: Iterable[Any] = rows.to_dict(orient="records")
    elif isinstance(rows, Mapping | str | bytes) or not isinstance(rows, Iterable):
        raise UsageError(f"wb.map needs rows: a list of argument mappings or a DataFrame, not a {type(rows).__name__}")
    else:
        records = rows
    out = []
    for index, row in enumerate(records):
        if not isinstance(row, Mapping):
            raise UsageError(f"wb.map needs a mapping of arguments per row; row {index} is a {type(row).__name__}")
        out.append(row_arguments(row))
    return out


def _is_dataframe(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "to_dict") and hasattr(value, "columns")


def _raised(ident: ToolIdentifier, arguments: dict[str, Any], error: WorkbenchError) -> ToolResult:
    """A row whose call raised, as an error result saying so (its error stays in `Batch.errors`)."""
    from mcp_types import CallToolResult, TextContent

    from workbench_magic.vocabulary.results import ToolResult

    raw = CallToolResult(content=[TextContent(type="text", text=str(error))], is_error=True)
    return ToolResult(identifier=ident, raw=raw, arguments=arguments)


# ---- the coroutine on the loop ----------------------------------------------------------------
class _Job:
    """One batch, on the loop thread: its workers, its results and its progress posts."""

    def __init__(
        self,
        call: CallRow,
        ident: ToolIdentifier,
        arguments: list[dict[str, Any]],
        workers: int,
        timeout: float | None,
        channel: Channel,
        report: Callable[[int, int], None] | None,
    ) -> None:
        self.call = call
        self.ident = ident
        self.arguments = arguments
        self.workers = min(workers, len(arguments))
        self.timeout = timeout
        self.channel = channel
        self.report = report
        self.results: list[ToolResult | None] = [None] * len(arguments)
        self.errors: dict[int, WorkbenchError] = {}
        self.done = 0
        self.failed = 0
        self.answered = 0
        """Rows answered by this run (not restored from a checkpoint)."""
        self.pending = list(range(len(arguments)))
        self.on_row: Callable[[int, ToolResult, WorkbenchError | None], None] | None = None
        self._posted = -math.inf
        self._timer: asyncio.TimerHandle | None = None

    def resume(
        self,
        finished: Mapping[int, tuple[ToolResult, WorkbenchError | None]],
        pending: list[int],
        on_row: Callable[[int, ToolResult, WorkbenchError | None], None],
    ) -> None:
        """Start with the rows a checkpoint holds (`finished`), call only `pending`, and tell
        `on_row(index, result, raised)` of each row as it ends (loop thread)."""
        for index, (result, error) in finished.items():
            self.results[index] = result
            if error is not None:
                self.errors[index] = error
            self.failed += result.is_error
        self.done = len(finished)
        self.pending = pending
        self.workers = max(1, min(self.workers, len(pending)))
        self.on_row = on_row

    async def run(self) -> tuple[list[ToolResult], dict[int, WorkbenchError], float]:
        started = time.perf_counter()
        rows = iter(self.pending)  # shared by the workers: they take the next row in turn
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(self.workers):
                    group.create_task(self._worker(rows))
        finally:
            if self._timer is not None:
                self._timer.cancel()
        filled = [result for result in self.results if result is not None]
        assert len(filled) == len(self.results)  # every row answered or raised (else the group raised)
        return filled, self.errors, time.perf_counter() - started

    async def _worker(self, rows: Iterator[int]) -> None:
        call, ident, timeout, arguments = self.call, self.ident, self.timeout, self.arguments
        for index in rows:
            error: WorkbenchError | None = None
            try:
                result = await call(ident, arguments[index], timeout, None)
            except WorkbenchError as exc:
                # No row answered yet and the target itself is wrong or unreachable: raise it, as
                # `call` would, rather than give every row the same error.
                if self.answered == 0 and isinstance(exc, NotFoundError | ConnectError):
                    raise
                error = self.errors[index] = exc
                result = _raised(ident, arguments[index], exc)
            self.results[index] = result
            self.failed += result.is_error
            self.done += 1
            self.answered += 1
            if self.on_row is not None:
                self.on_row(index, result, error)
            if self.report is not None:
                self._progress()

    def _progress(self) -> None:
        """Post the count to the caller's thread now, or schedule it (at most `UPDATES_PER_SECOND`)."""
        if self.done == len(self.arguments):
            self._post()
            return
        if self._timer is not None:
            return  # a post is due: it will carry the count as it is then
        wait = self._posted + 1 / UPDATES_PER_SECOND - time.monotonic()
        if wait <= 0:
            self._post()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self._post)

    def _post(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._posted = time.monotonic()
        if self.report is not None:
            self.channel.post(functools.partial(self.report, self.done, self.failed))


# ---- the progress bar (the caller's thread only) ------------------------------------------------
class _Bar:
    """A tqdm bar: a widget in a kernel, text on stderr elsewhere (`tqdm.auto`). Made, updated and
    closed on the thread that waits for the batch."""

    def __init__(self, label: str, total: int, initial: int = 0) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, initial=initial, desc=label, unit="call")
        self._failed = 0
        self._bar.set_postfix_str("failed=0", refresh=False)

    def show(self, done: int, failed: int) -> None:
        bar = self._bar
        if failed != self._failed:
            self._failed = failed
            bar.set_postfix_str(f"failed={failed}", refresh=False)
        bar.update(done - bar.n)

    def close(self) -> None:
        self._bar.close()


__all__ = ["Batch", "as_rows", "run_batch"]
