"""`make demo`: open the embedded demo toolbox headless, call a few tools, print the results."""

from __future__ import annotations

import time

from workbench_magic.manager import Workbench


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
        print(result.to_pandas().to_string(index=False))

        def progress(value: float, total: float | None, message: str | None) -> None:
            print(f"  progress {value:g}/{total or '?'} {message or ''}")

        wb.call("demo/datasets/profile", {"dataset": "weather", "delay": 0.01}, progress=progress)
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
