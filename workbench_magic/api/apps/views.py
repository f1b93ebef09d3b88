"""MCP Apps host (the `io.modelcontextprotocol/ui` extension): the bridge between a tool's view and the workbench.

A tool whose `_meta.ui.resourceUri` names a `ui://` page gets an `AppView` on its `ToolResult`.
The page runs in a sandboxed frame (the notebook's widgets/appframe.py, which only relays
messages) and speaks JSON-RPC to the host; every message goes through `AppView.handle`, which
answers it here in Python: the handshake, tool calls and resource reads on the same server, logs,
links, messages for the model and size changes. What the host sends the view is queued on `outbox`.

The frame belongs to the notebook, a layer above: the workbench's presenters make it
(`Presenters.app_framer`); without one (or without a widget front end) a result shows its note line.
The extension offered to servers is the engine's (engine/extensions.py).

The view's state belongs to the kernel thread (where the widget lives); tool calls and reads go
through the workbench's public calls, history entries through the loop (`Core.record`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.engine.extensions import APP_MIME_TYPE
from workbench_magic.vocabulary.errors import CallTimeoutError, WorkbenchError
from workbench_magic.vocabulary.listings import CallRecord, ToolInfo
from workbench_magic.vocabulary.results import ToolResult

if TYPE_CHECKING:
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import LoopThread
    from workbench_magic.vocabulary.events import Event
    from workbench_magic.vocabulary.identifiers import ToolIdentifier

PROTOCOL_VERSION = "2026-01-26"
DEFAULT_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; media-src 'self' data:; connect-src 'none'"
)
"""The spec's restrictive default, for a page that declares no `_meta.ui.csp`."""
_PERMISSIONS = {"camera": "camera", "microphone": "microphone", "geolocation": "geolocation"}
_PERMISSIONS["clipboardWrite"] = "clipboard-write"
MAX_HEIGHT = 1200

# JSON-RPC error codes
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
DENIED = -32000


class AppError(WorkbenchError):
    """A tool's app cannot be shown (its page is missing or not an MCP App page)."""


Framer = Callable[["AppView", dict[str, Any]], dict[str, Any]]
"""Puts a displayed view's frame in its result's MIME bundle (the notebook's `frame_bundle`)."""


def build_csp(csp: Mapping[str, Any] | None) -> str:
    """The Content-Security-Policy of a page: the declared domains, else the spec's default."""
    if not csp:
        return DEFAULT_CSP + "; frame-src 'none'; base-uri 'self'; object-src 'none'"

    def domains(key: str) -> str:
        value = csp.get(key)
        safe = [str(d) for d in value if _is_domain(str(d))] if isinstance(value, list) else []
        return " ".join(safe)

    resources = domains("resourceDomains")
    connect = domains("connectDomains")
    frames = domains("frameDomains")
    bases = domains("baseUriDomains")
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline' {resources}".strip(),
            f"style-src 'self' 'unsafe-inline' {resources}".strip(),
            f"img-src 'self' data: {resources}".strip(),
            f"font-src 'self' data: {resources}".strip(),
            f"media-src 'self' data: {resources}".strip(),
            f"connect-src {connect or chr(39) + 'none' + chr(39)}",
            f"frame-src {frames or chr(39) + 'none' + chr(39)}",
            f"base-uri {bases or chr(39) + 'self' + chr(39)}",
            "object-src 'none'",
        ]
    )


def _is_domain(value: str) -> bool:
    """An origin as CSP takes it (no spaces or `;` that could add directives)."""
    return bool(value) and not any(c in value for c in " ;,'\"\n\r\t")


def build_allow(permissions: Mapping[str, Any] | None) -> str:
    """The frame's `allow` attribute from `_meta.ui.permissions`."""
    return "; ".join(feature for key, feature in _PERMISSIONS.items() if permissions and key in permissions)


class HostWorkbench(Protocol):
    """What `AppHost` uses of the workbench (api/workbench.py's `Workbench`, which makes the hosts)."""

    def tool(self, identifier: Any) -> ToolInfo: ...

    def call(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> ToolResult: ...

    def read_resource(self, target: str, uri: str) -> Any: ...

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]: ...


class AppHost:
    """What a view may use of the workbench: calls, reads and logs of one server, the history."""

    def __init__(self, workbench: HostWorkbench, core: Core, loop: LoopThread, frame: Framer | None = None) -> None:
        self.workbench = workbench
        self.frame = frame
        """`frame(view, bundle)`: the bundle with the view's frame (the workbench's `Presenters.frame`)."""
        self._core = core
        self._loop = loop

    def tool(self, ident: ToolIdentifier) -> ToolInfo | None:
        """The tool's info while its toolbox is open (the workbench's lookup), else None."""
        try:
            return self.workbench.tool(ident)
        except WorkbenchError:
            return None

    def call(self, ident: ToolIdentifier, arguments: dict[str, Any]) -> ToolResult:
        return self.workbench.call(ident, arguments)

    def read(self, toolbox: str, server: str, uri: str) -> Any:
        return self.workbench.read_resource(f"{toolbox}/{server}", uri).raw

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Hear of the workbench's events (a frame listens for its toolbox closing)."""
        return self.workbench.subscribe(callback)

    def log(self, toolbox: str, server: str, line: str) -> None:
        core = self._core
        self._loop.run_sync(lambda: core.connection(toolbox, server).note(line))

    def remember(self, record: CallRecord) -> None:
        core = self._core
        if self._loop.alive:
            self._loop.run_sync(lambda: core.remember(record))


async def with_view(
    call: Coroutine[Any, Any, ToolResult], host: AppHost, ident: ToolIdentifier, arguments: dict[str, Any]
) -> ToolResult:
    """Await a tool call; give its result (or its timeout error) an `AppView` when the tool has a UI."""
    try:
        result = await call
    except CallTimeoutError as exc:
        give_cancelled_view(exc, host, ident, arguments, str(exc))
        raise
    tool = host.tool(ident)
    if tool is not None and tool.ui is not None:
        result.app = AppView(host, tool, result.arguments, result=result)  # as sent
    return result


def give_cancelled_view(
    exc: BaseException, host: AppHost, ident: ToolIdentifier, arguments: dict[str, Any], reason: str
) -> None:
    """Set `exc.app`, a view told `tool-cancelled` with `reason`, when the tool has a UI."""
    tool = host.tool(ident)
    if tool is not None and tool.ui is not None and getattr(exc, "app", None) is None:
        exc.app = AppView(host, tool, arguments, cancelled=reason)  # type: ignore[attr-defined]


@dataclass
class _Page:
    html: str
    csp: str
    allow: str
    prefers_border: bool | None


class AppView:
    """One rendered MCP App: the page of a tool's UI with the tool's input and result.

    `handle(message)` answers one JSON-RPC message of the view (None for a notification);
    what the host sends the view waits on `outbox` (`take()` empties it). `messages` holds the
    view's `ui/message` requests, `model_context` its last `ui/update-model-context`, `links`
    the links it asked to open, `size` its last reported size.

    A call of a tool with a UI gets one as `ToolResult.app` (when `render_apps` is on), and an
    interrupted or timed-out call as the error's `.app`, told `tool-cancelled`.

    Attributes:
        tool: the tool whose UI it is.
        resource_uri: the `ui://` URI of the page (the tool's `_meta.ui.resourceUri`).
        arguments: the call's arguments (the view is told them: `ui/notifications/tool-input`).
        result: the call's result (`ui/notifications/tool-result`); None for a cancelled call.
        cancelled: why the call was cancelled (`ui/notifications/tool-cancelled`), else None.
        messages: the view's `ui/message` requests, oldest first.
        model_context: the view's last `ui/update-model-context`, None before one.
        links: the links it asked to open (only http and https open).
        size: its last reported `(width, height)`; None where not reported.
        outbox: what the host has to send the view (`take()` empties it).
        initialized: whether the view has said `ui/notifications/initialized`.
        torn_down: whether `teardown` ran.

    Example:
        ```python
        result = wb.call("demo/datasets/chart", {"dataset": "penguins"})
        view = result.app  # None when the tool has no UI
        view.handle({"jsonrpc": "2.0", "id": 1, "method": "ping"})  # {"jsonrpc": "2.0", "id": 1, "result": {}}
        view.messages
        ```
    """

    def __init__(
        self,
        host: AppHost,
        tool: ToolInfo,
        arguments: dict[str, Any],
        *,
        result: ToolResult | None = None,
        cancelled: str | None = None,
    ) -> None:
        assert tool.ui is not None
        self.host = host
        self.tool = tool
        self.resource_uri = tool.ui.resource_uri
        self.arguments = dict(arguments)
        self.result = result
        self.cancelled = cancelled
        self.theme = "light"
        self.display_mode = "inline"
        self.messages: list[dict[str, Any]] = []
        self.model_context: dict[str, Any] | None = None
        self.links: list[str] = []
        self.size: tuple[float | None, float | None] = (None, None)
        self.outbox: list[dict[str, Any]] = []
        self.initialized = False
        self.torn_down = False
        self.teardown_answered = False
        self.listeners: list[Callable[[AppView], None]] = []
        self.frame: Any = None
        """The widget showing the view, once displayed in a kernel."""
        self.shown_again: list[AppView] = []
        """The views of the same call made for later displays of the result (one page each)."""
        self._page: _Page | None = None
        self._next_id = 0

    def again(self) -> AppView:
        """A new view of the same call (for one more display: each frame runs its own page).

        Returns:
            The new view, also kept in `shown_again`.
        """
        view = AppView(self.host, self.tool, self.arguments, result=self.result, cancelled=self.cancelled)
        view._page = self._page
        self.shown_again.append(view)
        return view

    # ---- the page ------------------------------------------------------------------------
    @property
    def note(self) -> str:
        """One line saying the tool has an app (what a front end without widgets shows)."""
        return f"This tool has an app ({self.resource_uri}): display the result in JupyterLab to use it."

    def load(self) -> _Page:
        """Read the page (`resources/read`, once).

        Returns:
            The page: its HTML, Content-Security-Policy, `allow` attribute and border preference.

        Raises:
            AppError: the page cannot be read or is not an app (one line).
        """
        if self._page is None:
            t = self.tool
            where = f"tool '{t.name}' in server '{t.server}' (toolbox '{t.toolbox}')"
            try:
                raw = self.host.read(t.toolbox, t.server, self.resource_uri)
            except WorkbenchError as exc:
                raise AppError(f"Cannot show the app of {where}: {exc}") from None
            item = next((c for c in raw.contents if c.uri == self.resource_uri), None) or (raw.contents or [None])[0]
            if item is None:
                raise AppError(f"Cannot show the app of {where}: {self.resource_uri} has no contents")
            if item.mime_type != APP_MIME_TYPE:
                raise AppError(
                    f"Cannot show the app of {where}: {self.resource_uri} is {item.mime_type!r}, not {APP_MIME_TYPE!r}"
                )
            text = getattr(item, "text", None)
            if text is None:
                import base64

                text = base64.b64decode(item.blob).decode("utf-8", "replace")
            ui = ((item.meta or {}).get("ui") or {}) if isinstance(item.meta or {}, dict) else {}
            ui = ui if isinstance(ui, dict) else {}
            csp, allow = build_csp(ui.get("csp")), build_allow(ui.get("permissions"))
            self._page = _Page(text, csp, allow, ui.get("prefersBorder"))
        return self._page

    @property
    def html(self) -> str:
        """The app's HTML page (read from the server on first use)."""
        return self.load().html

    @property
    def csp(self) -> str:
        """The Content-Security-Policy the frame enforces."""
        return self.load().csp

    @property
    def allow(self) -> str:
        """The frame's `allow` attribute (permissions the page asked for)."""
        return self.load().allow

    def widget_bundle(self, bundle: dict[str, Any]) -> dict[str, Any]:
        """A result's MIME bundle with the app's frame (where widgets run; read on first display).

        The frame is made by the workbench's `Presenters.app_framer`; the bundle is unchanged without one.

        Args:
            bundle: the result's MIME bundle.

        Returns:
            The bundle to display.
        """
        return self.host.frame(self, bundle) if self.host.frame is not None else bundle

    # ---- messages ------------------------------------------------------------------------
    def handle(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """Answer one JSON-RPC message from the view: its response, or None for a notification.

        A request the host refuses (an unknown method, a tool not callable by apps, a link that is
        not http or https) or that fails gets a JSON-RPC error response. Every message goes into the
        workbench's history (kind `app`).

        Args:
            message: the JSON-RPC message, as the page sent it.

        Returns:
            The response to send back; None for a notification or a response.
        """
        started = time.time()
        t0 = time.perf_counter()
        method = message.get("method")
        msg_id = message.get("id")
        params = message.get("params") or {}
        if not isinstance(method, str):  # a response to one of our requests
            if message.get("result") is not None and self.torn_down:
                self.teardown_answered = True
            self._remember("response", dict(message), started, t0, True, None, None)
            return None
        answer: Any = None
        error: tuple[int, str] | None = None
        if msg_id is None:  # in the history before what it makes the host send
            self._remember(method, params, started, t0, True)
        try:
            answer = self._dispatch(method, params if isinstance(params, dict) else {})
        except _Refused as exc:
            error = (exc.code, str(exc))
        except WorkbenchError as exc:
            error = (DENIED, str(exc))
        if msg_id is not None:
            self._remember(method, params, started, t0, error is None, error[1] if error else None, answer)
        self._changed()
        if msg_id is None:
            return None
        if error is not None:
            return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": error[0], "message": error[1]}}
        return {"jsonrpc": "2.0", "id": msg_id, "result": answer if answer is not None else {}}

    def take(self) -> list[dict[str, Any]]:
        """What the host has to send the view now (emptied).

        Returns:
            The queued messages, oldest first.
        """
        out, self.outbox = self.outbox, []
        return out

    def teardown(self, reason: str) -> dict[str, Any] | None:
        """Queue `ui/resource-teardown` (once) before the view goes away; returns the request.

        Args:
            reason: why the view goes away (sent in the request).

        Returns:
            The queued request; None when the view was torn down before or never initialized.
        """
        if self.torn_down or not self.initialized:
            self.torn_down = True
            return None
        self.torn_down = True
        self._next_id += 1
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": f"host-{self._next_id}", "method": "ui/resource-teardown"}
        request["params"] = {"reason": reason}
        self._send(request)
        return request

    def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        handler = _HANDLERS.get(method)
        if handler is None:
            if method.startswith("notifications/") or method.startswith("ui/notifications/"):
                return None
            raise _Refused(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler(self, params)

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        from workbench_magic.vocabulary.version import __version__

        tool = {k: v for k, v in self.tool.to_dict().items() if k not in ("toolbox", "server")}
        if self.tool.meta:
            tool["_meta"] = self.tool.meta
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "hostInfo": {"name": "workbench-magic", "version": __version__},
            "hostCapabilities": {
                "openLinks": {},
                "serverTools": {},
                "serverResources": {},
                "logging": {},
                "updateModelContext": {"text": {}, "structuredContent": {}},
                "message": {"text": {}},
            },
            "hostContext": {
                "toolInfo": {"tool": tool},
                "theme": self.theme,
                "displayMode": self.display_mode,
                "availableDisplayModes": ["inline"],
                "containerDimensions": {"maxHeight": MAX_HEIGHT},
                "locale": _locale(),
                "timeZone": _time_zone(),
                "platform": "web",
            },
        }

    def _initialized(self, params: dict[str, Any]) -> None:
        if self.initialized:
            return
        self.initialized = True
        self._send({"jsonrpc": "2.0", "method": "ui/notifications/tool-input", "params": {"arguments": self.arguments}})
        if self.result is not None:
            dumped = self.result.raw.model_dump(by_alias=True, exclude_none=True, mode="json")
            self._send({"jsonrpc": "2.0", "method": "ui/notifications/tool-result", "params": dumped})
        elif self.cancelled is not None:
            cancelled = {"reason": self.cancelled}
            self._send({"jsonrpc": "2.0", "method": "ui/notifications/tool-cancelled", "params": cancelled})

    def _call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        from workbench_magic.vocabulary.identifiers import ToolIdentifier

        name = params.get("name")
        if not isinstance(name, str):
            raise _Refused(INVALID_PARAMS, "tools/call needs a tool name")
        ident = ToolIdentifier(toolbox=self.tool.toolbox, server=self.tool.server, name=name)
        tool = self.host.tool(ident)
        if tool is None:
            raise _Refused(INVALID_PARAMS, f"Tool '{name}' not found in server '{ident.server}'")
        if tool.ui is not None and "app" not in tool.ui.visibility:
            shown = ", ".join(tool.ui.visibility)
            raise _Refused(DENIED, f"Tool '{name}' is not callable by apps (visibility: {shown})")
        arguments = params.get("arguments") or {}
        result = self.host.call(ident, arguments if isinstance(arguments, dict) else {})
        dumped: dict[str, Any] = result.raw.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped

    def _read_resource(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise _Refused(INVALID_PARAMS, "resources/read needs a uri")
        raw = self.host.read(self.tool.toolbox, self.tool.server, uri)
        dumped: dict[str, Any] = raw.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped

    def _log(self, params: dict[str, Any]) -> None:
        level = params.get("level", "info")
        data = params.get("data")
        text = data if isinstance(data, str) else repr(data)
        self.host.log(self.tool.toolbox, self.tool.server, f"[app {self.resource_uri}] {level}: {text}")

    def _open_link(self, params: dict[str, Any]) -> dict[str, Any]:
        url = params.get("url")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise _Refused(DENIED, "Invalid URL (only http and https links open)")
        self.links.append(url)
        return {}

    def _message(self, params: dict[str, Any]) -> dict[str, Any]:
        self.messages.append(params)
        return {}

    def _update_model_context(self, params: dict[str, Any]) -> dict[str, Any]:
        self.model_context = params
        return {}

    def _display_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"mode": self.display_mode}

    def _size_changed(self, params: dict[str, Any]) -> None:
        width, height = params.get("width"), params.get("height")
        self.size = (
            float(width) if isinstance(width, int | float) else self.size[0],
            float(height) if isinstance(height, int | float) else self.size[1],
        )

    # ---- plumbing ------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        self.outbox.append(message)
        params = message.get("params")
        self._remember(f"-> {message['method']}", params if isinstance(params, dict) else {}, time.time(), 0.0, True)

    def _changed(self) -> None:
        for listener in list(self.listeners):
            listener(self)

    def _remember(
        self,
        method: str,
        params: Any,
        started: float,
        t0: float,
        ok: bool,
        error: str | None = None,
        answer: Any = None,
    ) -> None:
        elapsed = time.perf_counter() - t0 if t0 else 0.0
        args = {"method": method, "params": params if isinstance(params, dict) else {"value": params}}
        self.host.remember(CallRecord(self.tool.identifier, args, started, elapsed, ok, error, "app", answer))

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else ("initialized" if self.initialized else "new")
        return f"<AppView {self.tool.path} {self.resource_uri} [{state}]>"


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


_HANDLERS: dict[str, Callable[[AppView, dict[str, Any]], Any]] = {
    "ui/initialize": AppView._initialize,
    "ui/notifications/initialized": AppView._initialized,
    "tools/call": AppView._call_tool,
    "resources/read": AppView._read_resource,
    "ping": lambda view, params: {},
    "notifications/message": AppView._log,
    "ui/open-link": AppView._open_link,
    "ui/message": AppView._message,
    "ui/update-model-context": AppView._update_model_context,
    "ui/request-display-mode": AppView._display_mode,
    "ui/notifications/size-changed": AppView._size_changed,
}


def _locale() -> str:
    import locale

    name = locale.getlocale()[0] or "en_US"
    return name.replace("_", "-") if name not in ("C", "POSIX") else "en-US"


def _time_zone() -> str:
    import os

    tz = os.environ.get("TZ")
    if tz and "/" in tz:
        return tz
    try:
        link = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in link:
            return link.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "UTC"


__all__ = [
    "APP_MIME_TYPE",
    "AppError",
    "AppHost",
    "AppView",
    "HostWorkbench",
    "build_csp",
    "give_cancelled_view",
    "with_view",
]
