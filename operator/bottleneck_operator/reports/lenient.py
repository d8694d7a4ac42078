"""Reading an object's API form into a model as far as it validates, for pages and tables that show it.

An object another version of the operator wrote is shown as fully as it can be: a field of a newer
operator is left out, a value that does not validate is left out at the smallest level that can
lose it (a field, a list item, a dict entry), and a field this version requires that an older
operator did not write reads as its type's empty value, so the rest of its item is still shown.
Nothing here is written back: the operator rewrites what it owns from its own models.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

M = TypeVar("M", bound=BaseModel)


class Unreadable(ValueError):
    """A value that cannot be kept, not even as its type's empty value."""


def lenient(model: type[M], raw: Mapping[str, Any]) -> M:
    """``raw`` (the API's camelCase JSON) as ``model``, leaving out what does not validate.

    Raises:
        Unreadable: a required field is absent or refused and its type has no empty value (a Literal).
    """
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias if field.alias is not None and field.alias in raw else name
        if key in raw:
            try:
                values[name] = _value(field.annotation, raw[key])
                continue
            except Unreadable:
                pass
        if field.is_required():
            values[name] = _empty(field.annotation)
    return _validated(model, values)


def _validated(model: type[M], values: dict[str, Any]) -> M:
    try:
        # By name: every model read here populates by name as well as by alias.
        return model.model_validate(values)
    except ValidationError as exc:
        # A constraint on the field itself (a bound, a pattern) refused a value its type accepted.
        names = {f.alias or n: n for n, f in model.model_fields.items()} | {n: n for n in model.model_fields}
        locs = (str(err["loc"][0]) for err in exc.errors() if err["loc"])
        bad = {names[loc] for loc in locs if loc in names}
    for name in bad & values.keys():
        field = model.model_fields[name]
        if field.is_required():
            values[name] = _empty(field.annotation)
        else:
            del values[name]
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise Unreadable(str(exc)) from exc


def _value(annotation: Any, raw: Any) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if not isinstance(raw, Mapping):
            raise Unreadable(annotation.__name__)
        return lenient(annotation, raw)
    if origin is list:
        if not isinstance(raw, list):
            raise Unreadable("not a list")
        return [v for v in (_kept(args[0], item) for item in raw) if v is not _LEFT_OUT]
    if origin is dict:
        if not isinstance(raw, Mapping):
            raise Unreadable("not an object")
        kept = {k: _kept(args[1], v) for k, v in raw.items() if isinstance(k, str)}
        return {k: v for k, v in kept.items() if v is not _LEFT_OUT}
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if raw is None:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _value(inner[0], raw)
    try:
        return _adapter_for(annotation).validate_python(raw)
    except ValidationError as exc:
        raise Unreadable(str(exc)) from exc


_LEFT_OUT = object()


def _kept(annotation: Any, raw: Any) -> Any:
    try:
        return _value(annotation, raw)
    except Unreadable:
        return _LEFT_OUT


def _adapter_for(annotation: Any) -> TypeAdapter[Any]:
    try:
        return _adapter(annotation)
    except TypeError:  # an annotation whose metadata cannot be hashed: built afresh
        return TypeAdapter(annotation)


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    # Built once per type: a summary's lists repeat the same few scalar types hundreds of times.
    return TypeAdapter(annotation)


def _empty(annotation: Any) -> Any:
    """The empty value of a required field that was not written (or not readable)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _empty(args[0])
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return lenient(annotation, {})
    empties: dict[Any, Any] = {list: [], dict: {}, str: "", int: 0, float: 0.0, bool: False}
    key = origin if origin is not None else annotation
    if key not in empties:
        raise Unreadable(f"no empty value for {annotation!r}")
    return empties[key]
