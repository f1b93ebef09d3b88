"""The embedded default toolbox `demo` works on a fresh install, offline."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, ROOT, SERVERS, python_config, toolbox

from workbench_magic import ToolError, Workbench


@pytest.fixture
def demo(make_workbench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workbench:
    # no config anywhere: the embedded default applies
    monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return make_workbench()


def test_embedded_default_is_the_demo_toolbox(demo: Workbench) -> None:
    assert demo.config_source == "<embedded default>"
    assert [t.name for t in demo.toolboxes()] == ["demo"]
    box = demo.open("demo")
    assert box.failed == {}
    assert set(box.servers) == {"datasets", "notes"}


def test_datasets_server(demo: Workbench) -> None:
    demo.open("demo")
    listed = demo.call("demo/datasets/list_datasets").data["result"]
    names = {d["name"] for d in listed}
    assert {"penguins", "weather", "sales"} <= names
    rows = demo.call(
        "demo/datasets/query",
        {
            "dataset": "penguins",
            "columns": ["species", "body_mass_g"],
            "where": [{"column": "species", "op": "==", "value": "Gentoo"}],
            "order_by": "body_mass_g",
            "descending": True,
            "limit": 5,
        },
    )
    frame = rows.to_pandas()
    assert list(frame.columns) == ["species", "body_mass_g"]
    assert set(frame["species"]) == {"Gentoo"}
    assert list(frame["body_mass_g"]) == sorted(frame["body_mass_g"], reverse=True)
    agg = demo.call(
        "demo/datasets/aggregate", {"dataset": "sales", "group_by": ["region"], "metric": "revenue", "agg": "sum"}
    ).to_pandas()
    assert sorted(agg["region"]) == ["East", "North", "South", "West"]
    bad = demo.call("demo/datasets/query", {"dataset": "unicorns"})
    assert bad.is_error and "unicorns" in bad.text


def test_progress_and_image_tools(demo: Workbench) -> None:
    demo.open("demo")
    seen: list[float] = []
    profile = demo.call(
        "demo/datasets/profile", {"dataset": "weather", "delay": 0}, progress=lambda p, t, m: seen.append(p)
    )
    assert not profile.is_error
    assert len(seen) >= 4 and seen == sorted(seen)
    plot = demo.call("demo/datasets/plot", {"dataset": "penguins", "x": "bill_length_mm", "y": "body_mass_g"})
    png = plot.images[0]
    assert png.mime_type == "image/png" and png.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png.data) > 500


def test_notes_server_keeps_state(demo: Workbench) -> None:
    box = demo.open("demo")
    first = box.notes.add_note(title="one", body="alpha beta", tags=["x"]).data
    box.notes.add_note(title="two", body="gamma", tags=["y"])
    assert [n["title"] for n in box.notes.list_notes(tag="x").data["notes"]] == ["one"]
    assert box.notes.get_note(id=first["id"]).data["title"] == "one"
    box.notes.set_value(key="k", value={"a": [1, 2]})
    assert box.notes.get_value(key="k").data == {"key": "k", "value": {"a": [1, 2]}}
    assert box.notes.count_words(text="a b c\nd").data["words"] == 4
    assert box.notes.get_note(id=999).is_error


def test_demo_resources_and_prompts(demo: Workbench) -> None:
    demo.open("demo")
    uris = {r.uri for r in demo.resources("demo")}
    assert "dataset://index" in uris
    csv_text = demo.read_resource("demo/datasets", "dataset://penguins").text
    assert csv_text.splitlines()[0].startswith("species")
    assert {"analyze_dataset", "summarize_notes"} <= {p.name for p in demo.prompts("demo")}
    assert "penguins" in demo.get_prompt("demo/datasets/analyze_dataset", {"name": "penguins"}).text


def test_make_demo_smoke_run(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "workbench_magic", "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "0 failed" in out.stdout
    assert "Toolbox 'demo': 2/2 servers connected" in out.stdout
    # the profile call's progress, counted in whole columns, then what the call returned
    progress = [line for line in out.stdout.splitlines() if line.startswith("  progress ")]
    columns = ["city", "date", "temp_c", "precip_mm"]
    assert progress == [f"  progress {i}/4 profiling {c}" for i, c in enumerate(columns)] + ["  progress 4/4 done"]
    after = out.stdout.split("  progress 4/4 done\n", 1)[1]
    assert after.startswith("ToolResult demo/datasets/profile [ok, ")
    assert '"name": "weather"' in after.split("ToolResult demo/datasets/plot", 1)[0]


def test_import_does_not_load_the_sdk() -> None:
    frameworks = ("pydantic_ai", "langchain_core", "agents", "openai", "genai_prices")  # the models-in-the-loop extras
    code = (
        "import sys, workbench_magic; print('mcp' in sys.modules, 'pydantic' in sys.modules, "
        f"sorted(m for m in {frameworks!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "False", "[]"]


def without_pandas(tmp_path: Path) -> dict[str, str]:
    """The environment of a child Python that imports this checkout and cannot import pandas (as
    after a plain `pip install workbench-magic`, which has no extras), with no config set."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "pandas.py").write_text('raise ModuleNotFoundError("No module named \'pandas\'", name="pandas")\n')
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join([str(hidden), str(ROOT)])
    return env


def test_demo_runs_without_pandas(tmp_path: Path) -> None:
    env = without_pandas(tmp_path)
    out = subprocess.run(
        [PYTHON, "-m", "workbench_magic", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "Toolbox 'demo': 2/2 servers connected" in out.stdout and "0 failed" in out.stdout
    assert "  species  body_mass_g_mean\n   Adelie         3723.0769\n" in out.stdout  # as pandas prints it
    # what .ci/plain_install.sh runs in a fresh virtualenv: a call, the chart's MCP App, to_pandas()'s error
    script = ROOT / "tests" / "plain_install.py"
    out = subprocess.run([PYTHON, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"from {ROOT / 'workbench_magic'}" in out.stdout
    assert "to_pandas(): to_pandas() needs pandas: pip install 'workbench-magic[pandas]'" in out.stdout
    assert out.stdout.rstrip().endswith("plain install: ok")


# ---- the client side: sampling, elicitation, log messages, completions, subscriptions, roots

# The demo servers as pre-2026 servers: the handshake era only (tests/servers/legacy.py).
LEGACY = (
    "import sys, warnings, anyio; sys.path.insert(0, {servers!r}); "
    "from legacy import serve_legacy_stdio; from mcp.shared.exceptions import MCPDeprecationWarning; "
    "warnings.simplefilter('ignore', MCPDeprecationWarning); "
    "from workbench_magic.demo import {name} as server; anyio.run(serve_legacy_stdio, server.mcp)"
)
ERAS = ["2026-07-28", "2025-11-25"]


@pytest.fixture(params=ERAS)
def era_demo(request, make_workbench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A factory of workbenches with the `demo` toolbox open, its servers speaking one protocol era:
    the embedded default (2026-07-28), or the same servers on the handshake era only (2025-11-25)."""
    monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    era: str = request.param

    def make(**traits: Any) -> Workbench:
        config = None
        if era == "2025-11-25":
            servers = {
                name: python_config("-c", LEGACY.format(servers=str(SERVERS), name=name))
                for name in ("datasets", "notes")
            }
            config = {"toolboxes": {"demo": toolbox(servers)}}
        wb = make_workbench(config, **traits)
        box = wb.open("demo")
        assert {s.protocol for s in box.servers.values()} == {era}
        return wb

    return make


def test_demo_sampling_tool(era_demo) -> None:
    wb = era_demo()
    with pytest.raises(ToolError, match="sampling"):  # no handler: the capability is not declared
        wb.call("demo/datasets/describe_with_model", {"dataset": "penguins"})
    asked: list[Any] = []

    def model(messages: list[Any], params: Any) -> str:
        asked.append(params)
        return f"A paragraph about {len(messages[-1].content.text.splitlines())} lines."

    wb.sampling_handler = model
    wb.reconnect("demo/datasets")  # the sampling capability is declared at connect time
    result = wb.call("demo/datasets/describe_with_model", {"dataset": "penguins"}).data
    assert result == {"dataset": "penguins", "model": "workbench-magic", "description": "A paragraph about 10 lines."}
    (params,) = asked
    text = params.messages[-1].content.text
    assert "'penguins'" in text and "- species: text, 3 distinct values" in text and "missing" in text
    assert params.max_tokens == 300 and params.system_prompt == "You are a concise data analyst."
    record = next(r for r in reversed(wb.history) if r.kind == "sampling")
    assert (record.identifier.toolbox, record.identifier.server) == ("demo", "datasets")
    assert record.arguments["messages"][0]["text"] == text
    assert record.answer == "A paragraph about 10 lines."
    wb.sampling_handler = lambda messages, params: {"text": "short", "model": "my-model"}
    assert wb.call("demo/datasets/describe_with_model", {"dataset": "sales"}).data["model"] == "my-model"


def test_demo_elicitation_tool(era_demo, caplog: pytest.LogCaptureFixture) -> None:
    wb = era_demo(elicitation_handler={"columns": ["species", "island"], "limit": 3})
    chosen = wb.call("demo/datasets/choose_columns", {"dataset": "penguins"}).data
    everything = wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 3}).data
    assert chosen == {
        "action": "accept",
        "columns": ["species", "island"],
        "rows": [{"species": r["species"], "island": r["island"]} for r in everything["rows"]],
        "total": everything["total"],
    }
    asked: list[tuple[str, dict[str, Any]]] = []

    def person(message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        asked.append((message, schema))
        return None if len(asked) > 1 else {"columns": ["city"]}

    wb.elicitation_handler = person
    accepted = wb.call("demo/datasets/choose_columns", {"dataset": "weather"}).data
    assert accepted["action"] == "accept" and accepted["columns"] == ["city"] and len(accepted["rows"]) == 5
    message, schema = asked[0]
    assert message == "Which columns of 'weather' do you want, and how many rows?"
    assert schema["required"] == ["columns"]
    columns, limit = schema["properties"]["columns"], schema["properties"]["limit"]
    assert columns["type"] == "array" and columns["minItems"] == 1 and "city" in columns["items"]["enum"]
    assert limit["type"] == "integer" and limit["default"] == 5 and limit["minimum"] == 1
    declined = wb.call("demo/datasets/choose_columns", {"dataset": "weather"}).data
    assert declined == {"action": "decline", "columns": [], "rows": [], "total": accepted["total"]}
    wb.elicitation_handler = None  # ask the person: pytest has no terminal, so nobody can answer
    with caplog.at_level(logging.WARNING, logger="workbench_magic"):
        assert wb.call("demo/datasets/choose_columns", {"dataset": "sales"}).data["action"] == "decline"
    assert [r.kind for r in wb.history].count("elicitation") == 4
    wb.elicitation_handler = {"columns": ["nope"]}  # not one of the choices: the server says so
    assert wb.call("demo/datasets/choose_columns", {"dataset": "sales"}).is_error


def test_demo_log_messages(era_demo, caplog: pytest.LogCaptureFixture) -> None:
    wb = era_demo()
    seen: list[str] = []
    nothing = [{"column": "species", "op": "==", "value": "Emperor"}]
    with caplog.at_level(logging.DEBUG, logger="workbench_magic.server.demo.datasets"):
        result = wb.call("demo/datasets/query", {"dataset": "penguins", "where": nothing}, server_log=seen.append)
    assert result.data == {"rows": [], "total": 0}
    log = wb.logs("demo/datasets")
    assert "notifications/message [info] datasets: query penguins: species == 'Emperor', limit 100" in log
    assert "notifications/message [warning] datasets: query penguins: no row matches species == 'Emperor'" in log
    assert seen == ["demo/datasets warning: query penguins: no row matches species == 'Emperor'"]
    records = [r.levelname for r in caplog.records if r.name == "workbench_magic.server.demo.datasets"]
    assert records == ["INFO", "WARNING"]
    wb.call("demo/datasets/query", {"dataset": "sales", "limit": 1})
    assert "[info] datasets: query sales: every row, limit 1" in wb.logs("demo/datasets")
    assert "[warning] datasets: query sales" not in wb.logs("demo/datasets")  # rows matched


def test_demo_log_level(era_demo) -> None:
    wb = era_demo(server_log_level="warning")
    wb.call("demo/datasets/query", {"dataset": "weather", "where": [{"column": "city", "op": "==", "value": "Rome"}]})
    log = wb.logs("demo/datasets")
    assert "[warning] datasets: query weather: no row matches" in log and "[info] datasets" not in log


def test_demo_completions_and_template(era_demo) -> None:
    wb = era_demo()
    assert wb.complete("demo/datasets", "dataset://{name}", "name", "") == ["penguins", "sales", "weather"]
    assert wb.complete("demo/datasets", "dataset://{name}", "name", "pe") == ["penguins"]
    assert wb.complete("demo/datasets", "prompt:analyze_dataset", "name", "w") == ["weather"]
    assert wb.complete("demo/datasets", "prompt:analyze_dataset", "other", "w") == []
    assert wb.complete("demo/notes", "prompt:summarize_notes", "name", "") == []  # no completions there
    csv_text = wb.read_resource("demo/datasets", "dataset://{name}", name="weather").text
    assert csv_text.splitlines()[0] == "city,date,temp_c,precip_mm"


def test_demo_resource_subscription(era_demo) -> None:
    wb = era_demo()
    values: list[str] = []
    got = threading.Semaphore(0)

    def on_update(value: Any) -> None:
        values.append(value.text)
        got.release()

    watch = wb.watch("demo/notes", "notes://count", callback=on_update)
    assert watch.value is not None and watch.value.text == "0" and watch.updates == 0
    note = wb.call("demo/notes/add_note", {"title": "one", "body": "first"}).data
    assert got.acquire(timeout=15), "no update arrived"
    assert watch.updates == 1 and watch.value.text == "1" and values == ["1"]
    wb.call("demo/notes/delete_note", {"id": note["id"]})
    assert got.acquire(timeout=15), "no update arrived"
    assert watch.updates == 2 and watch.value.text == "0" and values == ["1", "0"]
    watch.close()
    wb.call("demo/notes/add_note", {"title": "two", "body": "second"})
    assert not got.acquire(timeout=1.0)  # closed: nothing more (a bounded wait for an absence)
    assert watch.updates == 2
    with wb.watch("demo/notes", "notes://all", callback=lambda value: got.release()) as every:
        wb.call("demo/notes/add_note", {"title": "three", "body": "third"})
        assert got.acquire(timeout=15), "no update of notes://all arrived"
        assert [n["title"] for n in json.loads(every.value.text)] == ["two", "three"]


def test_demo_roots_tool(era_demo, tmp_path: Path) -> None:
    wb = era_demo()
    here = tmp_path.resolve()
    assert wb.call("demo/notes/my_roots").data == {"roots": []}  # none until set (not the working directory)
    wb.set_roots("demo/notes", [str(here / "data"), "file:///srv/shared"])
    roots = wb.call("demo/notes/my_roots").data["roots"]
    assert roots == [{"uri": (here / "data").as_uri(), "name": "data"}, {"uri": "file:///srv/shared", "name": "shared"}]
    records = [r for r in wb.history if r.kind == "roots"]
    assert records and records[-1].answer == [(here / "data").as_uri(), "file:///srv/shared"]


def test_demo_tools_keep_their_schemas(demo: Workbench) -> None:
    demo.open("demo")
    names = {t.name for t in demo.tools("demo")}
    assert {"describe_with_model", "choose_columns", "my_roots"} <= names
    # the Context and resolver parameters are not arguments
    assert set(demo.tool("demo/datasets/query").parameters) == {
        "dataset",
        "columns",
        "where",
        "order_by",
        "descending",
        "limit",
    }
    assert set(demo.tool("demo/datasets/describe_with_model").parameters) == {"dataset"}
    assert set(demo.tool("demo/datasets/choose_columns").parameters) == {"dataset"}
    assert set(demo.tool("demo/notes/add_note").parameters) == {"title", "body", "tags"}
    assert set(demo.tool("demo/notes/my_roots").parameters) == set()
