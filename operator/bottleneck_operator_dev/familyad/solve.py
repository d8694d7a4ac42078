"""The Job's throughput and each station's utilisation and queue, from its demands.

Each pod is its own closed network (mva.py); a synchronous data-parallel Job steps at its slowest
pod's rate, so every pod runs at the Job's throughput X and its stations' utilisations follow the
utilisation law U_k = X D_k / m_k. No steps run while a checkpoint is written.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .cluster import Setup
from .dynamics import Timeline
from .mva import solve
from .stations import STATIONS, Demands

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Flow:
    """Throughput and station occupancy, on the base grid.

    Attributes:
        x: Job steps per second, shape (T,).
        util: U_k per server, shape (K, pods, T).
        queue: mean steps at each station (waiting or served), shape (K, pods, T).
        population: steps in flight (the loader's prefetch depth).
    """

    x: FloatArray
    util: FloatArray
    queue: FloatArray
    population: int

    def u(self, station: str) -> FloatArray:
        row: FloatArray = self.util[STATIONS.index(station)]
        return row

    def q(self, station: str) -> FloatArray:
        row: FloatArray = self.queue[STATIONS.index(station)]
        return row


def population(su: Setup) -> int:
    """Steps in flight: each rank's loader keeps prefetch x workers batches ahead (PyTorch DataLoader)."""
    return int(np.clip(su.prefetch * su.workers, 2, 16))


def flow(d: Demands, su: Setup, tl: Timeline) -> Flow:
    """Solve every pod's network and hold all pods to the slowest."""
    n = population(su)
    sol = solve(d.demand, d.servers, d.parallel, n)
    x_job = np.where(tl.ckpt, 0.0, sol.x.min(axis=0))
    util = np.clip(x_job * d.per_server, 0.0, 1.0)
    scale = x_job / np.maximum(sol.x, 1e-12)
    return Flow(x=x_job, util=util, queue=sol.queue * scale[None], population=n)
