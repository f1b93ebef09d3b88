"""`SchemaReport`: whether each provider accepts each tool's input schema, as a table (text, HTML,
pandas) of tool by provider; portability.py makes its verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import import_pandas
from workbench_magic.vocabulary.provider_rules import (
    ACCEPTED,
    ANTHROPIC_MAX_OPTIONAL,
    ANTHROPIC_MAX_UNIONS,
    MODES,
    PROVIDERS,
    REJECTED,
    REWRITTEN,
)
from workbench_magic.vocabulary.rendering import esc

if TYPE_CHECKING:
    import pandas as pd

    from workbench_magic.vocabulary.portability import Verdict

__all__ = ["SchemaReport"]

_MARK = {ACCEPTED: "accepted", REWRITTEN: "rewritten", REJECTED: "REJECTED"}
_STYLE = {
    ACCEPTED: "background:#e8f5e9;color:#1b5e20",
    REWRITTEN: "background:#fff8e1;color:#8d6e00",
    REJECTED: "background:#fdecee;color:#b00020",
}


class SchemaReport:
    """Whether each provider accepts each tool's input schema: a table of tool by provider.

    Each cell is a `Verdict`: accepted as it is, accepted after lossless rewrites (named), or
    rejected with every reason (each naming the argument and the provider's rule; the rule's
    `source` is the documentation that states it). `wb.check_schemas(target)` makes one.

    Args:
        verdicts: per tool (its identifier), the verdict of each provider.
        providers: the providers judged, in column order.
        target: what was checked (a toolbox, ``toolbox/server``, a list of tools).

    Example:
        ```python
        report = wb.check_schemas("demo")
        report.rejected  # [(identifier, provider, reasons), ...]
        report["demo/datasets/query"]["gemini"].rewrites
        report.to_pandas().pivot(index="tool", columns="provider", values="status")
        ```
    """

    def __init__(
        self,
        verdicts: Iterable[tuple[str, Mapping[str, Verdict]]],
        providers: Sequence[str] = PROVIDERS,
        *,
        target: str = "",
    ) -> None:
        self.providers: tuple[str, ...] = tuple(providers)
        self.target = target
        self._rows: dict[str, dict[str, Verdict]] = {tool: dict(cells) for tool, cells in verdicts}

    # ---- reading ----
    @property
    def tools(self) -> list[str]:
        """The tools checked (identifiers), in the order given."""
        return list(self._rows)

    def __getitem__(self, tool: str) -> dict[str, Verdict]:
        """The verdicts of one tool, by provider (a copy)."""
        return dict(self._rows[tool])

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    @property
    def rejected(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """Every rejection: ``(identifier, provider, reasons)``, by tool then provider."""
        return [
            (tool, p, cells[p].reasons)
            for tool, cells in self._rows.items()
            for p in self.providers
            if p in cells and cells[p].status == REJECTED
        ]

    @property
    def rewritten(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """Every cell accepted after lossless rewrites: ``(identifier, provider, rewrites)``."""
        return [
            (tool, p, cells[p].rewrites)
            for tool, cells in self._rows.items()
            for p in self.providers
            if p in cells and cells[p].status == REWRITTEN
        ]

    def counts(self, provider: str) -> dict[str, int]:
        """How many tools `provider` accepted, accepted rewritten, and rejected."""
        counts = {ACCEPTED: 0, REWRITTEN: 0, REJECTED: 0}
        for cells in self._rows.values():
            if provider in cells:
                counts[cells[provider].status] += 1
        return counts

    @property
    def notes(self) -> list[str]:
        """What holds for the tools together rather than each (Anthropic's limits per request)."""
        if "anthropic" not in self.providers:
            return []
        strict = [cells["anthropic"] for cells in self._rows.values() if "anthropic" in cells]
        strict = [v for v in strict if v.ok]
        notes = []
        if len(strict) > 20:
            notes.append(f"anthropic: {len(strict)} tools could be strict; a request takes at most 20 strict tools")
        optional = sum(v.optional for v in strict)
        if optional > ANTHROPIC_MAX_OPTIONAL:
            notes.append(
                f"anthropic: {optional} optional parameters across those tools; a request takes at most "
                f"{ANTHROPIC_MAX_OPTIONAL} in its strict tools"
            )
        unions = sum(v.unions for v in strict)
        if unions > ANTHROPIC_MAX_UNIONS:
            notes.append(
                f"anthropic: {unions} parameters with anyOf or a type list across those tools; a request takes "
                f"at most {ANTHROPIC_MAX_UNIONS}"
            )
        return notes

    def to_pandas(self) -> pd.DataFrame:
        """One row per tool and provider: ``tool``, ``provider``, ``status``, ``rewrites``, ``reasons``.

        Needs the `pandas` extra. `.pivot(index="tool", columns="provider", values="status")` gives
        the table of tool by provider.

        Returns:
            A DataFrame (the lists of rewrites and reasons joined with ``"; "``).

        Raises:
            MissingExtraError: pandas is not installed.
        """
        pd = import_pandas("SchemaReport.to_pandas()")
        rows = [
            {
                "tool": tool,
                "provider": p,
                "status": cells[p].status,
                "rewrites": "; ".join(cells[p].rewrites),
                "reasons": "; ".join(cells[p].reasons),
            }
            for tool, cells in self._rows.items()
            for p in self.providers
            if p in cells
        ]
        return pd.DataFrame(rows, columns=["tool", "provider", "status", "rewrites", "reasons"])

    # ---- rendering ----
    def _summary(self) -> str:
        of = f" of {self.target}" if self.target else ""
        n = len(self._rows)
        rejected = ", ".join(f"{p} {self.counts(p)[REJECTED]}" for p in self.providers)
        return f"Schema report{of}: {n} tool{'' if n == 1 else 's'}; rejected by {rejected}"

    def __repr__(self) -> str:
        lines = [self._summary()]
        if not self._rows:
            return lines[0]
        width = max(len("tool"), *(len(t) for t in self._rows))
        cols = [max(len(p), 9) for p in self.providers]
        head = "  ".join(f"{p:<{w}}" for p, w in zip(self.providers, cols, strict=True))
        lines.append(f"{'tool':<{width}}  {head}".rstrip())
        for tool, cells in self._rows.items():
            marks = [_MARK[cells[p].status] if p in cells else "-" for p in self.providers]
            shown = "  ".join(f"{mark:<{w}}" for mark, w in zip(marks, cols, strict=True))
            lines.append(f"{tool:<{width}}  {shown}".rstrip())
        if self.rejected:
            lines.append("Rejected:")
            for tool, provider, reasons in self.rejected:
                lines.append(f"  {tool} [{provider}]")
                lines.extend(f"    - {reason}" for reason in reasons)
        if self.rewritten:
            lines.append("Rewritten (lossless):")
            for tool, provider, rewrites in self.rewritten:
                lines.append(f"  {tool} [{provider}]: {'; '.join(rewrites)}")
        lines.extend(f"Note: {note}" for note in self.notes)
        return "\n".join(lines)

    __str__ = __repr__

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if not cycle else "SchemaReport(...)")

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{esc(p)}<br><small>{esc(MODES.get(p, ''))}</small></th>" for p in self.providers)
        rows = []
        for tool, cells in self._rows.items():
            tds = "".join(_html_cell(cells.get(p)) for p in self.providers)
            rows.append(f"<tr><td><code>{esc(tool)}</code></td>{tds}</tr>")
        notes = "".join(f"<p><small>{esc(note)}</small></p>" for note in self.notes)
        table = (
            f"<table><thead><tr><th>tool</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>" if rows else ""
        )
        return f"<div><b>{esc(self._summary())}</b>{table}{notes}</div>"


def _html_cell(verdict: Verdict | None) -> str:
    if verdict is None:
        return "<td></td>"
    items = [f for f in verdict.findings if (not f.rewrite) == (verdict.status == REJECTED)]
    listed = "".join(
        f"<li>{esc(str(f))} <a href='{esc(f.rule.source)}' title='{esc(f.rule.text)}' target='_blank'>[rule]</a></li>"
        for f in items
    )
    details = f"<ul style='margin:0;padding-left:1.2em'>{listed}</ul>" if listed else ""
    return f"<td style='{_STYLE[verdict.status]};vertical-align:top'><b>{esc(verdict.status)}</b>{details}</td>"
