"""serve as a gateway (serve/gateway.py): flat mode, and prompts, resources, templates, completions,
logging and subscriptions passed on, on both protocol eras.

Downstream: two testservers and a clientserver (tests/servers), which share names (`echo`,
`greet`) and a URI (`test://hello`). Upstream: the SDK's `Client`, in-process on the workbench's loop
(`Client(server)`), and `workbench-magic serve` as a subprocess for the command line's options.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from conftest import SERVERS, python_command, python_server, stdio_server, toolbox, write_config
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from workbench_magic import Workbench
from workbench_magic.serve.gateway import served_names
from workbench_magic.serve.server import SERVE_HISTORY_LIMIT, WorkbenchServer

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

ERAS = {"legacy": "legacy", "modern": "2026-07-28"}
CLIENTSERVER = str(SERVERS / "clientserver.py")
LIMIT = 60


def boxes() -> dict[str, Any]:
    return {
        "toolboxes": {
            "a": toolbox({"t": stdio_server("--name", "first")}),
            "b": toolbox({"t": stdio_server("--name", "second"), "c": python_server(CLIENTSERVER)}),
        }
    }


@asynccontextmanager
async def serving(wb: Workbench, mode: str, era: str, **client: Any) -> AsyncIterator[tuple[Client, WorkbenchServer]]:
    server = WorkbenchServer(wb, mode)  # type: ignore[arg-type]
    try:
        async with Client(server, mode=ERAS[era], **client) as c:  # type: ignore[arg-type]
            yield c, server
    finally:
        server.close()


def on_loop(body: Callable[[Workbench], Coroutine[Any, Any, None]], config: dict[str, Any] | None = None) -> None:
    """`body(wb)` on the loop of a workbench of `config` (`boxes()`), where serve runs; then every server closed."""
    wb = Workbench(config or boxes(), history_limit=SERVE_HISTORY_LIMIT)
    try:
        wb.run_on_loop(asyncio.wait_for(body(wb), LIMIT))
    finally:
        wb.close_all()


eras = pytest.mark.parametrize("era", list(ERAS))


@eras
def test_flat_mode_serves_the_tools_under_their_own_names_and_a_shared_name_in_full(era: str) -> None:
    async def body(wb: Workbench) -> None:
        async with serving(wb, "flat", era) as (c, _):
            names = {t.name for t in (await c.list_tools()).tools}
            assert "open_toolbox" not in names and "use_tool" not in names  # no meta-tools
            assert {"a__t__echo", "b__t__echo", "ask_person", "bump"} <= names
            assert "echo" not in names  # two servers have it: each is toolbox__server__echo
            result = await c.call_tool("b__t__echo", {"text": "routed"})
            assert result.content[0].text == "routed"  # type: ignore[union-attr]
            assert (await c.call_tool("bump", {"by": 2})).is_error is False
            unknown = await c.call_tool("echo", {"text": "x"})
            assert unknown.is_error and "Unknown tool 'echo'" in unknown.content[0].text  # type: ignore[union-attr]

    on_loop(body)


@eras
def test_prompts_pass_through_by_name_and_render_downstream(era: str) -> None:
    async def body(wb: Workbench) -> None:
        async with serving(wb, "flat", era) as (c, _):
            prompts = {p.name: p for p in (await c.list_prompts()).prompts}
            assert {"a__t__greet", "b__t__greet", "b__c__greet"} <= set(prompts)
            assert [a.name for a in prompts["b__c__greet"].arguments or []] == ["language", "name"]
            got = await c.get_prompt("b__c__greet", {"language": "french", "name": "Ada"})
            assert "Greet Ada in french." in got.messages[0].content.text  # type: ignore[union-attr]
            if era == "modern":  # a result names serve, not the server behind it
                for answered in (got, await c.call_tool("b__t__echo", {"text": "x"})):
                    assert (answered.meta or {})["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-workbench"
            with pytest.raises(MCPError) as missing:
                await c.get_prompt("greet", {})
            assert missing.value.error.code == types.INVALID_PARAMS

    on_loop(body)


@eras
def test_resources_and_templates_pass_through_routed_to_their_owner(era: str, caplog: pytest.LogCaptureFixture) -> None:
    async def body(wb: Workbench) -> None:
        async with serving(wb, "flat", era) as (c, _):
            with caplog.at_level(logging.WARNING, logger="workbench_magic.server"):
                uris = [str(r.uri) for r in (await c.list_resources()).resources]
            assert uris.count("test://hello") == 1 and "counter://value" in uris
            shared = [r.getMessage() for r in caplog.records if "test://hello" in r.getMessage()]
            assert shared == ["test://hello is listed by a/t and b/t: served from a/t"]
            templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
            assert "city://{country}/{city}" in templates
            city = await c.read_resource("city://france/paris")  # a template's: read from its owner
            assert city.contents[0].text == "paris, france"  # type: ignore[union-attr]
            hello = await c.read_resource("test://hello")
            assert hello.contents[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError) as missing:
                await c.read_resource("test://nowhere")
            assert missing.value.error.code == types.INVALID_PARAMS

    on_loop(body)


@eras
def test_completions_go_to_the_owner_of_the_prompt_or_template(era: str) -> None:
    async def body(wb: Workbench) -> None:
        async with serving(wb, "flat", era) as (c, _):
            prompt = types.PromptReference(type="ref/prompt", name="b__c__greet")
            languages = await c.complete(prompt, {"name": "language", "value": "es"})
            assert languages.completion.values == ["esperanto", "estonian"]
            template = types.ResourceTemplateReference(type="ref/resource", uri="city://{country}/{city}")
            cities = await c.complete(template, {"name": "city", "value": ""}, {"country": "finland"})
            assert cities.completion.values == ["helsinki", "espoo"]

    on_loop(body)


@pytest.mark.parametrize("mode", ["proxy", "dynamic", "flat"])
def test_every_mode_declares_logging_and_passes_the_level_on(mode: str) -> None:
    async def body(wb: Workbench) -> None:
        async with serving(wb, mode, "legacy") as (c, _):
            assert c.server_capabilities is not None and c.server_capabilities.logging is not None
            if mode == "proxy":  # the original's surface: the meta-tools, and no prompts of its servers
                names = {t.name for t in (await c.list_tools()).tools}
                assert names == {"list_toolboxes", "open_toolbox", "close_toolbox", "use_tool", "search_tools"}
                assert c.server_capabilities.prompts is None or not (await c.list_prompts()).prompts
                done = await c.complete(
                    types.PromptReference(type="ref/prompt", name="greet"), {"name": "n", "value": ""}
                )
                assert done.completion.values == []  # declared, and answered with nothing to complete
            await wb.aopen("old")  # a handshake-era server: it is told a new level at once
            assert (await c.set_logging_level("error")).model_dump(exclude_none=True) == {}
            assert wb.server_log_level == "error"  # and so is every server that connects later
            level = await wb.acall("old/c/last_log_level", {})
            assert level.data == "error" or "error" in str(level.data)

    # a 2026-07-28 server's next requests carry the new level (tests/engine/test_clientside.py)
    on_loop(body, {"toolboxes": {"old": toolbox({"c": python_server(CLIENTSERVER, "--legacy")})}})


def test_dynamic_mode_names_prompts_like_tools_and_tells_the_host_when_they_change() -> None:
    changed: list[str] = []
    prompts_changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        changed.append(type(message).__name__)
        if isinstance(message, types.PromptListChangedNotification):
            prompts_changed.set()

    async def body(wb: Workbench) -> None:
        async with serving(wb, "dynamic", "legacy", message_handler=on_message) as (c, _):
            assert (await c.list_prompts()).prompts == []  # nothing open yet
            await c.call_tool("open_toolbox", {"toolbox": "b"})
            await prompts_changed.wait()
            names = {p.name for p in (await c.list_prompts()).prompts}
            assert names == {"b__t__greet", "b__c__greet"}
            assert "ResourceListChangedNotification" in changed

    on_loop(body)


def test_two_changes_close_together_tell_the_host_once() -> None:
    """Two downstream events in one turn of the loop: one retell at a time, so the host hears once
    that its prompt list changed (two side by side both compared with the same last-seen list)."""
    from workbench_magic.vocabulary.events import PromptsChanged

    notices: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.PromptListChangedNotification):
            notices.append("prompts")

    async def body(wb: Workbench) -> None:
        async with serving(wb, "flat", "legacy", message_handler=on_message) as (c, server):
            assert (await c.list_prompts()).prompts
            await c.call_tool("a__t__echo", {"text": "x"})  # serve knows the host's connection now
            gateway = server.gateway
            gateway._seen = {**gateway._seen, "prompts": {}}  # as if the host had listed none
            gateway.heard(PromptsChanged(toolbox="a", server="t"))
            gateway.heard(PromptsChanged(toolbox="a", server="t"))
            await asyncio.sleep(0)  # the retells start on the next turn
            while gateway._tasks:
                await asyncio.gather(*gateway._tasks)
            await c.send_ping()  # what was sent before the ping's answer has been read
            assert notices == ["prompts"]

    on_loop(body)


def test_a_legacy_host_hears_of_updates_to_a_resource_it_subscribed_to() -> None:
    updates: list[str] = []
    heard = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            heard.set()

    async def body(wb: Workbench) -> None:
        async with serving(wb, "flat", "legacy", message_handler=on_message) as (c, _):
            assert c.server_capabilities is not None and c.server_capabilities.resources is not None
            assert c.server_capabilities.resources.subscribe is True
            await c.subscribe_resource("counter://value")
            await c.call_tool("bump", {"by": 1})
            await heard.wait()
            assert updates == ["counter://value"]

    on_loop(body)


def test_a_2026_host_listening_for_a_resource_hears_of_its_updates() -> None:
    from mcp.client.subscriptions import ResourceUpdated

    async def body(wb: Workbench) -> None:
        async with serving(wb, "flat", "modern") as (c, _):
            # entered once the server acknowledged it: the watch is up, no update is missed
            async with c.listen(resource_subscriptions=["counter://value"]) as subscription:
                await c.call_tool("bump", {"by": 1})
                assert await anext(aiter(subscription)) == ResourceUpdated(uri="counter://value")
            assert (await c.call_tool("bump", {"by": 1})).is_error is False

    on_loop(body)


def test_served_names_are_their_own_unless_shared() -> None:
    from workbench_magic.vocabulary.listings import PromptInfo

    items = [PromptInfo("a", "s", "greet"), PromptInfo("b", "s", "greet"), PromptInfo("b", "s", "only")]
    assert list(served_names(items, own_names=True)) == ["a__s__greet", "b__s__greet", "only"]
    assert list(served_names(items, own_names=False)) == ["a__s__greet", "b__s__greet", "b__s__only"]


def test_serve_toolbox_chooses_the_toolboxes_and_an_unknown_one_is_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path / "workbench-config.json", boxes())
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config)]
    unknown = subprocess.run([*command, "--toolbox", "nope"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines()[-1].startswith("error: ") and "nope" in unknown.stderr

    async def main() -> None:
        argv = [*command, "--mode", "flat", "--toolbox", "a"]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        with open(tmp_path / "serve.stderr", "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="auto") as c:
                names = {t.name for t in (await c.list_tools()).tools}
                assert "echo" in names and "bump" not in names  # toolbox b is not served
                assert [p.name for p in (await c.list_prompts()).prompts] == ["greet"]

    asyncio.run(asyncio.wait_for(main(), LIMIT))
