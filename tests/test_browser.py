"""The explorer in a real browser: JupyterLab headless, driven by Playwright in Debian's chromium."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ROOT, free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.timeout(300)


def _require_browser() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError("chromium is missing: .ci/run installs it with apt")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


class Lab:
    """A headless JupyterLab server on 127.0.0.1 with token auth."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.log = (root / "lab.log").open("w")
        settings = root / ".lab-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(root / ".jupyter"),
            "JUPYTER_RUNTIME_DIR": str(root / ".rt"),
            "JUPYTERLAB_SETTINGS_DIR": str(root / ".lab-settings"),
        }
        env.pop("WORKBENCH_CONFIG", None)
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
                f"--port={self.port}", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
                "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self._wait_ready()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def _wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("JupyterLab exited at start-up")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)  # polling a server that is still starting: there is no event to wait on
        raise RuntimeError("JupyterLab did not answer in time")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    _require_browser()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench_magic\n%workbench open demo")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "explore.ipynb")
    server = Lab(tmp_path)
    yield server
    server.stop()


def choose(page: Any, selector: str, prefix: str) -> None:
    """Select the option whose text starts with `prefix` (ipywidgets option values are their labels)."""
    texts = page.eval_on_selector(selector, "el => [...el.options].map(o => [o.text, o.value])")
    values = [value for _, value in texts if value.startswith(prefix)]
    assert values, f"no option starting with {prefix!r} in {texts}"
    page.select_option(selector, value=values[0])


def test_explorer_in_jupyterlab(lab: Lab) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(lab.url("lab/tree/explore.ipynb"), timeout=120_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            # the kernel session must be attached and idle before the cell can run
            page.wait_for_function(
                "() => (document.querySelector('.jp-StatusBar-Widget')?.innerText || '').includes('| Idle')",
                timeout=120_000,
            )
            page.click("text=Run >> nth=0")
            page.click("text=Run All Cells")

            explorer = page.wait_for_selector(".wb-explorer", timeout=120_000)
            assert explorer is not None
            choose(page, ".wb-server-select select", "● datasets")
            choose(page, ".wb-tool-select select", "query ")
            page.wait_for_selector(".wb-field-dataset input", timeout=30_000)
            page.fill(".wb-field-dataset input", "penguins")
            limit = page.locator(".wb-field-limit input")
            limit.fill("3")
            limit.press("Tab")
            page.click(".wb-call")
            page.wait_for_function(
                "() => (document.querySelector('.wb-result')?.innerText || '').includes('[ok')", timeout=60_000
            )
            result_text = page.inner_text(".wb-result")
            page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
            assert "demo/datasets/query [ok" in result_text
            assert "Adelie" in result_text
            assert "✓ structured content matches the output schema" in result_text
            # the history tab lists the call
            page.click(".wb-explorer .lm-TabBar-tab:has-text('History')")
            history = page.inner_text(".wb-history")
            assert "demo/datasets/query" in history and json.dumps({"dataset": "penguins", "limit": 3})[:20] in history
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "explorer-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
