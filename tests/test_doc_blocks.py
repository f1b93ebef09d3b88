"""Every Python block of the README and of the documentation runs (issue 53: a documented cell that
fails is the first bug a reader finds).

Each page with fenced ```python or ```ipython blocks (README.md, docs/**/*.md) runs its blocks in
order, one cell each, in a fresh IPython kernel of its own, in an empty temporary working folder
(so the config is the embedded `demo` toolbox, unless the page writes one). Before the page's first
block the kernel runs `PREAMBLE`, what every page assumes: the extension is loaded and `wb` is the
workbench the magics use. No model key, no network. A failing block fails its page's test, naming
the page and the block's line.

Three markers, HTML comments right above a fence (GitHub and the site show none; inside a list item
a blank line goes between the two, else Python-Markdown puts the block in a paragraph;
CONTRIBUTING.md, "Code blocks in the docs"):

- `<!-- not-run: WHY -->`: the block does not run here (a model key, a remote server, ...);
- `<!-- raises: ErrorName -->`: the block's last statement raises that error, as the page says;
- `<!-- write: PATH -->`: the block (a config file the page shows, any language) is written to
  PATH in the working folder at that point of the page, as the reader is told to.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, kernel_manager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

#: The pages whose blocks run: the README and every page of the site.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: What every page assumes before its first block.
PREAMBLE = "%load_ext workbench_magic\nfrom workbench_magic import Workbench\n\nwb = Workbench.shared()"
#: The languages of the blocks that run.
RUN = {"python", "ipython", "py"}
#: A marker: `<!-- KIND: TEXT -->` on the line before a fence (docs/hooks.py has markers of its own).
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>not-run|raises|write)\s*:(?P<text>.*?)-->\s*$")
#: What looks like a marker of ours, misspelt or not (`<!-- not run -->`, `<!-- skip: ... -->`).
LIKE_A_MARKER = re.compile(r"<!--\s*(not|no|skip|raise|write)", re.IGNORECASE)
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
#: Seconds a block may take (generous: the suite runs on a loaded 2-core machine), and a kernel's start.
BLOCK_TIMEOUT = 300
START_TIMEOUT = 300
#: Variables of the machine that would change what a block does (a key, a config, a model).
HIDDEN = re.compile(r"^(WORKBENCH_CONFIG|WORKBENCH_MODEL|.*_API_KEY|.*_BASE_URL)$")


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, its code (dedented), where it starts, and its marker."""

    page: Path
    line: int  # the fence's line, 1-based
    lang: str
    code: str
    kind: str | None = None  # the marker's kind (`MARKER`), or None
    text: str = ""  # what the marker says: why not, the error, the path

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def cell(self) -> str | None:
        """The code the kernel runs for this block (None: nothing)."""
        if self.kind == "write":  # its folder made too (a project's .cursor/mcp.json)
            path = self.text.strip()
            made = f"_p.Path({path!r}).parent.mkdir(parents=True, exist_ok=True)"
            return f"import pathlib as _p\n{made}\n_ = _p.Path({path!r}).write_text({self.code + chr(10)!r})"
        if self.lang in RUN and self.kind != "not-run":
            return self.code
        return None


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, in order (indented ones, in lists, too)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, lang = opening["indent"], opening["fence"], opening["lang"].lower()
        close = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), len(lines))
        body = [line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[i + 1 : end]]
        above = i - 2 if i > 1 and not lines[i - 1].strip() else i - 1  # one blank line between them at most
        marker = MARKER.match(lines[above]) if above >= 0 else None
        kind, text = (marker["kind"], marker["text"].strip()) if marker else (None, "")
        found.append(Block(page, i + 1, lang, "\n".join(body), kind, text))
        i = end + 1
    return found


def runnable(page: Path) -> list[Block]:
    """The blocks of a page the kernel runs, in order (the files it writes among them)."""
    return [b for b in blocks(page) if b.cell() is not None]


def markers(page: Path) -> list[tuple[int, str | None, str]]:
    """Each marker of a page (and what looks like one): its line, its kind (None: misspelt) and its text."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[tuple[int, str | None, str]] = []
    for n, line in enumerate(lines, 1):
        if m := MARKER.match(line):
            found.append((n, m["kind"], m["text"].strip()))
        elif LIKE_A_MARKER.search(line):
            found.append((n, None, line.strip()))
    return found


RUNNING = [page for page in PAGES if any(b.lang in RUN for b in runnable(page))]


def test_the_readme_and_every_how_to_page_with_python_run() -> None:
    how_to = [p for p in sorted((ROOT / "docs" / "how-to").glob("*.md")) if any(b.lang in RUN for b in blocks(p))]
    assert ROOT / "README.md" in RUNNING
    assert how_to and all(page in RUNNING for page in how_to)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marker_says_what_it_means_right_above_its_block(page: Path) -> None:
    fences = {b.line: b for b in blocks(page)}
    lines = page.read_text(encoding="utf-8").splitlines()
    for line, kind, text in markers(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        forms = "<!-- not-run: WHY -->, <!-- raises: ErrorName --> or <!-- write: PATH -->"
        assert kind is not None, f"{where}: a marker reads {forms}"
        assert text, f"{where}: say {'why' if kind == 'not-run' else 'what'} (<!-- not-run: needs a model key -->)"
        below = line + 1 if line < len(lines) and lines[line].strip() else line + 2  # past one blank line
        block = fences.get(below)
        assert block is not None, f"{where}: a marker goes right above a fence (one blank line between them at most)"
        if kind != "write":
            assert block.lang in RUN, f"{where}: {kind} marks a ```python block"
        if kind == "raises":
            assert re.fullmatch(r"\w+", text), f"{where}: raises names the error's class"


def async_kernel_manager() -> AsyncKernelManager:
    """conftest's `kernel_manager` (IPC sockets in this process's folder), asynchronous: nbclient
    times a cell out only with one (given a blocking manager, a block that hangs is never stopped)."""
    return AsyncKernelManager(kernel_name="python3", transport="ipc", ip=kernel_manager().ip)


def kernel_env(home: Path) -> dict[str, str]:
    """The kernel's environment: this one without keys or configs, a home of its own, and this
    virtualenv's executables (`python`, `workbench-magic`) first on the PATH."""
    env = {k: v for k, v in os.environ.items() if not HIDDEN.match(k)}
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def outcome(block: Block, cell: nbformat.NotebookNode) -> str | None:
    """What went wrong in a block's cell (one line), or None."""
    error = next((o for o in cell.outputs if o.output_type == "error"), None)
    if block.kind == "raises":
        if error is None:
            return f"{block.where}: raised nothing, the page says {block.text}"
        if error.ename != block.text:
            return f"{block.where}: {error.ename}: {error.evalue} (the page says {block.text})"
        return None
    return None if error is None else f"{block.where}: {error.ename}: {error.evalue}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", RUNNING, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_blocks_of_a_page_run(page: Path, tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    todo = runnable(page)
    cells = [nbformat.v4.new_code_cell(PREAMBLE), *(nbformat.v4.new_code_cell(b.cell()) for b in todo)]
    nb = nbformat.v4.new_notebook(cells=cells)
    client = NotebookClient(
        nb,
        km=async_kernel_manager(),
        timeout=BLOCK_TIMEOUT,
        startup_timeout=START_TIMEOUT,
        allow_errors=True,  # every block runs: the report names each failure (the first is the cause)
        store_widget_state=False,
        resources={"metadata": {"path": str(work)}},
    )
    try:
        client.execute(env=kernel_env(home))
    except (CellTimeoutError, DeadKernelError) as exc:  # the block running then: the last one started
        started = [i for i, c in enumerate(nb.cells) if c.get("execution_count") is not None]
        where = todo[started[-1] - 1].where if started and started[-1] else f"{page.relative_to(ROOT)}: its preamble"
        raise AssertionError(f"{where}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    preamble, *ran = nb.cells
    assert not [o for o in preamble.outputs if o.output_type == "error"], preamble.outputs
    failures = [problem for block, cell in zip(todo, ran, strict=True) if (problem := outcome(block, cell))]
    assert failures == [], "\n".join(failures)
