"""`Workbench`'s calls: `call`, `acall`, `submit`, `map`, and long-running work (`start`, `tasks`).

Each call is one coroutine on the loop thread (`_call`): the core's one pipeline (`Core.call`:
open, connect, look up, prepare, call, record), given the api's argument rules (`prepared`), and
the MCP App view of a UI tool. The sync methods wait for it here; the handles of started work are
in tasks.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench_magic.api.asking import waiting_channel
from workbench_magic.api.batches.dask_map import is_dask_frame
from workbench_magic.api.batches.run import run_batch
from workbench_magic.api.targets import parse_identifier
from workbench_magic.api.tasks.handles import TaskHandle, TaskList, following, handle_of, noting, start_job
from workbench_magic.engine.runtime import Call, Channel, LoopChannel, at_the_caller
from workbench_magic.vocabulary.arguments import given_arguments, has_null, leave_out_nulls, refuse_missing
from workbench_magic.vocabulary.errors import NotFoundError, UsageError, WorkbenchError, task_not_found
from workbench_magic.vocabulary.results import ToolResult

if TYPE_CHECKING:
    from workbench_magic.api.apps.views import AppHost, HostWorkbench
    from workbench_magic.api.context import Context
    from workbench_magic.engine.core import Prepare
    from workbench_magic.engine.requesting import ProgressCallback
    from workbench_magic.engine.tasks import StatusCallback
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.listings import ToolInfo


def prepared(missing: Mapping[str, str]) -> Prepare:
    """The api's rules for a call's arguments once its tool is found (the pipeline's `prepare`):
    a missing value (NaN, NA, NaT) of a required argument refused, a null its schema does not
    allow left out, then the schema check."""

    def prepare(tool: ToolInfo, arguments: dict[str, Any], validate: bool) -> dict[str, Any]:
        refuse_missing(tool, missing)
        if has_null(arguments):
            arguments = leave_out_nulls(tool, arguments, lambda name: allows_null(tool.input_schema, name))
        if validate:
            validate_arguments(tool, arguments)
        return arguments

    # Schema checks load jsonschema-rs: imported on first use, so `%load_ext` stays fast.
    from workbench_magic.engine.schema import allows_null, validate_arguments

    return prepare


class Calls:
    """A workbench's calls and started work: `call`, `acall`, `submit`, `map`, `start`, `tasks`, `task`.

    Args:
        context: the workbench's shared context.
        host: what an MCP App view calls back into (the workbench: its lookups, calls, reads, events).
        render_apps: the workbench's `render_apps`, read at each call.
        map_dask: `wb.map` over a Dask DataFrame (the workbench's: it makes workbenches on workers).
    """

    def __init__(
        self,
        context: Context,
        host: HostWorkbench,
        *,
        render_apps: Callable[[], bool],
        map_dask: Callable[..., Any],
    ) -> None:
        self._context = context
        self._host = host
        self._render_apps = render_apps
        self._map_dask = map_dask

    def _app_host(self) -> AppHost:
        from workbench_magic.api.apps.views import AppHost

        context = self._context

        def frame(view: Any, bundle: dict[str, Any]) -> dict[str, Any]:
            return context.presenters.frame(view, bundle)  # read at display: presenters may change

        return AppHost(self._host, context.core, context.loop, frame)

    @at_the_caller  # a user error or an interrupt shows the person's frames and the one line
    def call(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        server_log: Callable[[str], None] | None = None,
    ) -> ToolResult:
        """Call a tool and wait for its `ToolResult` (a tool error is in `.is_error`, not raised).

        `progress(progress, total, message)` is called in this thread for each progress
        notification, `server_log(line)` for each log message at warning or above the server sends
        meanwhile. A server's questions (elicitation) are asked here, with `input()`, unless
        `elicitation_handler` answers them. Ctrl-C / kernel interrupt cancels the call on the server.
        A configured toolbox that is not open is opened first.

        Args:
            identifier: the tool: `"toolbox/server/tool"`, `"toolbox__server__tool"`, a mapping, a
                `ToolIdentifier` or a `ToolInfo`.
            arguments: a mapping of the tool's arguments (None: none), sent as JSON values (numpy
                and pandas values as plain ones, dates as ISO text); an argument whose value is
                missing (NaN, NA, NaT) is left out, so its default applies (a required one is an
                `ArgumentError`), and so is a None for an optional one whose schema does not allow
                null; checked against its input schema first when `validate_arguments` is on.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.
            server_log: called with each log line at warning or above.

        Returns:
            The tool's answer: `.data`, `.text`, `.is_error`, `.to_pandas()`, ...

        Raises:
            InvalidIdentifierError: `identifier` cannot be parsed.
            NotFoundError: no such toolbox, server or tool.
            ConnectError: the server could not connect.
            UsageError: `arguments` are not a mapping (a JSON text, a list); nothing was sent.
            ArgumentError: the arguments do not fit the tool's input schema, a required one is missing
                (NaN, NA, NaT), or one has no JSON form (an object, a set, bytes, NaN inside a value)
                or cannot be encoded (a lone surrogate); the message names it; nothing was sent.
            CallTimeoutError: the call ran past its time limit and was cancelled on the server.
            ToolError: the call failed (transport, protocol error, lost connection).
            UrlElicitationRequired: the server needs the person to visit links first (`.urls`).

        Example:
            ```python
            result = wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 5})
            result.data["total"]
            result.to_pandas()

            def told(done, total, message):
                print(f"{done}/{total}: {message}")

            wb.call("demo/datasets/profile", {"dataset": "penguins"}, progress=told)
            ```
        """
        try:
            return self._context.run(  # type: ignore[no-any-return]
                self._acall(identifier, arguments, timeout, progress), waiting_channel(server_log)
            )
        except KeyboardInterrupt as exc:
            self._interrupted(exc, identifier, arguments)
            raise

    def submit(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        channel: Channel | None = None,
    ) -> Call[ToolResult]:
        """Start a call and return at once (for widgets): `future.cancel()` cancels it on the server.

        `progress` runs on `channel`'s thread (on the loop thread without one); done-callbacks
        of the future run on the loop thread. The future settles only after the call has ended
        (also when cancelled).

        Args:
            identifier: the tool, as `call` takes it.
            arguments: the tool's arguments.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.
            channel: where `progress` and the server's questions run.

        Returns:
            The call's future, settling with its `ToolResult` or its error.
        """
        return self._context.loop.spawn(self._acall(identifier, arguments, timeout, progress), channel)

    async def acall(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        channel: Channel | None = None,
    ) -> ToolResult:
        """`call` for `await` (from the kernel's loop or any other).

        `progress` runs on the caller's loop, or on `channel`'s when one is given (where the server's
        questions go too).

        Args:
            identifier: the tool, as `call` takes it.
            arguments: the tool's arguments.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.
            channel: where `progress` and the server's questions run (None: the caller's loop).

        Returns:
            The tool's answer (a tool error is in `.is_error`, not raised).

        Raises:
            WorkbenchError: as `call` raises them.

        Example:
            ```python
            result = await wb.acall("demo/datasets/query", {"dataset": "penguins"})
            ```
        """
        if channel is None and not self._context.loop.in_loop():
            channel = LoopChannel(asyncio.get_running_loop(), asker=self._context.presenters.asker())
        try:
            return await self._context.arun(self._acall(identifier, arguments, timeout, progress), channel)  # type: ignore[no-any-return]
        except asyncio.CancelledError as exc:
            self._interrupted(exc, identifier, arguments)
            raise

    @at_the_caller
    def map(
        self,
        target: Any,
        rows: Any,
        *,
        concurrency: int = 8,
        timeout: float | None = None,
        progress: bool = True,
        checkpoint: str | os.PathLike[str] | None = None,
        key: str | Callable[[Mapping[str, Any]], Any] | None = None,
        retry_failed: bool = False,
        client: Any = None,
    ) -> Any:
        """Call one tool once per row, at most `concurrency` calls at once; a `Batch` in row order.

        Rows are argument mappings (a list, an iterator, a generator), or a DataFrame's lines. A
        progress bar shows meanwhile (`progress=False`: none). A tool error stays that row's result
        (`.is_error`); a row whose call raised (a timeout, arguments that do not fit) holds an error
        result with what was raised as its text, its error in `Batch.errors`: neither stops the batch.
        `timeout` is per call. Ctrl-C / kernel interrupt cancels the calls still running, on the server.

        With `checkpoint`, each row is written there as it ends (its key, arguments, outcome and
        answer: a Parquet dataset folder where pyarrow is installed and the path does not end in
        `.jsonl`, else a JSON Lines file), and a batch run again with the same checkpoint calls only
        the rows it does not hold yet: an interrupt, a killed kernel or a lost server costs only the
        rows that had not finished. The progress bar starts at the rows already done;
        `Batch.load(path)` reads a checkpoint back.

        Args:
            target: the tool, as `call` takes it.
            rows: an iterable of argument mappings, or a DataFrame (one row per line; numpy values become
                Python ones, dates ISO text; an empty cell (NaN, None, NA, NaT) leaves its argument
                out, so its default applies, and is that row's `ArgumentError` for a required one).
            concurrency: how many calls run at once (at least 1).
            timeout: seconds each call may take.
            progress: whether to show a progress bar (a widget in a kernel, text on stderr elsewhere).
            checkpoint: where each finished row is kept (made when missing).
            key: how the checkpoint tells rows apart: a column's name, or a function of a row's
                arguments; None: the row's index and a hash of its arguments.
            retry_failed: call again the rows the checkpoint holds as failed (a tool error, or a call
                that raised).
            client: with a Dask DataFrame, the `distributed.Client` to run on (None: `map_cluster`,
                else Dask's default scheduler).

        A Dask DataFrame maps each partition where Dask runs it, by that worker's own workbench (made
        from the same config file; its servers start on first use and stay for later partitions), and
        gives a Dask DataFrame: the rows in each partition's order, with `result` (a row's data, else
        its text) and `error` (its text, None when it succeeded). Needs the `dask` extra; a server
        that runs in this process cannot travel to workers (a one-line `UsageError`).

        Returns:
            One `ToolResult` per row, in row order (a Dask DataFrame for a Dask DataFrame).

        Raises:
            UsageError: `rows` are not mappings, `concurrency` is below 1, two rows have one `key`, or
                `checkpoint` is another tool's (or no checkpoint); nothing ran.
            InvalidIdentifierError: `target` cannot be parsed.
            NotFoundError: the tool does not exist (raised as `call` would, before any row is answered).
            ConnectError: the server could not connect (likewise).

        Example:
            ```python
            batch = wb.map("demo/datasets/describe_dataset", [{"name": n} for n in ("penguins", "sales")])
            batch.errors  # {} when no call raised
            batch.to_pandas()
            ```
        """
        if is_dask_frame(rows):
            if checkpoint is not None:
                raise UsageError("A checkpoint is for a map in this process; a Dask map keeps its rows in Dask")
            return self._map_dask(target, rows, concurrency=concurrency, timeout=timeout, client=client)
        return run_batch(
            self._acall,
            self._context.run,
            target,
            rows,
            concurrency=concurrency,
            timeout=timeout,
            progress=progress,
            lookup=self.lookup,
            checkpoint=checkpoint,
            key=key,
            retry_failed=retry_failed,
        )

    async def lookup(self, ident: ToolIdentifier) -> ToolInfo:
        """The tool as a call finds it: its toolbox opened, its server connected, then looked up."""
        _, tool = await self._context.core.looked_up(ident, self._context.settings)
        return tool

    def _interrupted(self, exc: BaseException, identifier: Any, arguments: Mapping[str, Any] | None) -> None:
        """An interrupted call of a UI tool: `exc.app` is its view, told `tool-cancelled`."""
        if not self._render_apps():
            return
        from workbench_magic.api.apps.views import give_cancelled_view

        try:
            ident = parse_identifier(identifier)
        except WorkbenchError:
            return
        give_cancelled_view(exc, self._app_host(), ident, dict(arguments or {}), "The call was interrupted")

    async def _acall(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
    ) -> ToolResult:
        ident = parse_identifier(identifier)
        args, missing = given_arguments(arguments, ident)
        return await self._call(ident, args, missing, timeout, progress)

    async def _call(
        self,
        ident: ToolIdentifier,
        args: dict[str, Any],
        missing: Mapping[str, str],
        timeout: float | None,
        progress: ProgressCallback | None,
        *,
        prefer_task: bool = False,
        on_status: StatusCallback | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        call = self._context.core.call(
            ident,
            args,
            timeout,
            progress,
            self._context.settings,
            prepared(missing),
            prefer_task=prefer_task,
            on_status=on_status,
            on_progress=on_progress,
        )
        if not self._render_apps():
            return await call
        from workbench_magic.api.apps.views import with_view

        return await with_view(call, self._app_host(), ident, args)

    # ---- long-running work (api/tasks/handles.py) ---------------------------------------------------
    def start(
        self,
        target: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> TaskHandle:
        """Start a call and return its `TaskHandle` at once.

        It is an MCP task where the server runs the tool as one (`execution.taskSupport` required or
        optional), else a call in the background. `handle.result()` waits, `handle.cancel()` stops it
        (on the server too), `await handle` works on any loop; `wb.tasks()` lists the session's
        handles. In a kernel the server's questions and `progress` reach this cell's loop; elsewhere
        questions go to `elicitation_handler` (else they are declined).

        Args:
            target: the tool, as `call` takes it.
            arguments: the tool's arguments.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.

        Returns:
            The handle of the started work (`t1`, `t2`, ... in this session).

        Raises:
            InvalidIdentifierError: `target` cannot be parsed (other failures end the task: `failed`).
            UsageError: `arguments` are not a mapping; nothing started.
            ArgumentError: an argument has no JSON form or cannot be encoded; nothing started.

        Example:
            ```python
            handle = wb.start("demo/datasets/profile", {"dataset": "weather"})
            handle.status  # "working"
            result = handle.result(timeout=60)
            ```
        """
        ident = parse_identifier(target)
        args, missing = given_arguments(arguments, ident)
        channel: Channel | None = None
        core, loop = self._context.core, self._context.loop
        if missing:  # refused here when the tool is known; else its call looks it up, and refuses
            try:
                tool = core.tool(ident, self._context.settings)
            except WorkbenchError:
                pass
            else:
                refuse_missing(tool, missing)
        try:  # a caller on the workbench's own loop (serve) has no loop of its own to ask on
            channel = (
                None
                if loop.in_loop()
                else LoopChannel(asyncio.get_running_loop(), asker=self._context.presenters.asker())
            )
        except RuntimeError:
            pass

        def begin() -> TaskHandle:
            job = core.jobs.new(ident, args)
            return start_job(
                job,
                lambda: self._call(
                    ident,
                    args,
                    missing,
                    timeout,
                    progress,
                    prefer_task=True,
                    on_status=following(job),
                    on_progress=noting(job),
                ),
                loop,
                channel,
                display,
            )

        display = self._context.presenters.task_display
        return loop.run_sync(begin)

    def tasks(self) -> TaskList:
        """This session's `TaskHandle`s, the very ones `wb.start` returned, running first; a line each."""
        core = self._context.core
        return self._context.loop.run_sync(lambda: TaskList(handle_of(job) for job in core.jobs.listing()))

    def task(self, id: str) -> TaskHandle:
        """The handle of task `id` (`t1`).

        Args:
            id: the session's id of the task.

        Returns:
            Its handle, the one `wb.start` returned.

        Raises:
            NotFoundError: no task `id` in this session.
        """
        core = self._context.core

        def find() -> TaskHandle | None:
            job = core.jobs.get(id)
            return None if job is None else handle_of(job)

        handle = self._context.loop.run_sync(find)
        if handle is None:
            raise NotFoundError(task_not_found(id, [h.id for h in self.tasks()]))
        return handle
