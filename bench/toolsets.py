"""Section 11: a tool call through an agent framework's toolset (issue 38) against the workbench's own.

One workbench, our test server over stdio (`echo`, as section 1), one caller's asyncio loop; the
methods take turns in interleaved rounds (rotating order), each call timed alone:

- **(a) `await Workbench.acall`** (the baseline) and **(b) `Workbench.call`** from the main thread;
- **(c) the pydantic-ai toolset**: `await wb.toolset(...).call_tool(...)`, what an agent does for each
  tool call (goal: ≤ 1.10× (a));
- (info) **LangChain**: `await tool.ainvoke(args)` of `wb.langchain_tools(...)` (langchain-core's
  callback machinery included);
- (info) **a pydantic-ai agent run** whose `FunctionModel` makes one `echo` call then answers: through
  the toolset, against the same run whose tool is an async function awaiting `wb.acall` (what a user
  would write without the toolset), and the same run whose tool returns at once (the model and the
  agent's own steps). The last is taken out of the other two: the toolset call and the `wb.acall`
  inside an agent, side by side. A call inside an agent run costs more than one in a tight loop (the
  server and the loop thread sleep through the agent's own work and must be woken), for both alike.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _common import children, cpu_seconds, new_children, row, test_server

SECTION = "11. Toolsets for agent frameworks: one echo call"
ECHO = {"text": "x"}
#: Each row's baseline (the rest: (a)).
BASELINES: dict[str, str | None] = {
    "acall": None,
    "agent": "toolsets/agent_acall",
    "agent_acall": "toolsets/agent_plain",
    "agent_plain": None,
}


def toolsets(quick: bool) -> dict[str, Any]:
    """The interleaved rows; skipped (no rows) without the pydantic-ai extra."""
    try:
        from pydantic_ai import Agent
    except ImportError:
        return {"rows": [], "meta": {"skipped": "pydantic-ai not installed (pip install -e '.[pydantic-ai]')"}}
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import RunContext
    from pydantic_ai.usage import RunUsage

    from workbench_magic import MissingExtraError, Workbench

    total = 100 if quick else 1000
    rounds = 2 if quick else 10
    per_round = total // rounds
    runs = (20 if quick else 200) // rounds  # agent runs per round (each is two model turns and one call)
    warmup = 10 if quick else 50

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    before = children(recursive=False)
    wb = Workbench({"toolboxes": {"t": {"mcpServers": {"s": test_server()}}}})
    wb.open("t")
    pids = new_children(before)

    toolset = wb.toolset(["t/s/echo"])
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    tool = loop.run_until_complete(toolset.get_tools(ctx))["t__s__echo"]
    try:
        (lc_echo,) = wb.langchain_tools(["t/s/echo"])
    except MissingExtraError:
        lc_echo = None

    async def one_call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, ECHO, tool_call_id="c")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(one_call), toolsets=[toolset])
    by_hand = Agent(FunctionModel(one_call))
    plain = Agent(FunctionModel(one_call))

    @by_hand.tool_plain
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return (await wb.acall("t/s/echo", {"text": text})).text

    @plain.tool_plain
    async def echo_here(text: str) -> str:
        """Return the text unchanged."""
        return text

    def timed_async(make: Callable[[], Awaitable[Any]]) -> Callable[[int, list[float]], None]:
        async def go(n: int, out: list[float]) -> None:
            for _ in range(n):
                t0 = time.perf_counter()
                await make()
                out.append(time.perf_counter() - t0)

        return lambda n, out: loop.run_until_complete(go(n, out))

    def timed_sync(fn: Callable[[], Any]) -> Callable[[int, list[float]], None]:
        def go(n: int, out: list[float]) -> None:
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)

        return go

    methods: dict[str, Callable[[int, list[float]], None]] = {
        "acall": timed_async(lambda: wb.acall("t/s/echo", ECHO)),
        "call": timed_sync(lambda: wb.call("t/s/echo", ECHO)),
        "toolset": timed_async(lambda: toolset.call_tool("t__s__echo", ECHO, ctx, tool)),
    }
    if lc_echo is not None:
        methods["langchain"] = timed_async(lambda: lc_echo.ainvoke(ECHO))
    methods["agent"] = timed_async(lambda: agent.run("go"))
    methods["agent_acall"] = timed_async(lambda: by_hand.run("go"))
    methods["agent_plain"] = timed_async(lambda: plain.run("go"))
    count = {m: runs if m.startswith("agent") else per_round for m in methods}
    samples: dict[str, list[float]] = {m: [] for m in methods}
    client_cpu = dict.fromkeys(methods, 0.0)
    server_cpu = dict.fromkeys(methods, 0.0)
    for m, fn in methods.items():
        fn(max(2, warmup // 10) if m.startswith("agent") else warmup, [])
    names = list(methods)
    for r in range(rounds):
        for m in names[r % len(names) :] + names[: r % len(names)]:
            s0 = sum(cpu_seconds(p) for p in pids)
            c0 = time.process_time()
            methods[m](count[m], samples[m])
            client_cpu[m] += time.process_time() - c0
            server_cpu[m] += sum(cpu_seconds(p) for p in pids) - s0
    history = len(wb.history)
    wb.close_all()
    loop.close()

    labels = {
        "acall": "(a) await Workbench.acall (caller's loop)",
        "call": "(b) Workbench.call from the main thread",
        "toolset": "(c) pydantic-ai: await wb.toolset(...).call_tool(...)",
        "langchain": "(info) LangChain: await wb.langchain_tools(...)[0].ainvoke(...)",
        "agent": "(info) pydantic-ai agent run: FunctionModel, one toolset call",
        "agent_acall": "(info) the same run, its tool an async function awaiting wb.acall",
        "agent_plain": "(info) the same run, its tool answering at once",
    }
    rows = []
    for m in names:
        ms = [s * 1000 for s in samples[m]]
        goals = (
            [{"kind": "ratio_max", "of": "toolsets/acall", "value": 1.10, "text": "≤ 1.10× (a)"}]
            if m == "toolset"
            else []
        )
        baseline = BASELINES.get(m, "toolsets/acall")
        rows.append(
            row(
                SECTION,
                f"toolsets/{m}",
                labels[m],
                "ms",
                ms,
                baseline=baseline,
                goals=goals,
                extra={
                    "client_cpu_ms_per_call": client_cpu[m] * 1000 / len(ms),
                    "server_cpu_ms_per_call": server_cpu[m] * 1000 / len(ms),
                },
            )
        )
    by = {r["key"]: r for r in rows}
    plain_ms = by["toolsets/agent_plain"]["median"]
    rows.append(
        row(
            SECTION,
            "toolsets/in_agent_acall",
            "(info) wb.acall inside an agent run: by-hand run − answering run (medians)",
            "ms",
            [by["toolsets/agent_acall"]["median"] - plain_ms],
            baseline="toolsets/acall",
        )
    )
    rows.append(
        row(
            SECTION,
            "toolsets/in_agent_toolset",
            "(info) the toolset call inside an agent run: toolset run − answering run (medians)",
            "ms",
            [by["toolsets/agent"]["median"] - plain_ms],
            baseline="toolsets/in_agent_acall",
        )
    )
    return {
        "rows": rows,
        "meta": {"calls_per_method": total, "agent_runs": runs * rounds, "rounds": rounds, "history": history},
    }
