"""`wb.export_tests(path, evals=report, replay=cassette)`: an evaluation as pytest tests, offline.

The file replays the evaluation from the cassette recorded while it ran (`with wb.record(path):
wb.evaluate(...)`): a module fixture makes a workbench with no config that replays the cassette (the
model's turns and the tool calls: no model, no key, no server) and runs the same cases the same
number of times; one test per case fails when the case passes less often than its threshold. The
threshold is `min_pass_rate` for every case, or by default each case's own recorded pass rate (the
tests then hold the evaluation as it was, and fail when a case passes less often). The cases are
written as data: a case whose `expect_text` is a predicate, or a pydantic-evals `Case` with
evaluators of its own, cannot be written (a `UsageError` says which). The file is laid out as
`ruff format` lays it out (vocabulary/pysource.py).
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

from workbench_magic.engine.cassette import MODEL, Cassette
from workbench_magic.vocabulary.errors import UsageError, WorkbenchError, raise_alone
from workbench_magic.vocabulary.evaluations import EvalCase, EvalReport
from workbench_magic.vocabulary.pysource import (
    INDENT,
    call,
    literal,
    path_constant,
    path_from_module,
    string,
    unique_test_name,
    width,
)

__all__ = ["export_evals"]

_NEEDS_REPLAY = (
    "export_tests(evals=...) writes tests that replay the evaluation: give replay= the cassette recorded while "
    "it ran (with wb.record(path): report = wb.evaluate(...))"
)


def _not_data(case: EvalCase, what: str) -> str:
    return f"Case {case.name!r} {what}, which a test file cannot hold: give it as data (a substring, tools, arguments)"


def _unreplayed(count: int) -> str:
    runs = "1 run" if count == 1 else f"{count} runs"
    return (
        f"{runs} of the evaluation failed with an error (the model's own, not an expectation): the cassette holds "
        "no turn for it, so the replay does not fail it again"
    )


def export_evals(
    report: EvalReport,
    path: str | os.PathLike[str],
    *,
    replay: str | os.PathLike[str] | None,
    min_pass_rate: float | None = None,
) -> str:
    """Write `report`'s cases as pytest tests at `path` that replay the evaluation from `replay`.

    Args:
        report: the evaluation (`wb.evaluate`, or `EvalReport.load`).
        path: the test file (`.py`).
        replay: the cassette recorded while the evaluation ran.
        min_pass_rate: the pass rate (0 to 1) below which a case's test fails; None: each case's recorded rate.

    Returns:
        The path.

    Raises:
        UsageError: `path` is not a `.py` file, no cassette (or one without model turns), a rate out of
            0..1, a case that is not data.
    """
    target = Path(path)
    if target.suffix != ".py":
        raise_alone(
            UsageError(f"export_tests writes a Python file: give a path ending in .py, not {os.fspath(path)!r}")
        )
    if replay is None:
        raise_alone(UsageError(_NEEDS_REPLAY))
    if min_pass_rate is not None and (
        isinstance(min_pass_rate, bool) or not isinstance(min_pass_rate, int | float) or not 0 <= min_pass_rate <= 1
    ):
        raise_alone(UsageError(f"min_pass_rate is a share of the runs, from 0 to 1, not {min_pass_rate!r}"))
    problem: str | None = None
    try:
        cassette = Cassette.load(replay)
    except WorkbenchError as exc:
        problem = str(exc)
    if problem is None and not any(e.get("kind") == MODEL for e in cassette.interactions):
        problem = f"The cassette {os.fspath(replay)} holds no model turn: {_NEEDS_REPLAY}"
    if problem is not None:
        raise_alone(UsageError(problem))
    for case in report.cases:
        if "text_predicate" in case.expect:
            raise_alone(
                UsageError(_not_data(case, f"expects its text of a predicate ({case.expect['text_predicate']})"))
            )
        if case.expect.get("evaluators"):
            raise_alone(
                UsageError(_not_data(case, f"has evaluators of its own ({', '.join(case.expect['evaluators'])})"))
            )
    errors = sum(1 for case in report.cases for run in case.runs if run.error)
    if errors:
        warnings.warn(_unreplayed(errors), UserWarning, stacklevel=3)
    text = _module(report, path_from_module(Path(replay), target), min_pass_rate)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return os.fspath(path)


# ---- the file ---------------------------------------------------------------------------------
def _case_data(case: EvalCase) -> dict[str, Any]:
    """The case as `wb.evaluate` takes it (a set of tools still a list here: `_case_source` writes it)."""
    data: dict[str, Any] = {"name": case.name, "prompt": case.prompt}
    for key in ("expect_tools", "expect_arguments", "expect_text"):
        if key in case.expect:
            data[key] = case.expect[key]
    return data


def _case_source(case: EvalCase, indent: int) -> str:
    """`{...}` of one case, exploded (one key a line), a set of tools as a set literal."""
    inner = INDENT * (indent + 1)
    lines = []
    for key, value in _case_data(case).items():
        head = f"{string(key)}: "
        source = literal(value, indent=indent + 1, before=width(inner + head), after=1)
        if key == "expect_tools" and value and not case.expect.get("tools_in_order", True):
            source = "{" + source[1:-1] + "}"  # the list's brackets as a set's braces: the same layout
        lines.append(f"{inner}{head}{source},")
    return "{\n" + "\n".join(lines) + "\n" + INDENT * indent + "}"


def _threshold(case: EvalCase, min_pass_rate: float | None) -> float:
    return float(min_pass_rate) if min_pass_rate is not None else case.pass_rate


def _module(report: EvalReport, cassette: str, min_pass_rate: float | None) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rate = f"{report.pass_rate * 100:.0f}%"
    threshold = (
        f"at least {min_pass_rate * 100:g}% of its runs"
        if min_pass_rate is not None
        else "at least as often as it did then"
    )
    doc = (
        f'"""Evaluation tests exported by workbench_magic on {stamp}.\n\n'
        f"The evaluation ran {len(report.cases)} case{'s' if len(report.cases) != 1 else ''} {report.runs} "
        f"time{'s' if report.runs != 1 else ''} each\n"
        f"with the model {report.model}\n"
        f"over the toolbox {report.toolbox}: {rate} of the runs passed.\n"
        f"Each test_NN checks that a case passes {threshold}.\n"
        f"The model's turns and the tool calls replay from the cassette: the tests need\n"
        f"no model, no key, no server and no config.\n"
        f'"""'
    )
    imports = [
        "from __future__ import annotations",
        "",
        "from collections.abc import Iterator",
        "from pathlib import Path",
        "",
        "import pytest",
        "",
        "from workbench_magic import EvalReport, Workbench",
    ]
    cases = "[\n" + "\n".join(f"{INDENT}{_case_source(case, 1)}," for case in report.cases) + "\n]"
    constants = [
        path_constant("CASSETTE", cassette),
        f"TOOLBOX = {literal(report.toolbox, before=len('TOOLBOX = '))}",
        f"MODEL = {literal(report.model, before=len('MODEL = '))}",
        f"RUNS = {report.runs}",
        f"CASES = {cases}",
    ]
    head = doc + "\n\n" + "\n".join(imports) + "\n\n" + "\n".join(constants)
    names: set[str] = set()
    tests = [_case_test(n, case, _threshold(case, min_pass_rate), names) for n, case in enumerate(report.cases, 1)]
    return "\n\n\n".join([head, _fixture(report), *tests]) + "\n"


def _fixture(report: EvalReport) -> str:
    toolbox = report.toolbox.split("/", 1)[0]
    settings = ", confirm_destructive=False" if report.destructive_allowed else ""
    return "\n".join(
        [
            '@pytest.fixture(scope="module")',
            "def report() -> Iterator[EvalReport]:",
            '    """The evaluation, its model turns and tool calls answered from the cassette."""',
            "    # no config: the cassette knows the toolboxes, and the environment does not matter",
            f'    workbench = Workbench({{"toolboxes": {{}}}}, replay=CASSETTE{settings})',
            f"    workbench.open({string(toolbox)})",
            "    yield workbench.evaluate(CASES, toolbox=TOOLBOX, model=MODEL, runs=RUNS)",
            "    workbench.close_all()",
        ]
    )


def _case_test(number: int, case: EvalCase, threshold: float, names: set[str]) -> str:
    name = unique_test_name(f"test_{number:02d}_{case.name}", names)
    return "\n".join(
        [
            f"def {name}(report: EvalReport) -> None:",
            call("case", "report.case", [case.name]),
            f"    assert case.pass_rate >= {threshold!r}, case.summary()",
        ]
    )
