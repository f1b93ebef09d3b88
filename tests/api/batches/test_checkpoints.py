"""Resumable `wb.map` (api/batches/checkpoints.py, api/batches/run.py): each finished row is written to the
checkpoint as it ends, and a batch run again with it calls only the rows it does not hold. The
server (tests/servers/tallyserver.py) counts on disk every call it answers, so what was called,
and how often, is the server's word, not ours."""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    SERVERS,
    interrupt_main_when,
    kernel_manager,
    python_server,
    running,
    toolbox,
    wait_until,
    write_config,
)

from workbench_magic import Batch, UsageError, Workbench
from workbench_magic.api.batches import checkpoints
from workbench_magic.api.batches.checkpoints import Checkpoint

ROWS = 40


@pytest.fixture
def tally(tmp_path: Path) -> Path:
    return tmp_path / "tally.txt"


@pytest.fixture
def wb(make_workbench: Any, tally: Path) -> Workbench:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": python_server(SERVERS / "tallyserver.py", str(tally))})}})
    wb.open("t")
    return wb


@pytest.fixture(params=["jsonl", "parquet"])
def checkpoint(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A JSON Lines checkpoint file, or a Parquet dataset folder (pyarrow is installed here)."""
    return tmp_path / ("batch.jsonl" if request.param == "jsonl" else "batch")


def counted(tally: Path) -> Counter[str]:
    """How many times the server answered each row."""
    return Counter(tally.read_text().split()) if tally.exists() else Counter()


def rows(n: int = ROWS, **extra: Any) -> list[dict[str, Any]]:
    return [{"row": f"r{i:03d}", **extra} for i in range(n)]


def test_a_run_writes_every_row_and_a_rerun_calls_none(wb: Workbench, tally: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "batch.jsonl"
    first = wb.map("t/s/tally", rows(), checkpoint=checkpoint, key="row", progress=False)
    assert [r.text for r in first] == [f"counted r{i:03d}" for i in range(ROWS)]
    assert counted(tally) == Counter(f"r{i:03d}" for i in range(ROWS))
    lines = checkpoint.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "workbench-magic checkpoint 1", "tool": "t/s/tally"}
    assert len(lines) == ROWS + 1
    again = wb.map("t/s/tally", rows(), checkpoint=checkpoint, key="row", progress=False)
    assert [r.text for r in again] == [r.text for r in first]
    assert sum(counted(tally).values()) == ROWS  # nothing called twice
    loaded = Batch.load(checkpoint)
    assert [r.text for r in loaded] == [r.text for r in first] and loaded.arguments == first.arguments


def finished(checkpoint: Path) -> int:
    """Rows the checkpoint holds now."""
    return len(Batch.load(checkpoint)) if checkpoint.exists() and checkpoint.stat().st_size else 0


def test_an_interrupted_batch_resumes_and_calls_each_row_once(wb: Workbench, tally: Path, checkpoint: Path) -> None:
    """The server parks every call after the 10th (uncounted until cancelled): the interrupt lands
    when 10 rows are answered and written, and the calls in flight are cancelled on the server."""
    watcher = interrupt_main_when(lambda: sum(counted(tally).values()) == 10 and finished(checkpoint) == 10, 60)
    with pytest.raises(KeyboardInterrupt):
        wb.map("t/s/tally", rows(park_after=10), checkpoint=checkpoint, key="row", concurrency=4, progress=False)
    watcher.join(60)
    assert [r.arguments["row"] for r in Batch.load(checkpoint)] == [f"r{i:03d}" for i in range(10)]
    with pytest.warns(UserWarning, match=r"^wb.map: rows 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 have other arguments"):
        # the rows answered first had `park_after`: under their key, their old answers stay
        resumed = wb.map("t/s/tally", rows(), checkpoint=checkpoint, key="row", concurrency=4, progress=False)
    assert [r.text for r in resumed] == [f"counted r{i:03d}" for i in range(ROWS)]
    assert counted(tally) == Counter(f"r{i:03d}" for i in range(ROWS))  # each row called once


def test_a_server_that_dies_mid_batch_costs_only_its_unfinished_rows(
    wb: Workbench, tally: Path, checkpoint: Path
) -> None:
    wb.call("t/s/exit_after", {"count": 14})
    first = wb.map("t/s/tally", rows(), checkpoint=checkpoint, key="row", concurrency=1, progress=False)
    failed = [i for i in range(ROWS) if first.error_text(i) is not None]
    assert failed == [14]  # the 15th call died with its server; the next ones started another
    rerun = wb.map("t/s/tally", rows(), checkpoint=checkpoint, key="row", retry_failed=True, progress=False)
    assert not rerun.errors and [r.text for r in rerun] == [f"counted r{i:03d}" for i in range(ROWS)]
    assert counted(tally) == Counter(f"r{i:03d}" for i in range(ROWS))  # each row called once


def test_failed_rows_run_again_only_when_asked(wb: Workbench, tally: Path, checkpoint: Path) -> None:
    batch = [{"row": f"r{i}", "fail": i % 2 == 1} for i in range(6)]
    first = wb.map("t/s/tally", batch, checkpoint=checkpoint, key="row", progress=False)
    assert sorted(first.tool_errors) == [1, 3, 5]
    wb.map("t/s/tally", batch, checkpoint=checkpoint, key="row", progress=False)
    assert sum(counted(tally).values()) == 6  # failed rows are finished rows
    fixed = [{**row, "fail": False} for row in batch]
    again = wb.map("t/s/tally", fixed, checkpoint=checkpoint, key="row", retry_failed=True, progress=False)
    assert not again.tool_errors and counted(tally) == Counter({"r1": 2, "r3": 2, "r5": 2, "r0": 1, "r2": 1, "r4": 1})
    assert not Batch.load(checkpoint).tool_errors  # the last line of a row counts


def test_rows_from_a_generator_and_a_key_function(wb: Workbench, tally: Path, checkpoint: Path) -> None:

    def generated() -> Any:
        yield from rows(5)

    first = wb.map("t/s/tally", generated(), checkpoint=checkpoint, key=lambda row: row["row"].upper(), progress=False)
    assert len(first) == 5
    assert sorted(Checkpoint(checkpoint, "t/s/tally").finished()) == [f"R{i:03d}" for i in range(5)]
    wb.map("t/s/tally", generated(), checkpoint=checkpoint, key=lambda row: row["row"].upper(), progress=False)
    assert sum(counted(tally).values()) == 5


def test_the_progress_bar_starts_at_the_rows_done(
    wb: Workbench, checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wb.map("t/s/tally", rows(6), checkpoint=checkpoint, progress=False)
    wb.map("t/s/tally", rows(9), checkpoint=checkpoint)
    err = capsys.readouterr().err.replace("\r", "\n")
    shown = [line for line in err.splitlines() if "t/s/tally" in line]
    assert "6/9" in shown[0] and "9/9" in shown[-1], err


def test_a_killed_writer_leaves_a_partial_line_that_runs_again(wb: Workbench, tally: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "batch.jsonl"
    wb.map("t/s/tally", rows(3), checkpoint=checkpoint, progress=False)
    lines = checkpoint.read_text().splitlines(keepends=True)
    checkpoint.write_text("".join(lines[:-1]) + lines[-1][:20])  # killed mid-line: no newline
    assert len(Batch.load(checkpoint)) == 2
    again = wb.map("t/s/tally", rows(3), checkpoint=checkpoint, progress=False)
    assert len(again) == 3 and sum(counted(tally).values()) == 4
    assert [r.text for r in Batch.load(checkpoint)] == [f"counted r{i:03d}" for i in range(3)]  # no joined line


def test_checkpoint_misuse_is_one_line(wb: Workbench, tmp_path: Path) -> None:
    checkpoint = tmp_path / "batch.jsonl"
    wb.map("t/s/tally", rows(2), checkpoint=checkpoint, progress=False)
    with pytest.raises(UsageError, match=r"^The checkpoint .*batch\.jsonl is of t/s/tally, not t/s/exit_after: "):
        wb.map("t/s/exit_after", [{"count": 1}], checkpoint=checkpoint, progress=False)
    with pytest.raises(UsageError, match=r"^Rows 0 and 1 have the same key 'x': a checkpoint needs one per row$"):
        wb.map("t/s/tally", [{"row": "x"}, {"row": "x"}], checkpoint=tmp_path / "other.jsonl", key="row")
    with pytest.raises(UsageError, match=r"^wb.map's key 'id' is not a column of row 0$"):
        wb.map("t/s/tally", rows(1), checkpoint=tmp_path / "other.jsonl", key="id")
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(UsageError, match=r"notes\.txt is not a wb.map checkpoint$"):
        Batch.load(tmp_path / "notes.txt")
    with pytest.raises(UsageError, match=r"^No checkpoint at .*missing\.jsonl$"):
        Batch.load(tmp_path / "missing.jsonl")


def test_a_kernel_killed_mid_batch_leaves_every_answered_row_and_the_rerun_calls_each_once(
    make_workbench: Any, tally: Path, tmp_path: Path, checkpoint: Path
) -> None:
    """A 2,000-row batch in a real kernel, SIGKILLed once 1,000 rows are answered and written (the
    server parks the calls after those, uncounted): the checkpoint holds exactly those rows, the
    server goes with its kernel, and a run in another process calls each other row once."""
    total, stop = 2000, 1000
    config = write_config(
        tmp_path / "workbench-config.json",
        {"toolboxes": {"t": toolbox({"s": python_server(SERVERS / "tallyserver.py", str(tally))})}},
    )
    km = kernel_manager()
    km.start_kernel(cwd=str(tmp_path), env={**os.environ, "WORKBENCH_CONFIG": str(config)})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        code = (
            "from workbench_magic import Workbench\n"
            f"rows = [{{'row': f'r{{i:04d}}', 'park_after': {stop}}} for i in range({total})]\n"
            f"Workbench.shared().map('t/s/tally', rows, checkpoint={str(checkpoint)!r}, key='row', progress=False)"
        )
        kc.execute(code)
        reached = wait_until(lambda: sum(counted(tally).values()) == stop and finished(checkpoint) == stop, 120)
        assert reached, (sum(counted(tally).values()), finished(checkpoint))
        server = running(str(tally))  # its command line names the tally file (a zygote may have forked it)
        assert server
        os.kill(km.provisioner.pid, signal.SIGKILL)  # type: ignore[union-attr]
        assert wait_until(lambda: not running(str(tally)) & server, 30), "the server outlived its kernel"
    finally:
        kc.stop_channels()
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    kept = Batch.load(checkpoint)
    assert len(kept) == stop and {r.arguments["row"] for r in kept} == set(counted(tally))
    wb = make_workbench(config)
    with pytest.warns(UserWarning, match=r"^wb.map: rows 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 \(and 990 more\) have other"):
        # the rows answered before the kill had `park_after`: under their key, their old answers stay
        rerun = wb.map("t/s/tally", [{"row": f"r{i:04d}"} for i in range(total)], checkpoint=checkpoint, key="row")
    assert len(rerun) == total and not rerun.errors and not rerun.tool_errors
    assert counted(tally) == Counter(f"r{i:04d}" for i in range(total))  # the server's count: each row once


def test_a_parquet_checkpoint_moves_its_rows_into_part_files(
    wb: Workbench, tally: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    monkeypatch.setattr(checkpoints, "PART_ROWS", 7)
    folder = tmp_path / "batch"
    first = wb.map("t/s/tally", rows(), checkpoint=folder, key="row", progress=False)
    parts = sorted(folder.glob("part-*.parquet"))
    assert len(parts) == 6 and sum(pq.read_metadata(p).num_rows for p in parts) == ROWS  # 5 of 7 rows, then 5
    assert (folder / "journal.jsonl").read_text().count("\n") == 1  # the header alone: every row is in a part
    assert [r.text for r in Batch.load(folder)] == [r.text for r in first]
    # a crash between a part's rename and the journal's emptying: a row in both is read once
    journal = folder / "journal.jsonl"
    (folder / "part-00099.parquet.tmp").write_bytes(b"half a part")  # a part never renamed: not read
    record = Checkpoint(folder, "t/s/tally").finished()["r000"]
    with journal.open("a") as file:
        file.write(record.to_line())
    again = wb.map("t/s/tally", rows(), checkpoint=folder, key="row", progress=False)
    assert len(again) == ROWS and sum(counted(tally).values()) == ROWS
    assert len(Batch.load(folder)) == ROWS


def test_a_checkpointed_batch_draws_rows_as_it_calls_them_and_keeps_no_answers(
    make_workbench: Any, tally: Path, checkpoint: Path
) -> None:
    """With a checkpoint, a row is drawn from a generator only when a worker is free for it, and the
    batch holds no answers: the ones alive afterwards are the history's few."""
    wb = make_workbench(
        {"toolboxes": {"t": toolbox({"s": python_server(SERVERS / "tallyserver.py", str(tally))})}}, history_limit=3
    )
    ahead: list[int] = []

    def generated() -> Any:
        for i in range(120):
            ahead.append(i - sum(counted(tally).values()))  # rows drawn and not answered, this one included
            yield {"row": f"r{i:03d}"}

    gc.collect()
    before = _results_alive()
    batch = wb.map("t/s/tally", generated(), checkpoint=checkpoint, concurrency=4, progress=False)
    assert max(ahead) <= 4 + 1  # the workers' rows, and the one drawn to find the first to call
    gc.collect()
    assert _results_alive() - before <= 3 + 4  # the history's, and the workers' last: none per row
    assert len(batch) == 120 and repr(batch).startswith("Batch t/s/tally: 120 rows, 120 ok, 0 tool errors")
    assert [r.text for r in batch] == [f"counted r{i:03d}" for i in range(120)]  # read when used


def _results_alive() -> int:
    from workbench_magic.vocabulary.results import ToolResult

    return sum(isinstance(o, ToolResult) for o in gc.get_objects())


def test_a_batch_shows_its_failures_before_it_reads_its_rows(wb: Workbench, checkpoint: Path) -> None:
    batch = wb.map("t/s/tally", [{"row": f"r{i}", "fail": i in (2, 5)} for i in range(8)], checkpoint=checkpoint)
    lines = repr(batch).splitlines()
    assert lines[0].startswith("Batch t/s/tally: 8 rows, 6 ok, 2 tool errors, 0 raised")
    assert [line.split(":")[0].strip() for line in lines[1:]] == ["row 2", "row 5"]
    html = batch._repr_html_()
    assert html.count("<tr><td>") == 8 and html.count(">tool error<") == 2
    assert sorted(batch.tool_errors) == [2, 5] and repr(batch).splitlines()[1:] == lines[1:]  # the same, read


def test_rows_that_moved_or_were_hidden_are_the_batch_s_rows(wb: Workbench, tally: Path, checkpoint: Path) -> None:
    """A row the checkpoint holds at another index (rows given in another order), or hidden by a row
    written later at its index (a run with other rows in between), is written again where this run
    has it, and not called again."""
    first = wb.map("t/s/tally", rows(5), checkpoint=checkpoint, key="row", progress=False)
    backwards = wb.map("t/s/tally", rows(5)[::-1], checkpoint=checkpoint, key="row", progress=False)
    assert [r.text for r in backwards] == [r.text for r in first][::-1] and sum(counted(tally).values()) == 5
    plain = tally.parent / "plain.jsonl"  # keys of index and arguments
    original = rows(3)
    edited = [original[0], {"row": "other"}, original[2]]
    wb.map("t/s/tally", original, checkpoint=plain, progress=False)
    assert [r.text for r in wb.map("t/s/tally", edited, checkpoint=plain, progress=False)][1] == "counted other"
    again = wb.map("t/s/tally", original, checkpoint=plain, progress=False)
    assert [r.text for r in again] == [f"counted r{i:03d}" for i in range(3)]
    assert counted(tally)["r001"] == 2 and counted(tally)["other"] == 1  # once for each checkpoint


def test_a_dataframe_is_drawn_in_chunks_across_their_edges(wb: Workbench, tally: Path, checkpoint: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"row": [f"r{i:04d}" for i in range(1100)]})  # the chunks hold 1,000 rows
    batch = wb.map("t/s/tally", frame, checkpoint=checkpoint, key="row", concurrency=16, progress=False)
    assert [r.text for r in batch[995:1005]] == [f"counted r{i:04d}" for i in range(995, 1005)]
    assert counted(tally) == Counter(frame["row"])


def _noise() -> bytes:
    """Bytes that are neither UTF-8 nor Parquet, without a newline (the same ones every run)."""
    return random.Random(53).randbytes(400).replace(b"\n", b"")


@pytest.mark.parametrize("damage", ["whole", "line"])
def test_a_corrupt_checkpoint_is_one_line_naming_its_file(
    wb: Workbench, tally: Path, checkpoint: Path, damage: str
) -> None:
    """Random bytes over the file (a JSON Lines checkpoint, or a Parquet dataset's part file), or as a
    line of its own after the rows (in a dataset's journal): `wb.map` and `Batch.load` say which
    file, in one line, and nothing is called."""
    wb.map("t/s/tally", rows(3), checkpoint=checkpoint, key="row", progress=False)
    if checkpoint.is_dir():
        damaged = sorted(checkpoint.glob("part-*.parquet"))[0] if damage == "whole" else checkpoint / "journal.jsonl"
    else:
        damaged = checkpoint
    if damage == "whole":
        damaged.write_bytes(_noise())
    else:
        with damaged.open("ab") as file:
            file.write(_noise() + b"\n")
    for attempt in (
        lambda: wb.map("t/s/tally", rows(3), checkpoint=checkpoint, key="row", progress=False),
        lambda: Batch.load(checkpoint),
    ):
        with pytest.raises(UsageError) as caught:
            attempt()
        text = str(caught.value)
        assert text.startswith(f"The checkpoint {checkpoint}") or text.startswith(f"{damaged} "), text
        assert damaged.name in text and "\n" not in text
        assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert sum(counted(tally).values()) == 3  # nothing called again


def test_rows_answered_with_other_arguments_under_their_key_are_named(
    wb: Workbench, tally: Path, checkpoint: Path
) -> None:
    """A row whose key the checkpoint holds keeps its old answer, although its arguments changed:
    a warning names those rows (the first ten) and the checkpoint; a rerun of the same rows says
    nothing."""
    first = wb.map("t/s/tally", rows(30), checkpoint=checkpoint, key="row", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wb.map("t/s/tally", rows(30), checkpoint=checkpoint, key="row", progress=False)
    changed = [{**row, "delay": 0} if i in (3, 7) else row for i, row in enumerate(rows(30))]
    with pytest.warns(UserWarning) as caught:
        again = wb.map("t/s/tally", changed, checkpoint=checkpoint, key="row", progress=False)
    assert [str(w.message) for w in caught] == [
        f"wb.map: rows 3, 7 have other arguments than the checkpoint {checkpoint} answered under their key: "
        "their old answers are kept (a new checkpoint, or a key that tells the rows apart, calls them again)"
    ]
    assert caught[0].filename == __file__  # the warning points at the map, not at the workbench
    assert [r.text for r in again] == [r.text for r in first] and sum(counted(tally).values()) == 30
    everything = [{**row, "delay": 0} for row in rows(30)]
    with pytest.warns(UserWarning, match=r"^wb.map: rows 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 \(and 20 more\) have other"):
        wb.map("t/s/tally", everything, checkpoint=checkpoint, key="row", progress=False)
    assert sum(counted(tally).values()) == 30


def test_a_checkpoint_is_never_mixed_into_files_it_did_not_make(wb: Workbench, tally: Path, tmp_path: Path) -> None:
    """A folder of the user's files (a Parquet dataset's place) or a file that is not a checkpoint is
    refused in one line and left as it was; an empty folder becomes one, and a checkpoint's own
    folder is known again by its journal."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes\n")
    with pytest.raises(UsageError) as caught:
        wb.map("t/s/tally", rows(2), checkpoint=folder, progress=False)
    assert str(caught.value) == (
        f"The folder {folder} holds other files and is not a wb.map checkpoint: give the checkpoint a new path"
    )
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    with pytest.raises(UsageError, match=r"^The folder .*mine holds other files and is not a wb.map checkpoint"):
        Batch.load(folder)
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"a": 1}\n')
    with pytest.raises(UsageError, match=r"mine\.jsonl is not a wb.map checkpoint$"):
        wb.map("t/s/tally", rows(2), checkpoint=mine, progress=False)
    assert mine.read_text() == '{"a": 1}\n'
    assert sum(counted(tally).values()) == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert len(wb.map("t/s/tally", rows(2), checkpoint=empty, progress=False)) == 2
    assert len(wb.map("t/s/tally", rows(2), checkpoint=empty, progress=False)) == 2
    assert sum(counted(tally).values()) == 2
