"""ClusterBottleneckSummary: the cluster-scoped object that says what limits the cluster, where, and
what fixing it is worth (models mirroring its CRD, and how a summary becomes its status).

One object, named :data:`SUMMARY_NAME`, refreshed by the operator every pass. Every list in it is
bounded (see :mod:`bottleneck_operator.analysis.cluster.summary`), so it stays one small object in
etcd whatever the cluster's size.
"""

from __future__ import annotations

import math
from typing import Final

from pydantic import Field

from bottleneck_operator.analysis.cluster import ClusterSummary, HotSpot, Straggler, Suspect
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.reports.build import rfc3339
from bottleneck_operator.reports.model import LagItem, StragglerItem, Timestamp, _Model

SUMMARY_KIND: Final = "ClusterBottleneckSummary"
SUMMARY_PLURAL: Final = "clusterbottlenecksummaries"
SUMMARY_SHORT_NAME: Final = "cbs"
# The one summary the operator writes.
SUMMARY_NAME: Final = "cluster"
_CLASSES = (*CLASSES, Bottleneck.UNKNOWN)


class SummarySpec(_Model):
    lookback_seconds: float | None = Field(
        None, description="How far back the summary looks: Jobs that ended earlier are left out."
    )


class NamespaceLossItem(_Model):
    namespace: str
    bottleneck: str
    gpu_hours: float = Field(description="Idle GPU-hours of the namespace's Jobs charged to this class.")


class ActionItem(_Model):
    action: str
    bottleneck: str
    jobs: int
    gpu_hours: float = Field(description="GPU-hours the action would recover (headroom's low end, capped at idle).")


class HotSpotItem(_Model):
    dimension: str = Field(description="node, storage, fabric or rack.")
    location: str
    symptom: str = Field(description="IO, Interconnect or Throttled.")
    jobs: int
    expected: float = Field(description="Symptomatic Jobs expected there from comparable Jobs elsewhere.")
    exposed: int
    odds_ratio: float | None = Field(None, description="Mantel-Haenszel common odds ratio (absent: infinite).")
    p_value: float
    message: str
    examples: list[str]


class SuspectItem(_Model):
    node: str
    gpu: str | None = None
    cause: str
    jobs: int
    expected: float
    p_value: float
    message: str


class SummaryWindow(_Model):
    start: Timestamp
    end: Timestamp


class SummaryStatus(_Model):
    jobs: int = Field(0, description="Jobs summarised (their latest verdicts within the lookback).")
    gpu_hours: float = Field(0.0, description="GPU-hours those Jobs held.")
    gpu_hours_lost: float = Field(0.0, description="Idle GPU-hours, charged to each Job's bottleneck.")
    top_bottleneck: str | None = Field(None, description="The class that lost the most GPU-hours.")
    by_class: dict[str, int] = Field(default_factory=dict, description="Jobs by class.")
    lost_by_class: dict[str, float] = Field(default_factory=dict, description="Idle GPU-hours by class.")
    lost_by_namespace: list[NamespaceLossItem] = Field(default_factory=list)
    top_recommendations: list[ActionItem] = Field(
        default_factory=list, description="Actions ranked by the GPU-hours they would recover."
    )
    stragglers: list[StragglerItem] = Field(default_factory=list)
    stragglers_total: int = 0
    hot_spots: list[HotSpotItem] = Field(default_factory=list)
    hot_spot_count: int = 0
    suspects: list[SuspectItem] = Field(
        default_factory=list, description="Nodes and GPUs that were the straggler of several Jobs."
    )
    window: SummaryWindow | None = None
    last_update_time: Timestamp | None = None


def status_from_summary(summary: ClusterSummary, *, now: float) -> SummaryStatus:
    """The summary object's status."""
    lost = summary.lost_by_class
    top = max(lost, key=lambda k: lost[k]) if any(v > 0 for v in lost.values()) else None
    window = None
    if summary.start is not None and summary.end is not None:
        window = SummaryWindow(start=rfc3339(summary.start), end=rfc3339(summary.end))
    return SummaryStatus(
        jobs=summary.jobs,
        gpu_hours=round(summary.gpu_hours, 3),
        gpu_hours_lost=round(summary.gpu_hours_lost, 3),
        top_bottleneck=top,
        # Every class, 0 where none: a class that vanished from the Jobs must read 0, not its old count.
        by_class={c.value: summary.by_class.get(c.value, 0) for c in _CLASSES},
        lost_by_class={c.value: lost.get(c.value, 0.0) for c in _CLASSES},
        lost_by_namespace=[
            NamespaceLossItem(namespace=x.namespace, bottleneck=x.bottleneck, gpu_hours=x.gpu_hours)
            for x in summary.lost_by_namespace
        ],
        top_recommendations=[
            ActionItem(action=a.action, bottleneck=a.bottleneck, jobs=a.jobs, gpu_hours=a.gpu_hours)
            for a in summary.actions
        ],
        stragglers=[straggler_item(s) for s in summary.stragglers],
        stragglers_total=summary.stragglers_total,
        hot_spots=[_hotspot(h) for h in summary.hotspots],
        hot_spot_count=len(summary.hotspots),
        suspects=[_suspect(s) for s in summary.suspects],
        window=window,
        last_update_time=rfc3339(now),
    )


def straggler_item(s: Straggler) -> StragglerItem:
    """A straggler as the report and the summary carry it."""
    return StragglerItem(
        namespace=s.namespace,
        job=s.job,
        pod=s.pod,
        node=s.node,
        gpu=s.gpu,
        cause=s.cause,
        share=s.share,
        evidence=[
            LagItem(signal=g.signal, observed=_finite(g.observed), peers=_finite(g.peers), score=g.score)
            for g in s.lags
        ],
    )


def _hotspot(h: HotSpot) -> HotSpotItem:
    return HotSpotItem(
        dimension=h.dimension,
        location=h.location,
        symptom=h.symptom,
        jobs=h.jobs,
        expected=h.expected,
        exposed=h.exposed,
        odds_ratio=h.odds_ratio if math.isfinite(h.odds_ratio) else None,
        p_value=float(f"{h.p_value:.3g}"),
        message=h.message,
        examples=list(h.examples),
    )


def _suspect(s: Suspect) -> SuspectItem:
    return SuspectItem(
        node=s.node,
        gpu=s.gpu,
        cause=s.cause,
        jobs=s.jobs,
        expected=s.expected,
        p_value=float(f"{s.p_value:.3g}"),
        message=s.message,
    )


def _finite(x: float) -> float:
    return round(x, 4) if math.isfinite(x) else 0.0
