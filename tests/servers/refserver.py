"""A server whose tool schemas point at a URL, for the tests that prove nothing is fetched
(tests/engine/test_schema.py): `make(url)` builds it, in-process (`Workbench.add_server`).

Tools: `lookup_user(user, profile=None)`: `user` is a local `$ref` into `$defs` (`User`, with
`id` matching `^[a-z0-9-]+$`), `profile` a `$ref` to `url`; its result's output schema has
`profile` as a `$ref` to `url` too; it answers `{"id": ..., "profile": ...}`.
`local_only(user)`: the same `User`, local `$ref`s only, answers the id.
"""

# No `from __future__ import annotations`: the tools' annotations name `remote`, a local of `make`.
from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import BaseModel, Field, WithJsonSchema


class User(BaseModel):
    id: str = Field(pattern=r"^[a-z0-9-]+$")


def make(url: str) -> MCPServer:
    """The server, its remote `$ref`s pointing at `url`."""
    remote = WithJsonSchema({"$ref": url})
    server = MCPServer("refs")

    class Found(BaseModel):
        id: str
        profile: Annotated[dict[str, Any] | None, remote]

    @server.tool()
    def lookup_user(user: User, profile: Annotated[dict[str, Any] | None, remote] = None) -> Found:
        """Look up a user (the profile's schema is behind a remote `$ref`)."""
        return Found(id=user.id, profile=profile)

    @server.tool()
    def local_only(user: User) -> str:
        """The user's id (local `$ref`s only)."""
        return user.id

    return server
