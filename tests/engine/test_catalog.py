"""The catalog cache (engine/catalog.py): catalogs saved and read back, salted keys, masked secrets,
broken files and unwritable folders. Plain data and `tmp_path`: no server."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from workbench_magic.engine.catalog import FORMAT, SALT_BYTES, Catalog, CatalogCache, same_tools
from workbench_magic.vocabulary.listings import ToolInfo

SECRET = "sk-catalog-secret-0123456789"
IDENTITY: dict[str, Any] = {
    "config": {"command": "python", "args": ["server.py"], "env": {"TOKEN": SECRET}},
    "client": {"protocol": "2025-11-25", "roots": False},
    "version": "0.1.0",
}
POSIX = os.name == "posix"


def tool(name: str = "echo", toolbox: str = "box", server: str = "srv", **fields: Any) -> ToolInfo:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return ToolInfo(
        toolbox=toolbox, server=server, name=name, input_schema=fields.pop("input_schema", schema), **fields
    )


def catalog(**fields: Any) -> Catalog:
    values: dict[str, Any] = {
        "server_info": "testserver 1.0",
        "protocol": "2025-11-25",
        "instructions": "Use echo.",
        "tools": (
            tool(
                description="Echo the text back.",
                output_schema={"type": "object"},
                annotations={"readOnlyHint": True},
                title="Echo",
                meta={"ui": {"resourceUri": "ui://echo"}},
                execution={"taskSupport": "optional"},
            ),
            tool("add", description=None),
        ),
        "resources": ({"uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"},),
        "resource_templates": (),
        "prompts": None,
        "saved": 1_700_000_000.5,
    }
    return Catalog(**{**values, **fields})


def folder_bytes(folder: Path) -> bytes:
    """Every file's bytes and every name under `folder`."""
    return b"".join(bytes(path.relative_to(folder)) + path.read_bytes() for path in folder.rglob("*") if path.is_file())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---- catalog ------------------------------------------------------------------------------------
def test_save_then_load_gives_the_same_catalog(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    key = cache.key(IDENTITY)
    saved = catalog()
    path = cache.save(key, saved)
    assert path == tmp_path / "catalogs" / f"{key}.json"
    loaded = cache.load(key)
    assert loaded == saved
    assert loaded is not None
    assert loaded.saved == saved.saved
    assert loaded.tools == saved.tools_for("", "")  # stored without a place
    assert loaded.tools_for("other", "s2") == tuple(
        ToolInfo(**{**t.__dict__, "toolbox": "other", "server": "s2"}) for t in saved.tools
    )
    assert loaded.resources == saved.resources
    assert loaded.resource_templates == ()  # the server has none ...
    assert loaded.prompts is None  # ... or they were not listed
    assert loaded.tools[1].description is None
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT
    assert all("toolbox" not in t and "server" not in t for t in data["tools"])
    assert data["tools"][0]["_meta"] == {"ui": {"resourceUri": "ui://echo"}}
    assert sorted(os.listdir(cache.directory)) == sorted(["salt", f"{key}.json"])  # no temporary file left


def test_tools_for_places_the_tools() -> None:
    placed = catalog().tools_for("notes", "files")
    assert [(t.toolbox, t.server, t.name) for t in placed] == [("notes", "files", "echo"), ("notes", "files", "add")]
    assert placed[0].path == "notes/files/echo"
    assert placed[0].ui is not None and placed[0].task_support == "optional"


def test_dict_round_trip_keeps_none_apart_from_empty() -> None:
    original = catalog(resources=None, resource_templates=(), prompts=({"name": "greet", "arguments": []},))
    data = json.loads(json.dumps(original.to_dict()))
    again = Catalog.from_dict(data)
    assert again == original
    assert (again.resources, again.resource_templates) == (None, ())
    assert again.prompts == ({"name": "greet", "arguments": []},)


def test_to_dict_is_a_copy() -> None:
    original = catalog()
    data = original.to_dict()
    data["tools"][0]["inputSchema"]["properties"]["text"]["type"] = "integer"
    data["resources"][0]["uri"] = "changed"
    assert original == catalog()


def test_equality_ignores_place_and_time_not_content() -> None:
    assert catalog(tools=catalog().tools_for("a", "b"), saved=1.0) == catalog()
    assert catalog(server_info="testserver 2.0") != catalog()
    assert catalog(prompts=()) != catalog()  # none vs not listed
    assert catalog(resources=({"uri": "file:///b.txt", "name": "b"},)) != catalog()
    assert catalog(tools=catalog().tools[::-1]) != catalog()


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(format="workbench-magic catalog 2"),
        lambda d: d.pop("format"),
        lambda d: d.update(saved="yesterday"),
        lambda d: d.update(saved=True),
        lambda d: d.update(tools=None),
        lambda d: d.update(tools=[{"name": 3, "inputSchema": {}}]),
        lambda d: d.update(tools=[{"name": "x"}]),
        lambda d: d.update(tools=["echo"]),
        lambda d: d["tools"][0].update(description=["not", "text"]),
        lambda d: d["tools"][0].update(outputSchema="object"),
        lambda d: d.update(resources={"uri": "x"}),
        lambda d: d.update(prompts=["greet"]),
        lambda d: d.update(server_info=1),
    ],
)
def test_from_dict_rejects_a_malformed_dict(change: Any) -> None:
    data = catalog().to_dict()
    change(data)
    with pytest.raises(ValueError):
        Catalog.from_dict(data)
    with pytest.raises(ValueError):
        Catalog.from_dict([data])  # type: ignore[arg-type]


def test_same_tools_ignores_place_but_not_content_or_order() -> None:
    here = (tool("echo", "a", "s"), tool("add", "a", "s"))
    there = (tool("echo", "b", "t"), tool("add", "b", "t"))
    assert same_tools(here, there)
    assert same_tools(list(here), there)
    assert not same_tools(here, there[::-1])
    assert not same_tools(here, there[:1])
    assert not same_tools(here[:1], (tool("echo", "b", "t", input_schema={"type": "object"}),))
    assert not same_tools(here[:1], (tool("echo", "b", "t", description="changed"),))
    assert not same_tools(here[:1], (tool("echo", "b", "t", annotations={"destructiveHint": True}),))


def test_reprs() -> None:
    assert repr(catalog()) == (
        "<Catalog testserver 1.0: 2 tools, 1 resources, 0 resource templates, prompts not listed>"
    )
    assert "catalogs" in repr(CatalogCache("/somewhere"))


# ---- keys ---------------------------------------------------------------------------------------
def test_keys(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path / "one")
    key = cache.key(IDENTITY)
    assert len(key) == 32 and all(c in "0123456789abcdef" for c in key)
    reordered = {"version": "0.1.0", "client": {"roots": False, "protocol": "2025-11-25"}, "config": IDENTITY["config"]}
    assert cache.key(reordered) == key
    assert CatalogCache(tmp_path / "one").key(IDENTITY) == key  # the salt is kept in its file
    changed = {**IDENTITY, "config": {**IDENTITY["config"], "env": {"TOKEN": SECRET + "x"}}}
    assert cache.key(changed) != key
    assert cache.key({**IDENTITY, "version": "0.1.1"}) != key
    assert cache.key({**IDENTITY, "client": {**IDENTITY["client"], "roots": None}}) != key
    assert CatalogCache(tmp_path / "two").key(IDENTITY) != key  # another salt


def test_the_key_is_salted(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    text = json.dumps(IDENTITY, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert not (cache.directory / "salt").exists()
    key = cache.key(IDENTITY)
    salt = (cache.directory / "salt").read_bytes()
    assert len(salt) == SALT_BYTES
    assert key == hashlib.sha256(salt + text.encode()).hexdigest()[:32]
    assert key != hashlib.sha256(text.encode()).hexdigest()[:32]


def test_a_broken_salt_file_is_made_anew(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    cache.directory.mkdir(parents=True)
    (cache.directory / "salt").write_bytes(b"short")
    key = cache.key(IDENTITY)
    assert len((cache.directory / "salt").read_bytes()) == SALT_BYTES
    assert CatalogCache(tmp_path).key(IDENTITY) == key


def test_the_secret_is_nowhere_in_the_cache(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    key = cache.key(IDENTITY)
    secret_tool = tool(description=f"Calls the API with {SECRET}.", meta={SECRET: "as a key"})
    saved = catalog(
        server_info=f"testserver {SECRET}",
        tools=(secret_tool,),
        resources=({"uri": f"https://api.example/?token={SECRET}", "name": "api"},),
    )
    cache.save(key, saved, secrets={SECRET, "echo"})
    assert SECRET not in key
    everything = folder_bytes(tmp_path)
    assert SECRET.encode() not in everything
    assert b"sk-catalog" not in everything
    assert b"server.py" not in everything  # no config in the file
    loaded = cache.load(key)
    assert loaded is not None
    assert loaded.server_info == "testserver ***"
    assert loaded.tools[0].description == "Calls the API with ***."
    assert loaded.tools[0].meta == {"***": "as a key"}
    assert loaded.resources == ({"uri": "https://api.example/?token=***", "name": "api"},)
    assert loaded.tools[0].name == "echo"  # a "secret" shorter than 6 characters is left as it is


# ---- files --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe\x00garbage",
        b"[]",
        b"null",
        json.dumps({**catalog().to_dict(), "format": "workbench-magic catalog 0"}).encode(),
        json.dumps({**catalog().to_dict(), "tools": [{"name": "x"}]}).encode(),
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_a_broken_file_loads_as_none(tmp_path: Path, content: bytes) -> None:
    cache = CatalogCache(tmp_path)
    key = cache.key(IDENTITY)
    cache.save(key, catalog())
    (cache.directory / f"{key}.json").write_bytes(content)
    assert cache.load(key) is None


def test_missing_and_forgotten(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    key = cache.key(IDENTITY)
    assert cache.load(key) is None
    cache.forget(key)  # nothing to forget: nothing happens
    cache.save(key, catalog())
    assert cache.load(key) == catalog()
    cache.forget(key)
    assert cache.load(key) is None
    assert not (cache.directory / f"{key}.json").exists()
    assert CatalogCache(tmp_path / "never").load(key) is None


def test_save_replaces(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    key = cache.key(IDENTITY)
    cache.save(key, catalog())
    cache.save(key, catalog(tools=()))
    assert cache.load(key) == catalog(tools=())


@pytest.mark.parametrize("key", ["", "../escape", "a/b", "key.json", "x" * 129])
def test_a_key_that_is_not_one_is_refused(tmp_path: Path, key: str) -> None:
    cache = CatalogCache(tmp_path)
    for use in (cache.load, cache.forget, lambda k: cache.save(k, catalog())):
        with pytest.raises(ValueError):
            use(key)
    assert not (tmp_path / "escape").exists()


def test_a_catalog_that_is_not_json_is_not_saved(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    key = cache.key(IDENTITY)
    cache.save(key, catalog(resources=({"uri": object()},)))  # logged, not raised
    assert cache.load(key) is None
    assert os.listdir(cache.directory) == ["salt"]  # no temporary file left


@pytest.mark.skipif(not POSIX, reason="POSIX file modes")
def test_modes(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path / "cache")
    key = cache.key(IDENTITY)
    path = cache.save(key, catalog())
    assert mode(cache.directory) == 0o700
    assert mode(cache.directory / "salt") == 0o600
    assert mode(path) == 0o600


# ---- where ----------------------------------------------------------------------------------------
def test_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "env"))
    cache = CatalogCache()
    assert cache.directory == tmp_path / "env" / "catalogs"
    assert not (tmp_path / "env").exists()  # nothing made before it is needed
    cache.save(cache.key(IDENTITY), catalog())
    assert len(list((tmp_path / "env" / "catalogs").glob("*.json"))) == 1
    assert CatalogCache(tmp_path / "given").directory == tmp_path / "given" / "catalogs"  # an argument wins
    monkeypatch.delenv("WORKBENCH_CACHE_DIR")
    assert CatalogCache().directory == Path(platformdirs.user_cache_dir("workbench-magic")) / "catalogs"


def test_importing_it_imports_no_sdk() -> None:
    code = (
        "import sys, workbench_magic.engine.catalog; print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---- an unwritable cache --------------------------------------------------------------------------
def test_a_cache_under_a_file_works_within_the_process(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    cache = CatalogCache(tmp_path / "afile" / "x")
    key = cache.key(IDENTITY)  # an in-memory salt: no error
    assert len(key) == 32
    assert cache.key(IDENTITY) == key
    assert CatalogCache(tmp_path / "afile" / "x").key(IDENTITY) == key  # the same salt in this process
    assert CatalogCache(tmp_path / "afile" / "y").key(IDENTITY) != key
    assert cache.save(key, catalog()) == cache.directory / f"{key}.json"  # not saved, not raised
    assert cache.load(key) is None
    cache.forget(key)
    assert (tmp_path / "afile").read_text() == "not a folder"
