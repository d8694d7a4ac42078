"""The ClusterBottleneckSummary as read from the API: metadata, spec and status, typed.

Its readers (the summary's HTML page, ``kubectl bottleneck summary``) take it from
:func:`read_summary`, as a report's take it from :func:`~bottleneck_operator.reports.read_report`,
so the summary's camelCase names are spelled in :mod:`.summary`'s aliases and nowhere else. The
object as the API returned it stays at hand (:attr:`ClusterBottleneckSummary.raw`) for
``-o json|yaml``, which print it as it stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from bottleneck_operator.reports.document import ReportMetadata
from bottleneck_operator.reports.lenient import lenient
from bottleneck_operator.reports.read import known_only
from bottleneck_operator.reports.summary import SummarySpec, SummaryStatus


@dataclass(frozen=True)
class ClusterBottleneckSummary:
    """The cluster's summary: the typed metadata, spec and status, and the object as the API held it.

    Attributes:
        metadata: name, uid, resourceVersion, creationTimestamp, labels (no namespace: cluster-scoped).
        spec: how far back it looks; None when the object has no readable spec.
        status: the status, fields unknown to this version left out (an empty one when none has
            been written yet: see :attr:`written`).
        written: whether the object carries a status at all (the operator creates the object, then
            writes its status at the end of its first pass).
        raw: the object as the API returned it.
    """

    metadata: ReportMetadata
    spec: SummarySpec | None
    status: SummaryStatus
    written: bool
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.metadata.name


def read_summary(raw: Mapping[str, Any], *, drop_invalid: bool = False) -> ClusterBottleneckSummary:
    """A ClusterBottleneckSummary object from the API (camelCase JSON) as the typed summary.

    Args:
        raw: the whole object (``metadata``, ``spec``, ``status``).
        drop_invalid: show what can be shown instead of raising (see :func:`read_summary_status`).

    Returns:
        The typed summary. A spec that does not validate reads as None: the status is still shown.

    Raises:
        pydantic.ValidationError: the metadata, or a known status field (unless ``drop_invalid``),
            has a value the model refuses; it is a ``ValueError``.
    """
    meta, status = _mapping(raw.get("metadata")), raw.get("status")
    return ClusterBottleneckSummary(
        metadata=lenient(ReportMetadata, meta) if drop_invalid else ReportMetadata.model_validate(meta),
        spec=_spec(raw.get("spec")),
        status=read_summary_status(status if isinstance(status, Mapping) else None, drop_invalid=drop_invalid),
        written=bool(status),
        raw=raw,
    )


def read_summary_status(raw: Mapping[str, Any] | None, *, drop_invalid: bool = False) -> SummaryStatus:
    """A summary's status (the API's camelCase JSON) as the typed model.

    Args:
        raw: the ``.status`` object as the API returns it (None or empty: not written yet).
        drop_invalid: leave out what does not validate at the smallest level that can lose it (a
            field, a list item, a dict entry), and read a field this version requires that the
            writer left out as its type's empty value, instead of raising: what the summary's page
            and table use, so an older or newer operator's summary still shows all it can.

    Returns:
        The typed status, fields unknown to this version left out at every level.

    Raises:
        pydantic.ValidationError: a known field has a value the model refuses (unless ``drop_invalid``).
    """
    if drop_invalid:
        return lenient(SummaryStatus, raw or {})
    return SummaryStatus.model_validate(known_only(SummaryStatus, raw or {}))


def as_summary_status(status: SummaryStatus | Mapping[str, Any]) -> SummaryStatus:
    """``status`` typed: a :class:`SummaryStatus` as it is, the API form read for showing."""
    return status if isinstance(status, SummaryStatus) else read_summary_status(status, drop_invalid=True)


def _spec(raw: object) -> SummarySpec | None:
    if not isinstance(raw, Mapping):
        return None
    try:
        return SummarySpec.model_validate(known_only(SummarySpec, raw))
    except ValidationError:
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
