"""The label: the class of the station with the largest demand per server (the operational bottleneck).

By the utilisation law U_k = X D_k / m_k <= 1, so X <= m_k / D_k for every station and the one with
the largest D_k / m_k caps the throughput first (Denning and Buzen 1978). Demands are averaged over
the window's training time (a checkpoint runs no steps); a synchronous Job waits for its slowest
pod, so each station counts at its worst pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

from .cluster import Setup
from .dynamics import Timeline
from .stations import STATIONS, Demands

HARD_MARGIN = 0.95  # a runner-up within 5 % of the bottleneck makes the Job hard to call

_FIXED: dict[str, tuple[Bottleneck, Mechanism]] = {
    "host_memory": (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
    "pcie": (Bottleneck.INTERCONNECT, Mechanism.PCIE),
    "launch": (Bottleneck.GPU, Mechanism.LAUNCH_BOUND),
    "nvlink": (Bottleneck.INTERCONNECT, Mechanism.NVLINK),
    "network": (Bottleneck.INTERCONNECT, Mechanism.NETWORK),
}
# The host CPU station's servers are the fewest of its threads (workers and ranks), its quota and the node's free cores.
_LOADER = (Mechanism.TOO_FEW_WORKERS, Mechanism.THROTTLED, Mechanism.SATURATED)


@dataclass(frozen=True)
class Label:
    """The verdict the physics gives.

    Attributes:
        label: the class; mechanism: how it limits the Job.
        station: the bottleneck station; runner_up: the next one.
        margin: runner-up's demand per server over the bottleneck's (1.0: a tie).
        per_server: each station's demand per server, seconds per step, at its worst pod.
    """

    label: Bottleneck
    mechanism: Mechanism
    station: str
    runner_up: str
    margin: float
    per_server: dict[str, float]

    @property
    def hard(self) -> bool:
        return self.margin >= HARD_MARGIN


def classify_station(
    station: str, d: Demands, su: Setup, pod: int, steps: npt.NDArray[np.bool_]
) -> tuple[Bottleneck, Mechanism]:
    """The class and mechanism a station stands for, read at the pod where it is worst."""
    if station in _FIXED:
        return _FIXED[station]
    if station == "storage":
        local = su.storage.kind == "local"
        return Bottleneck.IO, Mechanism.LOCAL_DISK if local else Mechanism.NETWORK_STORAGE
    if station == "loader":
        caps = d.cpu_caps[:, pod, steps].mean(axis=1)
        return Bottleneck.CPU, _LOADER[int(np.argmin(caps))]
    # the GPU device: its SMs and its HBM, named by the one that needs more of the step
    if d.hbm[pod, steps].mean() > d.sm[pod, steps].mean():
        return Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH
    return Bottleneck.GPU, Mechanism.COMPUTE


def read_label(d: Demands, su: Setup, tl: Timeline) -> Label:
    """The Job's label from its demands over the window."""
    steps = tl.in_window & ~tl.ckpt
    if not steps.any():
        steps = tl.in_window
    per_pod = d.per_server[:, :, steps].mean(axis=2)
    worst = per_pod.max(axis=1)
    order = np.argsort(-worst, kind="stable")
    top, second = int(order[0]), int(order[1])
    pod = int(np.argmax(per_pod[top]))
    label, mechanism = classify_station(STATIONS[top], d, su, pod, steps)
    return Label(
        label=label,
        mechanism=mechanism,
        station=STATIONS[top],
        runner_up=STATIONS[second],
        margin=float(worst[second] / max(worst[top], 1e-12)),
        per_server={s: float(v) for s, v in zip(STATIONS, worst, strict=True)},
    )
