"""Fields of structured values, and `make_field`, which picks the field for a schema node.

Lists of simple values get one row per item, objects nest as fieldsets, and everything a form
cannot show well gets a per-field JSON editor. Lists and objects build their items and children
with `make_field`, which in turn may choose them: they live together.
"""

from __future__ import annotations

import html
import json
from typing import Any

import ipywidgets as widgets

from workbench_magic.notebook.widgets.fields import (
    UNSET,
    Field,
    FieldContext,
    FormError,
    clip,
    dumps,
    field_css_class,
    is_choice,
    json_error,
    json_type,
    normalize,
    values_of,
)
from workbench_magic.notebook.widgets.scalar_fields import BoolField, ChoiceField, NumberField, TextField

__all__ = ["JsonField", "ListField", "ObjectField", "make_field"]


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
            css_class=field_css_class(self.path) + "-item",
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
            header.tooltip = clip(self.description, 500)
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
            placeholder=clip(placeholder, 300),
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


def _fits(value: Any, kind: str) -> bool:
    """Whether `value` is of JSON Schema type `kind` (unknown kinds accept anything)."""
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = {"string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}.get(kind)
    return expected is None or isinstance(value, expected)


_SIMPLE = ("string", "integer", "number", "boolean")


def _field_class(spec: dict[str, Any], depth: int, context: FieldContext) -> type[Field]:
    if is_choice(spec):
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
        simple = is_choice(items) or (
            items.get("type") in _SIMPLE and not items_null and "anyOf" not in items and "oneOf" not in items
        )
        return ListField if simple and "prefixItems" not in spec else JsonField
    if kind == "object" and isinstance(spec.get("properties"), dict) and spec["properties"]:
        return ObjectField if depth < context.max_depth else JsonField
    return JsonField


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
    """The field for schema node `raw` (normalized first): its class chosen by type, objects nested
    down to `context.max_depth` levels, and a JSON editor for what no other field shows well."""
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
