"""BottleneckReport models (pydantic): the CRD's schema in ``crds/`` is checked against them.

``ReportStatus`` is what the operator writes to ``.status`` and what ``analyze --output json`` prints:
one shape for both, so a verdict checked from the command line reads like the report.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from bottleneck_operator.contract.verdict import Abstention, Mechanism

Phase = Literal["Pending", "Running", "Suspended", "Completed", "Failed"]
# The phases of a report whose Job has ended: nothing changes it any more but a new Job of its name.
FINAL_PHASES: frozenset[str] = frozenset({"Completed", "Failed"})
ClassName = Literal["IO", "CPU", "Interconnect", "GPU", "Memory", "Unknown"]
# RFC 3339 times, as Kubernetes writes them (the CRD declares the format).
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict with the CRD's camelCase names, None fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class JobRef(_Model):
    name: str
    uid: str | None = None
    kind: str | None = Field(
        None, description="The workload's kind: Job, PyTorchJob, MPIJob, JobSet or TrainJob (absent: Job)."
    )
    api_version: str | None = Field(None, description="The workload's API group/version, e.g. kubeflow.org/v1.")


class ReportSpec(_Model):
    job_ref: JobRef = Field(
        description="The analysed workload (by kind, name and uid; reports outlive it, so no ownerReference)."
    )


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
    low: float
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
    replica_type: str | None = Field(
        None, description="The pod's replica type in its workload (master, worker, launcher, a replicated Job's name)."
    )
    bottleneck: ClassName
    confidence: float
    gpu_active: float | None = None


class LagItem(_Model):
    signal: str
    observed: float
    peers: float = Field(description="The median of the Job's peers.")
    score: float = Field(description="Modified z-score against the peers (|score| > 3.5 lags).")


class StragglerItem(_Model):
    namespace: str
    job: str
    pod: str
    node: str | None = None
    gpu: str | None = None
    cause: str = Field(description="throttled-clock, network, storage or starved.")
    share: float = Field(description="Share of the Job's time the straggler costs (0..1).")
    evidence: list[LagItem]


class AnalysisWindow(_Model):
    start: Timestamp
    end: Timestamp
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
    start: Timestamp
    end: Timestamp
    bottleneck: ClassName
    confidence: float
    gpu_active: float | None = Field(
        None, description="Mean GPU activity 0..1 in this window, where the writer measured it."
    )


class Condition(_Model):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: Timestamp


class ReportStatus(_Model):
    phase: Phase = Field(
        "Pending",
        description="The Job's phase as the report follows it (Suspended: suspended or preempted, not analysed meanwhile).",
    )
    bottleneck: ClassName | None = Field(
        None, description="The primary class (Unknown when data is too thin or the model abstains)."
    )
    mechanism: Mechanism | None = Field(
        None,
        description="How the primary class limits the Job: compute or launch-bound (GPU), host-memory-pressure or "
        "hbm-bandwidth (Memory), pcie, nvlink or network (Interconnect), local-disk or network-storage (IO), "
        "throttled, saturated or too-few-workers (CPU).",
    )
    secondary: ClassName | None = Field(None, description="A close runner-up class, when there is one.")
    confidence: float | None = Field(None, description="Calibrated probability of the primary class.")
    probabilities: dict[str, float] | None = Field(None, description="Class name -> calibrated probability.")
    gpu_active: float | None = Field(None, description="Mean GPU activity 0..1 over the window.")
    reason: str | None = Field(None, description="Why the verdict is Unknown.")
    abstention: Abstention | None = Field(
        None,
        description="Why the verdict is Unknown, when it is (LowConfidence is the model's doubt; the others are missing data).",
    )
    evidence: list[EvidenceItem] | None = None
    recommendations: list[RecommendationItem] | None = None
    headroom: HeadroomRange | None = Field(
        None, description="How much faster the Job could run without the bottleneck (speed-up factors)."
    )
    capacity: list[CapacityItem] | None = None
    window: AnalysisWindow | None = Field(None, description="The analysed time window.")
    pods: list[PodBreakdown] | None = Field(None, description="Per-pod breakdown.")
    stragglers: list[StragglerItem] | None = Field(
        None, description="Pods or GPUs behind the Job's own peers, costliest first (multi-pod Jobs)."
    )
    data_quality: DataQualityStatus | None = None
    model_version: str | None = None
    timeline: list[TimelineEntry] | None = Field(
        None, description="Per-window verdicts while the Job ran, oldest first (bounded)."
    )
    conditions: list[Condition] | None = Field(None, description="Standard conditions (Ready, MetricsAvailable).")
    last_analysis_time: Timestamp | None = None
