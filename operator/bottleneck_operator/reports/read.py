"""Reading a report's ``.status`` from the API into :class:`ReportStatus`: the one place it is parsed.

The models forbid unknown fields so that what this version writes matches the CRD exactly. What it
reads may come from another version of the operator: a newer one adds fields (left out here, at
every level, rather than refused), an older one may have written values this version no longer
accepts (left out too when the caller asks, so the operator keeps working on that report and
rewrites it whole on its next analysis).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from bottleneck_operator.reports.model import ReportStatus


def read_status(raw: Mapping[str, Any] | None, *, drop_invalid: bool = False) -> ReportStatus:
    """A report's status (the API's camelCase JSON) as the typed model.

    Args:
        raw: the ``.status`` object as the API returns it (None or empty: a report not written yet).
        drop_invalid: leave out top-level fields whose value does not validate, instead of raising.

    Returns:
        The typed status, fields unknown to this version left out.

    Raises:
        pydantic.ValidationError: a known field has a value the model refuses (unless ``drop_invalid``).
    """
    known = known_only(ReportStatus, raw or {})
    try:
        return ReportStatus.model_validate(known)
    except ValidationError as exc:
        if not drop_invalid:
            raise
        bad = {err["loc"][0] for err in exc.errors() if err["loc"]}
        return ReportStatus.model_validate({k: v for k, v in known.items() if k not in bad})


def known_only(model: type[BaseModel], raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with only the keys ``model`` declares (by alias or name), nested models likewise."""
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias if field.alias is not None and field.alias in raw else name
        if key not in raw:
            continue
        value, nested = raw[key], _nested_model(field.annotation)
        if nested is not None and isinstance(value, Mapping):
            value = known_only(nested, value)
        elif nested is not None and isinstance(value, list):
            value = [known_only(nested, v) if isinstance(v, Mapping) else v for v in value]
        out[key] = value
    return out


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, directly or in a list or an optional (None: a plain value)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (list, typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _nested_model(arg)
            if found is not None:
                return found
    return None
