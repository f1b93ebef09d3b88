"""Bench section 7, "first use" (issue 16): what the quickstart's first steps cost.

Each open is timed in a fresh interpreter (`probe`), probes of the different kinds taking
turns (rotating order) so that load from elsewhere hits them alike:

* `%workbench open demo` right after `%load_ext` in an `InteractiveShell`, against a bare
  `import mcp.server` in its own interpreter; in the same process, the first call after the
  open against the median of the next calls (datasets, then notes);
* one in-process server (`"python": ...`) against one stdio Python server, both with the SDK
  already imported (so the connect is timed, not the import), cold (first open in the process)
  and warm (after a close);

and, in this worker, the argument check per call: `schema.validate_arguments` (jsonschema-rs)
against the previous implementation, jsonschema's `iter_errors` + `best_match`, reproduced here.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from _common import probe, row

SECTION = "7. first use"
CALLS = ("demo/datasets/list_datasets", "demo/notes/list_notes")
LATER_CALLS = 20

# valid arguments of the demo's datasets/query: a nested array of objects through `$defs`/`$ref`
QUERY_ARGS: dict[str, Any] = {
    "dataset": "penguins",
    "columns": ["species", "island", "body_mass_g"],
    "where": [
        {"column": "body_mass_g", "op": ">", "value": 4000},
        {"column": "species", "op": "==", "value": "Adelie"},
    ],
    "order_by": "body_mass_g",
    "descending": True,
    "limit": 10,
}

_CHILDREN = r"""
def children():
    me, out = str(os.getpid()), 0
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open(f"/proc/{p}/stat").read().rpartition(")")[2].split()[1] == me:
                out += 1
        except OSError:
            pass
    return out
"""

_DEMO_PROBE = (
    r"""
import json, os, statistics, sys, threading, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
"""
    + _CHILDREN
    + r"""
c = Config(); c.HistoryManager.enabled = False
ip = InteractiveShell.instance(config=c)
t0 = time.perf_counter()
ip.run_line_magic("load_ext", "workbench_magic")
state = {"load_ext_s": time.perf_counter() - t0}
from workbench_magic import Workbench
wb = Workbench.shared()
t0 = time.perf_counter()
ip.run_line_magic("workbench", "open demo")
state["open_s"] = time.perf_counter() - t0
state["child_processes"] = children()
state["threads"] = threading.active_count()
state["jsonschema_at_open"] = "jsonschema" in sys.modules
for ident in sys.argv[2:]:
    t0 = time.perf_counter()
    result = wb.call(ident, {})
    first = time.perf_counter() - t0
    assert not result.is_error, result
    later = []
    for _ in range(int(sys.argv[1])):
        t0 = time.perf_counter()
        wb.call(ident, {})
        later.append(time.perf_counter() - t0)
    state[ident] = {"first_s": first, "later_s": statistics.median(later)}
# the real rfc3987_syntax module is what builds the grammar (a stand-in is gone after the import)
state["rfc3987_syntax_imported"] = "rfc3987_syntax" in sys.modules
state["jsonschema_imported"] = "jsonschema" in sys.modules
ip.run_line_magic("unload_ext", "workbench_magic")
wb.close_all()
print(json.dumps(state))
"""
)

_IMPORT_SERVER_PROBE = r"""
import json, time
t0 = time.perf_counter()
import mcp.server
print(json.dumps({"import_s": time.perf_counter() - t0}))
"""

_ONE_SERVER_PROBE = (
    r"""
import json, os, sys, time
import mcp.server  # both kinds start with the SDK imported: the connect is timed, not the import
from workbench_magic import Workbench
"""
    + _CHILDREN
    + r"""
if sys.argv[1] == "inproc":
    cfg = {"python": "workbench_magic.demo:notes_server"}
else:
    cfg = {"command": sys.executable, "args": ["-m", "workbench_magic.demo.notes"]}
wb = Workbench({"toolboxes": {"t": {"mcpServers": {"notes": cfg}}}})
t0 = time.perf_counter()
wb.open("t")
state = {"cold_s": time.perf_counter() - t0, "child_processes": children(), "tools": len(wb.tools("t"))}
wb.close("t")
t0 = time.perf_counter()
wb.open("t")
state["warm_s"] = time.perf_counter() - t0
wb.close_all()
print(json.dumps(state))
"""
)


def _open_probes(reps: int) -> dict[str, list[dict[str, Any]]]:
    """`reps` fresh interpreters of each kind, kinds taking turns in a rotating order."""
    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "demo": lambda: probe(_DEMO_PROBE, str(LATER_CALLS), *CALLS)[1],
        "import": lambda: probe(_IMPORT_SERVER_PROBE)[1],
        "inproc": lambda: probe(_ONE_SERVER_PROBE, "inproc")[1],
        "stdio": lambda: probe(_ONE_SERVER_PROBE, "stdio")[1],
    }
    kinds = list(runs)
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for rep in range(reps):
        for k in kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]:
            out[k].append(runs[k]())
    return out


def _per_call_us(fn: Callable[[], Any], batch: int) -> float:
    t0 = time.perf_counter()
    for _ in range(batch):
        fn()
    return (time.perf_counter() - t0) / batch * 1e6


def _argument_checks(batches: int) -> tuple[list[float], list[float], dict[str, Any]]:
    """µs per check of valid `query` arguments, per batch: (now, before, side figures)."""
    import jsonschema
    from jsonschema import validators

    from workbench_magic import Workbench
    from workbench_magic.engine.schema import validate_arguments

    datasets = {"python": "workbench_magic.demo:datasets_server"}
    wb = Workbench({"toolboxes": {"demo": {"mcpServers": {"datasets": datasets}}}})
    try:
        wb.open("demo")
        tool = wb.tool("demo/datasets/query")
    finally:
        wb.close_all()

    # the implementation before issue 16 (schema.py at b7a8522), on valid arguments: a validator
    # cached per schema (check_schema once), then best_match over iter_errors on every call
    cache: dict[int, tuple[dict[str, Any], Any]] = {}

    def before(tool: Any, arguments: dict[str, Any]) -> None:
        if not isinstance(arguments, dict):
            raise TypeError(arguments)
        cached = cache.get(id(tool.input_schema))
        if cached is None or cached[0] is not tool.input_schema:
            schema = tool.input_schema
            cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            cls.check_schema(schema)
            cached = cache[id(schema)] = (schema, cls(schema))
        from jsonschema.exceptions import best_match

        error = best_match(cached[1].iter_errors(arguments))
        if error is not None:
            raise ValueError(error.message)

    def now_once() -> None:
        validate_arguments(tool, QUERY_ARGS)

    def before_once() -> None:
        before(tool, QUERY_ARGS)

    for _ in range(50):  # compile and warm both
        now_once()
        before_once()
    now: list[float] = []
    old: list[float] = []
    for i in range(batches):
        pair = [(now_once, 500, now), (before_once, 20, old)]
        for fn, batch, out in pair if i % 2 == 0 else pair[::-1]:
            out.append(_per_call_us(fn, batch))
    return now, old, {"schema_bytes": len(str(tool.input_schema)), "defs": sorted(tool.input_schema.get("$defs", {}))}


def firstuse(quick: bool) -> dict[str, Any]:
    """Section 7 (issue 16): first open of the demo, first call, argument check, in-process open."""
    reps = 2 if quick else 5
    batches = 40 if quick else 200
    probe("pass")  # warm the page cache
    if not quick:
        probe(_DEMO_PROBE, "1", *CALLS)  # and the pyc files of everything the probes import
    runs = _open_probes(reps)
    now, before, schema_info = _argument_checks(batches)

    demo, s = runs["demo"], SECTION
    no_grammar = not any(d["rfc3987_syntax_imported"] for d in demo)
    rows = [
        row(
            s,
            "firstuse/open_demo",
            "first %workbench open demo (fresh IPython, after %load_ext)",
            "s",
            [d["open_s"] for d in demo],
            baseline="firstuse/import_mcp_server",
            goals=[
                {"kind": "ratio_max", "of": "firstuse/import_mcp_server", "value": 1.3, "text": "≤ 1.3× import"},
                {"kind": "flag", "ok": no_grammar, "text": "no rfc3987 grammar"},
            ],
            extra={
                "load_ext_median_s": statistics.median(d["load_ext_s"] for d in demo),
                "child_processes": max(d["child_processes"] for d in demo),
                "threads_after": max(d["threads"] for d in demo),
                "jsonschema_at_open": any(d["jsonschema_at_open"] for d in demo),
                "jsonschema_imported": any(d["jsonschema_imported"] for d in demo),
                "rfc3987_syntax_imported": not no_grammar,
            },
        ),
        row(
            s,
            "firstuse/import_mcp_server",
            "(ref) import mcp.server (fresh interpreter)",
            "s",
            [d["import_s"] for d in runs["import"]],
        ),
    ]
    for ident in CALLS:
        server = ident.split("/")[1]
        tool = ident.split("/", 1)[1]
        when = "the process's first call" if ident == CALLS[0] else "after the datasets calls"
        rows += [
            row(
                s,
                f"firstuse/first_call_{server}",
                f"first call after the open: {tool} ({when})",
                "ms",
                [d[ident]["first_s"] * 1e3 for d in demo],
                baseline=f"firstuse/later_call_{server}",
                goals=[{"kind": "ratio_max", "of": f"firstuse/later_call_{server}", "value": 3, "text": "≤ 3× later"}],
            ),
            row(
                s,
                f"firstuse/later_call_{server}",
                f"(ref) later call: {tool}, median of the next {LATER_CALLS}",
                "ms",
                [d[ident]["later_s"] * 1e3 for d in demo],
            ),
        ]
    rows += [
        row(
            s,
            "firstuse/argcheck_now",
            "argument check per call: validate_arguments, jsonschema-rs (datasets/query)",
            "µs",
            now,
            goals=[{"kind": "less_than", "of": "firstuse/argcheck_before", "text": "< before"}],
            extra=schema_info,
        ),
        row(
            s,
            "firstuse/argcheck_before",
            "(ref) before: jsonschema iter_errors + best_match, validator cached",
            "µs",
            before,
            baseline="firstuse/argcheck_now",
        ),
    ]
    inproc, stdio = runs["inproc"], runs["stdio"]
    for when, label in (("cold", "first open in the process, SDK imported"), ("warm", "second open, after a close")):
        rows += [
            row(
                s,
                f"firstuse/open_inproc_{when}",
                f"open 1 in-process server (demo notes): {label}",
                "s",
                [d[f"{when}_s"] for d in inproc],
                baseline=f"firstuse/open_stdio_{when}",
                goals=[{"kind": "less_than", "of": f"firstuse/open_stdio_{when}", "text": "< stdio"}],
                extra={"child_processes": max(d["child_processes"] for d in inproc)} if when == "cold" else {},
            ),
            row(
                s,
                f"firstuse/open_stdio_{when}",
                f"(ref) open 1 stdio Python server (demo notes): {label}",
                "s",
                [d[f"{when}_s"] for d in stdio],
                extra={"child_processes": max(d["child_processes"] for d in stdio)} if when == "cold" else {},
            ),
        ]
    return {"rows": rows, "meta": {"reps": reps, "later_calls": LATER_CALLS, "argcheck_batches": batches}}
