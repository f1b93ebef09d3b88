"""The fields of argument forms: one `Field` per JSON Schema property (forms.py assembles them).

Simple types get core widgets (text, number, checkbox, dropdown), objects nest as fieldsets,
lists of simple values get one row per item, and everything a form cannot show well gets a
per-field JSON editor. A field's `value` is typed (ints stay ints, objects stay dicts); bad
input raises `FormError` naming the field's path.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import ipywidgets as widgets

from workbench_magic.engine.schema import resolve
from workbench_magic.vocabulary.errors import WorkbenchError

__all__ = [
    "UNSET",
    "BoolField",
    "ChoiceField",
    "Field",
    "FieldContext",
    "FormError",
    "JsonField",
    "ListField",
    "NumberField",
    "ObjectField",
    "TextField",
    "dumps",
    "json_error",
    "json_type",
    "make_field",
    "normalize",
    "values_of",
]

LABEL_WIDTH = "170px"
_UNSET_LABEL = "(unset)"


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
        if rest and all(_is_choice(o) for o in rest):
            values: list[Any] = [v for o in rest for v in o["enum"]]
            outer.pop("type", None)
            spec = {**outer, "enum": values}
        elif len(rest) == 1:
            spec = {**rest[0], **outer}
        else:
            spec = {**outer, key: rest}
        break
    return spec, nullable


def _is_choice(spec: dict[str, Any]) -> bool:
    enum = spec.get("enum")
    return isinstance(enum, list) and bool(enum) and "properties" not in spec


def json_type(value: Any) -> str:
    """The JSON type name of a Python value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fits(value: Any, kind: str) -> bool:
    """Whether `value` is of JSON Schema type `kind` (unknown kinds accept anything)."""
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = {"string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}.get(kind)
    return expected is None or isinstance(value, expected)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1 and "1" != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _css_class(path: str) -> str:
    return "wb-field-" + re.sub(r"[^A-Za-z0-9_-]+", "-", path).strip("-")


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_error(exc: json.JSONDecodeError) -> str:
    return f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


@dataclass
class FieldContext:
    root: dict[str, Any]
    max_depth: int


# ---- fields ------------------------------------------------------------------------------


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
        self.input.add_class(css_class or _css_class(path))
        if self.description and not isinstance(self.input, widgets.Box):
            self.input.tooltip = _clip(self.description, 500)
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
            label.tooltip = _clip(self.description, 500)
        return label

    def _help(self, indent: bool = True) -> widgets.HTML | None:
        if not self.description:
            return None
        return widgets.HTML(
            value=(
                '<div style="color:#777;font-size:0.85em;line-height:1.25">'
                f"{html.escape(_clip(self.description))}</div>"
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


class TextField(Field):
    """A string: Text, or Textarea for long text (`maxLength` > 200, format textarea/markdown)."""

    kind = "string"

    def _build(self) -> widgets.Widget:
        fmt = str(self.schema.get("format") or "")
        long = fmt in ("textarea", "markdown") or (
            isinstance(self.schema.get("maxLength"), int) and self.schema["maxLength"] > 200
        )
        initial = self.default if isinstance(self.default, str) else ""
        if long:
            return widgets.Textarea(
                value=initial,
                placeholder=fmt,
                rows=4,
                description_allow_html=False,
                layout=widgets.Layout(width="100%"),
            )
        return widgets.Text(
            value=initial, placeholder=fmt, description_allow_html=False, layout=widgets.Layout(width="100%")
        )

    def _get(self) -> Any:
        text = self.input.value
        if text == "" and self.can_unset:
            return self._empty()
        return text

    def _set(self, value: Any) -> None:
        if not isinstance(value, str):
            raise self._fail(f"expected a string, got {json_type(value)}")
        self.input.value = value

    def _clear(self) -> bool:
        self.input.value = ""
        return True

    def reset(self) -> None:
        """Back to the default (or empty)."""
        self.input.value = self.default if isinstance(self.default, str) else ""


class NumberField(Field):
    """An integer or number: IntText/FloatText, or a Text parsed on `get` when it may be empty."""

    kind = "number"

    @property
    def integer(self) -> bool:
        """Whether the schema type is `integer`."""
        return self.schema.get("type") == "integer"

    @property
    def text_mode(self) -> bool:
        """Whether the input is a Text (optional without default: empty means unset)."""
        return isinstance(self.input, widgets.Text)

    def _initial_number(self) -> int | float:
        value: Any = self.default
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value) if self.integer and float(value).is_integer() else value
        low, high = self.schema.get("minimum"), self.schema.get("maximum")
        start: int | float = 0
        if isinstance(low, int | float) and not isinstance(low, bool) and low > 0:
            start = low
        elif isinstance(high, int | float) and not isinstance(high, bool) and high < 0:
            start = high
        return math.ceil(start) if self.integer else float(start)

    def _build(self) -> widgets.Widget:
        kind = "integer" if self.integer else "number"
        if self.can_unset and not self.has_default:
            return widgets.Text(
                value="", placeholder=kind, description_allow_html=False, layout=widgets.Layout(width="180px")
            )
        start = self._initial_number()
        if self.integer:
            return widgets.IntText(value=int(start), description_allow_html=False, layout=widgets.Layout(width="180px"))
        return widgets.FloatText(value=float(start), description_allow_html=False, layout=widgets.Layout(width="180px"))

    def _parse(self, text: str) -> int | float:
        if self.integer:
            try:
                return int(text)
            except ValueError:
                pass
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if math.isfinite(number) and number.is_integer():
                return int(number)
            raise self._fail(f"not an integer: {text!r}")
        try:
            number = float(text)
        except ValueError:
            raise self._fail(f"not a number: {text!r}") from None
        if not math.isfinite(number):
            raise self._fail(f"not a finite number: {text!r}")
        return number

    def _check_range(self, value: int | float) -> int | float:
        spec = self.schema
        low, high = spec.get("minimum"), spec.get("maximum")
        xlow, xhigh = spec.get("exclusiveMinimum"), spec.get("exclusiveMaximum")
        if isinstance(low, int | float) and value < low:
            raise self._fail(f"must be >= {low}, got {value}")
        if isinstance(high, int | float) and value > high:
            raise self._fail(f"must be <= {high}, got {value}")
        if isinstance(xlow, int | float) and not isinstance(xlow, bool) and value <= xlow:
            raise self._fail(f"must be > {xlow}, got {value}")
        if isinstance(xhigh, int | float) and not isinstance(xhigh, bool) and value >= xhigh:
            raise self._fail(f"must be < {xhigh}, got {value}")
        return value

    def _get(self) -> Any:
        if self.text_mode:
            text = self.input.value.strip()
            if not text:
                return self._empty()
            return self._check_range(self._parse(text))
        value = self.input.value
        return self._check_range(int(value) if self.integer else float(value))

    def _set(self, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(f"expected {'an integer' if self.integer else 'a number'}, got {json_type(value)}")
        if self.integer:
            if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
                raise self._fail(f"not an integer: {value!r}")
            value = int(value)
        else:
            value = float(value)
        self.input.value = repr(value) if self.text_mode else value

    def _clear(self) -> bool:
        if self.text_mode:
            self.input.value = ""
            return True
        return False

    def reset(self) -> None:
        """Back to the default (or empty / zero)."""
        self.input.value = "" if self.text_mode else self._initial_number()


class BoolField(Field):
    """A boolean: Checkbox, or a Dropdown (unset/true/false) when optional without default."""

    kind = "boolean"
    _choices: tuple[Any, ...] = (UNSET, True, False)

    def _build(self) -> widgets.Widget:
        if self.can_unset and not self.has_default:
            return widgets.Dropdown(
                options=[(_UNSET_LABEL, UNSET), ("true", True), ("false", False)],
                index=0,
                description_allow_html=False,
                layout=widgets.Layout(width="120px"),
            )
        return widgets.Checkbox(
            value=self.default is True, indent=False, description_allow_html=False, layout=widgets.Layout(width="auto")
        )

    @property
    def dropdown(self) -> bool:
        """Whether the input is the unset/true/false Dropdown."""
        return isinstance(self.input, widgets.Dropdown)

    def _state(self) -> Any:
        return self.input.index if self.dropdown else self.input.value

    def _get(self) -> Any:
        if self.dropdown:
            value = self._choices[self.input.index]
            return self._empty() if value is UNSET else value
        return bool(self.input.value)

    def _set(self, value: Any) -> None:
        if not isinstance(value, bool):
            raise self._fail(f"expected true or false, got {json_type(value)}")
        if self.dropdown:
            self.input.index = 1 if value else 2
        else:
            self.input.value = value

    def _clear(self) -> bool:
        if self.dropdown:
            self.input.index = 0
            return True
        return False

    def reset(self) -> None:
        """Back to the default (or unset / unchecked)."""
        if self.dropdown:
            self.input.index = 0
        else:
            self.input.value = self.default is True


class ChoiceField(Field):
    """An `enum` (or a union of constants): a Dropdown whose values keep their JSON types."""

    kind = "enum"

    def _build(self) -> widgets.Widget:
        self.choices: list[Any] = list(self.schema.get("enum") or [])
        self.unset_option = self.can_unset and not self.has_default
        if self.unset_option:
            self.choices.insert(0, UNSET)
        options = [(_UNSET_LABEL if v is UNSET else str(v), v) for v in self.choices]
        return widgets.Dropdown(
            options=options,
            index=self._initial_index(),
            description_allow_html=False,
            layout=widgets.Layout(width="auto", min_width="120px", max_width="100%"),
        )

    def _find(self, value: Any) -> int | None:
        return next((i for i, c in enumerate(self.choices) if c is not UNSET and _same(c, value)), None)

    def _initial_index(self) -> int:
        if self.has_default:
            found = self._find(self.default)
            if found is not None:
                return found
        return 0

    def _state(self) -> Any:
        return self.input.index

    def _get(self) -> Any:
        index = self.input.index
        if index is None:
            return self._empty() if self.can_unset else None
        value = self.choices[index]
        return self._empty() if value is UNSET else value

    def _set(self, value: Any) -> None:
        index = self._find(value)
        if index is None:
            allowed = ", ".join(json.dumps(c) for c in self.choices if c is not UNSET)
            raise self._fail(f"not one of {allowed}: {json.dumps(value, default=str)}")
        self.input.index = index

    def _clear(self) -> bool:
        if self.unset_option:
            self.input.index = 0
            return True
        return False

    def reset(self) -> None:
        """Back to the default (or the first option)."""
        self.input.index = self._initial_index()


class ListField(Field):
    """An array of simple items: one row (item input + "−" button) per item, and "+ add"."""

    kind = "array"

    def _build(self) -> widgets.Widget:
        self.rows: list[Field] = []
        self.item_schema: Any = self.schema.get("items") or {}
        self.rows_box = widgets.VBox([], layout=widgets.Layout(width="100%"))
        self.add_button = widgets.Button(
            description="+ add", tooltip=f"add an item to {self.name}", layout=widgets.Layout(width="80px")
        )
        self.add_button.add_class("wb-add")
        self.add_button.on_click(lambda _button: self.add_row())
        if isinstance(self.default, list):
            for item in self.default:
                try:
                    self.add_row(item)
                except FormError:  # a default that does not fit the item schema: leave it out
                    pass
        return self.rows_box

    def _wrap(self) -> widgets.Widget:
        self.box = widgets.VBox([self.rows_box, self.add_button], layout=widgets.Layout(width="100%"))
        row = widgets.HBox([self._label(), self.box], layout=widgets.Layout(width="100%", align_items="flex-start"))
        help_line = self._help()
        return row if help_line is None else widgets.VBox([row, help_line], layout=widgets.Layout(width="100%"))

    def add_row(self, value: Any = UNSET) -> Field:
        """Append an item row (the item default, or `value`) and return its field."""
        index = len(self.rows)
        item = make_field(
            str(index),
            f"{self.path}[{index}]",
            self.item_schema,
            required=True,
            depth=self.depth + 1,
            context=self._context,
            bare=True,
            css_class=_css_class(self.path) + "-item",
        )
        if value is not UNSET:
            try:
                item.set(value)
            except FormError as exc:
                raise FormError(f"{self.path}[{index}]", exc.detail) from None
        remove = widgets.Button(description="−", tooltip="remove this item", layout=widgets.Layout(width="32px"))
        remove.add_class("wb-remove")
        remove.on_click(lambda _button: self._remove(item))
        item.widget = widgets.HBox([item.input, remove], layout=widgets.Layout(align_items="center"))
        self.rows.append(item)
        self.rows_box.children = [*self.rows_box.children, item.widget]
        return item

    def remove_row(self, index: int) -> None:
        """Remove the item row at `index`."""
        del self.rows[index]
        self.rows_box.children = [row.widget for row in self.rows]

    def _remove(self, item: Field) -> None:
        for i, row in enumerate(self.rows):
            if row is item:
                self.remove_row(i)
                return

    def _state(self) -> Any:
        return [row._state() for row in self.rows]

    def _get(self) -> Any:
        if not self.rows and self.can_unset and (not self.has_default or self.default == []):
            return self._empty()
        values = []
        for i, row in enumerate(self.rows):
            try:
                values.append(row.get())
            except FormError as exc:
                raise FormError(f"{self.path}[{i}]", exc.detail) from None
        return values

    def _fill(self, values: list[Any]) -> None:
        self.rows = []
        self.rows_box.children = []
        for value in values:
            self.add_row(value)

    def _set(self, value: Any) -> None:
        if not isinstance(value, list | tuple):
            raise self._fail(f"expected a list, got {json_type(value)}")
        self._fill(list(value))

    def _clear(self) -> bool:
        self._fill([])
        return True

    def reset(self) -> None:
        """Back to the default rows (or none)."""
        self._fill(list(self.default) if isinstance(self.default, list) else [])


class ObjectField(Field):
    """An object with `properties`: a fieldset (bold label, left border) of child fields.

    An optional object whose fields were left as they were is omitted.
    """

    kind = "object"

    def _build(self) -> widgets.Widget:
        properties = self.schema.get("properties") or {}
        required = set(self.schema.get("required") or [])
        self.fields: dict[str, Field] = {
            name: make_field(
                name,
                f"{self.path}.{name}",
                spec,
                required=name in required,
                depth=self.depth + 1,
                context=self._context,
            )
            for name, spec in properties.items()
        }
        if isinstance(self.default, dict):
            for name, value in self.default.items():
                if name in self.fields:
                    try:
                        self.fields[name].set(value)
                    except FormError:
                        pass
                    self.fields[name]._initial = self.fields[name]._state()
        star = ' <span style="color:red">*</span>' if self.required else ""
        header = widgets.HTML(value=f"<b>{html.escape(self.name)}</b>{star}")
        if self.description:
            header.tooltip = _clip(self.description, 500)
        children: list[widgets.Widget] = [header]
        help_line = self._help(indent=False)
        if help_line is not None:
            children.append(help_line)
        children.extend(field.widget for field in self.fields.values())
        return widgets.VBox(
            children,
            layout=widgets.Layout(
                width="100%", border_left="3px solid #cfd8dc", padding="0 0 0 10px", margin="4px 0 6px 0"
            ),
        )

    def _wrap(self) -> widgets.Widget:
        return self.input

    def _state(self) -> Any:
        return [field._state() for field in self.fields.values()]

    def _get(self) -> Any:
        if self.can_unset and self.untouched():
            return self._empty()
        return values_of(self.fields)

    def _set(self, value: Any) -> None:
        if not isinstance(value, dict):
            raise self._fail(f"expected an object, got {json_type(value)}")
        unknown = [k for k in value if k not in self.fields]
        if unknown:
            raise FormError(f"{self.path}.{unknown[0]}", "unknown field (use JSON mode)")
        for name, field in self.fields.items():
            field.set(value.get(name, UNSET))

    def _clear(self) -> bool:
        self.reset()
        return True

    def reset(self) -> None:
        """Every child back to its initial state."""
        for field in self.fields.values():
            field.reset()
            if isinstance(self.default, dict) and self.default.get(field.name) is not None:
                try:
                    field.set(self.default[field.name])
                except FormError:
                    pass


class JsonField(Field):
    """Anything a form cannot show well (deep objects, arrays of objects, unions): a JSON Textarea."""

    kind = "json"

    def _build(self) -> widgets.Widget:
        placeholder = ""
        try:
            from workbench_magic.engine.schema import example_value

            placeholder = json.dumps(example_value(self.schema, self._context.root, 1), ensure_ascii=False)
        except Exception:  # a schema the example helper does not understand: no placeholder
            placeholder = "JSON"
        object_like = self.schema.get("type") in ("object", "array") or "properties" in self.schema
        return widgets.Textarea(
            value=self._initial_text(),
            placeholder=_clip(placeholder, 300),
            rows=4 if object_like else 2,
            description_allow_html=False,
            layout=widgets.Layout(width="100%"),
        )

    def _initial_text(self) -> str:
        return "" if self.default is UNSET else dumps(self.default)

    def _kinds(self) -> list[str]:
        kind = self.schema.get("type")
        if isinstance(kind, str):
            return [kind]
        if isinstance(kind, list):
            return [k for k in kind if isinstance(k, str)]
        return []

    def _get(self) -> Any:
        text = self.input.value.strip()
        if not text:
            if self.can_unset:
                return self._empty()
            raise self._fail("required: enter a JSON value")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._fail(json_error(exc)) from None
        kinds = self._kinds()
        if kinds and not (value is None and self.nullable) and not any(_fits(value, k) for k in kinds):
            raise self._fail(f"expected {' or '.join(kinds)}, got {json_type(value)}")
        return value

    def _set(self, value: Any) -> None:
        try:
            self.input.value = dumps(value)
        except (TypeError, ValueError) as exc:
            raise self._fail(f"not JSON-serializable: {exc}") from None

    def _clear(self) -> bool:
        self.input.value = ""
        return True

    def reset(self) -> None:
        """Back to the default (or empty)."""
        self.input.value = self._initial_text()


_SIMPLE = ("string", "integer", "number", "boolean")


def _field_class(spec: dict[str, Any], depth: int, context: FieldContext) -> type[Field]:
    if _is_choice(spec):
        return ChoiceField
    if "anyOf" in spec or "oneOf" in spec:
        return JsonField
    kind = spec.get("type")
    if kind is None:
        kind = "object" if "properties" in spec else "array" if "items" in spec else None
    if kind == "string":
        return TextField
    if kind in ("integer", "number"):
        return NumberField
    if kind == "boolean":
        return BoolField
    if kind == "array":
        items, items_null = normalize(spec.get("items") or {}, context.root)
        simple = _is_choice(items) or (
            items.get("type") in _SIMPLE and not items_null and "anyOf" not in items and "oneOf" not in items
        )
        return ListField if simple and "prefixItems" not in spec else JsonField
    if kind == "object" and isinstance(spec.get("properties"), dict) and spec["properties"]:
        return ObjectField if depth < context.max_depth else JsonField
    return JsonField


def values_of(fields: Mapping[str, Field]) -> dict[str, Any]:
    """The values of `fields` by name; fields left unset are omitted."""
    values = {}
    for name, field in fields.items():
        value = field.get()
        if value is not UNSET:
            values[name] = value
    return values


def make_field(
    name: str,
    path: str,
    raw: Any,
    *,
    required: bool,
    depth: int,
    context: FieldContext,
    bare: bool = False,
    css_class: str | None = None,
) -> Field:
    spec, nullable = normalize(raw, context.root)
    cls = _field_class(spec, depth, context)
    return cls(
        name,
        path,
        spec,
        required=required,
        nullable=nullable,
        depth=depth,
        context=context,
        bare=bare,
        css_class=css_class,
    )
