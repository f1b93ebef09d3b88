"""Smoke test of tests/servers/clientserver.py with the SDK's own `mcp.Client`, on both protocol eras.

``modern``: the default server and ``mode="auto"`` negotiate 2026-07-28 (`server/discover`), where
elicitation, sampling and roots ride an `InputRequiredResult` the client answers by retrying.
``legacy``: the server with ``--legacy`` refuses `server/discover`, so ``mode="auto"`` falls back
to the 2025-11-25 `initialize` handshake, where the server sends real requests mid-call.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from conftest import SERVERS, server_command
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ListenNotSupportedError, ResourceUpdated
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CLIENTSERVER = SERVERS / "clientserver.py"
ERAS = {"modern": ((), "2026-07-28"), "legacy": (("--legacy",), "2025-11-25")}
ROOTS = [types.Root(uri="file:///work/project", name="project"), types.Root(uri="file:///tmp", name=None)]
LIMIT = 60  # seconds per test


class Recorder:
    """The client's callbacks: canned answers, and every request and notification they saw."""

    def __init__(self) -> None:
        self.elicit_action: Literal["accept", "decline", "cancel"] = "accept"
        self.elicit_content: dict[str, Any] | None = {"name": "Ada", "age": 36, "color": "blue", "subscribe": True}
        self.elicitations: list[types.ElicitRequestFormParams | types.ElicitRequestURLParams] = []
        self.samplings: list[types.CreateMessageRequestParams] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.notifications: list[Any] = []
        self._changed = anyio.Event()

    def _seen(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition()`` holds; re-checked whenever a callback records something."""
        while not condition():
            await self._changed.wait()

    async def elicit(self, context: ClientRequestContext, params: Any) -> types.ElicitResult:
        self.elicitations.append(params)
        self._seen()
        content = self.elicit_content if self.elicit_action == "accept" and params.mode != "url" else None
        return types.ElicitResult(action=self.elicit_action, content=content)

    async def sample(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        self.samplings.append(params)
        self._seen()
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="four"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=ROOTS)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._seen()

    async def message(self, message: Any) -> None:
        self.notifications.append(message)
        self._seen()


@asynccontextmanager
async def connected(
    era: str, tmp_path: Path, recorder: Recorder, log_level: types.LoggingLevel | None = "debug"
) -> AsyncIterator[Client]:
    extra, version = ERAS[era]
    command, *args = server_command(CLIENTSERVER, *extra)
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    with open(tmp_path / "clientserver.stderr", "a") as errlog:
        client = Client(
            stdio_client(params, errlog=errlog),
            mode="auto",
            sampling_callback=recorder.sample,
            elicitation_callback=recorder.elicit,
            list_roots_callback=recorder.roots,
            logging_callback=recorder.log,
            log_level=log_level,
            message_handler=recorder.message,
        )
        async with client:
            assert client.protocol_version == version
            yield client


def run(era: str, tmp_path: Path, body: Callable[[Client, Recorder], Any], **options: Any) -> Recorder:
    """Run ``body(client, recorder)`` against a fresh server of ``era``, bounded by `LIMIT`."""
    recorder = Recorder()

    async def main() -> None:
        async with asyncio.timeout(LIMIT), connected(era, tmp_path, recorder, **options) as client:
            await body(client, recorder)

    asyncio.run(main())
    return recorder


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call a tool; its structured content, checked against its JSON text."""
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    text = result.content[0].text if result.content else "null"
    if result.structured_content is not None and set(result.structured_content) == {"result"}:
        return result.structured_content["result"]
    if result.structured_content is not None:
        assert json.loads(text) == result.structured_content
        return result.structured_content
    return text


eras = pytest.mark.parametrize("era", list(ERAS))


@eras
def test_capabilities(era: str, tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        caps = client.server_capabilities
        assert caps.logging is not None and caps.completions is not None
        assert caps.resources is not None and caps.resources.subscribe is True
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {
            *("ask_person", "ask_url", "need_url", "sample", "my_roots", "roots_changed_count"),
            *("log_at", "last_log_level", "bump", "needs_task", "client_info"),
        }
        # Only the handshake era's Tool has `execution`; the 2026-07-28 wire model drops it.
        execution = tools["needs_task"].execution
        assert (execution.task_support if execution else None) == ("required" if era == "legacy" else None)
        assert await call(client, "needs_task") == "ran"

    run(era, tmp_path, body)


@eras
def test_form_elicitation(era: str, tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        answer = await call(client, "ask_person", {"message": "Tell me"})
        assert answer == {"action": "accept", "content": rec.elicit_content}
        (request,) = rec.elicitations
        assert request.message == "Tell me"
        schema = request.requested_schema
        assert schema["required"] == ["name"]
        props = schema["properties"]
        assert props["name"]["type"] == "string"
        assert props["age"]["type"] == "integer" and props["age"]["minimum"] == 0
        assert props["color"]["enum"] == ["red", "green", "blue"] and props["color"]["default"] == "green"
        assert props["subscribe"]["type"] == "boolean"

        rec.elicit_content = {"name": "Bo"}
        assert await call(client, "ask_person") == {"action": "accept", "content": {"name": "Bo"}}
        assert rec.elicitations[-1].message == "Who are you?"
        actions: tuple[Literal["decline", "cancel"], ...] = ("decline", "cancel")
        for action in actions:
            rec.elicit_action = action
            assert await call(client, "ask_person") == {"action": action, "content": None}

    run(era, tmp_path, body)


@eras
def test_url_elicitation(era: str, tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        assert await call(client, "ask_url", {"url": "https://example.org/x"}) == {"action": "accept"}
        (request,) = rec.elicitations
        assert request.mode == "url" and request.url == "https://example.org/x"
        if era == "legacy":
            # The id, and the completion notification, exist on the handshake era only.
            assert request.elicitation_id == "url-1"
            await rec.wait_for(lambda: any(isinstance(n, types.ElicitCompleteNotification) for n in rec.notifications))
            (done,) = [n for n in rec.notifications if isinstance(n, types.ElicitCompleteNotification)]
            assert done.params.elicitation_id == "url-1"
        rec.elicit_action = "decline"
        assert await call(client, "ask_url") == {"action": "decline"}

        with pytest.raises(MCPError) as failure:
            await client.call_tool("need_url", {})
        assert failure.value.error.code == -32042
        assert failure.value.error.message == "URL elicitation required"
        (needed,) = failure.value.error.data["elicitations"]
        assert needed["mode"] == "url" and needed["url"] == "https://example.com/authorize"
        assert needed["elicitationId"].startswith("url-")

    run(era, tmp_path, body)


@eras
def test_sampling(era: str, tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        answer = await call(client, "sample", {"prompt": "2 + 2?", "max_tokens": 7})
        assert answer == {"model": "test-model", "role": "assistant", "text": "four", "stop_reason": "endTurn"}
        (request,) = rec.samplings
        assert request.max_tokens == 7
        (message,) = request.messages
        assert message.role == "user" and message.content.text == "2 + 2?"

    run(era, tmp_path, body)


@eras
def test_roots(era: str, tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        assert await call(client, "my_roots") == {
            "roots": [{"uri": "file:///work/project", "name": "project"}, {"uri": "file:///tmp", "name": None}]
        }
        assert await call(client, "roots_changed_count") == 0
        if era == "legacy":  # 2026-07-28 has no client-to-server notifications
            await client.send_roots_list_changed()
            await client.send_roots_list_changed()
            assert await call(client, "roots_changed_count", {"at_least": 2}) == 2

    run(era, tmp_path, body)


@eras
def test_logging(era: str, tmp_path: Path) -> None:
    def levels(rec: Recorder, message: str) -> list[str]:
        return [log.level for log in rec.logs if log.data == message]

    async def body(client: Client, rec: Recorder) -> None:
        assert await call(client, "log_at", {"message": "one"}) == "logged"
        await rec.wait_for(lambda: len(levels(rec, "one")) == 4)
        assert levels(rec, "one") == ["debug", "info", "warning", "error"]
        assert {log.logger for log in rec.logs} == {"clientserver"}
        assert await call(client, "last_log_level") == ("debug" if era == "modern" else None)
        if era == "legacy":
            await client.set_logging_level("warning")
            assert await call(client, "last_log_level") == "warning"
        # Below the level (the client's _meta opt-in, or logging/setLevel): not sent.
        meta = {types.LOG_LEVEL_META_KEY: "warning"} if era == "modern" else None
        await client.call_tool("log_at", {"message": "two"}, meta=meta)
        await call(client, "log_at", {"levels": ["emergency"], "message": "end"})
        await rec.wait_for(lambda: levels(rec, "end") == ["emergency"])
        assert levels(rec, "two") == ["warning", "error"]

    run(era, tmp_path, body)


def test_no_logs_without_the_opt_in_on_2026(tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        assert await call(client, "last_log_level") is None
        assert await call(client, "log_at") == "logged"
        await client.call_tool(
            "log_at", {"message": "end", "levels": ["error"]}, meta={types.LOG_LEVEL_META_KEY: "info"}
        )
        await rec.wait_for(lambda: len(rec.logs) == 1)
        assert [(log.level, log.data) for log in rec.logs] == [("error", "end")]

    run("modern", tmp_path, body, log_level=None)


@eras
def test_completions(era: str, tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        prompt = types.PromptReference(type="ref/prompt", name="greet")
        city = types.ResourceTemplateReference(type="ref/resource", uri="city://{country}/{city}")

        async def values(ref: Any, name: str, value: str, context: dict[str, str] | None = None) -> list[str]:
            result = await client.complete(ref, {"name": name, "value": value}, context)
            return result.completion.values

        assert await values(prompt, "language", "es") == ["esperanto", "estonian"]
        assert await values(prompt, "language", "") == ["english", "esperanto", "estonian", "french"]
        assert await values(city, "country", "fi") == ["finland", "fiji"]
        assert await values(city, "city", "", {"country": "france"}) == ["paris", "lyon"]
        assert await values(city, "city", "e", {"country": "finland"}) == ["espoo"]
        assert await values(city, "city", "") == []
        prompted = await client.get_prompt("greet", {"language": "french", "name": "Zoé"})
        assert prompted.messages[0].content.text == "Greet Zoé in french."

    run(era, tmp_path, body)


@eras
def test_paginated_listings_and_reads(era: str, tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        first = await client.list_resource_templates()
        assert len(first.resource_templates) == 1 and first.next_cursor is not None
        templates, cursor = list(first.resource_templates), first.next_cursor
        while cursor is not None:
            page = await client.list_resource_templates(cursor=cursor)
            templates += page.resource_templates
            cursor = page.next_cursor
        assert [t.uri_template for t in templates] == ["city://{country}/{city}", "note://{id}", "pages://{n}"]

        first_resources = await client.list_resources()
        assert len(first_resources.resources) == 1
        second = await client.list_resources(cursor=first_resources.next_cursor)
        assert second.next_cursor is None
        uris = [str(r.uri) for r in [*first_resources.resources, *second.resources]]
        assert uris == ["counter://value", "about://clientserver"]
        with pytest.raises(MCPError):
            await client.list_resource_templates(cursor="nonsense")

        async def read(uri: str) -> str:
            return (await client.read_resource(uri, cache_mode="bypass")).contents[0].text

        assert await read("city://france/paris") == "paris, france"
        assert await read("note://7") == "note 7"
        assert await read("pages://2") == "page 2"

    run(era, tmp_path, body)


def test_resource_subscription_on_2026(tmp_path: Path) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        async with client.listen(resource_subscriptions=["counter://value"]) as subscription:
            assert await call(client, "bump", {"by": 2}) == 2
            events = aiter(subscription)
            assert await anext(events) == ResourceUpdated(uri="counter://value")
        assert (await client.read_resource("counter://value", cache_mode="bypass")).contents[0].text == "2"

    run("modern", tmp_path, body)


def test_resource_subscription_on_2025(tmp_path: Path) -> None:
    def updates(rec: Recorder) -> list[str]:
        return [str(n.params.uri) for n in rec.notifications if isinstance(n, types.ResourceUpdatedNotification)]

    async def body(client: Client, rec: Recorder) -> None:
        with pytest.raises(ListenNotSupportedError):
            async with client.listen(resource_subscriptions=["counter://value"]):
                pass
        assert await call(client, "bump") == 1  # nobody subscribed yet
        await client.subscribe_resource("counter://value")
        assert await call(client, "bump", {"by": 4}) == 5
        await rec.wait_for(lambda: len(updates(rec)) == 1)
        assert updates(rec) == ["counter://value"]
        assert (await client.read_resource("counter://value", cache_mode="bypass")).contents[0].text == "5"
        await client.unsubscribe_resource("counter://value")
        await call(client, "bump")
        await call(client, "log_at", {"levels": ["error"], "message": "end"})
        await rec.wait_for(lambda: any(log.data == "end" for log in rec.logs))
        assert updates(rec) == ["counter://value"]

    run("legacy", tmp_path, body)
