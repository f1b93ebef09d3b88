"""Lazy servers (engine/lazy.py, engine/catalog.py): a lazy open from a cached catalog starts no
process, lists from the cache, starts the server on first use (updating a stale cache and telling
subscribers), stops it after an idle timeout; the cache follows the config and holds no secret.
The servers are our test server over stdio."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import children, npm_server, stdio_server, wait_until

from workbench_magic import ToolNotFoundError, ToolsChanged, Workbench
from workbench_magic.vocabulary.events import Event

SECRET = "hush-hush-lazy-secret"


def lazy_config(**server: Any) -> dict[str, Any]:
    return {"toolboxes": {"t": {"start": "lazy", "mcpServers": {"s": stdio_server(**server)}}}}


def cached_files(cache: Path) -> list[Path]:
    return sorted((cache / "catalogs").glob("*.json"))


def cache_holds(cache: Path, text: str) -> bool:
    return any(text in path.read_text() for path in cached_files(cache))


def lists_cached(cache: Path) -> bool:
    """Whether a cached catalog holds its resource list (it follows the tools)."""
    return any(json.loads(path.read_text())["resources"] is not None for path in cached_files(cache))


def warm(make: Callable[..., Workbench], config: dict[str, Any], cache: Path) -> None:
    """A first lazy open: no catalog yet, so the server connects and its catalog is cached."""
    wb = make(config)
    box = wb.open("t")
    assert box.servers["s"].status == "connected"
    assert wait_until(lambda: cache_holds(cache, '"test://hello"'), 10)  # the lists follow the tools
    wb.close_all()


def test_a_lazy_open_from_the_cache_starts_nothing_and_lists_from_it(
    make_workbench: Callable[..., Workbench], catalog_cache: Path
) -> None:
    warm(make_workbench, lazy_config(), catalog_cache)
    before = children()
    wb = make_workbench(lazy_config())
    box = wb.open("t")
    status = box.servers["s"]
    assert status.status == "idle" and status.available and not status.connected
    assert children() == before  # no process
    names = {t.name for t in wb.tools("t")}
    assert {"echo", "add", "slow"} <= names
    assert [r.uri for r in wb.resources("t/s")] == ["test://hello"] and [p.name for p in wb.prompts("t/s")] == ["greet"]
    assert wb.search("echo")[0].path == "t/s/echo"
    assert children() == before and wb.status()["t"]["s"].status == "idle"
    assert "idle" in repr(box) and "not started" in repr(box)
    # the first call starts it, and it stays up
    assert wb.call("t/s/echo", {"text": "first"}).data == {"result": "first"}
    assert wb.status()["t"]["s"].status == "connected" and len(children() - before) == 1


def test_a_stale_cache_is_updated_and_subscribers_hear_it(
    make_workbench: Callable[..., Workbench], catalog_cache: Path
) -> None:
    first = make_workbench(lazy_config())
    first.open("t")
    first.call("t/s/add_tool", {"name": "extra"})  # the live list changes; the cache follows
    assert wait_until(lambda: cache_holds(catalog_cache, '"extra"'), 10)
    first.close_all()
    wb = make_workbench(lazy_config())
    wb.open("t")
    assert "extra" in {t.name for t in wb.tools("t")}  # from the cache: stale, a new server lacks it
    heard: list[Event] = []
    wb.subscribe(heard.append)
    with pytest.raises(ToolNotFoundError):
        wb.call("t/s/extra")  # started now: the tool is gone
    assert wait_until(lambda: ToolsChanged("t", "s") in heard, 10)
    assert "extra" not in {t.name for t in wb.tools("t")}
    assert wait_until(lambda: not cache_holds(catalog_cache, '"extra"'), 10)


def test_the_idle_timeout_stops_a_server_and_the_next_use_starts_it(
    make_workbench: Callable[..., Workbench], catalog_cache: Path
) -> None:
    before = children()
    wb = make_workbench({"toolboxes": {"t": {"mcpServers": {"s": stdio_server(idleTimeout=0.5)}}}})
    wb.open("t")
    assert wb.call("t/s/echo", {"text": "a"}).data == {"result": "a"}
    assert wait_until(lambda: wb.status()["t"]["s"].status == "idle", 10)
    assert wait_until(lambda: children() == before, 10)  # its process ended
    assert {"echo", "add"} <= {t.name for t in wb.tools("t")}  # still listed, from its catalog
    assert wb.call("t/s/echo", {"text": "b"}).data == {"result": "b"}
    assert wb.status()["t"]["s"].status == "connected"


def test_a_changed_config_is_another_catalog(make_workbench: Callable[..., Workbench], catalog_cache: Path) -> None:
    warm(make_workbench, lazy_config(env={"FLAVOUR": "one"}), catalog_cache)
    wb = make_workbench(lazy_config(env={"FLAVOUR": "two"}))
    assert wb.open("t").servers["s"].status == "connected"  # no catalog for this config: it starts
    again = make_workbench(lazy_config(env={"FLAVOUR": "one"}))
    assert again.open("t").servers["s"].status == "idle"


def test_no_secret_enters_the_cache(
    make_workbench: Callable[..., Workbench], catalog_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WB_LAZY_SECRET", SECRET)
    config = lazy_config(args=[str(Path(stdio_server()["args"][0])), "--name", "${WB_LAZY_SECRET}"])
    warm(make_workbench, config, catalog_cache)
    stored = b"".join(path.read_bytes() for path in (catalog_cache / "catalogs").iterdir())
    assert SECRET.encode() not in stored and b"***" in stored
    assert all(SECRET not in path.name for path in (catalog_cache / "catalogs").iterdir())
    assert json.loads(cached_files(catalog_cache)[0].read_text())["server_info"].startswith("***")


def test_lazy_servers_and_the_open_override(make_workbench: Callable[..., Workbench], catalog_cache: Path) -> None:
    plain = {"toolboxes": {"t": {"mcpServers": {"s": stdio_server()}}}}
    warm(make_workbench, lazy_config(), catalog_cache)  # the same server config: the same catalog
    assert make_workbench(plain).open("t").servers["s"].status == "connected"  # "open" by default
    assert make_workbench(plain, lazy_servers=True).open("t").servers["s"].status == "idle"
    assert make_workbench(plain).open("t", lazy=True).servers["s"].status == "idle"
    assert make_workbench(lazy_config()).open("t", lazy=False).servers["s"].status == "connected"


def test_a_catalog_is_cached_though_the_workbench_closes_at_once(
    make_workbench: Callable[..., Workbench], catalog_cache: Path
) -> None:
    # server-everything's resource and prompt lists take a while: the tools are cached without them
    config = {"toolboxes": {"lz": {"start": "lazy", "mcpServers": {"ev": npm_server("everything")}}}}
    first = make_workbench(config)
    live = first.open("lz")
    assert live.servers["ev"].status == "connected"
    live_tools = [t.name for t in first.tools("lz")]
    first.close_all()  # at once, as a short script or a notebook run top to bottom does
    before = children()
    wb = make_workbench(config)
    box = wb.open("lz")
    assert box.servers["ev"].status == "idle" and children() == before  # from the cache: no process
    assert [t.name for t in wb.tools("lz")] == live_tools


def test_a_catalog_is_kept_for_what_the_client_offered(
    make_workbench: Callable[..., Workbench], catalog_cache: Path
) -> None:
    # server-everything lists its sampling tools only to a client that offers sampling
    config = {"toolboxes": {"lz": {"start": "lazy", "mcpServers": {"ev": npm_server("everything")}}}}
    first = make_workbench(config)
    first.open("lz")
    plain = [t.name for t in first.tools("lz")]
    assert "trigger-sampling-request" not in plain
    assert wait_until(lambda: lists_cached(catalog_cache), 10)  # this session's catalog is complete
    first.sampling_handler = lambda messages, params: "hi"
    first.reconnect("lz/ev")  # offered from this connect on
    sampled = [t.name for t in first.tools("lz")]
    assert "trigger-sampling-request" in sampled
    first.close_all()
    before = children()
    for handler, listed in ((None, plain), (lambda messages, params: "hi", sampled)):
        wb = make_workbench(config, sampling_handler=handler)
        box = wb.open("lz")
        assert box.servers["ev"].status == "idle" and children() == before
        assert [t.name for t in wb.tools("lz")] == listed
