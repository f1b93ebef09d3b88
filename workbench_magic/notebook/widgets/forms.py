"""Argument forms generated from an MCP tool's JSON Schema (`input_schema`).

`SchemaForm(tool.input_schema)` builds an ipywidgets form out of core widgets only (no
frontend code): one `Field` per argument, nested fieldsets for objects, rows for lists of
simple values, and a per-field JSON editor for everything a form cannot show well. A
Form/JSON toggle switches to a JSON editor of the whole arguments object. `form.value` gives
the typed arguments (ints stay ints, objects stay dicts); optional fields left empty are
omitted, and bad input raises `FormError` naming the field path.
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
    dumps,
    json_error,
    json_type,
    normalize,
    values_of,
)
from workbench_magic.notebook.widgets.structured_fields import ObjectField, make_field

__all__ = ["SchemaForm", "close_tree"]


# ---- the form ----------------------------------------------------------------------------


def close_tree(*roots: widgets.Widget) -> int:
    """Close widgets and every widget they hold (children, layouts, styles); how many closed.

    ipywidgets keeps every open widget alive in a registry until it is closed, so widgets that
    are dropped without this stay in the kernel (and in the front end) for good.
    """
    seen: set[int] = set()
    stack = list(roots)
    found: list[widgets.Widget] = []
    while stack:
        widget = stack.pop()
        if id(widget) in seen:
            continue
        seen.add(id(widget))
        found.append(widget)
        for name in widget.keys:
            value = getattr(widget, name, None)
            if isinstance(value, widgets.Widget):
                stack.append(value)
            elif isinstance(value, list | tuple):
                stack.extend(v for v in value if isinstance(v, widgets.Widget))
    closed = 0
    for widget in found:
        if widget.comm is not None:
            closed += 1
        widget.close()
    return closed


class SchemaForm:
    """An ipywidgets form for a tool's `input_schema`, with a Form/JSON toggle.

    `widget` is the whole form (display it); `value` gives the typed arguments of the current
    mode and raises `FormError` naming the field; `set_value` fills both modes. Objects nest
    as fieldsets down to `max_depth` levels; deeper ones get a JSON editor.
    """

    def __init__(self, schema: dict[str, Any], *, max_depth: int = 2) -> None:
        self.schema = schema if isinstance(schema, dict) else {}
        self.max_depth = max_depth
        context = FieldContext(root=self.schema, max_depth=max_depth)
        root, _ = normalize(self.schema, self.schema)
        properties = root.get("properties") if isinstance(root.get("properties"), dict) else {}
        required = set(root.get("required") or [])
        self.fields: dict[str, Field] = {
            name: make_field(name, name, spec, required=name in required, depth=0, context=context)
            for name, spec in (properties or {}).items()
        }
        self.mode = widgets.ToggleButtons(
            options=["Form", "JSON"],
            value="Form",
            description_allow_html=False,
            style={"button_width": "64px"},
            layout=widgets.Layout(width="auto", margin="0 0 6px 0"),
        )
        self.mode.add_class("wb-form-mode")
        self.fields_box = widgets.VBox(
            [field.widget for field in self.fields.values()]
            or [widgets.HTML("<i style='color:#777'>This tool takes no arguments.</i>")],
            layout=widgets.Layout(width="100%"),
        )
        self.json_text = widgets.Textarea(
            value="{}",
            placeholder="{}",
            rows=12,
            description_allow_html=False,
            layout=widgets.Layout(width="100%"),
        )
        self.json_text.add_class("wb-form-json")
        self.error = widgets.HTML(value="", layout=widgets.Layout(display="none", margin="2px 0"))
        self.error.add_class("wb-form-error")
        self.widget = widgets.VBox([self.mode, self.fields_box, self.error], layout=widgets.Layout(width="100%"))
        self.widget.add_class("wb-form")
        try:
            self.json_text.value = dumps(self._form_value())
        except FormError:
            pass
        self._switching = False
        self.mode.observe(self._on_mode, names="value")

    # -- values
    @property
    def value(self) -> dict[str, Any]:
        """The arguments of the current mode; optional fields left empty are omitted. Raises `FormError`."""
        if self.mode.value == "JSON":
            return self._json_value()
        return self._form_value()

    def _form_value(self) -> dict[str, Any]:
        return values_of(self.fields)

    def _json_value(self) -> dict[str, Any]:
        text = self.json_text.value.strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormError("arguments", json_error(exc)) from None
        if not isinstance(value, dict):
            raise FormError("arguments", f"expected a JSON object, got {json_type(value)}")
        return value

    def set_value(self, value: dict[str, Any]) -> None:
        """Fill the form (fields missing from `value` go back to their defaults) and the JSON text.

        Raises `FormError` for a key that is not an argument or a value of the wrong type.
        """
        if not isinstance(value, dict):
            raise FormError("arguments", f"expected an object, got {json_type(value)}")
        unknown = [k for k in value if k not in self.fields]
        if unknown:
            raise FormError(str(unknown[0]), "unknown argument (use JSON mode)")
        for name, field in self.fields.items():
            field.set(value.get(name, UNSET))
        self.json_text.value = dumps(value)
        self._show_error("")

    def field(self, path: str) -> Field:
        """The field at a dotted path (`"config.inner.label"`); `KeyError` when there is none."""
        fields: dict[str, Field] | None = self.fields
        found: Field | None = None
        for part in path.split("."):
            if fields is None or part not in fields:
                raise KeyError(path)
            found = fields[part]
            fields = found.fields if isinstance(found, ObjectField) else None
        if found is None:
            raise KeyError(path)
        return found

    # -- mode switching
    def _show_error(self, message: str) -> None:
        self.error.value = (
            f'<div style="color:#c62828;font-size:0.85em">{html.escape(message)}</div>' if message else ""
        )
        self.error.layout.display = "" if message else "none"

    def _show(self, mode: str) -> None:
        body = self.json_text if mode == "JSON" else self.fields_box
        self.widget.children = [self.mode, body, self.error]

    def _revert(self, mode: str) -> None:
        self._switching = True
        try:
            self.mode.value = mode
        finally:
            self._switching = False

    def _on_mode(self, change: dict[str, Any]) -> None:
        if self._switching:
            return
        if change["new"] == "JSON":
            try:
                value = self._form_value()
            except FormError as exc:
                self._revert("Form")
                self._show_error(str(exc))
                return
            self.json_text.value = dumps(value)
            self._show_error("")
            self._show("JSON")
        else:
            try:
                self.set_value(self._json_value())
            except FormError as exc:
                self._revert("JSON")
                self._show_error(str(exc))
                return
            self._show_error("")
            self._show("Form")

    def close(self) -> None:
        """Close every widget of the form (both modes)."""
        close_tree(self.widget, self.fields_box, self.json_text)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, with static fallbacks for frontends without widgets (never a bare `VBox(...)`)."""
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = repr(self)
        rows = "".join(
            f"<tr><td><code>{html.escape(name)}</code>{' *' if field.required else ''}</td>"
            f"<td>{html.escape(str(field.schema.get('type', 'value')))}</td>"
            f"<td>{html.escape(field.description or '')}</td></tr>"
            for name, field in self.fields.items()
        )
        bundle["text/html"] = (
            "<table class='wb-form-static'><thead><tr><th>argument</th><th>type</th><th>description</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
        )
        return bundle

    def __repr__(self) -> str:
        return f"<SchemaForm fields={list(self.fields)} mode={self.mode.value!r}>"
