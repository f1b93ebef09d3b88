"""engine/transports.py: what the connections share (the handshake era's deprecated SDK calls)."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from typing_extensions import deprecated

from workbench_magic.engine.transports import handshake_era


@deprecated("the handshake era is deprecated")
async def old_request(answer: int, *, delay: float) -> int:
    await asyncio.sleep(delay)
    return answer


def test_a_deprecated_sdk_call_is_quiet_and_the_filters_hold_only_for_the_call() -> None:
    """The warning is the SDK's to give at call time; while the request is awaited, other tasks
    (and threads) run with the filters they had, so their warnings still show."""

    async def elsewhere() -> None:
        await asyncio.sleep(0)  # runs while the old request is awaited
        warnings.warn("a warning of someone else's", UserWarning, stacklevel=1)

    async def main() -> int:
        other = asyncio.ensure_future(elsewhere())
        answer = await handshake_era(old_request, 42, delay=0.05)
        await other
        return answer

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert asyncio.run(main()) == 42
    assert [str(w.message) for w in seen] == ["a warning of someone else's"]


def test_a_deprecated_sdk_call_still_raises_what_it_raises() -> None:
    @deprecated("old")
    async def failing() -> None:
        raise LookupError("no such resource")

    with pytest.raises(LookupError, match="no such resource"):
        asyncio.run(handshake_era(failing))
