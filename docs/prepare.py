"""Put the executed tutorials where the site renders them: docs/tutorials/NAME.ipynb (ignored by git).

For each notebooks/NAME.ipynb, the copy CI executed (build/notebooks/NAME.ipynb, which
tests/notebook/test_notebooks.py writes when the notebook ran clean) if it is newer than the notebook;
else the notebook is executed here, the same way (tests/notebook/notebook_runner.py), and kept in
build/notebooks/ too. A notebook that fails stops the build: exit status 1 and one line saying which
and why.

Run by `make docs` before `mkdocs build`: `.venv/bin/python docs/prepare.py`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "notebook"))

from notebook_runner import EXECUTED, ROOT, errors, execute, keep, notebooks

TUTORIALS = ROOT / "docs" / "tutorials"


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
        shutil.copyfile(executed, TUTORIALS / path.name)
    return 0


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


if __name__ == "__main__":
    sys.exit(main())
