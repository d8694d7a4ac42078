"""What the analysis concludes about one job window: plain data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Bottleneck(StrEnum):
    """The verdict classes (fixed spelling: they appear in the CRD's enum)."""

    IO = "IO"
    CPU = "CPU"
    INTERCONNECT = "Interconnect"
    GPU = "GPU"
    MEMORY = "Memory"
    UNKNOWN = "Unknown"


class Abstention(StrEnum):
    """Why a verdict is Unknown: callers branch on this, never on the text of ``reason``."""

    NO_PODS = "NoPods"
    SHORT_WINDOW = "ShortWindow"
    LOW_COVERAGE = "LowCoverage"
    LOW_CONFIDENCE = "LowConfidence"
    OUT_OF_DISTRIBUTION = "OutOfDistribution"

    @property
    def is_data_problem(self) -> bool:
        """True when the telemetry, not the model, stopped the analysis."""
        return self not in (Abstention.LOW_CONFIDENCE, Abstention.OUT_OF_DISTRIBUTION)


class Mechanism(StrEnum):
    """How the verdict's class limits the job (fixed spelling: it appears in the CRD's enum).

    Each class has its own mechanisms; ``MECHANISMS`` says which. The rules that pick one are in
    ``analysis/mechanism.py`` and docs/analysis.md.
    """

    COMPUTE = "compute"
    LAUNCH_BOUND = "launch-bound"
    HOST_MEMORY_PRESSURE = "host-memory-pressure"
    HBM_BANDWIDTH = "hbm-bandwidth"
    PCIE = "pcie"
    NVLINK = "nvlink"
    NETWORK = "network"
    LOCAL_DISK = "local-disk"
    NETWORK_STORAGE = "network-storage"
    THROTTLED = "throttled"
    SATURATED = "saturated"
    TOO_FEW_WORKERS = "too-few-workers"


# The classes the classifier predicts; Unknown is an abstention, never a label.
CLASSES: tuple[Bottleneck, ...] = (
    Bottleneck.IO,
    Bottleneck.CPU,
    Bottleneck.INTERCONNECT,
    Bottleneck.GPU,
    Bottleneck.MEMORY,
)

# The mechanisms each class can name.
MECHANISMS: dict[Bottleneck, tuple[Mechanism, ...]] = {
    Bottleneck.GPU: (Mechanism.COMPUTE, Mechanism.LAUNCH_BOUND),
    Bottleneck.MEMORY: (Mechanism.HOST_MEMORY_PRESSURE, Mechanism.HBM_BANDWIDTH),
    Bottleneck.INTERCONNECT: (Mechanism.PCIE, Mechanism.NVLINK, Mechanism.NETWORK),
    Bottleneck.IO: (Mechanism.LOCAL_DISK, Mechanism.NETWORK_STORAGE),
    Bottleneck.CPU: (Mechanism.THROTTLED, Mechanism.SATURATED, Mechanism.TOO_FEW_WORKERS),
}


@dataclass(frozen=True)
class Evidence:
    """One signal that drove the verdict.

    Attributes:
        signal: the signal name (see ``signals.py``) or a derived quantity's name.
        observed: the observed value, in ``unit``.
        reference: the capacity or typical value it is compared with, None when there is none.
        unit: unit of ``observed`` and ``reference`` ("ratio", "B/s", "cores", ...).
        message: one sentence a user understands.
    """

    signal: str
    observed: float
    reference: float | None
    unit: str
    message: str


@dataclass(frozen=True)
class Recommendation:
    """One thing to try, tied to the evidence that justifies it."""

    action: str
    signal: str
    detail: str


@dataclass(frozen=True)
class Headroom:
    """How much faster the job could run if the bottleneck were removed (speed-up factors >= 1)."""

    low: float
    high: float
    basis: str


@dataclass(frozen=True)
class CapacityNeed:
    """What the limiting resource would have to deliver to keep the GPUs busy, next to what it gives."""

    resource: str
    needed: float
    observed: float
    unit: str
    message: str


@dataclass(frozen=True)
class PodVerdict:
    pod: str
    node: str | None
    bottleneck: Bottleneck
    confidence: float
    gpu_active: float | None


@dataclass(frozen=True)
class Verdict:
    """The full conclusion for one job window.

    Attributes:
        bottleneck: the primary class (Unknown when the model abstains or data is too thin).
        confidence: the calibrated probability of the primary class (0 for Unknown without data).
        probabilities: class name -> calibrated probability, over ``CLASSES``.
        secondary: a close runner-up class, or None.
        reason: why the verdict is Unknown, in words, or None.
        gpu_active: mean GPU activity over the window (best available signal), 0..1, or None.
        evidence, recommendations, headroom, capacity: see the classes above.
        pods: per-pod breakdown.
        model_version: version of the model that produced it.
        abstention: why the verdict is Unknown, as a value to branch on, or None.
        mechanism: how the class limits the job (one of ``MECHANISMS[bottleneck]``), None for
            Unknown or when no signal tells.
    """

    bottleneck: Bottleneck
    confidence: float
    probabilities: dict[str, float]
    secondary: Bottleneck | None = None
    reason: str | None = None
    gpu_active: float | None = None
    evidence: tuple[Evidence, ...] = ()
    recommendations: tuple[Recommendation, ...] = ()
    headroom: Headroom | None = None
    capacity: tuple[CapacityNeed, ...] = ()
    pods: tuple[PodVerdict, ...] = ()
    model_version: str = ""
    notes: tuple[str, ...] = field(default=())
    abstention: Abstention | None = None
    mechanism: Mechanism | None = None
