"""Auth to remote servers: `"auth"` in the config, a static bearer token, and OAuth end to end.

OAuth runs against tests/servers/oauthserver.py (the SDK's server-side auth with an in-memory
authorization server): discovery, dynamic client registration, PKCE, the authorize link fetched
with httpx so its redirect lands on our loopback catcher, tokens in a 0600 file, refresh after
the short-lived access token expires, a new process reusing the stored tokens, and logout.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import SERVERS, free_port, python_command, stdio_server, stop_process, toolbox, write_config

from workbench_magic import Workbench
from workbench_magic.config.auth import AuthConfig, OAuthOptions, parse_auth
from workbench_magic.config.discovery import load_config
from workbench_magic.engine.auth import TOKEN_DIR_ENV, token_dir, token_path
from workbench_magic.notebook.views import ConfigView
from workbench_magic.vocabulary.errors import ConfigError, ConnectError, UsageError, WorkbenchError
from workbench_magic.vocabulary.masking import mask

OAUTHSERVER = SERVERS / "oauthserver.py"
TTL = 2


def start(command: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60  # a loaded machine starts a Python server slowly
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
            return proc
        except httpx.TransportError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"{command} did not start listening") from None
            time.sleep(0.1)


@pytest.fixture
def oauth_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(TOKEN_DIR_ENV, str(tmp_path / "tokens"))
    port = free_port()
    proc = start([sys.executable, str(OAUTHSERVER), "--port", str(port), "--ttl", str(TTL)], port)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


class Browser(logging.Handler):
    """The person: sees the authorize link in the log and opens it (httpx follows the redirect,
    which lands on the workbench's loopback catcher). `follow=False` only records the redirect."""

    def __init__(self, follow: bool = True) -> None:
        super().__init__(logging.WARNING)
        self.follow = follow
        self.links: list[str] = []
        self.redirects: list[str] = []
        self.ready = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"needs authorization: open (\S+)", record.getMessage())
        if found:
            self.links.append(found.group(1))
            threading.Thread(target=self._open, args=(found.group(1),), daemon=True).start()

    def _open(self, url: str) -> None:
        response = httpx.get(url, follow_redirects=False, timeout=10)
        self.redirects.append(response.headers["location"])
        self.ready.set()
        if self.follow:
            httpx.get(response.headers["location"], timeout=10)


@pytest.fixture
def browser() -> Iterator[Callable[..., Browser]]:
    made: list[Browser] = []
    log = logging.getLogger("workbench_magic")

    def make(follow: bool = True) -> Browser:
        handler = Browser(follow)
        log.addHandler(handler)
        made.append(handler)
        return handler

    yield make
    for handler in made:
        log.removeHandler(handler)


def oauth_workbench(url: str, **oauth: Any) -> Workbench:
    server = {"url": url, "auth": {"oauth": oauth} if oauth else "oauth"}
    return Workbench(config={"toolboxes": {"o": toolbox({"srv": server})}})


def stats(url: str) -> dict[str, int]:
    """The OAuth server's counts, read without a token: a tool call would spend the client's token's
    short lifetime, and on a loaded machine outlive it (then the client authorizes again)."""
    return httpx.get(url.removesuffix("/mcp") + "/stats", timeout=30).json()  # type: ignore[no-any-return]


# ---- config ---------------------------------------------------------------------------------------
def test_auth_config_shapes_and_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_auth("oauth") == AuthConfig(oauth=OAuthOptions())
    parsed = parse_auth({"oauth": {"client_id": "cid", "client_secret": "csecret-1", "scopes": ["a", "b"]}})
    assert parsed == AuthConfig(oauth=OAuthOptions(client_id="cid", client_secret="csecret-1", scopes=("a", "b")))
    monkeypatch.setenv("REMOTE_TOKEN", "bearer-from-env")
    monkeypatch.setenv("CLIENT_SECRET", "secret-from-env")
    config = load_config(
        {
            "toolboxes": {
                "r": toolbox(
                    {
                        "b": {"url": "https://b.example/mcp", "auth": {"bearer": "${REMOTE_TOKEN}"}},
                        "o": {"url": "https://o.example/mcp", "auth": {"oauth": {"client_secret": "${CLIENT_SECRET}"}}},
                    }
                )
            }
        }
    )
    b, o = config.server("r", "b"), config.server("r", "o")
    assert b.auth == AuthConfig(bearer="bearer-from-env")
    assert o.auth is not None and o.auth.oauth is not None and o.auth.oauth.client_secret == "secret-from-env"
    assert {"bearer-from-env", "secret-from-env"} <= config.secrets
    assert mask("Authorization: Bearer bearer-from-env", b.secrets) == "Authorization: Bearer ***"
    shown = repr(config) + ConfigView(config).text()
    assert "bearer-from-env" not in shown and "secret-from-env" not in shown
    assert "auth: bearer" in ConfigView(config).text() and "auth: oauth" in ConfigView(config).text()


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ("basic", "unknown auth 'basic'"),
        ({"bearer": ""}, "'bearer' must be a non-empty string"),
        ({"oauth": {"scope": "x"}}, "unknown oauth key 'scope'"),
        ({"oauth": {"scopes": [1]}}, "'scopes' must be a list of strings"),
        ({"bearer": "t", "oauth": {}}, "unknown auth"),
        ({"oauth": {"grant": "password"}}, "unknown grant 'password'"),
        ({"oauth": {"grant": "client_credentials"}}, "the client_credentials grant needs 'client_id'"),
        ({"oauth": {"client_metadata_url": "http://x.example/c.json"}}, "'client_metadata_url' must be an https://"),
        ({"oauth": {"token_endpoint_auth_method": "client_secret_basic"}}, "needs a 'client_secret'"),
        ({"oauth": {"token_endpoint_auth_method": "mtls"}}, "unknown token_endpoint_auth_method 'mtls'"),
        ({"oauth": {"private_key": "k"}}, "'private_key' is for the client_credentials grant"),
        ({"oauth": {"grant": "workload_identity"}}, "the workload_identity grant needs a 'workload_token'"),
        ({"oauth": {"workload_token": "t"}}, "'workload_token' is for the workload_identity grant"),
        (
            {"oauth": {"grant": "enterprise_managed", "client_id": "a", "client_secret": "b"}},
            "needs 'client_id', 'client_secret' and 'identity_provider'",
        ),
        ({"oauth": {"identity_provider": {"token_endpoint": "x"}}}, "needs 'token_endpoint' and 'id_token'"),
        ({"oauth": {"signing_algorithm": "none"}}, "unknown signing_algorithm 'none'"),
    ],
)
def test_bad_auth_is_one_line_with_its_path(auth: Any, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"toolboxes": {"r": toolbox({"s": {"url": "https://x.example/mcp", "auth": auth}})}})
    message = str(info.value)
    assert len(message.splitlines()) == 1 and expected in message and "toolboxes.r.mcpServers.s.auth" in message


def test_auth_on_a_stdio_server_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"auth: only applies to HTTP servers"):
        load_config({"toolboxes": {"r": toolbox({"s": stdio_server(auth={"bearer": "abcdef"})})}})


def test_the_token_directory_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert token_dir() == tmp_path / "xdg" / "workbench-magic" / "tokens"
    monkeypatch.setenv(TOKEN_DIR_ENV, str(tmp_path / "mine"))
    assert token_path("https://h.example/mcp").parent == tmp_path / "mine"
    assert token_path("https://h.example/mcp") != token_path("https://h.example/other")


# ---- bearer ---------------------------------------------------------------------------------------
def test_bearer_token_reaches_a_token_protected_serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own `serve --token` as the remote server: with the token it answers, without it refuses."""
    inner = write_config(
        tmp_path / "inner.json", {"toolboxes": {"in": toolbox({"s": stdio_server("--name", "inner")})}}
    )
    port = free_port()
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(inner), "--transport", "http"]
    proc = start([*command, "--port", str(port), "--token", "bearer-secret-1"], port)
    monkeypatch.setenv("REMOTE_TOKEN", "bearer-secret-1")
    url = f"http://127.0.0.1:{port}/mcp"
    servers = {"good": {"url": url, "auth": {"bearer": "${REMOTE_TOKEN}"}}, "none": {"url": url}}
    wb = Workbench(config={"toolboxes": {"r": toolbox(servers)}})
    try:
        box = wb.open("r")
        assert box.servers["good"].connected and not box.servers["none"].connected
        assert (box.servers["none"].error or "").endswith(": HTTP 401 Unauthorized (check the server's token/headers)")
        wb.call("r/good/open_toolbox", {"toolbox": "in"})
        who = wb.call("r/good/use_tool", {"tool": {"toolbox": "in", "server": "s", "name": "whoami"}})
        assert who.text == "inner"
        assert "bearer-secret-1" not in repr(wb.history) + repr(wb.status()) + wb.logs("r/good")
    finally:
        wb.close_all()
        stop_process(proc)


# ---- OAuth ----------------------------------------------------------------------------------------
def test_oauth_end_to_end_register_authorize_refresh_reuse_logout(
    oauth_url: str, browser: Callable[..., Browser]
) -> None:
    person = browser()
    wb = oauth_workbench(oauth_url, scopes=["read"])
    try:
        box = wb.open("o")
        assert box.servers["srv"].connected, box.servers["srv"].error
        assert len(person.links) == 1 and "code_challenge=" in person.links[0] and "scope=read" in person.links[0]
        redirect = person.redirects[0]
        assert redirect.startswith("http://127.0.0.1:") and "/callback?code=" in redirect
        assert stats(oauth_url) == {"registered": 1, "authorized": 1, "refreshed": 0, "rejected": 0}

        path = token_path(oauth_url)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        stored = path.read_text()
        client_id = wb.call("o/srv/whoami").text
        assert client_id in stored and '"refresh_token"' in stored
        first_token = re.search(r'"access_token": "([^"]+)"', stored).group(1)  # type: ignore[union-attr]

        time.sleep(TTL + 1)  # the access token expires; the next request refreshes it first
        assert wb.call("o/srv/whoami").text == client_id
        counts = stats(oauth_url)
        assert counts["refreshed"] == 1 and counts["authorized"] == 1 and counts["rejected"] == 0
        assert first_token not in path.read_text() and len(person.links) == 1
        shown = repr(wb.history) + repr(wb.status()) + wb.logs("o/srv")
        assert (
            first_token not in shown and re.search(r'"access_token": "([^"]+)"', path.read_text()).group(1) not in shown
        )  # type: ignore[union-attr]
    finally:
        wb.close_all()

    # a new process: the stored tokens (expired by now) are refreshed, nobody is asked
    time.sleep(TTL + 1)
    again = oauth_workbench(oauth_url, scopes=["read"])
    try:
        assert again.call("o/srv/whoami").text == client_id
        counts = stats(oauth_url)
        assert counts["authorized"] == 1 and counts["refreshed"] == 2 and len(person.links) == 1
        assert again.logout("o/srv") == ["srv"] and not token_path(oauth_url).exists()
        assert again.logout("o") == []  # nothing left to forget
    finally:
        again.close_all()

    # after logout the next connect registers and asks again
    fresh = oauth_workbench(oauth_url, scopes=["read"])
    try:
        assert fresh.call("o/srv/whoami").text != client_id
        assert stats(oauth_url)["registered"] == 2 and stats(oauth_url)["authorized"] == 2 and len(person.links) == 2
    finally:
        fresh.close_all()


def test_oauth_with_the_redirect_pasted(
    oauth_url: str, browser: Callable[..., Browser], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`"paste": true` (a kernel away from the browser): the person pastes the URL they were sent to."""
    person = browser(follow=False)
    prompts: list[str] = []

    def paste(prompt: str) -> str:
        prompts.append(prompt)
        assert person.ready.wait(10)
        return person.redirects[-1]

    monkeypatch.setattr("builtins.input", paste)
    wb = oauth_workbench(oauth_url, paste=True)
    try:
        assert wb.call("o/srv/whoami").text
        assert len(prompts) == 1 and "paste the URL your browser was sent to" in prompts[0]
        assert stats(oauth_url)["authorized"] == 1
    finally:
        wb.close_all()


def test_oauth_with_a_preregistered_client(
    oauth_url: str, browser: Callable[..., Browser], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `client_id` skips dynamic registration (the server refuses unknown clients, so register it
    first). The authorize link reaches the thread that opened the server (a notebook cell's)."""
    browser()
    shown: list[tuple[str, str, str]] = []
    monkeypatch.setattr(
        "workbench_magic.engine.auth._display_link",
        lambda where, url: shown.append((where, url, threading.current_thread().name)),
    )
    registered = httpx.post(
        oauth_url.replace("/mcp", "/register"),
        json={"redirect_uris": [f"http://127.0.0.1:{free_port()}/callback"], "token_endpoint_auth_method": "none"},
        timeout=10,
    ).json()
    port = int(registered["redirect_uris"][0].split(":")[2].split("/")[0])
    wb = oauth_workbench(oauth_url, client_id=registered["client_id"], redirect_port=port)
    try:
        assert wb.call("o/srv/whoami").text == registered["client_id"]
        assert stats(oauth_url)["registered"] == 1  # only ours, above
        assert len(shown) == 1 and shown[0][0] == oauth_url and "/authorize?" in shown[0][1]
        assert shown[0][2] == threading.current_thread().name  # shown where the call was made
    finally:
        wb.close_all()


def test_logout_names_what_it_cannot_find() -> None:
    wb = Workbench(config={"toolboxes": {"o": toolbox({"srv": {"url": "https://o.example/mcp", "auth": "oauth"}})}})
    with pytest.raises(WorkbenchError, match="Server 'nope' not found in toolbox 'o'"):
        wb.logout("o/nope")
    assert wb.logout("o") == []
    assert not os.environ.get("NO_SUCH")  # nothing else was touched


def test_keys_and_tokens_given_in_the_config_are_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIVATE_KEY", "-----BEGIN PRIVATE KEY-----key-text")
    monkeypatch.setenv("ID_TOKEN", "id-token-text")
    private = {"grant": "client_credentials", "client_id": "c", "private_key": "${PRIVATE_KEY}"}
    enterprise = {
        "grant": "enterprise_managed",
        "client_id": "c",
        "client_secret": "s3cret-value",
        "issuer": "https://as.example",
        "identity_provider": {"token_endpoint": "https://idp.example/token", "id_token": "${ID_TOKEN}"},
    }
    servers = {
        "k": {"url": "https://k.example/mcp", "auth": {"oauth": private}},
        "w": {
            "url": "https://w.example/mcp",
            "auth": {"oauth": {"grant": "workload_identity", "workload_token": "wl-token"}},
        },
        "e": {"url": "https://e.example/mcp", "auth": {"oauth": enterprise}},
    }
    config = load_config({"toolboxes": {"r": toolbox(servers)}})
    assert {"-----BEGIN PRIVATE KEY-----key-text", "id-token-text", "wl-token", "s3cret-value"} <= config.secrets
    shown = repr(config) + ConfigView(config).text()
    assert not any(value in shown for value in ("key-text", "id-token-text", "wl-token", "s3cret-value"))
    assert config.server("r", "e").auth.to_json()["oauth"]["identity_provider"]["token_endpoint"] == (  # type: ignore[union-attr]
        "https://idp.example/token"
    )


@pytest.mark.parametrize(
    ("configured", "supported", "secret", "chosen"),
    [
        (None, ["client_secret_basic", "client_secret_post"], True, "client_secret_basic"),
        (None, ["client_secret_post", "client_secret_basic"], True, "client_secret_basic"),
        (None, ["client_secret_post"], True, "client_secret_post"),
        (None, None, True, "client_secret_basic"),  # RFC 8414: basic when the server names none
        (None, ["none", "private_key_jwt"], True, "none"),
        (None, ["client_secret_basic"], False, "none"),
        ("client_secret_post", ["client_secret_basic"], True, "client_secret_post"),
    ],
)
def test_a_preregistered_client_authenticates_the_way_the_server_supports(
    configured: str | None, supported: list[str] | None, secret: bool, chosen: str
) -> None:
    """The old code always sent the secret in the form body (client_secret_post), which an
    authorization server supporting only client_secret_basic refuses (conformance
    auth/pre-registration)."""
    from workbench_magic.engine.auth import token_endpoint_auth_method

    assert token_endpoint_auth_method(configured, supported, secret) == chosen


def test_a_key_or_token_is_the_file_it_names_read_at_each_use(tmp_path: Path) -> None:
    from workbench_magic.engine.auth import secret_text

    token = tmp_path / "token"
    token.write_text("first-token\n")
    assert secret_text(str(token)) == "first-token"
    token.write_text("rotated-token\n")  # a platform refreshes the file in place
    assert secret_text(str(token)) == "rotated-token"
    jwt_like = "eyJ" + "a" * 400 + ".eyJ" + "b" * 400 + ".sig"  # longer than a file name may be
    assert secret_text(jwt_like) == jwt_like
    assert secret_text(str(tmp_path / "missing")) == str(tmp_path / "missing")
    pem = "-----BEGIN PRIVATE KEY-----\nMIG\n-----END PRIVATE KEY-----"
    assert secret_text(pem) == pem


def follow_link(url: str) -> None:
    """A headless browser: open the authorization link, go where it redirects (the catcher)."""
    response = httpx.get(url, follow_redirects=False, timeout=10)
    httpx.get(response.headers["location"], timeout=10)


def test_an_authorization_handler_gets_the_link_and_nothing_is_shown(
    oauth_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    given: list[str] = []
    shown: list[str] = []
    monkeypatch.setattr("workbench_magic.engine.auth._display_link", lambda where, url: shown.append(url))

    def handler(url: str) -> None:
        given.append(url)
        follow_link(url)

    wb = Workbench(
        config={"toolboxes": {"o": toolbox({"srv": {"url": oauth_url, "auth": "oauth"}})}},
        authorization_handler=handler,
        connect_timeout=60,
    )
    try:
        with caplog.at_level(logging.WARNING, logger="workbench_magic"):
            assert wb.call("o/srv/whoami").text
        assert len(given) == 1 and "/authorize?" in given[0]
        assert shown == [] and "needs authorization" not in caplog.text
        assert wb.authorization_handler is handler
    finally:
        wb.close_all()


def test_a_failing_authorization_handler_is_one_line(oauth_url: str) -> None:
    def handler(url: str) -> None:
        raise RuntimeError("no browser here")

    wb = Workbench(config={"toolboxes": {"o": toolbox({"srv": {"url": oauth_url, "auth": "oauth"}})}})
    wb.authorization_handler = handler
    try:
        with pytest.raises(ConnectError) as info:
            wb.open("o")
        assert f"authorization_handler failed for {oauth_url}: no browser here" in str(info.value)
        assert len(str(info.value).splitlines()) == 1
    finally:
        wb.close_all()


def test_an_authorization_handler_that_is_not_a_function_is_refused() -> None:
    with pytest.raises(UsageError, match="authorization_handler must be None or a function"):
        Workbench(
            config={"toolboxes": {"o": toolbox({"srv": {"url": "https://o.example/mcp", "auth": "oauth"}})}},
            authorization_handler="https://example.com",  # type: ignore[arg-type]
        )
