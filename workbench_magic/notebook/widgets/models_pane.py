"""The Models pane of the explorer: how models see the chosen server's tools.

Three sections, each a table the workbench already makes:

- the schema report of the chosen server (`wb.check_schemas("toolbox/server")`): whether OpenAI,
  Anthropic and Gemini accept each tool's input schema;
- the context cost of its toolbox (`wb.context_cost(toolbox)`): what a model reads before it can call
  one tool, flat and in serve's proxy and dynamic modes;
- the last evaluation run in this workbench (`wb.evaluate`, `%workbench evaluate`).

The report and the cost are computed when the tab is shown, when another server is chosen while it
shows, when the toolbox's tools change while it shows, and on Check again; never when the explorer
is built. A change of a server's status alone computes nothing: measuring a toolbox opens it, which
tries its failed servers again, whose new status would otherwise ask for another measure, and so on.
They are computed on the pane's worker thread, one load at a time (checking schemas imports
pydantic-ai the first time, and a provider may count the tokens over the network), and the outcome
is posted to the kernel thread through the explorer's channel: widgets are set there only. An
outcome for a server no longer shown is dropped. The last evaluation is on the workbench already: it
is read on the kernel thread, on show, on refresh and on `sync()`, which the explorer calls every
second while the tab shows.
"""

from __future__ import annotations

import concurrent.futures
import html
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import ipywidgets as w

from workbench_magic.notebook.widgets.pane import Pane, check_server, red_line
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.engine.runtime import Channel
    from workbench_magic.vocabulary.context_cost import ContextCost
    from workbench_magic.vocabulary.evaluations import EvalReport
    from workbench_magic.vocabulary.schema_report import SchemaReport

T = TypeVar("T")
Outcome = tuple[T | None, str | None]
"""What a computation gave, or the one line of why it failed."""

LOADING = "checking the schemas and measuring the context cost…"
NO_EVALUATION = (
    "No evaluation in this workbench yet: <code>wb.evaluate(cases, toolbox={toolbox})</code> or "
    "<code>%workbench evaluate FILE.yaml</code> runs one; the last one shows here."
)


BACKGROUND = "var(--jp-layout-color1, #fff)"
HEADER_HEIGHT = 48
"""Pixels of the schema report's header row (two lines, kept on one each): a tool's name sticks under it."""
MODELS_CSS = f"""
.wb-models-schemas table {{ border-collapse: separate; border-spacing: 0; line-height: 1.4; }}
.wb-models-schemas thead th {{
  position: sticky; top: 0; z-index: 2; height: {HEADER_HEIGHT}px; box-sizing: border-box; white-space: nowrap;
  background: {BACKGROUND};
}}
.wb-models-schemas thead th:first-child {{ left: 0; z-index: 3; }}
.wb-models-schemas tbody td:first-child {{
  position: sticky; left: 0; z-index: 1; vertical-align: top; background: {BACKGROUND};
}}
.wb-models-schemas tbody td:first-child code {{ display: block; position: sticky; top: {HEADER_HEIGHT + 4}px; }}
.wb-models-cost th, .wb-models-cost td {{ padding: 2px 8px; vertical-align: top; }}
.wb-models-cost th {{ text-align: left; }}
.wb-models-cost th:nth-child(2), .wb-models-cost th:nth-child(3), .wb-models-cost th:nth-child(4) {{
  text-align: right;
}}
"""
"""The schema report, scrolled either way, keeps its provider header (sticky top) and its tool
names in view (sticky left, and under the header while their row shows); the context cost's number
headers (bytes, tokens, vs flat) stand right-aligned over their numbers, the others left over their
words."""


def last_evaluation(workbench: Workbench) -> EvalReport | None:
    """The last report `wb.evaluate` made in this workbench (None before the first)."""
    return workbench.last_evaluation


def _attempt(compute: Callable[[], T]) -> Outcome[T]:
    try:
        return compute(), None
    except Exception as exc:
        return None, str(exc) or type(exc).__name__


def _section(title: str, body: str, css: str = "") -> str:
    """`body` under the heading `title`, in a div of CSS class `css`."""
    return f"<div class='{css}'><h4 style='margin:0.8em 0 0.3em'>{html.escape(title)}</h4>{body}</div>"


class ModelsPane(Pane):
    """How models see one server's tools (`show(toolbox, server)`): its schema report per provider,
    its toolbox's context cost, and the last evaluation of the workbench.

    `schemas` (`SchemaReport`) and `cost` (`ContextCost`) are the last loaded (None until loaded, or
    when the load failed: `schemas_error`, `cost_error` say why), `evaluation` the `EvalReport` shown,
    `loading` whether a load is under way. Check again (`check()`) computes them again; Copy as cell
    gives the cell that shows the two tables. The pane computes nothing while its tab is hidden
    (`hide()`). CSS classes: `wb-models` (root), `wb-models-hint`, `-check`, `-copy`, `-status`,
    `-schemas`, `-cost`, `-evaluation`, `-cell`.

    Args:
        workbench: the explorer's workbench.
        channel: the way back to the kernel thread (the explorer's): a load's outcome is posted there.
    """

    noun = "tools as models see them"
    css = MODELS_CSS

    def __init__(self, workbench: Workbench, channel: Channel) -> None:
        self.schemas: SchemaReport | None = None
        self.cost: ContextCost | None = None
        self.evaluation: EvalReport | None = None
        self.schemas_error: str | None = None
        self.cost_error: str | None = None
        self.loading = False
        self._channel = channel
        self._generation = 0
        """Counts the loads started: a load's outcome shows only while it is the latest."""
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._shown_evaluation: tuple[EvalReport | None, str | None] | None = None
        """The report and the toolbox the evaluation section was rendered for."""
        self._measured: Any = None
        """The toolbox's tools when the shown load started (`_tools`): a refresh finding the same computes nothing."""
        super().__init__(workbench, cell_height="5em")
        self.status = w.HTML()
        self.schemas_view = w.HTML(layout=w.Layout(width="100%", max_height="30em", overflow="auto"))
        self.cost_view = w.HTML(layout=w.Layout(width="100%"))
        self.evaluation_view = w.HTML(layout=w.Layout(width="100%"))
        self.check_button = w.Button(
            description="Check again", icon="refresh", tooltip="Check the schemas and measure the context cost again"
        )
        self.check_button.on_click(self._guard(lambda _: self.check()))
        controls = w.HBox(
            [self.check_button, self.copy_button], layout=w.Layout(flex_flow="row wrap", align_items="center")
        )
        self._finish(
            "wb-models",
            "wb-models",
            [self.hint, controls, self.status, self.schemas_view, self.cost_view, self.evaluation_view, self.cell_text],
            {
                "check": self.check_button,
                "status": self.status,
                "schemas": self.schemas_view,
                "cost": self.cost_view,
                "evaluation": self.evaluation_view,
            },
        )

    @property
    def toolbox(self) -> str | None:
        """The chosen server's toolbox (None while nothing is chosen)."""
        return self.target.partition("/")[0] if self.target else None

    # ---- public methods ---------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring the pane up to date: the last evaluation, and the schemas and the cost again if the
        toolbox's tools changed since they were computed (what the explorer asks on a server's change)."""
        if self.closed:
            return
        self.sync()
        if self.target is not None and self._tools() != self._measured:
            self._load()

    def check(self) -> None:
        """Check the schemas and measure the cost again now (on the worker thread), and read the last evaluation."""
        if self.closed:
            return
        self.sync()
        if self.target is not None:
            self._load()

    def hide(self) -> None:
        """The tab is hidden: nothing shows (showing it again computes the tables anew)."""
        self.show(None, None)

    def sync(self) -> None:
        """Show the workbench's last evaluation if it is not the one shown (cheap: no load)."""
        if self.closed:
            return
        report = last_evaluation(self.workbench)
        if (report, self.toolbox) != self._shown_evaluation:
            self.evaluation = report
            self._render_evaluation()

    def copy_as_cell(self) -> str:
        """The cell showing the server's schema report and its toolbox's context cost."""
        if self.target is None or self.toolbox is None:
            raise WorkbenchError("Select a server first")
        return self._show_cell(
            "from workbench_magic import Workbench\n\nwb = Workbench.shared()\n"
            f"display(wb.check_schemas({json.dumps(self.target)}), wb.context_cost({json.dumps(self.toolbox)}))"
        )

    def close(self) -> None:
        """Drop any load under way (its outcome is not shown) and close the widgets."""
        if self.closed:
            return
        self._generation += 1
        super().close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    # ---- hooks --------------------------------------------------------------------------------
    def _on_show(self) -> None:
        self._generation += 1  # an outcome for the server shown before is dropped
        self.schemas = self.cost = None
        self.schemas_error = self.cost_error = None
        self.loading = False
        self.copy_button.disabled = self.target is None
        if self.target is None:
            self._set_hint("")
            self.status.value = ""
            self.schemas_view.value = self.cost_view.value = ""
            self.sync()
            return
        self._set_hint("its schemas per provider, its toolbox's context cost, the last evaluation")
        self.check()

    def _error_pane(self, message: str) -> None:
        self.status.value = red_line(message)

    def _loose_widgets(self) -> list[w.Widget]:
        return [self.refresh_button]  # the base's, not laid out: Check again is this pane's

    # ---- loading ----------------------------------------------------------------------------
    def _load(self) -> None:
        """Start checking the schemas and measuring the cost on the worker thread; the sections show
        "loading" meanwhile, and `_loaded` sets them on this thread."""
        assert self.target is not None and self.toolbox is not None
        self._generation += 1
        generation, target, toolbox = self._generation, self.target, self.toolbox
        self._measured = self._tools()
        self.loading = True
        self.status.value = f"<i style='color:#555'>{html.escape(LOADING)}</i>"
        waiting = "<i style='color:#777'>(loading)</i>"
        self.schemas_view.value = _section(f"Schemas of {target}, per provider", waiting, "wb-models-schemas-body")
        self.cost_view.value = _section(f"Context cost of toolbox '{toolbox}'", waiting, "wb-models-cost-body")
        try:
            check_server(self.workbench, target)  # a failed server lists nothing: say why instead
        except WorkbenchError as exc:
            failed: str | None = str(exc)
        else:
            failed = None
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-models")
        self._executor.submit(self._compute, generation, target, toolbox, failed)

    def _tools(self) -> Any:
        """The toolbox's tools by server, as listed now (None when it is not open)."""
        toolbox = self.toolbox
        if toolbox is None or not self.workbench.is_open(toolbox):
            return None
        return tuple(sorted(self.workbench.toolbox_state(toolbox).tools.items()))

    def _compute(self, generation: int, target: str, toolbox: str, failed: str | None) -> None:
        """On the worker thread: the report and the cost, posted to the kernel thread (skipped when a
        newer load was asked for before this one started)."""
        if generation != self._generation:
            return
        wb = self.workbench
        schemas: Outcome[SchemaReport] = (None, failed) if failed else _attempt(lambda: wb.check_schemas(target))
        cost: Outcome[ContextCost] = _attempt(lambda: wb.context_cost(toolbox))
        self._channel.post(lambda: self._loaded(generation, schemas, cost))

    def _loaded(self, generation: int, schemas: Outcome[SchemaReport], cost: Outcome[ContextCost]) -> None:
        """On the kernel thread: show a load's outcome, if it is still the latest."""
        if self.closed or generation != self._generation:
            return
        self.loading = False
        (self.schemas, self.schemas_error), (self.cost, self.cost_error) = schemas, cost
        self.status.value = ""
        target, toolbox = self.target or "", self.toolbox or ""
        # a table has its own title; a failure is one red line under the section's
        if self.schemas is None:
            body = _section(f"Schemas of {target}, per provider", red_line(self.schemas_error or ""))
        else:
            body = self.schemas._repr_html_()
        self.schemas_view.value = f"<div class='wb-models-schemas-body'>{body}</div>"
        if self.cost is None:
            body = _section(f"Context cost of toolbox '{toolbox}'", red_line(self.cost_error or ""))
        else:
            body = self.cost._repr_html_()
        self.cost_view.value = f"<div class='wb-models-cost-body' style='margin-top:0.8em'>{body}</div>"

    def _render_evaluation(self) -> None:
        report = self.evaluation
        self._shown_evaluation = (report, self.toolbox)
        if report is None:
            toolbox = json.dumps(self.toolbox or "TOOLBOX")
            body = f"<i style='color:#777'>{NO_EVALUATION.format(toolbox=html.escape(toolbox))}</i>"
        else:
            body = report._repr_html_()
            of = (report.toolbox or "").partition("/")[0]
            if self.toolbox and of and of != self.toolbox:
                body = f"<small style='color:#777'>(over toolbox '{html.escape(of)}', not this one)</small>{body}"
        self.evaluation_view.value = _section("Last evaluation", body, "wb-models-evaluation-body")
