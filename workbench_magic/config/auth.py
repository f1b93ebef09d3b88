"""A remote server's ``"auth"`` setting: a static bearer token, or OAuth and its options.

``"auth": {"bearer": "${TOKEN}"}``, ``"auth": "oauth"``, or ``"auth": {"oauth": {"client_id",
"client_secret", "scopes", "redirect_port", "paste"}}``. What is done with it (the header, the
OAuth flow, the token files) is the engine's (`workbench_magic.engine.auth`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench_magic.config.messages import BrokenRule

__all__ = ["AuthConfig", "OAuthOptions", "parse_auth"]

_AUTH_FIX = 'Fix: write "auth": "oauth", "auth": {"oauth": {"client_id": "..."}} or "auth": {"bearer": "${TOKEN}"}'
_OAUTH_KEYS = ("client_id", "client_secret", "scopes", "redirect_port", "paste")


@dataclass(frozen=True)
class OAuthOptions:
    """The options of `"auth": {"oauth": {...}}`.

    A pre-registered client (else dynamic registration), the scopes to ask for, a fixed loopback
    port for the redirect, and whether the person pastes the redirect.
    """

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    redirect_port: int | None = None
    paste: bool = False


@dataclass(frozen=True)
class AuthConfig:
    """A server's `auth`: exactly one of `bearer` and `oauth`."""

    bearer: str | None = field(default=None, repr=False)
    oauth: OAuthOptions | None = None

    def __repr__(self) -> str:
        return "AuthConfig(bearer=***)" if self.bearer is not None else f"AuthConfig(oauth={self.oauth!r})"

    @property
    def secrets(self) -> frozenset[str]:
        """Values to mask in output (the bearer token, the client secret)."""
        values = {self.bearer, self.oauth.client_secret if self.oauth else None}
        return frozenset(v for v in values if v)

    def to_json(self) -> Any:
        """The config spelling back (for the config view; secrets are masked by whoever shows it)."""
        if self.bearer is not None:
            return {"bearer": self.bearer}
        assert self.oauth is not None
        options = {k: getattr(self.oauth, k) for k in _OAUTH_KEYS if getattr(self.oauth, k) not in (None, (), False)}
        if "scopes" in options:
            options["scopes"] = list(options["scopes"])
        return {"oauth": options} if options else "oauth"


def parse_auth(value: Any) -> AuthConfig | None:
    """An `auth` config value as an `AuthConfig` (None when absent).

    Raises:
        BrokenRule: the value is not one of the accepted shapes.
    """
    if value is None or isinstance(value, AuthConfig):
        return value
    if value == "oauth":
        return AuthConfig(oauth=OAuthOptions())
    if not isinstance(value, Mapping) or len(value) != 1 or next(iter(value)) not in ("bearer", "oauth"):
        raise BrokenRule(f"unknown auth {value!r}", _AUTH_FIX)
    kind, options = next(iter(value.items()))
    if kind == "bearer":
        if not isinstance(options, str) or not options.strip():
            raise BrokenRule("'bearer' must be a non-empty string", 'Fix: write "bearer": "${TOKEN}"')
        return AuthConfig(bearer=options.strip())
    if options in (None, True):
        options = {}
    if not isinstance(options, Mapping):
        raise BrokenRule("'oauth' must be an object", 'Fix: write "oauth": {"client_id": "...", "scopes": [...]}')
    unknown = sorted(set(options) - set(_OAUTH_KEYS))
    if unknown:
        raise BrokenRule(f"unknown oauth key {unknown[0]!r}", f"Fix: use only {', '.join(_OAUTH_KEYS)}")
    scopes = options.get("scopes") or []
    if isinstance(scopes, str):
        scopes = scopes.split()
    if not isinstance(scopes, list | tuple) or not all(isinstance(s, str) for s in scopes):
        raise BrokenRule("'scopes' must be a list of strings", 'Fix: write "scopes": ["read", "write"]')
    port = options.get("redirect_port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise BrokenRule("'redirect_port' must be a port number", 'Fix: write "redirect_port": 33418')
    for key in ("client_id", "client_secret"):
        if options.get(key) is not None and not isinstance(options[key], str):
            raise BrokenRule(f"'{key}' must be a string", f'Fix: write "{key}": "..."')
    return AuthConfig(
        oauth=OAuthOptions(
            client_id=options.get("client_id") or None,
            client_secret=options.get("client_secret") or None,
            scopes=tuple(scopes),
            redirect_port=port,
            paste=bool(options.get("paste", False)),
        )
    )
