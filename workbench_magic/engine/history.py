"""The call history (`Workbench.history`), bounded by count and by bytes (loop thread only).

It keeps the last `history_limit` records, and the newest of them whole within `history_bytes`:
each record comes with an estimate of what it holds (its arguments and answer, in characters of
their JSON); once the total passes the budget, the oldest records still whole become their
summary line (identifier, arguments shortened, elapsed, ok; `answer_dropped`), oldest first.

The estimates are cheap on purpose (a call pays for one): a text answer by its length, structured
content by the length of the text blocks that came with it (servers send the same JSON as text),
anything else by `estimate`, which looks at a bounded sample of a value, never all of it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Iterable
from typing import Any

from workbench_magic.vocabulary.listings import CallRecord, ToolAnswer
from workbench_magic.vocabulary.rendering import shorten

HISTORY_BYTES = 64 * 2**20
"""The history's default byte budget (`Workbench.history_bytes`)."""

SUMMARY_TEXT = 100
"""Characters of a string argument a summarized record keeps."""
SUMMARY_ITEMS = 20
"""Entries of a list or object argument a summarized record keeps."""

_SAMPLE = 8
"""Entries of a list or object `estimate` looks at (the rest are counted at their average)."""
_DEPTH = 4
"""Levels `estimate` goes down (below, a container counts as `_DEEP` characters)."""
_DEEP = 64


def estimate(value: Any, depth: int = _DEPTH) -> int:
    """Roughly how many characters `value` takes as JSON, from at most `_SAMPLE` entries of each of
    `_DEPTH` levels (a homogeneous list, the common big value, is estimated well)."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is dict or (kind is not list and isinstance(value, dict)):
        count = len(value)
        if count and not depth:
            return _DEEP
        total = 0
        for key, item in value.items() if count <= _SAMPLE else itertools.islice(value.items(), _SAMPLE):
            total += (len(key) if type(key) is str else 8) + 4
            total += len(item) + 2 if type(item) is str else estimate(item, depth - 1)
        return 2 + (total if count <= _SAMPLE else total * count // _SAMPLE)
    if kind is list or isinstance(value, list | tuple):
        count = len(value)
        if count and not depth:
            return _DEEP
        total = 0
        for item in value if count <= _SAMPLE else value[:_SAMPLE]:
            total += len(item) + 3 if type(item) is str else estimate(item, depth - 1) + 1
        return 2 + (total if count <= _SAMPLE else total * count // _SAMPLE)
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, bytes | bytearray):
        return len(value) * 4 // 3  # base64, as it travels
    return 8


def answer_size(answer: ToolAnswer, content: Iterable[Any] | None) -> int:
    """The characters a tool's answer holds: its text, or its structured content measured by the
    text blocks that came with it (`content`, the result's blocks), else by `estimate`."""
    if answer.structured_content is None:
        return len(answer.text)
    told = 0
    for block in content or ():
        text = getattr(block, "text", None)
        if type(text) is str:
            told += len(text)
    return told or estimate(answer.structured_content)


def summary(record: CallRecord) -> CallRecord:
    """`record` without its answer and with its arguments shortened (`answer_dropped` says so)."""
    arguments, cut = shorten(record.arguments, text=SUMMARY_TEXT, items=SUMMARY_ITEMS)
    if not cut and record.answer is None:
        return record
    return dataclasses.replace(record, arguments=arguments, answer=None, answer_dropped=record.answer is not None)


class CallHistory:
    """The last `limit` records, the newest whole within `budget` characters (see the module)."""

    def __init__(self, limit: int, budget: int = HISTORY_BYTES) -> None:
        self.limit = max(0, limit)
        self.budget = max(0, budget)
        self._records: deque[CallRecord] = deque()
        self._sizes: deque[int] = deque()
        self._first = 0
        """The number of records ever fallen out (the position of `_records[0]` among all)."""
        self._whole_from = 0
        """The position of the oldest record still whole: every one before it is a summary."""
        self.size = 0
        """The estimated characters of the records still whole."""

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> list[CallRecord]:
        """The records, oldest first (a copy)."""
        return list(self._records)

    def append(self, record: CallRecord, size: int) -> None:
        """Add `record`, which holds about `size` characters, then keep within both bounds."""
        records, sizes = self._records, self._sizes
        if len(records) >= self.limit:
            if not self.limit:
                return
            records.popleft()
            dropped = sizes.popleft()
            if self._first >= self._whole_from:
                self.size -= dropped
            self._first += 1
        records.append(record)
        sizes.append(size)
        self.size += size
        if self.size > self.budget or len(records) > self.limit:
            self._fit()

    def bound(self, limit: int, budget: int) -> None:
        """New bounds (`history_limit`, `history_bytes`): what no longer fits goes now."""
        self.limit, self.budget = max(0, limit), max(0, budget)
        self._fit()

    def _fit(self) -> None:
        records, sizes = self._records, self._sizes
        while len(records) > self.limit:
            records.popleft()
            size = sizes.popleft()
            if self._first >= self._whole_from:
                self.size -= size
            self._first += 1
        self._whole_from = max(self._whole_from, self._first)
        end = self._first + len(records)
        while self.size > self.budget and self._whole_from < end:
            at = self._whole_from - self._first
            records[at] = summary(records[at])
            self.size -= sizes[at]
            self._whole_from += 1
