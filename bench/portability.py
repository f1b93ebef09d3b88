"""Section 12: `wb.check_schemas` over 1,000 tools (issue 39): under 1 s.

One server, our test server with ``--many 1000`` (its ~30 own tools plus ``tool_0000`` ..
``tool_0999``) over stdio, opened once. Then, interleaved (rotating order, after one warm-up each):

- **`wb.check_schemas("big")`**, the three providers: the tool selection, every rule, and
  pydantic-ai's transformers where they decide (OpenAI's strict-compatibility, Gemini's OpenAPI form).
  Goal: < 1 s.
- (info) the rules alone (`judge` per tool and provider on the same schemas: no workbench, no
  pydantic-ai), to show what the cross-checks add.

The first call of the process (pydantic-ai's and the OpenAI SDK's imports, the transformers' first
use) is a side figure, `cold_s`.
"""

from __future__ import annotations

import time
from typing import Any

from _common import alternated, children, new_children, row, test_server

SECTION = "12. Schema portability: check_schemas over 1,000 tools"
MANY = 1000


def schemas(quick: bool) -> dict[str, Any]:
    """The rows: check_schemas (goal < 1 s) and the rules alone."""
    from workbench_magic import Workbench
    from workbench_magic.engine.rules.portability import judge
    from workbench_magic.vocabulary.portability import PROVIDERS

    reps = 3 if quick else 10
    before = children(recursive=False)
    wb = Workbench({"toolboxes": {"big": {"mcpServers": {"s": test_server("--many", str(MANY))}}}})
    try:
        wb.open("big")
        new_children(before)
        schemas = [(str(t.identifier), t.input_schema) for t in wb.tools("big")]

        start = time.perf_counter()
        report = wb.check_schemas("big")
        cold = time.perf_counter() - start

        def rules() -> None:
            for _, schema in schemas:
                for provider in PROVIDERS:
                    judge(schema, provider)

        methods = {"check": lambda: wb.check_schemas("big"), "rules": rules}
        for fn in methods.values():  # warm-up
            fn()
        samples = alternated(methods, reps)
        counts = {p: report.counts(p) for p in report.providers}
    finally:
        wb.close_all()
    tools = len(report)
    return {
        "rows": [
            row(
                SECTION,
                "schemas/check",
                f"wb.check_schemas over {tools} tools, 3 providers (rules + pydantic-ai's transformers)",
                "s",
                samples["check"],
                goals=[{"kind": "abs_max", "value": 1.0, "text": "< 1 s"}],
                extra={"tools": tools, "cold_s": cold, "counts": counts},
            ),
            row(
                SECTION,
                "schemas/rules",
                f"(info) the rules alone: judge() per tool and provider, {tools} tools",
                "s",
                samples["rules"],
                baseline="schemas/check",
            ),
        ],
        "meta": {"tools": tools, "repetitions": reps},
    }
