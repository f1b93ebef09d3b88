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
import contextlib
import functools
import math
import operator
import os
import sys
import time
import warnings
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sized
from typing import TYPE_CHECKING, Any

from workbench_magic.api.asking import waiting_channel
from workbench_magic.api.batches.batch import SHOWN, Batch, CheckpointBatch, declared_keys
from workbench_magic.api.batches.checkpoints import (
    Checkpoint,
    Finished,
    RowKey,
    arguments_digest,
    changed_arguments,
    record_of,
    row_key,
)
from workbench_magic.api.targets import parse_identifier
from workbench_magic.vocabulary.arguments import row_arguments
from workbench_magic.vocabulary.errors import ConnectError, NotFoundError, UsageError, WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.engine.runtime import Channel, QueueChannel
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.listings import ToolInfo
    from workbench_magic.vocabulary.results import ToolResult

CallRow = Callable[[Any, dict[str, Any], float | None, None], Coroutine[Any, Any, "ToolResult"]]
"""The call coroutine of one row: (identifier, arguments, timeout, progress) -> ToolResult."""
RunOnLoop = Callable[[Coroutine[Any, Any, Any], "QueueChannel"], Any]
"""Runs a coroutine on the workbench loop and waits, pumping the channel (`LoopThread.run`)."""

Lookup = Callable[["ToolIdentifier"], Coroutine[Any, Any, "ToolInfo"]]
"""Finds the tool on the loop as a call would (opening its toolbox), or raises as a call would."""

UPDATES_PER_SECOND = 20
"""How often at most the loop posts the progress bar's count to the caller's thread."""
CHANGED_SHOWN = 10
"""Rows named by the warning that rows kept their old answers although their arguments changed."""


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
    the rows it holds are not called again (those that failed are, with `retry_failed`), each row
    that finishes is written to it as it ends (checkpoints.py), and the rows are drawn from `rows`
    as workers free up: the batch keeps no more than `concurrency` rows and their answers, and the
    `CheckpointBatch` it returns reads them back from the checkpoint when they are used.
    """
    ident = parse_identifier(target)
    workers = _concurrency(concurrency)
    if checkpoint is not None:
        return _run_checkpointed(
            call, run, ident, rows, workers, timeout, progress, lookup, checkpoint, key, retry_failed
        )
    arguments = as_rows(rows)
    if not arguments:
        return Batch(identifier=ident)
    channel = waiting_channel()
    keys = _output_keys(run(lookup(ident), channel)) if lookup is not None else []  # not there: raises, before any bar
    bar = _Bar(str(ident), len(arguments)) if progress else None
    results: list[ToolResult | None] = [None] * len(arguments)
    errors: dict[int, WorkbenchError] = {}

    def keep(index: int, row: dict[str, Any], result: ToolResult, error: WorkbenchError | None) -> None:
        results[index] = result
        if error is not None:
            errors[index] = error

    tally = _Tally()
    job = _Job(call, ident, enumerate(arguments), workers, timeout, channel, tally, bar, keep)
    try:
        elapsed = run(job.run(), channel)
    finally:
        if bar is not None:
            bar.close(tally)
    answered = [result for result in results if result is not None]
    assert len(answered) == len(results)  # every row answered or raised (else the group raised)
    return Batch(answered, identifier=ident, arguments=arguments, errors=errors, elapsed=elapsed, output_keys=keys)


def _run_checkpointed(
    call: CallRow,
    run: RunOnLoop,
    ident: ToolIdentifier,
    rows: Any,
    workers: int,
    timeout: float | None,
    progress: bool,
    lookup: Lookup | None,
    checkpoint: str | os.PathLike[str],
    key: RowKey,
    retry_failed: bool,
) -> CheckpointBatch:
    """`run_batch` with a checkpoint: rows drawn as they are called, each written as it ends."""
    drawn = _drawn(rows)
    store = Checkpoint(checkpoint, str(ident))
    tally = _Tally()
    source = _Resuming(drawn, key, store.outcomes(digests=key is not None), retry_failed, tally)
    pending = source.peek()  # the rows already done before the first to call: the bar starts there
    channel = waiting_channel()
    keys: list[str] = []
    if lookup is not None and pending:
        keys = _output_keys(run(lookup(ident), channel))  # a tool that is not there raises here, before any bar
    total = len(rows) if isinstance(rows, Sized) and not isinstance(rows, Mapping) else None
    bar = _Bar(str(ident), total, initial=tally.done) if progress else None

    def write(index: int, row: dict[str, Any], result: ToolResult, error: WorkbenchError | None) -> None:
        store.write(record_of(source.keys.pop(index), index, row, result, error))

    job = _Job(call, ident, source, workers, timeout, channel, tally, bar, write)
    try:
        elapsed = run(job.run(), channel)
        store.move(source.moved)
    finally:
        if bar is not None:
            bar.close(tally)
        store.close()
    if source.changed:  # their old answers are this batch's: say so
        message = changed_arguments(store.path, source.changed, source.changed_count)
        warnings.warn(message, UserWarning, stacklevel=_outside())
    return CheckpointBatch(
        store.path,
        identifier=ident,
        count=source.count,
        until=store.mark(),
        counts=(tally.done - tally.failed, tally.failed - tally.raised, tally.raised),
        failed=tally.first_failed,
        elapsed=elapsed,
        output_keys=keys,
    )


def _output_keys(tool: ToolInfo) -> list[str]:
    """The data keys a looked-up tool's output schema declares (its batch's data columns)."""
    return declared_keys(tool.output_schema)


def _outside() -> int:
    """The `stacklevel` that makes a warning name the first frame of its caller's that is not the
    workbench's (nor the decorators around its entry points): the person's `wb.map` line."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (
        frame.f_globals.get("__name__", "").startswith("workbench_magic.") or frame.f_code.co_filename == _CONTEXTLIB
    ):
        frame, level = frame.f_back, level + 1
    return level


_CONTEXTLIB = contextlib.__file__


def _concurrency(value: Any) -> int:
    try:
        number = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        number = None
    if number is None or number < 1:
        raise UsageError(f"wb.map needs concurrency of at least 1 (a whole number), got {value!r}")
    return number


# ---- rows -------------------------------------------------------------------------------------
_FRAME_CHUNK = 1000
"""Rows of a DataFrame made into dicts at a time, when they are drawn as workers free up."""


def as_rows(rows: Any) -> list[dict[str, Any]]:
    """The rows of `wb.map` as argument dicts of JSON types: an iterable of mappings, or a DataFrame
    (one row per line). Numpy values become Python ones, dates ISO text; an argument whose value is
    missing (NaN, NA, NaT, a DataFrame's None) is NaN, for its call to leave out or refuse
    (`refuse_missing`); a value with no JSON form stays, for its row's call to refuse
    (`row_arguments`)."""
    return [arguments for _, arguments in _drawn(rows)]


def _drawn(rows: Any) -> Iterator[tuple[Mapping[str, Any], dict[str, Any]]]:
    """Each row and its arguments, made as they are drawn (`as_rows`); rows that are not an iterable
    of mappings or a DataFrame raise here, a row that is not a mapping when it is drawn."""
    if _is_dataframe(rows):
        return _arguments_of(_frame_records(rows), frame=True)
    if isinstance(rows, Mapping | str | bytes) or not isinstance(rows, Iterable):
        raise UsageError(f"wb.map needs rows: a list of argument mappings or a DataFrame, not a {type(rows).__name__}")
    return _arguments_of(rows)


def _frame_records(frame: Any) -> Iterator[dict[str, Any]]:
    for start in range(0, len(frame), _FRAME_CHUNK):
        yield from frame.iloc[start : start + _FRAME_CHUNK].to_dict(orient="records")


def _arguments_of(records: Iterable[Any], *, frame: bool = False) -> Iterator[tuple[Mapping[str, Any], dict[str, Any]]]:
    for index, row in enumerate(records):
        if not isinstance(row, Mapping):
            raise UsageError(f"wb.map needs a mapping of arguments per row; row {index} is a {type(row).__name__}")
        yield row, row_arguments(row, frame=frame)


def _is_dataframe(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "to_dict") and hasattr(value, "columns")


def _raised(ident: ToolIdentifier, arguments: dict[str, Any], error: WorkbenchError) -> ToolResult:
    """A row whose call raised, as an error result saying so (its error stays in `Batch.errors`)."""
    from mcp_types import CallToolResult, TextContent

    from workbench_magic.vocabulary.results import ToolResult

    raw = CallToolResult(content=[TextContent(type="text", text=str(error))], is_error=True)
    return ToolResult(identifier=ident, raw=raw, arguments=arguments)


class _Tally:
    """A batch's counts as rows end (loop thread; the caller's thread reads them once it ended)."""

    def __init__(self) -> None:
        self.done = 0
        self.failed = 0
        self.raised = 0
        self._failed_rows: list[int] = []

    def add(self, index: int, failed: bool, raised: bool) -> None:
        self.done += 1
        if failed:
            self.failed += 1
            self.raised += raised
            self._failed_rows.append(index)
            if len(self._failed_rows) > 2 * SHOWN:  # only the first ones are shown
                self._failed_rows = sorted(self._failed_rows)[:SHOWN]

    @property
    def first_failed(self) -> list[int]:
        """The failed rows a batch's repr lists: the first `SHOWN`, by index."""
        return sorted(self._failed_rows)[:SHOWN]


class _Resuming:
    """The rows of a checkpointed batch, drawn as workers free up: yields `(index, arguments)` of each
    row to call, and counts and passes over the rows the checkpoint holds (`tally`).

    Holds the keys of the rows in flight, and with a `key`, every key seen (to refuse a key given
    twice); with none, nothing that grows with the rows. With a `key`, a row the checkpoint holds
    under its key with other arguments keeps its old answer: the first of them are in `changed`."""

    def __init__(
        self,
        drawn: Iterator[tuple[Mapping[str, Any], dict[str, Any]]],
        key: RowKey,
        finished: Finished,
        retry_failed: bool,
        tally: _Tally,
    ) -> None:
        self._rows = enumerate(drawn)
        self._key = key
        self._finished = finished
        self._retry_failed = retry_failed
        self._tally = tally
        self._seen: dict[str, int] = {}
        self._ahead: tuple[int, dict[str, Any]] | None = None
        self.keys: dict[int, str] = {}
        """The key of each row drawn and not yet written."""
        self.moved: dict[str, int] = {}
        """Rows the checkpoint holds at another index, or hidden by a row written later there."""
        self.count = 0
        """Rows drawn so far (all of them, once drawing ended)."""
        self.changed: list[int] = []
        """The first rows (`CHANGED_SHOWN`) passed over whose arguments differ from the checkpoint's."""
        self.changed_count = 0

    def peek(self) -> bool:
        """Draw up to the first row to call (kept for the first worker); False when there is none."""
        try:
            self._ahead = next(self)
        except StopIteration:
            return False
        return True

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return self

    def __next__(self) -> tuple[int, dict[str, Any]]:
        if self._ahead is not None:
            ahead, self._ahead = self._ahead, None
            return ahead
        for index, (row, arguments) in self._rows:
            self.count = index + 1
            row_id = row_key(index, arguments, row, self._key)
            if self._key is not None:
                if row_id in self._seen:
                    raise UsageError(
                        f"Rows {self._seen[row_id]} and {index} have the same key {row_id!r}: "
                        "a checkpoint needs one per row"
                    )
                self._seen[row_id] = index
            done = self._finished.outcome.get(row_id)
            if done is not None and (done[0] == "ok" or not self._retry_failed):
                self._tally.add(index, done[0] != "ok", done[0] == "raised")
                if self._finished.latest.get(index) != row_id:
                    self.moved[row_id] = index
                if self._key is not None and self._finished.digests.get(row_id) != arguments_digest(arguments):
                    self.changed_count += 1
                    if len(self.changed) < CHANGED_SHOWN:
                        self.changed.append(index)
                continue
            self.keys[index] = row_id
            return index, arguments
        raise StopIteration


# ---- the coroutine on the loop ----------------------------------------------------------------
Finish = Callable[[int, dict[str, Any], "ToolResult", WorkbenchError | None], None]
"""What is done with a row that ended: (index, arguments, result, what its call raised)."""


class _Job:
    """One batch, on the loop thread: its workers, taking rows from one iterator, and its progress."""

    def __init__(
        self,
        call: CallRow,
        ident: ToolIdentifier,
        rows: Iterator[tuple[int, dict[str, Any]]],
        workers: int,
        timeout: float | None,
        channel: Channel,
        tally: _Tally,
        bar: _Bar | None,
        finish: Finish,
    ) -> None:
        self.call = call
        self.ident = ident
        self.rows = rows
        self.workers = workers
        self.timeout = timeout
        self.channel = channel
        self.tally = tally
        self.bar = bar
        self.finish = finish
        self.answered = 0
        """Rows answered by this run (not restored from a checkpoint)."""
        self._posted = -math.inf
        self._timer: asyncio.TimerHandle | None = None

    async def run(self) -> float:
        """Call every row; the seconds it took."""
        started = time.perf_counter()
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(self.workers):
                    group.create_task(self._worker())
        finally:
            if self._timer is not None:
                self._timer.cancel()
        return time.perf_counter() - started

    async def _worker(self) -> None:
        call, ident, timeout = self.call, self.ident, self.timeout
        for index, arguments in self.rows:  # one iterator, shared: each worker takes the next row
            error: WorkbenchError | None = None
            try:
                result = await call(ident, arguments, timeout, None)
            except WorkbenchError as exc:
                # No row answered yet and the target itself is wrong or unreachable: raise it, as
                # `call` would, rather than give every row the same error.
                if self.answered == 0 and isinstance(exc, NotFoundError | ConnectError):
                    raise
                error = exc
                result = _raised(ident, arguments, exc)
            self.answered += 1
            self.tally.add(index, result.is_error, error is not None)
            self.finish(index, arguments, result, error)
            if self.bar is not None:
                self._progress()

    def _progress(self) -> None:
        """Post the count to the caller's thread now, or schedule it (at most `UPDATES_PER_SECOND`)."""
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
        if self.bar is not None:
            self.channel.post(functools.partial(self.bar.show, self.tally.done, self.tally.failed))


# ---- the progress bar (the caller's thread only) ------------------------------------------------
class _Bar:
    """A tqdm bar: a widget in a kernel, text on stderr elsewhere (`tqdm.auto`). Made, updated and
    closed on the thread that waits for the batch."""

    def __init__(self, label: str, total: int | None, initial: int = 0) -> None:
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

    def close(self, tally: _Tally) -> None:
        """Show the final count (the batch ended, or stopped) and close."""
        if self._bar.total is None:
            self._bar.total = tally.done
        self.show(tally.done, tally.failed)
        self._bar.close()


__all__ = ["Batch", "as_rows", "run_batch"]
