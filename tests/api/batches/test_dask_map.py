"""`wb.map` over a Dask DataFrame (api/batches/dask_map.py): on Dask's default scheduler in this process, and on
a `LocalCluster` of two worker processes, each mapping its partitions with a workbench of its own,
made from the config file, against real servers."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import npm_server, running, stdio_server, toolbox, wait_until, write_config

from workbench_magic import MissingExtraError, ToolNotFoundError, UsageError, Workbench
from workbench_magic.api.batches.dask_map import worker_workbenches

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.timeout(300)


MARK = "WB_DASK_TEST"


def everything_servers(mark: str) -> set[int]:
    """The live server-everything processes whose environment holds this test's mark."""
    found = set()
    for pid in running("server-everything"):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"{MARK}={mark}".encode() in environ:
            found.add(pid)
    return found


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WB_DASK_SECRET", "never-in-the-graph")
    return write_config(
        tmp_path / "workbench-config.json",
        {
            "toolboxes": {
                "t": toolbox({"s": stdio_server(env={"TOKEN": "${WB_DASK_SECRET}"})}),
                # marked: the cluster fixture counts this test's servers, not those of the suite's other workers
                "e": toolbox({"everything": npm_server("everything", "stdio", env={MARK: str(tmp_path)})}),
            }
        },
    )


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench], config: Path) -> Workbench:
    return make_workbench(config)


def test_the_default_scheduler_maps_each_partition_in_order_with_errors_as_columns(wb: Workbench) -> None:
    rows = pd.DataFrame({"a": [float(i) for i in range(12)], "b": [0.0 if i % 5 == 0 else 2.0 for i in range(12)]})
    frame = dd.from_pandas(rows, npartitions=3)
    mapped = wb.map("t/s/divide", frame)
    assert isinstance(mapped, dd.DataFrame) and list(mapped.columns) == ["a", "b", "result", "error"]
    out = mapped.compute()
    local = wb.map("t/s/divide", rows, progress=False)
    assert list(out.index) == list(range(12)) and list(out["a"]) == list(rows["a"])
    assert [None if pd.isna(e) else e for e in out["error"]] == [local.error_text(i) for i in range(12)]
    assert out["error"].notna().sum() == 3 and "division by zero" in out.loc[5, "error"]
    assert out.loc[3, "result"] == 1.5 and pd.isna(out.loc[5, "result"])


def test_secrets_reach_the_servers_not_the_task_graph(wb: Workbench) -> None:
    frame = dd.from_pandas(pd.DataFrame({"name": ["TOKEN"] * 4}), npartitions=2)
    mapped = wb.map("t/s/env", frame)
    import cloudpickle

    graph = cloudpickle.dumps(dict(mapped.__dask_graph__()))
    assert b"never-in-the-graph" not in graph and b"WB_DASK_SECRET" not in graph
    assert list(mapped.compute()["result"]) == ["never-in-the-graph"] * 4  # the server got it all the same


@pytest.fixture
def cluster(config: Path) -> Iterator[Any]:
    """Two worker processes, started after `config` set the secret in the environment they inherit (a
    worker reads it there); the servers of their workbenches end with them."""
    mark = str(config.parent)
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as local,
        distributed.Client(local) as client,
    ):
        yield client
    assert wait_until(lambda: not everything_servers(mark), 30), "a worker's server outlived its worker"


def _connects() -> dict[str, int]:
    """Run on each worker: how often its workbench of each config connected the npm server."""
    return {path: wb._core.connection("e", "everything").connects for path, wb in worker_workbenches().items()}


def test_a_local_cluster_maps_10000_rows_with_each_worker_starting_its_server_once(cluster: Any, config: Path) -> None:
    wb = Workbench(config=config, connect_timeout=90)  # closed here: Dask's own helper processes outlive a test
    try:
        rows = pd.DataFrame({"message": [f"m{i}" for i in range(10_000)]})
        frame = dd.from_pandas(rows, npartitions=8)
        out = wb.map("e/everything/echo", frame, client=cluster).compute()
        local = wb.map("e/everything/echo", rows.head(50), progress=False)
        assert len(out) == 10_000 and list(out["message"]) == list(rows["message"])
        assert list(out["result"].head(50)) == [r.text for r in local] and out["error"].isna().all()
        assert list(out["result"].tail(1)) == ["Echo: m9999"]
        per_worker = cluster.run(_connects)
        assert len(per_worker) == 2 and all(found == {str(config): 1} for found in per_worker.values())
        # `map_cluster` chooses the cluster when no client is named; the workers keep their servers
        wb.map_cluster = cluster
        again = wb.map("e/everything/echo", frame).compute()
        assert list(again["result"]) == list(out["result"])
        assert cluster.run(_connects) == per_worker
    finally:
        wb.close_all()


def test_what_cannot_travel_to_workers_is_one_line(make_workbench: Callable[..., Workbench], wb: Workbench) -> None:
    frame = dd.from_pandas(pd.DataFrame({"name": ["penguins"]}), npartitions=1)
    demo = make_workbench(None)
    with pytest.raises(UsageError, match=r"^Server 'datasets' \(toolbox 'demo'\) runs in this process, so it cannot"):
        demo.map("demo/datasets/describe_dataset", frame)
    inline = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    with pytest.raises(UsageError, match=r"^wb.map on a Dask DataFrame needs the workbench's config in a file"):
        inline.map("t/s/echo", dd.from_pandas(pd.DataFrame({"text": ["x"]}), npartitions=1))
    with pytest.raises(UsageError, match=r"^A checkpoint is for a map in this process"):
        wb.map("t/s/echo", frame, checkpoint="x.jsonl")
    with pytest.raises(
        UsageError, match=r"^wb.map on a Dask DataFrame adds the columns result and error; rename error$"
    ):
        wb.map("t/s/echo", dd.from_pandas(pd.DataFrame({"text": ["x"], "error": [None]}), npartitions=1))


def test_a_cluster_without_distributed_names_the_extra(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = dd.from_pandas(pd.DataFrame({"text": ["x"]}), npartitions=1)
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails, as without the extra
    with pytest.raises(MissingExtraError) as caught:
        wb.map("t/s/echo", frame, client=object())
    assert str(caught.value) == "wb.map on a Dask cluster needs the 'dask' extra: pip install 'workbench-magic[dask]'"
    assert caught.value.__context__ is None
    # Dask's own scheduler needs no distributed
    assert wb.map("t/s/echo", frame).compute()["error"].isna().all()


def test_a_spec_is_plain_data(wb: Workbench) -> None:
    frame = dd.from_pandas(pd.DataFrame({"text": ["x"]}), npartitions=1)
    graph = dict(wb.map("t/s/echo", frame).__dask_graph__())
    import cloudpickle  # as distributed sends a graph: it pickles without the workbench

    assert b"LoopThread" not in cloudpickle.dumps(graph)


def test_a_wrong_client_or_tool_is_one_line_before_anything_runs(wb: Workbench) -> None:
    frame = dd.from_pandas(pd.DataFrame({"text": ["x", "y"]}), npartitions=2)
    with pytest.raises(ToolNotFoundError) as missing:
        wb.map("t/s/nope", frame)
    assert str(missing.value) == "Tool 'nope' not found in server 's' (toolbox 't')"
    wrong = {
        42: "not an int: 42",
        "tcp://127.0.0.1:1": "not a str: 'tcp://127.0.0.1:1' (connect first: distributed.Client('tcp://127.0.0.1:1'))",
    }
    for client, end in wrong.items():
        with pytest.raises(UsageError) as caught:
            wb.map("t/s/echo", frame, client=client)
        needs = "wb.map on a Dask cluster needs a distributed.Client (client= or wb.map_cluster)"
        assert str(caught.value) == f"{needs}, {end}"
        assert caught.value.__context__ is None
    wb.map_cluster = "tcp://127.0.0.1:1"
    with pytest.raises(UsageError, match=r"^wb.map on a Dask cluster needs a distributed.Client .*, not a str: 'tcp"):
        wb.map("t/s/echo", frame)
    wb.map_cluster = None
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as closed:
        pass
    with pytest.raises(UsageError) as caught:
        wb.map("t/s/echo", frame, client=closed)
    assert str(caught.value) == (
        "wb.map's Dask client is closed: pass a running distributed.Client (client= or wb.map_cluster)"
    )
    assert wb.map("t/s/echo", frame).compute()["result"].tolist() == ["x", "y"]  # the workbench is fine


def test_a_map_has_the_same_columns_and_values_locally_and_on_a_cluster(cluster: Any, config: Path) -> None:
    """The tool's output schema gives the columns (`add`: `sum`), on a cluster's workers, on Dask's own
    scheduler and in `Batch.to_pandas()`; a row that raised (a required argument missing) has its
    error there and no data."""
    wb = Workbench(config=config, connect_timeout=90)  # closed here: Dask's own helper processes outlive a test
    try:
        rows = pd.DataFrame({"a": [float(i) for i in range(8)], "b": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0, 7.0, 8.0]})
        frame = dd.from_pandas(rows, npartitions=4)
        local = wb.map("t/s/add", rows, progress=False).to_pandas()
        assert list(local.columns) == ["a", "b", "sum", "error"]
        assert local.loc[2, "error"].endswith("argument 'b' is required, and its value is missing (NaN)")
        mapped = wb.map("t/s/add", frame, client=cluster)
        assert list(mapped.columns) == list(local.columns)
        on_cluster = mapped.compute().reset_index(drop=True)
        in_process = wb.map("t/s/add", frame).compute().reset_index(drop=True)
        for out in (on_cluster, in_process):
            assert list(out.columns) == list(local.columns)
            pd.testing.assert_frame_equal(out, local, check_dtype=False)
    finally:
        wb.close_all()
