"""From exploration to regression tests: `wb.export_tests(path)` writes a session's tool calls as
a pytest file, and `wb.snapshot(toolbox)` records what a toolbox offers (vocabulary/surface.py
compares two).

The file is plain pytest: a module fixture opens the toolboxes the calls used (the config found as
the workbench finds it, or a cassette), one test per call sends the same arguments and asserts the
same outcome, and one test per tool checks that its input schema still accepts what it accepted
(`workbench_magic.testing.schema_breaks`). It is laid out as `ruff format` lays it out
(vocabulary/pysource.py).
"""

from __future__ import annotations

import keyword
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.vocabulary.errors import UsageError, WorkbenchError
from workbench_magic.vocabulary.jsonpath import parse, without
from workbench_magic.vocabulary.listings import IDLE, CallRecord, ToolAnswer
from workbench_magic.vocabulary.pysource import assert_equal, call, literal, string, width
from workbench_magic.vocabulary.surface import Snapshot

if TYPE_CHECKING:
    from workbench_magic.api.toolboxes import OpenedToolbox
    from workbench_magic.vocabulary.listings import History, PromptInfo, ResourceInfo, ToolInfo, ToolList


class Session(Protocol):
    """What the export and the snapshot read of a `Workbench` (named here without importing it)."""

    @property
    def history(self) -> History: ...

    @property
    def notebook_servers(self) -> frozenset[tuple[str, str]]: ...

    def is_open(self, name: str) -> bool: ...

    def open(self, name: str, *, lazy: bool | None = None) -> OpenedToolbox[Any]: ...

    def reconnect(self, target: str) -> OpenedToolbox[Any]: ...

    def opened(self, name: str) -> OpenedToolbox[Any]: ...

    def tool(self, identifier: Any) -> ToolInfo: ...

    def tools(self, target: str | None = None) -> ToolList: ...

    def resources(self, target: str | None = None) -> list[ResourceInfo]: ...

    def prompts(self, target: str | None = None) -> list[PromptInfo]: ...


_NAME_ROOM = 48
"""Longest test name: `def NAME(wb: Workbench) -> None:` stays within the line length."""


def export_tests(
    workbench: Session,
    path: str | os.PathLike[str],
    *,
    replay: str | os.PathLike[str] | None = None,
    calls: Iterable[CallRecord | int] | None = None,
    ignore: Iterable[str] = (),
) -> str:
    """Write the tool calls of `workbench`'s history (or `calls`: records or history indices) as a
    pytest file at `path`; returns the path."""
    target = Path(path)
    if target.suffix != ".py":
        raise UsageError(f"export_tests writes a Python file: give a path ending in .py, not {os.fspath(path)!r}")
    paths = tuple(ignore)
    for item in paths:
        parse(item)  # a bad path fails now, with its one line
    history = workbench.history
    chosen = _chosen(history, calls)
    tools = [r for r in chosen if r.kind == "tool"]
    kept = [r for r in tools if isinstance(r.answer, ToolAnswer)]
    if not kept:
        raise UsageError("No tool call to export: call a tool first (calls that raised are not exported)")
    cassette = None
    if replay is not None:
        if not Path(replay).is_file():
            raise UsageError(f"No cassette at {os.fspath(replay)!r}: record one with wb.record(path) first")
        cassette = _relative(Path(replay), target)
    else:
        added = [f"{r.identifier.toolbox}/{r.identifier.server}" for r in kept if _added(workbench, r)]
        if added:
            raise UsageError(
                f"{added[0]} was added from the notebook, so a test cannot start it: export with replay= a cassette "
                "recorded during the calls (wb.record(path)), or put the server in a config file"
            )
    text = _module(workbench, kept, len(tools) - len(kept), cassette, paths)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return os.fspath(path)


def snapshot(workbench: Session, toolbox: str) -> Snapshot:
    """What `toolbox` offers now, per server: its info, tools, resources, templates and prompts
    (a lazy server is started: a cached catalog may be stale)."""
    box = workbench.open(toolbox, lazy=False) if not workbench.is_open(toolbox) else workbench.opened(toolbox)
    for name, status in box.servers.items():
        if status.status == IDLE:
            workbench.reconnect(f"{toolbox}/{name}")
    servers: dict[str, Any] = {}
    for name, status in workbench.opened(toolbox).servers.items():
        if not status.connected:
            raise WorkbenchError(f"Cannot snapshot {toolbox}: server {name!r} is {status.status} ({status.error})")
        info = status.server_info
        if info and info.endswith(" (replayed)"):
            info = info[: -len(" (replayed)")]
        target = f"{toolbox}/{name}"
        tools = {
            tool.name: {
                "title": tool.title,
                "description": tool.description,
                "inputSchema": tool.input_schema,
                "outputSchema": tool.output_schema,
                "annotations": tool.annotations,
            }
            for tool in workbench.tools(target)
        }
        resources: dict[str, Any] = {}
        templates: dict[str, Any] = {}
        for resource in workbench.resources(target):
            entry = {"name": resource.name, "description": resource.description, "mimeType": resource.mime_type}
            (templates if resource.template else resources)[resource.uri] = entry
        prompts = {
            prompt.name: {
                "description": prompt.description,
                "arguments": [
                    {"name": arg, "required": required, "description": description}
                    for arg, required, description in prompt.arguments
                ],
            }
            for prompt in workbench.prompts(target)
        }
        servers[name] = {
            "server": info,
            "tools": tools,
            "resources": resources,
            "resourceTemplates": templates,
            "prompts": prompts,
        }
    return Snapshot({"toolbox": toolbox, "servers": servers})


# ---- the file ---------------------------------------------------------------------------------
def _chosen(history: list[CallRecord], calls: Iterable[CallRecord | int] | None) -> list[CallRecord]:
    if calls is None:
        return list(history)
    chosen = []
    for item in calls:
        if isinstance(item, CallRecord):
            chosen.append(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            try:
                chosen.append(history[item])
            except IndexError:
                raise UsageError(f"calls: the history has {len(history)} entries, no index {item}") from None
        else:
            raise UsageError(f"calls takes history records or their indices, not {type(item).__name__}")
    return chosen


def _added(workbench: Session, record: CallRecord) -> bool:
    return (record.identifier.toolbox, record.identifier.server) in workbench.notebook_servers


def _relative(path: Path, module: Path) -> str:
    """`path` as the test module finds it from its own folder: relative when they share a folder
    below the root, else absolute."""
    target, folder = path.resolve(), module.resolve().parent
    try:
        shared = os.path.commonpath([target, folder])
    except ValueError:  # another drive on Windows
        return target.as_posix()
    if Path(shared).parent == Path(shared):  # only the root in common
        return target.as_posix()
    return Path(os.path.relpath(target, folder)).as_posix()


def _module(
    workbench: Session, records: list[CallRecord], raised: int, cassette: str | None, ignore: tuple[str, ...]
) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    toolboxes = list(dict.fromkeys(r.identifier.toolbox for r in records))
    tools = list(dict.fromkeys(str(r.identifier) for r in records))
    left = ""
    if raised:
        calls = "1 call" if raised == 1 else f"{raised} calls"
        left = f"\n{calls} that raised (no result to expect) left out."
    where = (
        "The calls replay from the cassette, so the tests need no server and no secret."
        if cassette
        else "The servers start from the config found as the workbench finds it ($WORKBENCH_CONFIG,\n"
        "./workbench-config.json, then the embedded default)."
    )
    doc = (
        f'"""Regression tests exported by workbench_magic on {stamp}.\n\n'
        f"Each test_NN repeats a call of the session, in the order they ran, and expects what it\n"
        f"returned then; each test_schema_* checks that a tool still accepts what it accepted.\n"
        f"{where}{left}\n"
        f'"""'
    )
    names: set[str] = set()
    tests = [_call_test(number, record, ignore, names) for number, record in enumerate(records, 1)]
    for tool in tools:
        try:
            schema = workbench.tool(tool).input_schema
        except WorkbenchError:  # gone since: nothing to hold it to
            continue
        tests.append(_schema_test(tool, schema, names))
    ignoring = any("without(" in test for test in tests)
    imports = ["from __future__ import annotations", "", "from collections.abc import Iterator"]
    if cassette:
        imports.append("from pathlib import Path")
    imports += ["", "import pytest", "", "from workbench_magic import Workbench"]
    helpers = ["schema_breaks", *(["without"] if ignoring else [])]
    imports.append(f"from workbench_magic.testing import {', '.join(helpers)}")
    head = doc + "\n\n" + "\n".join(imports)
    constants = []
    if cassette:
        constants.append(f"CASSETTE = Path(__file__).parent / {string(cassette)}")
    if ignoring:
        assign = "IGNORE = "
        comment = "# values that change from run to run, left out of the comparisons\n"
        constants.append(comment + assign + literal(ignore, before=width(assign)))
    if constants:
        head += "\n\n" + "\n".join(constants)
    parts = [head, _fixture(toolboxes, cassette), *tests]
    return "\n\n\n".join(parts) + "\n"


def _fixture(toolboxes: list[str], cassette: str | None) -> str:
    made = "Workbench(replay=CASSETTE)" if cassette else "Workbench()"
    said = "answered from the cassette" if cassette else "from the config"
    lines = [
        '@pytest.fixture(scope="module")',
        "def wb() -> Iterator[Workbench]:",
        f'    """The toolboxes the calls used, {said}."""',
        f"    workbench = {made}",
    ]
    for toolbox in toolboxes:
        lines.append(f"    workbench.open({string(toolbox)})")
    lines += ["    yield workbench", "    workbench.close_all()"]
    return "\n".join(lines)


def _test_name(stem: str, names: set[str]) -> str:
    name = re.sub(r"\W+", "_", stem).strip("_").lower()[:_NAME_ROOM].rstrip("_")
    if keyword.iskeyword(name):
        name += "_"
    unique, n = name, 2
    while unique in names:
        unique, n = f"{name}_{n}", n + 1
    names.add(unique)
    return unique


def _call_test(number: int, record: CallRecord, ignore: tuple[str, ...], names: set[str]) -> str:
    ident = record.identifier
    name = _test_name(f"test_{number:02d}_{ident.server}_{ident.name}", names)
    answer: ToolAnswer = record.answer
    arguments = [str(ident), *([record.arguments] if record.arguments else [])]
    lines = [f"def {name}(wb: Workbench) -> None:", call("result", "wb.call", arguments)]
    if answer.is_error:
        lines.append('    assert result.is_error, "expected a tool error"')
    else:
        lines.append("    assert not result.is_error, result.text")
    structured = answer.structured_content
    if structured is not None:
        kept = without(structured, ignore)
        if kept != structured:
            lines.append(assert_equal("without(result.structured_content, IGNORE)", kept))
        else:
            lines.append(assert_equal("result.structured_content", structured))
    else:
        lines.append(assert_equal("result.text", answer.text))
    return "\n".join(lines)


def _schema_test(tool: str, schema: dict[str, Any], names: set[str]) -> str:
    parts = tool.split("/")
    name = _test_name(f"test_schema_{parts[1]}_{'_'.join(parts[2:])}", names)
    head = "    accepted = "
    return "\n".join(
        [
            f"def {name}(wb: Workbench) -> None:",
            head + literal(schema, indent=1, before=width(head)),
            call("tool", "wb.tool", [tool]),
            "    breaks = schema_breaks(accepted, tool.input_schema)",
            '    assert breaks == [], f"{tool.path} no longer accepts what it accepted"',
        ]
    )


__all__ = ["Session", "export_tests", "snapshot"]
