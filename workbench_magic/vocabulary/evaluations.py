"""What `wb.evaluate` returns: `EvalReport`, cases run several times each, and how often each passed.

A report holds one `EvalCase` per case (its prompt, what it expected, its `EvalRun`s) and renders a
table: per case its pass rate over the runs, the tools called, tokens and time per run, and the
failing runs with their reason. It saves as JSON (`save`, `EvalReport.load`) and becomes a
DataFrame (`to_pandas`, one row per run). Plain data: no framework import; pandas is imported by
`to_pandas()` only. The runs themselves are api/judging/evaluations.py's.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import UsageError, import_pandas, raise_alone
from workbench_magic.vocabulary.rendering import esc, first_line

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvalCase", "EvalReport", "EvalRun"]

FORMAT = "workbench-magic/evaluation@1"
"""The `format` of a saved report."""

_REASON = 160
"""Characters of a failing run's reason a table shows."""
_FAILURES_SHOWN = 5
"""Failing runs a case's row lists (the rest are counted)."""


def _percent(rate: float) -> str:
    return f"{rate * 100:.0f}%"


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.0f} ms"


@dataclass(frozen=True)
class EvalRun:
    """One run of a case: what the model did, and whether it passed.

    Attributes:
        run: the run's number, from 1.
        passed: every expectation held (and the run did not fail).
        reason: why it did not pass (each failed expectation, `; `-joined; or what the run raised), else None.
        text: what the model answered.
        calls: the tool calls the model made, in order: `(identifier, arguments)` each.
        input_tokens: tokens sent to the model in the run.
        output_tokens: tokens the model wrote.
        requests: model requests made.
        seconds: how long the run took.
        error: True when the run itself failed (the model's error, a cassette that lacks the turn), not an
            expectation.
    """

    run: int
    passed: bool
    reason: str | None = None
    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    seconds: float = 0.0
    error: bool = False

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools called, in order (a tool called twice is there twice)."""
        return tuple(identifier for identifier, _ in self.calls)

    def to_json(self) -> dict[str, Any]:
        """The run as a JSON object (what `EvalReport.save` writes)."""
        return {
            "run": self.run,
            "passed": self.passed,
            "reason": self.reason,
            "text": self.text,
            "calls": [{"tool": tool, "arguments": arguments} for tool, arguments in self.calls],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "requests": self.requests,
            "seconds": self.seconds,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvalRun:
        """The run `to_json` wrote."""
        return cls(
            run=int(data["run"]),
            passed=bool(data["passed"]),
            reason=data.get("reason"),
            text=str(data.get("text") or ""),
            calls=tuple((str(c["tool"]), dict(c.get("arguments") or {})) for c in data.get("calls", ())),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            requests=int(data.get("requests", 0)),
            seconds=float(data.get("seconds", 0.0)),
            error=bool(data.get("error", False)),
        )


@dataclass(frozen=True)
class EvalCase:
    """A case of an evaluation and its runs.

    Attributes:
        name: the case's name (given, else its prompt).
        prompt: what the model was asked.
        expect: what the case expected, as data: `expect_tools` (a list) with `tools_in_order`,
            `expect_arguments`, `expect_text` (a substring), `text_predicate` (the name of a predicate,
            which is not saved), `evaluators` (the names of a pydantic-evals `Case`'s own evaluators).
        runs: its runs, in order.
    """

    name: str
    prompt: str
    expect: dict[str, Any] = field(default_factory=dict)
    runs: tuple[EvalRun, ...] = ()

    @property
    def passed(self) -> int:
        """How many runs passed."""
        return sum(1 for run in self.runs if run.passed)

    @property
    def pass_rate(self) -> float:
        """The share of runs that passed (0.0 to 1.0; 0.0 when there were none)."""
        return self.passed / len(self.runs) if self.runs else 0.0

    @property
    def failures(self) -> tuple[EvalRun, ...]:
        """The runs that did not pass."""
        return tuple(run for run in self.runs if not run.passed)

    def tool_runs(self) -> dict[str, int]:
        """`{tool: how many runs called it}`, the most called first."""
        counts: Counter[str] = Counter()
        for run in self.runs:
            counts.update(set(run.tools))
        return dict(counts.most_common())

    def summary(self) -> str:
        """The case in one line: its pass rate, then its failing runs with their reason."""
        line = f"{self.name}: {self.passed} of {len(self.runs)} runs passed ({_percent(self.pass_rate)})"
        failures = [f"run {run.run}: {run.reason or 'failed'}" for run in self.failures]
        return line + ("; " + "; ".join(failures) if failures else "")

    def _cells(self) -> dict[str, str]:
        n = len(self.runs) or 1
        tools = ", ".join(f"{tool} ({count}/{len(self.runs)})" for tool, count in self.tool_runs().items())
        tokens_in = sum(run.input_tokens for run in self.runs) / n
        tokens_out = sum(run.output_tokens for run in self.runs) / n
        failures = self.failures
        failing = [
            f"run {run.run}: {first_line(run.reason or 'failed', _REASON)}" for run in failures[:_FAILURES_SHOWN]
        ]
        if len(failures) > _FAILURES_SHOWN:
            failing.append(f"… {len(failures) - _FAILURES_SHOWN} more")
        return {
            "case": self.name,
            "passed": f"{_percent(self.pass_rate)} ({self.passed}/{len(self.runs)})",
            "tools called": tools or "none",
            "tokens per run": f"{tokens_in + tokens_out:,.0f} ({tokens_in:,.0f} in + {tokens_out:,.0f} out)",
            "time per run": _seconds(sum(run.seconds for run in self.runs) / n),
            "failing runs": "\n".join(failing),
        }

    def to_json(self) -> dict[str, Any]:
        """The case as a JSON object (what `EvalReport.save` writes)."""
        return {
            "name": self.name,
            "prompt": self.prompt,
            "expect": self.expect,
            "runs": [run.to_json() for run in self.runs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvalCase:
        """The case `to_json` wrote."""
        return cls(
            name=str(data["name"]),
            prompt=str(data["prompt"]),
            expect=dict(data.get("expect") or {}),
            runs=tuple(EvalRun.from_json(run) for run in data.get("runs", ())),
        )


_COLUMNS = ("case", "passed", "tools called", "tokens per run", "time per run", "failing runs")


@dataclass(frozen=True)
class EvalReport:
    """What `wb.evaluate` found: each case run `runs` times, and how often it passed.

    It shows as a table, one row per case: its pass rate over the runs, the tools called (in how
    many runs each), tokens and time per run, and the failing runs with their reason.

    Attributes:
        cases: the cases, in the order given, each with its runs.
        toolbox: the toolbox (or `toolbox/server`) whose tools the model was offered.
        model: the model's name.
        runs: the runs per case.
        destructive_allowed: tools marked `destructiveHint` ran (`confirm_destructive` was off); else they were
            refused, nobody being there to ask.
        evaluation: pydantic-evals' own `EvaluationReport` of the runs (`.print()`); None in a loaded report.

    Example:
        ```python
        report = wb.evaluate([{"prompt": "Heaviest penguin?", "expect_tools": ["demo/datasets/query"]}], runs=5)
        report.pass_rate, report.cases[0].failures
        report.save("evals.json")
        ```
    """

    cases: tuple[EvalCase, ...]
    toolbox: str = ""
    model: str = ""
    runs: int = 0
    destructive_allowed: bool = False
    evaluation: Any = field(default=None, compare=False, repr=False)

    @property
    def passed(self) -> int:
        """How many runs passed, over all cases."""
        return sum(case.passed for case in self.cases)

    @property
    def total(self) -> int:
        """How many runs there were, over all cases."""
        return sum(len(case.runs) for case in self.cases)

    @property
    def pass_rate(self) -> float:
        """The share of all runs that passed (0.0 to 1.0; 0.0 when there were none)."""
        return self.passed / self.total if self.total else 0.0

    def case(self, name: str) -> EvalCase:
        """The case named `name`.

        Args:
            name: the case's name.

        Returns:
            The case, with its runs.

        Raises:
            UsageError: no case has that name (the message lists them).
        """
        for case in self.cases:
            if case.name == name:
                return case
        names = ", ".join(repr(c.name) for c in self.cases)
        raise_alone(UsageError(f"No case {name!r} in this evaluation: {names}"))

    def _summary(self) -> str:
        cases = f"{len(self.cases)} case{'s' if len(self.cases) != 1 else ''}"
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''} each"
        where = f" over {self.toolbox}" if self.toolbox else ""
        who = f" with {self.model}" if self.model else ""
        return (
            f"Evaluation of {cases}{where}{who}, {runs}: "
            f"{_percent(self.pass_rate)} of the runs passed ({self.passed}/{self.total})"
        )

    # ---- saved as JSON ----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object (pydantic-evals' report is not in it)."""
        return {
            "format": FORMAT,
            "toolbox": self.toolbox,
            "model": self.model,
            "runs": self.runs,
            "destructive_allowed": self.destructive_allowed,
            "pass_rate": self.pass_rate,
            "cases": [case.to_json() for case in self.cases],
        }

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the report as JSON to `path` (UTF-8); `EvalReport.load(path)` reads it back.

        Args:
            path: the file to write.

        Returns:
            The path.
        """
        text = json.dumps(self.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"
        Path(path).write_text(text, encoding="utf-8", newline="\n")
        return os.fspath(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvalReport:
        """Read a report `save()` wrote.

        Args:
            path: the file to read.

        Returns:
            The report (its `evaluation` is None; a predicate of `expect_text` is known by name only).

        Raises:
            UsageError: the file cannot be read or is not a saved report (the message names the path).
        """
        problem = None
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            problem = f"Cannot read evaluation report {os.fspath(path)}: {getattr(exc, 'strerror', None) or exc}"
        except json.JSONDecodeError as exc:
            problem = f"{os.fspath(path)} is not an evaluation report: invalid JSON ({exc.msg} at line {exc.lineno})"
        if problem is None and (not isinstance(data, dict) or data.get("format") != FORMAT):
            problem = f"{os.fspath(path)} is not an evaluation report (EvalReport.save writes one)"
        if problem is None:
            try:
                return cls(
                    cases=tuple(EvalCase.from_json(case) for case in data["cases"]),
                    toolbox=str(data.get("toolbox") or ""),
                    model=str(data.get("model") or ""),
                    runs=int(data.get("runs") or 0),
                    destructive_allowed=bool(data.get("destructive_allowed", False)),
                )
            except (KeyError, TypeError, ValueError) as exc:
                problem = f"{os.fspath(path)} is not an evaluation report: {type(exc).__name__}: {exc}"
        raise_alone(UsageError(problem))

    # ---- pandas ---------------------------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """One row per run, the cases in order.

        Its columns: `case`, `run`, `passed`, `reason`, `tools` (in order, `, `-joined), `text`,
        `input_tokens`, `output_tokens`, `requests`, `seconds`. Needs the `pandas` extra.

        Returns:
            The table.

        Raises:
            MissingExtraError: pandas is not installed.
        """
        pd = import_pandas()
        columns = [
            "case",
            "run",
            "passed",
            "reason",
            "tools",
            "text",
            "input_tokens",
            "output_tokens",
            "requests",
            "seconds",
        ]
        records = [
            {
                "case": case.name,
                "run": run.run,
                "passed": run.passed,
                "reason": run.reason,
                "tools": ", ".join(run.tools),
                "text": run.text,
                "input_tokens": run.input_tokens,
                "output_tokens": run.output_tokens,
                "requests": run.requests,
                "seconds": run.seconds,
            }
            for case in self.cases
            for run in case.runs
        ]
        return pd.DataFrame.from_records(records, columns=columns)

    # ---- reprs ------------------------------------------------------------------------------
    def __repr__(self) -> str:
        rows = [case._cells() for case in self.cases]
        widths = {c: max([len(c), *(len(line) for r in rows for line in r[c].splitlines() or [""])]) for c in _COLUMNS}
        lines = [self._summary(), "  ".join(c.ljust(widths[c]) for c in _COLUMNS).rstrip()]
        lines.append("  ".join("-" * widths[c] for c in _COLUMNS))
        for row in rows:
            cells = {c: row[c].splitlines() or [""] for c in _COLUMNS}
            height = max(len(v) for v in cells.values())
            for i in range(height):
                line = "  ".join((cells[c][i] if i < len(cells[c]) else "").ljust(widths[c]) for c in _COLUMNS)
                lines.append(line.rstrip())
        return "\n".join(lines)

    def __str__(self) -> str:
        return repr(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if not cycle else "EvalReport(...)")

    def _repr_html_(self) -> str:
        head = "".join(f"<th style='text-align:left'>{esc(c)}</th>" for c in _COLUMNS)
        body = []
        for case in self.cases:
            cells = case._cells()
            color = "#1b5e20" if case.passed == len(case.runs) else "#b00020"
            tds = []
            for column in _COLUMNS:
                value = "<br>".join(esc(line) for line in cells[column].splitlines())
                style = f"color:{color};" if column == "passed" else ""
                title = f" title='{esc(case.prompt)}'" if column == "case" else ""
                tds.append(f"<td{title} style='{style}text-align:left;vertical-align:top'>{value}</td>")
            body.append(f"<tr>{''.join(tds)}</tr>")
        return (
            f"<div class='wb-eval-report'><b>{esc(self._summary())}</b>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        )
