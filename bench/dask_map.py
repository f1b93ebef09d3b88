"""Section 13: `wb.map` in the caller's process against the same rows on a Dask `LocalCluster` of two
worker processes (issue 42): 4,000 `echo` calls on our test server over stdio, interleaved.

The cluster is started, and each worker's server connected, before the timing (one warm-up map):
what is timed is the map itself. The workers map their partitions with workbenches of their own
(api/batches/dask_map.py); the local map runs at the same concurrency per process.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import devnull, row, test_server

SECTION = "13. Dask: wb.map locally and on a 2-worker LocalCluster"


def dask_map(quick: bool) -> dict[str, Any]:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    from workbench_magic import Workbench

    total = 1000 if quick else 4000
    reps = 2 if quick else 4
    concurrency = 8
    folder = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    config = folder / "workbench-config.json"
    config.write_text(json.dumps({"toolboxes": {"t": {"mcpServers": {"s": test_server()}}}}))
    rows = pd.DataFrame({"text": [f"x{i}" for i in range(total)]})
    frame = dd.from_pandas(rows, npartitions=8)
    wb = Workbench(config=str(config))
    walls: dict[str, list[float]] = {"local": [], "cluster": []}
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster) as client:

            def local() -> None:
                saved = sys.stderr
                sys.stderr = devnull()
                try:
                    batch = wb.map("t/s/echo", rows, concurrency=concurrency, progress=False)
                finally:
                    sys.stderr = saved
                if batch.errors or batch.tool_errors:
                    raise RuntimeError(f"the local map failed: {batch!r}")

            def on_cluster() -> None:
                out = wb.map("t/s/echo", frame, concurrency=concurrency, client=client).compute()
                if out["error"].notna().any() or len(out) != total:
                    raise RuntimeError("the cluster map failed")

            methods = {"local": local, "cluster": on_cluster}
            for fn in methods.values():  # warm-up: servers started, caches filled
                fn()
            names = list(methods)
            for r in range(reps):
                for m in names[r % 2 :] + names[: r % 2]:
                    t0 = time.perf_counter()
                    methods[m]()
                    walls[m].append(time.perf_counter() - t0)
    wb.close_all()
    labels = {
        "local": f"wb.map(concurrency={concurrency}) in this process, one server",
        "cluster": "wb.map of a Dask DataFrame (8 partitions), LocalCluster(n_workers=2), one server a worker",
    }
    out = []
    for m in names:
        median = sorted(walls[m])[len(walls[m]) // 2]
        out.append(
            row(
                SECTION,
                f"dask/{m}",
                f"{labels[m]} ({total} echo calls)",
                "s",
                walls[m],
                baseline=None if m == "local" else "dask/local",
                extra={"calls": total, "calls_per_s_median": total / median},
            )
        )
    return {"rows": out, "meta": {"calls": total, "reps": reps, "workers": 2, "partitions": 8}}
