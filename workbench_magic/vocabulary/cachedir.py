"""Where the workbench caches what it learned about servers: `$WORKBENCH_CACHE_DIR`, else the
user's cache folder (platformdirs: `~/.cache/workbench-magic` on Linux). The catalogs of lazy
servers go in its `catalogs` folder (engine/catalog.py), serve's early answers in `serve`
(serve/early.py)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_VARIABLE = "WORKBENCH_CACHE_DIR"


def cache_directory() -> Path:
    """The cache folder (not created here)."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    try:
        from platformdirs import user_cache_dir  # a few imports: loaded when a cache needs its default place
    except ImportError:  # a dependency, but a broken install should still run
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "workbench-magic"
    return Path(user_cache_dir("workbench-magic"))


__all__ = ["CACHE_DIR_VARIABLE", "cache_directory"]
