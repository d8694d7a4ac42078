"""A job's telemetry window: what the data layer hands to the analysis.

One :class:`PodWindow` per pod of the Job, each a mapping of signal name (see
:mod:`.signals`) to a float array aligned on :attr:`JobWindow.timestamps`. A missing sample is NaN;
a signal that no exporter provided is simply absent from the mapping.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PodWindow:
    """One pod's aligned signals.

    Attributes:
        pod: the pod's name.
        node: the node it ran on (from kube_pod_info), or None when unknown.
        gpu_model: dcgm-exporter's ``modelName`` of the pod's GPUs, e.g. "NVIDIA A100-SXM4-80GB".
        gpu_count: number of GPUs dcgm-exporter attributes to the pod (0 when none seen).
        signals: signal name -> values, one per window timestamp, NaN where no sample.
        co_located_pods: other pods (not of this Job) seen on the same node during the window;
            node-level signals are shared with them, so they are weaker evidence when this is > 0.
    """

    pod: str
    node: str | None
    gpu_model: str | None
    gpu_count: int
    signals: Mapping[str, FloatArray]
    co_located_pods: int = 0


@dataclass(frozen=True)
class DataQuality:
    """What the window is made of, so the report can say what it used.

    Attributes:
        families: families with at least one sample in the window.
        coverage: share of the window's timestamps where the job's core GPU signal had a sample
            (``gpu_util``, else ``gr_engine_active``), averaged over pods; 0.0 when neither exists.
        scrape_interval: estimated seconds between samples of the job's series, None when unknown.
        notes: short human-readable remarks ("no PROF fields", "node label mapping guessed", ...).
        layout: the label layout each exporter's series were read in, e.g.
            ``{"dcgm": "exported-labels", "node": "pod-join"}``; empty when not detected.
    """

    families: frozenset[Family] = frozenset()
    coverage: float = 0.0
    scrape_interval: float | None = None
    notes: tuple[str, ...] = ()
    layout: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JobWindow:
    """All pods of one Job over one time window.

    Attributes:
        namespace: the Job's namespace.
        job: the Job's name.
        start: window start, unix seconds.
        end: window end, unix seconds.
        step: seconds between timestamps.
        timestamps: the aligned sample times (unix seconds).
        pods: one entry per pod of the Job seen in the window.
        quality: what the window contains.
    """

    namespace: str
    job: str
    start: float
    end: float
    step: float
    timestamps: FloatArray
    pods: tuple[PodWindow, ...]
    quality: DataQuality = field(default_factory=DataQuality)

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def gpu_count(self) -> int:
        return sum(p.gpu_count for p in self.pods)


def families_and_coverage(pods: Sequence[PodWindow]) -> tuple[frozenset[Family], float]:
    """What a window's pods carry: the families with any sample, and the mean GPU sample coverage.

    Coverage is each pod's share of steps with a ``gpu_util`` sample (``gr_engine_active`` where
    ``gpu_util`` is absent, as under MIG), averaged over the pods; 0 without pods.
    """
    families: set[Family] = set()
    coverage = []
    for pw in pods:
        for name, values in pw.signals.items():
            if name in SIGNALS and np.isfinite(values).any():
                families.add(SIGNALS[name].family)
        core = pw.signals.get("gpu_util", pw.signals.get("gr_engine_active"))
        coverage.append(float(np.isfinite(core).mean()) if core is not None and core.size else 0.0)
    return frozenset(families), float(np.mean(coverage)) if coverage else 0.0
