"""The fields of argument forms: the `Field` base class, `UNSET`, `FormError`, and the schema
helpers every field uses (forms.py assembles fields into a form).

A `Field` is one JSON Schema property: its input widget, its label, and a typed `get`/`set`
(ints stay ints, objects stay dicts); bad input raises `FormError` naming the field's path.
The kinds of field are in scalar_fields.py (text, number, boolean, choice) and
structured_fields.py (lists, objects, JSON, and `make_field`, which picks one for a schema node).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import ipywidgets as widgets

from workbench_magic.engine.schema import resolve
from workbench_magic.vocabulary.errors import WorkbenchError
from workbench_magic.vocabulary.rendering import json_type

__all__ = [
    "LABEL_WIDTH",
    "UNSET",
    "UNSET_LABEL",
    "Field",
    "FieldContext",
    "FormError",
    "clip",
    "dumps",
    "field_css_class",
    "is_choice",
    "json_error",
    "json_type",
    "normalize",
    "values_of",
]

LABEL_WIDTH = "170px"
UNSET_LABEL = "(unset)"
"""What a dropdown shows for the unset choice of an optional field."""


class _Unset:
    """Type of `UNSET`: the value of an optional field that was left empty."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __copy__(self) -> _Unset:
        return self

    def __deepcopy__(self, memo: Any) -> _Unset:
        return self


UNSET: Final[Any] = _Unset()
"""What `Field.get()` returns for an optional field left empty (the argument is omitted)."""


class FormError(WorkbenchError, ValueError):
    """A form field holds a value that cannot become an argument: `config.inner.weight: not a number: 'abc'`."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}" if path else detail)
        self.path = path
        self.detail = detail


# ---- schema helpers ----------------------------------------------------------------------


def normalize(spec: Any, root: dict[str, Any], depth: int = 0) -> tuple[dict[str, Any], bool]:
    """Resolve `$ref`, one-item `allOf`, nullable types and `anyOf`/`oneOf` shapes a form can show.

    Returns the schema node to build a field for and whether `null` is allowed. `[X, null]`
    unions become X (nullable); unions of constants become an `enum`; other unions stay as they
    are (a JSON editor shows them).
    """
    spec = dict(resolve(spec, root))
    nullable = False
    all_of = spec.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and depth < 16:
        inner, inner_null = normalize(all_of[0], root, depth + 1)
        spec = {**inner, **{k: v for k, v in spec.items() if k != "allOf"}}
        nullable = nullable or inner_null
    kind = spec.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        nullable = nullable or len(kinds) < len(kind)
        if len(kinds) == 1:
            spec["type"] = kinds[0]
        elif not kinds:
            spec["type"] = "null"
    elif kind == "null":
        nullable = True
    if "const" in spec and "enum" not in spec:
        spec["enum"] = [spec["const"]]
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if not isinstance(options, list) or not options or depth >= 16:
            continue
        outer = {k: v for k, v in spec.items() if k != key}
        rest: list[dict[str, Any]] = []
        for option in options:
            resolved, option_null = normalize(option, root, depth + 1)
            if resolved.get("type") == "null" and "enum" not in resolved:
                nullable = True
                continue
            nullable = nullable or option_null
            rest.append(resolved)
        if rest and all(is_choice(o) for o in rest):
            values: list[Any] = [v for o in rest for v in o["enum"]]
            outer.pop("type", None)
            spec = {**outer, "enum": values}
        elif len(rest) == 1:
            spec = {**rest[0], **outer}
        else:
            spec = {**outer, key: rest}
        break
    return spec, nullable


def is_choice(spec: dict[str, Any]) -> bool:
    """Whether a (normalized) schema node is a choice among constants (an `enum`)."""
    enum = spec.get("enum")
    return isinstance(enum, list) and bool(enum) and "properties" not in spec


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def field_css_class(path: str) -> str:
    return "wb-field-" + re.sub(r"[^A-Za-z0-9_-]+", "-", path).strip("-")


def clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_error(exc: json.JSONDecodeError) -> str:
    return f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


@dataclass
class FieldContext:
    root: dict[str, Any]
    max_depth: int


# ---- the field ---------------------------------------------------------------------------


class Field:
    """One schema node of a form: its input widget, its label, and typed `get`/`set`.

    `widget` is what is shown (label, input, description); `input` is the widget that holds
    the value (tagged with the CSS class `wb-field-<path>`, dots as `-`). `get()` returns the
    typed value, `UNSET` when the field is optional and empty (or `None` when the schema
    requires the key but allows null), and raises `FormError` on bad input.
    """

    kind = "field"

    def __init__(
        self,
        name: str,
        path: str,
        schema: dict[str, Any],
        *,
        required: bool,
        nullable: bool = False,
        depth: int = 0,
        context: FieldContext | None = None,
        bare: bool = False,
        css_class: str | None = None,
    ) -> None:
        self.name = name
        self.path = path
        self.schema = schema
        self.required = required
        self.nullable = nullable
        self.depth = depth
        self._context = context or FieldContext(root=schema, max_depth=2)
        self.description = str(schema.get("description") or "").strip()
        default = schema.get("default", UNSET)
        self.default: Any = UNSET if default is None else default
        self.input: widgets.Widget = self._build()
        self.input.add_class(css_class or field_css_class(path))
        if self.description and not isinstance(self.input, widgets.Box):
            self.input.tooltip = clip(self.description, 500)
        self.widget: widgets.Widget = self.input if bare else self._wrap()
        self._initial = self._state()

    # -- what subclasses provide
    def _build(self) -> widgets.Widget:
        raise NotImplementedError

    def _get(self) -> Any:
        raise NotImplementedError

    def _set(self, value: Any) -> None:
        raise NotImplementedError

    def _clear(self) -> bool:
        """Empty the input (the unset state); False when the widget cannot be empty."""
        return False

    def reset(self) -> None:
        """Back to the initial state: the schema's `default`, or empty."""
        raise NotImplementedError

    def _state(self) -> Any:
        """The raw widget state, to tell whether the user changed anything."""
        return getattr(self.input, "value", None)

    # -- public
    @property
    def can_unset(self) -> bool:
        """Whether the field may be left empty (optional, or nullable)."""
        return not self.required or self.nullable

    @property
    def has_default(self) -> bool:
        """Whether the schema gives a (non-null) default."""
        return self.default is not UNSET

    def untouched(self) -> bool:
        """Whether the widget still holds what it held when the form was built."""
        return bool(self._state() == self._initial)

    def get(self) -> Any:
        """The typed value; `UNSET` when optional and empty. Raises `FormError` on bad input."""
        return self._get()

    def set(self, value: Any) -> None:
        """Show `value` (typed as in the arguments); `UNSET` resets, `None` empties an optional field."""
        if value is UNSET:
            self.reset()
        elif value is None and self.can_unset:
            if not self._clear():
                self.reset()
        else:
            self._set(value)

    def _empty(self) -> Any:
        """What an empty optional field gives: omitted, or null when the key is required."""
        return None if self.required and self.nullable else UNSET

    def _fail(self, detail: str) -> FormError:
        return FormError(self.path, detail)

    def _label(self) -> widgets.HTML:
        star = ' <span style="color:red">*</span>' if self.required else ""
        label = widgets.HTML(
            value=f"<span>{html.escape(self.name)}</span>{star}",
            layout=widgets.Layout(width=LABEL_WIDTH, min_width=LABEL_WIDTH),
        )
        if self.description:
            label.tooltip = clip(self.description, 500)
        return label

    def _help(self, indent: bool = True) -> widgets.HTML | None:
        if not self.description:
            return None
        return widgets.HTML(
            value=(
                f'<div style="color:#777;font-size:0.85em;line-height:1.25">{html.escape(clip(self.description))}</div>'
            ),
            layout=widgets.Layout(margin=f"0 0 4px {LABEL_WIDTH}" if indent else "0 0 4px 0"),
        )

    def _wrap(self) -> widgets.Widget:
        row = widgets.HBox([self._label(), self.input], layout=widgets.Layout(width="100%", align_items="flex-start"))
        help_line = self._help()
        if help_line is None:
            return row
        return widgets.VBox([row, help_line], layout=widgets.Layout(width="100%"))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path!r}>"


def values_of(fields: Mapping[str, Field]) -> dict[str, Any]:
    """The values of `fields` by name; fields left unset are omitted."""
    values = {}
    for name, field in fields.items():
        value = field.get()
        if value is not UNSET:
            values[name] = value
    return values
