"""The runs of `wb.evaluate` over pydantic-evals (imported on first use: `import workbench_magic` imports
no framework).

`Evaluation` builds a pydantic-evals `Dataset` of the cases, each expectation one of its evaluators
(`ExpectTools`, `ExpectArguments`, `ExpectText`), and runs it on the workbench loop with
`repeat=runs`, one run at a time. The task of a run is a chat turn (chat_agent.py's `Turn`, in a
fresh `Conversation`); its output is the model's answer, and the whole `ChatTurn` is the evaluators'
`ctx.attributes["turn"]`. A run's `CaseLifecycle` keeps the turn beside pydantic-evals' result, so a
run that failed still shows the tools it called. A run whose turn stopped at the tool-retry limit
(`ChatTurn.stopped`: the model's calls kept failing on bad arguments past `Workbench.tool_retries`)
is a failed run with that reason, not an error. The report becomes an `EvalReport`.
"""

from __future__ import annotations

import contextvars
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext
from pydantic_evals.lifecycle import CaseLifecycle
from pydantic_evals.reporting import EvaluationReport, ReportCase, ReportCaseFailure

from workbench_magic.api.models.chat_agent import Conversation, Turn
from workbench_magic.api.toolsets.pydantic_ai import WorkbenchToolset
from workbench_magic.engine.model_exchanges import model_label
from workbench_magic.engine.runtime import QueueChannel
from workbench_magic.vocabulary.chat import ChatToolCall, ChatTurn
from workbench_magic.vocabulary.evaluations import EvalCase, EvalReport, EvalRun
from workbench_magic.vocabulary.rendering import json_dump

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from pydantic_ai.toolsets import AbstractToolset

    from workbench_magic.api.context import Context
    from workbench_magic.api.judging.cases import CaseSpec
    from workbench_magic.api.toolsets.framework_tools import BeforeCall, Caller, OnCall
    from workbench_magic.api.toolsets.making import Toolsets

__all__ = ["Evaluation", "ExpectArguments", "ExpectText", "ExpectTools"]

_ANSWER_SHOWN = 80
"""Characters of the answer a failed `expect_text` quotes."""


def _turn(ctx: EvaluatorContext[Any, Any, Any]) -> ChatTurn:
    turn = ctx.attributes.get("turn")
    return turn if isinstance(turn, ChatTurn) else ChatTurn(prompt="", text=str(ctx.output or ""))


def _called(turn: ChatTurn) -> list[str]:
    return [str(call.identifier) for call in turn.tool_calls]


def _listed(tools: list[str] | tuple[str, ...]) -> str:
    return ", ".join(tools) if tools else "none"


def _quoted(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _ANSWER_SHOWN else flat[: _ANSWER_SHOWN - 1] + "…")


# ---- the expectations, as pydantic-evals evaluators -------------------------------------------
@dataclass(repr=False)
class ExpectTools(Evaluator[str, str, Any]):
    """The model called these tools: in this order (`in_order`; other calls may come between), or in any
    order; none at all when `tools` is empty."""

    tools: tuple[str, ...] = ()
    in_order: bool = True

    def get_default_evaluation_name(self) -> str:
        return "expect_tools"

    def evaluate(self, ctx: EvaluatorContext[str, str, Any]) -> EvaluationReason:
        called = _called(_turn(ctx))
        if not self.tools:
            return EvaluationReason(
                not called, None if not called else f"expected no tool call; called {_listed(called)}"
            )
        if self.in_order:
            remaining = iter(called)
            ok = all(any(tool == c for c in remaining) for tool in self.tools)
            expected = " then ".join(self.tools) if len(self.tools) > 1 else self.tools[0]
            return EvaluationReason(ok, None if ok else f"expected {expected}; called {_listed(called)}")
        missing = [tool for tool in self.tools if tool not in called]
        reason = f"did not call {_listed(missing)}; called {_listed(called)}" if missing else None
        return EvaluationReason(not missing, reason)


def _subset(expected: Any, actual: Any) -> bool:
    """`expected` is in `actual`: equal, or (for dicts) each key's value a subset of `actual`'s."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return all(key in actual and _subset(value, actual[key]) for key, value in expected.items())
    return bool(expected == actual)


@dataclass(repr=False)
class ExpectArguments(Evaluator[str, str, Any]):
    """Per tool, some call of it had these arguments (a subset: other arguments may be there too)."""

    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)

    def get_default_evaluation_name(self) -> str:
        return "expect_arguments"

    def evaluate(self, ctx: EvaluatorContext[str, str, Any]) -> EvaluationReason:
        turn = _turn(ctx)
        problems = []
        for tool, expected in self.arguments.items():
            calls = [call.arguments for call in turn.tool_calls if str(call.identifier) == tool]
            if not calls:
                problems.append(f"{tool} was not called")
            elif not any(_subset(expected, arguments) for arguments in calls):
                given = " or ".join(json_dump(arguments, None) for arguments in calls)
                problems.append(f"{tool} was called with {given}, not {json_dump(expected, None)}")
        return EvaluationReason(not problems, "; ".join(problems) or None)


@dataclass(repr=False)
class ExpectText(Evaluator[str, str, Any]):
    """The model's answer holds `text`, or `predicate(answer)` is true."""

    text: str | None = None
    predicate: Callable[[str], Any] | None = None

    def get_default_evaluation_name(self) -> str:
        return "expect_text"

    def evaluate(self, ctx: EvaluatorContext[str, str, Any]) -> EvaluationReason:
        answer = _turn(ctx).text
        if self.predicate is not None:
            ok = bool(self.predicate(answer))
            name = getattr(self.predicate, "__name__", "the predicate")
            return EvaluationReason(ok, None if ok else f"{name}(answer) is false; the answer: {_quoted(answer)}")
        ok = self.text is None or self.text in answer
        return EvaluationReason(ok, None if ok else f"the answer lacks {self.text!r}: {_quoted(answer)}")


# ---- a run ------------------------------------------------------------------------------------
@dataclass
class _Slot:
    """What a run keeps beside pydantic-evals' result: the turn (the calls of a run that failed) and its answer."""

    turn: Turn | None = None
    answer: ChatTurn | None = None
    seconds: float = 0.0


_slot: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("evaluation_run", default=None)
"""The run in flight in this task (its lifecycle sets it; the task fills it)."""


class _RunLifecycle(CaseLifecycle[str, str, Any]):
    """One run of a case: a slot for its turn, the `ChatTurn` handed to the evaluators, the slot kept by
    the name pydantic-evals gives the run."""

    def __init__(self, case: Case[str, str, Any], slots: dict[str, _Slot]) -> None:
        super().__init__(case)
        self._slots = slots
        self._own = _Slot()

    async def setup(self) -> None:
        _slot.set(self._own)

    async def prepare_context(self, ctx: EvaluatorContext[str, str, Any]) -> EvaluatorContext[str, str, Any]:
        if self._own.answer is not None:
            ctx.attributes["turn"] = self._own.answer
        return ctx

    async def teardown(self, result: ReportCase[str, str, Any] | ReportCaseFailure[str, str, Any] | None) -> None:
        if result is not None:
            self._slots[result.name] = self._own


def _run_number(name: str, source: str | None) -> int:
    """The run's number in pydantic-evals' name of a repeated case (`NAME [k/n]`); 1 when not repeated."""
    if source is None:
        return 1
    found = re.fullmatch(r" \[(\d+)/\d+\]", name[len(source) :])
    return int(found.group(1)) if found else 1


def _calls(parts: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    return tuple((str(p.identifier), dict(p.arguments)) for p in parts if isinstance(p, ChatToolCall))


def _raised(message: str) -> str:
    """pydantic-evals' `Class: message` of what a run raised, as the message alone."""
    kind, _, rest = message.partition(": ")
    return rest if rest and kind.isidentifier() else message


class Evaluation:
    """The evaluation `wb.evaluate` runs: made on the caller's thread, `run` waits for it.

    Args:
        context: the workbench's shared context (its loop).
        toolsets: the workbench's toolsets (the selection of `target`).
        caller: what the runs' tools are called through (the workbench's `acall`).
        specs: the cases.
        target: the toolbox (or `toolbox/server`) offered.
        model: the model, as `resolve_model` gave it.
        runs: runs per case.
        confirm: refuse tools marked destructive (nobody can be asked); False lets them run.
        tool_retries: how many times in a row the model may call a tool again after bad arguments.
    """

    def __init__(
        self,
        context: Context,
        toolsets: Toolsets,
        caller: Caller,
        specs: list[CaseSpec],
        target: str,
        model: Model,
        *,
        runs: int,
        confirm: bool,
        tool_retries: int = 3,
    ) -> None:
        self._context = context
        self._tool_retries = tool_retries
        self._specs = specs
        self._target = target
        self._model = model
        self._runs = runs
        self._confirm = confirm
        self._slots: dict[str, _Slot] = {}
        # one selection made before the runs: they start on the loop, where `Toolsets.toolset` cannot run
        selection = toolsets.selection(target, True)  # opens the toolbox, on this thread

        def toolset(before_call: BeforeCall | None = None, on_call: OnCall | None = None) -> AbstractToolset[Any]:
            return WorkbenchToolset(caller, selection, before_call=before_call, on_call=on_call)

        self._toolset = toolset
        # nobody to ask: a destructive tool is refused, a server's question declined (or its handler answers)
        self._channel = QueueChannel()

    def run(self) -> EvalReport:
        """Run every case `runs` times (Ctrl-C stops the evaluation); the report."""
        dataset = Dataset[str, str, Any](name=f"wb.evaluate {self._target}", cases=[self._case(s) for s in self._specs])
        report = self._context.run(self._evaluate(dataset), self._channel)
        return self._report(report)

    def _case(self, spec: CaseSpec) -> Case[str, str, Any]:
        evaluators: list[Evaluator[str, str, Any]] = []
        if spec.expect_tools is not None:
            evaluators.append(ExpectTools(spec.expect_tools, spec.tools_in_order))
        if spec.expect_arguments is not None:
            evaluators.append(ExpectArguments(spec.expect_arguments))
        if spec.expect_text is not None or spec.text_predicate is not None:
            evaluators.append(ExpectText(spec.expect_text, spec.text_predicate))
        given = spec.case
        return Case(
            name=spec.name,
            inputs=spec.prompt,
            metadata=given.metadata if given is not None else None,
            expected_output=given.expected_output if given is not None else None,
            evaluators=[*evaluators, *(given.evaluators if given is not None else ())],
        )

    async def _evaluate(self, dataset: Dataset[str, str, Any]) -> EvaluationReport[str, str, Any]:
        # one run at a time, in order: a replay answers each run with the turns recorded for it
        return await dataset.evaluate(
            self._task,
            task_name="chat",
            max_concurrency=1,
            progress=False,
            repeat=self._runs,
            lifecycle=lambda case: _RunLifecycle(case, self._slots),
        )

    async def _task(self, prompt: str) -> str:
        """One run: a chat turn in a conversation of its own; its output is the model's answer."""
        slot = _slot.get() or _Slot()
        started = time.perf_counter()
        turn = Turn(
            self._toolset,
            prompt,
            self._target,
            self._model,
            self._channel,
            view=None,
            confirm=self._confirm,
            tool_retries=self._tool_retries,
        )
        slot.turn = turn
        try:
            answer = await turn.run(Conversation())
        finally:
            slot.seconds = time.perf_counter() - started
        slot.answer = answer
        return answer.text

    # ---- the report ------------------------------------------------------------------------------
    def _report(self, report: EvaluationReport[str, str, Any]) -> EvalReport:
        runs: dict[str, list[EvalRun]] = {spec.name: [] for spec in self._specs}
        items: list[ReportCase[str, str, Any] | ReportCaseFailure[str, str, Any]] = [*report.cases, *report.failures]
        for item in items:
            source = item.source_case_name or item.name
            number = _run_number(item.name, item.source_case_name)
            slot = self._slots.get(item.name) or _Slot()
            run = self._ran(item, number, slot) if isinstance(item, ReportCase) else self._failed(item, number, slot)
            runs.setdefault(source, []).append(run)
        cases = tuple(
            EvalCase(
                name=spec.name,
                prompt=spec.prompt,
                expect=spec.expect(),
                runs=tuple(sorted(runs[spec.name], key=lambda r: r.run)),
            )
            for spec in self._specs
        )
        return EvalReport(
            cases,
            toolbox=self._target,
            model=model_label(self._model),
            runs=self._runs,
            destructive_allowed=not self._confirm,
            evaluation=report,
        )

    def _ran(self, item: ReportCase[str, str, Any], number: int, slot: _Slot) -> EvalRun:
        answer = slot.answer or ChatTurn(prompt="", text=str(item.output or ""))
        reasons = [
            f"{name}: {result.reason}" if result.reason else f"{name} failed"
            for name, result in item.assertions.items()
            if not result.value
        ]
        reasons += [f"{failure.name} raised {failure.error_message}" for failure in item.evaluator_failures]
        if answer.stopped is not None:  # the turn ended at the tool-retry limit: the run failed, whatever held
            reasons.insert(0, answer.stopped)
        return EvalRun(
            run=number,
            passed=not reasons,
            reason="; ".join(reasons) or None,
            text=answer.text,
            calls=_calls(answer.tool_calls),
            input_tokens=answer.usage.input_tokens,
            output_tokens=answer.usage.output_tokens,
            requests=answer.usage.requests,
            seconds=slot.seconds or item.task_duration,
        )

    def _failed(self, item: ReportCaseFailure[str, str, Any], number: int, slot: _Slot) -> EvalRun:
        # the calls made before the run failed: the turn's parts so far (it returned no ChatTurn)
        parts = getattr(slot.turn, "_parts", ()) if slot.turn is not None else ()
        return EvalRun(
            run=number,
            passed=False,
            reason=_raised(item.error_message),
            calls=_calls(parts),
            seconds=slot.seconds,
            error=True,
        )
