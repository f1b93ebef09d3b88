"""Skills (SEP-2640) of a connection: the listing and the reading of a skill whole.

A server that negotiates the Skills extension lists its skills with `skills/list`: each skill's
`SKILL.md` URI, its frontmatter and its files, each with a size and a SHA-256 digest. A server that
does not, but serves `skill://` resources, has its skills found among its resources: each folder
with a `SKILL.md` (no digests then). The files of either are read as resources.

The latest listing of each connection is kept (`_listings`): a skill is read with the digests,
sizes and frontmatter of the listing the person last saw, so a file changed since is a
`SkillDigestError`, not a silent surprise; a skill never listed is listed first. Its `SKILL.md` is
read first and its frontmatter compared with the listing's, field by field, before any other
file of the skill is read (SEP-2640: a skill that is not the one listed is not loaded).
Everything here runs on the loop thread.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import weakref
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from workbench_magic.engine.extensions import SKILLS_EXTENSION_ID, raw_request
from workbench_magic.engine.transports import all_pages
from workbench_magic.vocabulary.errors import (
    RequestError,
    WorkbenchError,
    skill_digest_mismatch,
    skill_mismatch,
    skill_not_found,
)
from workbench_magic.vocabulary.listings import AVAILABLE
from workbench_magic.vocabulary.skills import SKILL_FILE, Skill, SkillFile, SkillInfo, SkillList

if TYPE_CHECKING:
    from workbench_magic.engine.connection import Connection

logger = logging.getLogger("workbench_magic")

SKILL_SCHEME = "skill://"
METHOD_NOT_FOUND = -32601
"""JSON-RPC's "no such method": a server that declares the extension but not on this protocol era."""
MANIFEST = "_manifest"
"""FastMCP's file listing beside a skill's files (`skill://<name>/_manifest`): not a file of the skill."""

_listings: weakref.WeakKeyDictionary[Connection, dict[str, SkillInfo]] = weakref.WeakKeyDictionary()
"""The skills of each connection's latest listing, by name."""
_frontmatters: weakref.WeakKeyDictionary[Connection, dict[str, dict[str, Any]]] = weakref.WeakKeyDictionary()
"""The frontmatter each `skills/list` entry of that listing gave, by skill name (`{}`: none given)."""


async def list_skills(conns: list[Connection], *, one_server: bool = False) -> SkillList:
    """The skills of `conns`, with a note for each server that lists none (and why).

    `one_server`: a failure is raised (the person named the server); otherwise it is a note and
    the other servers still list."""
    skills: list[SkillInfo] = []
    notes: list[str] = []
    for conn in conns:
        where = f"{conn.toolbox}/{conn.name}"
        if not one_server and conn.status not in AVAILABLE:
            notes.append(f"{where}: not connected ({conn.error or conn.status})")
            continue
        try:
            found, why = await server_skills(conn)
        except WorkbenchError as exc:
            if one_server:
                raise
            notes.append(f"{where}: {exc}")
            continue
        skills.extend(found)
        if not found:
            notes.append(f"{where}: no skills ({why})")
    return SkillList(skills, notes)


async def server_skills(conn: Connection) -> tuple[list[SkillInfo], str]:
    """The skills of one server, kept as its latest listing, and why there are none when so."""
    await conn.ensure_connected()
    entries: list[tuple[SkillInfo, dict[str, Any]]] | None = None
    why = "its skills extension lists none"
    if SKILLS_EXTENSION_ID in conn.extensions:
        try:
            entries = await _listed(conn)
        except RequestError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            logger.debug("%s/%s declares the skills extension but has no skills/list", conn.toolbox, conn.name)
    listed: dict[str, dict[str, Any]] = {}
    if entries is not None:
        found, listed = [info for info, _ in entries], {info.name: given for info, given in entries}
    else:
        found = await _from_resources(conn)
        why = "the server offers neither the skills extension nor skill:// resources"
    _listings[conn] = {skill.name: skill for skill in found}
    _frontmatters[conn] = listed
    return found, why


async def _listed(conn: Connection) -> list[tuple[SkillInfo, dict[str, Any]]]:
    """`skills/list`, every page: each skill, with the frontmatter its entry gave."""
    session = conn.client().session

    async def page(cursor: str | None) -> Any:
        result = await raw_request(session, "skills/list", {"cursor": cursor} if cursor else None)
        return SimpleNamespace(skills=result.get("skills") or [], next_cursor=result.get("nextCursor"))

    with conn._request("list", "skills", conn.request_timeout):
        entries = await all_pages(page, "skills")
    return [(info, _given_frontmatter(entry)) for entry in entries if (info := _entry(conn, entry)) is not None]


def _given_frontmatter(entry: dict[str, Any]) -> dict[str, Any]:
    """The frontmatter a `skills/list` entry gave (`{}` when it gave none, or not a mapping)."""
    given = entry.get("frontmatter")
    return given if isinstance(given, dict) else {}


def _entry(conn: Connection, entry: Any) -> SkillInfo | None:
    """One `skills/list` entry as a `SkillInfo` (None, logged, when it is not one)."""
    uri = entry.get("uri") if isinstance(entry, dict) else None
    if not isinstance(uri, str) or not uri.endswith(f"/{SKILL_FILE}"):
        logger.debug("%s/%s listed a skill without a SKILL.md URI: %r", conn.toolbox, conn.name, entry)
        return None
    frontmatter = _given_frontmatter(entry)
    folder = uri[: -len(SKILL_FILE)]
    resources = entry.get("resources")
    files: list[SkillFile] = []
    if isinstance(resources, list):  # else "dynamic": only SKILL.md is known
        for resource in resources:
            file_uri = resource.get("uri") if isinstance(resource, dict) else None
            if isinstance(file_uri, str) and file_uri.startswith(folder):
                size, digest = resource.get("size"), resource.get("digest")
                files.append(
                    SkillFile(
                        unquote(file_uri[len(folder) :]),
                        file_uri,
                        size if isinstance(size, int) else None,
                        digest if isinstance(digest, str) else None,
                    )
                )
    if not any(f.name == SKILL_FILE for f in files):
        files.insert(0, SkillFile(SKILL_FILE, uri))
    name = frontmatter.get("name")
    description = frontmatter.get("description")
    return SkillInfo(
        toolbox=conn.toolbox,
        server=conn.name,
        name=name if isinstance(name, str) and name else _folder_name(folder),
        description=description.strip() if isinstance(description, str) else "",
        uri=uri,
        files=tuple(files),
        source="extension",
    )


async def _from_resources(conn: Connection) -> list[SkillInfo]:
    """The skills among a server's `skill://` resources: each folder holding a `SKILL.md`."""
    resources = [r for r in await conn.list_resources() if str(r.uri).startswith(SKILL_SCHEME)]
    skills: list[SkillInfo] = []
    for skill_md in resources:
        uri = str(skill_md.uri)
        if not uri.endswith(f"/{SKILL_FILE}"):
            continue
        folder = uri[: -len(SKILL_FILE)]
        files = [
            SkillFile(path, str(r.uri), getattr(r, "size", None))
            for r in resources
            if str(r.uri).startswith(folder) and (path := unquote(str(r.uri)[len(folder) :])) != MANIFEST
        ]
        files.sort(key=lambda f: (f.name != SKILL_FILE, f.name))
        description = skill_md.description or await _described(conn, uri)
        skills.append(
            SkillInfo(
                toolbox=conn.toolbox,
                server=conn.name,
                name=_folder_name(folder),
                description=description,
                uri=uri,
                files=tuple(files),
                source="resources",
            )
        )
    return skills


async def _described(conn: Connection, uri: str) -> str:
    """A skill's description from its `SKILL.md` frontmatter (a resource listed without one)."""
    value, _ = _content(await conn.read_resource(uri, conn.request_timeout))
    text = value if isinstance(value, str) else value.decode("utf-8", "replace")
    return frontmatter(text).get("description") or ""


def frontmatter(text: str) -> dict[str, str]:
    """The string fields of a `SKILL.md`'s YAML frontmatter (`{}` when it has none, or it is not YAML)."""
    return {k: v.strip() for k, v in _yaml_frontmatter(text).items() if isinstance(v, str)}


def _yaml_frontmatter(text: str) -> dict[str, Any]:
    """A `SKILL.md`'s YAML frontmatter, every field (`{}` when it has none, or it is not YAML)."""
    if not text.startswith("---"):
        return {}
    head, sep, _ = text[3:].partition("\n---")
    if not sep:
        return {}
    import yaml

    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        return {}
    return {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}


def frontmatter_mismatch(listed: dict[str, Any], text: str) -> str | None:
    """The first field of the listed frontmatter that the `SKILL.md` `text` does not have alike
    (texts compared without their outer whitespace, other values as JSON), else None."""
    if not listed:
        return None
    found = _yaml_frontmatter(text)
    for field, value in listed.items():
        if field not in found or _plain(found[field]) != _plain(value):
            return str(field)
    return None


def _plain(value: Any) -> Any:
    """A frontmatter value as the listing's JSON would carry it (YAML's dates as their ISO text)."""
    import json

    if isinstance(value, str):
        return value.strip()
    return json.loads(json.dumps(value, default=str))


def size_mismatch(file: SkillFile, data: bytes) -> bool:
    """Whether `data` is not the size the listing gave `file` (False when it gave none)."""
    return file.size is not None and len(data) != file.size


def _folder_name(folder: str) -> str:
    """`skill://ops/deploy/` -> `deploy`."""
    return unquote(folder.rstrip("/").rsplit("/", 1)[-1])


async def read_skill(conn: Connection, name: str, timeout: float | None) -> Skill:
    """The skill `name` read whole, every file checked against the digest and size of the latest
    listing, and `SKILL.md` (read first) against its frontmatter (listed first if this server's
    listing does not have it)."""
    info = _listings.get(conn, {}).get(name)
    if info is None:
        found, _ = await server_skills(conn)
        info = _listings.get(conn, {}).get(name)
        if info is None:
            raise skill_not_found(name, conn.name, conn.toolbox, (s.name for s in found))
    listed = _frontmatters.get(conn, {}).get(name) or {}
    read: dict[str, str | bytes] = {}
    for file in sorted(info.files, key=lambda f: f.name != SKILL_FILE):  # SKILL.md first: is it the one listed?
        value, data = _content(await conn.read_resource(file.uri, timeout))
        if file.digest is not None and file.digest != digest_of(data, file.digest):
            raise skill_digest_mismatch(info.name, conn.name, conn.toolbox, file.name, file.digest)
        if size_mismatch(file, data):  # a listing with sizes but no digests
            raise skill_mismatch(info.name, conn.name, conn.toolbox, file.name, f"its listed size ({file.size} bytes)")
        if file.name == SKILL_FILE and (field := frontmatter_mismatch(listed, _text(value))) is not None:
            raise skill_mismatch(info.name, conn.name, conn.toolbox, file.name, f"its listing ({field})")
        read[file.name] = value
    files = {file.name: read[file.name] for file in info.files}
    return Skill(info=info, instructions=_text(files.get(SKILL_FILE, "")), files=files)


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


def digest_of(data: bytes, listed: str) -> str:
    """`data`'s digest in the listed one's algorithm (`sha256:<hex>`; SEP-2640 names no other)."""
    algorithm = listed.partition(":")[0].lower()
    try:
        hasher = hashlib.new(algorithm)
    except ValueError:
        hasher = hashlib.sha256()
        algorithm = "sha256"
    hasher.update(data)
    return f"{algorithm}:{hasher.hexdigest()}"


def _content(result: Any) -> tuple[str | bytes, bytes]:
    """A resource read's content: its value (text, or bytes of a blob) and the bytes it was sent as."""
    texts: list[str] = []
    blobs: list[bytes] = []
    for content in getattr(result, "contents", None) or ():
        text = getattr(content, "text", None)
        if isinstance(text, str):
            texts.append(text)
            blobs.append(text.encode("utf-8"))
        else:
            blobs.append(base64.b64decode(getattr(content, "blob", "") or ""))
    data = b"".join(blobs)
    if len(texts) == len(blobs):
        return "".join(texts), data
    return data, data


__all__ = [
    "digest_of",
    "frontmatter",
    "frontmatter_mismatch",
    "list_skills",
    "read_skill",
    "server_skills",
    "size_mismatch",
]
