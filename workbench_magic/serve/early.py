"""serve's early answers: the handshake and the listings, answered while the SDK still imports.

Most of `workbench-magic serve`'s start is importing the MCP SDK. A client that connects waits
for the answer to its handshake (`initialize` or `server/discover`) all that time, though the
answer is the same every time for the same serve (its version, mode and config). So serve
remembers its own answers and gives them again at once, next time:

- `EarlyAnswers.begin` (before any heavy import) starts a thread that reads stdin and answers the
  requests whose answer it learned before: `initialize` and `server/discover` (per protocol
  version asked), `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`, and
  in proxy mode `open_toolbox` of a toolbox whose servers are all lazy (answered as the last open
  answered, when no server failed: what the real open answers from their cached catalogs too)
  for a client that offers what that client offered (`client_offer`: a server may list other
  tools to a client that offers sampling, say). Nothing else is answered.
- When the SDK's server is up, `handover()` stops the thread and gives the stdio face
  (stdio.py) every byte read: the SDK reads them all, early-answered requests included, so its
  state is what it would be (the session initialized, the toolbox opened). Its responses to the
  requests answered early are dropped (`Observer.outgoing`), and any answer that differs from the
  one given early is learned for next time; answers to new requests are learned too.

The answers live in `<cache>/serve/<key>.json` (0600), the key a hash of serve's version, mode
and config (the file's bytes and the values of the variables it names, salted as the catalogs'
keys are); the first serve of a config answers everything late, as before.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import select
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench_magic.engine.extensions import APPS_EXTENSION_ID
from workbench_magic.vocabulary.cachedir import cache_directory
from workbench_magic.vocabulary.version import __version__

logger = logging.getLogger("workbench_magic.server")

FORMAT = "workbench-magic serve answers 3"
LISTINGS = frozenset(
    {"initialize", "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list"}
)
"""Methods whose answer depends only on serve's version, mode and config."""
_MARKS = ("initialize", "server/discover", "/list", "open_toolbox")
"""A line holds one of these if it may be a request worth remembering (others are not parsed)."""
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_OFFERED = ("sampling", "elicitation", "roots", "tasks")
_VARIABLE = re.compile(rb"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def client_offer(capabilities: Any) -> dict[str, Any]:
    """What a client's capabilities offer that the servers behind serve may list other tools for:
    sampling, elicitation, roots, tasks and the MCP Apps extension (absent: None)."""
    caps = capabilities if isinstance(capabilities, dict) else {}
    offer = {kind: caps.get(kind) for kind in _OFFERED}
    extensions = caps.get("extensions")
    offer["apps"] = extensions.get(APPS_EXTENSION_ID) if isinstance(extensions, dict) else None
    return offer


def session_offer(message: Any) -> dict[str, Any] | None:
    """The offer of a handshake-era session, when `message` is its `initialize` request."""
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    return client_offer(params.get("capabilities") if isinstance(params, dict) else None)


def request_key(message: dict[str, Any], mode: str, offer: dict[str, Any] | None = None) -> str | None:
    """What identifies a request's answer (None: not one to remember): its method, and its
    params without `_meta` but for the protocol version it asks in; for `open_toolbox`, also
    what the client offers (its answer lists the servers' tools, which may depend on it): the
    capabilities in the request's `_meta` (2026-07-28), else the session's `offer` (`initialize`)."""
    method = message.get("method")
    params = message.get("params")
    if "id" not in message or not isinstance(method, str) or not isinstance(params, dict | type(None)):
        return None
    params = dict(params or {})
    meta = params.pop("_meta", None)
    if method == "tools/call":
        if mode != "proxy" or params.get("name") != "open_toolbox":
            return None
    elif method not in LISTINGS or (method not in ("initialize", "server/discover") and mode != "proxy"):
        return None  # in dynamic mode the lists grow with each open; in flat mode they are the servers' own
    version = meta.get(_VERSION_KEY) if isinstance(meta, dict) else None
    key: list[Any] = [method, params, version]
    if method == "tools/call":
        if isinstance(meta, dict) and _CAPABILITIES_KEY in meta:
            offer = client_offer(meta[_CAPABILITIES_KEY])
        key.append(offer if offer is not None else client_offer(None))
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


class EarlyAnswers:
    """The answers learned by earlier serves of this config, and the thread that gives them."""

    def __init__(self, path: Path, answers: dict[str, Any], mode: str) -> None:
        self.path = path
        self.answers = answers
        self.mode = mode
        self.answered: dict[Any, str] = {}
        """Request id -> its key, for each request answered early."""
        self.offer: dict[str, Any] | None = None
        """What the handshake-era client offered in its `initialize` (`session_offer`)."""
        self.read = bytearray()
        self.eof = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending = b""

    # ---- before the SDK ---------------------------------------------------------------
    @classmethod
    def begin(cls, config: str | None, mode: str, toolboxes: tuple[str, ...] = ()) -> EarlyAnswers | None:
        """Start answering stdin (None when stdin and stdout are not pipes: the SDK's own transport
        serves those, or when the config cannot be read: the normal start says why)."""
        if not (_pipe(0) and _pipe(1)):
            return None
        try:
            path = cache_directory() / "serve" / f"{_key(config, mode, toolboxes)}.json"
        except OSError:
            return None
        early = cls(path, _load(path), mode)
        if early.answers:
            early._thread = threading.Thread(target=early._run, name="serve-early-answers", daemon=True)
            early._thread.start()
        return early

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([0], [], [], 0.01)
                if not ready:
                    continue
                data = os.read(0, 1 << 16)
                if not data:
                    self.eof = True
                    return
                self.read += data
                self._pending += data
                *lines, self._pending = self._pending.split(b"\n")
                for line in lines:
                    self._answer(line)
        except OSError as exc:  # the SDK's transport reads what is left, and says what went wrong
            logger.debug("early answers stopped: %s", exc)

    def _answer(self, line: bytes) -> None:
        if not any(mark.encode() in line for mark in _MARKS):
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        self.offer = session_offer(message) or self.offer
        key = request_key(message, self.mode, self.offer) if isinstance(message, dict) else None
        if key is None or key not in self.answers:
            return
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": self.answers[key]}
        data = (json.dumps(reply, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        while data:
            data = data[os.write(1, data) :]
        self.answered[message["id"]] = key

    def handover(self, opens_from_cache: Callable[[str], bool] = lambda toolbox: False) -> Observer:
        """Stop answering; what the stdio face needs to go on (every byte read, what was answered).
        `opens_from_cache(toolbox)`: whether an open of that toolbox answers from cached catalogs
        (its servers are all lazy), so that its answer may be given early next time."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.answered:
            logger.info("answered %d request(s) before the SDK was up", len(self.answered))
        return Observer(self, opens_from_cache)


class Observer:
    """The stdio face's view of the early answers: the requests worth remembering that pass
    (`incoming`), and the responses to them (`outgoing`: dropped when answered early)."""

    def __init__(self, early: EarlyAnswers, opens_from_cache: Callable[[str], bool]) -> None:
        self.early = early
        self.opens_from_cache = opens_from_cache
        self.read = bytes(early.read)
        self.eof = early.eof
        self._asked: dict[Any, str] = {}
        self._offer: dict[str, Any] | None = None
        self._changed = False
        self.caught_up = asyncio.Event()
        """Set once the SDK answered every request answered early: until then a later request
        waits (`before`), since the client sent it after our answer (an open, then a call)."""
        if not early.answered:
            self.caught_up.set()

    async def before(self, line: str) -> None:
        """Before a request that was not answered early goes on, wait until the ones that were have
        been served for real (they and notifications go on at once: the SDK serves them in order)."""
        if self.caught_up.is_set():
            return
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return  # a notification (`initialized` must reach the SDK before it serves the rest)
        if message["id"] in self.early.answered:
            return
        await self.caught_up.wait()

    def incoming(self, line: str) -> None:
        if not any(mark in line for mark in _MARKS):
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        self._offer = session_offer(message) or self._offer
        if (key := request_key(message, self.early.mode, self._offer)) is not None:
            self._asked[message["id"]] = key

    def outgoing(self, text: str) -> bool:
        """Whether `text` (one message) goes on the wire: the SDK's answer to a request answered
        early does not (it is learned if it differs)."""
        if not self._asked:
            return True
        try:
            message = json.loads(text)
        except ValueError:
            return True
        if not isinstance(message, dict) or "result" not in message:
            return True
        key = self._asked.pop(message.get("id"), None)
        if key is None:
            return True
        early = self.early
        if self._learns(key, message["result"]) and early.answers.get(key) != message["result"]:
            early.answers[key] = message["result"]
            self._changed = True
            self.save()
        elif not self._learns(key, message["result"]) and key in early.answers:
            del early.answers[key]
            self._changed = True
            self.save()
        sent_early = early.answered.pop(message.get("id"), None) is not None
        if sent_early and not early.answered:
            self.caught_up.set()
        return not sent_early

    def _learns(self, key: str, result: Any) -> bool:
        """Whether an answer may be given early next time: not an open that failed, or that
        started servers (its toolbox not all lazy)."""
        method, params = json.loads(key)[:2]
        if method != "tools/call":
            return True
        toolbox = (params.get("arguments") or {}).get("toolbox")
        return isinstance(toolbox, str) and self.opens_from_cache(toolbox) and not _failed_open(result)

    def save(self) -> None:
        if not self._changed:
            return
        self._changed = False
        path = self.early.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            data = json.dumps({"format": FORMAT, "answers": self.early.answers}, ensure_ascii=False)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(data)
            os.replace(temporary, path)
        except OSError as exc:  # an optimisation: serve goes on without it
            logger.debug("early answers not saved: %s", exc)


def _failed_open(result: Any) -> bool:
    """Whether an `open_toolbox` answer names failed servers (or is an error)."""
    if not isinstance(result, dict):
        return False
    if result.get("isError"):
        return True
    for block in result.get("content") or ():
        if isinstance(block, dict) and '"servers_failed"' in str(block.get("text", "")):
            return True
    return False


def _pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _key(config: str | None, mode: str, toolboxes: tuple[str, ...] = ()) -> str:
    """serve's identity: version, mode, the toolboxes chosen, and the config (its bytes and the values of the variables
    it names; the embedded default when none is found), as a catalog key (a salted hash: the
    values of secrets stay out of the file name)."""
    from workbench_magic.engine.catalog import CatalogCache  # stdlib only: no SDK, no pydantic

    # The config is found as config/discovery.py finds it (importing that would import pydantic).
    named = config or os.environ.get("WORKBENCH_CONFIG", "").strip()
    found: Path | None = Path(named).expanduser().resolve() if named else Path("workbench-config.json").resolve()
    if found is not None and not found.is_file():
        if named:
            raise OSError(f"no config file at {named}")  # serve's normal start says so, in its words
        found = None
    identity: dict[str, Any] = {"format": FORMAT, "version": __version__, "mode": mode, "config": str(found)}
    if toolboxes:
        identity["toolboxes"] = sorted(set(toolboxes))
    if found is not None:
        data = found.read_bytes()
        identity["bytes"] = hashlib.sha256(data).hexdigest()
        identity["variables"] = {name: os.environ.get(name) for name in {m.decode() for m in _VARIABLE.findall(data)}}
    return CatalogCache().key(identity)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    answers = data.get("answers") if isinstance(data, dict) and data.get("format") == FORMAT else None
    return answers if isinstance(answers, dict) else {}


__all__ = ["FORMAT", "LISTINGS", "EarlyAnswers", "Observer", "client_offer", "request_key", "session_offer"]
