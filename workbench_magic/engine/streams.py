"""Streams that stand in for a transport's (the SDK's session reads and writes them): what every
wrapper passes on unchanged, so that each one says only how it receives or sends (wiretap.py,
relay.py)."""

from __future__ import annotations

from typing import Any, Self


class StreamWrapper:
    """A stream over `inner`: closing and entering pass on to it."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class ReadStreamWrapper(StreamWrapper):
    """A receive stream over `inner`; subclasses define `receive`."""

    __slots__ = ()

    async def receive(self) -> Any:
        return await self._inner.receive()

    @property
    def last_context(self) -> Any:  # streamable HTTP carries the sender's context on its stream
        return getattr(self._inner, "last_context", None)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


__all__ = ["ReadStreamWrapper", "StreamWrapper"]
