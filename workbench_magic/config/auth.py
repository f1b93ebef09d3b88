"""A remote server's ``"auth"`` setting: a static bearer token, or OAuth and its options.

``"auth": {"bearer": "${TOKEN}"}``, ``"auth": "oauth"``, or ``"auth": {"oauth": {...}}`` with the
options of `OAuthOptions`: who signs in (`grant`: a person in the browser, the client itself with a
secret or a private key, a workload's platform token, or an enterprise identity provider), how the
client is known (a pre-registered `client_id`, a `client_metadata_url`, else dynamic registration)
and how it authenticates at the token endpoint. What is done with it (the header, the OAuth flow,
the token files) is the engine's (`workbench_magic.engine.auth`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench_magic.config.messages import BrokenRule

__all__ = ["GRANTS", "TOKEN_ENDPOINT_AUTH_METHODS", "AuthConfig", "IdentityProvider", "OAuthOptions", "parse_auth"]

_AUTH_FIX = 'Fix: write "auth": "oauth", "auth": {"oauth": {"client_id": "..."}} or "auth": {"bearer": "${TOKEN}"}'
_OAUTH_KEYS = (
    "grant",
    "client_id",
    "client_secret",
    "scopes",
    "redirect_port",
    "paste",
    "token_endpoint_auth_method",
    "client_metadata_url",
    "issuer",
    "private_key",
    "signing_algorithm",
    "workload_token",
    "identity_provider",
    "dpop",
)
_IDP_KEYS = ("token_endpoint", "id_token", "client_id", "client_secret")
GRANTS = ("authorization_code", "client_credentials", "workload_identity", "enterprise_managed")
"""Who signs in: a person in the browser (the default); the client itself (a secret or a private
key); a workload, with the JWT its platform issued (RFC 7523 jwt-bearer); a person already signed
in at the enterprise's identity provider (its ID token exchanged there for an ID-JAG, RFC 8693,
then presented as a jwt-bearer grant, SEP-990)."""
TOKEN_ENDPOINT_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


@dataclass(frozen=True)
class IdentityProvider:
    """`"identity_provider"` of the `enterprise_managed` grant: where the person's ID token is
    exchanged for an identity assertion grant (ID-JAG), and as which client."""

    token_endpoint: str
    id_token: str = field(repr=False)
    """The person's ID token from the identity provider, or the path of a file holding it."""
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class OAuthOptions:
    """The options of `"auth": {"oauth": {...}}`.

    Who signs in (`grant`), a pre-registered client or a client ID metadata document (else dynamic
    registration), how the client authenticates at the token endpoint (else the first the
    authorization server supports of basic, post, none), the scopes to ask for, a fixed loopback
    port for the redirect, whether the person pastes the redirect, and DPoP-bound tokens.
    """

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    redirect_port: int | None = None
    paste: bool = False
    grant: str = "authorization_code"
    token_endpoint_auth_method: str | None = None
    client_metadata_url: str | None = None
    issuer: str | None = None
    private_key: str | None = field(default=None, repr=False)
    """A PEM private key (the text, or the path of a file holding it) signing `private_key_jwt`."""
    signing_algorithm: str = "RS256"
    workload_token: str | None = field(default=None, repr=False)
    """The workload's JWT (the text, or the path of a file its platform keeps fresh)."""
    identity_provider: IdentityProvider | None = None
    dpop: bool = False


@dataclass(frozen=True)
class AuthConfig:
    """A server's `auth`: exactly one of `bearer` and `oauth`."""

    bearer: str | None = field(default=None, repr=False)
    oauth: OAuthOptions | None = None

    def __repr__(self) -> str:
        return "AuthConfig(bearer=***)" if self.bearer is not None else f"AuthConfig(oauth={self.oauth!r})"

    @property
    def secrets(self) -> frozenset[str]:
        """Values to mask in output (the bearer token, the client secrets, keys and tokens given)."""
        values: set[str | None] = {self.bearer}
        if self.oauth is not None:
            idp = self.oauth.identity_provider
            values |= {self.oauth.client_secret, self.oauth.private_key, self.oauth.workload_token}
            values |= {idp.id_token, idp.client_secret} if idp is not None else set()
        return frozenset(v for v in values if v)

    def to_json(self) -> Any:
        """The config spelling back (for the config view; secrets are masked by whoever shows it)."""
        if self.bearer is not None:
            return {"bearer": self.bearer}
        assert self.oauth is not None
        defaults = OAuthOptions()
        options = {
            k: getattr(self.oauth, k)
            for k in _OAUTH_KEYS
            if getattr(self.oauth, k) not in (None, (), False) and getattr(self.oauth, k) != getattr(defaults, k)
        }
        if "scopes" in options:
            options["scopes"] = list(options["scopes"])
        if "identity_provider" in options:
            idp = options["identity_provider"]
            options["identity_provider"] = {k: getattr(idp, k) for k in _IDP_KEYS if getattr(idp, k) is not None}
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
    for key in ("client_id", "client_secret", "client_metadata_url", "issuer", "private_key", "workload_token"):
        if options.get(key) is not None and not isinstance(options[key], str):
            raise BrokenRule(f"'{key}' must be a string", f'Fix: write "{key}": "..."')
    grant = _one_of(options, "grant", GRANTS) or "authorization_code"
    method = _one_of(options, "token_endpoint_auth_method", TOKEN_ENDPOINT_AUTH_METHODS)
    algorithm = _one_of(options, "signing_algorithm", SIGNING_ALGORITHMS) or "RS256"
    cimd = options.get("client_metadata_url") or None
    if cimd is not None and not cimd.startswith("https://"):
        raise BrokenRule(
            "'client_metadata_url' must be an https:// URL",
            'Fix: write "client_metadata_url": "https://.../client.json"',
        )
    parsed = OAuthOptions(
        client_id=options.get("client_id") or None,
        client_secret=options.get("client_secret") or None,
        scopes=tuple(scopes),
        redirect_port=port,
        paste=bool(options.get("paste", False)),
        grant=grant,
        token_endpoint_auth_method=method,
        client_metadata_url=cimd,
        issuer=options.get("issuer") or None,
        private_key=options.get("private_key") or None,
        signing_algorithm=algorithm,
        workload_token=options.get("workload_token") or None,
        identity_provider=_identity_provider(options.get("identity_provider")),
        dpop=bool(options.get("dpop", False)),
    )
    _check_grant(parsed)
    return AuthConfig(oauth=parsed)


def _one_of(options: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str | None:
    value = options.get(key)
    if value is None:
        return None
    if value not in allowed:
        raise BrokenRule(f"unknown {key} {value!r}", f"Fix: use one of {', '.join(allowed)}")
    return str(value)


def _identity_provider(value: Any) -> IdentityProvider | None:
    if value is None:
        return None
    fix = 'Fix: write "identity_provider": {"token_endpoint": "https://idp/token", "id_token": "${ID_TOKEN}"}'
    if not isinstance(value, Mapping):
        raise BrokenRule("'identity_provider' must be an object", fix)
    unknown = sorted(set(value) - set(_IDP_KEYS))
    if unknown:
        raise BrokenRule(f"unknown identity_provider key {unknown[0]!r}", f"Fix: use only {', '.join(_IDP_KEYS)}")
    for key in _IDP_KEYS:
        if value.get(key) is not None and not isinstance(value[key], str):
            raise BrokenRule(f"'identity_provider.{key}' must be a string", fix)
    if not value.get("token_endpoint") or not value.get("id_token"):
        raise BrokenRule("'identity_provider' needs 'token_endpoint' and 'id_token'", fix)
    return IdentityProvider(
        token_endpoint=value["token_endpoint"],
        id_token=value["id_token"],
        client_id=value.get("client_id") or None,
        client_secret=value.get("client_secret") or None,
    )


def _check_grant(options: OAuthOptions) -> None:
    """What each grant needs, and what only some take."""
    grant, method = options.grant, options.token_endpoint_auth_method
    if options.private_key and method not in (None, "private_key_jwt"):
        raise BrokenRule(f"'private_key' signs private_key_jwt, not {method}", "Fix: leave out one of the two")
    if method == "private_key_jwt" and not options.private_key:
        raise BrokenRule("'private_key_jwt' needs a 'private_key'", 'Fix: write "private_key": "${PRIVATE_KEY}"')
    if method in ("client_secret_basic", "client_secret_post") and not options.client_secret:
        raise BrokenRule(f"'{method}' needs a 'client_secret'", 'Fix: write "client_secret": "${CLIENT_SECRET}"')
    if grant == "client_credentials":
        if not options.client_id or not (options.client_secret or options.private_key):
            raise BrokenRule(
                "the client_credentials grant needs 'client_id' and a 'client_secret' or a 'private_key'",
                'Fix: write "client_id": "...", "client_secret": "${CLIENT_SECRET}"',
            )
    elif options.private_key:
        raise BrokenRule(
            "'private_key' is for the client_credentials grant", 'Fix: write "grant": "client_credentials"'
        )
    if grant == "workload_identity" and not options.workload_token:
        raise BrokenRule(
            "the workload_identity grant needs a 'workload_token'", 'Fix: write "workload_token": "/var/run/token"'
        )
    if (grant == "workload_identity") != bool(options.workload_token):
        raise BrokenRule(
            "'workload_token' is for the workload_identity grant", 'Fix: write "grant": "workload_identity"'
        )
    if grant == "enterprise_managed":
        if not (options.client_id and options.client_secret and options.identity_provider):
            raise BrokenRule(
                "the enterprise_managed grant needs 'client_id', 'client_secret' and 'identity_provider'",
                'Fix: write "identity_provider": {"token_endpoint": "...", "id_token": "${ID_TOKEN}"}',
            )
    elif options.identity_provider is not None:
        raise BrokenRule(
            "'identity_provider' is for the enterprise_managed grant", 'Fix: write "grant": "enterprise_managed"'
        )
