"""`wb.map` over a Dask DataFrame: each partition mapped where Dask runs it, by that process's own
workbench, and the result a Dask DataFrame of the rows with two more columns, `result` and `error`.

Workers do not get the caller's workbench (it holds a loop, connections, processes): they get a
`PartitionSpec`, plain data that says which config file to read, which tool to call and how. Each
worker process makes one `Workbench` per config file the first time a partition needs it, and keeps
it for later partitions: its servers start on first use, once per worker. Reading the config file
there resolves its `${VARS}` from the worker's environment, as a server's do: secrets never enter
the task graph. In the caller's own process (Dask's default threaded scheduler) the caller's
workbench maps the partitions itself.

The result has the columns the same map's `Batch.to_pandas()` has: the rows' own, then the data
keys the tool's output schema declares (a key that is also a column's name as `result.KEY`; a tool
that declares none: `result`, a row's data or text), then `error`. The caller looks the tool up
first (as a local map does), so a tool that is not there, like a client that is not a running
`distributed.Client`, is one line before anything is sent to Dask.

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

from workbench_magic.api.batches.batch import data_column, declared_keys, row_data
from workbench_magic.api.extras import require_extra
from workbench_magic.api.targets import parse_identifier
from workbench_magic.vocabulary.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from workbench_magic.api.batches.batch import Batch
    from workbench_magic.config.settings import WorkbenchConfig
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.listings import ToolInfo
    from workbench_magic.vocabulary.results import ToolResult


class MapHost(Protocol):
    """What a Dask map needs of a workbench's public face (api/workbench.py's `Workbench`)."""

    @property
    def settings(self) -> WorkbenchConfig: ...

    @property
    def notebook_servers(self) -> frozenset[tuple[str, str]]: ...

    def map(self, target: Any, rows: Any, *, concurrency: int, timeout: float | None, progress: bool) -> Batch: ...

    def close_all(self) -> None: ...


RESULT, ERROR = "result", "error"
"""The columns of a row's data when the tool declares no output schema, and of its error's text."""

_CALLERS: weakref.WeakValueDictionary[str, MapHost] = weakref.WeakValueDictionary()
"""The workbenches that started a Dask map, in their own process, by token."""
_CLOSING: weakref.WeakSet[Any] = weakref.WeakSet()
"""The clients whose workers have the plugin that closes their workbenches (dask_workers.py)."""
_WORKERS: dict[str, MapHost] = {}
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
    data: tuple[str, ...] = ()
    """The data keys the tool's output schema declares, each a column (none: one `result` column)."""
    kinds: tuple[str, ...] = ()
    """The JSON type each of those keys declares (`number` and `string` columns get their dtype)."""


def is_dask_frame(rows: Any) -> bool:
    """Whether `rows` is a Dask DataFrame (told without importing Dask)."""
    return type(rows).__module__.split(".")[0] == "dask" and hasattr(rows, "map_partitions")


def map_dask(
    workbench: MapHost,
    lookup: Callable[[ToolIdentifier], ToolInfo],
    target: Any,
    frame: Any,
    partition_mapper: Callable[[pd.DataFrame, PartitionSpec], pd.DataFrame],
    *,
    concurrency: int,
    timeout: float | None,
    client: Any = None,
) -> Any:
    """`wb.map(target, ddf)`: a Dask DataFrame of `frame`'s rows plus the tool's data columns and
    `error` (the columns of `Batch.to_pandas()`), each partition in its order; persisted on `client`
    (a `distributed.Client`) when one is given. `lookup(ident)` finds the tool as a call would.

    `partition_mapper(partition, spec)` maps one partition where Dask runs it: a module-level
    function of the module that defines `Workbench` (api/workbench.py), so that unpickling it on a
    worker imports the class it makes (`map_partition` with it)."""
    if client is not None:  # a cluster's client: a Dask DataFrame alone does not imply distributed
        require_extra("distributed", extra="dask", feature="wb.map on a Dask cluster")
        _check_client(client)
    ident = parse_identifier(target)
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
    tool = lookup(ident)  # not there: raises, as a call would
    keys = tuple(declared_keys(tool.output_schema))
    added = _data_columns(keys, frame.columns)
    if ERROR in frame.columns:
        raise UsageError(f"wb.map on a Dask DataFrame adds the columns {', '.join(added)} and error; rename error")
    token = secrets.token_hex(8)
    _CALLERS[token] = workbench
    properties = (tool.output_schema or {}).get("properties", {})
    kinds = tuple(_kind(properties.get(key)) for key in keys)
    spec = PartitionSpec(str(source.resolve()), str(ident), concurrency, timeout, token, keys, kinds)
    meta = frame._meta.copy()
    for column, kind in zip((*added, ERROR), (*_padded(kinds, len(added)), "string"), strict=True):
        meta[column] = _column([], kind, meta.index)
    mapped = frame.map_partitions(partition_mapper, spec, meta=meta)
    runs_on = client if client is not None else _default_client()
    if runs_on is not None and runs_on not in _CLOSING:
        from workbench_magic.api.batches.dask_workers import register

        register(runs_on, close_worker_workbenches)  # each worker closes its servers when it closes
        _CLOSING.add(runs_on)
    return client.persist(mapped) if client is not None else mapped


def _check_client(client: Any) -> None:
    """A `distributed.Client` that is not closed, or one line saying what it is."""
    from distributed import Client

    if not isinstance(client, Client):
        kind = type(client).__name__
        article = "an" if kind[:1].lower() in ("a", "e", "i", "o", "u") else "a"
        hint = f" (connect first: distributed.Client({client!r}))" if isinstance(client, str) else ""
        raise UsageError(
            "wb.map on a Dask cluster needs a distributed.Client (client= or wb.map_cluster), "
            f"not {article} {kind}: {client!r}{hint}"
        )
    status = getattr(client, "status", "running")
    if status in ("closing", "closed", "failed"):
        raise UsageError(
            f"wb.map's Dask client is {status}: pass a running distributed.Client (client= or wb.map_cluster)"
        )


def _data_columns(keys: tuple[str, ...], columns: Any) -> list[str]:
    """The data columns a mapped partition gains beside its own `columns` (as `Batch.to_pandas`
    names them): one per declared key, else `result`."""
    column = data_column(columns)
    return [column(key) for key in keys] if keys else [RESULT]


def _kind(schema: Any) -> str:
    """A declared key's JSON type, where it is one (`number`, `string`), else `any`."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind if kind in ("number", "string") else "any"


def _padded(kinds: tuple[str, ...], count: int) -> tuple[str, ...]:
    return kinds if len(kinds) == count else ("any",) * count


def _column(values: list[Any], kind: str, index: Any) -> Any:
    """A data column of a mapped partition: numbers as floats, text as pandas' text (so that each
    partition, and the meta, has the dtype `Batch.to_pandas()` infers for them), else as inferred."""
    import pandas as pd

    dtype: Any = object if not values else None
    if kind == "number":
        dtype = "float64"
    elif kind == "string":
        dtype = pd.Series(["", None]).dtype
    try:
        return pd.Series(values, index=index, dtype=dtype)
    except (TypeError, ValueError):  # a server's answer that does not fit its own schema
        return pd.Series(values, index=index, dtype=object)


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


def map_partition(make: Callable[[str], MapHost], partition: pd.DataFrame, spec: PartitionSpec) -> pd.DataFrame:
    """Map one partition (on whichever process Dask runs it): its rows, in their order, with the
    tool's data columns (`spec.data`'s keys, else `result`: a row's data, or its text: `_value`) and
    `error` (its text; None when it succeeded), as `Batch.to_pandas()` has them.
    `make(config)` makes this process's workbench of a config file, the first time one is needed."""
    out = partition.copy()
    added = _data_columns(spec.data, partition.columns)
    kinds = _padded(spec.kinds, len(added))
    if len(partition) == 0:
        for column, kind in zip((*added, ERROR), (*kinds, "string"), strict=True):
            out[column] = _column([], kind, out.index)
        return out
    workbench = _workbench(spec, make)
    batch = workbench.map(spec.tool, partition, concurrency=spec.concurrency, timeout=spec.timeout, progress=False)
    errors = [batch.error_text(i) for i in range(len(batch))]
    if spec.data:
        data = [{} if error is not None else row_data(r) for r, error in zip(batch, errors, strict=True)]
        for key, column, kind in zip(spec.data, added, kinds, strict=True):
            out[column] = _column([row.get(key) for row in data], kind, out.index)
    else:
        values = [None if error is not None else _value(r) for r, error in zip(batch, errors, strict=True)]
        out[RESULT] = _column(values, "any", out.index)
    out[ERROR] = _column(errors, "string", out.index)
    return out


def _value(result: ToolResult) -> Any:
    """A row's `result` when the tool declares no output schema: its data (the MCP SDK's
    `{"result": ...}` wrapper of a string or a list taken off), else its text."""
    data = row_data(result)
    return data["result"] if list(data) == ["result"] else data


def _workbench(spec: PartitionSpec, make: Callable[[str], MapHost]) -> MapHost:
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


def worker_workbenches() -> dict[str, MapHost]:
    """This process's workbenches made for partitions, by config file (what a worker keeps)."""
    return dict(_WORKERS)


__all__ = [
    "ERROR",
    "RESULT",
    "PartitionSpec",
    "close_worker_workbenches",
    "is_dask_frame",
    "map_dask",
    "map_partition",
    "worker_workbenches",
]
