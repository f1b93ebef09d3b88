"""Where the config comes from, and loading it.

Discovery order: an explicit path, ``$WORKBENCH_CONFIG``, ``./workbench-config.json``, then the
embedded default (toolbox ``demo``, `workbench_magic.config.defaults`). Loading is pure: nothing is
started, no path other than the config file is touched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench_magic.config.defaults import EMBEDDED_SOURCE, default_config_dict
from workbench_magic.config.messages import config_error
from workbench_magic.config.parser import parse_config, read_config_json
from workbench_magic.config.settings import DICT_SOURCE, WorkbenchConfig

__all__ = ["CONFIG_ENV_VAR", "CONFIG_FILENAME", "find_config", "load_config"]

#: The file looked for in the current directory.
CONFIG_FILENAME = "workbench-config.json"
#: The environment variable naming a config file.
CONFIG_ENV_VAR = "WORKBENCH_CONFIG"


def _resolve(path: str | os.PathLike[str], base: Path | None) -> Path:
    candidate = Path(path).expanduser()
    if base is not None and not candidate.is_absolute():
        candidate = base / candidate
    return candidate


def _check_file(path: Path, shown: str, origin: str) -> Path:
    if path.is_file():
        return path
    problem = "is a directory, not a config file" if path.is_dir() else "config file not found"
    fix = f"Fix: fix or unset {CONFIG_ENV_VAR}" if origin else "Fix: check the path"
    raise config_error(shown, "", problem + origin, fix)


def find_config(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Path | None:
    """Find the config file.

    Order: ``path`` (when given and not empty), ``$WORKBENCH_CONFIG`` (when set and not
    empty), ``workbench-config.json`` in ``cwd``. Relative paths are relative to ``cwd``; ``~`` is
    expanded.

    Args:
        path: an explicit config file.
        environ: the variables to read ``$WORKBENCH_CONFIG`` from (default: `os.environ`).
        cwd: the folder relative paths start from (default: the current directory).

    Returns:
        The file, or None: the embedded default applies.

    Raises:
        ConfigError: an explicit or ``$WORKBENCH_CONFIG`` path is not a file (named in the message).
    """
    env = os.environ if environ is None else environ
    base = None if cwd is None else Path(cwd)
    if path is not None and os.fspath(path) != "":
        return _check_file(_resolve(path, base), os.fspath(path), "")
    from_env = env.get(CONFIG_ENV_VAR, "").strip()
    if from_env:
        return _check_file(_resolve(from_env, base), from_env, f" (from ${CONFIG_ENV_VAR})")
    candidate = (base if base is not None else Path.cwd()) / CONFIG_FILENAME
    return candidate if candidate.is_file() else None


def load_config(
    path: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> WorkbenchConfig:
    """Find, read and validate the config (see `find_config` for the order).

    Args:
        path: a config file; or a mapping (parsed with source ``"<dict>"``); or a `WorkbenchConfig`
            (returned as is; one made by ``model_construct`` is checked first, and a validated copy
            returned).
        environ: the variables ``${VAR}`` expands from (default: `os.environ`).
        cwd: the folder relative paths start from (default: the current directory).

    Returns:
        The config; its `WorkbenchConfig.source` is the path as given (or as found), or
        ``"<embedded default>"``.

    Raises:
        ConfigError: the config cannot be read or is not valid (a one-line message).
    """
    if isinstance(path, WorkbenchConfig):
        return WorkbenchConfig._validate_as(path, path.source if isinstance(path.source, str) else DICT_SOURCE)
    if isinstance(path, Mapping):
        return parse_config(path, DICT_SOURCE, environ=environ)
    env = os.environ if environ is None else environ
    found = find_config(path, environ=env, cwd=cwd)
    if found is None:
        return parse_config(default_config_dict(), EMBEDDED_SOURCE, environ=env)
    if path is not None and os.fspath(path) != "":
        source = os.fspath(path)
    elif env.get(CONFIG_ENV_VAR, "").strip():
        source = env[CONFIG_ENV_VAR].strip()
    else:
        source = str(found)
    return parse_config(read_config_json(found, source), source, environ=env)
