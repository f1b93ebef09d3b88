"""Running a tutorial notebook the way CI does, in one place for the two that do it.

tests/notebook/test_notebooks.py runs every notebook in the Binder environment (tests/notebook/binder_environment.py)
and keeps what ran clean in build/notebooks/; docs/prepare.py renders those outputs on the
documentation site, and runs a notebook itself (with this same code, on this checkout) when CI's copy
is missing or older than the notebook.

A notebook runs top to bottom in a fresh kernel (`python3`, or the one given), at most 180 seconds a
cell, in the working directory given; widget state is not stored, so widgets show their static
HTML fallback wherever the notebook is read without a kernel (nbconvert, the site, GitHub).
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
#: Where the executed notebooks are kept (build/ is ignored by git).
EXECUTED = ROOT / "build" / "notebooks"
TIMEOUT = 180


def notebooks() -> list[Path]:
    """The tutorials, in reading order (their names start with their number)."""
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def execute(
    path: Path, workdir: Path, *, kernel_manager: KernelManager | None = None, env: dict[str, str] | None = None
) -> NotebookNode:
    """Run the notebook at `path` with `workdir` as its working directory; the notebook with outputs.

    `kernel_manager`: the kernel's (default: the `python3` kernelspec); `env`: the kernel's
    environment (default: this process's).

    Raises nbclient's `CellExecutionError` at the first cell that fails.
    """
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        km=kernel_manager,
        timeout=TIMEOUT,
        kernel_name="python3",
        store_widget_state=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute(**({"env": env} if env is not None else {}))
    return nb


def errors(nb: NotebookNode) -> list[NotebookNode]:
    """The error outputs of an executed notebook."""
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


def keep(nb: NotebookNode, name: str) -> Path:
    """Write an executed notebook to build/notebooks/`name`, where the documentation takes it from."""
    EXECUTED.mkdir(parents=True, exist_ok=True)
    target = EXECUTED / name
    # a name of this process's own: two runs beside each other in one tree never share the half file
    partial = target.with_suffix(f".{os.getpid()}.partial")
    nbformat.write(nb, partial)
    partial.replace(target)  # whole or not at all: a run stopped midway leaves no half notebook
    return target
