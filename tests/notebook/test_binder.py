"""The Binder environment, simulated: a fresh virtualenv built only from binder/, running every notebook.

Binder (repo2docker) starts from an image with Python and JupyterLab, runs
`pip install -r binder/requirements.txt` from the repository root, then `binder/postBuild`. Here:
a new virtualenv from the base interpreter (no system site-packages, nothing from this checkout's
.venv), a copy of the files a clone would have, the same two steps, then every notebook executed
by nbclient on a kernel of that virtualenv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

# What Binder's image provides besides our requirements: Jupyter (here only what runs notebooks).
JUPYTER = ["ipykernel", "nbclient", "nbformat"]
KERNEL = "binder"

RUNNER = r'''
"""Run with the Binder virtualenv's Python: execute notebooks, report errors as JSON."""
import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

kernel, *paths = sys.argv[1:]
report = {}
probe = nbformat.v4.new_notebook(
    cells=[nbformat.v4.new_code_cell("import sys, workbench_magic; print(sys.prefix); print(workbench_magic.__file__)")]
)
NotebookClient(probe, kernel_name=kernel, timeout=120).execute()
report["probe"] = probe.cells[0].outputs[0]["text"].split()
for path in map(Path, paths):
    nb = nbformat.read(path, as_version=4)
    resources = {"metadata": {"path": str(path.parent)}}  # like Binder: a notebook runs in its folder
    client = NotebookClient(nb, kernel_name=kernel, timeout=180, store_widget_state=False, resources=resources)
    failure = None
    try:
        client.execute()
    except Exception as exc:  # CellExecutionError and friends: reported with the error outputs below
        failure = f"{type(exc).__name__}: {str(exc)[-2000:]}"
    errors = [
        f"{o.get('ename')}: {o.get('evalue')}"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]
    report[path.name] = {"failure": failure, "errors": errors, "cells": len(nb.cells)}
print(json.dumps(report))
'''


def _base_python() -> str:
    """The interpreter this test's virtualenv was made from (never the virtualenv itself)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def _copy_repo(dest: Path) -> None:
    """The files a clone has that Binder uses (no .venv, node_modules or caches)."""
    ignore = shutil.ignore_patterns(
        ".venv", "node_modules", "__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "build", "dist"
    )
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("workbench_magic", "notebooks", "binder"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    (dest / "tests" / "servers").mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(ROOT / "tests" / "servers" / name, dest / "tests" / "servers" / name)


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    output = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{output}"
    return proc


@pytest.mark.timeout(900)
def test_binder_environment_runs_every_notebook(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    venv = tmp_path / "venv"
    _copy_repo(repo)
    assert os.access(repo / "binder" / "postBuild", os.X_OK), "binder/postBuild must be executable"
    assert (repo / "binder" / "runtime.txt").read_text().strip() == "python-3.11"

    # Only the new virtualenv and the system's tools (node, npm) on PATH; nothing of this checkout's .venv.
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(ROOT))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "WORKBENCH"))}
    env |= {
        "PATH": os.pathsep.join([str(venv / "bin"), *path]),
        "VIRTUAL_ENV": str(venv),
        "JUPYTER_PATH": str(venv / "share" / "jupyter"),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "NPM_CONFIG_PREFIX": str(tmp_path / "npm-global"),
        # npm's cache answers without asking the registry whether its copies are current (the lock pins them)
        "NPM_CONFIG_PREFER_OFFLINE": "true",
    }

    _run([_base_python(), "-m", "venv", str(venv)], tmp_path, env, 300)
    python = str(venv / "bin" / "python")
    version = _run([python, "-c", "import sys; print(sys.version_info >= (3, 11))"], tmp_path, env, 60).stdout
    assert version.strip() == "True", "Binder's runtime.txt asks for Python 3.11; the package needs 3.11+"

    # Binder's two steps, from the repository root. --no-compile: pip would byte-compile every module
    # of every package (a third of the install's time); a kernel compiles the ones it imports.
    _run([python, "-m", "pip", "install", "-q", "--no-compile", "-r", "binder/requirements.txt"], repo, env, 600)
    _run([python, "-m", "pip", "install", "-q", "--no-compile", *JUPYTER], repo, env, 600)
    _run(["bash", "binder/postBuild"], repo, env, 600)
    if shutil.which("npm", path=env["PATH"]):
        node_modules = repo / "tests" / "servers" / "node_modules"
        for name in json.loads((repo / "tests" / "servers" / "package.json").read_text())["dependencies"]:
            assert (node_modules / name / "package.json").exists(), f"postBuild did not install {name}"
            if "/server-" in name:  # the reference servers run as `node .../dist/index.js`
                assert (node_modules / name / "dist" / "index.js").exists(), f"{name} has no dist/index.js"
        assert not (tmp_path / "npm-global" / "lib" / "node_modules").exists(), "postBuild installed globally"

    # A kernel of that virtualenv, and nothing else.
    _run([python, "-m", "ipykernel", "install", "--prefix", str(venv), "--name", KERNEL], tmp_path, env, 120)
    runner = tmp_path / "run_notebooks.py"
    runner.write_text(RUNNER)
    notebooks = sorted((repo / "notebooks").glob("*.ipynb"))
    assert notebooks
    out = _run([python, str(runner), KERNEL, *map(str, notebooks)], repo / "notebooks", env, 600).stdout
    report = json.loads(out.strip().splitlines()[-1])

    prefix, module = report.pop("probe")
    assert Path(prefix) == venv, f"the kernel ran in {prefix}, not in the Binder virtualenv"
    assert Path(module).is_relative_to(venv), f"workbench_magic came from {module}, not from the pip install"
    assert sorted(report) == [p.name for p in notebooks]
    problems = {name: r for name, r in report.items() if r["failure"] or r["errors"]}
    assert not problems, json.dumps(problems, indent=2)
    assert not list((repo / "notebooks").glob("workbench-config.json")), "a notebook left a config behind"
