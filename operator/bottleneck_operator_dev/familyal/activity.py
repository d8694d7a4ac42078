"""What the simulated iterations did, second by second, per pod and per GPU.

Each iteration's quantities (seconds of kernel time, bytes, core-seconds, faults, ...) are spread
evenly over the iteration's span and summed into one-second bins, through the running total at the
iteration boundaries. Every exported series in :mod:`.exporters` is derived from these bins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyal.costs import Costs
from bottleneck_operator_dev.familyal.draws import Setup
from bottleneck_operator_dev.familyal.steps import Steps

F = npt.NDArray[np.float64]

# Shares of SM activity, occupancy and DRAM activity while each kind of kernel runs (modelling
# choices: memory-bound warps count as active; NCCL kernels occupy few SMs).
SM_IN = {"compute": 0.95, "hbm": 0.85, "nccl": 0.08}
OCC_IN = {"compute": 0.35, "hbm": 0.6, "nccl": 0.02}
DRAM_IN = {"compute": 0.25, "hbm": 0.8, "nccl": 0.05}


@dataclass(frozen=True)
class Timeline:
    """Where the iterations fall on the clock.

    Attributes:
        bin0: unix time of the first one-second bin's left edge.
        nbins: number of bins.
        job_start: when the Job's pods started.
        edges: iteration boundaries, unix seconds, (K+1,) (stretched to fill the Job's run).
        stretch: real iterations each simulated one stands for (>= 1).
    """

    bin0: float
    nbins: int
    job_start: float
    edges: F
    stretch: float


def make_timeline(steps: Steps, bin0: float, end: float, job_start: float, warmup: float) -> Timeline:
    """Lay the iterations after the warm-up; stretch them when they end before the window does."""
    first = job_start + warmup
    total = float(steps.step.sum())
    stretch = max(1.0, (end - first) / total) if total > 0 else 1.0
    edges = first + np.concatenate([[0.0], np.cumsum(steps.step * stretch)])
    return Timeline(bin0, int(np.ceil(end - bin0)) + 1, job_start, edges, stretch)


def to_bins(tl: Timeline, q: F) -> F:
    """Per-iteration quantities (K, X) as per-second totals (nbins, X), spread evenly in each iteration."""
    cum = np.concatenate([np.zeros((1, q.shape[1])), np.cumsum(q * tl.stretch, axis=0)])
    bin_edges = tl.bin0 + np.arange(tl.nbins + 1, dtype=np.float64)
    out = np.empty((tl.nbins, q.shape[1]))
    for j in range(q.shape[1]):
        out[:, j] = np.diff(np.interp(bin_edges, tl.edges, cum[:, j]))
    return out


def _pod_sum(x: F, gpus: int) -> F:
    """Sum the ranks of each pod: (K, R) -> (K, P)."""
    k, r = x.shape
    res: F = x.reshape(k, r // gpus, gpus).sum(axis=2)
    return res


def gpu_quantities(s: Setup, c: Costs, st: Steps) -> dict[str, F]:
    """Per-rank, per-iteration GPU quantities (seconds of activity, bytes)."""
    sync = np.maximum(st.step[:, None] - c.ckpt[:, None] - np.maximum(st.busy + st.exposed_comm[:, None], st.supply), 0)
    # Ranks waiting at the all-reduce for a slower peer spin in an NCCL kernel: busy to GPU_UTIL.
    nccl = st.exposed_comm[:, None] + sync
    tc, tm = c.t_compute, c.t_hbm
    kern = tc + tm + nccl
    pipe, board = s.pipeline, s.cluster.board
    tensor_share = pipe.workload.mm_eff if (pipe.amp or board.tf32) else 0.0
    fp32_share = 0.0 if (pipe.amp or board.tf32) else 0.7
    rdma_gdr = s.cluster.fabric is not None and s.cluster.fabric.rdma
    inter = c.inter_bytes / s.cluster.gpus if rdma_gdr else 0.0
    p2p = 0.0 if board.nvlink_gbps else c.intra_bytes
    ones = np.ones_like(tc)
    return {
        "kern": kern,
        "sm": tc * SM_IN["compute"] + tm * SM_IN["hbm"] + nccl * SM_IN["nccl"],
        "occ": tc * OCC_IN["compute"] + tm * OCC_IN["hbm"] + nccl * OCC_IN["nccl"],
        "dram": tc * DRAM_IN["compute"] + tm * DRAM_IN["hbm"] + nccl * DRAM_IN["nccl"],
        "tensor": tc * tensor_share,
        "fp32": tc * fp32_share + tm * 0.12,
        "fp16": tm * (0.1 if pipe.amp else 0.0),
        "clock_t": c.clock * (tc + tm),
        "busy_t": tc + tm,
        "pcie_rx": c.h2d_bytes + ones * (inter + p2p),
        "pcie_tx": ones * (2e5 + inter + p2p),
        "nvlink": ones * (c.intra_bytes if board.nvlink_gbps else 0.0),
    }


def host_quantities(s: Setup, c: Costs, st: Steps) -> dict[str, F]:
    """Per-pod, per-iteration host quantities (core-seconds, bytes, counts), summed over the pod's ranks."""
    g = s.cluster.gpus
    pipe, storage = s.pipeline, s.cluster.storage
    # The trainer process spins on synchronisation and launches: about one busy core per rank.
    main = 0.9 * np.repeat(st.step[:, None], g * s.cluster.pods, axis=1)
    mem_stall = c.main_mem + c.loader_mem + c.oom
    io_wait = (c.io_latency + c.io_xfer) * (pipe.workers > 0)
    tcp = s.cluster.fabric is not None and not s.cluster.fabric.rdma
    net_bytes = c.inter_bytes / max(g, 1) if s.cluster.fabric is not None else 0.0
    ones = np.ones_like(c.decode)
    # The kernel's TCP stack costs about a core per 10 Gb/s (modelling choice).
    tcp_cpu = ones * (net_bytes / 1.25e9 if tcp else 0.0)
    swap = s.cluster.swap
    q = {
        "cpu": c.decode + main + tcp_cpu + 0.3 * mem_stall,
        "decode": c.decode,
        "system": 0.08 * c.decode + tcp_cpu + 0.3 * mem_stall + 0.05 * main,
        "io_wait": io_wait,
        "read": c.read_bytes,
        "mem_stall": mem_stall,
        "mem_full": c.main_mem + c.oom,
        "data_wait": st.data_wait,
        # Reclaim under pressure refaults file pages; swap-in faults anonymous ones (4 KiB pages).
        "majfault": mem_stall * 3000.0 + (c.read_bytes / 65536.0 if pipe.workload.key.startswith("llm") else 0.0),
        "swapin": mem_stall * (2500.0 if swap else 0.0),
        "oom": (c.oom > 0).astype(np.float64),
        "tcp": ones * (net_bytes if tcp else 0.0),
        "rdma": ones * (net_bytes if not tcp else 0.0),
        "store_rx": c.read_bytes * (0.0 if storage.block else 1.0),
        # seconds with a busy neighbour, per GPU of the pod (divided back by the pod's GPUs below)
        "noisy": c.noisy * st.step[:, None] / g,
    }
    return {k: _pod_sum(v, g) for k, v in q.items()}


@dataclass(frozen=True)
class Activity:
    """Per-second activity.

    Attributes:
        gpu: name -> (nbins, R) per-GPU totals per second (seconds of activity, bytes).
        host: name -> (nbins, P) per-pod totals per second.
    """

    gpu: dict[str, F]
    host: dict[str, F]


def activity(s: Setup, c: Costs, st: Steps, tl: Timeline) -> Activity:
    """Bin every quantity of the factual run."""
    gq = gpu_quantities(s, c, st)
    hq = host_quantities(s, c, st)
    r, p = s.cluster.pods * s.cluster.gpus, s.cluster.pods
    gnames, hnames = list(gq), list(hq)
    gb = to_bins(tl, np.concatenate([gq[n] for n in gnames], axis=1))
    hb = to_bins(tl, np.concatenate([hq[n] for n in hnames], axis=1))
    gpu = {n: gb[:, i * r : (i + 1) * r] for i, n in enumerate(gnames)}
    host = {n: hb[:, i * p : (i + 1) * p] for i, n in enumerate(hnames)}
    return Activity(gpu, host)
