"""The JSON Schema of ``workbench-config.json``, generated from the config models.

`config_schema` starts from pydantic's schema of `WorkbenchConfig` (the fields, their JSON spellings,
descriptions and types) and describes the file as people write it, which is what the loader
(`workbench_magic.config.parser`) reads before the models check it:

- the before-validators accept more than the field types say: ``null`` for most keys, numbers and
  booleans in ``env`` and ``headers``, numeric strings for seconds, any spelling and case of a
  transport; the schema accepts what they accept;
- ``${VAR}`` and ``${VAR:-default}`` expand in every string of a server and of a toolbox before
  the check, so there a ``${VAR}`` string passes wherever a constrained string is asked for;
- keys starting with ``_`` are comments where the loader drops them (the top level, toolboxes,
  servers and their name maps); other unknown keys are errors; the top-level ``"$schema"`` is
  allowed, and so is the Claude Desktop / VS Code form (a top-level ``mcpServers``);
- names follow the loader's rule; a server has one of ``command``, ``url`` and ``python``, and the
  keys that go with it.

A schema that rejected a config the loader accepts would be a bug; the converse is allowed where a
schema cannot tell (what a ``${VAR}`` expands to, a cassette path, duplicate keys).

`SCHEMA_FILE` is the generated schema shipped in the package; ``workbench-magic config-schema``
prints it. Regenerate it with
``python -m workbench_magic config-schema > workbench_magic/config/workbench-config.schema.json``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from workbench_magic.config.auth import GRANTS, SIGNING_ALGORITHMS, TOKEN_ENDPOINT_AUTH_METHODS, OAuthOptions
from workbench_magic.config.parser import SCHEMA_KEY
from workbench_magic.config.settings import (
    TRANSPORT_SPELLINGS,
    ServerConfig,
    ToolboxConfig,
    Transport,
    WorkbenchConfig,
)

__all__ = ["SCHEMA_FILE", "SCHEMA_ID", "config_schema", "schema_text"]

#: The schema's ``$id``: a name, not a location (the schema is shipped in the package).
SCHEMA_ID = "urn:workbench-magic:workbench-config.schema.json"
#: The generated schema as shipped (equal to `schema_text`; a test checks it).
SCHEMA_FILE = Path(__file__).with_name("workbench-config.schema.json")

_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_DEFS = "#/$defs/"
# `${VAR}` or `${VAR:-default}` somewhere in a string (parser._VAR_RE, with a valid name).
_VARIABLE = r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^{}]*)?\}"
# A name (models._NAME_RE: no `__`, not ending in `_`), or a comment key (starting with `_`).
_NAME = r"^_|^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$"
# What `float()` reads as a positive number (models._seconds): digits with single `_` between them,
# a fraction, an exponent, spaces around; a digit other than 0 before the exponent.
_DIGITS = r"\d(?:_?\d)*"
_SECONDS_TEXT = rf"^\s*\+?(?=[^eE]*(?!0)\d)(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?\s*$"
_NOT_BLANK = r"\S"  # models._check_text: not empty once stripped
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_IDENTIFIER}(?:\.{_IDENTIFIER})*"
_PYTHON = rf"^\s*{_DOTTED}:{_DOTTED}\s*$"  # models._PYTHON_RE, on the stripped text
_URL = r"^[hH][tT][tT][pP][sS]?://"
# `patternErrorMessage` (below) is VS Code's message when a pattern fails; validators ignore it.

_NULL: dict[str, Any] = {"type": "null"}
_EMPTY_ARRAY: dict[str, Any] = {"anyOf": [_NULL, {"type": "array", "maxItems": 0}]}
_EMPTY_OBJECT: dict[str, Any] = {"anyOf": [_NULL, {"type": "object", "maxProperties": 0}]}
_ONE_KIND = "a server has one of command, url and python"
_COMMENT: dict[str, Any] = {"description": "A comment: ignored."}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _DEFS + name}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null (a before-validator reads null as the default)."""
    options = schema["anyOf"] if list(schema) == ["anyOf"] else [schema]
    return {"anyOf": [*options, _NULL]} if _NULL not in options else schema


def _text(pattern: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, **more}


def _case_free(word: str) -> str:
    """A regex matching ``word`` in any case (JSON Schema patterns have no flags)."""
    assert re.fullmatch(r"[A-Za-z_-]+", word), word  # nothing to escape (JavaScript's `u` flag rejects `\-`)
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)


def _transport(*values: Transport) -> dict[str, Any]:
    """A transport value that `normalize_transport` maps to one of ``values`` (every spelling, any case,
    spaces around), or null; the canonical names first, for completion."""
    spellings = "|".join(_case_free(s) for value in values for s in TRANSPORT_SPELLINGS[value])
    return {"anyOf": [{"enum": list(values)}, _text(rf"^\s*(?:{spellings})\s*$"), _NULL]}


def _seconds() -> dict[str, Any]:
    """models._seconds: a positive number, a string `float()` reads as one, or null."""
    text = _text(_SECONDS_TEXT, patternErrorMessage="must be a positive number of seconds")
    return {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, text, _NULL]}


def _names(value: dict[str, Any], description: str = "") -> dict[str, Any]:
    """A map of toolboxes or servers by name (models._names); keys starting with ``_`` are comments."""
    return {
        "type": "object",
        "propertyNames": _ref("name"),
        "patternProperties": {"^_": _COMMENT},
        "additionalProperties": value,
        **({"description": description} if description else {}),
    }


def _strings_map() -> dict[str, Any]:
    """``env`` / ``headers`` (models._check_map): names without ``=``, values strings, numbers or booleans."""
    return _nullable(
        {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": r"^[^=\u0000]*$"},
            "additionalProperties": {"type": ["string", "number", "boolean"]},
        }
    )


def _is_constrained_text(schema: dict[str, Any]) -> bool:
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return any(isinstance(v, str) for v in values)
    return schema.get("type") == "string" and any(key in schema for key in ("pattern", "minLength", "format"))


def _expandable(schema: Any) -> Any:
    """``schema`` for a value whose strings are ``${VAR}``-expanded before the check: a string with a
    ``${VAR}`` passes wherever a constrained string is asked for. Property names are not expanded."""
    if not isinstance(schema, dict):
        return schema
    if _is_constrained_text(schema):
        return {"anyOf": [schema, _ref("variable")]}
    result = dict(schema)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in result:
            options: list[Any] = []
            for option in map(_expandable, result[key]):
                split = key == "anyOf" and isinstance(option, dict) and list(option) == ["anyOf"]
                options += [o for o in option["anyOf"] if o not in options] if split else [option]
            result[key] = options
    for key in ("items", "additionalProperties", "then", "else"):
        if key in result:
            result[key] = _expandable(result[key])
    if "properties" in result:
        result["properties"] = {name: _expandable(value) for name, value in result["properties"].items()}
    return result


def _value(field: dict[str, Any]) -> dict[str, Any]:
    """The value part of pydantic's schema of a field (no description, no default)."""
    return {key: value for key, value in field.items() if key not in ("description", "default")}


def _untitled(schema: Any) -> Any:
    """pydantic's schema without its ``title`` keywords (made up from the Python names)."""
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: _untitled(value) for key, value in schema.items() if not (key == "title" and isinstance(value, str))}


def _object(generated: dict[str, Any], values: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A model's object schema: pydantic's properties (description, default) with the value schemas
    in ``values`` taking the place of pydantic's; keys starting with ``_`` are comments. The keys
    every config model has (`start`, `idleTimeout`) come last."""
    properties: dict[str, Any] = {}
    shared = ("start", "idleTimeout")
    names = [*(name for name in generated["properties"] if name not in shared), *shared]
    for name in names:
        field = generated["properties"][name]
        schema = dict(values.get(name, field))
        schema.pop("default", None)
        if "description" in field:
            schema["description"] = field["description"]
        if field.get("default") not in (None, "", [], {}):
            schema["default"] = field["default"]
        properties[name] = schema
    return {
        "type": "object",
        "description": generated["description"],
        "properties": properties,
        "patternProperties": {"^_": _COMMENT},
        "additionalProperties": False,
    }


def _server(generated: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, dict[str, Any]] = {
        "command": _nullable(_text(_NOT_BLANK)),
        "args": _nullable({"type": "array", "items": {"type": "string"}}),
        "env": _strings_map(),
        "cwd": _nullable(_text(_NOT_BLANK)),
        "url": _nullable(_text(_URL, patternErrorMessage="must start with http:// or https://")),
        "headers": _strings_map(),
        "python": _nullable(_text(_PYTHON, patternErrorMessage='write "package.module:attribute"')),
        "transport": _transport(*TRANSPORT_SPELLINGS),
        "timeout": _seconds(),
        "auth": _ref("auth"),
        "protocol": _nullable(_value(generated["properties"]["protocol"])),
        "idleTimeout": _seconds(),
    }
    server = _object(generated, values)
    properties = server["properties"]
    properties["transport"].pop("default", None)  # inferred when absent
    server["properties"] = {}
    for name, schema in properties.items():
        server["properties"][name] = schema
        if name == "transport":
            server["properties"]["type"] = {**values["transport"], "description": "The VS Code spelling of transport."}
    given = {key: {"required": [key], "properties": {key: {"type": "string"}}} for key in ("command", "url", "python")}
    only = {"type": "null", "description": _ONE_KIND}

    def kind(key: str, transports: tuple[Transport, ...], *, others: dict[str, Any]) -> dict[str, Any]:
        spelled = _transport(*transports)
        return {"if": given[key], "then": {"properties": {**others, "transport": spelled, "type": spelled}}}

    server["anyOf"] = list(given.values())
    server["allOf"] = [
        kind("command", ("stdio",), others={"url": only, "python": only, "headers": _EMPTY_OBJECT, "auth": _NULL}),
        kind(
            "url",
            ("http", "sse"),
            others={"command": only, "python": only, "args": _EMPTY_ARRAY, "env": _EMPTY_OBJECT, "cwd": _NULL},
        ),
        kind(
            "python",
            ("python",),
            others={
                "command": only,
                "url": only,
                "args": _EMPTY_ARRAY,
                "env": _EMPTY_OBJECT,
                "cwd": _NULL,
                "headers": _EMPTY_OBJECT,
                "auth": _NULL,
            },
        ),
    ]
    return _expandable(server)


def _auth() -> dict[str, Any]:
    """auth.parse_auth: ``"oauth"``, ``{"bearer": ...}``, ``{"oauth": null | true | {...}}``, or null.
    The values are ``${VAR}``-expanded (they are a server's)."""
    return _expandable(
        {
            "description": 'HTTP and SSE servers: {"bearer": "${TOKEN}"}, "oauth", or {"oauth": {...}} with options.',
            "anyOf": [
                {"const": "oauth", "description": "OAuth with dynamic client registration, PKCE and refresh."},
                {
                    "type": "object",
                    "properties": {"bearer": _text(_NOT_BLANK, description="Sent as Authorization: Bearer <token>.")},
                    "required": ["bearer"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"oauth": {"anyOf": [_ref("oauth"), {"enum": [None, True, 1]}]}},
                    "required": ["oauth"],
                    "additionalProperties": False,
                },
                _NULL,
            ],
        }
    )


_OAUTH_DESCRIPTIONS = {
    "client_id": "A pre-registered client (else dynamic client registration).",
    "client_secret": "The pre-registered client's secret.",
    "scopes": "Scopes asked for, besides those the server challenges (a list, or one space-separated string).",
    "redirect_port": "The loopback port the browser is redirected to (default: the registered one, or a free one).",
    "paste": "Paste the URL the browser was sent to, instead of catching the redirect (a kernel on another machine).",
    "grant": 'Who signs in: "authorization_code" (a person in the browser, the default), "client_credentials" (the '
    'client itself, with a secret or a private key), "workload_identity" (a workload, with its platform\'s JWT) or '
    '"enterprise_managed" (an ID token exchanged at the enterprise identity provider).',
    "token_endpoint_auth_method": "How the client authenticates at the token endpoint (default: the first the "
    "authorization server supports of client_secret_basic, client_secret_post, none).",
    "client_metadata_url": "An https URL of the client's metadata document, used as its client_id where the "
    "authorization server supports client ID metadata documents (else dynamic registration).",
    "issuer": "The issuer of the authorization server the client is registered with (default: the one named).",
    "private_key": "A PEM private key, or the path of a file holding one, signing private_key_jwt assertions.",
    "signing_algorithm": "The JWS algorithm of private_key_jwt assertions.",
    "workload_token": "The workload's JWT, or the path of a file its platform keeps fresh (workload_identity).",
    "identity_provider": "Where the ID token is exchanged for an identity assertion (enterprise_managed).",
    "dpop": "Bind tokens to a key of this process with DPoP proofs (RFC 9449).",
}


def _oauth() -> dict[str, Any]:
    """The options of ``{"oauth": {...}}`` (`OAuthOptions`; no comments: every key is checked)."""
    generated = _untitled(TypeAdapter(OAuthOptions).json_schema()["properties"])
    values: dict[str, dict[str, Any]] = {
        # `options.get("scopes") or []`: any false value means none
        "scopes": {
            "anyOf": [
                _value(generated["scopes"]),
                {"type": "string"},
                {"enum": [None, False, 0]},
                {"type": "object", "maxProperties": 0},
            ]
        },
        "redirect_port": _nullable({"type": "integer", "minimum": 1, "maximum": 65535}),
        "paste": {"default": False},  # read as `bool(...)`: any value
        "dpop": {"default": False},
        "grant": _nullable({"enum": list(GRANTS), "default": "authorization_code"}),
        "token_endpoint_auth_method": _nullable({"enum": list(TOKEN_ENDPOINT_AUTH_METHODS)}),
        "signing_algorithm": _nullable({"enum": list(SIGNING_ALGORITHMS), "default": "RS256"}),
        "client_metadata_url": _nullable({"type": "string", "pattern": "^https://"}),
        "identity_provider": _nullable(
            {
                "type": "object",
                "properties": {
                    "token_endpoint": {"type": "string", "description": "The identity provider's token endpoint."},
                    "id_token": {"type": "string", "description": "The ID token, or the path of a file holding it."},
                    "client_id": _nullable({"type": "string", "description": "The client at the identity provider."}),
                    "client_secret": _nullable({"type": "string", "description": "That client's secret."}),
                },
                "required": ["token_endpoint", "id_token"],
                "additionalProperties": False,
            }
        ),
    }
    properties = {}
    for field in dataclasses.fields(OAuthOptions):
        schema = dict(values.get(field.name, generated[field.name]))
        if schema.get("default") is None:
            schema.pop("default", None)
        properties[field.name] = {**schema, "description": _OAUTH_DESCRIPTIONS[field.name]}
    return _expandable(
        {"type": "object", "description": "OAuth options.", "properties": properties, "additionalProperties": False}
    )


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``workbench-config.json``, generated from the config models."""
    generated = _untitled(WorkbenchConfig.model_json_schema(by_alias=True))
    defs = generated["$defs"]
    # A toolbox's own strings are `${VAR}`-expanded, as a server's are.
    toolbox = _object(
        defs[ToolboxConfig.__name__],
        {"description": {"type": ["string", "null"]}, "mcpServers": _names(_ref("server")), "idleTimeout": _seconds()},
    )
    toolbox["properties"] = {
        name: value if name == "mcpServers" else _expandable(value) for name, value in toolbox["properties"].items()
    }
    # its servers, or where they come from (another client's config, a registry entry): one of the two
    toolbox["oneOf"] = [{"required": ["mcpServers"]}, {"required": ["import"]}]
    top_servers = _names(
        _ref("server"),
        'Claude Desktop / VS Code style: the servers of one toolbox named "default", by name (instead of toolboxes).',
    )
    toolboxes = _names(_ref("toolbox"), generated["properties"]["toolboxes"]["description"])
    return {
        "$schema": _DRAFT,
        "$id": SCHEMA_ID,
        "title": "workbench-config.json",
        "description": generated["description"],
        "type": "object",
        "properties": {
            SCHEMA_KEY: {"type": "string", "description": "The JSON Schema of this file (for editors); ignored."},
            "toolboxes": toolboxes,
            "mcpServers": top_servers,
        },
        "patternProperties": {"^_": _COMMENT},
        "additionalProperties": False,
        "oneOf": [{"required": ["toolboxes"]}, {"required": ["mcpServers"]}],
        "$defs": {
            "toolbox": toolbox,
            "server": _server(defs[ServerConfig.__name__]),
            "auth": _auth(),
            "oauth": _oauth(),
            "name": {
                "type": "string",
                "pattern": _NAME,
                "description": "Letters, digits, - and _, no __, not ending in _ (a key starting with _ is a comment).",
                "patternErrorMessage": "use only letters, digits, '-' and '_' (no '__', not ending in '_')",
            },
            "variable": _text(
                _VARIABLE,
                description="A string with ${VAR} or ${VAR:-default}: expanded from the environment, then checked.",
            ),
        },
    }


def schema_text() -> str:
    """`config_schema` as the shipped file holds it (JSON, indent 2, a final newline)."""
    return json.dumps(config_schema(), indent=2) + "\n"
