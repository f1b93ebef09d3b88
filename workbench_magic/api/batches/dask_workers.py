"""What a `distributed` worker runs for `wb.map` over a Dask DataFrame besides the partitions: the
plugin that closes the worker's workbenches (and so their servers) when the worker closes.

A worker's servers are its workbenches' child processes; a worker that ends without closing them
would leave them running (a stdio server need not exit when its stdin closes). Imported only where
`distributed` is (dask_map.py registers the plugin on the client a map runs on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

PLUGIN_NAME = "workbench-magic"


class ClosesWorkbenches(WorkerPlugin):
    """Close the worker's workbenches (`close()`, run on the worker) when it closes."""

    def __init__(self, close: Callable[[], None]) -> None:
        self.close = close

    def teardown(self, worker: Any) -> None:
        self.close()


def register(client: Any, close: Callable[[], None]) -> None:
    """Install the plugin on every worker of `client`'s cluster, now and as they join. Installed
    again under its name, a plugin's old copy is torn down: the caller installs it once a client."""
    client.register_plugin(ClosesWorkbenches(close), name=PLUGIN_NAME)


__all__ = ["PLUGIN_NAME", "ClosesWorkbenches", "register"]
