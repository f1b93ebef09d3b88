"""The house's sizes (issue 55): a module a newcomer can read in one sitting, a function in one screen.

No module of the package is over 700 lines; no function is over 60 lines of code (its lines that are
not blank, not a comment and not a docstring). A feature that outgrows them is split into a room's
modules, a long function into named steps.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import workbench_magic

PACKAGE = Path(workbench_magic.__file__).parent
MODULE_LINES = 700
FUNCTION_CODE_LINES = 60
MODULES = sorted(PACKAGE.rglob("*.py"))


def docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers of every module, class and function docstring in `tree`."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def long_functions(source: str) -> list[tuple[str, int]]:
    """`(name, lines of code)` of each function in `source` over the limit."""
    tree = ast.parse(source)
    text = source.splitlines()
    docs = docstring_lines(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            code = sum(
                1
                for number in range(node.lineno, (node.end_lineno or node.lineno) + 1)
                if number not in docs and text[number - 1].strip() and not text[number - 1].strip().startswith("#")
            )
            if code > FUNCTION_CODE_LINES:
                found.append((node.name, code))
    return found


def test_the_counter_finds_a_long_function_and_passes_docstrings_and_comments() -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(FUNCTION_CODE_LINES))  # and its `def` line
    assert long_functions(f"def long():\n{body}\n") == [("long", FUNCTION_CODE_LINES + 1)]
    padded = '    """Doc.\n\n' + "    more\n" * 80 + '    """\n' + "    # why\n" * 80 + "\n" * 80 + "    return 1\n"
    assert long_functions(f"def short():\n{padded}") == []


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_is_at_most_700_lines_and_a_function_at_most_60_lines_of_code(module: Path) -> None:
    source = module.read_text(encoding="utf-8")
    assert source.count("\n") <= MODULE_LINES, f"{module.name}: {source.count(chr(10))} lines"
    assert long_functions(source) == []
