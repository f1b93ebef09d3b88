"""The connection doctor against real servers: each failure names its step and its cause."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import children, fault_server, free_port, server_command, stdio_server, wait_until

from workbench_magic.config.settings import ServerConfig
from workbench_magic.engine.doctor import diagnose
from workbench_magic.vocabulary.doctor import DoctorReport


def doctor(config: dict[str, Any], **options: Any) -> DoctorReport:
    """`diagnose` a server config, checking that it leaves no child process behind."""
    before = children()
    options.setdefault("timeout", 20.0)
    report = asyncio.run(diagnose("box", "srv", ServerConfig.model_validate(config), **options))
    assert wait_until(lambda: not children() - before, 10), "the doctor left a child process running"
    return report


def failed_at(report: DoctorReport, step: str) -> str:
    """The finding of the failed step, which must be `step`; the later steps are skipped."""
    assert not report.ok, report
    failed = report.failed
    assert failed is not None and failed.name == step, report
    names = [s.name for s in report.steps]
    assert all(s.status == "skipped" for s in report.steps[names.index(step) + 1 :]), report
    return failed.finding


def test_healthy_stdio_server_is_ok_and_its_tools_are_counted() -> None:
    report = doctor(stdio_server())
    assert report.ok, report
    assert [s.name for s in report.steps] == [
        "config", "command", "process", "protocol", "era", "capabilities", "tools"
    ]  # fmt: skip
    assert all(s.status in ("ok", "warning") for s in report.steps), report
    assert "answered initialize" in report.step("protocol").finding
    assert "protocol 20" in report.step("era").finding
    assert "tools" in report.step("capabilities").finding
    assert " tools" in report.step("tools").finding and report.step("tools").finding[0].isdigit()


def test_a_missing_command_is_named() -> None:
    finding = failed_at(doctor({"command": "/nonexistent/server"}), "command")
    assert "/nonexistent/server does not exist" in finding


def test_a_missing_package_runner_says_how_to_install_it(tmp_path: Path) -> None:
    report = doctor({"command": "npx", "args": ["-y", "some-server"]}, env={"PATH": str(tmp_path)})
    finding = failed_at(report, "command")
    assert "npx" in finding and "Node.js" in finding and "not installed" in finding
    assert "install Node.js" in report.step("command").hint


def test_a_process_that_exits_at_start_shows_its_status_and_stderr() -> None:
    report = doctor(fault_server("--start", "exit", "--stderr", "boom: no API key"))
    # Within its first second it fails the process step; a slower exit (a loaded machine, a cold
    # zygote) is seen by the protocol step, with the same status and stderr.
    assert report.failed is not None and report.failed.name in ("process", "protocol"), report
    finding = failed_at(report, report.failed.name)
    assert "exit status 3" in finding and "boom: no API key" in finding


def test_stdout_junk_is_named() -> None:
    finding = failed_at(doctor(fault_server("--start", "garbage"), timeout=3.0), "protocol")
    assert "not JSON-RPC" in finding and "Welcome to the fault server!" in finding


def test_a_server_that_never_answers_is_a_protocol_timeout() -> None:
    finding = failed_at(doctor(fault_server("--start", "silent"), timeout=2.0), "protocol")
    assert "no answer to initialize within 2 s" in finding


def test_secrets_in_env_are_never_shown() -> None:
    report = doctor(stdio_server(env={"API_KEY": "s3cret-value"}))
    assert report.ok, report
    assert "s3cret-value" not in repr(report) and "s3cret-value" not in report._repr_html_()


def test_a_closed_port_is_named() -> None:
    port = free_port()
    finding = failed_at(doctor({"url": f"http://127.0.0.1:{port}/mcp"}), "connect")
    assert f"nothing listens on 127.0.0.1:{port}" in finding


def test_healthy_http_server_is_ok_and_its_tools_are_counted(http_server: Callable[..., Any]) -> None:
    server = http_server("http")
    report = doctor({"url": server.url, "headers": {"X-Secret": "hdr-s3cret"}})
    assert report.ok, report
    assert [s.name for s in report.steps] == [
        "url", "connect", "tls", "http", "session", "era", "capabilities", "tools"
    ]  # fmt: skip
    assert report.step("tls").status == "skipped"
    assert report.step("http").finding.startswith("200")
    assert report.step("tools").finding[0].isdigit()
    assert "hdr-s3cret" not in repr(report)


def test_a_wrong_path_is_a_404(http_server: Callable[..., Any]) -> None:
    server = http_server("http")
    finding = failed_at(doctor({"url": server.url.replace("/mcp", "/nothing-here")}), "http")
    assert finding.startswith("404")


class _Protected(BaseHTTPRequestHandler):
    """401 for the MCP endpoint, with the OAuth metadata a protected resource publishes."""

    def do_POST(self) -> None:
        port = self.server.server_address[1]
        self.send_response(401)
        meta = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        self.send_header("WWW-Authenticate", f'Bearer realm="mcp", resource_metadata="{meta}"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        documents = {
            "/.well-known/oauth-protected-resource/mcp": {"authorization_servers": [f"http://127.0.0.1:{port}"]},
            "/.well-known/oauth-authorization-server": {"issuer": f"http://127.0.0.1:{port}"},
        }
        body = json.dumps(documents[self.path]).encode() if self.path in documents else b""
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def protected() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Protected)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    httpd.shutdown()
    httpd.server_close()


def test_a_401_names_what_www_authenticate_asks_and_the_oauth_metadata(protected: str) -> None:
    report = doctor({"url": protected})
    finding = failed_at(report, "http")
    assert finding.startswith("401 Unauthorized")
    assert "WWW-Authenticate asks for Bearer" in finding and "resource_metadata=" in finding
    assert "authorization server http://127.0.0.1:" in finding and "its metadata found" in finding
    assert '"auth": "oauth"' in report.step("http").hint


def test_the_token_protected_station_server_is_a_401_without_its_token() -> None:
    port = free_port()
    env = {**os.environ, "STATION_TOKEN": "station-s3cret"}
    proc = subprocess.Popen(
        server_command("stationserver.py", "--port", str(port)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        assert wait_until(lambda: _listening(port), 60), "the station server did not start"
        finding = failed_at(doctor({"url": url}), "http")
        assert "401 Unauthorized" in finding and "no WWW-Authenticate" in finding
        report = doctor({"url": url, "headers": {"Authorization": "Bearer station-s3cret"}})
        assert report.ok, report
        assert "station-s3cret" not in repr(report)
    finally:
        proc.terminate()
        proc.wait(10)


def _listening(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_an_in_process_server_has_nothing_to_diagnose() -> None:
    report = doctor({"python": "workbench_magic.demo.datasets:mcp"})
    assert report.ok
    assert report.steps[0].name == "config" and report.steps[1].status == "skipped"
    assert "in-process" in report.steps[1].finding


class _Plain(BaseHTTPRequestHandler):
    """Any answer: the TLS tests look at the handshake, not at MCP."""

    def do_POST(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no CA signed, and its key."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def _serve(handler: type[BaseHTTPRequestHandler], tls: tuple[Path, Path] | None = None) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_an_untrusted_certificate_is_named(self_signed: tuple[Path, Path]) -> None:
    httpd = _serve(_Plain, self_signed)
    try:
        report = doctor({"url": f"https://127.0.0.1:{httpd.server_address[1]}/mcp"})
        assert "certificate not trusted: self-signed certificate" in failed_at(report, "tls")
        assert "SSL_CERT_FILE" in report.step("tls").hint
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_trusted_certificate_passes_tls(self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(self_signed[0]))  # OpenSSL's default verify paths read it
    httpd = _serve(_Plain, self_signed)
    try:
        report = doctor({"url": f"https://127.0.0.1:{httpd.server_address[1]}/mcp"})
        tls = report.step("tls")
        assert tls.status == "ok", report
        assert tls.finding.startswith("TLSv1.") and "certificate valid until" in tls.finding
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_plain_http_on_an_https_url_fails_the_handshake() -> None:
    httpd = _serve(_Plain)
    try:
        report = doctor({"url": f"https://127.0.0.1:{httpd.server_address[1]}/mcp"})
        assert failed_at(report, "tls").startswith("TLS handshake failed: ")
        assert "plain http" in report.step("tls").hint
    finally:
        httpd.shutdown()
        httpd.server_close()
