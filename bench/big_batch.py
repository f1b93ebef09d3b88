"""Section 14 (issue 42, opt-in: `--only bigbatch`, `make bench-batch`): 1,000,000 rows (50,000 in
`--quick`) through one checkpointed `wb.map` against an in-process echo server, its rows drawn from a
generator, and this process's RSS read every 10,000 rows as they are drawn.

With a checkpoint, `wb.map` keeps no more than `concurrency` rows and their answers: after a warm-up
(the first 5% of rows: the call history fills its 10,000 calls, the caches their entries), the RSS
must stay flat. Then, for contrast, a tenth as many rows mapped without a checkpoint, whose batch
holds every answer. The section takes about 11 minutes on 2 cores (the in-process call's ~1,600
calls/s), which is why the full bench (10 minutes in all) leaves it out.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import devnull, row, rss_mb

SECTION = "14. A 1,000,000-row checkpointed wb.map: memory"
SAMPLE_EVERY = 10_000


def echo_server() -> Any:
    """The in-process server of the section: one `echo` tool."""
    from mcp.server import MCPServer

    server = MCPServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def big_batch(quick: bool) -> dict[str, Any]:
    from workbench_magic import Workbench
    from workbench_magic.api.batches.checkpoints import uses_parquet

    total = 50_000 if quick else 1_000_000
    warm = total // 20
    concurrency = 8
    folder = Path(tempfile.mkdtemp(prefix="bench-bigbatch-"))
    checkpoint = folder / "batch"
    samples: list[tuple[int, float]] = []

    def rows(n: int) -> Iterator[dict[str, Any]]:
        for i in range(n):
            if i % SAMPLE_EVERY == 0:
                samples.append((i, rss_mb()))
            yield {"text": f"row {i}"}

    wb = Workbench(config={"toolboxes": {"t": {"mcpServers": {"s": {"python": "big_batch:echo_server"}}}}})
    wb.open("t")
    started_rss = rss_mb()
    saved, sys.stderr = sys.stderr, devnull()
    try:
        t0 = time.perf_counter()
        batch = wb.map("t/s/echo", rows(total), checkpoint=checkpoint, concurrency=concurrency)
        elapsed = time.perf_counter() - t0
    finally:
        sys.stderr = saved
    if len(batch) != total or repr(batch).split(", ")[1] != f"{total} ok":
        raise RuntimeError(f"the checkpointed map failed: {repr(batch).splitlines()[0]}")
    end_rss = rss_mb()
    del batch
    after_warm = [mb for i, mb in samples if i >= warm] + [end_rss]
    at_warm = after_warm[0]

    plain_rows = total // 10
    plain_input = [{"text": f"row {i}"} for i in range(plain_rows)]
    gc.collect()
    before_plain = rss_mb()
    plain = wb.map("t/s/echo", plain_input, concurrency=concurrency, progress=False)
    plain_growth = rss_mb() - before_plain
    del plain
    wb.close_all()
    fmt = "Parquet" if uses_parquet(checkpoint) else "JSON Lines"
    out = [
        row(SECTION, "bigbatch/warm", f"RSS after the warm-up ({warm:,} of {total:,} rows)", "MB", [at_warm]),
        row(
            SECTION,
            "bigbatch/after",
            f"largest RSS from then to the end ({total:,} rows, {fmt} checkpoint, concurrency {concurrency}; "
            f"read every {SAMPLE_EVERY:,} rows)",
            "MB",
            [max(after_warm)],
            baseline="bigbatch/warm",
            goals=[
                {"kind": "ratio_max", "of": "bigbatch/warm", "value": 1.05, "text": "flat: within 5% of the warm-up's"}
            ],
            extra={
                "median_mb": sorted(after_warm)[len(after_warm) // 2],
                "start_mb": started_rss,
                "rows_per_s": total / elapsed,
                "elapsed_s": elapsed,
                "samples": samples,
            },
        ),
        row(
            SECTION,
            "bigbatch/plain",
            f"(contrast) RSS a batch of {plain_rows:,} rows without a checkpoint adds (it holds every answer)",
            "MB",
            [plain_growth],
            extra={"mb_per_10k_rows": plain_growth / plain_rows * 10_000},
        ),
    ]
    return {"rows": out, "meta": {"rows": total, "warm_up_rows": warm, "format": fmt, "elapsed_s": elapsed}}
