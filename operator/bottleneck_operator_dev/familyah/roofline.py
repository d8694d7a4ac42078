"""The step model: each operator timed by the roofline, then the step's critical path and its label.

A training step runs two chains side by side: the input chain (storage reads and CPU decode, in the
loader's worker processes, prefetched) and the device chain (kernels, host launches, host memory
stalls, exposed collectives and host-to-device copies). The step lasts as long as the longer chain;
the Job's label is the class with the largest share of that chain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyah.hardware import Fabric, Gpu, Storage
from bottleneck_operator_dev.familyah.workload import Arch

CLOSE = 1.15  # a class must lead the next one by this factor to be called


@dataclass(frozen=True)
class Setup:
    """Everything the step time depends on (one GPU's view of a data-parallel Job)."""

    arch: Arch
    gpu: Gpu
    batch: int
    clock: float
    mode: str  # eager | compiled | graphs
    launch_s: float
    eff_compute: float
    eff_memory: float
    gpus_per_pod: int
    pods: int
    fabric: Fabric | None
    nics: int
    p2p: bool
    overlap: float
    grad_bytes: float
    pinned: bool
    storage: Storage
    storage_bps: float
    workers: int
    cpu_avail: float
    cpu_limited: bool
    mem_over: float
    swap_bps: float

    @property
    def world(self) -> int:
        return self.gpus_per_pod * self.pods


@dataclass(frozen=True)
class Step:
    """One training step's time account (seconds per step, per GPU) and what it moves."""

    parts: dict[str, float]
    step_s: float
    device_s: float
    input_s: float
    kernel_s: float
    tensor_flops: float
    fp32_flops: float
    dram_bytes: float
    fwd_share: float
    comm_bytes: float
    comm_link: str
    h2d_bytes: float
    read_bytes: float
    decode_cpu_s: float
    label: Bottleneck
    mechanism: Mechanism
    close: bool


def _kernels(s: Setup) -> tuple[float, float, float, float, float, float]:
    """(compute-bound s, memory-bound s, kernels, tensor FLOPs, FP32 FLOPs, DRAM bytes) of fwd+bwd+optimizer."""
    ops, b = s.arch.ops, float(s.batch)
    flops = ops.flops * b
    nbytes = ops.act_bytes * b + ops.weight_bytes
    kernels = ops.kernels.copy()
    if s.mode != "eager":  # fusion of elementwise chains
        nbytes = np.where(ops.tensor, nbytes, nbytes * 0.5)
        kernels = np.where(ops.tensor, kernels, kernels * 0.3)
    peak = np.where(ops.tensor, s.gpu.tensor_flops, s.gpu.fp32_flops) * s.clock * s.eff_compute
    t_flop = flops / peak
    t_mem = nbytes / (s.gpu.hbm_bps * s.eff_memory)
    bound = t_flop >= t_mem
    compute = 3.0 * float(np.sum(np.where(bound, t_flop, 0.0)))
    memory = 3.0 * float(np.sum(np.where(bound, 0.0, t_mem)))
    opt_bytes = s.arch.params * 28.0  # Adam: fp32 master, two moments, grads read; three written
    memory += opt_bytes / (s.gpu.hbm_bps * s.eff_memory)
    n_kernels = 3.0 * float(np.sum(kernels)) + (12.0 if s.mode != "eager" else 40.0)
    tensor = 3.0 * float(np.sum(np.where(ops.tensor, flops, 0.0)))
    fp32 = 3.0 * float(np.sum(np.where(ops.tensor, 0.0, flops)))
    return compute, memory, n_kernels, tensor, fp32, 3.0 * float(np.sum(nbytes)) + opt_bytes


def _comm(s: Setup, backward_s: float) -> tuple[float, float, str]:
    """(exposed seconds, bytes each GPU sends, link kind) of the step's collectives (ring all-reduce)."""
    n = s.world
    if n <= 1:
        return 0.0, 0.0, "none"
    traffic = 2.0 * (n - 1) / n * s.arch.params * s.grad_bytes + s.arch.alltoall_per_sample * s.batch * (n - 1) / n
    intra = s.gpu.nvlink_bps * 0.8 if s.gpu.nvlink_bps else s.gpu.pcie_bps * (0.75 if s.p2p else 0.4)
    intra = intra if s.gpus_per_pod > 1 else float("inf")
    inter = s.fabric.bps(s.nics) / s.gpus_per_pod if s.fabric is not None and s.pods > 1 else float("inf")
    link = "network" if inter <= intra else ("nvlink" if s.gpu.nvlink_bps else "pcie")
    buckets = max(1.0, s.arch.params * s.grad_bytes / 25e6)  # DDP's default 25 MB buckets
    latency = buckets * 2 * (n - 1) * (8e-6 if link != "network" else 25e-6)
    total = traffic / min(intra, inter) + latency
    return max(0.0, total - s.overlap * backward_s), traffic, link


def _host(s: Setup) -> tuple[float, float, float, float]:
    """(exposed H2D s, read s, decode s, host memory stall s) per step."""
    b = float(s.batch)
    h2d = b * s.arch.h2d_bytes / (s.gpu.pcie_bps * (0.85 if s.pinned else 0.4))
    h2d_exposed = h2d * (0.1 if s.pinned else 1.0)
    read = b * s.arch.sample_bytes / (s.storage_bps / s.gpus_per_pod)
    decode = b * s.arch.decode_s / max(0.25, min(float(s.workers), s.cpu_avail))
    stall = 0.0
    if s.mem_over > 1.0:
        touched = b * (s.arch.h2d_bytes + s.arch.sample_bytes) * 3.0 + 0.5e9
        stall = touched * (s.mem_over - 1.0) / s.mem_over / s.swap_bps
    return h2d_exposed, read, decode, stall


def step_of(s: Setup) -> Step:
    """The step's time account and its label."""
    compute, memory, n_kernels, tensor, fp32, dram = _kernels(s)
    kernel_s = compute + memory
    launch = max(0.0, n_kernels * s.launch_s - kernel_s)
    comm, comm_bytes, link = _comm(s, kernel_s * 2.0 / 3.0)
    h2d, read, decode, stall = _host(s)
    parts = {
        "compute": compute,
        "launch": launch,
        "hbm": memory,
        "hostmem": stall,
        "comm": comm,
        "h2d": h2d,
        "read": read,
        "decode": decode,
    }
    device = compute + launch + memory + stall + comm + h2d
    inp = max(read, decode)
    label, mechanism, close = _label(s, parts, device, inp, link)
    return Step(
        parts,
        max(device, inp),
        device,
        inp,
        kernel_s,
        tensor,
        fp32,
        dram,
        1.0 / 3.0,
        comm_bytes,
        link,
        s.batch * s.arch.h2d_bytes,
        s.batch * s.arch.sample_bytes,
        s.batch * s.arch.decode_s,
        label,
        mechanism,
        close,
    )


def _label(s: Setup, p: dict[str, float], device: float, inp: float, link: str) -> tuple[Bottleneck, Mechanism, bool]:
    """The class with the largest share of the longer chain; close when a rival is within CLOSE."""
    if inp > device:
        scores = {Bottleneck.IO: p["read"], Bottleneck.CPU: p["decode"]}
        other = device
    else:
        scores = {
            Bottleneck.GPU: p["compute"] + p["launch"],
            Bottleneck.MEMORY: p["hbm"] + p["hostmem"],
            Bottleneck.INTERCONNECT: p["comm"] + p["h2d"],
        }
        other = inp
    ranked = sorted(scores.values(), reverse=True)
    top = ranked[0]
    label = max(scores, key=lambda c: scores[c])
    close = ranked[1] * CLOSE > top or other * CLOSE > max(device, inp)
    return label, _mechanism(s, label, p, link), close


def _mechanism(s: Setup, label: Bottleneck, p: dict[str, float], link: str) -> Mechanism:
    if label is Bottleneck.GPU:
        return Mechanism.LAUNCH_BOUND if p["launch"] > p["compute"] else Mechanism.COMPUTE
    if label is Bottleneck.MEMORY:
        return Mechanism.HOST_MEMORY_PRESSURE if p["hostmem"] > p["hbm"] else Mechanism.HBM_BANDWIDTH
    if label is Bottleneck.INTERCONNECT:
        if p["h2d"] > p["comm"] or link == "pcie":
            return Mechanism.PCIE
        return Mechanism.NVLINK if link == "nvlink" else Mechanism.NETWORK
    if label is Bottleneck.IO:
        return Mechanism.LOCAL_DISK if s.storage.local else Mechanism.NETWORK_STORAGE
    if s.cpu_limited:
        return Mechanism.THROTTLED
    return Mechanism.TOO_FEW_WORKERS if s.workers < s.cpu_avail else Mechanism.SATURATED
