"""The step model: each iteration lasts as long as the slowest rank, given the stage costs.

A rank's iteration is its exposed host-to-device copy, its forward+backward (kernel time, or the
host's launch time when launching is slower), its host-memory stalls and pauses, plus the exposed
part of the all-reduce (what backward of the slowest rank did not hide). Its DataLoader prepares
batches concurrently, so the rank proceeds at the slower of that and the loader's supply interval
(per batch, smoothed by the prefetch queue). The step is the max over ranks, plus checkpoints.

``ample`` names the sub-stages made ample (free, or unlimited) for a counterfactual run; the costs
(every random draw) stay the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyal.costs import Costs

F = npt.NDArray[np.float64]

# The sub-stages a counterfactual can make ample.
SUBSTAGES = (
    "storage",
    "decode",
    "workers",
    "cpu-limit",
    "cores",
    "pcie",
    "nvlink",
    "network",
    "compute",
    "launch",
    "hbm",
    "host-memory",
)


@dataclass(frozen=True)
class Steps:
    """One run of the step model.

    Attributes:
        step: seconds of each iteration (K,).
        busy: each rank's own work per iteration, without waits (K, R).
        data_wait: seconds each rank waited for its next batch (K, R).
        exposed_comm: seconds of all-reduce not hidden under backward (K,).
        supply: the loader's smoothed seconds per batch (K, R).
        fwdbwd: forward+backward time on the GPU side, launches included (K, R).
    """

    step: F
    busy: F
    data_wait: F
    exposed_comm: F
    supply: F
    fwdbwd: F

    @property
    def mean(self) -> float:
        return float(self.step.mean())


def _smooth(x: F, q: int) -> F:
    """Causal moving average over the last q iterations (what a q-deep prefetch queue absorbs)."""
    if q <= 1:
        return x
    c = np.cumsum(x, axis=0)
    out = c.copy()
    out[q:] = c[q:] - c[:-q]
    n = np.minimum(np.arange(1, x.shape[0] + 1), q)[:, None]
    res: F = out / n
    return res


def supply(c: Costs, ample: frozenset[str] = frozenset()) -> F:
    """Seconds per batch each rank's loader delivers: the slowest of workers, cores and storage."""
    decode = 0.0 * c.decode if "decode" in ample else c.decode
    io = "storage" in ample
    lat = 0.0 if io else c.io_latency + c.io_xfer
    cores = c.cores_nolimit if "cpu-limit" in ample else c.cores
    # More workers hide decode time but not storage waits: each worker still reads sequentially.
    worker_bound = lat / c.workers + (0.0 if "workers" in ample else decode / c.workers)
    core_bound = 0.0 * decode if "cores" in ample else decode / cores
    storage_bound = 0.0 if io else c.storage_bound
    mem = 0.0 if "host-memory" in ample else c.loader_mem
    raw = np.maximum(np.maximum(worker_bound, core_bound), storage_bound) + mem
    return _smooth(np.asarray(raw, dtype=np.float64), c.queue)


def run(c: Costs, ample: frozenset[str] = frozenset()) -> Steps:
    """Step times with the given sub-stages made ample."""
    t_c = 0.0 if "compute" in ample else c.t_compute
    t_m = 0.0 if "hbm" in ample else c.t_hbm
    launch = 0.0 if "launch" in ample else c.launch
    penalty = 0.0 if ample & {"launch", "decode", "cpu-limit", "cores"} else c.launch_penalty
    fwdbwd = np.maximum(t_c + t_m, launch + penalty) * np.ones_like(c.t_compute)
    h2d = 0.0 if "pcie" in ample else c.h2d
    mem = 0.0 if "host-memory" in ample else c.main_mem + c.oom
    busy = h2d + fwdbwd + mem + c.gc
    comm = (
        (0.0 if "nvlink" in ample else c.comm_nvlink)
        + (0.0 if "pcie" in ample else c.comm_pcie)
        + (0.0 if "network" in ample else c.comm_net)
    )
    # Buckets are reduced as backward (two thirds of forward+backward) produces them, but only once
    # every rank has produced them: the slowest rank's backward is what the all-reduce hides under.
    hidden = c.comm_overlap * (2.0 / 3.0) * fwdbwd.max(axis=1)
    exposed = np.maximum(comm - hidden, 0.0)
    sup = supply(c, ample)
    own = busy + exposed[:, None]
    per_rank = np.maximum(own, sup)
    step = per_rank.max(axis=1) + c.ckpt
    return Steps(step, busy, np.maximum(sup - own, 0.0), exposed, sup, fwdbwd)
