"""`wb.trace(target=None)`: a `Trace` of the JSON-RPC messages between the workbench and its
servers (every server, a toolbox's, or one `toolbox/server`), recorded from the call until
`stop()` or the end of its `with` block (engine/wiretap.py records; vocabulary/trace.py renders).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.listings import short_extension
from workbench_magic.vocabulary.trace import TraceMessage, lanes, render_html, render_text

if TYPE_CHECKING:
    from workbench_magic.engine.runtime import LoopThread
    from workbench_magic.engine.wiretap import TraceRecording, WireTap


class Trace:
    """The messages of a trace; it shows as a sequence diagram (HTML) or as text.

    `.messages` (each with `.direction`, `.server`, `.time`, `.message`), `.to_json(path)`.
    `wb.trace(target)` makes one; it records until `stop()` or the end of its `with` block.
    `len(trace)` is the number of messages so far.

    Example:
        ```python
        with wb.trace("demo") as trace:
            wb.call("demo/datasets/describe_dataset", {"name": "penguins"})
        [m.label for m in trace.messages]  # ["tools/call #3", "result #3"]
        trace.to_json("describe.trace.json")
        ```
    """

    def __init__(
        self,
        tap: WireTap,
        recording: TraceRecording,
        loop: LoopThread,
        target: str | None,
        extensions: Callable[[], dict[str, tuple[str, ...]]] = dict,
    ) -> None:
        self._tap = tap
        self._recording = recording
        self._loop = loop
        self.target = target
        """What it records: None (every server), a toolbox, or `toolbox/server`."""
        self._kept: tuple[list[TraceMessage], int] | None = None
        self._extensions = extensions
        self._kept_extensions: dict[str, tuple[str, ...]] | None = None

    @property
    def recording(self) -> bool:
        """Whether it still records."""
        return self._kept is None

    def _snapshot(self) -> tuple[list[TraceMessage], int]:
        if self._kept is not None:
            return self._kept
        recording = self._recording
        return self._loop.run_sync(lambda: (list(recording.messages), recording.dropped))

    @property
    def messages(self) -> list[TraceMessage]:
        """The messages so far, oldest first (a copy)."""
        return self._snapshot()[0]

    @property
    def dropped(self) -> int:
        """How many of the oldest messages the bound dropped."""
        return self._snapshot()[1]

    @property
    def extensions(self) -> dict[str, tuple[str, ...]]:
        """The extensions each server of the trace declares: `toolbox/server` -> their ids.

        As its status says (when the trace stopped, once stopped); the diagram shows them under
        each server, the text on its first line."""
        servers = lanes(self.messages)
        known = self._kept_extensions if self._kept_extensions is not None else self._extensions()
        return {server: known[server] for server in servers if known.get(server)}

    def stop(self) -> Trace:
        """Stop recording (the messages stay); again does nothing.

        Returns:
            The trace itself.
        """
        if self._kept is None:
            tap, recording = self._tap, self._recording
            self._loop.run_sync(lambda: tap.stop(recording))
            self._kept = (list(recording.messages), recording.dropped)
            self._kept_extensions = self._extensions()
        return self

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __len__(self) -> int:
        return len(self.messages)

    def to_json(self, path: str | os.PathLike[str]) -> str:
        """Save the trace as JSON (target, dropped, messages).

        Args:
            path: the file to write (UTF-8, indented).

        Returns:
            The path.
        """
        messages, dropped = self._snapshot()
        data: dict[str, Any] = {
            "target": self.target,
            "dropped": dropped,
            "messages": [item.to_dict() for item in messages],
        }
        with open(path, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, ensure_ascii=False)
            file.write("\n")
        return os.fspath(path)

    def __repr__(self) -> str:
        messages, dropped = self._snapshot()
        state = "recording" if self.recording else "stopped"
        head = f"Trace of {self.target or 'every server'}: {len(messages)} messages ({state})"
        if extensions := self.extensions:
            said = "; ".join(f"{s} {', '.join(short_extension(e) for e in ids)}" for s, ids in extensions.items())
            head += f"; extensions: {said}"
        return f"{head}\n{render_text(messages, dropped=dropped)}"

    def _repr_html_(self) -> str:
        messages, dropped = self._snapshot()
        state = "recording" if self.recording else "stopped"
        head = f"<b>Trace of {self.target or 'every server'}</b>: {len(messages)} messages ({state})"
        return f"<div>{head}{render_html(messages, dropped=dropped, extensions=self.extensions)}</div>"


__all__ = ["Trace"]
