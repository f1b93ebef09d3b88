"""`wb.evaluate` (api/evaluation*.py): cases run several times each with a model over a toolbox, over
pydantic-evals; the report (vocabulary/evaluations.py), saved and loaded; `%workbench evaluate FILE`;
the evaluation exported as pytest tests that replay it offline.

The model is a pydantic-ai `FunctionModel` playing a plan per prompt (the n-th run of a prompt may go
wrong); the tools are the demo toolbox's, in-process. No key, no network.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, ROOT, python_command, toolbox
from IPython.core.interactiveshell import InteractiveShell
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case
from pydantic_evals.evaluators import Contains

from workbench_magic import EvalReport, ServerNotFoundError, ToolNotFoundError, UsageError, Workbench
from workbench_magic.api.judging.evaluations import read_cases

DEMO = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}
QUERY, LIST, DESCRIBE = "demo/datasets/query", "demo/datasets/list_datasets", "demo/datasets/describe_dataset"

HEAVIEST = "Which penguin species is heaviest?"
DATASETS = "What datasets are there?"
DESCRIBE_PENGUINS = "Describe the penguins dataset."

Step = list[tuple[str, dict[str, Any]]] | str
"""A model response: tool calls (identifier, arguments), or the answer's text."""


def _name(identifier: str) -> str:
    return identifier.replace("/", "__")


class Plans:
    """A `FunctionModel` playing, for the n-th run of a prompt, the steps `plan(prompt, n)` gives; then
    it answers what its last tool call returned (or was told instead)."""

    def __init__(self, plan: Callable[[str, int], list[Step]]) -> None:
        self.plan = plan
        self.runs: Counter[str] = Counter()
        self.first_requests: list[list[ModelMessage]] = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        prompt = next(p.content for p in first.parts if isinstance(p, UserPromptPart))
        assert isinstance(prompt, str)
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step == 0:
            self.runs[prompt] += 1
            self.first_requests.append(list(messages))
        steps = self.plan(prompt, self.runs[prompt])
        if step < len(steps) and not isinstance(steps[step], str):
            calls = steps[step]
            assert not isinstance(calls, str)
            return ModelResponse(
                parts=[
                    ToolCallPart(_name(tool), json.dumps(arguments), tool_call_id=f"r{self.runs[prompt]}.{step}.{i}")
                    for i, (tool, arguments) in enumerate(calls)
                ]
            )
        if step < len(steps):
            return ModelResponse(parts=[TextPart(str(steps[step]))])
        told = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        return ModelResponse(parts=[TextPart(f"Done: {told[-1].content if told else ''}")])

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, model_name="plans")


def three_cases(prompt: str, run: int) -> list[Step]:
    """Heaviest: the query, but describe_dataset on its third run; datasets: list them; describe: describe."""
    if prompt == HEAVIEST:
        if run == 3:
            return [[(DESCRIBE, {"name": "penguins"})], "Probably the Adelie."]
        return [[(QUERY, {"dataset": "penguins", "limit": 3})], "Gentoo penguins are the heaviest."]
    if prompt == DATASETS:
        return [[(LIST, {})], "penguins, sales and weather"]
    return [[(DESCRIBE, {"name": "penguins"})], "344 penguins, 7 columns."]


CASES: list[dict[str, Any]] = [
    {"name": "heaviest", "prompt": HEAVIEST, "expect_tools": [QUERY], "expect_text": "Gentoo"},
    {"name": "datasets", "prompt": DATASETS, "expect_tools": {LIST}, "expect_text": "weather"},
    {
        "name": "describe",
        "prompt": DESCRIBE_PENGUINS,
        "expect_tools": [DESCRIBE],
        "expect_arguments": {DESCRIBE: {"name": "penguins"}},
    },
]


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    wb = make_workbench({"toolboxes": {"demo": toolbox(DEMO)}})
    wb.open("demo")
    return wb


# ---- done when ---------------------------------------------------------------------------------
def test_three_cases_over_five_runs_one_failing_once_reports_80_percent_with_the_reason(wb: Workbench) -> None:
    plans = Plans(three_cases)
    report = wb.evaluate(CASES, toolbox="demo", model=plans.model(), runs=5)

    assert isinstance(report, EvalReport)
    assert [c.name for c in report.cases] == ["heaviest", "datasets", "describe"]
    assert [c.pass_rate for c in report.cases] == [0.8, 1.0, 1.0]
    assert report.pass_rate == 14 / 15 and (report.passed, report.total) == (14, 15)
    heaviest = report.case("heaviest")
    assert [r.run for r in heaviest.runs] == [1, 2, 3, 4, 5]
    [failed] = heaviest.failures
    assert failed.run == 3 and not failed.error
    assert failed.reason == (
        f"expect_tools: expected {QUERY}; called {DESCRIBE}; "
        "expect_text: the answer lacks 'Gentoo': 'Probably the Adelie.'"
    )
    assert failed.calls == ((DESCRIBE, {"name": "penguins"}),)
    ok = heaviest.runs[0]
    assert ok.passed and ok.reason is None and ok.tools == (QUERY,)
    assert ok.text == "Gentoo penguins are the heaviest." and ok.requests == 2
    assert ok.input_tokens > 0 and ok.output_tokens > 0 and ok.seconds > 0
    assert heaviest.tool_runs() == {QUERY: 4, DESCRIBE: 1}
    # each case ran 5 times, in order, one at a time, each run in a conversation of its own
    assert plans.runs == {HEAVIEST: 5, DATASETS: 5, DESCRIBE_PENGUINS: 5}
    assert all(len(messages) == 1 for messages in plans.first_requests)
    assert report.model == "function:plans" and report.toolbox == "demo" and report.runs == 5
    assert report.evaluation is not None and len(report.evaluation.cases) == 15  # pydantic-evals' own report
    # the runs' tool calls are workbench calls
    assert Counter(str(r.identifier) for r in wb.history) == {QUERY: 4, DESCRIBE: 6, LIST: 5}


def test_the_report_renders_a_row_per_case_with_the_failing_runs(wb: Workbench) -> None:
    report = wb.evaluate(CASES, toolbox="demo", model=Plans(three_cases).model(), runs=5)
    text = repr(report)
    lines = text.splitlines()
    assert lines[0] == (
        "Evaluation of 3 cases over demo with function:plans, 5 runs each: 93% of the runs passed (14/15)"
    )
    assert lines[1].split() == "case passed tools called tokens per run time per run failing runs".split()
    heaviest = next(line for line in lines if line.startswith("heaviest"))
    assert "80% (4/5)" in heaviest and f"{QUERY} (4/5), {DESCRIBE} (1/5)" in heaviest
    assert f"run 3: expect_tools: expected {QUERY}; called {DESCRIBE}" in heaviest
    datasets = next(line for line in lines if line.startswith("datasets"))
    assert "100% (5/5)" in datasets and "run " not in datasets
    html = report._repr_html_()
    assert html.count("<tr>") == 4 and "80% (4/5)" in html and "&#x27;Gentoo&#x27;" in html
    assert f"title='{HEAVIEST}'" in html
    frame = report.to_pandas()
    assert list(frame.columns) == [
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
    assert len(frame) == 15 and frame["passed"].sum() == 14
    assert frame.loc[(frame["case"] == "heaviest") & ~frame["passed"], "run"].tolist() == [3]


def test_a_run_whose_model_raises_fails_with_the_models_error_and_the_calls_made(wb: Workbench) -> None:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(m, ModelResponse) for m in messages):
            raise RuntimeError("the model fell over")
        return ModelResponse(parts=[ToolCallPart(_name(LIST), "{}", tool_call_id="c1")])

    report = wb.evaluate([{"prompt": DATASETS}], model=FunctionModel(respond, model_name="flaky"), runs=2)
    [case] = report.cases
    assert case.name == DATASETS and case.pass_rate == 0.0
    assert [(r.run, r.error, r.reason, r.tools) for r in case.runs] == [
        (n, True, "Model 'function:flaky' failed: the model fell over", (LIST,)) for n in (1, 2)
    ]


BAD = {"dataset": "penguins", "limit": "many"}
"""Arguments the query tool's input schema refuses (`limit` is an integer)."""


def test_a_run_whose_model_sends_bad_arguments_twice_is_told_and_passes(wb: Workbench) -> None:
    def plan(prompt: str, run: int) -> list[Step]:
        return [[(QUERY, BAD)], [(QUERY, BAD)], [(QUERY, {"dataset": "penguins", "limit": 3})], "Gentoo."]

    plans = Plans(plan)
    report = wb.evaluate([{"prompt": HEAVIEST, "expect_tools": [QUERY], "expect_text": "Gentoo"}], model=plans.model())
    [case] = report.cases
    assert [(r.passed, r.error, r.reason) for r in case.runs] == [(True, False, None)] * 3
    assert all(r.tools == (QUERY, QUERY, QUERY) for r in case.runs)


def test_a_run_whose_model_keeps_sending_bad_arguments_fails_at_the_limit_with_the_reason(wb: Workbench) -> None:
    wb.tool_retries = 1
    plans = Plans(lambda prompt, run: [[(QUERY, BAD)] for _ in range(10)])
    report = wb.evaluate([{"prompt": HEAVIEST, "expect_tools": [QUERY]}], model=plans.model(), runs=2)
    [case] = report.cases
    stopped = (
        f"The turn stopped: the model's calls of {QUERY} failed twice in a row, each told why "
        "(wb.tool_retries = 1: it may try again once)"
    )
    assert [(r.run, r.passed, r.error, r.reason) for r in case.runs] == [(n, False, False, stopped) for n in (1, 2)]
    assert all(r.calls == ((QUERY, BAD), (QUERY, BAD)) for r in case.runs)


# ---- the cases ------------------------------------------------------------------------------------
def test_a_dict_case_and_a_pydantic_evals_case_both_run(wb: Workbench) -> None:
    cases = [
        {"prompt": DATASETS, "expect_tools": [LIST]},
        Case(
            name="described",
            inputs={"prompt": DESCRIBE_PENGUINS},
            metadata={"expect_tools": {DESCRIBE}, "owner": "me"},
            evaluators=[Contains("344 penguins")],
        ),
        Case(inputs=HEAVIEST, evaluators=[Contains("Adelie")]),
    ]
    report = wb.evaluate(cases, toolbox="demo", model=Plans(three_cases).model(), runs=1)
    assert [(c.name, c.prompt, c.pass_rate) for c in report.cases] == [
        (DATASETS, DATASETS, 1.0),
        ("described", DESCRIBE_PENGUINS, 1.0),
        (HEAVIEST, HEAVIEST, 0.0),
    ]
    assert report.cases[1].expect == {"expect_tools": [DESCRIBE], "tools_in_order": False, "evaluators": ["Contains"]}
    [failed] = report.cases[2].failures
    assert failed.reason is not None and failed.reason.startswith("Contains: Output string 'Gentoo penguins")


def test_expect_tools_in_order_or_as_a_set(wb: Workbench) -> None:
    def plan(prompt: str, run: int) -> list[Step]:
        return [[(LIST, {})], [(QUERY, {"dataset": "penguins", "limit": 1})], "one penguin"]

    cases = [
        {"name": "in order", "prompt": "a", "expect_tools": [LIST, QUERY]},
        {"name": "one of them", "prompt": "b", "expect_tools": [QUERY]},
        {"name": "wrong order", "prompt": "c", "expect_tools": [QUERY, LIST]},
        {"name": "any order", "prompt": "d", "expect_tools": {QUERY, LIST}},
        {"name": "missing", "prompt": "e", "expect_tools": {QUERY, DESCRIBE}},
        {"name": "none", "prompt": "f", "expect_tools": []},
    ]
    report = wb.evaluate(cases, toolbox="demo", model=Plans(plan).model(), runs=1)
    outcome = {c.name: c.runs[0].reason for c in report.cases}
    assert outcome == {
        "in order": None,
        "one of them": None,
        "wrong order": f"expect_tools: expected {QUERY} then {LIST}; called {LIST}, {QUERY}",
        "any order": None,
        "missing": f"expect_tools: did not call {DESCRIBE}; called {LIST}, {QUERY}",
        "none": f"expect_tools: expected no tool call; called {LIST}, {QUERY}",
    }


def test_expect_arguments_is_a_subset_per_tool(wb: Workbench) -> None:
    def plan(prompt: str, run: int) -> list[Step]:
        query = {"dataset": "penguins", "limit": 2, "where": [{"column": "island", "op": "==", "value": "Dream"}]}
        return [[(QUERY, query)], "two from Dream"]

    cases = [
        {"name": "subset", "prompt": "a", "expect_arguments": {QUERY: {"dataset": "penguins"}}},
        {
            "name": "all",
            "prompt": "b",
            "expect_arguments": {"demo__datasets__query": {"dataset": "penguins", "limit": 2}},
        },
        {"name": "wrong value", "prompt": "c", "expect_arguments": {QUERY: {"limit": 3}}},
        {"name": "not called", "prompt": "d", "expect_arguments": {LIST: {}}},
    ]
    report = wb.evaluate(cases, toolbox="demo", model=Plans(plan).model(), runs=1)
    outcome = {c.name: c.runs[0].reason for c in report.cases}
    assert outcome["subset"] is None and outcome["all"] is None
    assert outcome["wrong value"] == (
        f'expect_arguments: {QUERY} was called with {{"dataset": "penguins", "limit": 2, "where": '
        f'[{{"column": "island", "op": "==", "value": "Dream"}}]}}, not {{"limit": 3}}'
    )
    assert outcome["not called"] == f"expect_arguments: {LIST} was not called"
    # identifiers are read in any spelling, kept as toolbox/server/tool
    assert report.case("all").expect == {"expect_arguments": {QUERY: {"dataset": "penguins", "limit": 2}}}


def test_expect_text_as_a_substring_or_a_predicate(wb: Workbench) -> None:
    def plan(prompt: str, run: int) -> list[Step]:
        return ["Gentoo, at 5 kg"]

    def short(text: str) -> bool:
        return len(text) < 10

    def broken(text: str) -> bool:
        raise ValueError("no idea")

    cases = [
        {"name": "substring", "prompt": "a", "expect_text": "Gentoo"},
        {"name": "absent", "prompt": "b", "expect_text": "gentoo"},
        {"name": "predicate", "prompt": "c", "expect_text": lambda text: "kg" in text},
        {"name": "false", "prompt": "d", "expect_text": short},
        {"name": "raises", "prompt": "e", "expect_text": broken},
    ]
    report = wb.evaluate(cases, toolbox="demo", model=Plans(plan).model(), runs=1)
    outcome = {c.name: c.runs[0].reason for c in report.cases}
    assert outcome == {
        "substring": None,
        "absent": "expect_text: the answer lacks 'gentoo': 'Gentoo, at 5 kg'",
        "predicate": None,
        "false": "expect_text: short(answer) is false; the answer: 'Gentoo, at 5 kg'",
        "raises": "expect_text raised ValueError: no idea",
    }
    assert report.case("false").expect == {
        "text_predicate": "test_expect_text_as_a_substring_or_a_predicate.<locals>.short"
    }


@pytest.mark.parametrize(
    ("cases", "runs", "message"),
    [
        ([], 3, "No case to evaluate: give a list of cases (dicts with a prompt)"),
        ({"prompt": "a"}, 3, "cases is a list of cases (dicts with a prompt, or pydantic-evals Cases)"),
        ([{"prompt": "a"}], 0, "runs is a whole number from 1, not 0"),
        (["a"], 3, "case 1: a case is a dict with a prompt or a pydantic-evals Case, not str"),
        ([{"prompt": ""}], 3, "case 1: a case needs a prompt (a non-empty string)"),
        (
            [{"prompt": "a"}, {"name": "b", "prompt": "b", "expect_tool": [QUERY]}],
            3,
            "case 'b': unknown key 'expect_tool' (a case takes name, prompt, expect_tools, expect_arguments, "
            "expect_text)",
        ),
        ([{"prompt": "a", "expect_tools": ["demo/query"]}], 3, "case 1: Invalid tool identifier: "),
        ([{"prompt": "a", "expect_tools": 3}], 3, "case 1: expect_tools is a list (in order) or a set (any order)"),
        ([{"prompt": "a", "expect_text": 3}], 3, "case 1: expect_text is a substring or a predicate, not int"),
        ([{"prompt": "a", "expect_arguments": {QUERY: 1}}], 3, f"case 1: expect_arguments[{QUERY!r}] is a mapping"),
    ],
)
def test_a_case_that_is_not_one_is_one_line(wb: Workbench, cases: Any, runs: int, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        wb.evaluate(cases, model=Plans(three_cases).model(), runs=runs)
    assert str(raised.value).startswith(message)
    assert raised.value.__cause__ is None and raised.value.__context__ is None


def test_cases_named_alike_get_unique_names(wb: Workbench) -> None:
    report = wb.evaluate([{"prompt": DATASETS}, {"prompt": DATASETS}], model=Plans(three_cases).model(), runs=1)
    assert [c.name for c in report.cases] == [DATASETS, f"{DATASETS} (2)"]


# ---- the workbench around it ---------------------------------------------------------------------
def test_an_evaluation_leaves_the_chat_conversation_alone(wb: Workbench) -> None:
    plans = Plans(three_cases)
    wb.chat(DATASETS, model=plans.model())
    before = wb._chat.conversation().messages
    assert len(before) == 4
    wb.evaluate(CASES[:1], model=plans.model(), runs=2)
    assert wb._chat.conversation().messages is before
    assert all(len(messages) == 1 for messages in plans.first_requests)  # no run saw the chat's messages


def test_a_destructive_tool_is_refused_unless_confirm_destructive_is_off(wb: Workbench) -> None:
    note = wb.call("demo/notes/add_note", {"title": "keep", "body": "me"}).data
    delete = "demo/notes/delete_note"

    def plan(prompt: str, run: int) -> list[Step]:
        return [[(delete, {"id": note["id"]})]]

    case = {"prompt": "Delete my note", "expect_tools": [delete]}
    report = wb.evaluate([case], model=Plans(plan).model(), runs=1)
    [run] = report.cases[0].runs
    assert run.passed and run.tools == (delete,)  # the model chose it: what is judged
    assert "did not allow demo/notes/delete_note to run" in run.text and not report.destructive_allowed
    assert [n["id"] for n in wb.call("demo/notes/list_notes").data["notes"]] == [note["id"]]

    wb.confirm_destructive = False
    report = wb.evaluate([case], model=Plans(plan).model(), runs=1)
    assert report.destructive_allowed and report.cases[0].runs[0].passed
    assert wb.call("demo/notes/list_notes").data["notes"] == []


def test_no_model_and_no_toolbox_are_one_line(
    make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    wb = make_workbench({"toolboxes": {"demo": toolbox(DEMO)}})
    with pytest.raises(UsageError, match=r"^No toolbox is open to chat with"):
        wb.evaluate([{"prompt": "a"}], model=Plans(three_cases).model())
    wb.open("demo")
    with pytest.raises(UsageError, match=r"^No model is set"):
        wb.evaluate([{"prompt": "a"}])


# ---- saved, loaded ---------------------------------------------------------------------------------
def test_a_saved_report_loads_back_the_same(wb: Workbench, tmp_path: Path) -> None:
    report = wb.evaluate(CASES, model=Plans(three_cases).model(), runs=5)
    path = report.save(tmp_path / "evals.json")
    assert path == str(tmp_path / "evals.json")
    loaded = EvalReport.load(path)
    assert loaded == report and loaded.evaluation is None
    assert loaded.pass_rate == report.pass_rate and repr(loaded) == repr(report)
    assert loaded.case("datasets").expect == {"expect_tools": [LIST], "tools_in_order": False, "expect_text": "weather"}
    saved = json.loads(Path(path).read_text())
    assert saved["format"] == "workbench-magic/evaluation@1" and saved["pass_rate"] == 14 / 15


def test_what_is_not_a_saved_report_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^Cannot read evaluation report .*missing.json: No such file"):
        EvalReport.load(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"cases": []}')
    with pytest.raises(UsageError, match=r"other.json is not an evaluation report \(EvalReport.save writes one\)$"):
        EvalReport.load(tmp_path / "other.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(UsageError, match=r"broken.json is not an evaluation report: invalid JSON"):
        EvalReport.load(tmp_path / "broken.json")
    with pytest.raises(UsageError, match=r"^No case 'x' in this evaluation: $"):
        EvalReport(cases=()).case("x")


# ---- a file of cases, %workbench evaluate -----------------------------------------------------------
CASES_YAML = f"""\
toolbox: demo
runs: 2
cases:
  - name: heaviest
    prompt: {HEAVIEST}
    expect_tools: [{QUERY}]
    expect_text: Gentoo
  - name: datasets
    prompt: {DATASETS}
    expect_tools: !!set {{{LIST}}}
"""


def test_a_yaml_file_of_cases(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(CASES_YAML)
    found = read_cases(path)
    assert (found.toolbox, found.model, found.runs) == ("demo", None, 2)
    assert found.cases[1] == {"name": "datasets", "prompt": DATASETS, "expect_tools": {LIST}}
    (tmp_path / "list.yaml").write_text(f"- prompt: {DATASETS}\n")
    assert read_cases(tmp_path / "list.yaml").cases == ({"prompt": DATASETS},)
    for text, message in [
        ("cases: 3", r"holds no cases: write `cases:` and a list of them"),
        ("cases: []\nmodels: x", r"unknown key 'models' \(a file of cases takes cases, toolbox, model, runs\)"),
        ("cases: []\nruns: 0", r"runs is a whole number from 1, not 0"),
        ("cases: [", r"^Invalid YAML in .*bad\.yaml, line 1 column 9: expected the node content, but found"),
    ]:
        (tmp_path / "bad.yaml").write_text(text)
        with pytest.raises(UsageError, match=message):
            read_cases(tmp_path / "bad.yaml")


@pytest.fixture
def ip(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    settings = copy.deepcopy(shell.config.get("Workbench"))
    shell.run_line_magic("load_ext", "workbench_magic")
    yield shell
    shell.run_line_magic("unload_ext", "workbench_magic")
    if settings is None:
        shell.config.pop("Workbench", None)
    else:
        shell.config["Workbench"] = settings


def test_workbench_evaluate_runs_a_yaml_file(ip: InteractiveShell, wb: Workbench, tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(CASES_YAML)
    wb.chat_model = Plans(three_cases).model()
    report = ip.run_line_magic("workbench", f"evaluate {path}")
    assert isinstance(report, EvalReport)
    assert (report.runs, report.toolbox) == (2, "demo")
    assert [(c.name, c.pass_rate) for c in report.cases] == [("heaviest", 1.0), ("datasets", 1.0)]
    # the options win over the file's
    report = ip.run_line_magic("workbench", f"evaluate {path} --runs 3 --toolbox demo/datasets")
    assert (report.runs, report.toolbox) == (3, "demo/datasets")
    assert [c.pass_rate for c in report.cases] == [2 / 3, 1.0]  # the third run of a prompt goes wrong
    assert "evaluate FILE.yaml" in repr(ip.run_line_magic("workbench", "help evaluate"))
    with pytest.raises(UsageError, match=r"^%workbench evaluate: the following arguments are required: path"):
        ip.run_line_magic("workbench", "evaluate")


# ---- exported as tests that replay it ---------------------------------------------------------------
def run_pytest(module: Path) -> subprocess.CompletedProcess[str]:
    """The exported module run by pytest in a process of its own: no model key, no config."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("WORKBENCH_MODEL", "WORKBENCH_CONFIG")
    }
    return subprocess.run(
        [
            *python_command("-m"),
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--rootdir",
            str(module.parent),
            str(module),
        ],
        cwd=module.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_exported_evaluation_replays_offline_and_fails_below_its_threshold(
    wb: Workbench, make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    cassette = tmp_path / "cassettes" / "evals.json"
    with wb.record(cassette):
        report = wb.evaluate(CASES, toolbox="demo", model=Plans(three_cases).model(), runs=5)
    assert report.case("heaviest").pass_rate == 0.8

    # in this process: the identical prompts of the runs replay each its own run's turns
    replaying = make_workbench({"toolboxes": {}}, replay=cassette)
    replaying.open("demo")
    again = replaying.evaluate(CASES, toolbox="demo", model="function:plans", runs=5)

    def outcomes(evaluated: EvalReport) -> list[list[tuple[Any, ...]]]:
        return [[(r.run, r.passed, r.reason, r.calls, r.text) for r in c.runs] for c in evaluated.cases]

    assert outcomes(again) == outcomes(report)
    assert [c.pass_rate for c in again.cases] == [0.8, 1.0, 1.0]

    module = Path(wb.export_tests(tmp_path / "tests" / "test_evals.py", evals=report, replay=cassette))
    text = module.read_text()
    assert 'CASSETTE = Path(__file__).parent / "../cassettes/evals.json"' in text
    assert f'"expect_tools": {{"{LIST}"}},' in text and f'"expect_tools": ["{QUERY}"],' in text
    assert "assert case.pass_rate >= 0.8, case.summary()" in text
    formatted = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--isolated", str(module)], capture_output=True, text=True
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    checked = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "E,F,W", "--ignore", "E501", str(module)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = run_pytest(module)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "3 passed" in ran.stdout

    strict = Path(
        wb.export_tests(tmp_path / "tests" / "test_strict.py", evals=report, replay=cassette, min_pass_rate=0.9)
    )
    ran = run_pytest(strict)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "1 failed, 2 passed" in ran.stdout
    assert "heaviest: 4 of 5 runs passed (80%); run 3: expect_tools: expected" in ran.stdout


def test_what_cannot_be_exported_is_one_line(wb: Workbench, tmp_path: Path) -> None:
    cassette = tmp_path / "evals.json"
    with wb.record(cassette):
        report = wb.evaluate(
            [{"prompt": DATASETS, "expect_text": str.isupper}], model=Plans(three_cases).model(), runs=1
        )
    with pytest.raises(UsageError, match=r"^export_tests\(evals=\.\.\.\) writes tests that replay the evaluation"):
        wb.export_tests(tmp_path / "t.py", evals=report)
    with pytest.raises(UsageError, match=r"^Case 'What datasets are there\?' expects its text of a predicate"):
        wb.export_tests(tmp_path / "t.py", evals=report, replay=cassette)
    plain = EvalReport(cases=())
    with pytest.raises(UsageError, match=r"^min_pass_rate is a share of the runs, from 0 to 1, not 2"):
        wb.export_tests(tmp_path / "t.py", evals=plain, replay=cassette, min_pass_rate=2)
    with pytest.raises(UsageError, match=r"^calls and ignore choose a session's calls"):
        wb.export_tests(tmp_path / "t.py", evals=plain, replay=cassette, ignore=["$.x"])
    with pytest.raises(UsageError, match=r"^min_pass_rate is for an evaluation"):
        wb.export_tests(tmp_path / "t.py", min_pass_rate=0.5)
    wb.record(tmp_path / "toolsonly.json")
    wb.call(LIST)
    wb.record(None)
    with pytest.raises(UsageError, match=r"toolsonly.json holds no model turn"):
        wb.export_tests(tmp_path / "t.py", evals=plain, replay=tmp_path / "toolsonly.json")


def test_import_workbench_magic_imports_no_evals_framework() -> None:
    code = (
        "import sys, workbench_magic\n"
        "from workbench_magic import Workbench, EvalReport\n"
        "print(any(m.split('.')[0] == 'pydantic_evals' for m in sys.modules))"
    )
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


# ---- issue 53, item 18: the tools a case expects are looked up before any case runs ------------
@pytest.mark.parametrize(
    ("expect", "kind", "text"),
    [
        (
            {"expect_tools": [QUERY, "demo/datasets/nope"]},
            ToolNotFoundError,
            "case 'typo': Tool 'nope' not found in server 'datasets' (toolbox 'demo')",
        ),
        (
            {"expect_tools": {"demo/nowhere/query"}},
            ServerNotFoundError,
            "case 'typo': Server 'nowhere' not found in toolbox 'demo'",
        ),
        (
            {"expect_arguments": {"demo/datasets/nope": {"dataset": "penguins"}}},
            ToolNotFoundError,
            "case 'typo': Tool 'nope' not found in server 'datasets' (toolbox 'demo')",
        ),
        (
            {"expect_tools": ["demo/notes/list_notes"], "toolbox": "demo/datasets"},
            UsageError,
            "case 'typo': expects demo/notes/list_notes, which is not among the tools of demo/datasets "
            "(the tools the model is given)",
        ),
    ],
)
def test_an_unknown_expected_tool_fails_before_any_case_runs(
    wb: Workbench, expect: dict[str, Any], kind: type[Exception], text: str
) -> None:
    expect = dict(expect)
    target = expect.pop("toolbox", "demo")
    plans = Plans(three_cases)
    cases = [CASES[1], {"name": "typo", "prompt": HEAVIEST, **expect}]
    with pytest.raises(kind) as caught:
        wb.evaluate(cases, toolbox=target, model=plans.model(), runs=2)
    assert type(caught.value) is kind and str(caught.value) == text
    assert caught.value.__context__ is None
    assert plans.runs == Counter() and wb.history == []  # no case ran, the model was not asked
