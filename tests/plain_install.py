"""A plain install (no extras, so no pandas) at work: the demo toolbox, a tool call, an MCP App.

Run by `.ci/plain_install.sh` in a fresh virtualenv holding only the built wheel and its
dependencies, and by `tests/test_demo.py` with pandas made unimportable. Prints what it checked;
exits non-zero with one line saying what went wrong.
"""

from __future__ import annotations

import sys
from typing import Any

MISSING_PANDAS = "to_pandas() needs pandas: pip install 'workbench-magic[pandas]'"


def check(ok: Any, what: str) -> None:
    """Stop with `what` when `ok` is false (not `assert`: this runs under `python -O` too)."""
    if not ok:
        raise SystemExit(f"plain install: {what}")


def main() -> int:
    try:
        import pandas  # noqa: F401
    except ImportError:
        pass
    else:
        check(False, "pandas is importable, so this is not a plain install")

    import workbench_magic
    from workbench_magic import Workbench, WorkbenchError

    print(f"workbench_magic {workbench_magic.__version__} from {workbench_magic.__file__}")
    check("mcp" not in sys.modules, "`import workbench_magic` imported the MCP SDK")
    wb = Workbench()  # no config anywhere: the embedded demo toolbox
    try:
        box = wb.open("demo")
        check(not box.failed, f"the demo toolbox failed to open: {box.failed}")
        print(repr(box))

        query = {"dataset": "penguins", "columns": ["species", "body_mass_g"], "order_by": "body_mass_g", "limit": 3}
        rows = wb.call("demo/datasets/query", query).raise_for_error()
        records = rows.data["rows"]
        check(len(records) == 3 and set(records[0]) == {"species", "body_mass_g"}, f"query gave {rows.data}")
        masses = [r["body_mass_g"] for r in records]
        check(masses == sorted(masses), f"query did not sort: {masses}")
        print(f"query: {records}")

        chart = wb.call("demo/datasets/chart", {"dataset": "penguins"}).raise_for_error()
        check(chart.data["x"] == "bill_length_mm" and chart.data["points"], f"chart gave {chart.data}")
        app = chart.app
        check(app is not None, "the chart result has no MCP App view")
        assert app is not None
        check('<svg id="chart"' in app.html and app.csp, "the chart app's page is not the chart")
        bundle = chart._repr_mimebundle_()
        check(bundle.get("text/html") and "application/json" not in bundle, f"the result's MIME bundle: {list(bundle)}")
        check("This tool has an app (ui://datasets/chart.html)" in bundle["text/plain"], "no line about the app")
        init = app.handle({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {}})
        check(init and init["result"]["hostInfo"]["name"] == "workbench-magic", f"ui/initialize gave {init}")
        app.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized", "params": {}})
        sent = [m["method"] for m in app.take()]
        check(sent == ["ui/notifications/tool-input", "ui/notifications/tool-result"], f"the host sent {sent}")
        call = {"name": "chart_points", "arguments": {"dataset": "weather", "x": "temp_c", "y": "precip_mm"}}
        answer = app.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        check(answer and answer["result"]["structuredContent"]["dataset"] == "weather", f"tools/call gave {answer}")
        print(f"chart app: {len(app.html)} characters of HTML, {len(chart.data['points'])} points, MIME {list(bundle)}")

        try:
            rows.to_pandas()
        except WorkbenchError as exc:
            check(str(exc) == MISSING_PANDAS, f"to_pandas() raised {exc!r}")
            check(exc.__cause__ is None and exc.__context__ is None, "to_pandas()'s error has a chain")
            print(f"to_pandas(): {exc}")
        else:
            check(False, "to_pandas() worked without pandas")
        failures = [r for r in wb.history if not r.ok]
        check(not failures, f"failed calls: {failures}")
    finally:
        wb.close_all()
    print("plain install: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
