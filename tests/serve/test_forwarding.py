"""`serve` forwards a downstream server's requests and notifications to the upstream client.

The upstream is the SDK's `Client` with sampling, elicitation, roots and logging callbacks, on both
protocol generations: 2026-07-28 (`server/discover`; the serve answers `InputRequiredResult`s the
client retries) and 2025-11-25 (`initialize`; real requests mid-call). Downstream: our
clientserver on 2026-07-28 and, with `--legacy`, on 2025-11-25, and npm server-everything.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from conftest import SERVERS, free_port, npm_server, python_command, python_server, toolbox, write_config
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_clientserver import ROOTS, Recorder

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CLIENTSERVER = str(SERVERS / "clientserver.py")
UPSTREAM = {"modern": ("auto", "2026-07-28"), "legacy": ("legacy", "2025-11-25")}
DOWNSTREAM = ["new", "old"]  # clientserver on 2026-07-28, and on 2025-11-25 (--legacy)
LIMIT = 90


@pytest.fixture
def config(tmp_path: Path) -> Path:
    servers = {
        "new": python_server(CLIENTSERVER),
        "old": python_server(CLIENTSERVER, "--legacy"),
        "ev": npm_server("everything"),
    }
    return write_config(tmp_path / "workbench-config.json", {"toolboxes": {"fw": toolbox(servers)}})


@asynccontextmanager
async def upstream(config: Path, era: str, recorder: Recorder, *extra: str, **callbacks: Any) -> AsyncIterator[Client]:
    """`serve` over stdio, reached by an SDK client of `era` with the recorder's callbacks."""
    mode, version = UPSTREAM[era]
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), *extra]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    options: dict[str, Any] = {
        "sampling_callback": recorder.sample,
        "elicitation_callback": recorder.elicit,
        "list_roots_callback": recorder.roots,
        "logging_callback": recorder.log,
        "log_level": "debug",
    }
    options.update(callbacks)
    with open(config.parent / "serve.stderr", "a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, **options) as client:  # type: ignore[arg-type]
            assert client.protocol_version == version
            yield client


@asynccontextmanager
async def upstream_http(config: Path, era: str, recorder: Recorder) -> AsyncIterator[Client]:
    """`serve --transport http` (with a token), reached over streamable HTTP."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    mode, version = UPSTREAM[era]
    port = free_port()
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--transport", "http"]
    with open(config.parent / "serve.stderr", "a") as errlog:
        proc = subprocess.Popen([*command, "--port", str(port), "--token", "fw-token"], stderr=errlog, stdout=errlog)
        try:
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
                    break
                except httpx.TransportError:
                    assert proc.poll() is None, "serve exited"
                    await asyncio.sleep(0.1)
            async with create_mcp_http_client(headers={"Authorization": "Bearer fw-token"}) as http:
                transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
                async with Client(
                    transport,
                    mode=mode,  # type: ignore[arg-type]
                    sampling_callback=recorder.sample,
                    elicitation_callback=recorder.elicit,
                    list_roots_callback=recorder.roots,
                    logging_callback=recorder.log,
                    log_level="debug",
                ) as client:
                    assert client.protocol_version == version
                    yield client
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def run(config: Path, era: str, body: Callable[[Client, Recorder], Any], *extra: str, **callbacks: Any) -> Recorder:
    recorder = Recorder()

    async def main() -> None:
        async with asyncio.timeout(LIMIT), upstream(config, era, recorder, *extra, **callbacks) as client:
            opened = await client.call_tool("open_toolbox", {"toolbox": "fw"})
            assert opened.structured_content and opened.structured_content["servers_connected"] == 3, opened
            await body(client, recorder)

    asyncio.run(main())
    return recorder


async def use(client: Client, server: str, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> Any:
    """`use_tool`; the downstream result's structured content (or text)."""
    ident = {"toolbox": "fw", "server": server, "name": name}
    result = await client.call_tool("use_tool", {"tool": ident, "arguments": arguments or {}}, **kw)
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


eras = pytest.mark.parametrize("era", list(UPSTREAM))


@eras
def test_sampling_elicitation_and_roots_reach_the_upstream_client(config: Path, era: str) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        for server in DOWNSTREAM:
            sampled = await use(client, server, "sample", {"prompt": f"2+2 from {server}", "max_tokens": 7})
            assert sampled == {"model": "test-model", "role": "assistant", "text": "four", "stop_reason": "endTurn"}
            assert rec.samplings[-1].max_tokens == 7
            assert rec.samplings[-1].messages[0].content.text == f"2+2 from {server}"  # type: ignore[union-attr]

            asked = await use(client, server, "ask_person", {"message": f"who? ({server})"})
            assert asked == {
                "action": "accept",
                "content": {"name": "Ada", "age": 36, "color": "blue", "subscribe": True},
            }
            form = rec.elicitations[-1]
            assert form.message == f"who? ({server})" and isinstance(form, types.ElicitRequestFormParams)
            assert set(form.requested_schema["properties"]) == {"name", "age", "color", "subscribe"}

            url = f"https://example.com/{server}"
            assert await use(client, server, "ask_url", {"url": url}) == {"action": "accept"}
            assert isinstance(rec.elicitations[-1], types.ElicitRequestURLParams) and rec.elicitations[-1].url == url

            rec.elicit_action = "decline"
            assert await use(client, server, "ask_person") == {"action": "decline", "content": None}
            rec.elicit_action = "accept"

            roots = await use(client, server, "my_roots")
            assert roots["roots"] == [{"uri": str(r.uri), "name": r.name} for r in ROOTS]
        assert len(rec.samplings) == 2 and len(rec.elicitations) == 6

    run(config, era, body)


@eras
def test_server_everything_samples_elicits_and_reports_progress_upstream(config: Path, era: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def body(client: Client, rec: Recorder) -> None:
        sampled = await use(client, "ev", "trigger-sampling-request", {"prompt": "say four"})
        assert "four" in sampled and rec.samplings[-1].messages[0].content.text.endswith("say four")  # type: ignore[union-attr]
        elicited = await use(client, "ev", "trigger-elicitation-request")
        assert "accept" in elicited and "Ada" in elicited and rec.elicitations
        done = await use(
            client, "ev", "trigger-long-running-operation", {"duration": 0.4, "steps": 4}, progress_callback=on_progress
        )
        assert "completed" in done.lower()
        # every one, in order: in the 2026-07-28 era server-everything may ask for roots mid-call
        # (as it hears of them), and what it told while serve waited for the client's retry goes
        # out through the retry's request (under load, one of four was lost before stop 46)
        assert progress == [(1, 4, None), (2, 4, None), (3, 4, None), (4, 4, None)], progress

    run(config, era, body)


@eras
def test_log_messages_reach_the_upstream_client(config: Path, era: str) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        for server in DOWNSTREAM:
            assert await use(client, server, "log_at", {"levels": ["info", "warning"], "message": f"hello {server}"})
            hello = f"hello {server}"
            await rec.wait_for(lambda: sum(hello in json.dumps(log.data) for log in rec.logs) >= 2)  # noqa: B023
        seen = [(log.level, log.logger) for log in rec.logs if "hello" in json.dumps(log.data)]
        # named by their server: toolbox/server, then the server's own logger name
        assert seen == [(level, f"fw/{server}/clientserver") for server in DOWNSTREAM for level in ("info", "warning")]

    run(config, era, body)


@eras
def test_dynamic_mode_calls_forward_too(config: Path, era: str) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        result = await client.call_tool("fw__new__ask_person", {"message": "dynamic?"})
        assert json.loads(result.content[0].text)["content"]["name"] == "Ada"  # type: ignore[union-attr]
        result = await client.call_tool("fw__old__sample", {"prompt": "dynamic 2+2"})
        assert json.loads(result.content[0].text)["text"] == "four"  # type: ignore[union-attr]
        assert rec.elicitations[-1].message == "dynamic?"

    run(config, era, body, "--mode", "dynamic")


@eras
def test_what_the_upstream_client_lacks_is_not_advertised_or_forwarded(config: Path, era: str) -> None:
    async def body(client: Client, rec: Recorder) -> None:
        listed = await client.call_tool("open_toolbox", {"toolbox": "fw"})
        names = {(t["server"], t["name"]) for t in listed.structured_content["tools"]}  # type: ignore[index]
        assert ("ev", "trigger-sampling-request") not in names  # the upstream client cannot sample
        assert ("ev", "trigger-elicitation-request") in names
        modern = client.protocol_version >= "2026-07-28"
        for server in DOWNSTREAM:  # the servers were not told the client samples: they do not ask
            ident = {"toolbox": "fw", "server": server, "name": "sample"}
            refused = await client.call_tool("use_tool", {"tool": ident, "arguments": {"prompt": "x"}})
            assert refused.is_error
        # no elicitation callback upstream: the downstream's question is declined, nobody hangs; on
        # 2026-07-28 the call is -32021 naming what it needed (SEP-2575)
        if modern:
            with pytest.raises(MCPError) as missing:
                await use(client, "old", "ask_person")
            assert missing.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert missing.value.error.data["requiredCapabilities"] == {"elicitation": {}}
        else:
            assert (await use(client, "old", "ask_person"))["action"] in ("decline", "cancel")
        assert not rec.samplings and not rec.elicitations

    run(config, era, body, sampling_callback=None, elicitation_callback=None)


@eras
def test_forwarding_over_http(config: Path, era: str) -> None:
    """The same through `serve --transport http`: requests ride the call's own response stream."""
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def main() -> None:
        rec = Recorder()
        async with asyncio.timeout(LIMIT), upstream_http(config, era, rec) as client:
            for server in DOWNSTREAM:
                sampled = await use(client, server, "sample", {"prompt": f"http {server}"})
                assert sampled["text"] == "four"
                assert (await use(client, server, "ask_person"))["content"]["name"] == "Ada"
                assert (await use(client, server, "my_roots"))["roots"][0]["uri"] == str(ROOTS[0].uri)
                assert await use(client, server, "log_at", {"levels": ["warning"], "message": f"over http {server}"})
                hello = f"over http {server}"
                await rec.wait_for(lambda: any(hello in json.dumps(log.data) for log in rec.logs))  # noqa: B023
            arguments = {"duration": 0.3, "steps": 3}
            await use(client, "ev", "trigger-long-running-operation", arguments, progress_callback=on_progress)
            assert progress == [1, 2, 3]
            assert [p.messages[0].content.text for p in rec.samplings] == ["http new", "http old"]  # type: ignore[union-attr]

    asyncio.run(main())


def test_a_question_asked_as_the_call_ends_is_still_asked_of_the_client(make_workbench: Any) -> None:
    """A downstream server's question that reached the call's upstream just as the call's answer
    came in (a roots/list after a list_changed, say): the server waits on it and will not ask again,
    so the client is asked (an `InputRequiredResult`), and its retry gets the answer down and the
    call's result back."""
    from workbench_magic.serve.forwarding import Forwarder
    from workbench_magic.serve.lane import LaneRequest

    wb = make_workbench(None)
    roots = types.ListRootsResult(roots=[types.Root(uri="file:///given")])

    async def main() -> None:
        capabilities = types.ClientCapabilities(roots=types.RootsCapability())
        context = LaneRequest(1, "2026-07-28", capabilities, {})
        question = asyncio.get_running_loop().create_future()

        async def call(channel: Any) -> str:  # the call has ended, its question still unasked
            channel.upstream.questions.append((types.ListRootsRequest(), types.ListRootsResult, question, None))
            return "the call's result"

        forwarder = Forwarder()
        asked = await forwarder.forward(context, call)
        assert isinstance(asked, types.InputRequiredResult) and asked.request_state is not None
        [(key, request)] = asked.input_requests.items()
        assert isinstance(request, types.ListRootsRequest)
        retry = LaneRequest(2, "2026-07-28", capabilities, {})
        retry.request_state, retry.input_responses = asked.request_state, {key: roots}
        assert await forwarder.forward(retry, call) == "the call's result"
        assert question.result() == roots and forwarder.pending == 0

    wb.run_on_loop(main())


def test_the_downstreams_key_is_kept_and_an_answer_given_before_asking_is_taken(make_workbench: Any) -> None:
    """A 2026-07-28 downstream's question goes on under its own `inputRequests` key (a client that
    knows the server answers under it), and an answer the client sent with its first request (its
    `inputResponses`, extra keys included) answers the question of that key without asking."""
    from workbench_magic.serve.forwarding import Forwarder
    from workbench_magic.serve.lane import LaneRequest

    wb = make_workbench(None)
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}

    async def main() -> None:
        capabilities = types.ClientCapabilities(elicitation=types.ElicitationCapability(form={}))
        context = LaneRequest(1, "2026-07-28", capabilities, {})
        context.input_responses = {
            "user_name": types.ElicitResult(action="accept", content={"name": "Ada"}),
            "unknown_extra_key": types.ElicitResult(action="accept", content={"foo": "bar"}),
        }

        async def call(channel: Any) -> list[Any]:
            upstream = channel.upstream
            asked = [types.ElicitRequestFormParams(message=m, requested_schema=schema) for m in ("name?", "color?")]
            first = await upstream.elicit(asked[0], key="user_name")
            second = await upstream.elicit(asked[1], key="favourite_color")
            return [first.content, second.content]

        forwarder = Forwarder()
        asked = await forwarder.forward(context, call)
        assert isinstance(asked, types.InputRequiredResult)
        assert list(asked.input_requests) == ["favourite_color"]  # user_name was answered already
        retry = LaneRequest(2, "2026-07-28", capabilities, {})
        retry.request_state = asked.request_state
        retry.input_responses = {"favourite_color": types.ElicitResult(action="accept", content={"name": "blue"})}
        assert await forwarder.forward(retry, call) == [{"name": "Ada"}, {"name": "blue"}]

    wb.run_on_loop(main())
