"""Take docs/images/explorer.png: the explorer on the demo toolbox, a tool selected and called.

Run once by hand when the explorer's look changes (the picture is committed, not built):
`.venv/bin/python docs/screenshot.py`. It uses the browser test's machinery
(tests/notebook/test_browser.py: a headless JupyterLab on 127.0.0.1, Playwright driving Debian's
chromium), opens the embedded demo toolbox in a notebook, selects `datasets` / `query`, fills the
form, calls it, and screenshots the explorer element. JupyterLab is stopped at the end.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE.parent / "tests" / "notebook")]

import nbformat  # noqa: E402
from test_browser import Lab, choose, wait_text  # noqa: E402

TARGET = HERE / "images" / "explorer.png"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="wb-shot-") as scratch:
        root = Path(scratch)
        os.environ["WORKBENCH_CACHE_DIR"] = str(root / ".cache")  # JupyterLab's kernels inherit it
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench_magic\n%workbench open demo")]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, root / "explore.ipynb")  # no config file: the embedded demo toolbox
        lab = Lab(root)
        try:
            with lab.notebook_page("explore.ipynb", height=1800, failure="screenshot-failure.png") as page:
                page.click("text=Run >> nth=0")
                page.click("text=Run All Cells")
                page.wait_for_selector(".wb-explorer", timeout=120_000)
                choose(page, ".wb-server-select select", "● datasets")
                choose(page, ".wb-tool-select select", "query ")
                limit = page.locator(".wb-field-limit input >> visible=true")
                limit.wait_for(timeout=30_000)
                dataset = page.locator(".wb-field-dataset input >> visible=true")
                dataset.fill("penguins")
                dataset.press("Tab")
                limit.fill("3")
                limit.press("Tab")
                page.click(".wb-call")
                wait_text(page, ".wb-result", "[ok")
                page.mouse.move(0, 0)  # no hover highlight in the picture
                TARGET.parent.mkdir(exist_ok=True)
                page.locator(".wb-explorer").screenshot(path=str(TARGET))
        finally:
            lab.stop()
    print(f"{TARGET.relative_to(HERE.parent)}: {TARGET.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
