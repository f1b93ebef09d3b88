"""The datasets server's MCP App: an interactive scatter chart whose controls call a tool back.

Written with the SDK's `Apps`, so it runs offline: `chart` (for the model and the app) opens
`ui://datasets/chart.html` with the points of two numeric columns; changing a column in the page
calls `chart_points` (for the app only) through the host. A client without MCP Apps gets the
same data as JSON text.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.apps import Apps
from pydantic import Field

from workbench_magic.demo.tables import DatasetError, load

CHART_URI = "ui://datasets/chart.html"

apps = Apps()

CHART_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Dataset chart</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 8px; color: var(--fg, #222); background: var(--bg, #fff); }
  body.dark { --fg: #eee; --bg: #222; }
  select, button { font: inherit; margin-right: 6px; }
  svg text { fill: currentColor; font-size: 11px; }
  #status { color: #777; font-size: 12px; }
</style></head>
<body>
<div>
  <label>x <select id="x"></select></label>
  <label>y <select id="y"></select></label>
  <button id="note">tell the notebook</button>
  <span id="status">waiting for the host…</span>
</div>
<svg id="chart" width="520" height="300" viewBox="0 0 520 300"></svg>
<script>
let nextId = 1; const pending = {}; let current = null;
function request(method, params) {
  const id = nextId++;
  window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  return new Promise((resolve, reject) => { pending[id] = { resolve, reject }; });
}
function notify(method, params) { window.parent.postMessage({ jsonrpc: "2.0", method, params }, "*"); }
window.addEventListener("message", (event) => {
  const m = event.data || {};
  if (m.id !== undefined && !m.method && pending[m.id]) {
    const p = pending[m.id]; delete pending[m.id]; m.error ? p.reject(m.error) : p.resolve(m.result);
  } else if (m.method === "ui/notifications/tool-result") {
    show(m.params.structuredContent);
  } else if (m.method === "ui/notifications/tool-cancelled") {
    status("the call was cancelled: " + m.params.reason);
  } else if (m.method === "ui/resource-teardown") {
    window.parent.postMessage({ jsonrpc: "2.0", id: m.id, result: {} }, "*");
  }
});
function status(text) { document.getElementById("status").textContent = text; }
function fill(id, columns, chosen) {
  const select = document.getElementById(id);
  select.innerHTML = "";
  for (const c of columns) { const o = document.createElement("option"); o.value = o.textContent = c;
    select.appendChild(o); }
  select.value = chosen;
}
function show(data) {
  current = data;
  fill("x", data.numeric_columns, data.x); fill("y", data.numeric_columns, data.y);
  const svg = document.getElementById("chart"); const W = 520, H = 300, P = 40;
  const xs = data.points.map((p) => p[0]), ys = data.points.map((p) => p[1]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const sx = (v) => P + (W - 2 * P) * (v - x0) / ((x1 - x0) || 1);
  const sy = (v) => H - P - (H - 2 * P) * (v - y0) / ((y1 - y0) || 1);
  let out = `<line x1="${P}" y1="${H - P}" x2="${W - P}" y2="${H - P}" stroke="#888"/>` +
    `<line x1="${P}" y1="${P}" x2="${P}" y2="${H - P}" stroke="#888"/>` +
    `<text x="${W / 2}" y="${H - 8}" text-anchor="middle">${data.x}</text>` +
    `<text x="12" y="${H / 2}" transform="rotate(-90 12 ${H / 2})" text-anchor="middle">${data.y}</text>`;
  for (const [x, y] of data.points) {
    out += `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3" fill="#3b7dd8" fill-opacity="0.6"/>`;
  }
  svg.innerHTML = out;
  status(`${data.dataset}: ${data.points.length} points`);
  notify("ui/notifications/size-changed", { width: document.body.scrollWidth,
    height: document.documentElement.scrollHeight });
}
async function redraw() {
  const x = document.getElementById("x").value, y = document.getElementById("y").value;
  status("asking the server…");
  try {
    const result = await request("tools/call", { name: "chart_points", arguments: { dataset: current.dataset, x, y } });
    show(result.structuredContent);
    await request("ui/update-model-context", { structuredContent: { dataset: current.dataset, x, y } });
  } catch (e) { status("error: " + (e.message || e)); }
}
document.getElementById("x").onchange = redraw;
document.getElementById("y").onchange = redraw;
document.getElementById("note").onclick = () => request("ui/message", { role: "user",
  content: { type: "text", text: `Look at ${current.y} against ${current.x} in ${current.dataset}` } });
(async () => {
  const init = await request("ui/initialize", { appCapabilities: {}, protocolVersion: "2026-01-26",
    appInfo: { name: "datasets-chart", version: "1.0.0" } });
  if (init.hostContext && init.hostContext.theme === "dark") document.body.classList.add("dark");
  notify("ui/notifications/initialized", {});
  notify("notifications/message", { level: "info", data: "chart ready" });
})();
</script></body></html>
"""


def _points(dataset: str, x: str | None, y: str | None) -> dict[str, Any]:
    table = load(dataset)
    numeric = [c for c in table.columns if table.is_numeric(c)]
    if len(numeric) < 2:
        raise DatasetError(f"Dataset {dataset!r} has fewer than two numeric columns to chart")
    x = table.check_column(x) if x else numeric[0]
    y = table.check_column(y) if y else numeric[1]
    for column in (x, y):
        if not table.is_numeric(column):
            raise DatasetError(f"Column {column!r} is not numeric. Numeric columns: {', '.join(numeric)}")
    points = [[r[x], r[y]] for r in table.rows if r[x] is not None and r[y] is not None]
    return {"dataset": dataset, "x": x, "y": y, "numeric_columns": numeric, "points": points}


Column = Annotated[str | None, Field(description="A numeric column (default: the first or second numeric one)")]


@apps.tool(resource_uri=CHART_URI, title="Chart a dataset")
def chart(dataset: str = "penguins", x: Column = None, y: Column = None) -> dict[str, Any]:
    """An interactive scatter chart of two numeric columns (an MCP App; other clients get the points)."""
    return _points(dataset, x, y)


@apps.tool(resource_uri=CHART_URI, visibility=["app"])
def chart_points(dataset: str, x: str, y: str) -> dict[str, Any]:
    """The points of two numeric columns, for the chart's controls."""
    return _points(dataset, x, y)


apps.add_html_resource(
    CHART_URI,
    CHART_HTML,
    name="chart",
    title="Dataset chart",
    description="Scatter chart of a dataset whose column pickers call chart_points",
    prefers_border=True,
)
