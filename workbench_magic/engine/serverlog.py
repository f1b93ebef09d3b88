"""A server's log: its stderr (a temp file the child writes to directly), our markers, and the
log messages it sends (`notifications/message`), one line each; bounded on disk.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile

from workbench_magic.vocabulary.errors import describe_exception

STDERR_TAIL_LINES = 5
LOG_LIMIT = 10 * 1024 * 1024
"""Bytes of a server's stderr kept on disk (the newest)."""
LOG_CHECK_INTERVAL = 5.0
"""Seconds between checks of a live server's log size."""
_MARK = "--- workbench: "
_NOTE = "notifications/message "
JUNK_LINES = 3
_JUNK_CHARS = 120
_PARSE_FAILURE = "Failed to parse JSONRPC message from server"


class _DropParseFailures(logging.Filter):
    """The SDK logs every stdout line that is not JSON-RPC with a traceback, which would land in
    whatever notebook cell runs; the connection keeps those lines in the server's log instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _PARSE_FAILURE


_parse_filter = _DropParseFailures()


def install_parse_filter() -> None:
    """Keep the SDK's tracebacks for non-JSON-RPC stdout lines out of the notebook (once)."""
    stdio_logger = logging.getLogger("mcp.client.stdio")
    if _parse_filter not in stdio_logger.filters:
        stdio_logger.addFilter(_parse_filter)


def junk_line(exc: BaseException) -> str:
    """The offending stdout line of an SDK parse failure (a pydantic ValidationError), shortened."""
    errors = getattr(exc, "errors", None)
    line: object = None
    if callable(errors):
        with contextlib.suppress(Exception):
            line = errors()[0].get("input")
    text = line if isinstance(line, str) else describe_exception(exc)
    text = " ".join(text.split())
    return text if len(text) <= _JUNK_CHARS else text[: _JUNK_CHARS - 3] + "..."


class StderrLog:
    """The server's stderr, kept in an append-only temp file (a real fd for the child).

    The child writes to the file directly; `trim` keeps the newest `LOG_LIMIT` bytes (cut at a
    line start) once the file has grown a fifth past that.
    """

    def __init__(self, label: str) -> None:
        self.file = tempfile.TemporaryFile(mode="a+", encoding="utf-8", errors="replace", prefix=f"wb-{label}-")
        # tempfile opens without O_APPEND ("a" is only Python's own seek): the child and `trim`
        # must both write at the end of the file, wherever the other left it.
        with contextlib.suppress(ImportError):  # POSIX; elsewhere the log is not trimmed safely
            import fcntl

            fd = self.file.fileno()
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)

    def read(self) -> str:
        """All of it (at most the last `LOG_LIMIT` bytes, from a line start)."""
        if self.file.closed:
            return ""
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - LOG_LIMIT)
        data = os.pread(fd, size - start, start)
        if start and (newline := data.find(b"\n")) >= 0:
            data = data[newline + 1 :]
        return data.decode("utf-8", errors="replace")

    def trim(self) -> bool:
        """Drop the oldest bytes past `LOG_LIMIT`; True when it did."""
        if self.file.closed:
            return False
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        if size <= LOG_LIMIT + LOG_LIMIT // 5:
            return False
        keep = os.pread(fd, LOG_LIMIT, size - LOG_LIMIT)
        newline = keep.find(b"\n")
        if 0 <= newline < len(keep) - 1:
            keep = keep[newline + 1 :]
        # O_APPEND: whatever the child writes meanwhile lands after the kept tail.
        os.ftruncate(fd, 0)
        os.write(fd, keep)
        return True

    def tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        """The server's last stderr lines, on one line (our own markers left out)."""
        text = [line for line in self.read().splitlines() if line.strip() and not line.startswith((_MARK, _NOTE))]
        return " | ".join(line.strip() for line in text[-lines:])

    def mark(self, text: str) -> None:
        self.write(f"{_MARK}{text} ---")

    def note(self, line: str) -> None:
        """A log message the server sent, as one line."""
        self.write(f"{_NOTE}{line}")

    def write(self, line: str) -> None:
        if not self.file.closed:
            self.file.write(line.replace("\n", " ") + "\n")
            self.file.flush()
            self.trim()

    def close(self) -> None:
        self.file.close()
