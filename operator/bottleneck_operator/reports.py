"""BottleneckReport models (pydantic), mirroring the CRD's schema in ``crds/``.

``ReportStatus`` is what the operator writes to ``.status`` and what ``analyze --output json`` prints:
one shape for both, so a verdict checked from the command line reads like the report.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from bottleneck_operator.contract.verdict import Verdict
from bottleneck_operator.contract.window import JobWindow

Phase = Literal["Pending", "Running", "Completed", "Failed"]
ClassName = Literal["IO", "CPU", "Interconnect", "GPU", "Memory", "Unknown"]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict with the CRD's camelCase names, None fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class JobRef(_Model):
    name: str
    uid: str | None = None


class ReportSpec(_Model):
    job_ref: JobRef


class EvidenceItem(_Model):
    signal: str
    observed: float
    reference: float | None = None
    unit: str
    message: str


class RecommendationItem(_Model):
    action: str
    signal: str
    detail: str


class HeadroomRange(_Model):
    low: float = Field(description="Lower estimate of the speed-up factor (1.0 = no gain).")
    high: float
    basis: str


class CapacityItem(_Model):
    resource: str
    needed: float
    observed: float
    unit: str
    message: str


class PodBreakdown(_Model):
    pod: str
    node: str | None = None
    bottleneck: ClassName
    confidence: float
    gpu_active: float | None = None


class AnalysisWindow(_Model):
    start: str
    end: str
    seconds: float


class DataQualityStatus(_Model):
    families: list[str]
    missing_families: list[str]
    coverage: float
    scrape_interval: float | None = None
    pods: int
    gpus: int
    notes: list[str] = Field(default_factory=list)


class TimelineEntry(_Model):
    start: str
    end: str
    bottleneck: ClassName
    confidence: float


class Condition(_Model):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: str


class ReportStatus(_Model):
    phase: Phase = "Pending"
    bottleneck: ClassName | None = None
    secondary: ClassName | None = None
    confidence: float | None = None
    probabilities: dict[str, float] | None = None
    gpu_active: float | None = Field(None, description="Mean GPU activity 0..1 over the window.")
    reason: str | None = None
    evidence: list[EvidenceItem] | None = None
    recommendations: list[RecommendationItem] | None = None
    headroom: HeadroomRange | None = None
    capacity: list[CapacityItem] | None = None
    window: AnalysisWindow | None = None
    pods: list[PodBreakdown] | None = None
    data_quality: DataQualityStatus | None = None
    model_version: str | None = None
    timeline: list[TimelineEntry] | None = None
    conditions: list[Condition] | None = None
    last_analysis_time: str | None = None


def rfc3339(ts: float) -> str:
    """Unix seconds as RFC 3339 UTC with a 'Z', as Kubernetes writes times."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _round(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(float(x), digits)


def status_from_verdict(verdict: Verdict, window: JobWindow, *, phase: Phase = "Running") -> ReportStatus:
    """The report status for one analysed window (conditions and timeline are the operator's)."""
    from bottleneck_operator.contract.signals import Family

    quality = window.quality
    return ReportStatus(
        phase=phase,
        bottleneck=verdict.bottleneck.value,
        secondary=verdict.secondary.value if verdict.secondary else None,
        confidence=_round(verdict.confidence),
        probabilities={k: round(v, 4) for k, v in verdict.probabilities.items()},
        gpu_active=_round(verdict.gpu_active),
        reason=verdict.reason,
        evidence=[
            EvidenceItem(
                signal=e.signal,
                observed=round(e.observed, 6),
                reference=_round(e.reference, 6),
                unit=e.unit,
                message=e.message,
            )
            for e in verdict.evidence
        ],
        recommendations=[
            RecommendationItem(action=r.action, signal=r.signal, detail=r.detail) for r in verdict.recommendations
        ],
        headroom=(
            HeadroomRange(
                low=round(verdict.headroom.low, 3), high=round(verdict.headroom.high, 3), basis=verdict.headroom.basis
            )
            if verdict.headroom
            else None
        ),
        capacity=[
            CapacityItem(
                resource=c.resource,
                needed=round(c.needed, 3),
                observed=round(c.observed, 3),
                unit=c.unit,
                message=c.message,
            )
            for c in verdict.capacity
        ],
        window=AnalysisWindow(start=rfc3339(window.start), end=rfc3339(window.end), seconds=window.duration),
        pods=[
            PodBreakdown(
                pod=p.pod,
                node=p.node,
                bottleneck=p.bottleneck.value,
                confidence=round(p.confidence, 4),
                gpu_active=_round(p.gpu_active),
            )
            for p in verdict.pods
        ],
        data_quality=DataQualityStatus(
            families=sorted(f.value for f in quality.families),
            missing_families=sorted(f.value for f in Family if f not in quality.families),
            coverage=round(quality.coverage, 4),
            scrape_interval=quality.scrape_interval,
            pods=len(window.pods),
            gpus=window.gpu_count,
            notes=[*quality.notes, *verdict.notes],
        ),
        model_version=verdict.model_version or None,
    )
