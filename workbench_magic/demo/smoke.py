"""`make demo`: open the embedded demo toolbox headless, call a few tools, print the results
(through the public API only, as a user would)."""

from __future__ import annotations

import time
from typing import Any

from workbench_magic import ToolResult, Workbench


def table_text(result: ToolResult) -> str:
    """The result's table as text: pandas' `to_string(index=False)` when pandas is installed, else
    right-aligned columns in plain Python (the demo runs on a plain install, without extras)."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        return plain_table(result.data["rows"])  # the aggregate's `{"rows": [...]}`
    return result.to_pandas().to_string(index=False)


def plain_table(table: list[dict[str, Any]] | dict[str, list[Any]]) -> str:
    """Records (or columns) as right-aligned text columns two spaces apart, a header line first."""
    if isinstance(table, dict):
        table = [dict(zip(table, row, strict=True)) for row in zip(*table.values(), strict=True)]
    columns = list(dict.fromkeys(k for row in table for k in row))
    lines = [columns, *([_cell(row.get(c)) for c in columns] for row in table)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    return "\n".join("  ".join(v.rjust(w) for v, w in zip(line, widths, strict=True)) for line in lines)


def _cell(value: Any) -> str:
    return "NaN" if value is None else str(value)


def run_demo(config: str | None = None) -> int:
    """Open `demo`, call a handful of tools, print what came back. Exit status 0 when all worked."""
    t0 = time.perf_counter()
    wb = Workbench(config=config)
    try:
        box = wb.open("demo")
        print(f"opened in {time.perf_counter() - t0:.2f} s")
        print(repr(box))
        if box.failed:
            return 1
        print()
        print(repr(wb.call("demo/datasets/list_datasets")))
        result = wb.call(
            "demo/datasets/aggregate",
            {"dataset": "penguins", "group_by": ["species"], "metric": "body_mass_g", "agg": "mean"},
        )
        print(repr(result))
        print(table_text(result))

        def progress(value: float, total: float | None, message: str | None) -> None:
            print(f"  progress {value:g}/{f'{total:g}' if total else '?'} {message or ''}")

        profile = wb.call("demo/datasets/profile", {"dataset": "weather", "delay": 0.01}, progress=progress)
        print(repr(profile))
        plot = wb.call("demo/datasets/plot", {"dataset": "penguins", "x": "bill_length_mm", "y": "body_mass_g"})
        print(repr(plot))
        note = box.notes.add_note(title="demo", body="made by make demo", tags=["smoke"])
        print(repr(note))
        print(repr(box.notes.list_notes(tag="smoke")))
        failures = [r for r in wb.history if not r.ok]
        print(f"\n{len(wb.history)} calls, {len(failures)} failed, {time.perf_counter() - t0:.2f} s in all")
        return 1 if failures else 0
    finally:
        wb.close_all()
