"""Values as Python source laid out as `ruff format` lays them out (vocabulary/pysource.py): many
random JSON values, written in the shapes the exported tests use, must be left alone by ruff."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from workbench_magic.vocabulary.pysource import assert_equal, call, flat, literal, string, width

CHARS = "abcXYZ _-'\"\\\n\t\x1b/é中😀\u2028:.,{}[]#"


def value(rnd: random.Random, depth: int = 0) -> Any:
    def text() -> str:
        size = rnd.choice([0, 1, 3, 8, 20, 40, 90])
        return "".join(rnd.choice(CHARS) if rnd.random() < 0.3 else rnd.choice("abcdefgh ") for _ in range(size))

    roll = rnd.random()
    if depth > 3 or roll < 0.4:
        return rnd.choice(
            [text(), rnd.randint(-(10**6), 10**12), rnd.random() * 10 ** rnd.randint(-8, 20), True, False, None]
        )
    if roll < 0.7:
        return [value(rnd, depth + 1) for _ in range(rnd.randint(0, 6))]
    return {text()[:12] or "k": value(rnd, depth + 1) for _ in range(rnd.randint(0, 6))}


def test_ruff_leaves_the_layout_alone(tmp_path: Path) -> None:
    rnd = random.Random(2026)
    blocks = []
    for n in range(400):
        item = value(rnd)
        blocks.append(f"x{n} = " + literal(item, before=width(f"x{n} = ")))
        arguments = ["toolbox/server/tool", *([item] if n % 5 else [])]
        body = [assert_equal("result.structured_content", item), call("result", "wb.call", arguments)]
        blocks.append(f"def f{n}():\n" + "\n".join(body))
    blocks.append("IGNORE = " + literal(("$.a", "rows[*].b"), before=9))
    source = tmp_path / "laid_out.py"
    source.write_text("\n\n\n".join(blocks) + "\n", encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--diff", "--isolated", str(source)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout[:3000]
    compiled = compile(source.read_text(encoding="utf-8"), str(source), "exec")
    namespace: dict[str, Any] = {}
    exec(compiled, namespace)  # the source means the values it was written from
    rnd = random.Random(2026)
    for n in range(400):
        assert namespace[f"x{n}"] == value(rnd)


def test_strings_numbers_and_tuples_read_as_ruff_writes_them() -> None:
    assert string("plain") == '"plain"'
    assert string('say "hi"') == "'say \"hi\"'"  # fewer escapes with single quotes
    assert string('it\'s "x"') == "'it\\'s \"x\"'"  # one escape, not two
    assert string("a\nb\t\x1b\\") == '"a\\nb\\t\\x1b\\\\"'
    assert flat(6.5e16) == "6.5e16" and flat(1e-05) == "1e-05" and flat(True) == "True" and flat(None) == "None"
    assert flat(("only",)) == '("only",)' and flat(()) == "()" and flat({"a": [1, {}]}) == '{"a": [1, {}]}'
    assert width("中😀a") == 5
