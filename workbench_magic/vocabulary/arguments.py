"""A call's arguments as JSON values: what `wb.call`, `acall`, `submit`, `start` and `wb.map` send.

One walk over the arguments, before anything is sent: numpy and pandas values become plain ones
(scalars, arrays as lists, `Timestamp`s and dates as ISO text, `NA` / `NaT` None), tuples lists,
str / int / float subclasses (enums) their plain values, paths and UUIDs their text. A value with
no JSON form (an object, a set, bytes, a key that is not a string, NaN or infinity) or text that
cannot be encoded as UTF-8 (a lone surrogate, as `os.listdir` gives for a file name that is not
UTF-8) is an `ArgumentError` naming the argument by its path (`rows[2].x`): sent, it would fail
the call or close the connection of every call in flight.

A missing value as an argument's own value (NaN, `NA`, `NaT`: a DataFrame's empty cell) is not
sent: the one rule of `wb.call` and `wb.map` (`given_arguments`, `refuse_missing`) leaves an
optional argument out, so that its default applies, and refuses a required one, naming it. A
`wb.map` row keeps such a value as NaN until its call applies the rule (a DataFrame's None too:
pandas' empty cell of a column of objects). A None given in a mapping is JSON null, sent as it is,
but for an optional argument whose schema does not allow null: that null means "absent" too (what
a model in OpenAI's strict mode sends for an argument it leaves out), so it is left out, and the
workbench's logger says so (`leave_out_nulls`); a required one is the schema check's to refuse.

Plain JSON values cost a type check each and are not copied (only the top mapping is: the
call keeps the arguments it sent). numpy and pandas are never imported here: their values are
known by their type's module.
"""

from __future__ import annotations

import datetime
import logging
import math
import operator
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import UsageError, invalid_arguments, raise_alone

if TYPE_CHECKING:
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.listings import ToolInfo

logger = logging.getLogger("workbench_magic")

_isfinite = math.isfinite
_SCALARS = frozenset({int, bool, type(None)})
"""Types whose values are JSON values as they are (str and float need a look)."""

_DETAIL = 300
"""Characters of a problem's detail at most (as the schema check's)."""


class _NoJsonForm(Exception):
    """A value that cannot be sent; `path` grows (innermost first) as it leaves the walk."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str | int] = []


def call_arguments(arguments: Any, ident: ToolIdentifier) -> dict[str, Any]:
    """The arguments of a call of `ident` as JSON values, in a new dict, without those whose value is
    missing (`given_arguments`).

    Args:
        arguments: a mapping of argument names to values, or None (no arguments).
        ident: the tool called (named in the error).

    Returns:
        The arguments to send: a new top mapping; nested plain values are the caller's own.

    Raises:
        UsageError: `arguments` is not a mapping (a JSON text, a list).
        ArgumentError: a value has no JSON form or cannot be encoded; it names the argument.
    """
    return given_arguments(arguments, ident)[0]


def given_arguments(arguments: Any, ident: ToolIdentifier) -> tuple[dict[str, Any], dict[str, str]]:
    """`call_arguments`, and the arguments it left out because their value is missing (NaN, `NA`,
    `NaT`), each with the word for its value: what `refuse_missing` needs once the tool is known.

    Raises:
        UsageError: `arguments` is not a mapping (a JSON text, a list).
        ArgumentError: a value has no JSON form or cannot be encoded; it names the argument.
    """
    if arguments is None:
        return {}, {}
    if type(arguments) is not dict and not isinstance(arguments, Mapping):
        raise_alone(UsageError(not_a_mapping(arguments)))
    missing = _missing(arguments)
    if missing:
        arguments = {name: value for name, value in arguments.items() if name not in missing}
    try:
        return _mapping(arguments, False, True), {_printable(str(name)): word for name, word in missing.items()}
    except _NoJsonForm as problem:
        detail = _detail(problem)
    except RecursionError:
        detail = "the arguments are nested too deeply (or contain themselves)"
    raise_alone(invalid_arguments(ident.name, detail, server=ident.server, toolbox=ident.toolbox))


def refuse_missing(tool: ToolInfo, missing: Mapping[str, str]) -> None:
    """The rule for the arguments whose value is missing (`given_arguments`): an optional one is left
    out (its default applies), a required one is an `ArgumentError` naming it.

    Raises:
        ArgumentError: one of them is required by `tool`.
    """
    required = [name for name in missing if name in tool.required]
    if not required:
        return
    words = ", ".join(dict.fromkeys(missing[name] for name in required))
    if len(required) == 1:
        detail = f"argument '{required[0]}' is required, and its value is missing ({words})"
    else:
        names = ", ".join(f"'{name}'" for name in required)
        detail = f"arguments {names} are required, and their values are missing ({words})"
    raise_alone(invalid_arguments(tool.name, detail, server=tool.server, toolbox=tool.toolbox))


def has_null(arguments: Mapping[str, Any]) -> bool:
    """Whether an argument's own value is None (JSON null): `leave_out_nulls` has a look then."""
    return any(value is None for value in arguments.values())


def leave_out_nulls(tool: ToolInfo, arguments: dict[str, Any], allows_null: Callable[[str], bool]) -> dict[str, Any]:
    """The rule for a None (JSON null) given as an argument's value: for an optional argument of
    `tool` whose schema does not allow null (`allows_null(name)`, asked of those only) it means
    "absent", as a missing value does: left out, so that its default applies, with a line on the
    workbench's logger. A required argument's null, one its schema allows, and one for an argument
    the schema does not declare are sent as they were given (the schema check judges them).

    Returns:
        `arguments` itself when nothing is left out, else a new dict without those arguments.
    """
    declared, required = tool.parameters, tool.required
    absent = [
        name
        for name, value in arguments.items()
        if value is None and name in declared and name not in required and not allows_null(name)
    ]
    if not absent:
        return arguments
    for name in absent:
        logger.info("%s: %s", tool.identifier, null_left_out(name))
    return {name: value for name, value in arguments.items() if name not in absent}


def null_left_out(name: str) -> str:
    """`argument 'x' is null, which its schema does not allow, and optional: left out (its default applies)`."""
    detail = "is null, which its schema does not allow, and optional: left out (its default applies)"
    return f"argument '{_printable(name)}' {detail}"


def row_arguments(row: Mapping[Any, Any], *, frame: bool = False) -> dict[str, Any]:
    """A `wb.map` row as JSON values, leniently: an argument whose value is missing (NaN, `NA`,
    `NaT`; with `frame`, a DataFrame's row, None too) keeps NaN, for its call to apply the rule of
    missing values (`refuse_missing`); NaN deeper in a value is None, a set a list, a key its text;
    a value with no JSON form is kept as it is, for the row's call to refuse (`call_arguments`) as
    that row's error.

    Args:
        row: one row's mapping of argument names to values.
        frame: the row is a DataFrame's (where None is an empty cell).

    Returns:
        A new dict.
    """
    missing = _missing(row, none=frame)
    try:
        out = _mapping(row, True, True)
    except RecursionError:
        return dict(row)  # its call says so
    for name in missing:
        out[_key(name, True)] = math.nan
    return out


def not_a_mapping(arguments: Any) -> str:
    """`Tool arguments must be a mapping of argument names to values, not a str (...)`."""
    kind = type(arguments).__name__
    article = "an" if kind[:1].lower() in ("a", "e", "i", "o", "u") else "a"
    hint = " (parse JSON text with json.loads first)" if isinstance(arguments, str | bytes) else ""
    return f"Tool arguments must be a mapping of argument names to values, not {article} {kind}{hint}"


def _detail(problem: _NoJsonForm) -> str:
    path = problem.path[::-1]
    parts = [f"[{p}]" if isinstance(p, int) else _printable(p) for p in path]
    where = ".".join(parts).replace(".[", "[")
    detail = f"argument '{where}': {problem.reason}" if where else problem.reason
    return detail if len(detail) <= _DETAIL else detail[: _DETAIL - 3] + "..."


def _printable(text: str) -> str:
    """`text` with any lone surrogate as `\\udXXX` (a message must print)."""
    return text if _encodes(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _encodes(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unencodable(text: str, what: str) -> str:
    index = next(i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff")
    return f"{what} cannot be encoded as UTF-8 (a lone surrogate {text[index]!r} at index {index})"


# ---- the walk: `loose` is `wb.map`'s row mode (see `row_arguments`) ------------------------------
def _value(value: Any, loose: bool) -> Any:
    kind = type(value)
    if kind is str:
        if value.isascii() or _encodes(value) or loose:
            return value
        raise _NoJsonForm(_unencodable(value, "the text"))
    if kind in _SCALARS:
        return value
    if kind is float:
        if _isfinite(value):
            return value
        return _not_finite(value, loose)
    if kind is dict:
        return _mapping(value, loose, False)
    if kind is list:
        return _list(value, loose)
    return _other(value, loose)


def _mapping(value: Mapping[Any, Any], loose: bool, copy: bool) -> dict[str, Any]:
    """`value` as a dict of JSON values: itself when nothing changes and `copy` is not asked."""
    out: dict[str, Any] | None = {} if copy else None
    for key, item in value.items():
        name = key if type(key) is str and (key.isascii() or _encodes(key)) else _key(key, loose)
        kind = type(item)
        if kind in _SCALARS or (kind is str and item.isascii()) or (kind is float and _isfinite(item)):
            new = item  # the common case, without a call
        else:
            try:
                new = _value(item, loose)
            except _NoJsonForm as problem:
                problem.path.append(name)
                raise
        if out is None:
            if new is item and name is key:
                continue
            out = {}
            for before, kept in value.items():  # the items up to here, unchanged
                if before is key:
                    break
                out[before] = kept
        out[name] = new
    return value if out is None else out  # type: ignore[return-value]


def _key(key: Any, loose: bool) -> str:
    if isinstance(key, str):
        text = str.__str__(key)  # a str subclass (StrEnum) as its text
        if _encodes(text) or loose:
            return text
        problem = _NoJsonForm(_unencodable(text, "the name"))
        problem.path.append(text)
        raise problem
    if loose:
        return str(key)
    raise _NoJsonForm(f"key {key!r} is not a string")


def _list(value: list[Any], loose: bool) -> list[Any]:
    """`value` as a list of JSON values: itself when nothing changes."""
    out: list[Any] | None = None
    for index, item in enumerate(value):
        kind = type(item)
        if kind in _SCALARS or (kind is str and item.isascii()) or (kind is float and _isfinite(item)):
            new = item  # the common case, without a call
        else:
            try:
                new = _value(item, loose)
            except _NoJsonForm as problem:
                problem.path.append(index)
                raise
        if out is None:
            if new is item:
                continue
            out = value[:index]
        out.append(new)
    return value if out is None else out


def _missing(arguments: Mapping[Any, Any], *, none: bool = False) -> dict[Any, str]:
    """The names whose value is missing (NaN, `NA`, `NaT`; with `none`, None too), each with the word
    for its value; `{}` (the common case) at the cost of a type check per value."""
    found: dict[Any, str] = {}
    for name, value in arguments.items():
        kind = type(value)
        if kind is str or kind is int or kind is bool or kind is dict or kind is list:
            continue
        word = "None" if none and value is None else _missing_word(value)
        if word is not None:
            found[name] = word
    return found


def _missing_word(value: Any) -> str | None:
    """`NaN`, `NA` or `NaT` for a missing value (numpy and pandas ones known by their type's module,
    neither imported here), else None."""
    if isinstance(value, float):  # numpy's float64 too
        return "NaN" if value != value else None
    kind = type(value)
    module = kind.__module__.partition(".")[0]
    if module == "pandas":
        return {"NAType": "NA", "NaTType": "NaT"}.get(kind.__name__)
    if module == "numpy" and getattr(value, "shape", None) == ():  # a scalar (or a 0-d array)
        letter = getattr(getattr(value, "dtype", None), "kind", "")
        if letter in ("f", "m", "M") and bool(value != value):
            return "NaN" if letter == "f" else "NaT"
    return None


def _not_finite(value: float, loose: bool) -> Any:
    if loose:
        return None if math.isnan(value) else value  # NaN: a DataFrame's empty cell
    word = "NaN" if math.isnan(value) else "infinity" if value > 0 else "-infinity"
    raise _NoJsonForm(f"{word} has no JSON form")


def _other(value: Any, loose: bool) -> Any:
    """Anything but an exact str, int, bool, None, float, dict or list."""
    kind = type(value)
    module = kind.__module__.partition(".")[0]
    if module == "numpy" or module == "pandas":
        converted = _foreign(value, kind.__name__, module, loose)
        if converted is not _UNKNOWN:
            return converted
    if isinstance(value, str):
        return _value(str.__str__(value), loose)
    if isinstance(value, int):
        return operator.index(value)
    if isinstance(value, float):
        return _value(float.__float__(value), loose)
    if isinstance(value, Mapping):
        return _mapping(value, loose, True)
    if isinstance(value, list):
        return _list(list(value), loose)
    if isinstance(value, tuple) or (loose and isinstance(value, set | frozenset)):
        return _list(list(value), loose)
    if isinstance(value, datetime.date | datetime.time):  # datetime, pandas.Timestamp too
        return value.isoformat()
    if isinstance(value, os.PathLike) or kind.__module__ == "uuid":  # a path, a UUID: their text
        text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
        if isinstance(text, str):
            return _value(text, loose)
    if loose:
        return value
    raise _NoJsonForm(f"a value of type '{kind.__name__}' has no JSON form")


_UNKNOWN = object()
"""`_foreign`'s answer for a numpy or pandas value it leaves to the general rules."""


def _foreign(value: Any, name: str, module: str, loose: bool) -> Any:
    """A numpy or pandas value (neither imported here) as JSON values, or `_UNKNOWN`."""
    if module == "pandas":
        if name in ("NAType", "NaTType"):
            return None
        if hasattr(value, "columns") and hasattr(value, "to_dict"):  # a DataFrame: its rows
            return _value(value.to_dict(orient="records"), loose)
        if isinstance(value, datetime.date | datetime.time):
            return value.isoformat()
    elif name == "datetime64":
        return None if value != value else str(value)  # NaT is not equal to itself
    elif name == "timedelta64":
        return _UNKNOWN
    elif name == "ndarray" and value.dtype.kind in "Mm":  # `tolist` gives dates as integers
        return _list(list(value), loose)
    if hasattr(value, "tolist"):  # numpy scalars and arrays, pandas Series and Index
        return _value(value.tolist(), loose)
    return _UNKNOWN


__all__ = [
    "call_arguments",
    "given_arguments",
    "has_null",
    "leave_out_nulls",
    "not_a_mapping",
    "null_left_out",
    "refuse_missing",
    "row_arguments",
]
