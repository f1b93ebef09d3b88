"""ipywidgets explorer: toolbox -> server -> tool, schema forms, result panes, history.

Core ipywidgets only (no frontend extension), so it works in JupyterLab, Notebook 7, VS Code,
Colab and Binder. Imported on demand: `%load_ext` does not load ipywidgets.
"""

from workbench_magic.notebook.widgets.explorer import ExploredToolbox, Explorer

__all__ = ["ExploredToolbox", "Explorer"]
