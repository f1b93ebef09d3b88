"""A fork server ("zygote") for the Python test servers: a server's start costs a fork, not an import.

Usage (tests/conftest.py starts one per pytest process)::

    python tests/servers/zygote.py SOCKET OWNER_PID [LOG]

Importing the MCP SDK (its pydantic models) costs a test server about a second of CPU; the suite
starts well over a thousand servers. The zygote imports the modules the test servers use once,
then listens on the unix socket SOCKET. `launch.py` (a stdlib-only launcher, what a test's server
config runs) connects and sends its argv, working directory, environment and signal dispositions,
with its fds 0, 1 and 2 (SCM_RIGHTS). The zygote forks a child that takes over those fds, that
environment, directory and argv, and runs the script as ``__main__``, as ``python SCRIPT ARGS``
would (``-m MODULE ARGS`` and ``-c CODE ARGS`` as python runs them); the launcher learns the child's
pid, forwards the signals it gets, and exits as the child did (same code, or killed by the same
signal). The server still speaks MCP over the very pipes the client made: only who imported the
SDK differs.

The zygote detaches itself (double fork, new session), so it is no child of the pytest process.
It ends, SIGKILLing the servers it forked, when OWNER_PID ends or it gets SIGTERM; a server
ends (SIGKILL) when its launcher's connection closes before the server exited (the launcher was
killed). The zygote is single-threaded and runs no event loop, so a child inherits no thread and
no loop.

Protocol (one connection per server): the launcher sends a 4-byte big-endian length with fds 0, 1
and 2 attached, then that many bytes of `marshal` data: ``(argv, cwd, environ, ignored signals,
blocked signals, ([(encoding, errors) of stdin, stdout, stderr], unbuffered))``, argv, cwd and
environ as bytes. The zygote answers ``b"P"`` + pid (4 bytes) once the child runs, then ``b"X"`` +
the wait status (4 bytes) when the child ends.
"""

from __future__ import annotations

import os
import sys

# ---- stdlib only until the detach: the caller waits for the first process to exit -----------


def _detach() -> None:
    """Double fork: the caller (started with a session of its own) exits at once, the zygote
    is reparented away from the pytest process."""
    if os.fork() > 0:
        os._exit(0)


if __name__ == "__main__":
    _detach()

import gc  # noqa: E402
import io  # noqa: E402
import marshal  # noqa: E402
import runpy  # noqa: E402
import selectors  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

from launch import recv_exact  # noqa: E402

PRELOAD = [
    # what the test servers import at top level (testserver, clientserver, apps_server,
    # surfaceserver, faultserver, lingerserver, legacy) ...
    "argparse",
    "itertools",
    "json",
    "logging",
    "random",
    "struct",
    "uuid",
    "warnings",
    "zlib",
    "anyio",
    "mcp_types",
    "mcp_types.version",
    "pydantic",
    "mcp",
    "mcp.server",
    "mcp.server.apps",
    "mcp.server.connection",
    "mcp.server.context",
    "mcp.server.models",
    "mcp.server.mcpserver",
    "mcp.server.mcpserver.context",
    "mcp.server.mcpserver.exceptions",
    "mcp.server.mcpserver.resolve",
    "mcp.server.mcpserver.resources",
    "mcp.server.mcpserver.tools",
    "mcp.server.mcpserver.utilities.types",
    "mcp.shared.exceptions",
    # ... and what they import while they serve (stdio, the asyncio backend, rich logging)
    "anyio._backends._asyncio",
    "anyio.lowlevel",
    "anyio.streams.stapled",
    "anyio.streams.text",
    "anyio.streams.tls",
    "mcp.server.runner",
    "mcp.server.stdio",
    "pkgutil",
    "rich.console",
    "rich.logging",
    "rich.markup",
    "rich.theme",
    "zoneinfo",
    # ... and over HTTP (HttpServer)
    "uvicorn",
    "uvicorn.config",
    "uvicorn.main",
    "uvicorn.server",
    "uvicorn.lifespan.on",
    "uvicorn.loops.asyncio",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.auto",
    "sse_starlette",
    "starlette.applications",
    "starlette.routing",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server.sse",
    # ... and what `python -m workbench_magic serve` imports besides itself (never workbench_magic:
    # a forked serve imports the package under test as a started one does)
    "mcp.client",
    "mcp.client.client",
    "mcp.client.stdio",
    "mcp.server.lowlevel",
    "uvloop",
    # ... and what the conformance client (tests/conformance/client.py) imports to connect over HTTP
    "httpx2",
    "jwt",
    "mcp.client.auth",
    "mcp.client.auth.extensions.client_credentials",
    "mcp.client.auth.extensions.identity_assertion",
    "mcp.client.streamable_http",
]

_HEADER = struct.Struct("!I")
_PID = struct.Struct("!i")
# What a fresh interpreter sets itself (the rest it inherits from the process that started it).
_PYTHON_IGNORES = {signal.SIGPIPE, signal.SIGXFSZ}
_libc = None


def log(message: str) -> None:
    print(f"zygote {os.getpid()} {time.strftime('%H:%M:%S')}: {message}", file=sys.stderr, flush=True)


def preload() -> None:
    global _libc
    for name in PRELOAD:
        try:
            __import__(name)
        except Exception as exc:  # an optional module: the server imports it itself if it needs it
            log(f"preload {name}: {type(exc).__name__}: {exc}")
    try:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    except Exception:  # pragma: no cover - no prctl: a child outlives a SIGKILLed zygote
        _libc = None
    # Imported modules never die: out of the collector's sight, their pages stay shared after fork.
    gc.collect()
    gc.freeze()


# ---- the child: becomes `python SCRIPT ARGS` on the launcher's fds ---------------------------


def _stdio(fd: int, mode: str, encoding: str, errors: str, unbuffered: bool) -> io.TextIOWrapper:
    """A standard stream as the interpreter makes it at start-up (create_stdio)."""
    write = mode == "w"
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: io.BufferedIOBase
    if unbuffered and write:
        buffered = raw  # type: ignore[assignment]
    elif write:
        buffered = io.BufferedWriter(raw)
    else:
        buffered = io.BufferedReader(raw)
    line_buffering = not unbuffered and (raw.isatty() or fd == 2)
    stream = io.TextIOWrapper(
        buffered, encoding, errors, newline="\n", line_buffering=line_buffering, write_through=unbuffered and write
    )
    stream.mode = mode  # type: ignore[misc]
    return stream


def _script_traceback(exc: BaseException, filename: str) -> object:
    """The traceback from the script's first frame on (the zygote's and runpy's frames are ours)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb if tb is not None else exc.__traceback__


def _exit_code(exc: SystemExit) -> int:
    """The status `python` exits with for an uncaught SystemExit."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _finalize() -> None:
    """What the interpreter does at exit before the process ends: join the non-daemon threads, run
    the atexit callbacks, flush the standard streams."""
    import atexit
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except Exception:
        traceback.print_exc()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def run_child(request: tuple, fds: list[int], zygote: int) -> None:
    """In the forked child: take over the launcher's process state and run the script. Never returns."""
    code = 1
    try:
        argv_b, cwd_b, environ_b, ignored, blocked, (stdio, unbuffered) = request
        # Signals first: the zygote's SIGTERM handler must not run here.
        for signum in signal.valid_signals():
            if signum in (signal.SIGKILL, signal.SIGSTOP):
                continue
            try:
                ignore = signum in ignored or signum in _PYTHON_IGNORES
                signal.signal(signum, signal.SIG_IGN if ignore else signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        if signal.SIGINT not in ignored:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, [signal.Signals(s) for s in blocked if s in signal.valid_signals()])
        if _libc is not None:
            _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a SIGKILLed zygote takes its servers along
        if os.getppid() != zygote:
            os._exit(1)
        os.setsid()  # a session and process group of its own, as the server had (start_new_session)

        # The launcher's fds become 0, 1, 2; nothing else of the zygote's stays open.
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2:
                try:
                    os.close(fd)
                except OSError:
                    pass

        environ = {k: v for k, v in environ_b.items()}
        os.environb.clear()
        os.environb.update(environ)
        os.chdir(cwd_b)
        argv = [os.fsdecode(a) for a in argv_b]
        # `SCRIPT ARGS`, `-m MODULE ARGS` or `-c CODE ARGS`, as python takes them
        option = argv[0] if argv[0] in ("-m", "-c") and len(argv) > 1 else None
        script = argv[0] if option is None else ""
        sys.argv = argv if option is None else [option, *argv[2:]]  # `-m` sets argv[0] to the module's file
        sys.orig_argv = [sys.executable, *argv]
        # sys.path as python builds it: the script's folder (-m: the working directory, -c: ""),
        # PYTHONPATH, then the rest.
        pythonpath = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        first = {None: os.path.dirname(os.path.realpath(script)), "-m": os.getcwd(), "-c": ""}[option]
        sys.path[:] = [first, *pythonpath, *_BASE_PATH]
        sys.path_importer_cache.clear()

        # The launcher's interpreter set its streams up from the same environment: as it did.
        sys.stdin = sys.__stdin__ = _stdio(0, "r", *stdio[0], unbuffered)
        sys.stdout = sys.__stdout__ = _stdio(1, "w", *stdio[1], unbuffered)
        sys.stderr = sys.__stderr__ = _stdio(2, "w", *stdio[2], unbuffered)

        import random

        random.seed()
    except BaseException:
        try:
            traceback.print_exc()
        finally:
            os._exit(1)

    interrupted = False
    try:
        try:
            if option is None:
                runpy.run_path(script, run_name="__main__")
            elif option == "-m":
                runpy._run_module_as_main(argv[1])  # type: ignore[attr-defined]  # what `python -m` runs
            else:
                main = types.ModuleType("__main__")  # a fresh __main__, not the zygote's
                sys.modules["__main__"] = main
                exec(compile(argv[1], "<string>", "exec"), main.__dict__)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            try:
                exc = exc.with_traceback(_script_traceback(exc, script))  # type: ignore[arg-type]
                sys.excepthook(type(exc), exc, exc.__traceback__)
            except BaseException:
                traceback.print_exception(exc)
            code = 1
        try:
            _finalize()
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:
            traceback.print_exc()
        if interrupted:  # as python does: die of SIGINT
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        os._exit(code)


# ---- the zygote -------------------------------------------------------------------------------


class Zygote:
    def __init__(self, path: str, owner: int) -> None:
        self.path = path
        self.owner = owner
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.children: dict[int, tuple[socket.socket | None, int]] = {}  # pid -> (connection, pidfd)
        self.spawned = 0
        self.owner_fd: int | None = None

    def bind(self) -> None:
        """Listen before the imports: launchers that come early wait in the backlog."""
        temporary = self.path + ".new"
        self.listener.bind(temporary)
        self.listener.listen(socket.SOMAXCONN)
        os.rename(temporary, self.path)
        # written whole, then renamed: whoever waits for the file never reads it half written
        with open(self.path + ".pid.new", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.rename(self.path + ".pid.new", self.path + ".pid")

    def serve(self) -> None:
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        try:
            self.owner_fd = os.pidfd_open(self.owner)
            self.selector.register(self.owner_fd, selectors.EVENT_READ, ("owner", None))
        except ProcessLookupError:
            return
        except (AttributeError, OSError):
            self.owner_fd = None  # no pidfd: poll the owner's pid below
        timeout = None if self.owner_fd is not None else 0.5
        while True:
            for key, _ in self.selector.select(timeout):
                kind, pid = key.data
                if kind == "accept":
                    self.accept()
                elif kind == "owner":
                    return
                elif kind == "exit":
                    self.reap(pid)
                elif kind == "conn":
                    self.launcher_gone(pid, key.fileobj)  # type: ignore[arg-type]
            if self.owner_fd is None and not _alive(self.owner):
                return

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        fds: list[int] = []
        try:
            conn.settimeout(10)
            header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
            if len(fds) != 3:
                raise ConnectionError(f"expected 3 fds, got {len(fds)}")
            header += recv_exact(conn, _HEADER.size - len(header))
            (size,) = _HEADER.unpack(header)
            request = marshal.loads(recv_exact(conn, size))
            self.fork(conn, request, fds)
        except (OSError, ValueError, EOFError, TypeError) as exc:
            log(f"bad request: {exc!r}")
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)

    def fork(self, conn: socket.socket, request: tuple, fds: list[int]) -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing buffered here may reach a child's pipes
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                self.selector.close()
                self.listener.close()
                conn.close()
                for other, _ in self.children.values():
                    if other is not None:
                        other.close()
            finally:
                run_child(request, fds, zygote)
        self.spawned += 1
        pidfd = os.pidfd_open(pid)
        self.children[pid] = (conn, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, ("exit", pid))
        try:
            conn.sendall(b"P" + _PID.pack(pid))
        except OSError:
            self.launcher_gone(pid, conn)
            return
        conn.setblocking(False)
        self.selector.register(conn, selectors.EVENT_READ, ("conn", pid))
        script, *args = (os.fsdecode(a) for a in request[0])
        log(f"spawn {self.spawned}: pid {pid} {os.path.basename(script)} {args}")

    def launcher_gone(self, pid: int, conn: socket.socket) -> None:
        """The launcher's connection closed (or spoke out of turn) before the server ended: kill it."""
        try:
            if conn.recv(1):
                return  # not a close: the launcher sends nothing after its request
        except BlockingIOError:
            return
        except OSError:
            pass
        log(f"launcher of {pid} gone: SIGKILL")
        _kill(pid, signal.SIGKILL)
        self._forget_conn(pid)

    def _forget_conn(self, pid: int) -> None:
        conn, pidfd = self.children[pid]
        if conn is not None:
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            conn.close()
            self.children[pid] = (None, pidfd)

    def reap(self, pid: int) -> None:
        conn, pidfd = self.children.pop(pid)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        if conn is not None:
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            try:
                conn.setblocking(True)
                conn.settimeout(5)
                conn.sendall(b"X" + _PID.pack(status))
            except OSError:
                pass
            conn.close()

    def shutdown(self) -> None:
        for pid in list(self.children):
            _kill(pid, signal.SIGKILL)
        for pid in list(self.children):
            try:
                self.reap(pid)
            except ChildProcessError:
                pass
        for path in (self.path, self.path + ".new", self.path + ".pid", self.path + ".pid.new"):
            try:
                os.unlink(path)
            except OSError:
                pass
        import resource

        own, forked = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = own.ru_utime + own.ru_stime, forked.ru_utime + forked.ru_stime
        log(f"exit after {self.spawned} spawns; CPU-s: zygote {cpu[0]:.2f}, servers {cpu[1]:.2f}")


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)


_BASE_PATH: list[str] = []


def main() -> None:
    global _BASE_PATH
    path, owner = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3:
        fd = os.open(sys.argv[3], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is the owner's to handle
    zygote = Zygote(path, owner)
    try:
        zygote.bind()
        own_path = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
        _BASE_PATH = [p for p in sys.path[1:] if p not in own_path]
        started = time.process_time()
        preload()
        log(f"ready ({len(sys.modules)} modules, {time.process_time() - started:.2f} CPU-s)")
        zygote.serve()
    finally:
        zygote.shutdown()


if __name__ == "__main__":
    main()
