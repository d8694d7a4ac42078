"""The per-stage step-time account: how long each stage of a training step takes, and which one limits it.

A data-parallel step runs two sides at once. The input side is the DataLoader: each worker reads a
sample from storage, decodes it on a CPU core and may stall on memory; workers run in parallel but
share the node's storage bandwidth and the pod's cores. The GPU side copies the batch to the device,
runs the forward and backward kernels (bounded by the math units, by device memory, or by the host
thread that launches them) and all-reduces the gradients, which DDP overlaps with the backward pass.
Prefetching overlaps the two sides, so a step takes as long as the slower one (PyTorch Performance
Tuning Guide); with ``num_workers=0`` loading runs in the training process and the two add up.

The limiting stage is the one whose removal would shorten the step most (DESIGN.md's definition).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyae.workload import (
    HBM_EFF,
    OPT_BYTES_PER_PARAM,
    JobConfig,
    math_peak,
    precision_factors,
)

Arr = npt.NDArray[np.float64]
STAGES = ("io", "cpu", "hostmem", "h2d", "comm", "math", "hbm", "launch")
# Assumed: one core issues HTTPS object reads at ~400 MB/s (TLS and copies in the reader).
OBJECT_BYTES_PER_CORE_S = 0.4e9
# Each training process spins on a core (CUDA synchronisation) and runs the pin-memory thread.
MAIN_CORES_PER_RANK = 1.2
# Assumed: pages per second a node can bring back from swap or refault (NVMe 4 KiB random reads,
# zram decompression, and the reclaim that makes room for them).
SWAP_PAGES_PS = {"disk": 2.0e5, "zram": 6.0e5, "none": 2.5e5}
# Assumed: ring latency per gradient bucket (25 MB buckets, PyTorch DDP default).
BUCKET_BYTES = 25e6
HOP_LATENCY_S = 8e-6


@dataclass(frozen=True)
class Terms:
    """Each stage's contribution to one step, seconds (arrays: one value per time slice).

    Attributes:
        io_wait: time the pod's workers, together, wait on storage requests, per step.
        io_bw: time the node's storage needs to deliver the step's bytes (shared by its pods).
        io_ops: time the storage needs to serve the step's requests.
        dec: worker time decoding, per step (workers in parallel).
        cpu_cap: time the pod's cores need for all decoding (the CPU capacity bound).
        stall: worker time stalled on memory (swap-ins, reclaim), per step.
        swap_cap: time the node needs to bring back the step's swapped-out pages.
        h2d: host-to-device copy per GPU.
        comm: gradient all-reduce per GPU.
        math, hbm: GPU time in math-bound and memory-bound kernels.
        launch: host time to issue the step's kernels.
        overlap: share of the all-reduce DDP hides under the backward pass.
        serial: loading runs in the training process (no workers).
        comm_path: "net", "nvlink", "pcie" or "shm": what limits the all-reduce.
    """

    io_wait: Arr
    io_bw: Arr
    io_ops: Arr
    dec: Arr
    cpu_cap: Arr
    stall: Arr
    swap_cap: Arr
    h2d: Arr
    comm: Arr
    math: Arr
    hbm: Arr
    launch: Arr
    overlap: float
    serial: bool
    comm_path: str


def _z(drop: Collection[str], stage: str, value: Arr) -> Arr:
    return np.zeros_like(value) if stage in drop else value


def input_time(t: Terms, drop: Collection[str] = ()) -> Arr:
    """The DataLoader's time per step: its workers' serial work, or a shared resource, whichever is slower."""
    workers = _z(drop, "io", t.io_wait) + _z(drop, "cpu", t.dec) + _z(drop, "hostmem", t.stall)
    shared = np.maximum(np.maximum(_z(drop, "io", t.io_bw), _z(drop, "io", t.io_ops)), _z(drop, "cpu", t.cpu_cap))
    return np.maximum(np.maximum(workers, shared), _z(drop, "hostmem", t.swap_cap))


def gpu_block(t: Terms, drop: Collection[str] = ()) -> Arr:
    """Forward and backward on the GPU: kernel time, unless the host cannot issue kernels that fast."""
    return np.maximum(_z(drop, "math", t.math) + _z(drop, "hbm", t.hbm), _z(drop, "launch", t.launch))


def exposed_comm(t: Terms, drop: Collection[str] = ()) -> Arr:
    """The all-reduce time not hidden under the backward pass (two thirds of the block)."""
    bwd = gpu_block(t, drop) * (2.0 / 3.0)
    comm = _z(drop, "comm", t.comm)
    return np.maximum(comm - bwd, 0.0) + (1.0 - t.overlap) * np.minimum(comm, bwd)


def gpu_side(t: Terms, drop: Collection[str] = ()) -> Arr:
    """Copy, compute and the exposed all-reduce, in stream order."""
    return _z(drop, "h2d", t.h2d) + gpu_block(t, drop) + exposed_comm(t, drop)


def step_time(t: Terms, drop: Collection[str] = ()) -> Arr:
    """Seconds per step, with the stages in `drop` removed."""
    if t.serial:
        return input_time(t, drop) + gpu_side(t, drop)
    return np.maximum(input_time(t, drop), gpu_side(t, drop))


def _a(x: float) -> Arr:
    return np.atleast_1d(np.asarray(x, dtype=np.float64))


def input_terms(cfg: JobConfig) -> dict[str, Arr]:
    """The DataLoader's terms for one pod's step."""
    n = float(cfg.batch * cfg.gpus_per_pod)
    node_samples = n * cfg.pods_per_node
    st = cfg.storage
    workers = max(cfg.workers * cfg.gpus_per_pod, 1)
    decode = cfg.decode_s + (cfg.read_bytes / OBJECT_BYTES_PER_CORE_S if st.kind == "object" else 0.0)
    loader_cores = max(0.3, cfg.cpu_capacity - MAIN_CORES_PER_RANK * cfg.gpus_per_pod * 0.8)
    return {
        "io_wait": _a(n * cfg.read_ops * st.lat_s / workers),
        "io_bw": _a(node_samples * cfg.read_bytes / (st.gbs * 1e9)),
        "io_ops": _a(node_samples * cfg.read_ops / st.iops),
        "dec": _a(n * decode / workers),
        "cpu_cap": _a(n * decode / loader_cores),
        "stall": _a(n * cfg.fault_pages * cfg.fault_lat_s / workers),
        "swap_cap": _a(node_samples * cfg.fault_pages / SWAP_PAGES_PS[cfg.swap]),
    }


def comm_terms(cfg: JobConfig) -> tuple[Arr, str]:
    """The all-reduce per GPU and what bounds it.

    A ring all-reduce moves 2(k-1)/k of the payload through each member [NCCL]; inside a pod the ring
    runs over NVLink, PCIe P2P or host memory, between pods over the fabric, which the pods on one node
    share.
    """
    g, p = cfg.gpus_per_pod, cfg.pods
    intra = 2.0 * (g - 1) / g * cfg.grad_bytes / (cfg.intra_gbs * 1e9) if g > 1 else 0.0
    net = 0.0
    if p > 1:
        per_pod = cfg.fabric.line_bytes * cfg.net_eff / cfg.pods_per_node
        net = 2.0 * (p - 1) / p * cfg.grad_bytes / per_pod
    hops = 2.0 * (cfg.world - 1) * HOP_LATENCY_S * max(1.0, cfg.grad_bytes / BUCKET_BYTES)
    path = "net" if net >= intra and p > 1 else cfg.intra
    return _a(max(intra, net) + (hops if cfg.world > 1 else 0.0)), path


def gpu_terms(cfg: JobConfig, clock: float) -> dict[str, Arr]:
    """The GPU side's terms per GPU at a clock factor (1 = boost clock)."""
    eff, _ = precision_factors(cfg.gpu, cfg.precision, cfg.mm_eff)
    work = cfg.batch * (cfg.size**2 / 224.0**2 if cfg.model.family == "vision" else cfg.size / 256.0)
    # Small batches fill the GPU poorly: GEMM efficiency falls below ~32 images or ~8k tokens (assumed).
    fill = float(min(1.0, (work / 32.0) ** 0.35))
    peak = math_peak(cfg.gpu, cfg.precision) * clock
    hbm_bps = cfg.gpu.hbm_gbs * 1e9 * HBM_EFF
    return {
        "math": _a(cfg.batch * cfg.flops / (peak * eff * fill)),
        "hbm": _a((cfg.batch * cfg.hbm_bytes + cfg.model.params * OPT_BYTES_PER_PARAM) / hbm_bps),
        "launch": _a(cfg.kernels * cfg.launch_s),
        "h2d": _a(cfg.batch * cfg.h2d_bytes / (cfg.pcie_gbs * 1e9 * cfg.pageable)),
    }


def build_terms(cfg: JobConfig, clock: float = 1.0) -> Terms:
    """All stage terms of a configuration, at a clock factor."""
    comm, path = comm_terms(cfg)
    return Terms(
        **input_terms(cfg),
        **gpu_terms(cfg, clock),
        comm=comm,
        overlap=0.85,
        serial=cfg.workers == 0,
        comm_path=path,
    )


def power_clock(cfg: JobConfig, t: Terms) -> float:
    """The clock factor the enforced power limit allows (1 when the GPU stays under it).

    Board power rises with the share of time the SMs and tensor pipes are busy; above the limit the
    GPU lowers its clock, and dynamic power falls roughly with the cube of the clock (P ~ C V^2 f
    with V tracking f) [DVFS].
    """
    step = float(step_time(t)[0])
    busy = float((t.math[0] * 1.0 + t.hbm[0] * 0.55) / step) if step > 0 else 0.0
    idle = cfg.gpu.idle_w
    demand = idle + (cfg.gpu.tdp_w - idle) * min(1.0, 0.2 + 0.85 * busy)
    if demand <= cfg.power_limit_w:
        return 1.0
    return float(((cfg.power_limit_w - idle) / (demand - idle)) ** (1.0 / 3.0))


STAGE_FIELDS: dict[str, tuple[str, ...]] = {
    "io": ("io_wait", "io_bw", "io_ops"),
    "cpu": ("dec", "cpu_cap"),
    "hostmem": ("stall", "swap_cap"),
    "h2d": ("h2d",),
    "comm": ("comm",),
    "math": ("math",),
    "hbm": ("hbm",),
    "launch": ("launch",),
}


def own_time(t: Terms, stage: str) -> float:
    """A stage's own time in the first slice: the largest of its terms."""
    return max(float(getattr(t, f)[0]) for f in STAGE_FIELDS[stage])


@dataclass(frozen=True)
class Account:
    """The step account of one configuration.

    Attributes:
        terms: the stage terms (at the power-limited clock).
        step: seconds per step.
        gains: stage -> how many times faster the step would be without it.
        limit: the stage with the largest gain.
        next_ratio: the step without the limit over the step (>= 0.9: the next stage is within 10 %).
        clock: the clock factor under the power limit.
    """

    terms: Terms
    step: float
    gains: dict[str, float]
    limit: str
    next_ratio: float
    clock: float


def account(cfg: JobConfig) -> Account:
    """The step account of a configuration."""
    first = build_terms(cfg)
    clock = power_clock(cfg, first)
    terms = build_terms(cfg, clock) if clock < 1.0 else first
    step = float(step_time(terms)[0])
    gains = {s: step / max(float(step_time(terms, (s,))[0]), 1e-12) for s in STAGES}
    # Two stages can free the same time when a third bounds the step next (math and memory kernels
    # behind a loader that is almost as slow): the larger of the two is then the limit.
    limit = max(STAGES, key=lambda s: (round(gains[s], 9), own_time(terms, s)))
    return Account(terms, step, gains, limit, 1.0 / gains[limit], clock)
