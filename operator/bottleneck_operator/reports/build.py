"""Building a report status from the analysis: :func:`status_from_verdict` and its parts.

Times are written by :func:`~bottleneck_operator.contract.times.rfc3339`, re-exported here for the
report's writers.
"""

from __future__ import annotations

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.times import rfc3339
from bottleneck_operator.contract.verdict import Verdict
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.reports.model import (
    AnalysisWindow,
    CapacityItem,
    DataQualityStatus,
    EvidenceItem,
    HeadroomRange,
    Phase,
    PodBreakdown,
    RecommendationItem,
    ReportStatus,
)

__all__ = ["rfc3339", "status_from_verdict"]


def _round(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(float(x), digits)


def status_from_verdict(verdict: Verdict, window: JobWindow, *, phase: Phase = "Running") -> ReportStatus:
    """The report status for one analysed window (conditions and timeline are the operator's)."""
    return ReportStatus(
        phase=phase,
        bottleneck=verdict.bottleneck.value,
        mechanism=verdict.mechanism,
        secondary=verdict.secondary.value if verdict.secondary else None,
        confidence=_round(verdict.confidence),
        probabilities={k: round(v, 4) for k, v in verdict.probabilities.items()},
        gpu_active=_round(verdict.gpu_active),
        reason=verdict.reason,
        abstention=verdict.abstention,
        evidence=_evidence(verdict),
        recommendations=[
            RecommendationItem(action=r.action, signal=r.signal, detail=r.detail) for r in verdict.recommendations
        ],
        headroom=_headroom(verdict),
        capacity=_capacity(verdict),
        window=AnalysisWindow(start=rfc3339(window.start), end=rfc3339(window.end), seconds=window.duration),
        pods=_pods(verdict),
        data_quality=_data_quality(verdict, window),
        model_version=verdict.model_version or None,
    )


def _evidence(verdict: Verdict) -> list[EvidenceItem]:
    return [
        EvidenceItem(
            signal=e.signal,
            observed=round(e.observed, 6),
            reference=_round(e.reference, 6),
            unit=e.unit,
            message=e.message,
        )
        for e in verdict.evidence
    ]


def _headroom(verdict: Verdict) -> HeadroomRange | None:
    h = verdict.headroom
    return None if h is None else HeadroomRange(low=round(h.low, 3), high=round(h.high, 3), basis=h.basis)


def _capacity(verdict: Verdict) -> list[CapacityItem]:
    return [
        CapacityItem(
            resource=c.resource,
            needed=round(c.needed, 3),
            observed=round(c.observed, 3),
            unit=c.unit,
            message=c.message,
        )
        for c in verdict.capacity
    ]


def _pods(verdict: Verdict) -> list[PodBreakdown]:
    return [
        PodBreakdown(
            pod=p.pod,
            node=p.node,
            bottleneck=p.bottleneck.value,
            confidence=round(p.confidence, 4),
            gpu_active=_round(p.gpu_active),
        )
        for p in verdict.pods
    ]


def _data_quality(verdict: Verdict, window: JobWindow) -> DataQualityStatus:
    quality = window.quality
    return DataQualityStatus(
        families=sorted(f.value for f in quality.families),
        missing_families=sorted(f.value for f in Family if f not in quality.families),
        coverage=round(quality.coverage, 4),
        scrape_interval=quality.scrape_interval,
        pods=len(window.pods),
        gpus=window.gpu_count,
        notes=[*quality.notes, *verdict.notes],
    )
