"""A drawn Job (:class:`Plan`) and the tables the draw picks from (the draw is in :mod:`.workload`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyz.hardware import (
    Gpu,
)

FloatArray = npt.NDArray[np.float64]
B, M = Bottleneck, Mechanism
LEAD_S = 330  # ticks simulated before the window, so the first rate() range is covered

# name: (training FLOPs per sample, parameters, stored bytes per sample, FLOP per HBM byte, kernels per step)
MODELS: dict[str, tuple[float, float, float, float, float]] = {
    "resnet50": (3 * 4.1e9, 25.6e6, 110e3, 60.0, 480.0),
    "vit-b16": (3 * 17.6e9, 86e6, 110e3, 120.0, 700.0),
    "bert-large": (6 * 340e6 * 512, 340e6, 2e3, 150.0, 1100.0),
    "gpt-1.3b": (6 * 1.3e9 * 2048, 1.3e9, 8e3, 200.0, 1500.0),
    "dlrm": (2e7, 500e6, 600.0, 3.0, 300.0),
    "small-mlp": (3e6, 2e6, 4e3, 25.0, 600.0),
}
VISION = ("resnet50", "vit-b16")

MAIN_MECHANISMS: dict[Bottleneck, tuple[Mechanism, ...]] = {
    B.IO: (M.LOCAL_DISK, M.NETWORK_STORAGE),
    B.CPU: (M.THROTTLED, M.SATURATED, M.TOO_FEW_WORKERS),
    B.INTERCONNECT: (M.NETWORK, M.NETWORK, M.PCIE),
    B.GPU: (M.COMPUTE, M.COMPUTE, M.LAUNCH_BOUND),
    B.MEMORY: (M.HOST_MEMORY_PRESSURE, M.HBM_BANDWIDTH),
}


@dataclass
class View:
    """What the cluster's exporters show of this Job."""

    fields: str  # "dev", "default" or "full"
    intervals: dict[str, float]  # exporter -> scrape interval, s
    dcgm_collect: float  # dcgm-exporter's collection interval, s
    miss: float  # chance a scrape is missed
    reset: float  # chance an exporter restarts inside the window
    sidecar: bool
    sidecar_net: bool
    psi: bool
    node_names: tuple[str, ...]
    co_located: tuple[int, ...]


@dataclass
class Plan:
    """One drawn Job, ready to simulate."""

    namespace: str
    name: str
    intent: Bottleneck
    intent_mechanism: Mechanism
    gpu: Gpu
    gpus: int
    pods: int
    step: float
    samples: int
    ticks: int
    lanes: dict[str, FloatArray]
    noise: dict[str, FloatArray]
    view: View
    tags: list[str] = field(default_factory=list)


def runs(rng: np.random.Generator, ticks: int, on_mean: float, off_mean: float, p_on: float) -> FloatArray:
    """An on/off neighbour: alternating exponential run lengths (a two-state Markov process)."""
    out = np.zeros(ticks)
    t, on = 0, bool(rng.random() < p_on)
    while t < ticks:
        length = max(1, round(rng.exponential(on_mean if on else off_mean)))
        if on:
            out[t : t + length] = 1.0
        t += length
        on = not on
    return out
