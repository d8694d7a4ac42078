"""BottleneckReport models (pydantic): the CRD's schema in ``crds/`` is checked against them.

``ReportStatus`` is what the operator writes to ``.status`` and what ``analyze --output json`` prints:
one shape for both, so a verdict checked from the command line reads like the report.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from bottleneck_operator.contract.verdict import Abstention

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
    abstention: Abstention | None = Field(None, description="Why the verdict is Unknown, when it is.")
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
