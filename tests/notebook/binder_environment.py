"""The Binder environment, simulated: a fresh virtualenv built only from binder/, once per test run.

Binder (repo2docker) starts from an image with Python and JupyterLab, runs
`pip install -r binder/requirements.txt` from the repository root, then `binder/postBuild`. Here:
a new virtualenv from the base interpreter (no system site-packages, nothing from this checkout's
.venv), a copy of the files a clone would have, the same two steps, and ipykernel's kernelspec.
tests/notebook/test_binder.py checks the build; tests/notebook/test_notebooks.py runs every
notebook in it, as Binder would: from its folder in the copy, on a kernel of that virtualenv.

The build takes a minute or more, so it is made once per test run and shared by the pytest-xdist
workers: the first process that needs it builds it under a lock, the others wait for it, and a
build that failed fails each test that needs it with the same message (without building again).
`make test` starts it before anything else (`python tests/notebook/binder_environment.py FOLDER`,
`WORKBENCH_TEST_BINDER=FOLDER` for the tests): it runs beside the set-up, not in a worker's place.
Each process runs its kernels through a zygote of its own (tests/servers/zygote.py) that the
virtualenv's python runs: a kernel of the virtualenv, its imports made once.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[2]
#: What Binder's image provides besides our requirements: Jupyter (here only what runs notebooks).
JUPYTER = ["ipykernel", "nbclient", "nbformat"]
#: The kernelspec `ipykernel install` gives the virtualenv.
KERNEL = "binder"


@dataclass(frozen=True)
class Binder:
    """A built Binder environment: the clone's copy, its virtualenv, the environment a process gets there."""

    root: Path
    repo: Path
    venv: Path
    env: dict[str, str]

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def notebooks(self) -> Path:
        return self.repo / "notebooks"

    def kernel_manager(self, kernel_dirs: list[str] | None = None) -> KernelManager:
        """A kernel manager for the virtualenv's kernelspec (`kernel_dirs`: where to look for it
        instead of the virtualenv's own share/jupyter/kernels)."""
        from conftest import kernel_manager
        from jupyter_client.kernelspec import KernelSpecManager

        dirs = kernel_dirs or [str(self.venv / "share" / "jupyter" / "kernels")]
        return kernel_manager(KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=dirs))


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run `cmd`; its output, or an AssertionError with the end of what it wrote."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    output = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{output}"
    return proc


def shared_folder(basetemp: Path) -> Path:
    """Where this test run keeps the build: the folder `WORKBENCH_TEST_BINDER` names (`make test`
    starts the build there at once, beside its own set-up, and empties it first), else beside the
    xdist workers' temporary folders, which share their parent (one process: its own temporary
    folder)."""
    given = os.environ.get("WORKBENCH_TEST_BINDER")
    if given:
        return Path(given).resolve()
    return (basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp) / "binder"


def binder(folder: Path) -> Binder:
    """The Binder environment in `folder`, built there first if no process has yet.

    Raises AssertionError if the build failed (here or in another process).
    """
    folder.mkdir(parents=True, exist_ok=True)
    ready, failed = folder / "ready.json", folder / "failed.txt"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if this process dies
        if not ready.exists() and not failed.exists():
            try:
                built = _build(folder)
            except BaseException as exc:
                failed.write_text("".join(traceback.format_exception_only(exc)).strip())
                raise
            ready.write_text(json.dumps({"env": built.env}))
    if failed.exists():
        raise AssertionError(f"the Binder build failed (in the first test that needed it): {failed.read_text()}")
    env = json.loads(ready.read_text())["env"]
    return Binder(root=folder, repo=folder / "repo", venv=folder / "venv", env=env)


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
    (dest / "tests" / "servers" / "extensions").mkdir(parents=True)
    for name in ("package.json", "package-lock.json", "tasks_server.py", "extensions/tasks.txt"):
        shutil.copy2(ROOT / "tests" / "servers" / name, dest / "tests" / "servers" / name)


def _build(folder: Path) -> Binder:
    repo, venv = folder / "repo", folder / "venv"
    shutil.rmtree(repo, ignore_errors=True)  # a process that died midway left half a build
    shutil.rmtree(venv, ignore_errors=True)
    _copy_repo(repo)
    # Only the new virtualenv and the system's tools (node, npm) on PATH; nothing of this checkout's .venv.
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(ROOT))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "WORKBENCH"))}
    env |= {
        "PATH": os.pathsep.join([str(venv / "bin"), *path]),
        "VIRTUAL_ENV": str(venv),
        "JUPYTER_PATH": str(venv / "share" / "jupyter"),
        "JUPYTER_DATA_DIR": str(folder / "jupyter-data"),
        "JUPYTER_CONFIG_DIR": str(folder / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(folder / "jupyter-runtime"),
        "IPYTHONDIR": str(folder / "ipython"),
        "NPM_CONFIG_PREFIX": str(folder / "npm-global"),
        # npm's cache answers without asking the registry whether its copies are current (the lock pins them)
        "NPM_CONFIG_PREFER_OFFLINE": "true",
    }
    run([_base_python(), "-m", "venv", str(venv)], folder, env, 300)
    python = str(venv / "bin" / "python")
    version = run([python, "-c", "import sys; print(sys.version_info >= (3, 11))"], folder, env, 60).stdout
    assert version.strip() == "True", "Binder's runtime.txt asks for Python 3.11; the package needs 3.11+"
    # Binder's two steps, from the repository root. --no-compile: pip would byte-compile every module
    # of every package (a third of the install's time); a kernel compiles the ones it imports.
    run([python, "-m", "pip", "install", "-q", "--no-compile", "-r", "binder/requirements.txt"], repo, env, 600)
    run([python, "-m", "pip", "install", "-q", "--no-compile", *JUPYTER], repo, env, 600)
    run(["bash", "binder/postBuild"], repo, env, 600)
    # A kernel of that virtualenv, and nothing else.
    run([python, "-m", "ipykernel", "install", "--prefix", str(venv), "--name", KERNEL], folder, env, 120)
    return Binder(root=folder, repo=repo, venv=venv, env=env)


def relocate(value: Any, moves: dict[str, str]) -> Any:
    """`value` (JSON: strings, lists, objects) with each path of `moves` in its strings replaced,
    the longer paths first."""
    if isinstance(value, str):
        for old in sorted(moves, key=len, reverse=True):
            value = value.replace(old, moves[old])
        return value
    if isinstance(value, list):
        return [relocate(v, moves) for v in value]
    if isinstance(value, dict):
        return type(value)({k: relocate(v, moves) for k, v in value.items()})
    return value


if __name__ == "__main__":  # `python tests/notebook/binder_environment.py FOLDER`: build (stdlib only: no .venv needed)
    binder(Path(sys.argv[1]).resolve())
