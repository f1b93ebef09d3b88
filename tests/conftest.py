"""Shared fixtures: real test servers, npm reference servers, child-process accounting."""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from workbench_magic import Workbench
from workbench_magic.engine.schema import import_jsonschema

if TYPE_CHECKING:
    from jupyter_client.manager import KernelManager

# jsonschema, imported plainly, builds rfc3987_syntax's grammar: 1.6 CPU-s in each pytest process
# whose tests import it (test modules do at collection). Imported the workbench's way first, once.
import_jsonschema()

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "tests" / "servers"
TESTSERVER = SERVERS / "testserver.py"
FAULTSERVER = SERVERS / "faultserver.py"
NODE_MODULES = SERVERS / "node_modules" / "@modelcontextprotocol"
PYTHON = sys.executable

# Two pytest plugins that come with dependencies (langsmith's, through langchain-core, and
# hypothesis's) cost a starting pytest 2.5 of its 3.5 CPU seconds. Every pytest this suite starts
# (the xdist workers, the exported tests' runs, a notebook's `!pytest`) runs without them; the
# hypothesis tests run the same without its plugin (it only adds reporting options).
UNUSED_PLUGINS = "-p no:langsmith_plugin -p no:hypothesispytest"
if UNUSED_PLUGINS not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {UNUSED_PLUGINS}".strip()


# ---- kernels: over Unix sockets, not TCP ports ------------------------------------------------
# jupyter_client picks a kernel's five TCP ports free, then the kernel binds them: between the two,
# another process may take one (two suites side by side did: "Address already in use", the kernel
# died before its first reply). A kernel the tests start talks over IPC sockets in a folder of this
# pytest process's own, where no other process makes any.
_IPC = tempfile.mkdtemp(prefix="wbk-")
atexit.register(shutil.rmtree, _IPC, ignore_errors=True)


def kernel_manager(kernel_name: str = "python3", **options: Any) -> KernelManager:
    """A jupyter_client `KernelManager` whose kernel talks over IPC sockets (see above)."""
    from jupyter_client.manager import KernelManager

    prefix = os.path.join(_IPC, secrets.token_hex(4))
    return KernelManager(kernel_name=kernel_name, transport="ipc", ip=prefix, **options)


def children(pid: int | None = None) -> set[int]:
    """Live (non-zombie) child processes of `pid` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(entry))
    return out


def command_line(pid: int) -> str:
    """A process's command line, its arguments joined by spaces ("" when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def running(text: str) -> set[int]:
    """The live (non-zombie) processes of this machine whose command line holds `text`."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and text in command_line(int(entry)):
            try:
                with open(f"/proc/{entry}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                found.add(int(entry))
    return found


def process_state(pid: int) -> str:
    """A process's state and signal masks (/proc), or that it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            lines = f.read().splitlines()
    except OSError:
        return "gone"
    wanted = ("State:", "PPid:", "SigPnd:", "ShdPnd:", "SigBlk:", "SigIgn:", "SigCgt:")
    return "; ".join(line.replace("\t", " ") for line in lines if line.startswith(wanted))


def interrupt_main_when(condition: Callable[[], bool], limit: float) -> threading.Thread:
    """A started thread that sends SIGINT to the main thread (Ctrl-C) once `condition()` holds, or
    after `limit` seconds in any case (a test that waits for the interrupt never hangs)."""
    main = threading.main_thread().ident
    assert main is not None and main == threading.get_ident(), "only the main thread gets Ctrl-C"

    def interrupt() -> None:
        wait_until(condition, limit)
        signal.pthread_kill(main, signal.SIGINT)

    thread = threading.Thread(target=interrupt, daemon=True)
    thread.start()
    return thread


def wait_until(condition: Callable[[], bool], limit: float) -> bool:
    """Poll `condition` until it holds (True) or `limit` seconds pass (False)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


async def wait_until_async(condition: Callable[[], bool], limit: float) -> bool:
    """`wait_until` on a running event loop: the loop runs its other work (an explorer's tick) meanwhile."""
    import asyncio

    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True


# ---- the fork server: a Python test server starts with a fork, not an SDK import ------------------
# Importing the MCP SDK costs a test server about a CPU second, and the suite starts well over a
# thousand. Each pytest process (each xdist worker) starts a zygote (tests/servers/zygote.py) that
# imports it once; `server_command` runs a server through the zygote's launcher, a stand-in for
# `python` that hands the zygote its fds, environment, working directory and argv and then mirrors
# the server's life: its signals, its exit, its pipes. WORKBENCH_TEST_ZYGOTE=0 turns it off.
ZYGOTE = SERVERS / "zygote.py"
LAUNCH = SERVERS / "launch.py"
_zygote: dict[str, str] = {}  # "dir", "socket", "python" (the launcher) while the zygote runs
_running_test = ""  # the node id of the test being run (its fixtures' set-up and teardown too)

#: Tests (a module, or a test with all its parametrizations) whose point is the server's process
#: itself start it directly with python: they kill it by pid, read its /proc, check its exit, its
#: stderr at start, or count the spawning process's children (through the zygote they would see
#: the launcher, and the server would be no descendant of theirs).
DIRECT = (
    "tests/engine/test_faults.py",
    "tests/serve/test_serve_close.py",
    "tests/api/batches/test_run.py::test_a_row_that_cannot_be_sent_is_that_rows_error",
    "tests/api/test_calling.py::test_text_that_cannot_be_encoded_is_refused_and_the_calls_in_flight_go_on",
    "tests/api/toolsets/test_making.py::test_an_agent_calls_through_the_workbench_on_one_session",
    "tests/api/test_workbench.py::test_partial_open_keeps_good_servers_and_leaks_nothing",
    "tests/api/test_workbench.py::test_same_server_name_in_two_toolboxes_is_two_processes",
    "tests/api/test_workbench.py::test_close_and_close_all_end_every_child",
    "tests/api/test_workbench.py::test_open_is_idempotent_and_reconnect_restarts",
    "tests/api/test_workbench.py::test_interpreter_exit_ends_every_server",
    "tests/engine/test_boundary.py::test_a_read_after_the_server_died_reconnects_as_a_call_does",
    "tests/engine/test_cassette.py::test_record_then_replay_with_the_servers_gone",
    "tests/engine/test_cassette.py::test_auto_mode_replays_what_it_has_and_calls_the_rest",
    "tests/engine/test_cassette.py::test_config_replay_needs_neither_the_variables_nor_the_servers",
    "tests/engine/test_connection.py::test_handshake_that_never_comes_fails_within_the_connect_timeout",
    "tests/engine/test_connection.py::test_crashed_server_fails_the_call_then_reconnects",
    "tests/engine/test_lazy.py::test_a_lazy_open_from_the_cache_starts_nothing_and_lists_from_it",
    "tests/engine/test_lazy.py::test_the_idle_timeout_stops_a_server_and_the_next_use_starts_it",
    "tests/engine/test_lazy.py::test_a_catalog_is_cached_though_the_workbench_closes_at_once",
    "tests/engine/test_lazy.py::test_a_catalog_is_kept_for_what_the_client_offered",
    "tests/engine/test_runtime.py::test_interrupting_an_open_takes_the_half_open_connection_down",
    "tests/engine/test_runtime.py::test_stderr_log_keeps_its_newest_bytes",
    "tests/notebook/test_kernel.py::test_kernel_shutdown_and_restart_end_the_servers",
    "tests/notebook/test_kernel.py::test_interrupting_an_open_that_never_connects",
    "tests/notebook/test_magics.py::test_unload_closes_every_connection",
    "tests/serve/test_server.py::test_sigterm_closes_every_downstream_server",
    "tests/serve/test_server.py::test_stdin_eof_closes_every_downstream_server",
)


#: Tests of a `DIRECT` module whose servers go through the zygote all the same: the launcher lives
#: exactly as long as its server, so a server left running is still a child of the test's process.
NOT_DIRECT = ("tests/engine/test_faults.py::test_hundred_open_close_cycles_leave_no_children_and_no_descriptors",)


def _direct() -> bool:
    """Whether the test being run (or, at import, the module calling) is one of `DIRECT`."""
    where = _running_test
    if not where:  # a module-level config: the calling module
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        try:
            where = Path(frame.f_code.co_filename).resolve().relative_to(ROOT).as_posix() + "::"  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            return False  # no caller, or not a file of ours

    def among(names: tuple[str, ...]) -> bool:
        return any(where == name or where.startswith((f"{name}::", f"{name}[")) for name in names)

    return among(DIRECT) and not among(NOT_DIRECT)


def python_command(*args: str) -> list[str]:
    """`[python, *args]`, run through this pytest process's zygote when it has one (not for the
    tests of `DIRECT`): only the executable differs. `args`: a script and its arguments, or
    `-m MODULE ...` (serve: `python_command("-m", "workbench_magic", "serve", ...)`)."""
    python = PYTHON if _direct() else _zygote.get("python", PYTHON)
    return [python, *args]


def server_command(script: str | Path, *args: str) -> list[str]:
    """`python_command` for a Python test server: `script` is a path, or a file name in tests/servers."""
    path = Path(script) if Path(script).is_absolute() else SERVERS / script
    return python_command(str(path), *args)


def python_server(script: str | Path, *extra: str, **config: Any) -> dict[str, Any]:
    """Config of a Python test server over stdio (`server_command`): `script` is a path, or a file
    name in tests/servers."""
    command, *args = server_command(script, *extra)
    return {"command": command, "args": args, **config}


def python_config(*args: str, **config: Any) -> dict[str, Any]:
    """Config of a server over stdio that python runs with `args` (`python_command`), e.g.
    `-m workbench_magic.demo.datasets`."""
    command, *rest = python_command(*args)
    return {"command": command, "args": rest, **config}


def stdio_server(*extra: str, **config: Any) -> dict[str, Any]:
    """Config of our test server over stdio."""
    return python_server(TESTSERVER, *extra, **config)


def fault_server(*extra: str, **config: Any) -> dict[str, Any]:
    """Config of the fault-injecting server over stdio (see tests/servers/faultserver.py)."""
    return python_server(FAULTSERVER, *extra, **config)


#: Whether tests start Python through zygotes (WORKBENCH_TEST_ZYGOTE=0: never).
ZYGOTES = os.environ.get("WORKBENCH_TEST_ZYGOTE", "1") != "0" and sys.platform.startswith("linux")


def _start_zygote(config: pytest.Config) -> None:
    if not ZYGOTES:
        return
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return  # the xdist controller runs no test
    # The environment a stdio server gets from the SDK (its default), so the zygote starts as one would.
    keep = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "SYSTEMROOT")
    zygote = start_zygote(PYTHON, {k: os.environ[k] for k in keep if k in os.environ}, kernel="python3")
    if zygote:
        _zygote.update(zygote)


def _stop_zygote() -> None:
    zygote = dict(_zygote)
    _zygote.clear()
    stop_zygote(zygote)


def start_zygote(python: str, env: dict[str, str], *, kernel: str) -> dict[str, str] | None:
    """Start a zygote (tests/servers/zygote.py) that `python` runs with `env`, owned by this process.

    What it answers: "dir" (its folder), "socket", "python" (the launcher: an executable stand-in
    for `python` that runs through it) and "jupyter" (a folder for `JUPYTER_PATH` whose kernelspec
    `kernel` runs ipykernel through it); None when it did not start (the caller starts directly).
    End it with `stop_zygote`.
    """
    folder = tempfile.mkdtemp(prefix="wbz-")
    if len(folder) > 80:  # a unix socket's path has at most 107 bytes
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="wbz-", dir="/tmp")
    sock = os.path.join(folder, "sock")
    # The launcher: an executable stand-in for python, with the socket built in (stdlib only: any
    # python runs it).
    launcher = os.path.join(folder, "python")
    with open(launcher, "w") as f:
        f.write(
            f"#!{python}\n"
            f"# Runs SCRIPT ARGS... through the zygote of pytest process {os.getpid()} (see {LAUNCH}).\n"
            f"import sys\nsys.path[0] = {str(SERVERS)!r}\nimport launch\nlaunch.main([{sock!r}, *sys.argv[1:]])\n"
        )
    os.chmod(launcher, 0o700)
    log = os.environ.get("WORKBENCH_TEST_ZYGOTE_LOG")
    # The zygote forks itself away (so it is no child of ours) as soon as it starts.
    try:
        subprocess.run(
            [python, str(ZYGOTE), sock, str(os.getpid()), *([log] if log else [])],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(folder, ignore_errors=True)
        return None
    # Kernels too: a kernelspec whose python is the launcher (`kernels_through_the_zygote`).
    # No -Xfrozen_modules=off: an -X option makes the launcher exec python.
    jupyter = os.path.join(folder, "jupyter")
    spec = os.path.join(jupyter, "kernels", kernel)
    os.makedirs(spec)
    with open(os.path.join(spec, "kernel.json"), "w") as f:
        argv = [launcher, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        json.dump({"argv": argv, "display_name": "Python 3 (ipykernel)", "language": "python"}, f)
    return {"dir": folder, "socket": sock, "python": launcher, "jupyter": jupyter}


def stop_zygote(zygote: dict[str, str]) -> None:
    """End a zygote `start_zygote` started (nothing if it never started or ended already)."""
    if not zygote:
        return
    folder = zygote["dir"]
    try:
        with open(os.path.join(folder, "sock.pid")) as f:
            pid = int(f.read())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if str(ZYGOTE).encode() in f.read():
                os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        pass  # it never started, or it ended already
    shutil.rmtree(folder, ignore_errors=True)


def npm_server(name: str, *args: str, **config: Any) -> dict[str, Any]:
    """Config of a pinned npm reference server (run with node directly, no npx)."""
    entry = NODE_MODULES / f"server-{name}" / "dist" / "index.js"
    if not entry.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{entry} missing: the test command must run `npm ci` in tests/servers")
        pytest.skip(f"npm reference server {name} not installed (cd tests/servers && npm ci)")
    node = shutil.which("node")
    assert node, "node is required for the npm reference servers"
    return {"command": node, "args": [str(entry), *args], **config}


EXTENSIONS = SERVERS / "extensions"


def extension_server(kind: str, script: str, *args: str, **config: Any) -> dict[str, Any]:
    """Config of an extension test server over stdio, run by the python of its own virtualenv
    (`make extensions`): `kind` is `skills` (FastMCP 4.2) or `tasks` (fastmcp-tasks 4.1), `script`
    a file name in tests/servers. Its fastmcp is not ours, so it runs directly, not through a zygote."""
    python = EXTENSIONS / f"{kind}-venv" / "bin" / "python"
    if not python.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{python} missing: the test command must run `make extensions`")
        pytest.skip(f"the {kind} extension server's virtualenv is missing (make extensions)")
    return {"command": str(python), "args": [str(SERVERS / script), *args], **config}


def wait_listening(proc: subprocess.Popen[Any], url: str, log: Path | None = None, limit: float = 120.0) -> None:
    """Until the process answers HTTP at `url` (any status); fails, with its `log`, if it exits first
    or is not listening within `limit` seconds (a loaded machine starts a server slowly)."""
    import httpx

    deadline = time.monotonic() + limit
    while True:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            told = log.read_text()[-3000:] if log is not None and log.exists() else ""
            assert proc.poll() is None, f"exited with {proc.returncode} before listening at {url}: {told}"
            assert time.monotonic() < deadline, f"not listening at {url} within {limit} s: {told}"
            time.sleep(0.1)  # polling a port that is not bound yet: no event to wait on


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, and SIGKILL if it has not ended 30 s later."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    """Our test server over HTTP (streamable or SSE) in a subprocess, for the duration of a test."""

    def __init__(self, transport: str = "http", *extra: str) -> None:
        self.port = free_port()
        self.transport = transport
        self.log = open(os.devnull, "w")
        self.proc = subprocess.Popen(
            server_command(TESTSERVER, "--transport", transport, "--port", str(self.port), *extra),
            stdout=self.log,
            stderr=self.log,
        )
        try:
            self._wait_listening()
        except BaseException:  # a server that never listened is not left running (a loaded machine)
            self.proc.kill()
            self.proc.wait()
            self.log.close()
            raise

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def _wait_listening(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"test HTTP server exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)  # polling a port that is not bound yet: no event to wait on
        raise RuntimeError("test HTTP server did not start listening")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def http_server() -> Iterator[Callable[..., HttpServer]]:
    started: list[HttpServer] = []

    def start(transport: str = "http", *extra: str) -> HttpServer:
        server = HttpServer(transport, *extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


STARVED_CONNECT_TIMEOUT = 90.0
"""`connect_timeout` of the workbenches `make_workbench` makes, unless a test sets one."""


@pytest.fixture
def make_workbench() -> Iterator[Callable[..., Workbench]]:
    """Workbench factory; every workbench is closed after the test and no child may remain."""
    made: list[Workbench] = []
    before = children()

    def make(config: dict[str, Any] | str | Path | None = None, **traits: Any) -> Workbench:
        # Two suites side by side on 2 cores starved handshakes past the 30 s default; a test of
        # the deadline itself sets its own.
        traits.setdefault("connect_timeout", STARVED_CONNECT_TIMEOUT)
        wb = Workbench(config=config, **traits)
        made.append(wb)
        return wb

    yield make
    for wb in made:
        wb.close_all()
    leaked = children() - before
    assert not leaked, f"child processes left running after close: {_commands(leaked)}"


def _commands(pids: set[int]) -> dict[int, str]:
    """Each process's command line (what a leak message names)."""
    return {pid: command_line(pid)[:200] or "(gone)" for pid in sorted(pids)}


def toolbox(servers: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"description": description, "mcpServers": servers}


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


@pytest.fixture(autouse=True)
def kernels_through_the_zygote(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kernel a test starts (nbclient, jupyter_client, JupyterLab's) runs through the zygote
    as the servers do, the SDK imported already (not for the tests of `DIRECT`)."""
    if _zygote and not _direct():
        monkeypatch.setenv(
            "JUPYTER_PATH", os.pathsep.join(filter(None, [_zygote["jupyter"], os.environ.get("JUPYTER_PATH")]))
        )


@pytest.fixture(autouse=True)
def catalog_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test caches server catalogs (lazy servers) in a folder of its own, never the user's;
    its children (kernels, the command line) inherit it."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(folder))
    return folder


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C is a `KeyboardInterrupt` in every test process, as in a kernel.

    A suite started in the background by a shell without job control (`make test &`) inherits an
    ignored SIGINT, and Python then installs no handler: the tests that interrupt a call would
    wait for it to end instead.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _start_zygote(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The zygote ends with the session (it would also see this process end)."""
    _stop_zygote()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """`server_command` knows which test it builds a server for (see `DIRECT`)."""
    global _running_test
    _running_test = item.nodeid
    try:
        yield
    finally:
        _running_test = ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that declare a long timeout (the Binder build, the soak, the browser) run first.

    `make test` spreads the tests over pytest-xdist workers in this order: a long test that started
    last would run on alone while the other workers sit idle. The others keep their order.
    """

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: the tests keep their order

    def budget(item: pytest.Item) -> float:
        if item.get_closest_marker("in_place"):
            return 0.0
        marker = item.get_closest_marker("timeout")
        if marker is None:
            return 0.0
        return float(marker.kwargs.get("timeout", marker.args[0] if marker.args else 0))

    items.sort(key=budget, reverse=True)
