"""The connection doctor: `diagnose` runs a server's connection step by step and says which step
failed and what to do (a `DoctorReport`).

stdio: config, command, process, protocol (a raw `initialize` line), era, capabilities, tools.
HTTP and SSE: url, connect, tls, http (a raw POST of `initialize`), session, era, capabilities,
tools. The era, capabilities and tools steps are one real SDK session (`Client(mode="auto")`).
Findings never show a header or environment value: they may be secrets.

The SDK is imported inside the functions that use it (`import workbench_magic` must not import it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from workbench_magic.vocabulary.doctor import RUNNERS, DoctorReport, DoctorStep, StepStatus

if TYPE_CHECKING:
    from workbench_magic.config.settings import ServerConfig

__all__ = ["HANDSHAKE_VERSION", "diagnose"]

#: The protocol version of the raw `initialize` the protocol and http steps send.
HANDSHAKE_VERSION = "2025-11-25"
#: What the SDK gives a stdio child of the parent's environment (and so the doctor too).
_INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
#: Seconds a started process must stay up to count as started.
_STAYS_UP = 1.0
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "wb-doctor", "version": "1"},
    },
}
_JUNK_HINT = "a stdio server must write only JSON-RPC on stdout: send its logs and banners to stderr"

Outcome = tuple[StepStatus, str, str]
Step = Callable[[], Awaitable[Outcome]]


class _Failed(Exception):
    """A step failed: what was found and what to do."""

    def __init__(self, finding: str, hint: str = "") -> None:
        super().__init__(finding)
        self.finding = finding
        self.hint = hint


def _short(text: str, limit: int = 120) -> str:
    """`text` on one line, at most `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _describe(error: BaseException) -> str:
    """An exception in one line: the first leaf of a group, its type and message."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    message = str(error)
    return _short(f"{type(error).__name__}: {message}" if message else type(error).__name__)


def _tail(log: IO[bytes] | None, lines: int = 3) -> str:
    """The last few non-empty lines written to a stderr log, joined by " | " ("" if none)."""
    if log is None:
        return ""
    with contextlib.suppress(OSError, ValueError):
        log.flush()
        log.seek(0)
        text = log.read()[-8192:].decode(errors="replace")
        return _short(" | ".join([line.strip() for line in text.splitlines() if line.strip()][-lines:]), 240)
    return ""


def _child_env(base: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The environment a stdio server gets: the basics of `base` (as the SDK passes), then its own."""
    return {**{key: base[key] for key in _INHERITED if key in base}, **own}


async def diagnose(
    toolbox: str,
    name: str,
    server: ServerConfig,
    *,
    timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
) -> DoctorReport:
    """Diagnose the connection to `server` (`toolbox`/`name` names it in the report).

    Each step has at most `timeout` seconds; the steps after a failed one are skipped. `env` is
    the environment a stdio server is started from (default: this process's); its basics
    (HOME, PATH, ...) and the server's own `env` are what the server gets. Every process started
    and every socket opened ends before this returns. Runs on asyncio.
    """
    target = f"{toolbox}/{name}"
    if server.transport == "python":
        return DoctorReport(
            target,
            (
                DoctorStep("config", "ok", f"in-process server {server.python}"),
                DoctorStep("server", "skipped", "in-process: nothing to diagnose (no process, no network)"),
            ),
        )
    doctor: _Doctor = (
        _StdioDoctor(server, timeout, os.environ if env is None else env)
        if server.transport == "stdio"
        else _HttpDoctor(server, timeout)
    )
    try:
        steps = await _run(doctor.steps(), timeout)
    finally:
        await doctor.close()
    return DoctorReport(target, steps)


async def _run(steps: list[tuple[str, Step]], timeout: float) -> tuple[DoctorStep, ...]:
    """Run the steps in order; after a failure the rest are skipped."""
    # Each step keeps to `timeout` per wait; this bounds a step whatever it waits on.
    budget = timeout * 3 + 5
    done: list[DoctorStep] = []
    failed = ""
    for name, step in steps:
        if failed:
            done.append(DoctorStep(name, "skipped", f"not tried: the {failed} step failed"))
            continue
        try:
            status, finding, hint = await asyncio.wait_for(step(), budget)
        except TimeoutError:
            status, finding, hint = "failed", f"the step took over {budget:g} s", "raise the timeout"
        except _Failed as error:
            status, finding, hint = "failed", error.finding, error.hint
        except Exception as error:  # a step's own bug or an unforeseen failure: still a report
            status, finding, hint = "failed", _describe(error), ""
        done.append(DoctorStep(name, status, _short(finding, 300), _short(hint, 200)))
        if status == "failed":
            failed = name
    return tuple(done)


class _Doctor:
    """The steps every transport shares: a real SDK session (era, capabilities, tools)."""

    def __init__(self, server: ServerConfig, timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.sdk_log: IO[bytes] | None = None
        self.info: dict[str, Any] = {}
        self.tools: list[Any] | None = None
        self.tools_error = ""

    def steps(self) -> list[tuple[str, Step]]:
        """The steps of this transport, in order."""
        raise NotImplementedError

    def transport(self) -> Any:
        """The SDK transport to the server (an async context manager of its streams)."""
        raise NotImplementedError

    def sdk_steps(self) -> list[tuple[str, Step]]:
        return [("era", self.era), ("capabilities", self.capabilities), ("tools", self.list_tools)]

    async def close(self) -> None:
        """End what the diagnosis started."""
        if self.sdk_log is not None:
            self.sdk_log.close()

    def _stderr(self) -> str:
        tail = _tail(self.sdk_log)
        return f"; stderr: {tail}" if tail else ""

    async def era(self) -> Outcome:
        """The SDK's own connect (`mode="auto"`): the negotiated version and the server's name."""
        import anyio
        from mcp import Client

        try:
            # The session lives in this step; what later steps report is kept on self.
            with anyio.fail_after(self.timeout * 2 + 1):
                async with Client(self.transport(), mode="auto", read_timeout_seconds=self.timeout) as client:
                    server = client.server_info
                    self.info = {
                        "version": client.protocol_version,
                        "name": f"{server.name} {server.version or ''}".strip() if server else "(no server info)",
                        "capabilities": client.server_capabilities,
                    }
                    await self._list(client)
        except TimeoutError:
            raise _Failed(
                f"the SDK's handshake got no answer within {self.timeout:g} s{self._stderr()}",
                "the server answered the raw request but not the SDK's: raise the timeout or report it",
            ) from None
        except Exception as error:
            raise _Failed(f"the SDK's handshake failed: {_describe(error)}{self._stderr()}") from None
        version = str(self.info["version"])
        era = "server/discover" if version >= "2026" else "the initialize handshake"
        return "ok", f"protocol {version} ({era}); server {self.info['name']}", ""

    async def _list(self, client: Any) -> None:
        import anyio

        tools: list[Any] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(self.timeout):
                for _ in range(100):  # a paginator that never ends cannot hang the doctor
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
            self.tools = tools
        except TimeoutError:
            self.tools_error = f"no answer to tools/list within {self.timeout:g} s"
        except Exception as error:
            self.tools_error = f"tools/list failed: {_describe(error)}"

    async def capabilities(self) -> Outcome:
        """The capabilities and extensions the server declared."""
        caps = self.info["capabilities"]
        names = ("tools", "resources", "prompts", "logging", "completions", "tasks", "experimental")
        declared = [field for field in names if getattr(caps, field, None) is not None]
        extensions = sorted(getattr(caps, "extensions", None) or {})
        text = f"declares {', '.join(declared) or 'nothing'}; extensions: {', '.join(extensions) or 'none'}"
        return "ok", text, ""

    async def list_tools(self) -> Outcome:
        """How many tools, and whether their input schemas can be checked."""
        if self.tools is None:
            raise _Failed(self.tools_error or "tools/list was not answered")
        if not self.tools:
            if getattr(self.info["capabilities"], "tools", None) is None:
                return "ok", "no tools (none declared)", ""
            return "warning", "0 tools listed, though the server declares tools", "check the server's own config"
        not_object = [tool.name for tool in self.tools if (tool.input_schema or {}).get("type") != "object"]
        broken = [tool.name for tool in self.tools if tool.name not in not_object and not _compiles(tool.input_schema)]
        count = f"{len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"
        if not not_object and not broken:
            return "ok", f"{count}; every input schema is an object schema that compiles", ""
        problems = []
        if not_object:
            problems.append(f"{len(not_object)} input schema(s) not of type object ({', '.join(not_object[:3])})")
        if broken:
            problems.append(f"{len(broken)} input schema(s) that do not compile ({', '.join(broken[:3])})")
        return "warning", f"{count}; {'; '.join(problems)}", "calls of those tools may be refused or go unchecked"


def _compiles(schema: Any) -> bool:
    """Whether the workbench can check arguments against `schema` (True when it cannot tell)."""
    try:
        from workbench_magic.engine.schema import compiles

        return bool(compiles(schema))
    except Exception:
        return True


class _StdioDoctor(_Doctor):
    """A stdio server: the command, its process, the raw protocol, then the SDK."""

    def __init__(self, server: ServerConfig, timeout: float, base: Mapping[str, str]) -> None:
        super().__init__(server, timeout)
        self.env = _child_env(base, server.env)
        self.proc: asyncio.subprocess.Process | None = None
        self.raw_log: IO[bytes] | None = None

    def steps(self) -> list[tuple[str, Step]]:
        own = [("config", self.config), ("command", self.command), ("process", self.process)]
        return [*own, ("protocol", self.protocol), *self.sdk_steps()]

    async def close(self) -> None:
        await self._stop()
        if self.raw_log is not None:
            self.raw_log.close()
        await super().close()

    async def config(self) -> Outcome:
        """The entry has a command (and its working directory exists)."""
        command, cwd = self.server.command, self.server.cwd
        if not command or not command.strip():
            raise _Failed("no command", 'write "command": "..." (the program that runs the server)')
        if cwd is not None and not os.path.isdir(cwd):
            raise _Failed(f"the working directory {cwd} does not exist", 'fix "cwd", or remove it')
        count = len(self.server.args)
        return "ok", f"runs {command} with {count} argument{'s' if count != 1 else ''} over stdio", ""

    async def command(self) -> Outcome:
        """The command is a path to a program, or found on the server's PATH."""
        command = str(self.server.command)
        if os.sep in command:
            path = os.path.join(self.server.cwd or "", command)
            if not os.path.exists(path):
                raise _Failed(f"{command} does not exist", "check the path, or name a program on PATH")
            if os.path.isdir(path) or not os.access(path, os.X_OK):
                raise _Failed(
                    f"{command} is not an executable file", f"chmod +x {command}, or run it with its interpreter"
                )
            return "ok", f"{command} exists and is executable", ""
        found = shutil.which(command, path=self.env.get("PATH", os.defpath))
        if found:
            return "ok", f"{command} is {found}", ""
        runner = RUNNERS.get(command.lower().removesuffix(".exe"))
        if runner is not None:
            raise _Failed(f"{command} ({runner[0]}) is not installed: not found on PATH", runner[1])
        raise _Failed(f"{command} is not found on PATH", "install it, or write its full path as the command")

    async def process(self) -> Outcome:
        """The process starts and stays up a second."""
        self.raw_log = tempfile.TemporaryFile()
        try:
            self.proc = await asyncio.create_subprocess_exec(
                str(self.server.command),
                *self.server.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self.raw_log,
                env=self.env,
                cwd=self.server.cwd,
                start_new_session=True,  # its own process group: the doctor ends all of it
                limit=1 << 20,
            )
        except OSError as error:
            raise _Failed(f"cannot start {self.server.command}: {error.strerror or error}") from None
        if not await _exits_within(self.proc, min(_STAYS_UP, self.timeout)):
            return "ok", f"started (pid {self.proc.pid}) and stays up", ""
        tail = _tail(self.raw_log)
        raise _Failed(
            f"exited at start with {_status(self.proc.returncode)}" + (f"; stderr: {tail}" if tail else "; no stderr"),
            "run the command in a terminal to see why it stops (a missing argument, variable or dependency?)",
        )

    async def protocol(self) -> Outcome:
        """A raw `initialize` line on its stdin: what comes back on its stdout."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            with contextlib.suppress(ConnectionError):  # it exited: what stdout held is read next
                proc.stdin.write(json.dumps(_INITIALIZE).encode() + b"\n")
                await proc.stdin.drain()
            answer, junk, ended = await self._read_answer(proc.stdout)
        finally:
            await self._stop()  # the SDK starts a process of its own for the next step
        named = ", ".join(repr(_short(line, 60)) for line in junk[:3])
        if answer is not None:
            if junk:
                return "warning", f"answered, after {len(junk)} line(s) that are not JSON-RPC: {named}", _JUNK_HINT
            if "error" in answer:
                error = answer["error"] if isinstance(answer["error"], dict) else {}
                text = f"answered initialize with error {error.get('code')}: {_short(str(error.get('message')), 80)}"
                return "warning", text, "the SDK's handshake (next step) may still find a version both speak"
            version = (answer.get("result") or {}).get("protocolVersion", "?")
            return "ok", f"answered initialize (protocolVersion {version})", ""
        if junk:
            raise _Failed(
                f"wrote {len(junk)} line(s) that are not JSON-RPC on stdout, and no answer: {named}", _JUNK_HINT
            )
        tail = _tail(self.raw_log)
        stderr = f"; stderr: {tail}" if tail else "; nothing on stderr"
        if ended:
            raise _Failed(f"exited before answering initialize ({_status(proc.returncode)}){stderr}")
        raise _Failed(
            f"no answer to initialize within {self.timeout:g} s{stderr}",
            "it may wait for something (a variable, a login, a download): run it in a terminal, or raise the timeout",
        )

    async def _read_answer(self, stdout: asyncio.StreamReader) -> tuple[dict[str, Any] | None, list[str], bool]:
        """Read stdout until the answer to request 1: (the answer, the lines that were not
        JSON-RPC, whether stdout ended)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        junk: list[str] = []
        while (left := deadline - loop.time()) > 0:
            try:
                raw = await asyncio.wait_for(stdout.readline(), left)
            except TimeoutError:
                break
            except ValueError:  # a line over the reader's limit
                junk.append("(a line over 1 MiB)")
                continue
            if not raw:
                with contextlib.suppress(TimeoutError):
                    assert self.proc is not None
                    await asyncio.wait_for(self.proc.wait(), 1.0)
                return None, junk, True
            line = raw.decode(errors="replace").strip()
            try:
                message = json.loads(line) if line else None
            except ValueError:
                message = None
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                if line:
                    junk.append(line)
                continue
            if message.get("id") == 1 and ("result" in message or "error" in message):
                return message, junk, False
        return None, junk, False

    async def _stop(self) -> None:
        """End the raw process and its whole process group."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        if proc.returncode is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 2.0)
            except TimeoutError:
                _signal_group(proc.pid, signal.SIGKILL)
                await proc.wait()
        _signal_group(proc.pid, signal.SIGKILL)  # what it left behind in its group

    def transport(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        self.sdk_log = tempfile.TemporaryFile()
        params = StdioServerParameters(
            command=str(self.server.command), args=list(self.server.args), env=self.env, cwd=self.server.cwd
        )
        # errlog must be a real file (the child writes to its descriptor); read back for stderr tails.
        return stdio_client(params, errlog=self.sdk_log)  # type: ignore[arg-type]


async def _exits_within(proc: asyncio.subprocess.Process, seconds: float) -> bool:
    """Whether `proc` exits within `seconds`. Polled: `wait()` also waits for its pipes to close,
    which a child it left (or a launcher's server) may hold open."""
    deadline = asyncio.get_running_loop().time() + seconds
    while proc.returncode is None and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return proc.returncode is not None


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _status(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
        return f"signal {-code}"
    return f"exit status {code}"


class _HttpDoctor(_Doctor):
    """A streamable HTTP or SSE server: the URL, the socket, TLS, a raw request, then the SDK."""

    def __init__(self, server: ServerConfig, timeout: float) -> None:
        super().__init__(server, timeout)
        self.url = str(server.url)
        parts = urlsplit(self.url)
        self.scheme = parts.scheme.lower()
        self.host = parts.hostname or ""
        self.path = parts.path or "/"
        self.port = 0
        self.session_id = False
        self.headers = dict(server.headers)
        auth = server.auth
        if auth is not None and auth.bearer is not None:
            self.headers["Authorization"] = f"Bearer {auth.bearer}"

    def steps(self) -> list[tuple[str, Step]]:
        own = [("url", self.check_url), ("connect", self.connect), ("tls", self.tls), ("http", self.http)]
        return [*own, ("session", self.session), *self.sdk_steps()]

    def _where(self) -> str:
        """The URL without its user, query or fragment (they may hold secrets)."""
        return f"{self.scheme}://{self.host}:{self.port}{self.path}"

    async def check_url(self) -> Outcome:
        """A valid http(s) URL with a host (and a port, given or the scheme's)."""
        if self.scheme not in ("http", "https") or not self.host:
            raise _Failed("not an http:// or https:// URL with a host", "write e.g. http://127.0.0.1:8000/mcp")
        try:
            self.port = urlsplit(self.url).port or (443 if self.scheme == "https" else 80)
        except ValueError:
            raise _Failed("the URL's port is not a number from 0 to 65535", "fix the port in the URL") from None
        return "ok", f"{self.server.transport} at {self._where()}", ""

    async def connect(self) -> Outcome:
        """DNS, then a TCP connection to host:port."""
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM), self.timeout
            )
        except socket.gaierror as error:
            raise _Failed(f"cannot resolve {self.host}: {error.strerror}", "check the host name (and DNS)") from None
        except TimeoutError:
            raise _Failed(f"resolving {self.host} took over {self.timeout:g} s", "check DNS") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        refused: list[str] = []
        for address in addresses:
            shown = f"[{address}]:{self.port}" if ":" in address else f"{address}:{self.port}"
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(address, self.port), self.timeout)
            except ConnectionRefusedError:
                refused.append(shown)
                continue
            except TimeoutError:
                raise _Failed(
                    f"no answer from {shown} within {self.timeout:g} s", "a firewall, or a host down?"
                ) from None
            except OSError as error:
                raise _Failed(f"cannot connect to {shown}: {error.strerror or error}") from None
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            resolved = "" if address == self.host else f"{self.host} is {address}; "
            return "ok", f"{resolved}{shown} accepts connections", ""
        raise _Failed(f"nothing listens on {' or '.join(refused)}", "start the server, or check the port in the URL")

    async def tls(self) -> Outcome:
        """An https server's TLS handshake and certificate."""
        if self.scheme != "https":
            return "skipped", "plain http: no TLS", ""
        context = ssl.create_default_context()
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=context, server_hostname=self.host), self.timeout
            )
        except ssl.SSLCertVerificationError as error:
            raise _Failed(
                f"certificate not trusted: {error.verify_message}",
                "fix the server's certificate, or trust its CA (SSL_CERT_FILE)",
            ) from None
        except ssl.SSLError as error:
            raise _Failed(f"TLS handshake failed: {error.reason or error}", "is it plain http on this port?") from None
        except TimeoutError:
            raise _Failed(f"no TLS handshake within {self.timeout:g} s") from None
        ssl_object = writer.get_extra_info("ssl_object")
        cert = writer.get_extra_info("peercert") or {}
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
        version = ssl_object.version() if ssl_object is not None else "TLS"
        return "ok", f"{version}; certificate valid until {cert.get('notAfter', '?')}", ""

    async def http(self) -> Outcome:
        """A raw request: POST `initialize` (streamable HTTP) or GET the event stream (SSE)."""
        import httpx

        async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers, follow_redirects=False) as client:
            if self.server.transport == "sse":
                accept = {"Accept": "text/event-stream"}
                request = client.build_request("GET", self.url, headers=accept)
            else:
                accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
                request = client.build_request("POST", self.url, headers=accept, content=json.dumps(_INITIALIZE))
            try:
                response = await client.send(request, stream=True)
            except httpx.TimeoutException:
                raise _Failed(f"no HTTP answer within {self.timeout:g} s") from None
            except httpx.HTTPError as error:
                raise _Failed(f"the request failed: {_describe(error)}") from None
            try:
                return await self._judge(client, response)
            finally:
                await response.aclose()
                await self._end_session(client, response)

    async def _judge(self, client: Any, response: Any) -> Outcome:
        status, reason = response.status_code, response.reason_phrase
        kind = response.headers.get("content-type", "").split(";")[0].strip() or "no content type"
        if 200 <= status < 300:
            self.session_id = "mcp-session-id" in response.headers
            if self.server.transport == "sse" and kind != "text/event-stream":
                raise _Failed(
                    f"{status} with {kind}, not an event stream", 'is it streamable HTTP? try "transport": "http"'
                )
            return "ok", f"{status} {reason} ({kind})", ""
        if status == 401:
            return await self._unauthorized(client, response)
        if status == 403:
            raise _Failed("403 Forbidden: the credentials sent are refused", "check the token or headers it needs")
        if status in (404, 405):
            hint = "check the URL's path (often /mcp)" + (
                '; an SSE server wants "transport": "sse"' if self.server.transport != "sse" else ""
            )
            raise _Failed(f"{status} {reason}: no MCP endpoint answers {self._where()}", hint)
        if 300 <= status < 400:
            where = urlsplit(urljoin(self.url, response.headers.get("location", "")))
            raise _Failed(
                f"{status} {reason}: redirects to {where.scheme}://{where.netloc}{where.path}", "use that URL"
            )
        raise _Failed(f"HTTP {status} {reason} ({kind})", "see the server's log")

    async def _unauthorized(self, client: Any, response: Any) -> Outcome:
        """A 401: what WWW-Authenticate asks for, and the OAuth metadata the server publishes."""
        challenge = response.headers.get("www-authenticate", "")
        asks = f"WWW-Authenticate asks for {_short(challenge, 160)}" if challenge else "no WWW-Authenticate header"
        found = await self._oauth_metadata(client, challenge)
        if self.server.auth is not None and self.server.auth.oauth is not None:
            hint = "OAuth is configured: the workbench signs in when it connects (the doctor does not)"
        elif self.server.auth is not None or "authorization" in {key.lower() for key in self.server.headers}:
            hint = "the credentials sent were refused: check the token"
        elif "authorization server" in found and "no metadata" not in found:
            hint = 'the server uses OAuth: set "auth": "oauth" (or send a token: "auth": {"bearer": "${TOKEN}"})'
        else:
            hint = 'send a token: "auth": {"bearer": "${TOKEN}"} or "headers": {"Authorization": "Bearer ${TOKEN}"}'
        raise _Failed(f"401 Unauthorized: {asks}; {found}", hint)

    async def _oauth_metadata(self, client: Any, challenge: str) -> str:
        """What the protected-resource metadata says (RFC 9728), and whether its authorization
        server publishes metadata (RFC 8414 / OpenID)."""
        origin = f"{self.scheme}://{urlsplit(self.url).netloc.rpartition('@')[2]}"
        named = re.search(r'resource_metadata="?([^",\s]+)', challenge)
        path = self.path.rstrip("/")
        candidates = [named.group(1)] if named else []
        candidates += [
            f"{origin}/.well-known/oauth-protected-resource{path}",
            f"{origin}/.well-known/oauth-protected-resource",
        ]
        resource = await _first_json(client, list(dict.fromkeys(candidates)))
        if resource is None:
            return "no protected-resource metadata (/.well-known/oauth-protected-resource)"
        servers = resource.get("authorization_servers") or []
        if not servers or not isinstance(servers[0], str):
            return "protected-resource metadata found, naming no authorization server"
        issuer = servers[0].rstrip("/")
        parts = urlsplit(issuer)
        base, where = f"{parts.scheme}://{parts.netloc}", parts.path
        metadata = await _first_json(
            client,
            [
                f"{base}/.well-known/oauth-authorization-server{where}",
                f"{base}/.well-known/openid-configuration{where}",
                f"{issuer}/.well-known/openid-configuration",
            ],
        )
        state = "its metadata found" if metadata is not None else "no metadata found for it"
        return f"protected-resource metadata names the authorization server {_short(issuer, 80)} ({state})"

    async def _end_session(self, client: Any, response: Any) -> None:
        """End a session the raw request opened (a server keeps it otherwise)."""
        session = response.headers.get("mcp-session-id")
        if session and self.server.transport != "sse":
            with contextlib.suppress(Exception):
                await client.delete(self.url, headers={"Mcp-Session-Id": session})

    async def session(self) -> Outcome:
        """Whether the server issues a session (Mcp-Session-Id) or is stateless."""
        if self.server.transport == "sse":
            return "skipped", "SSE: the session is the event stream", ""
        if self.session_id:
            return "ok", "the server issued an Mcp-Session-Id (a stateful session)", ""
        return "ok", "no Mcp-Session-Id: a stateless server", ""

    def transport(self) -> Any:
        if self.server.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(self.url, headers=self.headers or None, timeout=self.timeout)
        from mcp.client.streamable_http import streamable_http_client

        from workbench_magic.engine.sdk.transports import http_client

        @contextlib.asynccontextmanager
        async def transport() -> Any:
            async with http_client(self.headers or None) as http:
                async with streamable_http_client(self.url, http_client=http) as streams:
                    yield streams

        return transport()


async def _first_json(client: Any, urls: list[str]) -> dict[str, Any] | None:
    """The first of `urls` that answers 200 with a JSON object, else None."""
    for url in urls:
        try:
            response = await client.get(url)
            if response.status_code == 200:
                document = response.json()
                if isinstance(document, dict):
                    return document
        except Exception:  # a metadata URL that fails is one not found
            continue
    return None
