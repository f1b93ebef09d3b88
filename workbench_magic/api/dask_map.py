"""`wb.map` over a Dask DataFrame: each partition mapped where Dask runs it, by that process's own
workbench, and the result a Dask DataFrame of the rows with two more columns, `result` and `error`.

Workers do not get the caller's workbench (it holds a loop, connections, processes): they get a
`PartitionSpec`, plain data that says which config file to read, which tool to call and how. Each
worker process makes one `Workbench` per config file the first time a partition needs it, and keeps
it for later partitions: its servers start on first use, once per worker. Reading the config file
there resolves its `${VARS}` from the worker's environment, as a server's do: secrets never enter
the task graph. In the caller's own process (Dask's default threaded scheduler) the caller's
workbench maps the partitions itself.

A server that lives in the caller's process (`"python": ...`, or added from the notebook) cannot
travel to a worker: mapping its tool over a Dask DataFrame is a one-line `UsageError`, and so is a
workbench whose config is not a file the workers can read.
"""

from __future__ import annotations

import atexit
import secrets
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.api.extras import require_extra
from workbench_magic.api.server_features import parse_identifier
from workbench_magic.vocabulary.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from workbench_magic.config.models import WorkbenchConfig
    from workbench_magic.vocabulary.batches import Batch
    from workbench_magic.vocabulary.results import ToolResult


class Workbench(Protocol):
    """What a Dask map needs of a workbench (api/workbench.py's `Workbench`)."""

    @property
    def settings(self) -> WorkbenchConfig: ...

    @property
    def notebook_servers(self) -> frozenset[tuple[str, str]]: ...

    def map(self, target: Any, rows: Any, *, concurrency: int, timeout: float | None, progress: bool) -> Batch: ...

    def close_all(self) -> None: ...


COLUMNS = ("result", "error")
"""The columns a mapped partition gains: each row's data (or text), and its error's text (None: ok)."""

_CALLERS: weakref.WeakValueDictionary[str, Workbench] = weakref.WeakValueDictionary()
"""The workbenches that started a Dask map, in their own process, by token."""
_CLOSING: weakref.WeakSet[Any] = weakref.WeakSet()
"""The clients whose workers have the plugin that closes their workbenches (dask_workers.py)."""
_WORKERS: dict[str, Workbench] = {}
"""This process's workbench of each config file a partition named (a Dask worker keeps them)."""


@dataclass(frozen=True)
class PartitionSpec:
    """What a worker needs to map a partition: plain data, pickled into the task graph."""

    config: str
    """The config file's path (each worker reads it, with its own environment)."""
    tool: str
    concurrency: int
    timeout: float | None
    caller: str
    """The token of the caller's workbench (used instead when the partition runs in its process)."""


def is_dask_frame(rows: Any) -> bool:
    """Whether `rows` is a Dask DataFrame (told without importing Dask)."""
    return type(rows).__module__.split(".")[0] == "dask" and hasattr(rows, "map_partitions")


def map_dask(
    workbench: Workbench,
    target: Any,
    frame: Any,
    partition_mapper: Callable[[pd.DataFrame, PartitionSpec], pd.DataFrame],
    *,
    concurrency: int,
    timeout: float | None,
    client: Any = None,
) -> Any:
    """`wb.map(target, ddf)`: a Dask DataFrame of `frame`'s rows plus `result` and `error`, each
    partition in its order; persisted on `client` (a `distributed.Client`) when one is given.

    `partition_mapper(partition, spec)` maps one partition where Dask runs it: a module-level
    function of the module that defines `Workbench` (api/workbench.py), so that unpickling it on a
    worker imports the class it makes (`map_partition` with it)."""
    if client is not None:  # a cluster's client: a Dask DataFrame alone does not imply distributed
        require_extra("distributed", extra="dask", feature="wb.map on a Dask cluster")
    ident = parse_identifier(target)
    clash = [c for c in COLUMNS if c in frame.columns]
    if clash:
        raise UsageError(f"wb.map on a Dask DataFrame adds the columns result and error; rename {', '.join(clash)}")
    settings = workbench.settings
    config = settings.server(ident.toolbox, ident.server)
    if config.transport == "python" or (ident.toolbox, ident.server) in workbench.notebook_servers:
        raise UsageError(
            f"Server '{ident.server}' (toolbox '{ident.toolbox}') runs in this process, so it cannot travel to "
            "Dask workers: serve it over stdio or HTTP in the config file"
        )
    source = Path(settings.source)
    if not source.is_file():
        raise UsageError(
            "wb.map on a Dask DataFrame needs the workbench's config in a file (Workbench(config=PATH)): "
            "each worker reads it, with its own environment's secrets"
        )
    token = secrets.token_hex(8)
    _CALLERS[token] = workbench
    spec = PartitionSpec(str(source.resolve()), str(ident), concurrency, timeout, token)
    meta = frame._meta.copy()
    for column in COLUMNS:
        meta[column] = None  # an object column
    mapped = frame.map_partitions(partition_mapper, spec, meta=meta)
    runs_on = client if client is not None else _default_client()
    if runs_on is not None and runs_on not in _CLOSING:
        from workbench_magic.api.dask_workers import register

        register(runs_on, close_worker_workbenches)  # each worker closes its servers when it closes
        _CLOSING.add(runs_on)
    return client.persist(mapped) if client is not None else mapped


def _default_client() -> Any:
    """The `distributed.Client` Dask computes on by default, if there is one."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:  # no client: Dask's own scheduler
        return None


def map_partition(make: Callable[[str], Workbench], partition: pd.DataFrame, spec: PartitionSpec) -> pd.DataFrame:
    """Map one partition (on whichever process Dask runs it): its rows, in their order, with the
    tool's `result` (a row's data, else its text: `_value`) and `error` (its text; None when it
    succeeded).
    `make(config)` makes this process's workbench of a config file, the first time one is needed."""
    out = partition.copy()
    if len(partition) == 0:
        for column in COLUMNS:
            out[column] = None
        return out
    workbench = _workbench(spec, make)
    batch = workbench.map(spec.tool, partition, concurrency=spec.concurrency, timeout=spec.timeout, progress=False)
    out["result"] = [None if batch.error_text(i) is not None else _value(r) for i, r in enumerate(batch)]
    out["error"] = [batch.error_text(i) for i in range(len(batch))]
    return out


def _value(result: ToolResult) -> Any:
    """A row's `result`: its data (the MCP SDK's `{"result": ...}` wrapper of a string or a list
    taken off, as `Batch.to_pandas` spreads it), else its text."""
    data = result.data
    if isinstance(data, dict) and list(data) == ["result"]:
        return data["result"]
    return data if data is not None else result.text


def _workbench(spec: PartitionSpec, make: Callable[[str], Workbench]) -> Workbench:
    """The caller's workbench in its own process, else this process's one of the config file."""
    caller = _CALLERS.get(spec.caller)
    if caller is not None:
        return caller
    made = _WORKERS.get(spec.config)
    if made is None:
        made = _WORKERS[spec.config] = make(spec.config)
        atexit.register(made.close_all)
    return made


def close_worker_workbenches() -> None:
    """Close this process's workbenches made for partitions (a worker that closes: dask_workers.py)."""
    while _WORKERS:
        _, made = _WORKERS.popitem()
        made.close_all()


def worker_workbenches() -> dict[str, Workbench]:
    """This process's workbenches made for partitions, by config file (what a worker keeps)."""
    return dict(_WORKERS)


__all__ = [
    "COLUMNS",
    "PartitionSpec",
    "close_worker_workbenches",
    "is_dask_frame",
    "map_dask",
    "map_partition",
    "worker_workbenches",
]
