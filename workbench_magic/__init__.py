"""workbench_magic: MCP Workbench for notebooks.

Importing this package is cheap: the MCP SDK is imported only when a connection is made.
`Workbench` is the way in from Python (`%load_ext workbench_magic` adds the magics); the results,
views and errors it hands out are exported here too.

Example:
    ```python
    from workbench_magic import ToolError, Workbench

    wb = Workbench.shared()  # the kernel-wide instance the magics use
    box = wb.open("demo")
    result = wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 5})
    try:
        rows = result.raise_for_error().data["rows"]
    except ToolError as error:
        print(error)
    ```
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import (
    ArgumentError,
    CallTimeoutError,
    ConfigError,
    ConnectError,
    InvalidIdentifierError,
    MissingExtraError,
    ModelError,
    NotFoundError,
    RequestError,
    ServerNotFoundError,
    SkillDigestError,
    TaskRequiredError,
    ToolboxNotFoundError,
    ToolError,
    ToolNotFoundError,
    UrlElicitationRequired,
    UsageError,
    WorkbenchError,
)
from workbench_magic.vocabulary.version import __version__

if TYPE_CHECKING:
    from workbench_magic.api.apps.views import AppView
    from workbench_magic.api.batches.batch import Batch, CheckpointBatch
    from workbench_magic.api.tasks.handles import TaskHandle
    from workbench_magic.api.toolboxes.importing import known_clients
    from workbench_magic.api.workbench import OpenedToolbox, Workbench
    from workbench_magic.engine.rules.surface import Diff, Snapshot
    from workbench_magic.vocabulary.chat import ChatTurn
    from workbench_magic.vocabulary.context_cost import ContextCost
    from workbench_magic.vocabulary.doctor import DoctorReport
    from workbench_magic.vocabulary.evaluations import EvalReport
    from workbench_magic.vocabulary.events import (
        PromptsChanged,
        ResourcesChanged,
        StatusChanged,
        ToolboxClosed,
        ToolsChanged,
    )
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.listings import ToolInfo
    from workbench_magic.vocabulary.results import ToolResult
    from workbench_magic.vocabulary.schema_report import SchemaReport
    from workbench_magic.vocabulary.skills import Skill, SkillInfo


# A library's loggers stay quiet unless the application configures logging (servers' log
# messages reach `workbench_magic.server.<toolbox>.<server>`; without this, Python's last-resort
# handler would print their warnings into whatever cell runs).
logging.getLogger("workbench_magic").addHandler(logging.NullHandler())

_LAZY = {
    "Workbench": "workbench_magic.api.workbench",
    "known_clients": "workbench_magic.api.toolboxes.importing",
    "DoctorReport": "workbench_magic.vocabulary.doctor",
    "OpenedToolbox": "workbench_magic.api.workbench",
    "ToolIdentifier": "workbench_magic.vocabulary.identifiers",
    "ToolResult": "workbench_magic.vocabulary.results",
    "ToolInfo": "workbench_magic.vocabulary.listings",
    "AppView": "workbench_magic.api.apps.views",
    "Batch": "workbench_magic.api.batches.batch",
    "CheckpointBatch": "workbench_magic.api.batches.batch",
    "ChatTurn": "workbench_magic.vocabulary.chat",
    "ContextCost": "workbench_magic.vocabulary.context_cost",
    "EvalReport": "workbench_magic.vocabulary.evaluations",
    "SchemaReport": "workbench_magic.vocabulary.schema_report",
    "Skill": "workbench_magic.vocabulary.skills",
    "SkillInfo": "workbench_magic.vocabulary.skills",
    "Snapshot": "workbench_magic.engine.rules.surface",
    "Diff": "workbench_magic.engine.rules.surface",
    "TaskHandle": "workbench_magic.api.tasks.handles",
    "ToolsChanged": "workbench_magic.vocabulary.events",
    "ResourcesChanged": "workbench_magic.vocabulary.events",
    "PromptsChanged": "workbench_magic.vocabulary.events",
    "StatusChanged": "workbench_magic.vocabulary.events",
    "ToolboxClosed": "workbench_magic.vocabulary.events",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench_magic' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext workbench_magic`."""
    from workbench_magic.notebook.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext workbench_magic`: closes every connection."""
    from workbench_magic.notebook.magics import unload_ipython_extension as unload

    unload(ipython)


__all__ = [
    "AppView",
    "ArgumentError",
    "Batch",
    "CallTimeoutError",
    "ChatTurn",
    "CheckpointBatch",
    "ConfigError",
    "ConnectError",
    "ContextCost",
    "Diff",
    "DoctorReport",
    "EvalReport",
    "InvalidIdentifierError",
    "MissingExtraError",
    "ModelError",
    "NotFoundError",
    "OpenedToolbox",
    "PromptsChanged",
    "RequestError",
    "ResourcesChanged",
    "SchemaReport",
    "ServerNotFoundError",
    "Skill",
    "SkillDigestError",
    "SkillInfo",
    "Snapshot",
    "StatusChanged",
    "TaskHandle",
    "TaskRequiredError",
    "ToolError",
    "ToolIdentifier",
    "ToolInfo",
    "ToolNotFoundError",
    "ToolResult",
    "ToolboxClosed",
    "ToolboxNotFoundError",
    "ToolsChanged",
    "UrlElicitationRequired",
    "UsageError",
    "Workbench",
    "WorkbenchError",
    "__version__",
    "known_clients",
]
