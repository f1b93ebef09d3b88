"""What `wb.context_cost` returns: what a model reads before it can call one tool of a toolbox, three ways.

- `flat`: every tool of the toolbox listed, as `wb.toolset` hands them to a model;
- `proxy`: serve's proxy mode, the original MCP Workbench: the five meta-tools, then the
  `open_toolbox` answer;
- `dynamic`: serve's dynamic mode: the meta-tools, the `open_toolbox` answer, then every tool
  serve registers after the open.

A listed tool is what a client hands a model of it: `{"name", "description", "inputSchema"}`; a
listing is the UTF-8 JSON of the list (`listing_json`, compact), an answer the text the tool
returned. A row's bytes add up its parts; its tokens are counted by the method the table names
(`tokens_by`), an estimate when it says so. Plain data: pandas is imported by `to_pandas()` only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import UsageError, import_pandas
from workbench_magic.vocabulary.rendering import esc

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ESTIMATE", "MODES", "ContextCost", "ContextCostRow", "ContextPart", "listing_json", "model_tool"]

MODES = ("flat", "proxy", "dynamic")
ESTIMATE = "estimate: bytes / 4"
"""The label of the tokens when no provider counted them."""


def model_tool(name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
    """A tool as a client hands it to a model: its name, description and input schema."""
    return {"name": name, "description": description, "inputSchema": input_schema}


def listing_json(tools: Iterable[dict[str, Any]]) -> str:
    """A tool listing as the JSON a model reads: a list, compact, non-ASCII kept as it is."""
    return json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ContextPart:
    """One thing a model reads: a label (`"5 meta-tools"`, `"open_toolbox answer"`) and the text."""

    label: str
    text: str

    @property
    def bytes(self) -> int:
        """The text's UTF-8 length."""
        return len(self.text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class ContextCostRow:
    """One way of handing the toolbox to a model.

    Attributes:
        mode: `flat`, `proxy` or `dynamic`.
        parts: what the model reads, in order.
        tokens: the tokens of the parts (counted as the table's `tokens_by` says).
    """

    mode: str
    parts: tuple[ContextPart, ...]
    tokens: int

    @property
    def bytes(self) -> int:
        """The UTF-8 bytes of the parts."""
        return sum(p.bytes for p in self.parts)

    @property
    def what(self) -> str:
        """The parts' labels: `5 meta-tools + open_toolbox answer`."""
        return " + ".join(p.label for p in self.parts)


@dataclass(frozen=True)
class ContextCost:
    """What a model reads before it can call one tool of a toolbox: flat, in serve's proxy mode, in its dynamic mode.

    `cost["proxy"]` is a row (`.bytes`, `.tokens`, `.parts`); `ratio("proxy")` its bytes over the
    flat listing's (below 1: proxy mode saves context). Shows as a table (HTML or text).

    Proxy mode's `open_toolbox` answer lists each tool with more than a flat listing does (its
    toolbox and server, title, output schema and annotations, as indented JSON), so reaching a tool
    of one toolbox can cost more than its flat listing; what proxy mode saves is every toolbox a
    model does not open: until it opens one, it reads only the meta-tools (`meta_tools`), where a
    client connected to every server directly lists every tool of every toolbox.

    Attributes:
        toolbox: the toolbox measured.
        rows: `flat`, `proxy`, `dynamic`, in that order.
        tokens_by: how the tokens were counted (`"estimate: bytes / 4"`, or the provider's count and model).
        estimated: True when the tokens are the estimate, not a provider's count.

    Example:
        ```python
        cost = wb.context_cost("demo")
        cost["proxy"].bytes, cost["flat"].bytes
        cost.ratio("proxy")  # below 1: the original MCP Workbench's proxy mode saves context
        cost.to_pandas()
        ```
    """

    toolbox: str
    rows: tuple[ContextCostRow, ...]
    tokens_by: str = ESTIMATE
    estimated: bool = True

    def __getitem__(self, mode: str) -> ContextCostRow:
        for row in self.rows:
            if row.mode == mode:
                return row
        raise UsageError(f"No context cost row {mode!r}: the rows are {', '.join(r.mode for r in self.rows)}")

    def ratio(self, mode: str) -> float:
        """The row's bytes over the flat listing's (1.0 when the toolbox lists nothing).

        Args:
            mode: `flat`, `proxy` or `dynamic`.

        Returns:
            `self[mode].bytes / self["flat"].bytes`.
        """
        flat = self["flat"].bytes
        return self[mode].bytes / flat if flat else 1.0

    @property
    def saving(self) -> float:
        """The share of the flat listing's bytes that proxy mode saves (negative: proxy mode reads more)."""
        return 1.0 - self.ratio("proxy")

    @property
    def meta_tools(self) -> ContextPart:
        """What serve's proxy mode shows a model before any toolbox is open: the meta-tools alone."""
        return self["proxy"].parts[0]

    def summary(self) -> str:
        """One line: proxy over flat, what that saves (or costs), and what a model reads before any open."""
        return "; ".join(self._findings())

    def _findings(self) -> tuple[str, str]:
        ratio = self.ratio("proxy")
        if ratio <= 1.0:
            effect = f"saves {self.saving:.0%} of the flat listing"
        else:
            effect = f"reads {-self.saving:.0%} more than the flat listing"
        meta, flat = self.meta_tools, self["flat"].bytes
        share = f" ({meta.bytes / flat:.0%} of flat)" if flat else ""
        return (
            f"proxy/flat = {ratio:.2f}: serve's proxy mode (the original MCP Workbench) {effect}",
            f"until a toolbox is opened, a model reads the {meta.label} alone: {meta.bytes:,} bytes{share}",
        )

    # ---- pandas -----------------------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """One line per mode (the index): `bytes`, `tokens`, `vs_flat` (bytes over flat's), `what`.

        `DataFrame.attrs["tokens_by"]` says how the tokens were counted. Needs the `pandas` extra.

        Returns:
            The table.

        Raises:
            MissingExtraError: pandas is not installed.
        """
        pd = import_pandas()

        frame = pd.DataFrame.from_records(
            [
                {"mode": r.mode, "bytes": r.bytes, "tokens": r.tokens, "vs_flat": self.ratio(r.mode), "what": r.what}
                for r in self.rows
            ],
            index="mode",
        )
        frame.attrs["tokens_by"] = self.tokens_by
        return frame

    # ---- reprs ------------------------------------------------------------------------------
    def _title(self) -> str:
        return f"Context cost of toolbox '{self.toolbox}': what a model reads before it can call one tool"

    def __repr__(self) -> str:
        head = ("mode", "bytes", "tokens", "vs flat", "what")
        cells = [(r.mode, f"{r.bytes:,}", f"{r.tokens:,}", f"{self.ratio(r.mode):.0%}", r.what) for r in self.rows]
        widths = [max(len(row[i]) for row in [head, *cells]) for i in range(4)]
        lines = [self._title()]
        for row in [head, *cells]:
            first = f"{row[0]:<{widths[0]}}"
            numbers = "  ".join(f"{row[i]:>{widths[i]}}" for i in range(1, 4))
            lines.append(f"  {first}  {numbers}  {row[4]}".rstrip())
        lines += [f"tokens: {self.tokens_by}", *self._findings()]
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if not cycle else "ContextCost(...)")

    def _repr_html_(self) -> str:
        right = "style='text-align:right'"
        body = "".join(
            f"<tr><td><b>{esc(r.mode)}</b></td><td {right}>{r.bytes:,}</td><td {right}>{r.tokens:,}</td>"
            f"<td {right}>{self.ratio(r.mode):.0%}</td><td>{esc(r.what)}</td></tr>"
            for r in self.rows
        )
        return (
            f"<div><b>{esc(self._title())}</b>"
            f"<table><thead><tr><th>mode</th><th>bytes</th><th>tokens ({esc(self.tokens_by)})</th>"
            f"<th>vs flat</th><th>what the model reads</th></tr></thead><tbody>{body}</tbody></table>"
            f"<div>{esc(self.summary())}</div></div>"
        )
