"""The magics in a real IPython shell against real servers (the shell fixture JupySQL uses)."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, children, stdio_server, toolbox, wait_until
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.interactiveshell import InteractiveShell

from workbench_magic import ToolResult, UsageError, Workbench
from workbench_magic.vocabulary.listings import History, ToolList


def shell_of(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    """The process's IPython shell with the magics loaded, `wb` as their shared workbench (a
    fixture's body: `yield from shell_of(wb, monkeypatch)`)."""
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    settings = copy.deepcopy(shell.config.get("Workbench"))  # a test's %config stays in that test
    shell.run_line_magic("load_ext", "workbench_magic")
    yield shell
    shell.run_line_magic("unload_ext", "workbench_magic")
    if settings is None:
        shell.config.pop("Workbench", None)
    else:
        shell.config["Workbench"] = settings


@pytest.fixture
def ip(make_workbench, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()}, "test box"), "demo2": toolbox({})}})
    yield from shell_of(wb, monkeypatch)


def run(shell: InteractiveShell, code: str) -> Any:
    result = shell.run_cell(code)
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return result.result


def error_of(shell: InteractiveShell, code: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run a cell that must fail; return what the user sees (stdout + stderr)."""
    capsys.readouterr()
    result = shell.run_cell(code)
    assert result.error_in_exec is not None or result.error_before_exec is not None
    out = capsys.readouterr()
    return (out.out + out.err).strip()


def test_load_ext_does_not_import_the_sdk() -> None:
    code = (
        "import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\nip.run_line_magic('load_ext', 'workbench_magic')\n"
        "print('mcp' in sys.modules, 'pydantic' in sys.modules, 'workbench' in ip.magics_manager.magics['line'], "
        "'use_tool' in ip.magics_manager.magics['cell'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "False", "True", "True"]


def test_status_help_list_and_config(ip: InteractiveShell) -> None:
    status = run(ip, "%workbench")
    assert "config: <dict>" in repr(status) and "t [closed]: test box" in repr(status)
    assert "<b>t</b>" in status._repr_html_()
    overview = repr(run(ip, "%workbench help"))
    assert "%workbench open TOOLBOX" in overview and "%%use_tool" in overview
    assert repr(run(ip, "%workbench help describe")).startswith("%workbench describe TOOLBOX/SERVER/TOOL")
    listed = run(ip, "%workbench list")
    assert [t.name for t in listed] == ["t", "demo2"]
    config = repr(run(ip, "%workbench config"))
    assert "s (stdio):" in config and "testserver.py" in config


def test_open_tools_describe_and_history(ip: InteractiveShell) -> None:
    box = run(ip, "%workbench open t")
    assert box.name == "t" and box.failed == {}
    assert "1/1 servers connected" in box._repr_html_()
    tools = run(ip, "%workbench tools t/s")
    assert isinstance(tools, ToolList) and "t/s/echo" in repr(tools)
    found = run(ip, "%workbench tools --search nested")
    assert [t.name for t in found] == ["nested"]
    described = run(ip, "%workbench describe t/s/nested")
    text = repr(described)
    assert "input schema:" in text and '"$defs"' in text
    cell = described.example_cell()
    assert cell.startswith("%%use_tool t/s/nested\nconfig:")
    # the example cell is a working cell
    ip.user_ns["_example"] = cell
    result = run(ip, cell)
    assert isinstance(result, ToolResult) and not result.is_error
    assert isinstance(run(ip, "%workbench history"), History)


def test_use_tool_cell_yaml_json_and_variables(ip: InteractiveShell) -> None:
    run(ip, "%workbench open t")
    result = run(ip, "%%use_tool t/s/echo\ntext: hello yaml")
    assert result.text == "hello yaml"
    assert ip.user_ns["_"] is result
    assert run(ip, '%%use_tool t/s/add\n{"a": 1, "b": 2.5}').data == {"sum": 3.5}
    import numpy as np
    import pandas as pd

    ip.user_ns.update(n=np.int64(4), values=np.array([1, 2]), frame=pd.DataFrame({"id": [1], "name": ["x"]}))
    assert run(ip, "%%use_tool t/s/add\na: $n\nb: 1").data == {"sum": 5}
    assert run(ip, "%%use_tool t/s/table\nn: $n").to_pandas().shape[0] == 4
    assert run(ip, "%%use_tool t/s/echo\ntext: $$n").text == "$n"
    run(ip, "%%use_tool t/s/echo -o saved\ntext: kept")
    assert ip.user_ns["saved"].text == "kept"
    nested = run(ip, "%%use_tool t/s/nested\nconfig:\n  name: x\n  inner: {label: y}\n  values: $values")
    assert nested.data["values"] == [1, 2]


def test_use_tool_line_magic(ip: InteractiveShell) -> None:
    run(ip, "%workbench open t")
    run(ip, "r = %use_tool t/s/add a=2 b=40")
    assert ip.user_ns["r"].data == {"sum": 42}
    ip.user_ns["word"] = "from python"
    assert run(ip, "%use_tool t/s/echo text=$word").text == "from python"
    assert run(ip, "%use_tool t/s/echo 'text=two words'").text == "two words"


def test_tool_error_shows_result_and_raises_short_error(ip: InteractiveShell, capsys) -> None:
    run(ip, "%workbench open t")
    seen = error_of(ip, "%%use_tool t/s/fail\nmessage: broken on purpose", capsys)
    assert seen.splitlines()[-1] == (
        "ToolError: Error executing tool 'fail' in server 's' (toolbox 't'): broken on purpose"
    )
    assert "ToolResult t/s/fail [error" in seen  # the result is shown before the error
    assert "Traceback" not in seen
    kept = run(ip, "%%use_tool t/s/fail --no-raise\nmessage: keep going")
    assert kept.is_error
    run(ip, "%config Workbench.raise_on_error = False")
    assert run(ip, "%use_tool t/s/fail message=again").is_error
    run(ip, "%config Workbench.raise_on_error = True")


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("%workbench frobnicate", "UsageError: Unknown subcommand 'frobnicate'. Subcommands: status, help,"),
        ("%workbench opn t", "UsageError: Unknown subcommand 'opn'. Did you mean 'open'?"),
        ("%workbench open", "UsageError: %workbench open: the following arguments are required: toolboxes."),
        ("%workbench open nope", "ToolboxNotFoundError: Toolbox 'nope' not found. Available toolboxes: demo2, t"),
        ("%%use_tool /s/echo\ntext: x", "InvalidIdentifierError: Invalid tool identifier: toolbox cannot be empty"),
        ("%%use_tool t/x/echo\ntext: x", "ServerNotFoundError: Server 'x' not found in toolbox 't'"),
        ("%use_tool t/s/nope", "ToolNotFoundError: Tool 'nope' not found in server 's' (toolbox 't')"),
        (
            "%%use_tool t/s/echo\ntext: a\n  bad: indent: here",
            "UsageError: Invalid YAML in the %%use_tool body, line 2 column",
        ),
        ('%%use_tool t/s/echo\n{"text": }', "UsageError: Invalid JSON in the %%use_tool body, line 1 column 10"),
        ("%%use_tool t/s/echo\n- a\n- b", "UsageError: The %%use_tool body must be a mapping"),
        ("%%use_tool t/s/echo\ntext: $undefined_thing", "UsageError: Unknown variable $undefined_thing"),
        (
            "%%use_tool t/s/add\na: one\nb: 2",
            "ArgumentError: Invalid arguments for tool 'add' in server 's' (toolbox 't'): argument 'a': 'one' is not",
        ),
        ("%use_tool t/s/echo justaword", "UsageError: Expected key=value, got 'justaword'"),
        ("%%use_tool t/s/echo --timeout soon\ntext: x", "UsageError: %%use_tool: argument --timeout: invalid float"),
    ],
)
def test_user_mistakes_give_one_clear_line(ip: InteractiveShell, capsys, cell: str, expected: str) -> None:
    run(ip, "%workbench open t")
    seen = error_of(ip, cell, capsys)
    assert len(seen.splitlines()) == 1, seen
    assert seen.startswith(expected), seen


def test_timeout_option(ip: InteractiveShell, capsys) -> None:
    run(ip, "%workbench open t")
    seen = error_of(ip, "%%use_tool t/s/sleep --timeout 0.5\nseconds: 30", capsys)
    assert seen == (
        "CallTimeoutError: Error executing tool 'sleep' in server 's' (toolbox 't'): "
        "timed out after 0.5 s (cancelled on the server)"
    )
    assert run(ip, "%use_tool t/s/echo text=alive").text == "alive"


def test_progress_updates_one_display(ip: InteractiveShell, monkeypatch) -> None:
    run(ip, "%workbench open t")
    displayed: list[tuple[str, bool]] = []
    updates: list[tuple[int, str]] = []
    import IPython.display as display_module

    class Handle:
        def update(self, obj: Any) -> None:
            updates.append((id(self), repr(obj)))

    handles: list[Handle] = []

    def fake_display(obj: Any, display_id: bool = False, **_: Any) -> Handle | None:
        displayed.append((repr(obj), display_id))
        if not display_id:
            return None
        handles.append(Handle())
        return handles[-1]

    monkeypatch.setattr(display_module, "display", fake_display)
    result = run(ip, "%%use_tool t/s/slow\nsteps: 3\ndelay: 0.01")
    assert result.text == "done 3 steps"
    # one display with an id, then that same display updated in place for each later step
    assert displayed == [("t/s/slow: 1/3 (33%) step 1/3", True)]
    assert len(handles) == 1
    assert updates == [
        (id(handles[0]), "t/s/slow: 2/3 (67%) step 2/3"),
        (id(handles[0]), "t/s/slow: 3/3 (100%) step 3/3"),
    ]


def test_resources_prompts_reconnect_logs(ip: InteractiveShell) -> None:
    run(ip, "%workbench open t")
    assert "test://hello" in repr(run(ip, "%workbench resources t"))
    assert run(ip, "%workbench read t/s test://hello").text == "hello"
    assert "t/s/greet" in repr(run(ip, "%workbench prompts"))
    assert "Ada" in run(ip, "%workbench prompt t/s/greet name=Ada").text
    run(ip, "%use_tool t/s/stderr text=written-to-stderr")
    assert "written-to-stderr" in repr(run(ip, "%workbench logs t/s"))
    assert run(ip, "%workbench reconnect t/s").servers["s"].status == "connected"


def test_config_magic_lists_and_sets_traits(ip: InteractiveShell, capsys) -> None:
    capsys.readouterr()
    ip.run_cell("%config Workbench")
    listing = capsys.readouterr().out
    for trait in ("timeout", "raise_on_error", "config_path", "display_limit", "connect_timeout"):
        assert f"Workbench.{trait}" in listing
    run(ip, "%config Workbench.timeout = 12.5")
    assert Workbench.shared().timeout == 12.5


def test_history_bytes_is_set_with_config(ip: InteractiveShell, capsys) -> None:
    capsys.readouterr()
    ip.run_cell("%config Workbench")
    assert "Workbench.history_bytes" in capsys.readouterr().out
    run(ip, "%config Workbench.history_bytes = 10")
    wb = Workbench.shared()
    assert wb.history_bytes == 10
    run(ip, "%use_tool t/s/echo text=long-enough-to-pass-ten-bytes")
    (record,) = wb.history
    assert record.answer is None and record.answer_dropped and record.ok


def test_completion(ip: InteractiveShell) -> None:
    from IPython.core.completer import provisionalcompleter

    run(ip, "%workbench open t")

    def complete(text: str) -> list[str]:
        with provisionalcompleter():
            return [c.text for c in ip.Completer.completions(text, len(text))]

    assert complete("%workbench op") == ["open"]
    assert complete("%workbench help desc") == ["describe"]
    assert set(complete("%workbench open ")) == {"t", "demo2"}
    assert set(complete("%workbench close ")) == {"t", "demo2", "--all"}
    assert set(complete("%workbench logs ")) == {"t/s"}
    assert complete("%%use_tool t/s/ec") == ["t/s/echo"]
    assert "t/s/echo" not in complete("%describe_not_ours t/s/ec")
    assert "t/s/" in complete("%use_tool t/")
    assert complete("%use_tool t/s/echo te") == ["text="]
    assert complete("%%use_tool t/s/add\nb: 1\n") == ["a: ", "b: "]
    assert complete("%%use_tool t/s/add\nb: 1\na") == ["a: "]
    assert "a: " not in complete("%%use_tool t/s/add\nb: 1\n  a")  # nested levels are not arguments


def test_unload_closes_every_connection(make_workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    before = children()
    shell.run_line_magic("load_ext", "workbench_magic")
    shell.run_line_magic("workbench", "open t")
    assert len(children() - before) == 1
    shell.run_line_magic("unload_ext", "workbench_magic")
    assert children() - before == set()
    assert "workbench" not in shell.magics_manager.magics["line"]
    assert wb not in shell.configurables


def test_top_level_await_and_magics_together(ip: InteractiveShell) -> None:
    run(ip, "%workbench open t")
    ip.run_cell("from workbench_magic import Workbench\nwb = Workbench.shared()")
    result = ip.run_cell("r = await wb.acall('t/s/echo', {'text': 'awaited'})")
    assert result.error_in_exec is None
    assert ip.user_ns["r"].text == "awaited"
    assert run(ip, "%use_tool t/s/echo text=after").text == "after"


def test_open_with_no_server_connected_is_one_line(make_workbench, monkeypatch, capsys) -> None:
    wb = make_workbench(
        {"toolboxes": {"dead": toolbox({"x": {"command": "/nonexistent/mcp-x"}}), "empty": toolbox({})}}
    )
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        seen = error_of(shell, "%workbench open dead", capsys)
        assert seen == (
            "ConnectError: Failed to open toolbox 'dead': no server connected "
            "(server 'x': command not found: /nonexistent/mcp-x)"
        )
        assert run(shell, "%workbench open empty").tools == []  # nothing configured, nothing failed
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")


def test_server_warnings_show_on_the_progress_line_and_tab_completes_values(make_workbench, monkeypatch) -> None:
    from conftest import python_server

    server = python_server("clientserver.py")
    wb = make_workbench({"toolboxes": {"c": toolbox({"cs": server})}})
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        run(shell, "%workbench open c")
        import IPython.display as display_module

        shown: list[str] = []

        class Handle:
            def update(self, obj: Any) -> None:
                shown.append(repr(obj))

        def fake_display(obj: Any, display_id: bool = False, **_: Any) -> Any:
            shown.append(repr(obj))
            return Handle() if display_id else None

        monkeypatch.setattr(display_module, "display", fake_display)
        assert run(shell, "%%use_tool c/cs/log_at\nmessage: careful").text == "logged"
        assert shown == ["c/cs warning: careful", "c/cs error: careful"]
        monkeypatch.undo()
        monkeypatch.setattr(Workbench, "_shared", wb)
        from IPython.core.completer import provisionalcompleter

        def complete(text: str) -> list[str]:
            with provisionalcompleter():
                return [c.text for c in shell.Completer.completions(text, len(text))]

        assert complete("%workbench prompt c/cs/greet ") == ["language=", "name="]
        # IPython's token is the text after "=": the completion replaces it
        assert sorted(complete("%workbench prompt c/cs/greet language=es")) == ["esperanto", "estonian"]
        assert "city://{country}/{city}" in complete("%workbench read c/cs ")
        assert sorted(complete("%workbench read c/cs city://{country}/{city} ")) == ["city=", "country="]
        assert sorted(complete("%workbench read c/cs city://{country}/{city} country=fi")) == ["fiji", "finland"]
        line = "%workbench read c/cs city://{country}/{city} country=finland city="
        assert sorted(complete(line)) == ["espoo", "helsinki"]
        assert run(shell, "%workbench read c/cs city://{country}/{city} country=france city=paris").text == (
            "paris, france"
        )
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")


def test_workbench_add_serves_a_notebook_server(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    run(
        ip,
        "from mcp.server import MCPServer\n"
        "srv = MCPServer('nb')\n"
        "@srv.tool()\n"
        "def double(x: int) -> int:\n"
        "    '''Twice x.'''\n"
        "    return 2 * x\n",
    )
    explored = run(ip, "%workbench add nb/calc srv")
    assert explored.name == "nb"
    assert run(ip, "%use_tool nb/calc/double x=21").data == {"result": 42}
    run(ip, "srv = MCPServer('nb')\n@srv.tool()\ndef double(x: int) -> int:\n    return 3 * x\n")
    run(ip, "%workbench add nb/calc srv")  # the cell re-run: replaced
    assert run(ip, "%use_tool nb/calc/double x=2").data == {"result": 6}
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        offered = [c.text for c in ip.Completer.completions("%workbench add nb/calc s", 24)]
    assert offered == ["srv"]
    assert (
        error_of(ip, "%workbench add nb/calc nothing_here", capsys)
        .strip()
        .endswith("Name 'nothing_here' is not defined. Define the server in a cell first")
    )


def test_workbench_trace_on_show_and_off(ip: InteractiveShell) -> None:
    assert "No trace yet" in str(run(ip, "%workbench trace"))
    assert "Tracing t/s" in str(run(ip, "%workbench trace on t/s"))
    run(ip, "%use_tool t/s/echo text=traced")
    shown = run(ip, "%workbench trace")
    assert shown.recording and any(m.message.get("method") == "tools/call" for m in shown.messages)
    stopped = run(ip, "%workbench trace off")
    assert stopped is shown and not stopped.recording
    run(ip, "%use_tool t/s/echo text=untraced")
    assert "untraced" not in repr(run(ip, "%workbench trace").messages)
    assert "No trace is recording" in str(run(ip, "%workbench trace off"))
    with pytest.raises(UsageError, match=r"invalid choice: 't/s' \(choose from 'on', 'off'\)"):
        run(ip, "%workbench trace t/s")


def test_workbench_export_py_writes_tests(
    ip: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(ip, "%use_tool t/s/echo text=hi")
    run(ip, "%use_tool t/s/add a=1 b=2")
    target = tmp_path / "tests" / "test_session.py"
    with pytest.warns(UserWarning) as warned:  # the config is a dict; echo and add answer no 'at'
        said = run(ip, f"%workbench export {target} --ignore $.at")
    assert [str(w.message).split(" (")[0] for w in warned] == [
        "The session's config is not a file",
        "ignore: '$.at' matches nothing in the answers exported, so it leaves nothing out",
    ]
    assert f"Exported the session's calls as tests to {target} (run: pytest {target})" in repr(said)
    text = target.read_text()
    assert "def test_01_s_echo(wb: Workbench)" in text and "def test_02_s_add(wb: Workbench)" in text
    assert 'wb.call("t/s/add", {"a": 1, "b": 2})' in text and "def test_schema_s_add" in text
    wrong = error_of(ip, f"%workbench export {tmp_path / 'session.ipynb'} --ignore $.at", capsys)
    assert "--replay and --ignore are for tests" in wrong and not (tmp_path / "session.ipynb").exists()


def test_workbench_open_lazy_and_eager(make_workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        run(shell, "%workbench open t --lazy")  # no catalog yet: it starts, and its catalog is cached
        assert wait_until(lambda: any(wb._core.catalogs.directory.glob("*.json")), 10)
        run(shell, "%workbench close t")
        run(shell, "%workbench open t --lazy")
        assert wb.status()["t"]["s"].status == "idle"
        status = repr(run(shell, "%workbench status"))
        assert "idle" in status and "not started" in status
        run(shell, "%workbench close t")
        run(shell, "%workbench open t --eager")
        assert wb.status()["t"]["s"].status == "connected"
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")


# ---- `#` starts a comment outside quotes (issue 53) ----------------------------------------------
@pytest.mark.parametrize(
    ("cell", "check"),
    [
        ("%workbench open t   # the explorer: browse, fill a form, call", lambda r: r.name == "t"),
        ("%workbench   # what is open", lambda r: "t [open]" in repr(r)),
        ("%workbench help describe  # what's this?", lambda r: repr(r).startswith("%workbench describe")),
        ("%workbench tools t/s # no closing quote's fine", lambda r: "t/s/echo" in repr(r)),
        ("%workbench tools --search nested # `search` words", lambda r: [t.name for t in r] == ["nested"]),
        ("%workbench describe t/s/echo #tight", lambda r: "t/s/echo" in repr(r)),
        ("%workbench history #", lambda r: isinstance(r, History)),
        ("%use_tool t/s/echo text=hi   # says hi", lambda r: r.text == "hi"),
        ("%use_tool t/s/add a=2 b=40 # a + b = 42", lambda r: r.data == {"sum": 42}),
        ('%use_tool t/s/echo text="a # b"  # the first # is text', lambda r: r.text == "a # b"),
        ("%use_tool t/s/echo 'text=a # b'", lambda r: r.text == "a # b"),
        ('%use_tool t/s/echo text="it\'s" # "quoted"', lambda r: r.text == "it's"),
        ("%use_tool t/s/echo text=a\\ #b", lambda r: r.text == "a #b"),  # an escaped space: # is mid-word
        ("%use_tool t/s/echo text=\\#b # comment", lambda r: r.text == "#b"),
        ("%use_tool t/s/echo text=a#b", lambda r: r.text == "a#b"),  # mid-word, as in a shell
        ("%use_tool t/s/echo text=http://x/#top  # a URL's fragment", lambda r: r.text == "http://x/#top"),
        ("%%use_tool t/s/echo   # first line of a cell magic\ntext: hello # YAML's own comment", None),
        ("%%use_tool t/s/echo -o saved # keep it\ntext: kept", lambda r: r.text == "kept"),
        ('%%use_tool t/s/echo\ntext: "# in the body is YAML\'s"', lambda r: r.text == "# in the body is YAML's"),
        ("r = %use_tool t/s/add a=1 b=1  # assigned", lambda r: r is None),
    ],
)
def test_a_hash_outside_quotes_starts_a_comment(ip: InteractiveShell, cell: str, check: Any) -> None:
    run(ip, "%workbench open t")
    result = run(ip, cell)
    if check is None:
        assert result.text == "hello"
    else:
        assert check(result), result
    if cell.startswith("%%use_tool t/s/echo -o"):
        assert ip.user_ns["saved"].text == "kept"
    if cell.startswith("r ="):
        assert ip.user_ns["r"].data == {"sum": 2}


def test_a_comment_after_chat_and_trace_lines(ip: InteractiveShell) -> None:
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    async def stream(messages: list[Any], info: AgentInfo) -> Any:
        yield "hello back"

    ip.user_ns["m"] = FunctionModel(stream_function=stream)
    run(ip, "%workbench open t")
    turn = run(ip, "%%chat t --model $m   # a scripted model, no key\nhello")
    assert turn.text == "hello back"
    assert run(ip, "%chat reset  # start over") is None
    assert "Tracing t/s" in str(
        run(ip, "%workbench trace on t/s   # record from now on (a new `on` replaces the last)")
    )
    assert not run(ip, "%workbench trace off                # stop").recording
    assert not run(ip, "%workbench trace                    # show the session's trace").recording


def test_a_comment_hides_nothing_that_is_quoted(ip: InteractiveShell, capsys) -> None:
    run(ip, "%workbench open t")
    # an unclosed quote is still an error, a # in it notwithstanding
    seen = error_of(ip, "%use_tool t/s/echo 'text=a # b", capsys)
    assert seen == "UsageError: Cannot parse the magic's arguments: No closing quotation", seen
    # a comment ends the arguments: what follows it is not one
    seen = error_of(ip, "%workbench open # t", capsys)
    assert seen.startswith("UsageError: %workbench open: the following arguments are required: toolboxes."), seen
    # no completion inside a comment
    from IPython.core.completer import provisionalcompleter

    def complete(text: str) -> list[str]:
        with provisionalcompleter():
            return [c.text for c in ip.Completer.completions(text, len(text))]

    assert "demo2" in complete("%workbench open t ")
    assert "demo2" not in complete("%workbench open t # ")
    assert complete("%%use_tool t/s/add  # two numbers\nb: 1\n") == ["a: ", "b: "]


@settings(max_examples=200, deadline=None, database=None)
@given(words=st.lists(st.text(alphabet=st.characters(exclude_categories=["Cs", "Cc"]), min_size=1)), comment=st.text())
def test_quoted_words_and_a_comment_split_back_into_the_words(words: list[str], comment: str) -> None:
    import shlex

    from workbench_magic.notebook.subcommands import split_line

    line = " ".join(shlex.quote(w) for w in words)
    assert split_line(line) == words
    assert split_line(f"{line}  #{comment}".strip()) == words


DOC_PAGES = ("README.md", "docs/how-to/explorer.md", "docs/how-to/traces.md", "docs/how-to/record-replay-export.md")


def commented_magic_lines(page: str) -> list[str]:
    """The magic lines with a trailing comment in the Python blocks of a page, in order."""
    lines: list[str] = []
    block = False
    for line in (ROOT / page).read_text().splitlines():
        if line.startswith("```"):
            block = line.strip() in ("```python", "```ipython")
            continue
        if block and line.startswith("%") and " #" in line:
            lines.append(line)
    return lines


@pytest.fixture
def demo_ip(make_workbench, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    """The magics over the demo toolbox (its servers in-process)."""
    demo = {name: {"python": f"workbench_magic.demo:{name}_server"} for name in ("datasets", "notes")}
    yield from shell_of(make_workbench({"toolboxes": {"demo": toolbox(demo)}}), monkeypatch)


def test_the_documented_lines_with_comments_run(
    demo_ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    documented = {page: commented_magic_lines(page) for page in DOC_PAGES}
    assert all(documented.values()), documented  # each page still shows the form
    monkeypatch.chdir(tmp_path)
    run(demo_ip, "%workbench record cassettes/session.json")  # what the replay line replays
    run(demo_ip, "%%use_tool demo/datasets/describe_dataset\nname: sales")
    run(demo_ip, "%workbench record stop")
    for page, lines in documented.items():
        for line in lines:
            result = demo_ip.run_cell(line)
            assert result.success, (page, line, result.error_in_exec or result.error_before_exec)
    assert Workbench.shared().replays
    assert run(demo_ip, "%use_tool demo/datasets/describe_dataset name=sales").replayed


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "cases:\n  - prompt: a\n    expect_text: [b\n",
            "line 4 column 1: expected ',' or ']', but got '<stream end>'",
        ),
        (
            "cases:\n  - prompt: a\n   bad: x\n",
            "line 3 column 4: expected <block end>, but found '<block mapping start>'",
        ),
        ('cases:\n  - prompt: "a\n', "line 3 column 1: found unexpected end of stream"),
        ("cases:\n  - {prompt: a, on: 2024-02-30}\n", "day is out of range for month"),
    ],
)
def test_yaml_errors_of_evaluate_read_as_those_of_use_tool(
    ip: InteractiveShell, capsys, tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(text)
    seen = error_of(ip, f"%workbench evaluate {path}", capsys)
    where = ", " if problem.startswith("line") else ": "
    assert seen == f"UsageError: Invalid YAML in {path}{where}{problem}", seen
    body = error_of(ip, f"%%use_tool t/s/echo\n{text}", capsys)  # the same words, the same problem
    assert body == f"UsageError: Invalid YAML in the %%use_tool body{where}{problem}", body


def test_rst_literals_of_descriptions_show_as_code(demo_ip: InteractiveShell) -> None:
    run(demo_ip, "%workbench open demo")
    tools = run(demo_ip, "%workbench tools demo/datasets")
    assert "filter with `where`, sort with `order_by`" in repr(tools) and "``" not in repr(tools)
    assert "filter with <code>where</code>, sort with <code>order_by</code>" in tools._repr_html_()
    described = run(demo_ip, "%workbench describe demo/datasets/query")
    text = described.text()
    assert "Select rows of a dataset: filter with `where`, sort with `order_by`, keep `columns`." in text
    assert "``" not in text.split("input schema:")[0]
    html = described._repr_html_()
    assert "keep <code>columns</code>." in html and "``" not in html.split("input schema")[0]
