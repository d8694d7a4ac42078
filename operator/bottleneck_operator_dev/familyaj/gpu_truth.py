"""What dcgm-exporter would read on a pod's GPUs while its step runs as costed.

Over one step of ``T`` seconds a GPU runs the compute-bound kernels, the memory-bound kernels and
the NCCL kernels (which spin while a faster rank waits for the slowest), copies batches over PCIe
and moves collective bytes over NVLink or, for GPUDirect RDMA and socket transports, over PCIe.
DCGM's profiling ratios are the time shares of those phases weighted by how much of the SMs, the
tensor pipes and the DRAM each phase keeps busy (DCGM profiling documentation: warps waiting on
memory count as active; DRAM activity ~0.8 is the practical peak; tensor activity 1.0 is one
tensor instruction every other cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyaj.fleet import Placement
from bottleneck_operator_dev.familyaj.stepmodel import Stages, pod_step
from bottleneck_operator_dev.familyaj.workload import Workload

FloatArray = npt.NDArray[np.float64]
MIB = float(2**20)


@dataclass(frozen=True)
class Texture:
    """How a Job's kernels use the GPU (drawn once per Job).

    Attributes:
        fill_compute, fill_memory, fill_tiny, fill_nccl: share of SMs busy in each phase.
        occ_compute, occ_memory: warp occupancy in each phase.
        dram_compute, dram_memory: DRAM activity in each phase.
        frag_launch: how much GPU_UTIL overstates a GPU fed by a stream of tiny kernels.
    """

    fill_compute: float
    fill_memory: float
    fill_tiny: float
    fill_nccl: float
    occ_compute: float
    occ_memory: float
    dram_compute: float
    dram_memory: float
    frag_launch: float


def draw_texture(rng: np.random.Generator, sms: int) -> Texture:
    """A Job's kernel texture."""
    return Texture(
        fill_compute=float(rng.uniform(0.85, 0.98)),
        fill_memory=float(rng.uniform(0.7, 0.95)),
        fill_tiny=float(rng.uniform(0.08, 0.35)),
        fill_nccl=float(min(0.4, rng.choice([8, 16, 24, 32]) / sms)),
        occ_compute=float(rng.uniform(0.15, 0.35)),
        occ_memory=float(rng.uniform(0.35, 0.7)),
        dram_compute=float(rng.uniform(0.1, 0.35)),
        dram_memory=float(rng.uniform(0.72, 0.86)),
        frag_launch=float(rng.uniform(0.55, 0.92)),
    )


def comm_bytes(w: Workload, pl: Placement) -> tuple[float, float]:
    """Per GPU per step per direction: intra-node collective bytes, and inter-node bytes through its NIC path."""
    g, n = pl.gpus_per_pod, pl.pods
    intra = (2.0 * (g - 1) / g * w.grad_bytes * w.comm_factor + w.tp_bytes) if g > 1 else 0.0
    inter = 2.0 * (n - 1) / n * w.grad_bytes * w.comm_factor / g if n > 1 else 0.0
    return intra, inter


def gpu_levels(w: Workload, pl: Placement, st: Stages, step: float, pod: int, tex: Texture) -> dict[str, FloatArray]:
    """Per-GPU levels of the dcgm signals (one value per GPU of the pod) over a step of ``step`` seconds."""
    gpu, g, T = pl.gpu, pl.gpus_per_pod, step
    kernels = st.compute + st.hbm
    launch_bound = st.launch > kernels
    comm = st.intra + st.inter
    own = pod_step(st)  # a faster pod waits for the slowest inside NCCL's kernels
    nccl = comm + (max(T - own, 0.0) if pl.world > 1 else 0.0)
    hidden = min(nccl, st.overlap * kernels)
    union = min(T, kernels + nccl - hidden)
    gr = union / T
    frag = tex.frag_launch if launch_bound else 0.1 + 0.5 * float(np.exp(-T / 0.05))
    fill_c = tex.fill_tiny if launch_bound else tex.fill_compute
    fill_m = tex.fill_tiny * 1.2 if launch_bound else tex.fill_memory
    sm = min(1.0, (st.compute * fill_c + st.hbm * fill_m + nccl * tex.fill_nccl) / T)
    occ = min(1.0, (st.compute * tex.occ_compute + st.hbm * tex.occ_memory + nccl * 0.03) / T)
    tensor = st.compute * w.tensor_share * min(0.95, 1.3 * w.mfu / max(st.clock, 0.5)) / T
    dram = min(0.9, (st.compute * tex.dram_compute + st.hbm * tex.dram_memory + nccl * 0.05) / T)
    bf16 = w.tensor_share > 0.5
    fp16 = (0.1 * st.hbm + 0.05 * st.compute) / T if bf16 else 0.01 * gr
    fp32 = ((1 - w.tensor_share) * 0.5 * st.compute + 0.08 * st.hbm) / T
    rx, tx, nvl = _link_bytes(w, pl, st, T)
    power, clock, capped = _power_clock(w, pl, st, T, nccl, pod)
    spread = pl.clock_spread[pod]
    total_mib = gpu.memory_gib * 1024.0
    fb_used = total_mib * w.fb_frac * (0.985 + 0.015 * spread)
    ones = np.ones(g)
    return {
        "gpu_util": ones * min(1.0, 1.0 - (1.0 - gr) * (1.0 - frag)),
        "gr_engine_active": ones * gr,
        "sm_active": ones * sm,
        "sm_occupancy": ones * occ,
        "tensor_active": ones * tensor,
        "dram_active": ones * dram,
        "fp16_active": ones * fp16,
        "fp32_active": ones * fp32,
        "mem_copy_util": ones * min(1.0, 1.15 * dram + 0.01),
        "pcie_rx_bps": ones * rx,
        "pcie_tx_bps": ones * tx,
        "nvlink_rx_bps": ones * nvl,
        "nvlink_tx_bps": ones * nvl,
        "nvlink_total_bps": ones * 2 * nvl,
        "power_w": np.asarray(power, dtype=np.float64),
        "sm_clock_mhz": np.asarray(clock, dtype=np.float64),
        "clock_slowdown_frac": (spread * st.clock / spread.min() < 0.995).astype(np.float64) if capped else 0 * ones,
        "power_limit_w": ones * pl.power_limit_w,
        "fb_used_mib": np.asarray(fb_used, dtype=np.float64),
        "fb_free_mib": np.asarray(total_mib - fb_used - 512.0, dtype=np.float64),
    }


def gpu_idle_levels(w: Workload, pl: Placement, pod: int, startup: bool) -> dict[str, FloatArray]:
    """Per-GPU levels while the step loop pauses (a checkpoint) or has not started (loading)."""
    gpu, g = pl.gpu, pl.gpus_per_pod
    ones, zeros = np.ones(g), np.zeros(g)
    total_mib = gpu.memory_gib * 1024.0
    used = total_mib * (0.03 if startup else w.fb_frac) * np.ones(g)
    d2h = 0.0 if startup else min(0.5 * gpu.pcie_bps, 3.0 * w.grad_bytes / max(g, 1) / 20.0)
    return {
        "gpu_util": ones * (0.0 if startup else 0.03),
        "gr_engine_active": zeros + (0.0 if startup else 0.01),
        "sm_active": zeros + (0.0 if startup else 0.005),
        "sm_occupancy": zeros.copy(),
        "tensor_active": zeros.copy(),
        "dram_active": zeros + 0.004,
        "fp16_active": zeros.copy(),
        "fp32_active": zeros.copy(),
        "mem_copy_util": zeros + 0.01,
        "pcie_rx_bps": ones * (4e8 if startup else 2e6),
        "pcie_tx_bps": ones * (1e6 + d2h),
        "nvlink_rx_bps": zeros.copy(),
        "nvlink_tx_bps": zeros.copy(),
        "nvlink_total_bps": zeros.copy(),
        "power_w": ones * gpu.idle_w * (0.9 + 0.1 * pl.clock_spread[pod]),
        "sm_clock_mhz": ones * gpu.boost_mhz * pl.clock_spread[pod] ** 0.3,
        "clock_slowdown_frac": zeros.copy(),
        "power_limit_w": ones * pl.power_limit_w,
        "fb_used_mib": used,
        "fb_free_mib": total_mib - used - 512.0,
    }


def _link_bytes(w: Workload, pl: Placement, st: Stages, T: float) -> tuple[float, float, float]:
    """PCIe host-to-device and device-to-host bytes/s, and NVLink bytes/s per direction, of one GPU."""
    gpu = pl.gpu
    intra_b, inter_b = comm_bytes(w, pl)
    over_pcie = inter_b + (intra_b if st.intra_link == "pcie" else 0.0)
    cap = 0.97 * gpu.pcie_bps
    rx = min(cap, 1.06 * (w.batch * w.dev_bytes + w.offload_bytes + over_pcie) / T + 2e6)
    tx = min(cap, 1.06 * (w.offload_bytes + over_pcie) / T + 1e6)
    nvl = min(0.95 * gpu.nvlink_bps, intra_b / T) if st.intra_link == "nvlink" else 0.0
    return rx, tx, nvl


def _power_clock(
    w: Workload, pl: Placement, st: Stages, T: float, nccl: float, pod: int
) -> tuple[FloatArray, FloatArray, bool]:
    """Per-GPU power and SM clock, and whether the power limit holds the clocks down."""
    gpu = pl.gpu
    busy = 0.95 * st.compute / T * (0.6 + 0.4 * w.tensor_share) + 0.55 * st.hbm / T + 0.15 * nccl / T
    activity = 0.12 + 0.88 * min(1.0, busy)
    spread = pl.clock_spread[pod]
    capped = st.clock < 0.999
    clock = gpu.boost_mhz * (st.clock / spread.min() * spread if capped else spread**0.3)
    draw = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * activity * (clock / gpu.boost_mhz) ** 3
    power = np.minimum(pl.power_limit_w * (0.965 + 0.03 * spread), draw)
    return np.asarray(power, dtype=np.float64), np.asarray(clock, dtype=np.float64), capped
