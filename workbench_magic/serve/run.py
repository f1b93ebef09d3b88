"""Running `workbench-magic serve`: the process around a `WorkbenchServer` (server.py).

`serve()` builds the workbench and the server, runs them on the workbench's loop thread until the
wire ends (stdin EOF) or a signal comes, then closes every downstream server, side by side and
hurried (`SERVE_STOP`), and ends the process. SIGTERM and Ctrl-C stay handled until then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Literal, NoReturn

from workbench_magic.api.workbench import Workbench
from workbench_magic.engine.schema import preload as preload_schema_checks
from workbench_magic.serve.early import EarlyAnswers
from workbench_magic.serve.forwarding import ClientRoots
from workbench_magic.serve.server import SERVE_HISTORY_BYTES, SERVE_HISTORY_LIMIT, Mode, WorkbenchServer, all_lazy

logger = logging.getLogger("workbench_magic.server")


def _fast_loop() -> None:
    """uvloop for the served process's loop where it is installed (`WORKBENCH_LOOP=asyncio` opts
    out): every forwarded call passes the loop a dozen times, and uvloop's turns are cheaper."""
    if os.environ.get("WORKBENCH_LOOP", "") == "asyncio":
        return
    try:
        import uvloop
    except ImportError:
        return
    from workbench_magic.engine.runtime import LoopThread

    LoopThread.loop_factory = uvloop.new_event_loop


def serve(
    config: str | None = None,
    *,
    mode: Mode = "proxy",
    toolboxes: tuple[str, ...] = (),
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    early: EarlyAnswers | None = None,
) -> NoReturn:
    """Run the server until stdin closes (stdio), or SIGTERM / Ctrl-C; close every downstream
    server, then end the process (with the exit code).

    Over HTTP, `token` (else `$WORKBENCH_SERVE_TOKEN`) is required as `Authorization: Bearer`;
    a non-loopback `host` without one refuses to start. `toolboxes` (none: all) are the toolboxes
    served, in every mode."""
    from workbench_magic.serve import http as httpface

    token = httpface.serve_token(token) if transport == "http" else None
    sock = None
    if transport == "http":
        httpface.check_bind(host, token)
        sock = httpface.bind(host, port)  # before anything starts: a taken port is one line
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    _fast_loop()
    workbench = Workbench(config=config, history_limit=SERVE_HISTORY_LIMIT, history_bytes=SERVE_HISTORY_BYTES)
    if toolboxes:
        choose_toolboxes(workbench, toolboxes)
    # A loop busy importing cannot act on SIGTERM: on a loaded machine the first open's imports
    # took seconds, and a host SIGKILLs serve 2 s after SIGTERM (its servers then outlive it).
    preload_schema_checks()
    server = WorkbenchServer(workbench, mode)
    logger.info("serving %s (%s mode) over %s", workbench.config_source, mode, transport)
    if transport == "http" and host not in httpface.LOOPBACK:
        logger.warning("binding to %s: the workbench is reachable from other machines (token required)", host)

    stopper = _Stopper()
    previous = {signum: signal.signal(signum, stopper.signal) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        # The server runs on the workbench's own loop: a forwarded call goes downstream and back
        # without crossing threads (each crossing costs a wake-up and a GIL hand-over).
        if transport == "stdio":
            from workbench_magic.serve.stdio import run_stdio

            server.client_roots = ClientRoots(workbench)  # the one client owns the roots (forwarding.py)
            server.client_roots.install(server.lowlevel)
            lane = os.environ.get("WORKBENCH_LANE", "") != "off"
            face = run_stdio(server, lane=lane, early=early.handover(_all_lazy(workbench)) if early else None)
        else:
            assert sock is not None
            face = httpface.serve_http(server, host, sock, token, stop=stopper.event)
        stopping = _serve_until_stopped(face, stopper, server, workbench, winds_down=transport == "http")
        code = workbench.run_on_loop(stopping)
    finally:
        # Only now, every server closed: a SIGTERM until here was heard and waited for.
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    _exit_now(code)  # every server is closed


def choose_toolboxes(workbench: Workbench, toolboxes: tuple[str, ...]) -> None:
    """Serve only `toolboxes` of the config (`--toolbox`); a name the config lacks is one line
    (`NotFoundError`), and nothing starts."""
    settings = workbench.settings
    chosen = {name: settings.toolbox(name) for name in dict.fromkeys(toolboxes)}  # raises for an unknown name
    workbench.load_config(settings.model_copy(update={"toolboxes": chosen}))


def _all_lazy(workbench: Workbench) -> Callable[[str], bool]:
    """Whether every server of a toolbox starts lazily (its open answers from cached catalogs)."""
    return lambda toolbox: all_lazy(workbench, toolbox)


SERVE_STOP = (0.3, 0.2)
"""How serve stops its stdio servers when it ends: each gets 0.3 s to exit once its stdin closes,
then SIGTERM, then SIGKILL 0.2 s later. Hosts built on the MCP SDKs end serve's stdin, wait 2 s
and send SIGTERM: serve is gone well before (a notebook's close keeps the graceful 2 s). Half a
second of waiting leaves the rest of serve's second to a loaded machine (at 0.65 s, two test
suites side by side on 2 cores took serve 1.1 s)."""
STOP_DEADLINE = 1.0
"""Seconds after SIGTERM (or Ctrl-C, or stdin's end) by which serve has closed every server and ended. Hosts
SIGKILL serve 2 s after SIGTERM. On a starved machine the loop took 1.7 s to even see the signal,
so past this deadline a thread of its own SIGKILLs every server's process group and ends serve
(at 1.5 s, two test suites on 2 cores starved that thread past the host's 2 s too)."""
FACE_STOP = 0.5
"""Seconds the wire gets to end once serve is told to stop (HTTP: uvicorn's own shutdown), and
again once cancelled."""


def _kill_servers_and_exit(why: str) -> None:
    """`STOP_DEADLINE` ran out (on a thread of its own): SIGKILL every server's process group
    and end serve, whatever its loop is doing."""
    from workbench_magic.engine.transports import kill_running_servers

    kill_running_servers()
    logger.warning("%s: every downstream server closed (killed: the close ran past %g s)", why, STOP_DEADLINE)
    _exit_now(0)


def _exit_now(code: int) -> NoReturn:
    """End the process now, its logs and output flushed. Python's own shutdown would add a few
    tenths of a second, and wait for the SDK's stdin thread (stdin not a pipe), which nothing
    unblocks."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class _Stopper:
    """SIGTERM and Ctrl-C (main thread, which waits in `run_on_loop`) tell the serving coroutine
    (loop thread) to stop, and return: the loop closes everything, in order, and the handler stays
    installed until it has. A second signal changes nothing."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        """The serving loop, once serving started (a signal before that is seen as it starts)."""
        self.event = asyncio.Event()
        self.signalled: str | None = None
        self._deadline: threading.Timer | None = None

    def deadline(self, why: str) -> None:
        """Start the `STOP_DEADLINE` timer (once, on a thread of its own): serve is closing."""
        if self._deadline is None:
            self._deadline = threading.Timer(STOP_DEADLINE, _kill_servers_and_exit, args=(why,))
            self._deadline.daemon = True
            self._deadline.start()

    def signal(self, signum: int, frame: Any) -> None:
        # No logging here: the main thread may hold logging's lock when the signal lands.
        if self.signalled is None:
            self.signalled = signal.Signals(signum).name
            self.deadline(self.signalled)
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nothing left to stop
                self.loop.call_soon_threadsafe(self.event.set)

    def start(self) -> None:
        """On the serving loop, before serving."""
        self.loop = asyncio.get_running_loop()
        if self.signalled is not None:
            self.event.set()


async def _serve_until_stopped(
    face: Coroutine[Any, Any, None],
    stopper: _Stopper,
    server: WorkbenchServer,
    workbench: Workbench,
    *,
    winds_down: bool = False,
) -> int:
    """Serve until the wire ends (stdin EOF) or a signal; then stop the wire (one that `winds_down`
    by itself when told gets `FACE_STOP` seconds first; stdio is cancelled at once) and close every
    downstream server, side by side and hurried (`SERVE_STOP`). The exit code."""
    stopper.start()
    serving = asyncio.ensure_future(_without_exit(face))
    stopped = asyncio.ensure_future(stopper.event.wait())
    try:
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not serving.done():  # told to stop
            if winds_down and stopper.event.is_set():
                await asyncio.wait({serving}, timeout=FACE_STOP)
            serving.cancel()
            await asyncio.wait({serving}, timeout=FACE_STOP)
        why = stopper.signalled or "the client is gone"
        stopper.deadline(why)  # stdin's end too: a host signals 2 s later, and SIGKILLs 2 s after
        logger.info("%s: closing every downstream server", why)
        server.close()
        await workbench.aclose_all(hurry=SERVE_STOP)
        logger.info("every downstream server closed")
    if serving.cancelled() or not serving.done():
        return 0
    error = serving.exception()
    if isinstance(error, _Exited):
        return error.code
    if error is not None:
        raise error
    return 0


class _Exited(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


async def _without_exit(face: Coroutine[Any, Any, None]) -> None:
    """`face`, with a `SystemExit` (uvicorn's when it cannot bind; it logged why) as an ordinary
    exception: out of a task, asyncio would let it through the loop and end the loop thread."""
    try:
        await face
    except SystemExit as exc:
        raise _Exited(exc.code if isinstance(exc.code, int) else 1) from None
