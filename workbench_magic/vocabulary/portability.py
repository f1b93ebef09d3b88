"""A schema's portability in words: the `Verdict` a provider gives a tool's input schema, its
`Finding`s, and the rules they cite (`RULES`, one `Rule` per documented limit, with its source URL:
provider_rules.py). The walk that reaches a verdict is engine/rules/portability.py's `judge`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench_magic.vocabulary.provider_rules import (
    ACCEPTED,
    MODES,
    PROVIDERS,
    REJECTED,
    REWRITTEN,
    RULES,
    Rule,
)

__all__ = ["ACCEPTED", "MODES", "PROVIDERS", "REJECTED", "REWRITTEN", "RULES", "Finding", "Rule", "Verdict"]


# ---- findings and verdicts ----------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """One thing a provider's rules found in a schema: a reason to reject it, or a lossless rewrite.

    Attributes:
        rule: the rule (its `source` says where the limit is stated).
        where: ``argument 'where[].op'``, or ``input schema`` for the whole.
        detail: what is wrong, or what the rewrite did.
        rewrite: True for a lossless rewrite made, False for a reason to reject.
    """

    rule: Rule
    where: str
    detail: str
    rewrite: bool = False

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


@dataclass(frozen=True)
class Verdict:
    """What one provider makes of one tool's input schema.

    Attributes:
        provider: ``openai``, ``anthropic`` or ``gemini``.
        status: ``accepted`` (as it is), ``rewritten`` (after the lossless `rewrites`) or ``rejected``.
        findings: every rewrite and every reason, in the order found.
        schema: the schema to send (the rewritten one); None when rejected, and for Gemini when the
            tool takes no arguments (its declaration then has no ``parameters``).
        optional: the schema's optional parameters (Anthropic counts them across a request's strict tools).
        unions: its parameters with anyOf or a type list (Anthropic counts them too).
    """

    provider: str
    status: str
    findings: tuple[Finding, ...] = ()
    schema: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    optional: int = 0
    unions: int = 0

    @property
    def rewrites(self) -> tuple[str, ...]:
        """The lossless rewrites made (empty unless `status` is ``rewritten``)."""
        if self.status == REJECTED:
            return ()
        return tuple(str(f) for f in self.findings if f.rewrite)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Every reason the provider rejects the schema (empty unless `status` is ``rejected``)."""
        return tuple(str(f) for f in self.findings if not f.rewrite)

    @property
    def ok(self) -> bool:
        """Accepted, as it is or rewritten."""
        return self.status != REJECTED

    def rejected_by(self, reason: str, rule: Rule, where: str = "input schema") -> Verdict:
        """This verdict with one more reason (rejected).

        Args:
            reason: the reason.
            rule: the rule (or cross-check) that gives it.
            where: where in the schema.

        Returns:
            A rejected verdict holding this one's findings and the reason.
        """
        finding = Finding(rule, where, reason)
        return Verdict(self.provider, REJECTED, (*self.findings, finding), None, self.optional, self.unions)
