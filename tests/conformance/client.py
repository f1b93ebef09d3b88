"""The workbench as the client under test of the official MCP conformance suite.

`conformance client --command "python tests/conformance/client.py"` starts one scenario server and
runs this with its URL as the last argument; `MCP_CONFORMANCE_SCENARIO` names the scenario,
`MCP_CONFORMANCE_PROTOCOL_VERSION` the revision it runs at, and `MCP_CONFORMANCE_CONTEXT` (JSON)
carries what a user would have been given out of band (a client id, a secret, a key, tokens).

It uses the public API only, as a user would: a config with one server and its `auth` written the
documented way, an `authorization_handler` that follows the authorization link as a browser would
(the authorization server redirects to the workbench's loopback catcher), an elicitation handler
that accepts with the schema's defaults, then every listed tool called (with the calls the scenario
names, else arguments made from the schema), resources read, prompts got and skills loaded.
Exit 0 when all of that went through; 1 with the error's one line otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from workbench_magic import ToolError, Workbench, WorkbenchError

TOOLBOX, SERVER = "conformance", "server"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document the suite's authorization servers accept (auth/basic-cimd)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None


def follow(url: str) -> None:
    """Be the person's browser: open the authorization link, then go where it redirects (the
    workbench's loopback catcher takes the code from there)."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=30) as response:
            location = response.headers.get("Location")
    except urllib.error.HTTPError as exc:  # a 3xx arrives as an "error" without a redirect handler
        location = exc.headers.get("Location")
        if exc.code not in (301, 302, 303, 307, 308):
            raise
    if not location:
        raise RuntimeError(f"the authorization server did not redirect from {url}")
    with urllib.request.urlopen(location, timeout=30) as response:
        response.read()


def with_defaults(message: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """Accept, with every default the schema offers (SEP-1034)."""
    properties = schema.get("properties") or {}
    return {name: spec["default"] for name, spec in properties.items() if "default" in spec}


def example(schema: Mapping[str, Any]) -> Any:
    """A value the schema accepts (its default, first enum member or a plain one of its type)."""
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
    plain: dict[Any, Any] = {"number": 1, "integer": 1, "boolean": True, "array": [], "object": {}, "null": None}
    return plain.get(kind, "test")


def arguments_for(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    return {name: example(properties.get(name) or {}) for name in schema.get("required") or ()}


def auth_for(scenario: str, url: str, context: Mapping[str, Any], secrets: dict[str, str]) -> Any:
    """The server's `auth`, as the docs tell a user to write it for what they were given."""
    if not scenario.startswith("auth/"):
        return None
    if scenario.startswith("auth/client-credentials"):
        options: dict[str, Any] = {"grant": "client_credentials", "client_id": context["client_id"]}
        if "private_key_pem" in context:
            secrets["CONFORMANCE_PRIVATE_KEY"] = context["private_key_pem"]
            options |= {"private_key": "${CONFORMANCE_PRIVATE_KEY}", "signing_algorithm": context["signing_algorithm"]}
        else:
            secrets["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
            options["client_secret"] = "${CONFORMANCE_CLIENT_SECRET}"
        return {"oauth": options}
    if scenario == "auth/wif-jwt-bearer":
        secrets["CONFORMANCE_WORKLOAD_TOKEN"] = context["valid_jwt"]
        return {
            "oauth": {
                "grant": "workload_identity",
                "client_id": context["client_id"],
                "workload_token": "${CONFORMANCE_WORKLOAD_TOKEN}",
            }
        }
    if scenario == "auth/enterprise-managed-authorization":
        # The enterprise names its authorization server to its users; here it is read where the
        # MCP server publishes it (protected resource metadata).
        parts = urllib.parse.urlsplit(url)
        well_known = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
        with urllib.request.urlopen(well_known, timeout=30) as response:
            issuer = json.load(response)["authorization_servers"][0]
        secrets["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        secrets["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        return {
            "oauth": {
                "grant": "enterprise_managed",
                "issuer": issuer,
                "client_id": context["client_id"],
                "client_secret": "${CONFORMANCE_CLIENT_SECRET}",
                "identity_provider": {
                    "token_endpoint": context["idp_token_endpoint"],
                    "client_id": context.get("idp_client_id"),
                    "id_token": "${CONFORMANCE_ID_TOKEN}",
                },
            }
        }
    options = {"client_metadata_url": CIMD_URL}
    if context.get("client_id"):
        options["client_id"] = context["client_id"]
    if context.get("client_secret"):
        secrets["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        options["client_secret"] = "${CONFORMANCE_CLIENT_SECRET}"
    if scenario.startswith("auth/dpop"):
        options["dpop"] = True
    return {"oauth": options}


def said(what: str) -> None:
    """A line on stderr (the suite keeps it in the scenario's stderr.txt), with seconds since start."""
    print(f"[{time.perf_counter() - STARTED:6.2f} s] {what}", file=sys.stderr, flush=True)


STARTED = time.perf_counter()


def call(wb: Workbench, tool: Any, arguments: Mapping[str, Any]) -> None:
    """Call a tool; a failed call is said and the run goes on, as a notebook's would (the scenario's
    checks judge what reached the server; some scenarios answer a call with a result the SDK must
    refuse)."""
    try:
        wb.call(tool, arguments)
    except ToolError as exc:
        said(f"{type(exc).__name__}: {exc}")


def run(url: str, scenario: str, version: str, context: Mapping[str, Any]) -> None:
    secrets: dict[str, str] = {}
    server: dict[str, Any] = {"url": url, "protocol": "2026-07-28" if version == "2026-07-28" else "legacy"}
    auth = auth_for(scenario, url, context, secrets)
    if auth is not None:
        server["auth"] = auth
    os.environ.update(secrets)
    config = {"toolboxes": {TOOLBOX: {"mcpServers": {SERVER: server}}}}
    # A required set starts all its clients at once: on two cores a connect can take a while.
    wb = Workbench(
        config, elicitation_handler=with_defaults, authorization_handler=follow, connect_timeout=90, timeout=90
    )
    target = f"{TOOLBOX}/{SERVER}"
    try:
        said(f"opening {url} ({scenario} at {version})")
        wb.open(TOOLBOX)
        said("opened")
        status = wb.status()[TOOLBOX][SERVER]
        if not status.connected:
            raise WorkbenchError(f"{target} did not connect: {status.error}")
        named = context.get("toolCalls")
        tools = wb.tools(target)
        if scenario == "json-schema-2020-12-preservation":
            # The scenario's echo tool takes another tool's inputSchema back: what the workbench
            # kept of it (a user's `wb.tool(...).input_schema`), verbatim.
            echo = next(t for t in tools if "schema" in (t.input_schema.get("properties") or {}))
            for tool in tools:
                if tool is not echo:
                    call(wb, echo, {"schema": tool.input_schema})
        elif named:
            for named_call in named:
                call(wb, f"{target}/{named_call['name']}", named_call.get("arguments") or {})
        else:
            for tool in tools:
                call(wb, tool, arguments_for(tool.input_schema))
        for resource in wb.resources(target):
            wb.read_resource(target, resource.uri)
        for prompt in wb.prompts(target):
            wb.get_prompt(f"{target}/{prompt.name}")
        if scenario.startswith("sep-2640"):
            skills = wb.skills(target)
            said(f"skills listed: {[s.name for s in skills]}")
            if scenario != "sep-2640-client-no-prefetch":  # there: listed, never loaded
                for skill in skills:
                    wb.skill(target, skill.name)
        said("done")
    finally:
        wb.close_all()
        said("closed")


def main() -> int:
    url, scenario = sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    os.environ.setdefault("WORKBENCH_TOKEN_DIR", tempfile.mkdtemp(prefix="wb-conformance-tokens-"))
    try:
        run(url, scenario, version, context)
    except WorkbenchError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
