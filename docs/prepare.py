"""Put the executed tutorials where the site renders them: docs/tutorials/NAME.ipynb (ignored by git).

For each notebooks/NAME.ipynb, the copy CI executed (build/notebooks/NAME.ipynb, which
tests/notebook/test_notebooks.py writes when the notebook ran clean) if it is newer than the notebook;
else the notebook is executed here, the same way (tests/notebook/notebook_runner.py), and kept in
build/notebooks/ too. A notebook that fails stops the build: exit status 1 and one line saying which
and why.

The rendered copy shows none of the paths of the machine that ran it (`render`): outputs that print
the kernel's python, the library folders, the checkout, a temporary folder or the home folder show
`python`, `site-packages`, a relative path, `/tmp/…` or `/home/user` instead.

Run by `make docs` before `mkdocs build`: `.venv/bin/python docs/prepare.py`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "notebook"))

from notebook_runner import EXECUTED, ROOT, errors, execute, keep, notebooks

TUTORIALS = ROOT / "docs" / "tutorials"
#: What a temporary folder (its name is random) and the home folder show in a rendered notebook.
TEMPORARY = "/tmp/…"
HOME = "/home/user"


def fresh(path: Path) -> Path | None:
    """CI's executed copy of `path`, if there is one newer than the notebook."""
    executed = EXECUTED / path.name
    if executed.exists() and executed.stat().st_mtime >= path.stat().st_mtime:
        return executed
    return None


def run(path: Path) -> Path:
    """Execute `path` as the test does, in a scratch folder with a catalog cache of its own."""
    with tempfile.TemporaryDirectory(prefix="wb-docs-") as scratch:
        os.environ["WORKBENCH_CACHE_DIR"] = str(Path(scratch) / "cache")  # the kernel inherits it
        work = Path(scratch) / "work"
        work.mkdir()
        nb = execute(path, work)
    if errors(nb):  # execute() raises at an error; this is for a kernel that reported one and went on
        first = errors(nb)[0]
        raise RuntimeError(f"{first.get('ename')}: {first.get('evalue')}")
    return keep(nb, path.name)


def main() -> int:
    os.environ.pop("WORKBENCH_CONFIG", None)  # the notebooks bring their own configs, or use the demo
    TUTORIALS.mkdir(exist_ok=True)
    sources = notebooks()
    for stale in set(TUTORIALS.glob("*.ipynb")) - {TUTORIALS / p.name for p in sources}:
        stale.unlink()  # a notebook renamed or removed
    for path in sources:
        executed = fresh(path)
        if executed is None:
            started = time.monotonic()
            try:
                executed = run(path)
            except Exception as exc:  # CellExecutionError, a timeout, a dead kernel: one line, then stop
                reason = getattr(exc, "ename", None) and f"{exc.ename}: {exc.evalue}"  # type: ignore[attr-defined]
                print(f"docs: notebooks/{path.name} failed: {reason or first_line(exc)}", file=sys.stderr)
                return 1
            print(f"docs: executed notebooks/{path.name} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        render(executed, TUTORIALS / path.name)
    return 0


def render(executed: Path, target: Path) -> None:
    """Write the copy of an executed notebook that the site renders: its outputs without this machine's paths."""
    nb = json.loads(executed.read_text(encoding="utf-8"))
    strip = path_stripper()
    for cell in nb["cells"]:
        if "outputs" in cell:  # only what ran shows paths; the sources stay as committed
            cell["outputs"] = scrub(cell["outputs"], strip)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def path_stripper() -> Callable[[str], str]:
    """What replaces the paths of this machine in a text.

    The folder of the running python goes (the kernel's python reads `python`, a venv's script its
    name); the library folders read as their names (`site-packages`, `python3.11`); the checkout's
    paths become relative to it; a temporary folder (a random name under the temporary directory,
    or a pytest `tmp_path`, an xdist worker's too) becomes `/tmp/…`; the home folder `/home/user`.
    Where one path holds another, the longer one wins.
    """
    literal = {str(Path(sys.executable).parent) + os.sep: "", str(ROOT) + os.sep: "", str(ROOT): "."}
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        folder = Path(sysconfig.get_paths()[key])
        literal.setdefault(str(folder), folder.name)
    whole = r"(?![\w-]|\.[\w-])"  # a whole path, not the start of a longer name (a full stop may end it)
    parts = [re.escape(p) + ("" if p.endswith(os.sep) else whole) for p in sorted(literal, key=len, reverse=True)]
    parts.append(
        re.escape(tempfile.gettempdir()) + r"/(?:pytest-of-[\w.-]+/pytest-\d+/(?:popen-gw\d+/)?)?(?P<temporary>[\w.-]+)"
    )
    home = str(Path.home())
    if home != os.sep:
        parts.append(f"(?P<home>{re.escape(home)}){whole}")
    pattern = re.compile("|".join(parts))

    def replace(match: re.Match[str]) -> str:
        if match.group("temporary"):
            return TEMPORARY
        if match.groupdict().get("home"):
            return HOME
        return literal[match.group(0)]

    return lambda text: pattern.sub(replace, text)


def scrub(value: Any, strip: Callable[[str], str]) -> Any:
    """`value` (JSON: strings, lists, objects) with `strip` applied to every string in it."""
    if isinstance(value, str):
        return strip(value)
    if isinstance(value, list):
        return [scrub(v, strip) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, strip) for k, v in value.items()}
    return value


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


if __name__ == "__main__":
    sys.exit(main())
