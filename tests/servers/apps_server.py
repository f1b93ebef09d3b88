"""An MCP Apps test server written with the SDK's `Apps`: a UI tool, an app-only tool, a model-only tool.

- `show_counter` (visibility model + app) renders `ui://counter/app.html`: a page that does the
  handshake by hand (no SDK), shows the tool input and result, and whose button calls
  `bump` back; it reports its size and a few things a test can look for.
- `bump` (app only) adds to a counter; `secret_total` (model only) must never be callable from the app.
- `slow_counter` (UI) sleeps `seconds` first: for timeouts (`tool-cancelled`).
- `plain_page` is a UI tool whose page is served as `text/html` (not an app): the one-line error.
- `probe` is a UI tool whose page tries to escape the frame (parent document, the Jupyter API)
  and shows what it found.

Run: `python apps_server.py [--transport stdio|http] [--legacy]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from legacy import serve
from mcp.server import MCPServer
from mcp.server.apps import Apps, client_supports_apps
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.resources import TextResource

BRIDGE = """
<script>
let nextId = 1; const pending = {};
function request(method, params) {
  const id = nextId++;
  window.parent.postMessage({jsonrpc: "2.0", id, method, params}, "*");
  return new Promise((resolve, reject) => { pending[id] = {resolve, reject}; });
}
function notify(method, params) { window.parent.postMessage({jsonrpc: "2.0", method, params}, "*"); }
const handlers = {"ui/resource-teardown": () => ({})};
window.addEventListener("message", (event) => {
  const m = event.data || {};
  if (m.id !== undefined && !m.method && pending[m.id]) {
    const p = pending[m.id]; delete pending[m.id];
    m.error ? p.reject(m.error) : p.resolve(m.result);
  } else if (m.method && handlers[m.method]) {
    const answer = handlers[m.method](m.params || {});
    if (m.id !== undefined) window.parent.postMessage({jsonrpc: "2.0", id: m.id, result: answer || {}}, "*");
  }
});
function log(line) { const el = document.getElementById("log"); el.textContent += line + "\\n"; }
</script>
"""

COUNTER_HTML = (
    """<!DOCTYPE html><html><head><meta charset="utf-8"><title>counter</title></head>
<body style="font-family: sans-serif; margin: 8px">
<h3 id="title">Counter app</h3>
<div>input: <code id="input">(none)</code></div>
<div>result: <code id="result">(none)</code></div>
<div>theme: <code id="theme">?</code></div>
<button id="bump">bump</button> <button id="secret">secret</button> <button id="grow">grow</button>
<div>total: <b id="total">?</b></div>
<pre id="log"></pre>
<div id="spacer" style="height: 0px"></div>
"""
    + BRIDGE
    + """
<script>
handlers["ui/notifications/tool-input"] = (p) => {
  document.getElementById("input").textContent = JSON.stringify(p.arguments); log("tool-input"); };
handlers["ui/notifications/tool-result"] = (p) => {
  document.getElementById("result").textContent = JSON.stringify(p.structuredContent); log("tool-result"); };
handlers["ui/notifications/tool-cancelled"] = (p) => { log("tool-cancelled: " + p.reason); };
handlers["ui/resource-teardown"] = (p) => { log("teardown"); return {}; };
function size() { notify("ui/notifications/size-changed", {width: document.body.scrollWidth,
  height: document.documentElement.scrollHeight}); }
document.getElementById("bump").onclick = async () => {
  const r = await request("tools/call", {name: "bump", arguments: {by: 5}});
  document.getElementById("total").textContent = r.structuredContent.total; log("bumped");
};
document.getElementById("secret").onclick = async () => {
  try { await request("tools/call", {name: "secret_total", arguments: {}}); log("secret: answered"); }
  catch (e) { log("secret refused: " + e.message); }
};
document.getElementById("grow").onclick = () => {
  document.getElementById("spacer").style.height = "400px"; size(); };
(async () => {
  const init = await request("ui/initialize", {appCapabilities: {}, appInfo: {name: "counter", version: "1"},
    protocolVersion: "2026-01-26"});
  document.getElementById("theme").textContent = init.hostContext.theme;
  log("host: " + init.hostInfo.name);
  notify("ui/notifications/initialized", {});
  notify("notifications/message", {level: "info", data: "counter ready"});
  size();
})();
</script></body></html>"""
)

PROBE_HTML = (
    """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<div>parent document: <code id="parent">?</code></div>
<div>jupyter api: <code id="api">?</code></div>
<div>origin: <code id="origin">?</code></div>
<div>cookie: <code id="cookie">?</code></div>
<pre id="log"></pre>"""
    + BRIDGE
    + """
<script>
document.getElementById("origin").textContent = String(window.origin);
try { document.getElementById("parent").textContent = "READ " + parent.document.title; }
catch (e) { document.getElementById("parent").textContent = "blocked"; }
try { document.getElementById("cookie").textContent = "READ " + document.cookie; }
catch (e) { document.getElementById("cookie").textContent = "blocked"; }
const url = (document.referrer || "http://127.0.0.1/") ;
fetch(new URL("/api/contents", url).href).then((r) => {
  document.getElementById("api").textContent = "READ " + r.status; })
  .catch(() => { document.getElementById("api").textContent = "blocked"; });
(async () => {
  await request("ui/initialize", {appCapabilities: {}, appInfo: {name: "probe", version: "1"},
    protocolVersion: "2026-01-26"});
  notify("ui/notifications/initialized", {});
})();
</script></body></html>"""
)


class AppsServer(MCPServer):
    """The test server (module docstring)."""

    def __init__(self, name: str = "apps") -> None:
        apps = Apps()
        self.total = 0

        @apps.tool(resource_uri="ui://counter/app.html", description="Show the counter app, starting at `start`.")
        def show_counter(ctx: Context, start: int = 0) -> dict[str, object]:
            self.total = start
            return {"total": self.total, "apps": client_supports_apps(ctx)}

        @apps.tool(resource_uri="ui://counter/app.html", visibility=["app"], description="Add `by` to the counter.")
        def bump(by: int = 1) -> dict[str, int]:
            self.total += by
            return {"total": self.total}

        @apps.tool(resource_uri="ui://counter/app.html", description="Show the counter app after `seconds`.")
        def slow_counter(seconds: float = 5.0) -> dict[str, int]:
            time.sleep(seconds)
            return {"total": self.total}

        @apps.tool(resource_uri="ui://probe/app.html", description="A page that tries to leave its frame.")
        def probe() -> str:
            return "probing"

        apps.add_html_resource("ui://counter/app.html", COUNTER_HTML, name="counter")
        apps.add_html_resource("ui://probe/app.html", PROBE_HTML, name="probe")
        super().__init__(name, extensions=[apps])
        plain = TextResource(uri="ui://plain/page.html", name="plain", mime_type="text/html", text="<p>x</p>")
        self.add_resource(plain)

        @self.tool(meta={"ui": {"resourceUri": "ui://plain/page.html"}})
        def plain_page() -> str:
            """A UI tool whose page is not an app page (`text/html`)."""
            return "plain"

        @self.tool(meta={"ui": {"resourceUri": "ui://counter/app.html", "visibility": ["model"]}})
        def secret_total() -> dict[str, int]:
            """The counter, for the model only."""
            return {"total": self.total}

        @self.tool(meta={"ui/resourceUri": "ui://counter/app.html"})
        def old_style(start: int = 0) -> dict[str, int]:
            """A UI tool declared with the older flat `_meta["ui/resourceUri"]`."""
            return {"total": start}

        @self.tool()
        def plain_tool() -> str:
            """A tool without a UI."""
            return "plain"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--legacy", action="store_true", help="stdio: serve the handshake era only")
    args = parser.parse_args(argv)
    serve(AppsServer(), args.transport, host=args.host, port=args.port, legacy=args.legacy)


if __name__ == "__main__":
    main()
