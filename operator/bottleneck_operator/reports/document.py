"""A whole BottleneckReport as read from the API: metadata, spec and status, typed.

Everything that shows or follows a report (the HTML page, the kubectl plugin, the demo, the
controller's sweeps, ``analyze --from-report``) reads it through :func:`read_report`, so the CRD's
camelCase names are spelled in :mod:`.model`'s aliases and nowhere else. The object as the API
returned it stays at hand (:attr:`BottleneckReport.raw`) for ``-o json|yaml``, which print it as it
stands, fields of a newer operator included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from bottleneck_operator.contract.times import parse_rfc3339_or_none
from bottleneck_operator.reports.model import ReportSpec, ReportStatus
from bottleneck_operator.reports.read import known_only, read_status


class ReportMetadata(BaseModel):
    """The parts of a report's ``metadata`` that its readers show or key on (the rest is ignored)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)

    name: str = ""
    namespace: str = ""
    uid: str | None = None
    resource_version: str | None = None
    creation_timestamp: str | None = None
    labels: dict[str, str] | None = None


@dataclass(frozen=True)
class BottleneckReport:
    """One BottleneckReport: the typed metadata, spec and status, and the object as the API held it.

    Attributes:
        metadata: name, namespace, uid, resourceVersion, creationTimestamp, labels.
        spec: the analysed workload; None when the object has no readable spec.
        status: the status, fields unknown to this version left out (an empty ``Pending`` one
            when none has been written yet: see :attr:`analysed`).
        analysed: whether the object carries a status at all (a report created but never analysed
            has none; kubectl shows its phase as blank).
        raw: the object as the API returned it.
    """

    metadata: ReportMetadata
    spec: ReportSpec | None
    status: ReportStatus
    analysed: bool
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def job_name(self) -> str:
        """The analysed workload's name ("" when the spec does not say)."""
        return self.spec.job_ref.name if self.spec is not None else ""

    @property
    def job_kind(self) -> str:
        """The analysed workload's kind (reports written before kinds were recorded name a Job)."""
        return (self.spec.job_ref.kind if self.spec is not None else None) or "Job"

    @property
    def created(self) -> float | None:
        """``creationTimestamp`` as unix seconds (None: absent or unreadable)."""
        return parse_rfc3339_or_none(self.metadata.creation_timestamp)


def read_report(raw: Mapping[str, Any], *, drop_invalid: bool = False) -> BottleneckReport:
    """A BottleneckReport object from the API (camelCase JSON) as the typed report.

    Args:
        raw: the whole object (``metadata``, ``spec``, ``status``).
        drop_invalid: leave out status fields whose value does not validate, instead of raising
            (see :func:`~bottleneck_operator.reports.read.read_status`).

    Returns:
        The typed report. A spec that does not validate reads as None: the status is still shown.

    Raises:
        pydantic.ValidationError: the metadata, or a known status field (unless ``drop_invalid``), has
            a value the model refuses; it is a ``ValueError``.
    """
    meta = raw.get("metadata")
    status = raw.get("status")
    return BottleneckReport(
        metadata=ReportMetadata.model_validate(meta if isinstance(meta, Mapping) else {}),
        spec=_spec(raw.get("spec")),
        status=read_status(status if isinstance(status, Mapping) else None, drop_invalid=drop_invalid),
        analysed=bool(status),
        raw=raw,
    )


def _spec(raw: object) -> ReportSpec | None:
    if not isinstance(raw, Mapping):
        return None
    try:
        return ReportSpec.model_validate(known_only(ReportSpec, raw))
    except ValidationError:
        return None


@dataclass(frozen=True)
class Lifecycle:
    """What retention needs of a report: where it is, whose it is, its phase and when its Job ended.

    Read from the API object without validating the whole status: a sweep reads thousands of
    reports, and a full read of each holds the interpreter from the event loop for the length of it.
    """

    namespace: str
    name: str
    job_kind: str
    phase: str | None
    ended: str | None  # the final window's end, else the last analysis time (RFC 3339), None: neither


def read_lifecycle(raw: Mapping[str, Any]) -> Lifecycle:
    """A report's :class:`Lifecycle` from its API object; absent or odd fields read as None."""
    meta = _mapping(raw.get("metadata"))
    spec = _mapping(raw.get("spec"))
    status = _mapping(raw.get("status"))
    window = _mapping(status.get("window"))
    ended = window.get("end") or status.get("lastAnalysisTime")
    phase = status.get("phase")
    return Lifecycle(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        job_kind=str(_mapping(spec.get("jobRef")).get("kind") or "Job"),
        phase=phase if isinstance(phase, str) else None,
        ended=ended if isinstance(ended, str) else None,
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_report(report: BottleneckReport | Mapping[str, Any]) -> BottleneckReport:
    """``report`` typed: a :class:`BottleneckReport` as it is, an API object through :func:`read_report`."""
    return report if isinstance(report, BottleneckReport) else read_report(report)
