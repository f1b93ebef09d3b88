"""Contract tests of engine/sdk/stdio.py: `stdio_transport` is a modified copy of the SDK's
`mcp.client.stdio.stdio_client` and of its helpers. Each SDK piece it follows is pinned by the
hash of its source: when one changes, re-read it against engine/sdk/stdio.py, carry over what
matters (a fix, a new step of the shutdown), then record the new hash here."""

from __future__ import annotations

import hashlib
import inspect

import mcp.client.stdio as sdk_stdio
import pytest

from workbench_magic.engine.sdk import stdio

FOLLOWED = {  # the SDK's function: (its sha256 in mcp 2.3, what follows it in engine/sdk/stdio.py)
    "stdio_client": ("ee669cfe97d99a4623058992b0a40a7a5ad5de8e04c778eb75c7542af1f0af9b", "stdio_transport"),
    "_parse_line": ("726c6f3fcfe311a6020bfdc6dd1c9710dff5aaa0804e61897e73c2564bbf7c99", "_parse_line"),
    "_drain_stdout": ("6860c28c2a9a1e0ccdf83b35c51c100cf513243d9a2ef2d7686ba67b983c8046", "_drain"),
    "_stop_server_process": ("9ca5d0abe5617ac2c8e801fe816826c1ced483724877361b56931d3acbb1e92d", "_stop_process"),
    "_wait_for_process_exit": ("879fd589c927ca84195df1ed222a7dff106b953b2e23a5a0d647a4629cccc45d", "_wait"),
    "_close_subprocess_transport": (
        "da4fc938703ce17d0acc5f6e18224436e6ca0021e76de7a0a980e71b0eff1c82",
        "_stop_process",
    ),
    "get_default_environment": ("6f12c80d0e0c0435dca827a0fab0eb9887a08c0108862a132a6eaf8294b39d74", "stdio_transport"),
}


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_the_sdk_pieces_the_copy_follows_are_unchanged(name: str) -> None:
    expected, ours = FOLLOWED[name]
    function = getattr(sdk_stdio, name, None)
    assert function is not None, f"mcp.client.stdio.{name} is gone: re-read the SDK's stdio client against {ours}"
    digest = hashlib.sha256(inspect.getsource(function).encode()).hexdigest()
    assert digest == expected, (
        f"mcp.client.stdio.{name} changed: re-read it against workbench_magic/engine/sdk/stdio.py ({ours}), "
        f"carry over what matters, then record its new hash here ({digest})"
    )
    assert callable(getattr(stdio, ours))


def test_the_copy_names_what_it_follows() -> None:
    assert stdio.COPIED_FROM == "mcp.client.stdio.stdio_client"
    assert "mcp.client.stdio.stdio_client" in (stdio.stdio_transport.__doc__ or "")


def test_the_timeouts_are_the_sdks() -> None:
    """The defaults of a stop are the SDK's; a change there is a change of policy to weigh here."""
    recheck = "the SDK's stdio timeouts changed: re-check GRACE, KILL_AFTER, _FLUSH, _REAP, _POLL (engine/sdk/stdio.py)"
    assert stdio.GRACE == sdk_stdio.PROCESS_TERMINATION_TIMEOUT, recheck
    assert stdio.KILL_AFTER == sdk_stdio.FORCE_KILL_TIMEOUT, recheck
    assert stdio._FLUSH == sdk_stdio._WRITER_FLUSH_TIMEOUT, recheck
    assert stdio._REAP == sdk_stdio._KILL_REAP_TIMEOUT, recheck
    assert stdio._POLL == sdk_stdio._EXIT_POLL_INTERVAL, recheck


def test_the_default_environment_is_a_small_mapping() -> None:
    environment = sdk_stdio.get_default_environment()
    assert isinstance(environment, dict) and all(isinstance(v, str) for v in environment.values())
    assert set(environment) <= set(sdk_stdio.DEFAULT_INHERITED_ENV_VARS)


def test_a_bad_line_is_the_sdks_own_error() -> None:
    """`_parse_line` answers as the SDK's does: a message, or the parse error as a value."""
    assert isinstance(stdio._parse_line("not json"), ValueError)
    assert isinstance(sdk_stdio._parse_line("not json"), ValueError)
    good = '{"jsonrpc": "2.0", "id": 1, "result": {}}'
    assert stdio._parse_line(good) == sdk_stdio._parse_line(good)
