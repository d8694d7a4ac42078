"""A job's telemetry window: what the data layer hands to the analysis.

One :class:`PodWindow` per pod of the Job, each a mapping of signal name (see
:mod:`.signals`) to a float array aligned on :attr:`JobWindow.timestamps`. A missing sample is NaN;
a signal that no exporter provided is simply absent from the mapping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family

FloatArray = npt.NDArray[np.float64]


class SignalBlock(Mapping[str, FloatArray]):
    """A pod's signals as the rows of one (signals x time) float64 array.

    A mapping like any other (name -> that signal's row, a view into the block), which lets the
    analysis copy a pod's ~50 series in one piece instead of one by one. The producers of windows
    (the data layer, the simulator) build one; a plain ``dict`` of arrays is as valid a value of
    :attr:`PodWindow.signals`.

    Attributes:
        names: the signal names, in row order (no duplicates).
        array: shape (len(names), T), C-contiguous float64.
    """

    __slots__ = ("_index", "array", "names")

    def __init__(self, names: Sequence[str], array: npt.ArrayLike) -> None:
        block = np.ascontiguousarray(array, dtype=np.float64)
        if block.ndim != 2 or block.shape[0] != len(names):
            raise ValueError(f"a block of {len(names)} signals needs shape ({len(names)}, T), not {block.shape}")
        self.names: tuple[str, ...] = tuple(names)
        self._index = {name: i for i, name in enumerate(self.names)}
        if len(self._index) != len(self.names):
            raise ValueError("duplicate signal names in a block")
        self.array: FloatArray = block

    @classmethod
    def of(cls, signals: Mapping[str, npt.ArrayLike], length: int | None = None) -> SignalBlock:
        """The signals of a mapping stacked into one block.

        Args:
            signals: name -> values, all of one length.
            length: the number of samples when ``signals`` is empty (default 0).

        Raises:
            ValueError: the series differ in length.
        """
        if not signals:
            return cls((), np.empty((0, length or 0)))
        return cls(tuple(signals), np.stack([np.asarray(v, dtype=np.float64) for v in signals.values()]))

    def __getitem__(self, name: str) -> FloatArray:
        row: FloatArray = self.array[self._index[name]]
        return row

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"SignalBlock({list(self.names)!r}, shape={self.array.shape})"


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
