"""What each model provider accepts of JSON Schema in a tool's input schema: one `Rule` per documented
limit, each next to the URL that states it, and the keyword sets and limits the walk of
portability.py checks against. Plain data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ACCEPTED", "MODES", "PROVIDERS", "REJECTED", "REWRITTEN", "RULES", "Rule"]

PROVIDERS = ("openai", "anthropic", "gemini")
"""The providers judged, in the report's column order."""

MODES = {
    "openai": "strict function calling",
    "anthropic": "strict tool use",
    "gemini": "function declarations, OpenAPI subset",
}
"""What each provider's column judges."""

ACCEPTED = "accepted"
REWRITTEN = "rewritten"
REJECTED = "rejected"

# ---- sources ------------------------------------------------------------------------------------
OPENAI_SCHEMAS = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas"
OPENAI_STRICT = "https://platform.openai.com/docs/guides/function-calling#strict-mode"
#: pydantic-ai's OpenAI transformer: what it finds strict-incompatible (and why, in its comments).
PYDANTIC_AI_OPENAI = "https://github.com/pydantic/pydantic-ai/blob/main/pydantic_ai_slim/pydantic_ai/profiles/openai.py"
#: 400 "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level".
OPENAI_ROOT_400 = "https://github.com/Lingtai-AI/lingtai-kernel/issues/113"
#: MCP tools' schemas "that OpenAI's strict mode rejects, e.g. using `default`".
OPENAI_DEFAULT_400 = "https://github.com/dotnet/extensions/issues/6266"
#: 400 "In context=('properties', 'tags'), array schema missing items", with or without strict.
OPENAI_ITEMS_400 = "https://github.com/spring-projects/spring-ai/issues/2561"
ANTHROPIC_LIMITS = "https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations"
ANTHROPIC_STRICT = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use"
GEMINI_SCHEMA = "https://ai.google.dev/api/caching#Schema"
GEMINI_DECLARATIONS = "https://ai.google.dev/gemini-api/docs/function-calling#function_declarations"
#: "Parameter names must start with a letter or an underscore ... a maximum length of 64".
VERTEX_DECLARATION = "https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration"
#: 400 "... parameters.properties: should be non-empty for OBJECT type".
GEMINI_EMPTY_400 = "https://github.com/agno-agi/agno/issues/2112"
#: 400 "... type: must be specified when not using one_of, any_of or all_of fields".
GEMINI_TYPE_400 = "https://github.com/danny-avila/LibreChat/issues/6971"
#: 400 "Invalid JSON payload received. Unknown name "additionalProperties" ... Cannot find field."
GEMINI_UNKNOWN_400 = "https://github.com/nanbingxyz/5ire/issues/42"
#: Annotations (title, description, default, deprecated, readOnly, writeOnly, examples) do not validate.
JSON_SCHEMA_ANNOTATIONS = "https://json-schema.org/draft/2020-12/json-schema-validation#section-9"


@dataclass(frozen=True)
class Rule:
    """One documented limit of one provider.

    Attributes:
        provider: ``openai``, ``anthropic`` or ``gemini``.
        name: short and stable (``all-required``).
        text: the limit, as the provider states it.
        source: the URL that states it.
    """

    provider: str
    name: str
    text: str
    source: str


RULES: dict[tuple[str, str], Rule] = {}
"""Every rule, by (provider, name)."""


def _rule(provider: str, name: str, text: str, source: str) -> Rule:
    rule = Rule(provider, name, text, source)
    RULES[(provider, name)] = rule
    return rule


# ---- the rules, per provider, each with its source ----------------------------------------------
O_ROOT = _rule(
    "openai",
    "root-object",
    "the parameters are an object schema, without oneOf, anyOf, allOf, enum or not at the top level",
    OPENAI_ROOT_400,  # and OPENAI_SCHEMAS: "Root objects must not be anyOf and must be an object"
)
O_CLOSED = _rule("openai", "closed-objects", "additionalProperties: false must be set on every object", OPENAI_SCHEMAS)
O_REQUIRED = _rule(
    "openai", "all-required", "every property is required (an optional one is a union with null)", OPENAI_SCHEMAS
)
O_ITEMS = _rule("openai", "typed-items", "an array has items with a type (400 even without strict)", OPENAI_ITEMS_400)
O_TUPLE = _rule("openai", "no-tuples", "no tuple (prefixItems, or items as a list)", PYDANTIC_AI_OPENAI)
O_ONEOF = _rule("openai", "no-oneOf", "anyOf is supported, oneOf is not", OPENAI_SCHEMAS)
O_ALLOF = _rule("openai", "no-allOf", "allOf is not among the supported keywords", OPENAI_SCHEMAS)
O_KEYWORD = _rule(
    "openai",
    "unsupported-keywords",
    "not supported: patternProperties, unevaluatedProperties, propertyNames, minProperties, maxProperties, "
    "unevaluatedItems, contains, minContains, maxContains, uniqueItems (nor not, if/then/else, dependencies)",
    OPENAI_SCHEMAS,
)
O_FORMAT = _rule(
    "openai",
    "formats",
    "string formats: date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid",
    OPENAI_SCHEMAS,
)
O_PATTERN = _rule("openai", "pattern", "a pattern has no lookaround", PYDANTIC_AI_OPENAI)
# pydantic-ai's transformer (PYDANTIC_AI_OPENAI) drops it too under strict=True
O_DEFAULT = _rule("openai", "no-default", "default is not allowed in strict mode", OPENAI_DEFAULT_400)
O_REF = _rule(
    "openai", "refs", "a $ref points into $defs/definitions or at the root (#); no sibling keywords", PYDANTIC_AI_OPENAI
)
O_LIMITS = _rule(
    "openai", "limits", "at most 5,000 properties, 10 levels of nesting, 1,000 enum values", OPENAI_SCHEMAS
)

A_ROOT = _rule("anthropic", "root-object", "input_schema is an object schema", ANTHROPIC_STRICT)
A_CLOSED = _rule("anthropic", "closed-objects", "additionalProperties must be false on every object", ANTHROPIC_LIMITS)
A_RECURSION = _rule("anthropic", "no-recursion", "recursive schemas are not supported", ANTHROPIC_LIMITS)
A_NUMBERS = _rule(
    "anthropic",
    "numeric-constraints",
    "no numerical constraints (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf)",
    ANTHROPIC_LIMITS,
)
A_STRINGS = _rule("anthropic", "string-constraints", "no minLength, maxLength", ANTHROPIC_LIMITS)
A_ARRAYS = _rule("anthropic", "array-constraints", "minItems 0 or 1 only; no maxItems, uniqueItems", ANTHROPIC_LIMITS)
A_ENUM = _rule("anthropic", "simple-enums", "enum and const hold strings, numbers, booleans or null", ANTHROPIC_LIMITS)
A_FORMAT = _rule(
    "anthropic",
    "formats",
    "string formats: date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid",
    ANTHROPIC_LIMITS,
)
A_PATTERN = _rule(
    "anthropic", "pattern", "a pattern has no backreferences, lookaround or word boundaries", ANTHROPIC_LIMITS
)
A_ONEOF = _rule("anthropic", "no-oneOf", "anyOf and allOf are supported, oneOf is not", ANTHROPIC_LIMITS)
A_ALLOF_REF = _rule("anthropic", "allOf-ref", "allOf with $ref is not supported", ANTHROPIC_LIMITS)
A_KEYWORD = _rule(
    "anthropic",
    "unsupported-keywords",
    "not supported: patternProperties, propertyNames, minProperties, maxProperties, contains, not, "
    "if/then/else, dependencies, unevaluated*, prefixItems",
    ANTHROPIC_LIMITS,
)
A_OPTIONAL = _rule(
    "anthropic", "optional-limit", "at most 24 optional parameters across the strict tools", ANTHROPIC_LIMITS
)
A_UNIONS = _rule(
    "anthropic",
    "union-limit",
    "at most 16 parameters with anyOf or a type list across the strict tools",
    ANTHROPIC_LIMITS,
)

G_ROOT = _rule("gemini", "root-object", "parameters describe an object", GEMINI_DECLARATIONS)
G_FIELDS = _rule(
    "gemini",
    "schema-fields",
    "a Schema has type, format, title, description, nullable, enum, items, minItems, maxItems, properties, "
    "required, minProperties, maxProperties, propertyOrdering, minLength, maxLength, pattern, minimum, maximum, "
    "anyOf, default, example; other keys are 'Unknown name ... Cannot find field'",
    GEMINI_SCHEMA,  # the 400 each other key gets: GEMINI_UNKNOWN_400
)
G_REF = _rule("gemini", "no-refs", "no $ref or $defs (a Schema is written out in full)", GEMINI_SCHEMA)
G_TYPE_LIST = _rule("gemini", "one-type", "type is one type (nullable: true for null)", GEMINI_SCHEMA)
G_TYPE = _rule("gemini", "type-required", "type must be specified when not using anyOf", GEMINI_TYPE_400)
G_ENUM = _rule("gemini", "string-enums", "enum is a list of strings; there is no const", GEMINI_SCHEMA)
G_MAPS = _rule("gemini", "no-maps", "there is no additionalProperties (a map cannot be declared)", GEMINI_SCHEMA)
G_EMPTY = _rule("gemini", "non-empty-objects", "an OBJECT has properties (should be non-empty)", GEMINI_EMPTY_400)
G_ONEOF = _rule("gemini", "no-oneOf", "anyOf is supported, oneOf is not", GEMINI_SCHEMA)
G_ALLOF = _rule("gemini", "no-allOf", "allOf is not a Schema field", GEMINI_SCHEMA)
G_EXCLUSIVE = _rule("gemini", "no-exclusive-bounds", "minimum and maximum only, no exclusive bounds", GEMINI_SCHEMA)
G_ITEMS = _rule("gemini", "array-items", "an ARRAY has items", GEMINI_SCHEMA)
G_TUPLE = _rule("gemini", "no-tuples", "no tuple (prefixItems, or items as a list)", GEMINI_SCHEMA)
G_NAMES = _rule(
    "gemini",
    "parameter-names",
    "parameter names start with a letter or _, then letters, digits or _, at most 64",
    VERTEX_DECLARATION,
)
G_ANNOTATIONS = _rule(
    "gemini",
    "annotations",
    "annotations ($schema, $id, $comment, examples, deprecated, readOnly, writeOnly) validate nothing",
    JSON_SCHEMA_ANNOTATIONS,
)

BOOLEAN = {
    p: _rule(p, "boolean-schema", "a subschema is an object (true/false schemas are not in the subset)", src)
    for p, src in (("openai", OPENAI_SCHEMAS), ("anthropic", ANTHROPIC_LIMITS), ("gemini", GEMINI_SCHEMA))
}
EXTERNAL = {
    p: _rule(p, "local-refs", "only local $refs (#/...)", src)
    for p, src in (("openai", OPENAI_SCHEMAS), ("anthropic", ANTHROPIC_LIMITS), ("gemini", GEMINI_SCHEMA))
}
RECURSION_INLINE = {
    p: _rule(p, "no-recursive-pointers", "a recursive $ref that cannot be inlined", src)
    for p, src in (("openai", PYDANTIC_AI_OPENAI), ("gemini", GEMINI_SCHEMA))
}

# ---- keyword sets ------------------------------------------------------------------------------
OPENAI_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
ANTHROPIC_FORMATS = OPENAI_FORMATS | {"uri"}
EVERYWHERE_UNSUPPORTED = (
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "additionalItems",
    "$dynamicRef",
    "$recursiveRef",
)
OPENAI_UNSUPPORTED = (*EVERYWHERE_UNSUPPORTED, "minProperties", "maxProperties", "uniqueItems")
ANTHROPIC_UNSUPPORTED = (*EVERYWHERE_UNSUPPORTED, "minProperties", "maxProperties")
ANTHROPIC_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
GEMINI_FIELDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
#: Keywords that validate nothing (JSON Schema annotations, OpenAPI's discriminator): dropping one is lossless.
ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$comment",
        "$vocabulary",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "discriminator",
        "contentMediaType",
        "contentEncoding",
    }
)
TYPE_BEARING = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")
TYPE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "object": ("properties", "required", "additionalProperties", "minProperties", "maxProperties", "propertyOrdering"),
    "array": ("items", "minItems", "maxItems", "uniqueItems", "prefixItems"),
    "string": ("minLength", "maxLength", "pattern", "format"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "integer": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
}
GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")
DEFINITION_REF = re.compile(r"#/(\$defs|definitions)/[^/]+")
OPENAI_MAX_PROPERTIES = 5000
OPENAI_MAX_DEPTH = 10
OPENAI_MAX_ENUM = 1000
ANTHROPIC_MAX_OPTIONAL = 24
ANTHROPIC_MAX_UNIONS = 16
