"""The demo's bundled tables: CSV files read with :mod:`csv` into a `Table` (typed columns).

Shared by the datasets server and its chart app.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Literal

from mcp.server.mcpserver.exceptions import ToolError

Cell = str | int | float | None
"""One value of a table: a number, a string, or ``None`` for an empty CSV field."""

ColumnType = Literal["int", "float", "str"]

DESCRIPTIONS: dict[str, str] = {
    "penguins": (
        "Palmer-style penguin measurements: species, island, bill and flipper sizes, "
        "body mass, sex and study year (a few values are missing)"
    ),
    "weather": ("Daily weather in Oslo, Lisbon and Cairo for 20 days of March 2024: temperature and precipitation"),
    "sales": "Monthly unit sales and revenue of three products in four regions, January to April 2024",
}


class DatasetError(ToolError, ValueError):
    """A bad dataset or column name, or an impossible filter.

    It subclasses the SDK's ``ToolError`` so that the message reaches the client in the
    ``is_error`` result (the SDK hides the text of any other exception), and ``ValueError``
    because that is what it is.
    """


# --------------------------------------------------------------------------- data loading


class Table:
    """One loaded dataset: column names, inferred column types and typed rows."""

    def __init__(self, name: str, text: str) -> None:
        """Parse CSV ``text``; numeric columns become ``int``/``float``, empty fields ``None``."""
        reader = csv.reader(io.StringIO(text))
        header = next(reader)
        raw = [row for row in reader if row]
        self.name = name
        self.text = text
        self.columns: list[str] = header
        self.types: dict[str, ColumnType] = {}
        converters: list[Callable[[str], Cell]] = []
        for i, col in enumerate(header):
            values = [row[i] for row in raw if row[i] != ""]
            kind = _infer_type(values)
            self.types[col] = kind
            converters.append(int if kind == "int" else float if kind == "float" else str)
        self.rows: list[dict[str, Cell]] = [
            {
                col: (conv(value) if value != "" else None)
                for col, conv, value in zip(header, converters, row, strict=True)
            }
            for row in raw
        ]

    def check_column(self, column: str) -> str:
        """Return ``column`` if the table has it, else raise a `DatasetError` listing the columns."""
        if column not in self.types:
            raise DatasetError(
                f"Unknown column {column!r} in dataset {self.name!r}. Columns: {', '.join(self.columns)}"
            )
        return column

    def is_numeric(self, column: str) -> bool:
        """Whether ``column`` holds numbers."""
        return self.types[column] != "str"


def _infer_type(values: list[str]) -> ColumnType:
    """The narrowest of int, float, str that every non-empty value parses as."""
    for kind, conv in (("int", int), ("float", float)):
        try:
            for value in values:
                conv(value)
        except ValueError:
            continue
        return "int" if kind == "int" else "float"
    return "str"


@cache
def load(name: str) -> Table:
    """Load the bundled dataset ``name`` (cached); unknown names raise `DatasetError`."""
    if name not in DESCRIPTIONS:
        raise DatasetError(f"Unknown dataset {name!r}. Available datasets: {', '.join(sorted(DESCRIPTIONS))}")
    text = resources.files("workbench_magic.demo").joinpath("data", f"{name}.csv").read_text(encoding="utf-8")
    return Table(name, text)
