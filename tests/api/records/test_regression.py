"""From exploration to regression tests (api/records/regression.py): `wb.export_tests` writes a pytest file
that runs against the server in a pytest of its own, `wb.snapshot` and `wb.diff` record and
compare a toolbox's surface, and the command line gates on them. The server is
tests/servers/surfaceserver.py, whose answers and schema change with its environment."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVERS, python_command, python_server, write_config

from workbench_magic import Snapshot, UsageError, Workbench

SURFACE = str(SERVERS / "surfaceserver.py")


def surface_config(path: Path, **env: str) -> Path:
    """A config with toolbox `s`: the surface server as `srv`, its environment `env`."""
    server: dict[str, Any] = python_server(SURFACE, env=env)
    return write_config(path, {"toolboxes": {"s": {"mcpServers": {"srv": server}}}})


def run_pytest(module: Path, config: Path | None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The exported module run by pytest in a process of its own, from `cwd` (default: its
    folder), with WORKBENCH_CONFIG set to `config` (None: unset)."""
    env = {k: v for k, v in __import__("os").environ.items() if k != "WORKBENCH_CONFIG"}
    if config is not None:
        env["WORKBENCH_CONFIG"] = str(config)
    return subprocess.run(
        python_command("-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(module.parent), str(module)),
        cwd=cwd or module.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def explore(wb: Workbench) -> None:
    """A short session: answers with structured content, text only, and a tool error."""
    wb.open("s")
    wb.call("s/srv/greet", {"name": "Ada"})
    wb.call("s/srv/scale", {"factor": 2.5, "unit": "kelvin"})
    wb.call("s/srv/shout", {"text": "hey"})
    wb.call("s/srv/fail")


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    return surface_config(tmp_path / "v1.json")


def test_the_exported_file_passes_against_the_same_server_and_is_formatted(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    wb = make_workbench(v1)
    explore(wb)
    module = Path(wb.export_tests(tmp_path / "tests" / "test_session.py"))
    text = module.read_text()
    assert text.count("def test_0") == 4 and text.count("def test_schema_") == 4
    assert 'wb.call("s/srv/greet", {"name": "Ada"})' in text and 'workbench.open("s")' in text
    formatted = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--isolated", str(module)], capture_output=True, text=True
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    ran = run_pytest(module, v1)
    assert ran.returncode == 0, ran.stdout
    assert "8 passed" in ran.stdout


def against_version_2(make: Callable[..., Workbench], v1: Path, tmp_path: Path, **env: str) -> str:
    """Explore against `v1`, export, then run the tests with `v1` rewritten to start the server
    with `env`: pytest's report of the failing run."""
    wb = make(v1)
    explore(wb)
    module = Path(wb.export_tests(tmp_path / "test_session.py"))
    ran = run_pytest(module, surface_config(v1, **env))  # the same config now starts version 2
    assert ran.returncode == 1, ran.stdout
    return ran.stdout


def test_a_changed_answer_fails_showing_both_values(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    report = against_version_2(make_workbench, v1, tmp_path, SURFACE_GREETING="Howdy")
    assert "1 failed, 7 passed" in report
    assert "FAILED test_session.py::test_01_srv_greet" in report
    assert "'Howdy, Ada!'" in report and "'Hello, Ada!'" in report  # what came, what was expected


def test_a_new_required_argument_fails_naming_it(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    report = against_version_2(make_workbench, v1, tmp_path, SURFACE_REQUIRE="1")
    assert "FAILED test_session.py::test_schema_srv_greet" in report
    assert "argument 'language' is new and required" in report
    assert "s/srv/greet no longer accepts what it accepted" in report
    assert "FAILED test_session.py::test_01_srv_greet" in report  # the call itself is refused


def test_the_exported_file_opens_the_sessions_config_from_any_folder(
    make_workbench: Callable[..., Workbench], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    surface_config(tmp_path / "cfg.json")
    monkeypatch.chdir(tmp_path)
    wb = make_workbench("cfg.json")  # relative to the folder the session ran in
    explore(wb)
    module = tmp_path / wb.export_tests("tests/test_session.py")
    text = module.read_text()
    assert 'CONFIG = Path(__file__).parent / "../cfg.json"' in text
    assert "workbench = Workbench(CONFIG)" in text
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # run from another folder, with $WORKBENCH_CONFIG unset, then naming no file: the explicit config wins
    for config in (None, tmp_path / "missing.json"):
        ran = run_pytest(module, config, cwd=elsewhere)
        assert ran.returncode == 0, ran.stdout
        assert "8 passed" in ran.stdout


def test_a_config_not_from_a_file_is_discovered_by_the_tests_and_export_says_so(
    make_workbench: Callable[..., Workbench], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wb = make_workbench({"toolboxes": {"s": {"mcpServers": {"srv": python_server(SURFACE)}}}})
    wb.open("s")
    wb.call("s/srv/greet", {"name": "Ada"})
    with pytest.warns(UserWarning, match=r"^The session's config is not a file \(<dict>\), so the tests open"):
        module = Path(wb.export_tests(tmp_path / "test_dict.py"))
    assert "workbench = Workbench()" in module.read_text()
    # the embedded default is what the tests find too: nothing to say
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)
    demo = make_workbench()
    demo.open("demo")
    demo.call("demo/notes/list_notes")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = Path(demo.export_tests(tmp_path / "test_demo.py"))
    assert "workbench = Workbench()" in module.read_text()


def test_a_cassette_runs_the_tests_offline(make_workbench: Callable[..., Workbench], tmp_path: Path) -> None:
    cassette = tmp_path / "cassettes" / "session.json"
    secret = {"SURFACE_GREETING": "${SURFACE_SECRET_WORD}"}
    config = surface_config(tmp_path / "v1.json", **secret)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SURFACE_SECRET_WORD", "Hello")
        wb = make_workbench(config)
        with wb.record(cassette):
            explore(wb)
        module = Path(wb.export_tests(tmp_path / "offline" / "test_offline.py", replay=cassette))
    assert 'CASSETTE = Path(__file__).parent / "../cassettes/session.json"' in module.read_text()
    # no server can start (its command is gone) and its secret is unset: the cassette answers
    gone = write_config(
        tmp_path / "gone.json", {"toolboxes": {"s": {"mcpServers": {"srv": {"command": "/nonexistent"}}}}}
    )
    ran = run_pytest(module, gone)
    assert ran.returncode == 0, ran.stdout
    assert "8 passed" in ran.stdout
    # nor does the environment matter: $WORKBENCH_CONFIG naming no file, pytest run from elsewhere
    ran = run_pytest(module, tmp_path / "missing.json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout
    assert "8 passed" in ran.stdout


def test_ignore_leaves_out_what_changes_from_run_to_run(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    wb = make_workbench(v1)
    wb.open("s")
    wb.call("s/srv/stamp")
    kept = Path(wb.export_tests(tmp_path / "test_kept.py", ignore=["$.at"]))
    assert 'IGNORE = ("$.at",)' in kept.read_text()
    assert 'without(result.structured_content, IGNORE) == {"value": 42}' in kept.read_text()
    strict = Path(wb.export_tests(tmp_path / "test_strict.py"))
    assert run_pytest(kept, v1).returncode == 0
    failed = run_pytest(strict, v1)
    assert failed.returncode == 1 and "'at'" in failed.stdout


def test_ignore_applies_to_an_answer_given_as_json_text(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    wb = make_workbench(v1)
    wb.open("s")
    wb.call("s/srv/ticket")  # {"id": NEW_ID, "status": "open"} as text, no structured content
    module = Path(wb.export_tests(tmp_path / "test_ticket.py", ignore=["$.id"]))
    text = module.read_text()
    assert 'assert without(json.loads(result.text), IGNORE) == {"status": "open"}' in text
    assert "\nimport json\n" in text
    ran = run_pytest(module, v1)
    assert ran.returncode == 0, ran.stdout
    assert "2 passed" in ran.stdout


def test_ignore_applies_to_json_text_inside_structured_content(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    wb = make_workbench(v1)
    wb.open("s")
    answer = wb.call("s/srv/receipt")  # `-> str`: the SDK sends {"result": "<the JSON text>"} as well
    assert set(answer.structured_content) == {"result"} and '"id": ' in answer.structured_content["result"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # `$.id` leaves something out: no "matches nothing" warning
        module = Path(wb.export_tests(tmp_path / "test_receipt.py", ignore=["$.id"]))
    assert "without(result.structured_content, IGNORE)" in module.read_text()
    for _ in range(2):  # each run gets a new id
        ran = run_pytest(module, v1)
        assert ran.returncode == 0, ran.stdout
        assert "2 passed" in ran.stdout


def test_an_ignore_path_that_matches_nothing_is_reported(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    wb = make_workbench(v1)
    wb.open("s")
    wb.call("s/srv/stamp")
    wb.call("s/srv/shout", {"text": "hey"})  # text, not JSON: no path matches it
    with pytest.warns(UserWarning) as caught:
        module = Path(wb.export_tests(tmp_path / "test_typo.py", ignore=["$.at", "$.when"]))
    said = [str(w.message) for w in caught]
    assert said == ["ignore: '$.when' matches nothing in the answers exported, so it leaves nothing out"]
    assert 'IGNORE = ("$.at", "$.when")' in module.read_text()  # the file is written all the same


def test_export_refuses_what_it_cannot_write(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    wb = make_workbench(v1)
    with pytest.raises(UsageError, match="No tool call to export"):
        wb.export_tests(tmp_path / "test_none.py")
    explore(wb)
    with pytest.raises(UsageError, match=r"ending in \.py"):
        wb.export_tests(tmp_path / "tests.txt")
    with pytest.raises(UsageError, match="Not a JSON path"):
        wb.export_tests(tmp_path / "test_x.py", ignore=["$..[oops"])
    with pytest.raises(UsageError, match="No cassette at"):
        wb.export_tests(tmp_path / "test_x.py", replay=tmp_path / "missing.json")
    picked = Path(wb.export_tests(tmp_path / "test_picked.py", calls=[0, wb.history[-1]]))
    assert picked.read_text().count("def test_0") == 2 and "def test_02_srv_fail" in picked.read_text()
    assert not (tmp_path / "test_x.py").exists()


def test_a_snapshot_round_trips_and_the_diff_marks_a_new_required_argument(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    before = make_workbench(v1).snapshot("s")
    assert set(before.servers["srv"]["tools"]) == {
        "greet",
        "scale",
        "stats",
        "shout",
        "stamp",
        "ticket",
        "receipt",
        "fail",
    }
    assert set(before.servers["srv"]["resources"]) == {"surface://readme"}
    assert set(before.servers["srv"]["prompts"]) == {"review"}
    saved = before.save(tmp_path / "before.json")
    assert Snapshot.load(saved) == before
    after = make_workbench(surface_config(tmp_path / "v2.json", SURFACE_REQUIRE="1")).snapshot("s")
    changes = Workbench.diff(saved, after)
    assert changes.breaking
    (change,) = [c for c in changes.changes if c.item == "greet" and c.breaking]
    assert "'language'" in change.detail and "required" in change.detail
    assert not Workbench.diff(before, Snapshot.load(saved))  # nothing changed


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        python_command("-m", "workbench_magic", *args), cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_command_line_snapshots_and_gates_on_the_diff(v1: Path, tmp_path: Path) -> None:
    v2 = surface_config(tmp_path / "v2.json", SURFACE_NARROW="1", SURFACE_DROP="1")
    first = cli("snapshot", "s", "-o", "v1-surface.json", "--config", str(v1), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = cli("--config", str(v2), "snapshot", "s", "-o", "v2-surface.json", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    same = cli("diff", "v1-surface.json", "v1-surface.json", cwd=tmp_path)
    assert same.returncode == 0 and "no changes" in same.stdout
    breaking = cli("diff", "v1-surface.json", "v2-surface.json", cwd=tmp_path)
    assert breaking.returncode == 1
    for said in ("tool shout", "argument 'factor'", "argument 'unit'", "output field 'mean'", "prompt review"):
        assert said in breaking.stdout, said
    printed = cli("snapshot", "s", "--config", str(v1), cwd=tmp_path)
    assert printed.returncode == 0 and Snapshot.load(tmp_path / "v1-surface.json").to_json() == printed.stdout
    missing = cli("diff", "v1-surface.json", "nope.json", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and "nope.json" in missing.stderr


def test_calls_whose_answer_the_history_dropped_are_left_out_and_said_so(
    make_workbench: Callable[..., Workbench], v1: Path, tmp_path: Path
) -> None:
    wb = make_workbench(v1)
    wb.history_bytes = 1  # the answers fall out of the byte budget
    explore(wb)
    wb.history_bytes = 10**6
    wb.call("s/srv/greet", {"name": "Bo"})  # kept whole
    dropped = [r for r in wb.history if r.kind == "tool" and r.answer_dropped]
    assert dropped, "the budget dropped no answer"
    text = Path(wb.export_tests(tmp_path / "test_session.py")).read_text()
    calls = "1 call" if len(dropped) == 1 else f"{len(dropped)} calls"
    assert f"{calls} whose answer the history dropped (Workbench.history_bytes) left out." in text
    assert "that raised" not in text
