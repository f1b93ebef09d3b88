"""How `Workbench` hands a public name to the collaborator that implements it.

`call = delegate(Calls.call, to="_calls")` in the class body makes `wb.call` the method `call` of
`wb._calls`, bound: its signature, docstring and type are the collaborator's (`help(wb.call)`,
`wb.call?` and mypy see them). On the class, `Workbench.call` is a function of `Workbench` with the
collaborator's docstring and signature, for the reference docs. `delegate_property` does the same for
a property, its setter included.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

__all__ = ["delegate", "delegate_property"]


class delegate(Generic[P, R]):
    """`name = delegate(Collaborator.name, to="_slot")`: `owner.name` is `owner._slot.name`."""

    def __init__(self, method: Callable[Concatenate[Any, P], R], *, to: str) -> None:
        self._method = method
        self._to = to
        self._name = method.__name__
        self._shown: Callable[..., R] | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"{owner.__name__}.{name} delegates to {self._method.__qualname__}: name them alike")
        method = self._method
        to = self._to

        @functools.wraps(method)
        def shown(self: Any, *args: Any, **kwargs: Any) -> R:
            return getattr(getattr(self, to), name)(*args, **kwargs)  # type: ignore[no-any-return]

        shown.__qualname__ = f"{owner.__qualname__}.{name}"
        shown.__module__ = owner.__module__
        shown.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
        del shown.__wrapped__  # the docs show this function, in this class's module
        self._shown = shown

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Callable[..., R]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> Callable[..., R]:
        if obj is None:
            assert self._shown is not None
            return self._shown
        return getattr(getattr(obj, self._to), self._name)  # type: ignore[no-any-return]


class delegate_property(Generic[T]):
    """`name = delegate_property(Collaborator.name, to="_slot")` for a property (and its setter)."""

    def __init__(self, prop: Callable[[Any], T], *, to: str) -> None:
        # mypy types a property read on its class as its getter; at run time it is the property
        shown: Any = prop
        assert isinstance(shown, property) and shown.fget is not None
        self._to: str = to
        self._name: str = shown.fget.__name__
        self.__doc__ = shown.__doc__
        self._readonly: bool = shown.fset is None

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"{owner.__name__}.{name} delegates to the property {self._name}: name them alike")

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> delegate_property[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | delegate_property[T]:
        if obj is None:
            return self
        return getattr(getattr(obj, self._to), self._name)  # type: ignore[no-any-return]

    def __set__(self, obj: object, value: Any) -> None:
        if self._readonly:
            raise AttributeError(f"property {self._name!r} of {type(obj).__name__!r} object has no setter")
        setattr(getattr(obj, self._to), self._name, value)
