"""From exploration to regression tests: `wb.export_tests(path)` writes a session's tool calls as
a pytest file, and `wb.snapshot(toolbox)` records what a toolbox offers (engine/rules/surface.py
compares two).

The file is plain pytest: a module fixture opens the toolboxes the calls used (from the session's
config file, written relative to the test file; a cassette, with no config at all, so nothing in
the environment matters; or, for the embedded default or a config not read from a file, the config
found as the workbench finds it), one test per call sends the same arguments and asserts the same
outcome, and one test per tool checks that its input schema still accepts what it accepted
(`workbench_magic.testing.schema_breaks`). It is laid out as `ruff format` lays it out
(vocabulary/pysource.py).

`ignore` paths apply to structured content, and to text that is JSON when there is none; inside
either, to each string that is JSON text too (a tool annotated `-> str` returning JSON answers
`{"result": "<the text>"}`: `$.id` names the text's `id`, vocabulary/jsonpath.py). A path that leaves
nothing out of any exported answer is reported (a `UserWarning`): it is most likely a typo.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.engine.rules.surface import Snapshot
from workbench_magic.vocabulary.errors import UsageError, WorkbenchError
from workbench_magic.vocabulary.jsonpath import parse, without
from workbench_magic.vocabulary.listings import IDLE, CallRecord, ToolAnswer
from workbench_magic.vocabulary.pysource import (
    assert_equal,
    call,
    literal,
    path_constant,
    path_from_module,
    string,
    unique_test_name,
    width,
)

if TYPE_CHECKING:
    from workbench_magic.api.toolboxes.handles import OpenedToolbox
    from workbench_magic.vocabulary.listings import History, PromptInfo, ResourceInfo, ToolInfo, ToolList


class Session(Protocol):
    """What the export and the snapshot read of a `Workbench` (named here without importing it)."""

    @property
    def history(self) -> History: ...

    @property
    def config_source(self) -> str: ...

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


_NO_CONFIG = '{"toolboxes": {}}'
"""The config of a replayed export: the cassette knows the toolboxes, so none is read."""


def _not_a_file(source: str) -> str:
    return (
        f"The session's config is not a file ({source}), so the tests open the config found as the workbench finds "
        "it ($WORKBENCH_CONFIG, ./workbench-config.json, the embedded default): load the config from a file "
        "(Workbench(path)) for the tests to open it, or export with replay= a cassette"
    )


def _matches_nothing(path: str) -> str:
    return f"ignore: {path!r} matches nothing in the answers exported, so it leaves nothing out"


def export_tests(
    workbench: Session,
    path: str | os.PathLike[str],
    *,
    replay: str | os.PathLike[str] | None = None,
    calls: Iterable[CallRecord | int] | None = None,
    ignore: Iterable[str] = (),
) -> str:
    """Write the tool calls of `workbench`'s history (or `calls`: records or history indices) as a
    pytest file at `path`; returns the path.

    Warns (`UserWarning`, the file is written all the same) when the tests cannot open the session's
    config (it is not a file) and when an `ignore` path leaves nothing out of any answer.
    """
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
    cassette = config = None
    if replay is not None:
        if not Path(replay).is_file():
            raise UsageError(f"No cassette at {os.fspath(replay)!r}: record one with wb.record(path) first")
        cassette = path_from_module(Path(replay), target)
    else:
        added = [f"{r.identifier.toolbox}/{r.identifier.server}" for r in kept if _added(workbench, r)]
        if added:
            raise UsageError(
                f"{added[0]} was added from the notebook, so a test cannot start it: export with replay= a cassette "
                "recorded during the calls (wb.record(path)), or put the server in a config file"
            )
        config = _config_file(workbench.config_source, target)
    for item in _unmatched(kept, paths):
        warnings.warn(_matches_nothing(item), UserWarning, stacklevel=3)
    dropped = sum(1 for r in tools if r.answer_dropped)
    text = _module(workbench, kept, len(tools) - len(kept) - dropped, dropped, cassette, config, paths)
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


def _config_file(source: str, module: Path) -> str | None:
    """The session's config file as the test module finds it (`path_from_module`); None when the tests
    discover the config: the session's is the embedded default (they find it too, unless told
    otherwise), or not a file (a warning says so)."""
    from workbench_magic.config.defaults import EMBEDDED_SOURCE

    if source == EMBEDDED_SOURCE:
        return None
    # A relative source is relative to the folder the session loaded it from: this one, as a rule.
    path = Path(source).expanduser()
    if not path.is_file():
        warnings.warn(_not_a_file(source), UserWarning, stacklevel=4)
        return None
    return path_from_module(path, module)


def _compared(answer: ToolAnswer) -> Any:
    """What `ignore` paths apply to: the structured content, else the text when it is a JSON
    object or array (None: neither)."""
    if answer.structured_content is not None:
        return answer.structured_content
    try:
        parsed = json.loads(answer.text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) else None


def _unmatched(records: list[CallRecord], paths: tuple[str, ...]) -> list[str]:
    """The `ignore` paths that leave nothing out of any record's answer."""
    values = [value for r in records if (value := _compared(r.answer)) is not None]
    return [path for path in paths if all(without(value, [path]) == value for value in values)]


def _module(
    workbench: Session,
    records: list[CallRecord],
    raised: int,
    dropped: int,
    cassette: str | None,
    config: str | None,
    ignore: tuple[str, ...],
) -> str:
    toolboxes = list(dict.fromkeys(r.identifier.toolbox for r in records))
    tools = list(dict.fromkeys(str(r.identifier) for r in records))
    names: set[str] = set()
    compared = [_expected(record.answer, ignore) for record in records]
    tests = [
        _call_test(number, record, expected, names)
        for number, (record, expected) in enumerate(zip(records, compared, strict=True), 1)
    ]
    for tool in tools:
        try:
            schema = workbench.tool(tool).input_schema
        except WorkbenchError:  # gone since: nothing to hold it to
            continue
        tests.append(_schema_test(tool, schema, names))
    ignoring = any(actual.startswith("without(") for actual, _ in compared)
    parsing = any("json.loads(" in actual for actual, _ in compared)
    head = _docstring(raised, dropped, cassette, config) + "\n\n" + _imports(ignoring, parsing, cassette or config)
    constants = _constants(cassette, config, ignore if ignoring else None)
    if constants:
        head += "\n\n" + "\n".join(constants)
    parts = [head, _fixture(toolboxes, cassette, config), *tests]
    return "\n\n\n".join(parts) + "\n"


def _docstring(raised: int, dropped: int, cassette: str | None, config: str | None) -> str:
    """The test module's docstring: when it was exported, what it checks, where its servers come
    from, and the calls left out."""
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    left = ""
    if raised:
        calls = "1 call" if raised == 1 else f"{raised} calls"
        left = f"\n{calls} that raised (no result to expect) left out."
    if dropped:
        calls = "1 call" if dropped == 1 else f"{dropped} calls"
        left += f"\n{calls} whose answer the history dropped (Workbench.history_bytes) left out."
    if cassette:
        where = "The calls replay from the cassette: the tests need no server, no secret and no config."
    elif config:
        where = "The servers start from the session's config file, CONFIG, whatever $WORKBENCH_CONFIG\nsays."
    else:
        where = (
            "The servers start from the config found as the workbench finds it ($WORKBENCH_CONFIG,\n"
            "./workbench-config.json, then the embedded default)."
        )
    doc = (
        f'"""Regression tests exported by workbench_magic on {stamp}.\n\n'
        f"Each test_NN repeats a call of the session, in the order they ran, and expects what it\n"
        f"returned then; each test_schema_* checks that a tool still accepts what it accepted.\n"
        f"{where}{left}\n"
        f'"""'
    )
    return doc


def _imports(ignoring: bool, parsing: bool, paths: str | None) -> str:
    """The test module's imports: those its tests use."""
    imports = ["from __future__ import annotations", ""]
    if parsing:
        imports.append("import json")
    imports.append("from collections.abc import Iterator")
    if paths:
        imports.append("from pathlib import Path")
    imports += ["", "import pytest", "", "from workbench_magic import Workbench"]
    helpers = ["schema_breaks", *(["without"] if ignoring else [])]
    imports.append(f"from workbench_magic.testing import {', '.join(helpers)}")
    return "\n".join(imports)


def _constants(cassette: str | None, config: str | None, ignore: tuple[str, ...] | None) -> list[str]:
    """The test module's constants: the cassette's and the config's paths, the values left out."""
    constants = []
    if cassette:
        constants.append(path_constant("CASSETTE", cassette))
    if config:
        constants.append(path_constant("CONFIG", config))
    if ignore is not None:
        assign = "IGNORE = "
        comment = "# values that change from run to run, left out of the comparisons\n"
        constants.append(comment + assign + literal(ignore, before=width(assign)))
    return constants


def _fixture(toolboxes: list[str], cassette: str | None, config: str | None) -> str:
    said = "answered from the cassette" if cassette else "from the config"
    lines = [
        '@pytest.fixture(scope="module")',
        "def wb() -> Iterator[Workbench]:",
        f'    """The toolboxes the calls used, {said}."""',
    ]
    if cassette:
        lines.append("    # no config: the cassette knows the toolboxes, and the environment does not matter")
        lines.append(f"    workbench = Workbench({_NO_CONFIG}, replay=CASSETTE)")
    else:
        lines.append(f"    workbench = Workbench({'CONFIG' if config else ''})")
    for toolbox in toolboxes:
        lines.append(f"    workbench.open({string(toolbox)})")
    lines += ["    yield workbench", "    workbench.close_all()"]
    return "\n".join(lines)


def _expected(answer: ToolAnswer, ignore: tuple[str, ...]) -> tuple[str, Any]:
    """What a call's test compares (an expression on `result`) and the value it expects: the
    structured content, else the text; with the `ignore` paths left out when they leave out something
    (of the text when it is JSON)."""
    value = _compared(answer)
    if value is not None:
        kept = without(value, ignore)
        if kept != value:
            parsed = "result.structured_content" if answer.structured_content is not None else "json.loads(result.text)"
            return f"without({parsed}, IGNORE)", kept
    if answer.structured_content is not None:
        return "result.structured_content", answer.structured_content
    return "result.text", answer.text


def _call_test(number: int, record: CallRecord, expected: tuple[str, Any], names: set[str]) -> str:
    ident = record.identifier
    name = unique_test_name(f"test_{number:02d}_{ident.server}_{ident.name}", names)
    answer: ToolAnswer = record.answer
    arguments = [str(ident), *([record.arguments] if record.arguments else [])]
    lines = [f"def {name}(wb: Workbench) -> None:", call("result", "wb.call", arguments)]
    if answer.is_error:
        lines.append('    assert result.is_error, "expected a tool error"')
    else:
        lines.append("    assert not result.is_error, result.text")
    lines.append(assert_equal(*expected))
    return "\n".join(lines)


def _schema_test(tool: str, schema: dict[str, Any], names: set[str]) -> str:
    parts = tool.split("/")
    name = unique_test_name(f"test_schema_{parts[1]}_{'_'.join(parts[2:])}", names)
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
