"""Fields of one simple value: text, numbers, booleans, and choices among constants (`enum`)."""

from __future__ import annotations

import json
import math
from typing import Any

import ipywidgets as widgets

from workbench_magic.notebook.widgets.fields import UNSET, UNSET_LABEL, Field, json_type

__all__ = ["BoolField", "ChoiceField", "NumberField", "TextField"]


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1 and "1" != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


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
                options=[(UNSET_LABEL, UNSET), ("true", True), ("false", False)],
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
        options = [(UNSET_LABEL if v is UNSET else str(v), v) for v in self.choices]
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
