"""`wb.check_schemas(target)`: whether OpenAI, Anthropic and Gemini accept each tool's input schema.

The rules are engine/rules/portability.py's (each with the documentation that states it); this
module picks the tools (the selection `wb.toolset` uses: the tools a model sees) and, where
pydantic-ai's schema transformers decide strictness, holds each verdict to them too:

- OpenAI: the transformer pydantic-ai's `OpenAIProvider` uses (`OpenAIJsonSchemaTransformer`, the
  one that takes length bounds) walks the schema the rules would send, with ``strict=None``; when
  it finds it not strict-compatible, pydantic-ai would send the tool with ``strict: false``, and
  the cell is rejected with that reason.
- Gemini: pydantic-ai's `GoogleOpenAPISchemaTransformer` (the OpenAPI-subset form) walks the
  original schema; a schema it refuses (a recursive ``$ref``, a ``false`` definition) is rejected
  with its message.
- Anthropic: pydantic-ai does not decide (its Anthropic tools are not strict unless a tool says
  ``strict=True``, and then Anthropic's own ``transform_schema`` rewrites it, not losslessly): the
  rules alone.

Without pydantic-ai installed, the rules alone decide every column.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench_magic.api.extras import require_extra
from workbench_magic.engine.rules.portability import judge
from workbench_magic.vocabulary.errors import MissingExtraError, UsageError
from workbench_magic.vocabulary.portability import PROVIDERS, Rule, Verdict
from workbench_magic.vocabulary.schema_report import SchemaReport

if TYPE_CHECKING:
    from workbench_magic.api.toolsets.making import Toolsets

__all__ = ["Portability", "check_schemas"]

#: The cross-checks' rules: pydantic-ai's transformers, named as the reason's source.
_PYDANTIC_AI_OPENAI = Rule(
    "openai",
    "pydantic-ai",
    "pydantic-ai's OpenAIJsonSchemaTransformer (as OpenAIProvider picks it) finds the schema strict-compatible",
    "https://github.com/pydantic/pydantic-ai/blob/main/pydantic_ai_slim/pydantic_ai/profiles/openai.py",
)
_PYDANTIC_AI_GEMINI = Rule(
    "gemini",
    "pydantic-ai",
    "pydantic-ai's GoogleOpenAPISchemaTransformer can write the schema as Gemini's OpenAPI subset",
    "https://github.com/pydantic/pydantic-ai/blob/main/pydantic_ai_slim/pydantic_ai/profiles/google.py",
)

Check = Callable[[Verdict, Mapping[str, Any] | None], Verdict]


class Portability:
    """`Workbench.check_schemas`: the schema report of a toolbox, a server, or a list of tools.

    Args:
        toolsets: the workbench's toolsets (what a target selects, its toolboxes opened).
    """

    def __init__(self, toolsets: Toolsets) -> None:
        self._toolsets = toolsets

    def check_schemas(self, target: Any, providers: Sequence[str] | str = PROVIDERS) -> SchemaReport:
        """Whether each provider accepts each tool's input schema: a table of tool by provider.

        Each cell is accepted, accepted after lossless rewrites (named: ``inlined $ref
        '#/$defs/Node'``), or rejected with every reason. The providers are judged in the mode that
        holds a model to the schema: ``openai`` is strict function calling (Structured Outputs; the
        Responses API's default), ``anthropic`` strict tool use, ``gemini`` a function declaration's
        ``parameters`` (Gemini's OpenAPI subset). Every rule names its source (the provider's
        documentation; `SchemaReport` links it). Where pydantic-ai's schema transformers decide
        strictness (OpenAI) or refuse a schema (Gemini's OpenAPI form), the verdict holds to them too
        when pydantic-ai is installed.

        Args:
            target: a toolbox (`"demo"`), a server (`"demo/datasets"`), one tool or a list of tools (any
                spelling `wb.call` takes), or None (every toolbox open now). Only the tools a model
                sees are checked (an MCP App's own tools are not).
            providers: some of ``"openai"``, ``"anthropic"``, ``"gemini"`` (the columns, in this order).

        Returns:
            The `SchemaReport` (`.rejected`: ``(identifier, provider, reasons)``; `.to_pandas()`).

        Raises:
            UsageError: an unknown provider, or no target.
            InvalidIdentifierError: a tool in `target` cannot be parsed.
            NotFoundError: no such toolbox, server or tool (the texts of `wb.call`).
            ConnectError: a toolbox opened here had no server connect.

        Example:
            ```python
            report = wb.check_schemas("demo")
            report.rejected  # [("demo/datasets/query", "openai", ("argument 'limit': is optional ...",)), ...]
            ```
        """
        chosen = _providers(providers)
        selection = self._toolsets.selection(target, True)
        tools = [(str(tool.identifier), tool.info.input_schema) for tool in selection.tools()]
        return check_schemas(tools, chosen, target=selection.label)


def check_schemas(
    tools: Iterable[tuple[str, Mapping[str, Any] | None]],
    providers: Sequence[str] = PROVIDERS,
    *,
    target: str = "",
) -> SchemaReport:
    """The report of input schemas (no workbench needed): the rules, and pydantic-ai's transformers where installed.

    Args:
        tools: ``(identifier, input schema)`` pairs.
        providers: the providers to judge, in column order.
        target: what was checked (the report's title).

    Returns:
        The `SchemaReport`.
    """
    chosen = _providers(providers)
    checks = _cross_checks()
    rows = []
    for identifier, schema in tools:
        cells = {}
        for provider in chosen:
            verdict = judge(schema, provider)
            check = checks.get(provider)
            cells[provider] = check(verdict, schema) if check is not None and verdict.ok else verdict
        rows.append((identifier, cells))
    return SchemaReport(rows, chosen, target=target)


def _providers(providers: Sequence[str] | str) -> tuple[str, ...]:
    chosen = (providers,) if isinstance(providers, str) else tuple(providers)
    unknown = [p for p in chosen if p not in PROVIDERS]
    if unknown or not chosen:
        named = f"Unknown provider {unknown[0]!r}" if unknown else "No provider"
        raise UsageError(f"{named}: choose from {', '.join(PROVIDERS)}")
    return tuple(dict.fromkeys(chosen))


@functools.cache
def _cross_checks() -> dict[str, Check]:
    """The pydantic-ai cross-check per provider (none without pydantic-ai)."""
    try:
        require_extra("pydantic_ai", extra="pydantic-ai", feature="check_schemas")
    except MissingExtraError:
        return {}
    from pydantic_ai.exceptions import UserError

    checks: dict[str, Check] = {}
    openai = _openai_transformer()
    if openai is not None:

        def openai_check(verdict: Verdict, schema: Mapping[str, Any] | None) -> Verdict:
            transformer = openai(dict(verdict.schema or {}), strict=None)
            try:
                transformer.walk()
            except UserError as exc:  # it would refuse the schema
                return verdict.rejected_by(f"pydantic-ai refuses it: {exc}", _PYDANTIC_AI_OPENAI)
            if transformer.is_strict_compatible:
                return verdict
            reason = "pydantic-ai's OpenAI transformer finds it not strict-compatible (it would send strict=false)"
            return verdict.rejected_by(reason, _PYDANTIC_AI_OPENAI)

        checks["openai"] = openai_check
    try:
        from pydantic_ai.profiles.google import GoogleOpenAPISchemaTransformer
    except ImportError:  # an older pydantic-ai without the OpenAPI form
        return checks

    def gemini_check(verdict: Verdict, schema: Mapping[str, Any] | None) -> Verdict:
        if not schema:
            return verdict
        try:
            GoogleOpenAPISchemaTransformer(dict(schema)).walk()
        except UserError as exc:
            return verdict.rejected_by(f"pydantic-ai refuses it: {exc}", _PYDANTIC_AI_GEMINI)
        return verdict

    checks["gemini"] = gemini_check
    return checks


def _openai_transformer() -> Any:
    """The JSON schema transformer pydantic-ai's OpenAIProvider uses for OpenAI's own models (None: not importable)."""
    try:
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError:  # pydantic-ai without its openai extra: the rules alone
        return None
    profile = OpenAIProvider.model_profile("gpt-5") or {}
    return profile.get("json_schema_transformer")
