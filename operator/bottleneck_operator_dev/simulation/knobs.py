"""What a scenario's knobs are drawn from once its hardware, workload and shape are set: each stage's
rates (storage, loader CPU, host memory, DRAM, host-to-device copies, gradients) and the kernels'
efficiency.

Every draw takes the job's generator from the :class:`Draft`; their order is part of the
simulator's output (see :mod:`.draw`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from bottleneck_operator.analysis.features.hardware import GpuSpec
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.simulation import catalog as cat


def uniform(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    return float(rng.uniform(*lo_hi))


def log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def pick(rng: np.random.Generator, options: tuple[Any, ...] | list[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


@dataclass(frozen=True)
class Shape:
    """Pods, GPUs and nodes of one job."""

    gpus_per_node: int
    gpp: int  # GPUs per pod
    n_pods: int
    ppn: int  # pods per node
    node_cpus: int
    node_mem: float

    @property
    def n_nodes(self) -> int:
        return math.ceil(self.n_pods / self.ppn)

    @property
    def gpn_job(self) -> int:
        """This job's GPUs on one node (they share its storage and NIC)."""
        return self.gpp * self.ppn


@dataclass(frozen=True)
class Draft:
    """What the knob draws share: the job's generator, mechanism, workload, shape and relative times."""

    rng: np.random.Generator
    target: Bottleneck
    mechanism: str
    spec: GpuSpec
    wl: cat.Workload
    shape: Shape
    batch: int
    m: float  # margin drawn for the runner-up
    rel: dict[Bottleneck, float]  # per-class step time relative to the target's
    scale: float  # seconds per unit of ``rel``

    def t(self, c: Bottleneck) -> float:
        """Seconds per step the drawn relative times give class ``c``."""
        return self.rel[c] * self.scale


def draw_io(d: Draft, storage: cat.StorageKind, nic: int) -> tuple[float, float, float]:
    """Storage throughput the pod's share gets (contention, small files, throttling lower it).

    Returns:
        (storage capacity, bytes a sample, achieved read bandwidth), bytes/s.
    """
    cap = uniform(d.rng, storage.bw_bps)
    if storage.network:
        cap = min(cap, nic * 1e9 / 8 * 0.9)
    bytes_ps = uniform(d.rng, d.wl.bytes_per_sample)
    t_io = d.t(Bottleneck.IO)
    gpn_job = d.shape.gpn_job
    bw = d.batch * gpn_job * bytes_ps / t_io
    floor = (0.1 if storage.network else 0.2) * cap if d.target is Bottleneck.IO else 0.3 * cap
    if bw > cap:
        bw = cap
    elif bw < floor:
        bytes_ps = min(bytes_ps * floor / bw, d.wl.bytes_per_sample[1] * 3)
        bw = max(floor, d.batch * gpn_job * bytes_ps / t_io)
    return cap, bytes_ps, bw


def draw_cpu(d: Draft) -> tuple[float, float, float | None]:
    """Loader workers on the pod's share of the node, or a CFS quota: (decode core-s, loader cores, limit)."""
    rng, wl, batch, gpp = d.rng, d.wl, d.batch, d.shape.gpp
    share = d.shape.node_cpus / d.shape.ppn
    # DataLoader workers: often a fixed num_workers per GPU, sometimes one per core of the pod's share.
    pick = rng.random()  # a fifth run one to three per GPU (the gpu-loader recording: one)
    per_gpu = (1, 3) if pick < 0.2 else (4, 16)
    workers = min(share * 0.9, gpp * uniform(rng, per_gpu)) if pick < 0.6 else share * 0.9
    decode = uniform(rng, wl.decode_core_s)
    t_cpu = d.t(Bottleneck.CPU)
    cpu_limit: float | None = None
    if d.mechanism == "cpu-throttle":
        cores = batch * gpp * decode / t_cpu / 0.95
        if cores < 1.0 or cores > workers:
            decode = min(max(decode * (max(1.0, min(cores, workers * 0.8)) / cores), 1e-6), 0.5)
            cores = batch * gpp * decode / t_cpu / 0.95
        cpu_limit = round(max(cores, 1.0) * 2) / 2
        loader = max(cpu_limit * 0.95 - 0.05 * gpp, 0.5)  # waiting trainers sleep: ~0.05 core each
    else:
        loader = workers
        decode = t_cpu * loader / (batch * gpp)
        decode = min(max(decode, wl.decode_core_s[0] * 0.3), wl.decode_core_s[1] * 3)
        need = batch * gpp * decode / t_cpu + gpp * 1.2
        if rng.random() < 0.5 and need * 1.3 <= share:  # a limit with headroom: CFS series exist, stay low
            cpu_limit = round(min(need * uniform(rng, (1.3, 2.5)), share) * 2) / 2
    return decode, loader, cpu_limit


def draw_host_memory(d: Draft, loader: float) -> tuple[float, float]:
    """Fault stalls in the loader (swap on SSD ~0.1-1 ms a fault, zram tens of µs): (faults a sample, latency)."""
    rng = d.rng
    latency = log_uniform(rng, 2e-5, 1e-3)
    if d.mechanism == "mem-host":
        # Thrashing shows thousands to tens of thousands of major faults a second (TELEMETRY.md); the
        # wait per fault (swap-in plus direct reclaim) follows from how much of the loaders' time stalls.
        t_mem = d.t(Bottleneck.MEMORY)
        t_cpu = d.t(Bottleneck.CPU)
        stall = t_mem / (t_mem + t_cpu)
        fps = log_uniform(rng, 2e3, 6e4)
        latency = min(max(loader * stall / fps, 1e-4), 0.05)
        faults = t_mem * loader / (d.batch * d.shape.gpp * latency)
    else:
        faults = log_uniform(rng, 1e-6, 1e-3) if d.wl.key != "recsys" else 0.0
    return faults, latency


def draw_dram(d: Draft) -> float:
    """GPU DRAM time over math time: bandwidth-bound kernels have it above 1."""
    dram_ratio = uniform(d.rng, d.wl.dram_ratio)
    if d.mechanism == "mem-dram":
        return 1.0 / d.rel[Bottleneck.GPU]
    limit = (1 - d.m) * 0.95 / d.rel[Bottleneck.GPU] if d.target is not Bottleneck.MEMORY else dram_ratio
    return min(dram_ratio, limit)


def draw_h2d(d: Draft) -> tuple[float, float]:
    """Host-to-device copies: (PCIe efficiency, bytes a sample).

    Pageable memory goes through a staging buffer (~55-85 % of the link), and GPUs behind one PCIe
    switch share its x16 uplink when they copy at once (DGX-style topologies).
    """
    rng, wl = d.rng, d.wl
    pcie_eff = uniform(rng, (0.55, 0.85)) * (uniform(rng, (0.5, 1.0)) if d.shape.gpn_job >= 2 else 1.0)
    uniform(rng, wl.h2d_bytes)  # drawn, then set from the wanted time (kept so that later draws stay put)
    ic = d.rel[Bottleneck.INTERCONNECT]
    t_h2d_want = (ic if d.mechanism != "ic-comm" else ic * 0.3) * d.scale
    # float32 clips/volumes or several crops per sample make the payload far larger than a uint8 image
    h2d_lo, h2d_hi = wl.h2d_bytes[0] * 0.5, wl.h2d_bytes[1]
    if d.mechanism == "ic-h2d":  # 3-D volumes, float32 clip stacks: several MB a sample (128^3 float32 = 8 MB)
        h2d_hi = max(wl.h2d_bytes[1] * 12, 16e6)
    h2d = min(max(t_h2d_want * d.spec.pcie_bps * pcie_eff / d.batch, h2d_lo), h2d_hi)
    return pcie_eff, h2d


def draw_grad(d: Draft, spb: float) -> float:
    """Gradient bytes all-reduced a step."""
    wl = d.wl
    grad = uniform(d.rng, wl.params) * wl.grad_bytes_per_param
    if spb > 0:
        share_ic = 1.0 if d.mechanism == "ic-comm" or d.target is not Bottleneck.INTERCONNECT else 0.3
        want = d.rel[Bottleneck.INTERCONNECT] * share_ic * d.scale / spb
        if d.mechanism == "ic-comm":  # model size anywhere in the workload's range (x3: ZeRO/FSDP gathers)
            grad = min(max(want, wl.params[0] * wl.grad_bytes_per_param), wl.params[1] * wl.grad_bytes_per_param * 3)
        else:
            grad = min(grad, want)
    return grad


# small kernels' data stays in L2: DRAM 0.0 on an H200 (tests/data/gpu-launch, gpu-launch-wide)
LAUNCH_DRAM_SCALE = 0.05

# The share of a launch-bound step in which kernels run: a kernel's time over the host's time to issue
# it. NVIDIA's "Getting Started with CUDA Graphs" (developer.nvidia.com/blog/cuda-graphs) times a 2.9 us
# kernel at 9.6 us a launch when the host waits for each one, 0.30, and at 3.8 us when it does not,
# 0.76; eager PyTorch on an H200 read 0.44-0.54 (gpu-launch-fed, gpu-launch, gpu-launch-wide). How
# much host work a cluster's launch loops carry is what no simulator pins down, so the span is drawn.
KERNEL_DUTY = (0.30, 0.85)


def kernel_efficiency(rng: np.random.Generator, wl: cat.Workload, mechanism: str) -> dict[str, float]:
    """Tensor-pipe and SM activity while kernels run (drawn in this order: tensor, then SM).

    Bandwidth-bound kernels barely use the tensor pipes. Launch-bound steps (small kernels, eager
    mode, many tiny ops, a Python loop that cannot queue work fast enough) run kernels part of the
    time, each with few warps and barely the tensor pipes: an H200 read SM activity 0.04 and 0.52 of
    its busy time for MLPs 256 and 512 wide, tensor 0.0 (tests/data/gpu-launch, gpu-launch-wide).
    """
    tensor = uniform(rng, wl.tensor_eff)
    sm = uniform(rng, (0.75, 0.95))
    if mechanism == "mem-dram":
        tensor *= 0.15
    elif mechanism == "gpu-launch":
        tensor *= 0.02
        sm = 0.03 + (sm - 0.75) / 0.2 * 0.57  # the same draw, mapped onto 0.03-0.6
    return {"tensor_eff": tensor, "sm_eff": sm}
