"""One Job's physical description and the stage rates it implies, for the baseline or a doubled resource.

A :class:`JobPlan` holds what is fixed for the Job (hardware, workload, limits) and what changes
over its window, as 2-second cells per pod (storage tenants, neighbours, cache warming, clocks,
pauses). :func:`stage_rates` turns it into the capacity of every stage, in samples per second per
pod, for the baseline or for one resource doubled for this Job alone: the fluid integration
(:mod:`.fluid`) then lets buffers, back-pressure and the step barrier decide what actually flows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyw.hardware import Gpu, Storage
from bottleneck_operator_dev.familyw.workloads import Workload

FloatArray = npt.NDArray[np.float64]

CELL = 2.0  # seconds per cell of the exogenous processes
TICK = 0.5  # seconds per integration tick (five CFS periods; why not finer: docs/familyw.md)
TICKS_PER_CELL = 4
RES = 1.0  # seconds per sample of a recorded trajectory (what the exporters read)
TICKS_PER_RES = 2

# The counterfactual variants: one resource doubled for this Job alone.
VARIANTS: tuple[str, ...] = ("storage", "cpu", "memory", "pcie", "nvlink", "network", "compute", "hbm")
VARIANT_CLASS: dict[str, Bottleneck] = {
    "storage": Bottleneck.IO,
    "cpu": Bottleneck.CPU,
    "memory": Bottleneck.MEMORY,
    "pcie": Bottleneck.INTERCONNECT,
    "nvlink": Bottleneck.INTERCONNECT,
    "network": Bottleneck.INTERCONNECT,
    "compute": Bottleneck.GPU,
    "hbm": Bottleneck.MEMORY,
}


@dataclass
class JobPlan:
    """Everything the simulation of one Job needs. Arrays of shape (pods, cells) unless noted.

    Rates are effective (nominal figure times the Job's efficiency); per-GPU figures are per GPU,
    per-pod ones per pod (one pod per node, ``gpus`` GPUs each).
    """

    index: int
    target: Bottleneck
    intent: str
    gpu: Gpu
    workload: Workload
    precision: str
    nodes: int
    gpus: int
    batch: int
    storage: Storage
    fabric: str
    pre: float  # seconds simulated before the window starts (the first rate ranges need them)
    duration: float  # the window, seconds
    n_cells: int
    # storage: B/s each pod gets from the store, and what the request latency allows
    stor_bw: FloatArray
    lat_bw: FloatArray
    hit: FloatArray  # page-cache hit share without memory pressure
    # loader CPU
    workers: float
    quota: float  # cores, inf without a CPU limit
    node_cores: float
    nb_load: FloatArray  # runnable neighbour threads on the node, cores
    main_cores: float  # trainer processes' own threads, cores
    dec_noise: FloatArray  # decode speed multiplier (image sizes, augmentation draws)
    # host memory
    ws: FloatArray  # the pod's anonymous working set, bytes
    mem_limit: float
    mem_k: float  # how hard reclaim and swap slow the host per unit of excess
    swap: bool
    # GPU
    pcie_bw: float  # per GPU, per direction
    peak: float  # dense FLOP/s at full clock
    hbm: float  # B/s
    clock: FloatArray  # SM clock as a share of the board's maximum (power cap, spread, jitter)
    gnoise: FloatArray  # kernel-time multiplier
    t_launch: float
    t_host: float  # optimizer, logging, Python per step, s
    # gradient exchange
    nvl_bw: float  # per GPU per direction, 0 on PCIe-only boxes
    net_bw: float  # per node, B/s
    net_share: FloatArray  # share of the network the Job gets
    overlap: float  # share of the backward pass that all-reduce can hide behind
    pause: FloatArray  # shape (cells,): 1 while a checkpoint or evaluation stops training
    raw_cap: float  # read-ahead buffer, samples per pod
    pf_cap: float  # prefetch queue of decoded samples, per pod
    dev_cap: float  # batches staged on the devices, samples per pod
    # what only the exporters need
    power_limit: float
    power_full: float  # board power the kernels would draw at full clock, W
    spread: FloatArray  # shape (pods,): board-to-board clock factor
    nb_disk: FloatArray  # neighbours' disk reads, B/s
    nb_net: FloatArray  # neighbours' network receive, B/s
    nb_mem: float  # share of node memory the neighbours hold
    node_mem: float
    neighbours: int
    fb_frac: float
    bytes_scale: float = 1.0  # HBM traffic against the workload's figures (fusion and tiling lower it)
    mmap: bool = False  # the dataset is memory-mapped (Arrow, LMDB): reads arrive as major faults
    tags: tuple[str, ...] = ()

    @property
    def samples_per_step(self) -> float:
        """Samples one pod consumes per step."""
        return float(self.gpus * self.batch)

    @property
    def grad_bytes(self) -> float:
        return self.workload.params * (4.0 if self.precision == "fp32" else 2.0)


@dataclass
class Rates:
    """Stage capacities and their parts, shape (pods, cells)."""

    io: FloatArray  # samples/s storage can deliver
    dec: FloatArray  # samples/s the loader can decode
    copy: FloatArray  # samples/s host-to-device
    gpu: FloatArray  # samples/s the devices consume (0 while paused)
    t_gpu: FloatArray  # kernel time per step, s
    t_step: FloatArray  # step time with exposed communication and host work, s
    exposed: FloatArray  # communication not hidden by the backward pass, s per step
    t_intra: FloatArray
    t_inter: FloatArray
    ms: FloatArray  # host slowdown from memory pressure (1: none)
    excess: FloatArray  # working set over the limit, share of the limit
    hit: FloatArray
    cores: FloatArray  # cores the loader may use
    mem_share: FloatArray  # share of kernel time bound by HBM bytes
    launch_share: FloatArray  # share of kernel time bound by launches


def stage_rates(p: JobPlan, variant: str = "base") -> Rates:
    """Every stage's capacity for the baseline (``"base"``) or one doubled resource (a :data:`VARIANTS` name)."""
    if variant != "base" and variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    host = _host(p, variant)
    ms = host["ms"]
    t_gpu, mem_share, launch_share = _kernels(p, variant, ms)
    pcie = p.pcie_bw * (2.0 if variant == "pcie" else 1.0)
    t_intra, t_inter = _exchange(p, variant, pcie, ms)
    exposed = np.maximum(t_intra + t_inter - p.overlap * (2.0 / 3.0) * t_gpu, 0.0)
    # host work per step (Python, the optimizer's launches) is dispatch too: doubled with launches
    t_step = t_gpu + exposed + p.t_host / ms / (2.0 if variant == "compute" else 1.0)
    # Host-to-device copies share the GPU's PCIe link with GPUDirect RDMA traffic (multi-node, RDMA
    # fabrics) and, on PCIe-only boxes, with the peer-to-peer all-reduce.
    g = float(p.gpus)
    rdma = 0.5 * np.minimum(t_inter / t_step, 1.0) if p.fabric in ("ib", "roce") else np.zeros_like(ms)
    copy = g * pcie * (1.0 - rdma) / p.workload.h2d_bytes
    if p.nvl_bw <= 0 and g > 1:
        copy = copy * (1.0 - 0.5 * np.minimum(t_intra / t_step, 1.0))
    gpu = np.where(p.pause[None, :] > 0, 0.0, p.samples_per_step / t_step)
    return Rates(
        copy=copy,
        gpu=gpu,
        t_gpu=t_gpu,
        t_step=t_step,
        exposed=exposed,
        t_intra=t_intra,
        t_inter=t_inter,
        mem_share=mem_share,
        launch_share=launch_share,
        **host,
    )


def _host(p: JobPlan, variant: str) -> dict[str, FloatArray]:
    """Storage, page cache, memory pressure and the loader's cores."""
    stor_bw, lat_bw = p.stor_bw, p.lat_bw
    if variant == "storage":  # throughput doubled and latency halved: both ceilings double
        stor_bw, lat_bw = stor_bw * 2.0, lat_bw * 2.0
    # A working set over the cgroup limit makes the kernel reclaim and swap; every host stage then
    # waits on faults. The page cache is charged to the same cgroup, so it shrinks first.
    limit = p.mem_limit
    if variant == "memory":
        limit = max(2.0 * limit, 1.05 * float(p.ws.max()))  # raised until nothing swaps
    fill = p.ws / limit
    excess = np.maximum(fill - 1.0, 0.0)
    ms = 1.0 / (1.0 + p.mem_k * excess)
    hit = p.hit * np.clip(1.0 - (fill - 0.8) / 0.25, 0.05, 1.0)
    miss_bytes = p.workload.sample_bytes * np.maximum(1.0 - hit, 0.002)
    io = np.minimum(stor_bw, lat_bw) * ms / miss_bytes
    # Loader CPU: workers, the CFS quota and the node's cores shared by runnable threads (CFS fair share).
    runnable = p.workers + p.main_cores + p.nb_load
    fair = np.where(runnable > p.node_cores, p.node_cores * p.workers / runnable, p.workers)
    quota_loader = max(p.quota - p.main_cores, 0.25) if np.isfinite(p.quota) else np.inf
    cores = np.minimum(np.minimum(p.workers, quota_loader), fair) * (2.0 if variant == "cpu" else 1.0)
    dec = cores * p.dec_noise * ms / p.workload.decode
    return {"io": io, "dec": dec, "ms": ms, "excess": excess, "hit": hit, "cores": cores}


def _kernels(p: JobPlan, variant: str, ms: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Kernel time per step by the roofline per group, and the shares bound by HBM and by launches.

    FLOPs go against the clocked peak, bytes against HBM, launches against the host's dispatch rate
    (slowed too when the host swaps); the matmul group and the memory-bound group add up.
    """
    wl, b = p.workload, float(p.batch)
    peak = p.peak * (2.0 if variant == "compute" else 1.0) * p.clock
    hbm = p.hbm * (2.0 if variant == "hbm" else 1.0)
    t_launch = p.t_launch / (2.0 if variant == "compute" else 1.0) / ms
    f1, f2 = 0.93 * wl.flops * b, 0.07 * wl.flops * b
    m1, m2 = f1 / wl.intensity * p.bytes_scale / hbm, wl.bytes_mem * b * p.bytes_scale / hbm
    k1, k2 = 0.4 * wl.kernels * t_launch, 0.6 * wl.kernels * t_launch
    c1, c2 = f1 / peak, f2 / peak
    g1 = np.maximum(np.maximum(c1, m1), k1)
    g2 = np.maximum(np.maximum(c2, m2), k2)
    total = g1 + g2
    mem_share = (np.where(m1 >= np.maximum(c1, k1), g1, 0.0) + np.where(m2 >= np.maximum(c2, k2), g2, 0.0)) / total
    launch = (np.where(k1 > np.maximum(c1, m1), g1, 0.0) + np.where(k2 > np.maximum(c2, m2), g2, 0.0)) / total
    return total * p.gnoise, mem_share, launch


def _exchange(p: JobPlan, variant: str, pcie: float, ms: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Ring all-reduce time per step inside a node (NVLink, else PCIe peer-to-peer) and between nodes."""
    g, n, grad = float(p.gpus), float(p.nodes), p.grad_bytes
    t_intra = np.zeros_like(ms)
    if g > 1:
        intra_bw = p.nvl_bw * (2.0 if variant == "nvlink" else 1.0) if p.nvl_bw > 0 else 0.45 * pcie
        t_intra = t_intra + 2.0 * (g - 1) / g * grad / intra_bw
    t_inter = np.zeros_like(ms)
    if n > 1:
        t_inter = 2.0 * (n - 1) / n * grad / (p.net_bw * (2.0 if variant == "network" else 1.0) * p.net_share)
    return t_intra, t_inter


def loader_limit(p: JobPlan) -> str:
    """Which limit on the loader's cores binds in most cells: "workers", "quota" or "node" (CFS fair share)."""
    runnable = p.workers + p.main_cores + p.nb_load
    fair = np.where(runnable > p.node_cores, p.node_cores * p.workers / runnable, p.workers)
    quota_loader = max(p.quota - p.main_cores, 0.25) if np.isfinite(p.quota) else np.inf
    kinds = np.stack([np.full_like(fair, p.workers), np.full_like(fair, quota_loader), fair])
    return ("workers", "quota", "node")[int(np.bincount(kinds.argmin(axis=0).ravel(), minlength=3).argmax())]
