"""The MCP App frame: an anywidget whose front end only creates the sandboxed frame and relays messages.

The page runs in `<iframe sandbox="allow-scripts" srcdoc=...>`, without `allow-same-origin`: its
origin is opaque, so it cannot reach the notebook page, its cookies or the Jupyter server's API
(the token stays out of reach). Its Content-Security-Policy is a `<meta>` put first in the page
(from `_meta.ui.csp`, else the spec's restrictive default). The front end accepts messages only
from that frame's window and hands them to Python, where `AppView.handle` answers them.
"""

from __future__ import annotations

import atexit
import html
import re
import uuid
import weakref
from typing import TYPE_CHECKING, Any

import anywidget
import ipywidgets as widgets
import traitlets

from workbench_magic.api.apps.views import MAX_HEIGHT, AppError

if TYPE_CHECKING:
    from workbench_magic.api.apps.views import AppView
    from workbench_magic.vocabulary.events import Event

_ESM = r"""
// What the kernel sends reaches a frame through its model's own listener (set in initialize):
// anywidget drops a view's listeners when the view goes, and a page kept for its teardown
// must still hear the request.
const routes = new Map();
function initialize({ model }) {
  model.on("msg:custom", (msg) => { for (const route of routes.get(model.get("key")) || []) route(msg); });
}
function render({ model, el }) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("allow", model.get("allow") || "");
  frame.setAttribute("title", "MCP App");
  frame.className = "wb-app-frame";
  frame.style.cssText = "width:100%;border:" + (model.get("border") ? "1px solid #ccc" : "0") + ";display:block";
  frame.style.height = model.get("height") + "px";
  const light = document.body.dataset.jpThemeLight;
  model.set("theme", light === "false" ? "dark" : "light");
  model.save_changes();
  frame.srcdoc = model.get("page");
  el.appendChild(frame);
  const onMessage = (event) => {
    if (event.source !== frame.contentWindow) return;
    model.send({ type: "rpc", message: event.data });
  };
  window.addEventListener("message", onMessage);
  const onCustom = (msg) => {
    if (msg.type === "rpc" && frame.contentWindow) frame.contentWindow.postMessage(msg.message, "*");
    if (msg.type === "dispose") {
      window.removeEventListener("message", onMessage); unroute(); frame.remove(); if (holder) holder.remove();
    }
  };
  const key = model.get("key");
  if (!routes.has(key)) routes.set(key, new Set());
  routes.get(key).add(onCustom);
  const unroute = () => {
    const set = routes.get(key);
    if (set) { set.delete(onCustom); if (!set.size) routes.delete(key); }
  };
  const onHeight = () => { frame.style.height = model.get("height") + "px"; };
  model.on("change:height", onHeight);
  // Keep the page alive, hidden, when JupyterLab takes the output away (a re-run clears it at
  // once), until it has answered ui/resource-teardown or 10 s passed. An ancestor removing our
  // branch first moves the frame aside: moveBefore keeps a connected frame's page, where a
  // plain move or a removal would unload it. Only ancestors of this output are wrapped.
  let holder = null;
  const keep = (child) => {
    if (holder || !child.contains(frame) || !frame.isConnected) return;
    holder = document.createElement("div");
    holder.style.cssText = "position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden";
    document.body.appendChild(holder);
    if (typeof holder.moveBefore === "function") holder.moveBefore(frame, null);
  };
  const guarded = [];
  const guard = () => {
    if (!el.isConnected) return requestAnimationFrame(guard);
    for (let node = el; node && node !== document.body; node = node.parentNode) {
      if (!node.__wbKeep) {
        const keepers = new Set();
        const removeChild = node.removeChild;
        node.removeChild = function (child) {
          for (const k of keepers) k(child);
          return removeChild.call(this, child);
        };
        node.__wbKeep = keepers;
      }
      node.__wbKeep.add(keep);
      guarded.push(node);
    }
  };
  guard();
  const unguard = () => { for (const node of guarded) node.__wbKeep.delete(keep); guarded.length = 0; };
  return () => {
    model.off("change:height", onHeight);
    unguard();
    model.send({ type: "removed", kept: !!holder && frame.isConnected });
    setTimeout(() => {
      window.removeEventListener("message", onMessage); unroute();
      if (holder) holder.remove();
    }, 10000);
  };
}
export default { initialize, render };
"""

_live: weakref.WeakSet[AppFrame] = weakref.WeakSet()


def with_csp(page: str, csp: str) -> str:
    """The page with its CSP as the first element (before anything the page itself could run)."""
    body = re.sub(r"^\s*<!doctype[^>]*>", "", page, count=1, flags=re.IGNORECASE)
    meta = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp, quote=True)}">'
    return f"<!DOCTYPE html>{meta}{body}"


class AppFrame(anywidget.AnyWidget):
    """The frame of one `AppView` (kernel thread only).

    A frame shown as a cell's output (`in_cell`) is torn down when that cell runs again; the
    explorer's (`in_cell=False`) when the explorer shows another result.
    """

    _esm = _ESM
    page = traitlets.Unicode("").tag(sync=True)
    allow = traitlets.Unicode("").tag(sync=True)
    border = traitlets.Bool(False).tag(sync=True)
    height = traitlets.Int(360).tag(sync=True)
    theme = traitlets.Unicode("light").tag(sync=True)
    key = traitlets.Unicode("").tag(sync=True)

    def __init__(self, view: AppView, *, in_cell: bool = True) -> None:
        page = with_csp(view.html, view.csp)
        super().__init__(page=page, allow=view.allow, border=bool(view.load().prefers_border), key=uuid.uuid4().hex)
        self.view = view
        self.notes = widgets.HTML("")
        self.on_msg(self._on_msg)
        self._unsubscribe = _on_close_of(self, view)
        self.cell_id = _watch_rerun() if in_cell else None
        _live.add(self)

    @traitlets.observe("theme")
    def _theme_changed(self, change: Any) -> None:
        self.view.theme = change["new"]

    def _on_msg(self, widget: Any, content: Any, buffers: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "rpc" and isinstance(content.get("message"), dict):
            message = content["message"]
            try:
                answer = self.view.handle(message)
            except Exception as exc:  # a bug must not leave the page waiting forever
                answer = None
                if message.get("id") is not None:
                    error = {"code": -32603, "message": f"{type(exc).__name__}: {exc}"}
                    answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            if answer is not None:
                self.send({"type": "rpc", "message": answer})
            self.flush()
        elif kind == "removed":
            self.teardown("the output was cleared or the cell re-run")

    def flush(self) -> None:
        """Send what the view queued; show its size, links, messages and model context."""
        for message in self.view.take():
            self.send({"type": "rpc", "message": message})
        if self.view.teardown_answered:
            self.send({"type": "dispose"})
        height = self.view.size[1]
        if height is not None:
            self.height = max(40, min(MAX_HEIGHT, int(height)))
        self.notes.value = notes_html(self.view)

    def teardown(self, reason: str) -> None:
        """Send `ui/resource-teardown` before the view goes away."""
        if self.view.teardown(reason) is not None:
            self.flush()
        self._unsubscribe()


def notes_html(view: AppView) -> str:
    """Links (opened only by a click), messages and model context of the view, under it."""
    out = []
    for url in view.links:
        link = html.escape(url, quote=True)
        anchor = f"<a href='{link}' target='_blank' rel='noopener noreferrer'>{link}</a>"
        out.append(f"<div>↗ the app asks to open {anchor}</div>")
    for message in view.messages:
        content = message.get("content")
        text = content.get("text") if isinstance(content, dict) else content
        out.append(f"<div>» message from the app: {html.escape(str(text))}</div>")
    if view.model_context is not None:
        out.append(f"<div>» model context: <code>{html.escape(str(view.model_context)[:500])}</code></div>")
    return "".join(out)


def _on_close_of(frame: AppFrame, view: AppView) -> Any:
    """Tear the view down when its toolbox closes (events arrive on the loop; handled on this thread)."""
    import asyncio

    from workbench_magic.engine.runtime import LoopChannel
    from workbench_magic.vocabulary.events import ToolboxClosed

    try:
        channel = LoopChannel(asyncio.get_running_loop())
    except RuntimeError:
        return lambda: None
    ref = weakref.ref(frame)

    def closed() -> None:
        frame = ref()
        if frame is not None:
            frame.teardown("the toolbox was closed")

    def on_event(event: Event) -> None:
        if isinstance(event, ToolboxClosed) and event.toolbox == view.tool.toolbox:
            channel.post(closed)

    return view.host.subscribe(on_event)


def _watch_rerun() -> str | None:
    """The id of the cell being run (JupyterLab sends it), with a hook that tears this cell's
    frames down as the cell runs again: the front end has cleared the output by then, and the
    page, kept hidden for a while, still answers."""
    from IPython import get_ipython

    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:
        parent = None
    cell_id = ((parent or {}).get("metadata") or {}).get("cellId")
    if cell_id is None or shell is None:
        return None
    events = shell.events
    if _before_cell not in events.callbacks["pre_run_cell"]:
        events.register("pre_run_cell", _before_cell)
    return str(cell_id)


def _before_cell(info: Any) -> None:
    cell_id = getattr(info, "cell_id", None)
    frames = list(_live)
    for frame in frames:
        if cell_id is not None and frame.cell_id == cell_id:
            frame.teardown("the cell was run again")
    if not any(not frame.view.torn_down for frame in frames):  # nothing left to watch
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None and _before_cell in shell.events.callbacks["pre_run_cell"]:
            shell.events.unregister("pre_run_cell", _before_cell)


def _has_widget_front_end() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def frame_bundle(view: AppView, bundle: dict[str, Any]) -> dict[str, Any]:
    """A result's MIME bundle with the app's widget (in a kernel), or with the line saying why not."""
    if not _has_widget_front_end():
        return bundle
    if view.frame is not None:  # shown before: this display runs a page of its own
        view = view.again()
    try:
        frame = AppFrame(view)
    except AppError as exc:
        out = dict(bundle)
        out["text/plain"] = f"{bundle.get('text/plain', '')}\n{exc}"
        out["text/html"] = f"{bundle.get('text/html', '')}<div style='color:#b00020'>{html.escape(str(exc))}</div>"
        return out
    view.frame = frame
    summary = repr(view.result).splitlines()[0] if view.result is not None else view.tool.path
    title = widgets.HTML(f"<b>{html.escape(summary)}</b> <i>(MCP App {html.escape(view.resource_uri)})</i>")
    box = widgets.VBox([title, frame, frame.notes])
    shown = box._repr_mimebundle_()
    key = "application/vnd.jupyter.widget-view+json"
    return {**bundle, key: shown[key]} if isinstance(shown, dict) and key in shown else bundle


@atexit.register
def _teardown_all() -> None:
    for frame in list(_live):
        try:
            frame.teardown("the kernel is shutting down")
        except Exception:
            pass
