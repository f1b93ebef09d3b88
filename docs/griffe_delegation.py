"""A griffe extension for the reference docs: `Workbench`'s delegated names (api/delegation.py).

`name = delegate(Collaborator.name, to="_slot")` (or `staticmethod(Collaborator.name)`) in a class body is,
to static analysis, an attribute
without a docstring; at run time it is the collaborator's method. This extension makes each such
attribute an alias of the collaborator's member, so the reference shows it under `Workbench` with its
signature and docstring (mkdocs.yml lists it under mkdocstrings' `extensions`).
"""

from __future__ import annotations

import ast
from typing import Any

import griffe


class Delegation(griffe.Extension):
    """Each `delegate(...)` / `delegate_property(...)` attribute of a class becomes an alias of its target."""

    def on_class_members(self, *, node: ast.AST | griffe.ObjectNode, cls: griffe.Class, **kwargs: Any) -> None:
        if not isinstance(node, ast.ClassDef):
            return
        for statement in node.body:
            target = _delegated(statement)
            if target is None:
                continue
            name, collaborator, member = target
            module = cls.module
            resolved = module.members.get(collaborator)
            path = resolved.target_path if isinstance(resolved, griffe.Alias) else f"{module.path}.{collaborator}"
            cls.set_member(name, griffe.Alias(name, f"{path}.{member}", parent=cls))


def _delegated(statement: ast.stmt) -> tuple[str, str, str] | None:
    """`(name, Collaborator, member)` of `name = delegate(Collaborator.member, to=...)` (or
    `delegate_property`, `staticmethod`), else None."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    (name,), call = statement.targets, statement.value
    if not (isinstance(name, ast.Name) and isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    if call.func.id not in ("delegate", "delegate_property", "staticmethod") or not call.args:
        return None
    source = call.args[0]
    if not (isinstance(source, ast.Attribute) and isinstance(source.value, ast.Name)):
        return None
    return name.id, source.value.id, source.attr
