"""The Binder environment, simulated (tests/notebook/binder_environment.py): it builds from binder/ alone, and its
kernel runs in its virtualenv with the package pip installed there.

Every notebook runs in it in tests/notebook/test_notebooks.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from binder_environment import KERNEL, binder, shared_folder
from conftest import ZYGOTES, start_zygote, stop_zygote
from nbclient import NotebookClient


@pytest.mark.timeout(900)  # the build (the longest timeout: it starts first, the notebooks wait for it)
def test_the_binder_environment_builds_and_its_kernel_runs_there(tmp_path_factory: pytest.TempPathFactory) -> None:
    built = binder(shared_folder(tmp_path_factory.getbasetemp()))
    assert os.access(built.repo / "binder" / "postBuild", os.X_OK), "binder/postBuild must be executable"
    assert (built.repo / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    if shutil.which("npm", path=built.env["PATH"]):
        servers = built.repo / "tests" / "servers"
        for name in json.loads((servers / "package.json").read_text())["dependencies"]:
            assert (servers / "node_modules" / name / "package.json").exists(), f"postBuild did not install {name}"
            if "/server-" in name:  # the reference servers run as `node .../dist/index.js`
                assert (servers / "node_modules" / name / "dist" / "index.js").exists(), f"{name} has no dist/index.js"
        assert not (built.root / "npm-global" / "lib" / "node_modules").exists(), "postBuild installed globally"
    # the fastmcp-tasks server of notebook 09, in its own virtualenv
    tasks = built.repo / "tests" / "servers" / "extensions" / "tasks-venv" / "bin" / "python"
    probe = subprocess.run([str(tasks), "-c", "import fastmcp_tasks"], capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, f"postBuild did not install the tasks server's virtualenv: {probe.stderr}"

    # The kernelspec ipykernel installed in the virtualenv, and the one the notebooks run on (through
    # a zygote of the virtualenv's python): both run there.
    zygote = start_zygote(built.python, built.env, kernel=KERNEL) if ZYGOTES else None
    try:
        for kernel_dirs in [None, *([[os.path.join(zygote["jupyter"], "kernels")]] if zygote else [])]:
            code = "import sys, workbench_magic; print(sys.prefix); print(workbench_magic.__file__)"
            probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
            where = {"metadata": {"path": str(built.notebooks)}}  # as on Binder: from the notebooks' folder
            client = NotebookClient(probe, km=built.kernel_manager(kernel_dirs), timeout=120, resources=where)
            client.execute(env=built.env)
            prefix, module = probe.cells[0].outputs[0]["text"].split()
            assert Path(prefix) == built.venv, f"the kernel ran in {prefix}, not in the Binder virtualenv"
            assert Path(module).is_relative_to(built.venv), f"workbench_magic came from {module}, not the pip install"
    finally:
        stop_zygote(zygote or {})
