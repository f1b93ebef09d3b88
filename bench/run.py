"""Benchmark the workbench against the alternatives a user would pick, in one run.

    python bench/run.py            # full run (under 10 minutes on 2 cores), writes bench/results/latest.json
    python bench/run.py --quick    # smoke (under 2 minutes), writes bench/results/quick.json
    python bench/run.py --only calls,throughput

Each section runs in its own subprocess (own session, so a hang or a leaked server can be
killed as a group); the runner collects the rows, evaluates the goals, prints the table and
writes the JSON. See bench/README.md for what each row means.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH, PY, ROOT, children, describe_pid, session_members

# (worker, timeout in seconds for the full run); memory_wb and memory_raw run side by side
PLAN: list[tuple[str, ...]] = [
    ("imports",),
    ("firstuse",),
    ("calls",),
    ("throughput",),
    ("batch",),
    ("open",),
    ("memory_wb", "memory_raw"),
    ("scale",),
    ("proxy",),
    ("lazy",),
    ("toolsets",),
    ("schemas",),
    ("bigresult",),
    ("dask",),
    ("load",),
    ("bigbatch",),
]
TIMEOUT = {
    "imports": 150,
    "firstuse": 210,
    "calls": 150,
    "throughput": 150,
    "batch": 120,
    "open": 330,
    "memory_wb": 200,
    "memory_raw": 200,
    "scale": 120,
    "proxy": 240,
    "lazy": 150,
    "toolsets": 120,
    "schemas": 90,
    "bigresult": 120,
    "dask": 120,
    "bigbatch": 1200,
    "load": 300,
}
TOTAL_LIMIT = 570.0  # seconds: the full run must end within 10 minutes on 2 cores
RESERVE_AFTER_OPEN = (
    470.0  # what memory, scale, proxy, lazy, toolsets, schemas, bigresult and dask need after the open section
)
SECTIONS = {
    "imports",
    "firstuse",
    "calls",
    "throughput",
    "batch",
    "open",
    "memory",
    "scale",
    "proxy",
    "lazy",
    "toolsets",
    "schemas",
    "bigresult",
    "dask",
    "bigbatch",
    "load",
}
OPT_IN = {"bigbatch", "load"}
"""Sections run only when `--only` names them (they take longer than the full run may)."""


# ---------------------------------------------------------------------------- workers


def start_worker(name: str, quick: bool, out: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    cmd = [PY, str(BENCH / "run.py"), "--worker", name, "--json", out] + (["--quick"] if quick else [])
    return subprocess.Popen(cmd, cwd=str(ROOT), start_new_session=True, env={**os.environ, **(env or {})})


def reap(proc: subprocess.Popen[bytes], name: str, timeout: float) -> tuple[str | None, list[str]]:
    """Wait for a worker; on timeout kill its whole session. Returns (error, leftover processes)."""
    error = None
    try:
        proc.wait(timeout=timeout)
        if proc.returncode != 0:
            error = f"worker {name} exited with {proc.returncode}"
    except subprocess.TimeoutExpired:
        error = f"worker {name} timed out after {timeout:.0f} s (killed)"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    leftovers = []
    for _ in range(20):
        members = session_members(proc.pid)
        if not members:
            break
        time.sleep(0.1)
    for pid in session_members(proc.pid):
        leftovers.append(describe_pid(pid))
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return error, leftovers


# ---------------------------------------------------------------------------- machine load


def cpu_snapshot() -> tuple[float, float, float]:
    """(wall, busy CPU seconds of the whole machine, CPU seconds of our reaped children)."""
    import resource

    from _common import CLK_TCK

    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    busy = (sum(fields[:8]) - idle) / CLK_TCK
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.monotonic(), busy, ru.ru_utime + ru.ru_stime


def foreign_load(before: tuple[float, float, float], after: tuple[float, float, float]) -> dict[str, float]:
    """CPU the rest of the machine used while a section ran, in cores (0 = the bench had it alone)."""
    wall = after[0] - before[0]
    busy = after[1] - before[1]
    ours = after[2] - before[2]
    return {
        "wall_s": wall,
        "machine_busy_cores": busy / wall if wall else 0.0,
        "bench_cores": ours / wall if wall else 0.0,
        "foreign_cores": max(0.0, busy - ours) / wall if wall else 0.0,
    }


# ---------------------------------------------------------------------------- memory rows


def memory_rows(wb: dict[str, Any], raw: dict[str, Any]) -> list[dict[str, Any]]:
    from _common import row

    s = "5. memory"
    gw, gr = wb["growth"], raw["growth"]
    child = wb.get("child_rss_mb") or []
    return [
        row(
            s,
            "memory/per_server_wb",
            f"client RSS per open server, Workbench ({wb['servers']} servers)",
            "MB",
            [wb["per_server_mb"]],
            baseline="memory/per_server_raw",
            extra={k: wb[k] for k in ("rss_before_open_mb", "rss_open_mb", "rss_after_close_mb")},
        ),
        row(
            s,
            "memory/per_server_raw",
            f"client RSS per open server, raw SDK ({raw['servers']} servers)",
            "MB",
            [raw["per_server_mb"]],
            extra={k: raw[k] for k in ("rss_before_open_mb", "rss_open_mb", "rss_after_close_mb")},
        ),
        row(s, "memory/child_rss", "(ref) RSS of each server process (test server)", "MB", child),
        row(
            s,
            "memory/growth_wb",
            f"client RSS growth over {gw['calls']:,} calls, Workbench.call",
            "MB",
            [gw["growth_mb"]],
            baseline="memory/growth_raw",
            extra={
                "kb_per_call": gw["growth_mb"] * 1024 / gw["calls"],
                "history_len": gw.get("history_len"),
                "rss_before_mb": gw["rss_before_mb"],
                "rss_after_mb": gw["rss_after_mb"],
                "elapsed_s": gw["elapsed_s"],
            },
        ),
        row(
            s,
            "memory/growth_raw",
            f"client RSS growth over {gr['calls']:,} calls, raw SDK",
            "MB",
            [gr["growth_mb"]],
            extra={
                "kb_per_call": gr["growth_mb"] * 1024 / gr["calls"],
                "rss_before_mb": gr["rss_before_mb"],
                "rss_after_mb": gr["rss_after_mb"],
                "elapsed_s": gr["elapsed_s"],
            },
        ),
    ]


# ---------------------------------------------------------------------------- goals and table


def evaluate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_key = {r["key"]: r for r in rows}
    for r in rows:
        base = by_key.get(r["baseline"]) if r.get("baseline") else None
        r["ratio"] = r["median"] / base["median"] if base and base["median"] else None
    goals = []
    for r in rows:
        for g in r["goals"]:
            kind = g["kind"]
            other = by_key.get(g.get("of", ""))
            if kind == "ratio_max":
                measured = r["median"] / other["median"] if other else math.nan
                met = measured <= g["value"]
                shown = f"{measured:.2f}×"
            elif kind == "less_than":
                measured = r["median"] / other["median"] if other else math.nan
                met = r["median"] < other["median"] if other else False
                shown = f"{measured:.2f}× of it"
            elif kind == "abs_max":
                measured = r["median"]
                met = measured < g["value"]
                shown = f"{measured:.3f} {r['unit']}"
            else:  # flag
                measured = g["ok"]
                met = bool(g["ok"])
                shown = "yes" if met else "no"
            g["measured"] = measured
            g["met"] = bool(met)
            goals.append({"row": r["key"], "label": r["label"], "goal": g["text"], "measured": shown, "met": bool(met)})
    return goals


def fmt(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if unit == "ms":
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    if unit == "s":
        return f"{value:.3f}" if value < 10 else f"{value:.2f}"
    return f"{value:.2f}"


def table(rows: list[dict[str, Any]]) -> str:
    head = ["measurement", "n", "median", "p95", "unit", "ratio", "vs", "goal", "met?"]
    lines = []
    section = None
    body = []
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            body.append([f"== {section}"] + [""] * (len(head) - 1))
        ratio = f"{r['ratio']:.2f}×" if r.get("ratio") is not None else ""
        vs = r["baseline"].split("/", 1)[1] if r.get("baseline") else ""
        goal = "; ".join(g["text"] for g in r["goals"])
        met = "; ".join("yes" if g.get("met") else "NO" for g in r["goals"])
        p95 = fmt(r["p95"], r["unit"]) if r["n"] > 1 else "—"
        body.append([r["label"], str(r["n"]), fmt(r["median"], r["unit"]), p95, r["unit"], ratio, vs, goal, met])
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    widths[0] = min(widths[0], 70)

    def line(cells: list[str]) -> str:
        out = []
        for i, c in enumerate(cells):
            c = c if len(c) <= widths[i] else c[: widths[i] - 1] + "…"
            out.append(c.ljust(widths[i]) if i in (0, 4, 6, 7, 8) else c.rjust(widths[i]))
        return "  ".join(out).rstrip()

    lines.append(line(head))
    lines.append("  ".join("-" * w for w in widths))
    for cells in body:
        lines.append(cells[0] if cells[0].startswith("== ") else line(cells))
    return "\n".join(lines)


def extras_table(rows: list[dict[str, Any]]) -> str:
    """The CPU split and other side figures that explain the main table."""
    out = []
    for r in rows:
        e = r.get("extra") or {}
        keys = [
            k
            for k in (
                "client_cpu_ms_per_call",
                "server_cpu_ms_per_call",
                "calls_per_s_median",
                "server_cpu_s_per_open",
                "client_cpu_s_per_open",
                "close_median_s",
                "kb_per_call",
                "history_len",
                "mcp_imported",
                "pydantic_imported",
                "anyio_imported",
                "new_modules",
                "threads_after",
                "load_ext_median_s",
                "child_processes",
                "jsonschema_at_open",
                "jsonschema_imported",
                "rfc3987_syntax_imported",
            )
            if k in e
        ]
        if keys:
            parts = []
            for k in keys:
                v = e[k]
                parts.append(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}")
            out.append(f"  {r['key']}: " + ", ".join(parts))
    return "\n".join(out)


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions (smoke, < 2 minutes)")
    p.add_argument("--only", default="", help="comma-separated sections: " + ",".join(sorted(SECTIONS)))
    p.add_argument("--out", default=None, help="JSON output (default bench/results/latest.json or quick.json)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--json", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        from workloads import main as worker_main

        return worker_main(args.worker, args.quick, args.json)

    only = {s.strip() for s in args.only.split(",") if s.strip()}
    if only - SECTIONS:
        p.error(f"unknown sections: {', '.join(sorted(only - SECTIONS))}")
    out_path = Path(args.out) if args.out else BENCH / "results" / ("quick.json" if args.quick else "latest.json")
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    leftovers: list[str] = []
    worker_leftovers: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    timings: dict[str, float] = {}
    load: dict[str, dict[str, float]] = {}
    memory: dict[str, Any] = {}
    scale_factor = 0.5 if args.quick else 1.0
    reserve = RESERVE_AFTER_OPEN * (0.3 if args.quick else 1.0)
    with tempfile.TemporaryDirectory(prefix="wb-bench-") as tmp:
        for group in PLAN:
            names = [n for n in group if n.split("_")[0] in only or (not only and n not in OPT_IN)]
            if not names:
                continue
            t0 = time.perf_counter()
            snap0 = cpu_snapshot()
            # the open section's repetitions are elastic: it must leave time for the sections after it
            env = {"BENCH_OPEN_DEADLINE": str(time.time() + TOTAL_LIMIT - (time.perf_counter() - started) - reserve)}
            procs = {n: (start_worker(n, args.quick, f"{tmp}/{n}.json", env), f"{tmp}/{n}.json") for n in names}
            print(f"bench: {' + '.join(names)} ...", file=sys.stderr, flush=True)
            for n, (proc, path) in procs.items():
                error, left = reap(proc, n, TIMEOUT[n] * scale_factor + 30)
                if error:
                    errors.append(error)
                leftovers += left
                if not Path(path).exists():
                    continue
                result = json.loads(Path(path).read_text())
                worker_leftovers[n] = result.get("leftover_children", [])
                meta[n] = result.get("meta", {})
                if n.startswith("memory"):
                    memory[n] = result
                else:
                    rows += result["rows"]
            timings["+".join(names)] = time.perf_counter() - t0
            load["+".join(names)] = foreign_load(snap0, cpu_snapshot())
            print(
                f"bench: {' + '.join(names)} done in {timings['+'.join(names)]:.1f} s"
                f" (other processes used {load['+'.join(names)]['foreign_cores']:.2f} cores meanwhile)",
                file=sys.stderr,
                flush=True,
            )
        if "memory_wb" in memory and "memory_raw" in memory:
            mem = memory_rows(memory["memory_wb"], memory["memory_raw"])
            scale_at = next((i for i, r in enumerate(rows) if r["section"].startswith("6.")), len(rows))
            rows[scale_at:scale_at] = mem
            meta["memory"] = {k: {kk: vv for kk, vv in v.items() if kk != "growth"} for k, v in memory.items()}

    goals = evaluate(rows)
    # nothing may be left behind: the runner's own children and every worker session
    time.sleep(0.2)
    own_children = [describe_pid(p) for p in children()]
    total = time.perf_counter() - started
    report = {
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "total_s": total,
        "section_s": timings,
        "machine_load": load,
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "versions": versions(),
        "rows": rows,
        "goals": goals,
        "goals_missed": [g for g in goals if not g["met"]],
        "errors": errors,
        "leftover_processes": leftovers + own_children,
        "worker_leftover_children": worker_leftovers,
        "meta": meta,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=1, default=str))

    print()
    print(table(rows))
    print()
    print("Goals:")
    for g in goals:
        print(f"  [{'met' if g['met'] else 'MISSED'}] {g['label']}: {g['goal']} (measured {g['measured']})")
    print()
    print("CPU and side figures (per call: ms of CPU time in the client process / in the server processes):")
    print(extras_table(rows))
    print()
    v = report["versions"]
    print(f"versions: {', '.join(f'{k} {x}' for k, x in v.items())}; {os.cpu_count()} cores")
    print(f"sections: {', '.join(f'{k} {x:.0f} s' for k, x in timings.items())}; total {total:.0f} s")
    print(
        "CPU used by other processes on this machine during each section (cores of "
        f"{os.cpu_count()}): " + ", ".join(f"{k} {v['foreign_cores']:.2f}" for k, v in load.items())
    )
    left_all = leftovers + own_children + [str(x) for v in worker_leftovers.values() for x in v]
    print(f"processes left behind: {len(left_all)}" + (f" {left_all}" if left_all else ""))
    for e in errors:
        print(f"ERROR: {e}")
    print(f"written: {out_path.relative_to(ROOT) if out_path.is_relative_to(ROOT) else out_path}")
    return 1 if errors or left_all else 0


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("workbench-magic", "mcp", "fastmcp", "anyio", "ipython", "ipywidgets"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    try:
        out["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out["node"] = "absent"
    return out


if __name__ == "__main__":
    sys.exit(main())
