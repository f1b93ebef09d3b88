"""Shared fixtures: real test servers, npm reference servers, child-process accounting."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench_magic import Workbench

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "tests" / "servers"
TESTSERVER = SERVERS / "testserver.py"
FAULTSERVER = SERVERS / "faultserver.py"
NODE_MODULES = SERVERS / "node_modules" / "@modelcontextprotocol"
PYTHON = sys.executable


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


def stdio_server(*extra: str, **config: Any) -> dict[str, Any]:
    """Config of our test server over stdio."""
    return {"command": PYTHON, "args": [str(TESTSERVER), *extra], **config}


def fault_server(*extra: str, **config: Any) -> dict[str, Any]:
    """Config of the fault-injecting server over stdio (see tests/servers/faultserver.py)."""
    return {"command": PYTHON, "args": [str(FAULTSERVER), *extra], **config}


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
            [PYTHON, str(TESTSERVER), "--transport", transport, "--port", str(self.port), *extra],
            stdout=self.log,
            stderr=self.log,
        )
        self._wait_listening()

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def _wait_listening(self, timeout: float = 20.0) -> None:
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


@pytest.fixture
def make_workbench() -> Iterator[Callable[..., Workbench]]:
    """Workbench factory; every workbench is closed after the test and no child may remain."""
    made: list[Workbench] = []
    before = children()

    def make(config: dict[str, Any] | str | Path | None = None, **traits: Any) -> Workbench:
        wb = Workbench(config=config, **traits)
        made.append(wb)
        return wb

    yield make
    for wb in made:
        wb.close_all()
    leaked = children() - before
    assert not leaked, f"child processes left running after close: {leaked}"


def toolbox(servers: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"description": description, "mcpServers": servers}


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that declare a long timeout (the Binder build, the soak, the browser) run first.

    `make test` spreads the tests over pytest-xdist workers in this order: a long test that started
    last would run on alone while the other workers sit idle. The others keep their order.
    """

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: the tests keep their order

    def budget(item: pytest.Item) -> float:
        marker = item.get_closest_marker("timeout")
        if marker is None:
            return 0.0
        return float(marker.kwargs.get("timeout", marker.args[0] if marker.args else 0))

    items.sort(key=budget, reverse=True)
