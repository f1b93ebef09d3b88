"""What servers offer beyond tools, for `Workbench`: resources, prompts, completions, watches, skills.

`ServerFeatures` is a collaborator the workbench holds (`wb.resources(...)` delegates to it): its
methods run on the workbench loop against the workbench's core, with its current settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from workbench_magic.api.asking import waiting_channel
from workbench_magic.api.targets import names_one, parse_identifier, parse_target, server_target
from workbench_magic.engine import server_features, skills
from workbench_magic.engine.boundary import contained
from workbench_magic.engine.runtime import Channel, LoopChannel
from workbench_magic.vocabulary.errors import NotFoundError, UsageError
from workbench_magic.vocabulary.listings import PromptInfo, ResourceInfo
from workbench_magic.vocabulary.results import PromptResult, ResourceResult
from workbench_magic.vocabulary.skills import Skill, SkillList

if TYPE_CHECKING:
    from workbench_magic.config.settings import WorkbenchConfig
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import LoopThread


def _caller_loop_channel() -> Channel | None:
    """The caller's event loop as a channel (a kernel's), if one runs in this thread."""
    try:
        return LoopChannel(asyncio.get_running_loop())
    except RuntimeError:
        return None


# identifiers loads pydantic (~0.15 s): imported on first use, so `%load_ext` stays fast.
def skill_target(target: str, name: str | None) -> tuple[str, str, str]:
    """`(toolbox, server, name)` of `skill("t/s", "name")` or `skill("t/s/name")`, or NotFoundError
    (UsageError: the skill is not text)."""
    if not isinstance(target, str) or not isinstance(name, str | None):
        shown = target if name is None or not isinstance(target, str) else name
        raise UsageError(
            f"wb.skill takes the skill as text, 'toolbox/server/name' or ('toolbox/server', name), not {shown!r}"
        )
    if name is None:
        parts = target.split("/", 2) if isinstance(target, str) else []
        if len(parts) != 3 or not all(parts):
            raise NotFoundError(f"Name the skill: toolbox/server/name, or ('toolbox/server', name), not {target!r}")
        return parts[0], parts[1], parts[2]
    toolbox, server = server_target(target)
    return toolbox, server, name


class ServerFeatures:
    """Resources, prompts, completions and watches of a workbench's servers.

    `settings()` is the workbench's current config, `timeout()` its default seconds per request.
    """

    def __init__(
        self,
        core: Core,
        loop: LoopThread,
        *,
        settings: Callable[[], WorkbenchConfig],
        timeout: Callable[[], float],
    ) -> None:
        self._core = core
        self._loop = loop
        self._settings = settings
        self._timeout = timeout

    # ---- resources, prompts, completions --------------------------------------------
    def resources(self, target: str | None = None) -> list[ResourceInfo]:
        """Resources and resource templates (every page) of open toolboxes, a toolbox, or a server.

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            One `ResourceInfo` per resource and per template (`.template` tells them apart).
        """
        return self._loop.run(contained(self._resources(target)))  # type: ignore[no-any-return]

    async def aresources(self, target: str | None = None) -> list[ResourceInfo]:
        """`resources` for `await` (from the kernel's loop, or the workbench's own: `serve`)."""
        return await self._loop.arun(contained(self._resources(target)))

    async def _resources(self, target: str | None) -> list[ResourceInfo]:
        toolbox, server = parse_target(target)
        return await server_features.list_resources(await self._core.connections(toolbox, server, self._settings()))

    def read_resource(self, target: str, uri: str, *, timeout: float | None = None, **variables: Any) -> ResourceResult:
        """Read a resource from `toolbox/server`; a template URI is expanded with `variables`.

        Args:
            target: the server, `toolbox/server` (its toolbox is opened if needed).
            uri: the resource's URI, or a resource template's.
            timeout: seconds the read may take (None: the workbench's `timeout`).
            **variables: the values of a template's variables.

        Returns:
            What the server sent: `.text`, `.contents`, `.data` (the text parsed as JSON), `.raw`.

        Raises:
            NotFoundError: `target` does not name a server.
            RequestError: the server failed the read (`CallTimeoutError` past `timeout`).

        Example:
            ```python
            wb.read_resource("demo/datasets", "dataset://index").data
            wb.read_resource("demo/datasets", "dataset://{name}", name="penguins").text
            ```
        """
        return self._loop.run(contained(self._read_resource(target, uri, timeout, variables)))  # type: ignore[no-any-return]

    async def aread_resource(
        self,
        target: str,
        uri: str,
        *,
        timeout: float | None = None,
        channel: Channel | None = None,
        **variables: Any,
    ) -> ResourceResult:
        """`read_resource` for `await` (from the kernel's loop, or the workbench's own: `serve`).

        Args:
            target: the server, `toolbox/server` (its toolbox is opened if needed).
            uri: the resource's URI, or a resource template's.
            timeout: seconds the read may take (None: the workbench's `timeout`).
            channel: where the server's questions during the read go (serve: the client it serves).
            **variables: the values of a template's variables.

        Returns:
            What the server sent, as `read_resource` returns it.
        """
        return await self._loop.arun(contained(self._read_resource(target, uri, timeout, variables)), channel)

    async def _read_resource(
        self, target: str, uri: str, timeout: float | None, variables: Mapping[str, Any]
    ) -> ResourceResult:
        toolbox, server = server_target(target)
        expanded = server_features.expand(uri, variables)
        limit = timeout if timeout is not None else self._timeout()
        conn = await self._core.connection_opening(toolbox, server, self._settings())
        return await server_features.read(conn, expanded, limit)

    def prompts(self, target: str | None = None) -> list[PromptInfo]:
        """Prompts of open toolboxes, a toolbox, or a server.

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            One `PromptInfo` per prompt, with its arguments.
        """
        return self._loop.run(contained(self._prompts(target)))  # type: ignore[no-any-return]

    async def aprompts(self, target: str | None = None) -> list[PromptInfo]:
        """`prompts` for `await` (from the kernel's loop, or the workbench's own: `serve`)."""
        return await self._loop.arun(contained(self._prompts(target)))

    async def _prompts(self, target: str | None) -> list[PromptInfo]:
        toolbox, server = parse_target(target)
        return await server_features.list_prompts(await self._core.connections(toolbox, server, self._settings()))

    def get_prompt(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> PromptResult:
        """Render a prompt: `get_prompt("dev/server/prompt_name", {"arg": "value"})`.

        Args:
            identifier: the prompt, named like a tool (`toolbox/server/prompt`).
            arguments: the prompt's arguments; values that are not strings are sent as `str(value)`.

        Returns:
            The rendered prompt: `.messages` as (role, text) pairs, `.text`, `.raw`.

        Raises:
            InvalidIdentifierError: `identifier` cannot be parsed.
            RequestError: the server failed the request.
        """
        return self._loop.run(contained(self._get_prompt(identifier, arguments)), waiting_channel())  # type: ignore[no-any-return]

    async def aget_prompt(
        self, identifier: Any, arguments: Mapping[str, Any] | None = None, *, channel: Channel | None = None
    ) -> PromptResult:
        """`get_prompt` for `await` (from the kernel's loop, or the workbench's own: `serve`);
        `channel`: where the server's questions meanwhile go (serve: the client it serves)."""
        return await self._loop.arun(contained(self._get_prompt(identifier, arguments)), channel)

    async def _get_prompt(self, identifier: Any, arguments: Mapping[str, Any] | None) -> PromptResult:
        ident = parse_identifier(identifier)
        args = {k: v if isinstance(v, str) else str(v) for k, v in (arguments or {}).items()}
        conn = await self._core.connection_opening(ident.toolbox, ident.server, self._settings())
        raw = await conn.get_prompt(ident.name, args or None, self._timeout())
        return PromptResult(identifier=ident, raw=raw)

    def complete(
        self, target: str, ref: str, argument: str, value: str = "", context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completions for a prompt argument (`ref="prompt:NAME"`) or a template variable (`ref=URI`).

        Args:
            target: the server, `toolbox/server`.
            ref: `"prompt:NAME"` for a prompt's argument, or a resource template's URI.
            argument: the argument's or the template variable's name.
            value: what has been typed so far.
            context: the values of the other arguments already chosen.

        Returns:
            The values the server offers; `[]` when it offers none, or takes longer than half a second.
        """
        return self._loop.run(contained(self._complete(target, ref, argument, value, context)))  # type: ignore[no-any-return]

    async def acomplete(
        self, target: str, ref: str, argument: str, value: str = "", context: Mapping[str, str] | None = None
    ) -> list[str]:
        """`complete` for `await` (from the kernel's loop, or the workbench's own: `serve`)."""
        return await self._loop.arun(contained(self._complete(target, ref, argument, value, context)))

    async def _complete(
        self, target: str, ref: str, argument: str, value: str, context: Mapping[str, str] | None
    ) -> list[str]:
        toolbox, server = server_target(target)
        conn = await self._core.connection_opening(toolbox, server, self._settings())
        return await server_features.complete(conn, ref, argument, value, context)

    def watch(
        self, target: str, uri: str, callback: Callable[[ResourceResult], Any] | None = None
    ) -> server_features.ResourceWatch:
        """Subscribe to a resource: a live handle with `.value`, `.updates`, `.close()`.

        `callback(value)` runs on each update (in a kernel, on its event loop; else in a worker thread).

        Args:
            target: the server, `toolbox/server`.
            uri: the resource's URI.
            callback: called with each new `ResourceResult`.

        Returns:
            The watch: `.value` (the latest read), `.updates` (how many updates arrived), `.close()`.

        Example:
            ```python
            watch = wb.watch("demo/notes", "notes://count", lambda value: print(value.text))
            watch.close()
            ```
        """
        return self._loop.run(contained(self._watch(target, uri, callback, _caller_loop_channel())))  # type: ignore[no-any-return]

    async def awatch(
        self, target: str, uri: str, callback: Callable[[ResourceResult], Any] | None = None
    ) -> server_features.ResourceWatch:
        """`watch` for `await` (from the kernel's loop, or the workbench's own: `serve`); `callback`
        runs on the caller's loop. `await watch.aclose()` ends it there."""
        channel = _caller_loop_channel()
        return await self._loop.arun(contained(self._watch(target, uri, callback, channel)))  # type: ignore[no-any-return]

    async def _watch(
        self, target: str, uri: str, callback: Callable[[ResourceResult], Any] | None, channel: Channel | None
    ) -> server_features.ResourceWatch:
        toolbox, server = server_target(target)
        conn = await self._core.connection_opening(toolbox, server, self._settings())
        watch = server_features.ResourceWatch(self._loop, conn, uri, callback, channel, self._timeout())
        return await watch.start()

    # ---- skills ---------------------------------------------------------------------------
    def skills(self, target: str | None = None) -> SkillList:
        """Skills (SEP-2640) of open toolboxes, a toolbox, or a server: name, description, URI, files.

        A server that negotiates the Skills extension lists them with `skills/list`, each file with its
        size and digest; one that does not but serves `skill://` resources has them found among its
        resources (`source="resources"`, no digests). Each server's listing is kept: `skill` checks
        the files it reads against it. `.notes` says why a server lists none.

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            One `SkillInfo` per skill (a list), with `.notes`: one line per server without skills.

        Raises:
            NotFoundError: `target` names no configured toolbox or server.
            RequestError: the named server failed the listing (with no server named, the failure of
                one server is a line of `.notes`).

        Example:
            ```python
            wb.skills("dev")  # dev/docs/csv-cleaning: Clean a messy CSV file ... (3 files)
            [f.name for f in wb.skills("dev/docs")[0].files]
            ```
        """
        return self._loop.run(contained(self._skills(target)))  # type: ignore[no-any-return]

    async def askills(self, target: str | None = None) -> SkillList:
        """`skills` for `await` (from the kernel's loop, or the workbench's own: `serve`).

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            The skills, as `skills` returns them.
        """
        return await self._loop.arun(contained(self._skills(target)))

    def skill(self, target: str, name: str | None = None, *, timeout: float | None = None) -> Skill:
        """Read a skill whole: its instructions (`SKILL.md`) and its files, each checked against its digest.

        The digests are those of the server's latest listing (`skills`); a skill never listed is listed
        first. A skill found among `skill://` resources has no digests: its files are read as they are.

        Args:
            target: the server, `toolbox/server`; or the skill, `toolbox/server/name` (then no `name`).
            name: the skill's name.
            timeout: seconds each file's read may take (None: the workbench's `timeout`).

        Returns:
            The skill: `.instructions` (the `SKILL.md` text), `.files` (path -> text, or bytes for a
            binary file), `.info` (its `SkillInfo`).

        Raises:
            NotFoundError: the server lists no skill `name`.
            SkillDigestError: a file does not match its listed digest (it changed since the listing; list
                the skills again); `.file` names it.
            RequestError: the server failed a read.

        Example:
            ```python
            skill = wb.skill("dev/docs", "csv-cleaning")
            print(skill.instructions)
            skill.files["references/guide.md"]
            ```
        """
        return self._loop.run(contained(self._skill(target, name, timeout)))  # type: ignore[no-any-return]

    async def askill(self, target: str, name: str | None = None, *, timeout: float | None = None) -> Skill:
        """`skill` for `await` (from the kernel's loop, or the workbench's own: `serve`).

        Args:
            target: the server, `toolbox/server`; or the skill, `toolbox/server/name` (then no `name`).
            name: the skill's name.
            timeout: seconds each file's read may take (None: the workbench's `timeout`).

        Returns:
            The skill, as `skill` returns it.
        """
        return await self._loop.arun(contained(self._skill(target, name, timeout)))

    def skills_named(self, names: str | Iterable[str] | None) -> tuple[Skill, ...]:
        """The skills `names` names (`"toolbox/server/name"`, or a list of them), each read whole.

        Each is read with `skill`: what `wb.chat(skills=...)` and `wb.toolset(skills=...)` give the model.
        """
        if names is None:
            return ()
        read: list[Skill] = []
        for name in [names] if isinstance(names, str) else list(names):
            parts = name.split("/", 2) if isinstance(name, str) else []
            if len(parts) != 3 or not all(parts):
                raise UsageError(f"Name each skill as toolbox/server/name, not {name!r}")
            read.append(self.skill(name))
        return tuple(read)

    async def _skills(self, target: str | None) -> SkillList:
        toolbox, server = parse_target(target)
        if isinstance(target, str) and names_one(target):  # a skill (or a tool), not a place
            raise UsageError(
                f"wb.skills takes a toolbox or toolbox/server, not {target!r}: wb.skill({target!r}) reads that skill"
            )
        conns = await self._core.connections(toolbox, server, self._settings())
        return await skills.list_skills(conns, one_server=server is not None)

    async def _skill(self, target: str, name: str | None, timeout: float | None) -> Skill:
        toolbox, server, skill_name = skill_target(target, name)
        conn = await self._core.connection_opening(toolbox, server, self._settings())
        return await skills.read_skill(conn, skill_name, timeout if timeout is not None else self._timeout())
