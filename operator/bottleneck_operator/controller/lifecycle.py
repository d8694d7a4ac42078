"""The lifecycle mirror: what the retention sweep needs of a report, kept in one annotation too.

The sweep decides about a report from where it is, whose it is, whether it is final and when its
Job ended (:class:`~bottleneck_operator.reports.Lifecycle`). A report's status weighs up to ~50 KB,
and reading thousands of them (the JSON decoded on the event loop, one C call each page) held up
the admission webhook. So those few fields are mirrored in the ``bottleneck.dev/lifecycle``
annotation, e.g. ``{"ended":"2026-11-20T08:00:00Z","jobKind":"Job","phase":"Completed"}``, and
the sweep lists reports' metadata alone (a few hundred bytes each).

The status stays the truth. The mirror is in the body a report is created with (``report_body``),
is written again after any status write whose result it no longer matches, and whenever the
operator reads a whole report that it does not match (an adopted report, one the sweep re-reads
and keeps); a report written before the mirror existed has none. The sweep never acts on the
mirror alone: a report it would delete or close is read whole first and decided on that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bottleneck_operator.contract.names import LIFECYCLE_ANNOTATION
from bottleneck_operator.kube.client import METADATA_KIND
from bottleneck_operator.reports import FINAL_PHASES, Lifecycle, read_lifecycle

__all__ = [
    "annotation",
    "annotations_of",
    "lifecycle_of",
    "mirror_of",
    "mirrored",
    "stale_mirror",
    "whole",
    "with_mirror",
]

Mirror = dict[str, str]


def mirror_of(raw: Mapping[str, Any]) -> Mirror:
    """The mirror a whole report should carry: its job kind, and its phase and end once final.

    A running report's end would be its last analysis time, which moves every pass: it is left
    out, so the mirror changes only when the report becomes final (or is reset for a new Job).
    """
    life = read_lifecycle(raw)
    mirror = {"jobKind": life.job_kind}
    if life.phase in FINAL_PHASES:
        mirror["phase"] = life.phase
        if life.ended:
            mirror["ended"] = life.ended
    return mirror


def annotation(mirror: Mirror) -> str:
    """The annotation's value: compact JSON, keys sorted."""
    return json.dumps(mirror, sort_keys=True, separators=(",", ":"))


def annotations_of(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """An API object's annotations (empty when it has none or they are not a mapping)."""
    meta = raw.get("metadata")
    found = meta.get("annotations") if isinstance(meta, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def mirrored(raw: Mapping[str, Any]) -> Mirror | None:
    """The mirror the object carries; None when it has none or one that is not the mirror's shape."""
    text = annotations_of(raw).get(LIFECYCLE_ANNOTATION)
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None
    return value


def stale_mirror(raw: Mapping[str, Any]) -> str | None:
    """The annotation a whole report needs, or None when the one it carries matches its status."""
    wanted = mirror_of(raw)
    return None if mirrored(raw) == wanted else annotation(wanted)


def whole(item: Mapping[str, Any]) -> bool:
    """Whether a listed item is the whole report (a server that cannot list metadata alone)."""
    return item.get("kind") != METADATA_KIND


def lifecycle_of(item: Mapping[str, Any]) -> Lifecycle | None:
    """A listed report's lifecycle: from the report itself when whole, else from its mirror.

    Returns:
        None for a metadata-only item without a readable mirror (the report has to be read whole).
    """
    if whole(item):
        return read_lifecycle(item)
    mirror = mirrored(item)
    if mirror is None:
        return None
    meta = item.get("metadata") or {}
    return Lifecycle(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        job_kind=mirror.get("jobKind") or "Job",
        phase=mirror.get("phase"),
        ended=mirror.get("ended"),
    )


def with_mirror(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with the mirror of its own status (for a report created with its status, as tests do)."""
    meta = dict(body.get("metadata") or {})
    meta["annotations"] = {**annotations_of(body), LIFECYCLE_ANNOTATION: annotation(mirror_of(body))}
    return {**body, "metadata": meta}
