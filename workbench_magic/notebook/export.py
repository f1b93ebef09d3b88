"""Export a session as a notebook: `%load_ext`, the replay line of a recorded cassette (or the
config), the opens, and one `%%use_tool` cell per tool call of the history.

Only the public `Workbench` API is used. The notebook is nbformat 4 JSON written directly (no
nbformat dependency at runtime).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from workbench_magic.vocabulary.errors import UsageError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.listings import CallRecord


def _cell(kind: str, source: str) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _escape(value: Any) -> Any:
    """Strings starting with `$` would be read as `$name` variables by `%%use_tool`: `$$` keeps them."""
    if isinstance(value, str):
        return "$" + value if value.startswith("$") else value
    if isinstance(value, dict):
        return {k: _escape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escape(v) for v in value]
    return value


def _relative(path: str, notebook: Path) -> str:
    """`path` as the notebook (run from its own directory) finds it, quoted for a magic line (a
    space or a leading `#` would split it or start a comment): relative when they share a folder
    below the root, else absolute."""
    target, folder = Path(path).resolve(), notebook.resolve().parent
    try:
        shared = os.path.commonpath([target, folder])
    except ValueError:  # another drive on Windows
        return shlex.quote(str(target))
    found = os.path.relpath(target, folder) if Path(shared).parent != Path(shared) else str(target)
    return shlex.quote(found)


def call_cell(record: CallRecord) -> str:
    """The `%%use_tool` cell (or `%use_tool` line, for a call without arguments) of one call."""
    ident = record.identifier
    target = f"{ident.toolbox}/{ident.server}/{ident.name}"
    if not record.arguments:
        return f"%use_tool {target}"
    body = yaml.safe_dump(_escape(record.arguments), sort_keys=False, allow_unicode=True, width=100)
    return f"%%use_tool {target}\n{body.rstrip()}"


def notebook_cells(wb: Workbench, notebook: Path) -> list[dict[str, Any]]:
    calls = [r for r in wb.history if r.kind == "tool"]
    used = list(dict.fromkeys([*(r.identifier.toolbox for r in calls), *(b.name for b in wb.toolboxes() if b.open)]))
    recordings = wb.recordings
    replays = [(path, mode) for path, mode in reversed(wb.replays) if path not in recordings]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    intro = f"# Workbench session\n\nExported by `workbench_magic` on {stamp}: {len(calls)} tool calls."
    if recordings or replays:
        intro += " The calls replay from a cassette, so this notebook runs without the servers."
    cells = [_cell("markdown", intro), _cell("code", "%load_ext workbench_magic")]
    source = wb.config_source
    if not recordings and not replays and Path(source).is_file():
        cells.append(_cell("code", f"%workbench config {_relative(source, notebook)}"))
    for cassette, mode in replays:
        auto = " --auto" if mode == "auto" else ""
        cells.append(_cell("code", f"%workbench replay {_relative(cassette, notebook)}{auto}"))
    for cassette in recordings:
        cells.append(_cell("code", f"%workbench replay {_relative(cassette, notebook)}"))
    if used:
        cells.append(_cell("code", f"%workbench open {' '.join(used)}"))
    for record in calls:
        if record.ok:
            cells.append(_cell("code", call_cell(record)))
        else:
            note = f"The call of `{record.identifier}` failed: {record.error}"
            cells.append(_cell("markdown", note))
    return cells


def export_notebook(wb: Workbench, path: str | os.PathLike[str]) -> str:
    """Write `wb`'s session as a notebook at `path` (must end in `.ipynb`); returns the path."""
    target = Path(path).expanduser()
    if target.suffix != ".ipynb":  # `%workbench export` sends a .py path to export_tests, any other here
        raise UsageError(f"Export to a .ipynb file (a notebook) or a .py file (tests), not {os.fspath(path)!r}")
    cells = notebook_cells(wb, target)
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot write {os.fspath(path)}: {exc.strerror or exc}") from None
    return os.fspath(target)
