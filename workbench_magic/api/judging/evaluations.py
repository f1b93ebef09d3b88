"""`wb.evaluate`: does a model call the right tools, with the right arguments, and how often?

Each case runs `runs` times with the chat of `wb.chat` (chat_agent.py's `Turn`: the same agent run,
the same toolset, the model as `resolve_model` gives it, so its turns are recorded, replayed and
traced), each run in a fresh conversation of its own: the workbench's chat conversation is neither
read nor changed. pydantic-evals runs the cases (`Dataset.evaluate` with `repeat=runs`) and checks
them: each expectation is a pydantic-evals `Evaluator` (evaluation_run.py, imported on first use).

A case is a pydantic-evals `Case` or a dict (`CaseSpec` is what either becomes):

- `prompt` (a `Case`'s `inputs`: the prompt, or a dict holding `prompt`);
- `expect_tools`: tool identifiers; a list is an order (other calls may come before, between and
  after), a set is any order; an empty one means no tool is called;
- `expect_arguments`: `{identifier: {argument: value}}`, a subset each: some call of the tool had these
  arguments (a dict value is itself a subset);
- `expect_text`: a substring of the model's answer, or a predicate called with the answer;
- `name` (optional: the prompt names the case).

A `Case` holds them in its `metadata` (a dict); its own evaluators run too, on the model's answer
(`ctx.output`; `ctx.attributes["turn"]` is the whole `ChatTurn`).

Runs go one at a time, in order: a recorded evaluation (`wb.record`) then replays run for run, the
model's turns of identical prompts taken in the order they were recorded. Nobody is asked during an
evaluation: a tool marked `destructiveHint` is refused (the model is told, as when a person says no)
unless `wb.confirm_destructive` is off, and a server's question goes to `wb.elicitation_handler`
when one is set, else it is declined.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from workbench_magic.api.extras import require_extra
from workbench_magic.api.judging.cases import EvalFile, case_specs, check_expected_tools, read_cases
from workbench_magic.vocabulary.errors import UsageError, raise_alone
from workbench_magic.vocabulary.evaluations import EvalCase, EvalReport, EvalRun

if TYPE_CHECKING:
    from workbench_magic.api.context import Context
    from workbench_magic.api.models.chat import Chat
    from workbench_magic.api.toolsets.framework_tools import Caller
    from workbench_magic.api.toolsets.making import Toolsets

__all__ = ["EvalCase", "EvalFile", "EvalReport", "EvalRun", "Evaluations", "read_cases"]


# ---- the workbench's part ---------------------------------------------------------------------
class Evaluations:
    """A workbench's evaluations of a model over a toolbox: `evaluate`, `last_evaluation`.

    Args:
        context: the workbench's shared context.
        toolsets: the workbench's toolsets (the runs' tools, and the check of the expected ones).
        chat: the workbench's chat (the toolbox a chat uses when none is named; what its turns read).
        caller: what the runs' tools are called through (the workbench's `acall`).
    """

    def __init__(self, context: Context, toolsets: Toolsets, chat: Chat, caller: Caller) -> None:
        self._context = context
        self._toolsets = toolsets
        self._chat = chat
        self._caller = caller
        self._last_evaluation: EvalReport | None = None

    @property
    def last_evaluation(self) -> EvalReport | None:
        """The report of the last `evaluate` in this workbench (None before the first).

        The explorer's Models tab shows it."""
        return self._last_evaluation

    def evaluate(
        self,
        cases: Iterable[Any],
        *,
        toolbox: str | None = None,
        model: Any = None,
        runs: int = 3,
    ) -> EvalReport:
        """Run each case `runs` times with a model over a toolbox; how often each passed, and why not.

        A case is a dict (`prompt`; `expect_tools`: identifiers, a list in order or a set in any order;
        `expect_arguments`: `{identifier: {argument: value}}`, a subset per tool; `expect_text`: a
        substring of the answer or a predicate of it; `name`) or a pydantic-evals `Case` (its `inputs` the
        prompt, those keys in its `metadata`, its own evaluators run on the answer). pydantic-evals runs
        them. Each run is a chat turn as `wb.chat` makes it, in a conversation of its own (the
        workbench's chat is untouched), the runs one at a time: `wb.record(path)` records them and a
        replay answers them run for run. Nobody is asked: a tool marked `destructiveHint` is refused
        (the model is told) unless `confirm_destructive` is off; a server's question goes to
        `elicitation_handler`, else it is declined. A call with bad arguments is told to the model, which
        may call again `tool_retries` times in a row; a run past that fails with that reason. The runs'
        tool calls are in `history`.

        Args:
            cases: the cases, in order.
            toolbox: the toolbox (or `toolbox/server`) whose tools the model may call; None: the toolbox
                opened last.
            model: a pydantic-ai `Model` or a `"provider:model"` name; None: `chat_model`.
            runs: how many times each case runs.

        Returns:
            The report: a table per case (pass rate, tools called, tokens and time, failing runs with their
            reason), `.pass_rate`, `.cases`, `.to_pandas()`, `.save(path)`.

        Raises:
            UsageError: a case is not one (one line naming it), `runs` is below 1, no toolbox is open and none
                was named, no model is set, a case expects a tool outside the toolbox.
            MissingExtraError: pydantic-ai or pydantic-evals is not installed.
            NotFoundError: the toolbox named does not exist, or a tool a case expects (`expect_tools`,
                `expect_arguments`) does not: checked before any case runs.

        Example:
            ```python
            report = wb.evaluate(
                [
                    {"prompt": "Which penguin species is heaviest?", "expect_tools": ["demo/datasets/query"],
                     "expect_text": "Gentoo"},
                    {"prompt": "What datasets are there?", "expect_tools": {"demo/datasets/list_datasets"}},
                ],
                toolbox="demo", model="openai:gpt-5-mini", runs=5,
            )
            report.pass_rate, report.cases[0].failures
            ```
        """
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise_alone(UsageError(f"runs is a whole number from 1, not {runs!r}"))
        specs = case_specs(cases)
        require_extra("pydantic_ai", extra="pydantic-ai", feature="wb.evaluate")
        require_extra("pydantic_evals", extra="pydantic-ai", feature="wb.evaluate")
        from workbench_magic.api.judging.run import Evaluation

        target = toolbox if toolbox is not None else self._chat.default_toolbox()
        settings = self._chat.settings
        resolved = settings.resolve(model)
        # an unknown tool would fail every run of its case: said once, before any runs
        check_expected_tools(specs, target, lambda tool: self._toolsets.selection([tool], True))
        evaluation = Evaluation(
            self._context,
            self._toolsets,
            self._caller,
            specs,
            target,
            resolved,
            runs=runs,
            confirm=settings.confirm_destructive(),
            tool_retries=settings.tool_retries(),
        )
        report = evaluation.run()
        self._last_evaluation = report  # what the explorer shows as the last evaluation
        return report
