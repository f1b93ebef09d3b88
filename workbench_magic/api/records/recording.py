"""`Workbench`'s records of a session: traces of the wire, cassettes, and exports.

`trace` records JSON-RPC messages (tracing.py), `record`/`replay` use the cassette deck
(engine/cassette_deck.py), `export_notebook`/`export_tests` write the session out
(the presenters' exporter, regression.py), and `snapshot`/`diff` compare a toolbox's surface over time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from workbench_magic.api.records.tracing import Trace
from workbench_magic.api.targets import parse_target
from workbench_magic.engine.cassette_deck import Recording
from workbench_magic.engine.wiretap import TRACE_LIMIT
from workbench_magic.vocabulary.errors import UsageError

if TYPE_CHECKING:
    from workbench_magic.api.context import Context
    from workbench_magic.api.records.regression import Session
    from workbench_magic.engine.rules.surface import Diff, Snapshot
    from workbench_magic.vocabulary.evaluations import EvalReport
    from workbench_magic.vocabulary.listings import CallRecord


class Records:
    """A workbench's traces, cassettes, exports, snapshots and diffs.

    Args:
        context: the workbench's shared context.
        session: what the exports and snapshots read (the workbench: its history, toolboxes, listings).
    """

    def __init__(self, context: Context, session: Session) -> None:
        self._context = context
        self._session = session

    # ---- the protocol on the wire (api/records/tracing.py) -----------------------------------------
    def trace(self, target: str | None = None, *, limit: int = TRACE_LIMIT) -> Trace:
        """Record every JSON-RPC message between the workbench and the servers `target` names.

        Recording goes on until `.stop()` or the end of `with wb.trace() as t:`; at most `limit`
        messages are kept, the oldest dropped first. The turns of models the workbench runs (a chat's,
        a sampling model's) show too, whatever `target`, on a lifeline of their own, `"model"`.

        Args:
            target: None (every server), a toolbox, or `toolbox/server`.
            limit: the most messages kept.

        Returns:
            The trace: `.messages`, `.to_json(path)`; it shows as a sequence diagram (HTML) or as text.

        Raises:
            NotFoundError: `target` names a toolbox or server that does not exist.
            InvalidIdentifierError: `target` cannot be parsed.

        Example:
            ```python
            with wb.trace("demo/datasets") as trace:
                wb.call("demo/datasets/list_datasets")
            trace.messages[0].direction
            trace.to_json("trace.json")
            ```
        """
        toolbox, server = parse_target(target) if target else (None, None)
        if toolbox is not None and server is not None:
            self._context.settings.server(toolbox, server)  # names what exists, or says what does not
        elif toolbox is not None:
            self._context.settings.toolbox(toolbox)
        core = self._context.core
        tap, loop = core.wire_tap, self._context.loop
        recording = loop.run_sync(lambda: tap.start(toolbox, server, limit))

        def extensions() -> dict[str, tuple[str, ...]]:
            return {f"{t}/{s}": status.extensions for t, box in core.state.items() for s, status in box.servers.items()}

        return Trace(tap, recording, loop, target, extensions)

    # ---- record, replay, export (cassette_deck.py, export.py) -----------------------------------------
    def record(self, path: str | os.PathLike[str] | None) -> Recording:
        """Record every tool call, resource read and prompt get to a new cassette at `path`.

        The cassette is JSON, secrets masked; recording goes on until `record(None)`, or to the end of
        `with wb.record(path):`. The turns of models the workbench runs (`wb.chat`, a model as the
        `sampling_handler`, `resolve_model`) are recorded too: a replay answers them with no key.

        Args:
            path: the new cassette's path; None stops recording.

        Returns:
            The recording (`.stop()`, or a `with` block).

        Example:
            ```python
            with wb.record("session.json"):
                wb.call("demo/datasets/list_datasets")
            replaying = Workbench(replay="session.json")  # no server starts
            ```
        """
        deck = self._context.deck
        self._context.loop.run_sync(lambda: deck.start_recording(path))
        return Recording(lambda: self._context.loop.run_sync(lambda: deck.start_recording(None)), path)

    def replay(self, path: str | os.PathLike[str], *, mode: str = "strict") -> None:
        """Answer the toolboxes recorded in the cassette at `path` from it: no server starts.

        Open ones are closed, to reopen from the cassette. The model turns it holds answer the
        workbench's models (matched by request), so a recorded chat replays with no key and no network.

        Args:
            path: the cassette's path (written by `record`).
            mode: `"strict"` (what the cassette lacks is an error) or `"auto"` (what the cassette lacks
                goes to the live servers).

        Raises:
            WorkbenchError: the cassette is missing or not a cassette, or `mode` is neither (one line).
        """
        from workbench_magic.engine.cassette import Cassette, Replay

        replay = Replay(Cassette.load(path), mode)
        deck = self._context.deck
        self._context.loop.run_sync(lambda: deck.add_replay(replay))
        for name in replay.cassette.toolboxes():
            if name in self._context.core.state:
                self._context.run(self._context.core.close([name], self._context.settings))  # as `close` does

    @property
    def recordings(self) -> list[str]:
        """The cassettes recorded in this session, oldest first."""
        return [os.fspath(p) for p in self._context.deck.recorded]

    @property
    def replays(self) -> list[tuple[str, str]]:
        """The cassettes replayed with `replay()` (newest first), each with its mode."""
        return [(r.cassette.shown_path, r.mode) for r in self._context.deck.replays]

    def export_notebook(self, path: str | os.PathLike[str]) -> str:
        """Write the session as a notebook at `path`.

        The notebook has its opens and calls, and the replay line of a recorded cassette.

        Args:
            path: where to write the notebook.

        Returns:
            The path.
        """
        return self._context.presenters.export(self._session, path)

    def export_tests(
        self,
        path: str | os.PathLike[str],
        *,
        replay: str | os.PathLike[str] | None = None,
        calls: Iterable[CallRecord | int] | None = None,
        ignore: Iterable[str] = (),
        evals: EvalReport | None = None,
        min_pass_rate: float | None = None,
    ) -> str:
        """Write the session's tool calls, or an evaluation (`evals`), as a pytest file at `path`; returns the path.

        A module fixture opens the toolboxes the calls used (the session's config file, its path
        relative to the test file; with `replay=CASSETTE`, that cassette and no config: no server,
        no secret, nothing from the environment). One test per call (the history, or `calls`:
        records or history indices), in order, sends the same arguments and asserts the same
        outcome (ok or tool error) and the same structured content, or text when there is none
        (text that is JSON is compared as JSON); `ignore` takes JSON paths of values that change
        from run to run (`$.created`, `rows[*].id`). One test per tool used checks that its input
        schema still accepts what it accepted (no new required argument, no narrowed type).
        A `UserWarning` says when the config is not a file (the tests then discover theirs) and
        when an `ignore` path matches nothing exported.

        With `evals=report` (`wb.evaluate`) the file holds the evaluation instead: its fixture replays
        it from `replay`, the cassette recorded while it ran (required: no model, no key, no server),
        and one test per case fails when the case passes less often than `min_pass_rate` (default:
        the pass rate it had then). A case with a predicate or evaluators of its own cannot be written.

        Args:
            path: the test file to write (`.py`).
            replay: a cassette the fixture replays instead of starting servers.
            calls: the calls to export, as history records or indices (None: the whole history).
            ignore: JSON paths of values not compared.
            evals: an evaluation to write as tests (then `calls` and `ignore` do not apply).
            min_pass_rate: with `evals`, the share of runs (0 to 1) below which a case's test fails; None:
                each case's recorded pass rate.

        Returns:
            The path.

        Example:
            ```python
            wb.call("demo/notes/add_note", {"title": "first", "body": "hello"})
            wb.export_tests("test_notes.py", ignore=["$.id", "$.created"])

            with wb.record("evals.json"):
                report = wb.evaluate(cases, runs=5)
            wb.export_tests("test_evals.py", evals=report, replay="evals.json", min_pass_rate=0.8)
            ```
        """
        if evals is not None:
            from workbench_magic.api.judging.export import export_evals

            if calls is not None or tuple(ignore):
                raise UsageError("calls and ignore choose a session's calls: export_tests(evals=...) takes neither")
            return export_evals(evals, path, replay=replay, min_pass_rate=min_pass_rate)
        if min_pass_rate is not None:
            raise UsageError("min_pass_rate is for an evaluation: export_tests(path, evals=report, ...)")
        from workbench_magic.api.records.regression import export_tests

        return export_tests(self._session, path, replay=replay, calls=calls, ignore=ignore)

    def snapshot(self, toolbox: str) -> Snapshot:
        """The surface of `toolbox` (opened if needed), as a `Snapshot`.

        Per server, its info, tools (names, descriptions, input and output schemas, annotations),
        resources, resource templates and prompts. `.save(path)` writes it as stable JSON;
        `Snapshot.load(path)` reads it back.

        Args:
            toolbox: the toolbox's name.

        Returns:
            The snapshot.

        Example:
            ```python
            wb.snapshot("demo").save("demo-surface.json")
            # later, after the servers changed:
            diff = wb.diff("demo-surface.json", wb.snapshot("demo"))
            assert not diff.breaking, diff
            ```
        """
        from workbench_magic.api.records.regression import snapshot

        return snapshot(self._session, toolbox)

    @staticmethod
    def diff(old: Snapshot | str | os.PathLike[str], new: Snapshot | str | os.PathLike[str]) -> Diff:
        """What changed from `old` to `new` (snapshots, or paths of saved ones).

        Added, removed and changed items per server, schema changes named per argument, and a tool
        whose new input schema a model provider rejects where it took the old one (`no longer portable
        to gemini (...)`: `wb.check_schemas`'s rules); `.breaking` when a client could break.

        Args:
            old: the earlier surface: a `Snapshot`, or the path of a saved one.
            new: the later surface, likewise.

        Returns:
            The changes, one `Change` per finding.

        Raises:
            UsageError: a path cannot be read or is not a saved snapshot.

        Example:
            ```python
            diff = Workbench.diff("v1.json", "v2.json")
            diff.breaking  # True when a client could break
            [change.detail for change in diff.changes]
            ```
        """
        from workbench_magic.engine.rules.surface import Snapshot, diff_snapshots

        def loaded(side: Snapshot | str | os.PathLike[str]) -> Snapshot:
            return side if isinstance(side, Snapshot) else Snapshot.load(side)

        return diff_snapshots(loaded(old), loaded(new))
