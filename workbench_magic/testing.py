"""Helpers of the regression tests `wb.export_tests(path)` writes (pytest files that any person
may keep and edit): `schema_breaks(accepted, now)` lists what a tool's input schema no longer
accepts, naming each argument; `without(value, paths)` leaves the parts named by JSON paths out of
a value before it is compared.
"""

from __future__ import annotations

from workbench_magic.engine.rules.surface import schema_breaks
from workbench_magic.vocabulary.jsonpath import without

__all__ = ["schema_breaks", "without"]
