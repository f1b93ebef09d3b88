"""`wb.export_notebook(path)`: the notebook layer writes the notebook (notebook/export.py) and
registers its writer here from above (`workbench_magic.notebook.install()`), since the API layer
imports no notebook code.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from workbench_magic.vocabulary.errors import WorkbenchError

NotebookExporter = Callable[[Any, "str | os.PathLike[str]"], str]
"""`exporter(workbench, path) -> path`: writes the session of `workbench` as a notebook."""

_exporter: NotebookExporter | None = None


def set_notebook_exporter(exporter: NotebookExporter | None) -> None:
    """Register what writes `wb.export_notebook(path)` (None: nothing does)."""
    global _exporter
    _exporter = exporter


def export_notebook(workbench: Any, path: str | os.PathLike[str]) -> str:
    """Write the session of `workbench` as a notebook at `path` with the registered exporter."""
    if _exporter is None:
        raise WorkbenchError(
            "No notebook exporter is registered: call workbench_magic.notebook.install() first "
            "(%load_ext workbench_magic and workbench_magic.Workbench do)"
        )
    return _exporter(workbench, path)
