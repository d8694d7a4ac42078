"""What dcgm-exporter shows of one pod's GPUs, from the pod's lanes.

Sources: DCGM's profiling-metrics documentation (GR engine, SM activity and occupancy, tensor and
DRAM activity as time shares; warps waiting on memory count as active; DRAM ~0.8 is the practical
peak), NVML's ``nvmlUtilization_t`` (GPU_UTIL is the time any kernel ran, collectives included;
MEM_COPY_UTIL the time device memory was read or written), and NVML's power-management docs (the
enforced limit caps the draw and the clock falls to meet it). Each GPU of a pod has its own clock
and power, and the pod's signal is their mean.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyk.hardware import Board
from bottleneck_operator_dev.familyk.lanes import Arr, PodLanes
from bottleneck_operator_dev.familyk.plan import Plan

NCCL_SM = 0.06  # collectives run on a few SMs (NCCL uses a handful of channels per GPU)


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _ratio(rng: np.random.Generator, x: Arr, noise: float = 0.015) -> Arr:
    result: Arr = np.clip(x + rng.normal(0.0, noise, x.size), 0.0, 1.0)
    return result


def gpu_signals(rng: np.random.Generator, plan: Plan, lanes: PodLanes, board: Board, gpus: int) -> dict[str, Arr]:
    """The pod's DEV and PROF signals (all field sets; the exporter model drops what it lacks)."""
    t = lanes.step
    math, bw = lanes.math / t, lanes.bw / t
    busy = lanes.kernels / t
    comm_vis = np.clip(busy - math - bw, 0.0, 1.0)
    tens_int = _u(rng, 0.3, 0.75) if plan.amp else _u(rng, 0.0, 0.02)
    sm = math * _u(rng, 0.75, 0.97) + bw * _u(rng, 0.7, 0.95) + comm_vis * NCCL_SM
    dram_math = 0.8 * plan.step.math_mem / max(plan.step.math, 1e-9)
    out = {
        "gpu_util": _ratio(rng, busy),
        "gr_engine_active": _ratio(rng, busy * _u(rng, 0.95, 1.0)),
        "sm_active": _ratio(rng, sm),
        "sm_occupancy": _ratio(rng, math * _u(rng, 0.12, 0.4) + bw * _u(rng, 0.4, 0.8) + comm_vis * 0.02),
        "tensor_active": _ratio(rng, math * tens_int + bw * 0.02, 0.005),
        "dram_active": _ratio(rng, math * dram_math + bw * _u(rng, 0.72, 0.86) + comm_vis * 0.05, 0.01),
        "mem_copy_util": _ratio(rng, math * _u(rng, 0.3, 0.6) + bw * _u(rng, 0.8, 1.0) + comm_vis * 0.1),
        "fp16_active": _ratio(rng, math * (_u(rng, 0.02, 0.1) if plan.amp else 0.0), 0.003),
        "fp32_active": _ratio(rng, math * (_u(rng, 0.02, 0.08) if plan.amp else _u(rng, 0.4, 0.7)) + bw * 0.1, 0.005),
    }
    out.update(_power_and_clock(rng, board, plan.cluster.power_cap_frac, out["sm_active"], out["gpu_util"], gpus))
    fb = _u(rng, 0.88, 0.985) if rng.random() < 0.8 else _u(rng, 0.3, 0.75)
    out["fb_used_frac"] = np.clip(fb + rng.normal(0.0, 0.002, t.size), 0.0, 1.0)
    out.update(_links(plan, lanes, board, gpus))
    return out


def _power_and_clock(
    rng: np.random.Generator, board: Board, cap_frac: float, sm: Arr, util: Arr, gpus: int
) -> dict[str, Arr]:
    """Per-GPU draw under the enforced limit, the clock that meets it, averaged over the pod."""
    cap = board.tdp_w * cap_frac
    n = sm.size
    powers, clocks, slowed = np.zeros(n), np.zeros(n), np.zeros(n)
    for _ in range(gpus):
        # Boards of one model differ in how much power one clock step costs (silicon lottery).
        demand_scale = _u(rng, 0.9, 1.12)
        demand = board.idle_w + (board.tdp_w * 1.08 - board.idle_w) * (0.25 * util + 0.75 * sm) * demand_scale
        over = demand > cap
        power = np.minimum(demand, cap * rng.uniform(0.96, 1.0, n))
        clock = board.max_clock * np.where(over, (cap / demand) ** 0.6, 1.0) * rng.uniform(0.95, 1.0, n)
        idle_clock = board.max_clock * _u(rng, 0.15, 0.6)
        clock = np.where(util < 0.05, idle_clock, clock)
        powers += power
        clocks += np.round(clock / 15.0) * 15.0  # clocks move in ~15 MHz bins
        slowed += over
    return {
        "power_w": powers / gpus,
        "sm_clock_mhz": clocks / gpus,
        "power_limit_w": np.full(n, cap),
        "clock_slowdown_frac": slowed / gpus,
    }


def _links(plan: Plan, lanes: PodLanes, board: Board, gpus: int) -> dict[str, Arr]:
    """Bytes per second per GPU on PCIe and NVLink (and what RDMA moves through PCIe)."""
    t = lanes.step
    fabric = plan.cluster.fabric
    intra = plan.intra_comm_share
    h2d = lanes.copy * board.pcie_gbs * 0.8e9  # a busy copy stream reaches ~80 % of the link
    nv_rate = board.nvlink_gbs if board.nvlink_gbs else board.pcie_gbs * 0.6  # P2P over PCIe without NVLink
    intra_b = lanes.comm * intra * nv_rate * 0.85e9 if gpus > 1 else np.zeros(t.size)
    inter_b = lanes.comm * (1 - intra) * (fabric.gbs * 0.9e9 / gpus if fabric else 0.0)
    rdma = inter_b  # RDMA moves it GPU to NIC over PCIe; the socket transport stages it through host memory
    p2p_pcie = intra_b if board.nvlink_gbs == 0 else np.zeros(t.size)
    rx = (h2d + rdma + p2p_pcie) / t + 2e6
    tx = (h2d * 0.05 + rdma + p2p_pcie) / t + 2e6
    nv = intra_b / t if board.nvlink_gbs else np.zeros(t.size)
    return {
        "pcie_rx_bps": rx,
        "pcie_tx_bps": tx,
        "nvlink_rx_bps": nv,
        "nvlink_tx_bps": nv.copy(),
        "nvlink_total_bps": 2.0 * nv,
    }


def inter_node_bytes(plan: Plan, lanes: PodLanes) -> Arr:
    """Bytes per second one pod's node sends (and receives) to other nodes in collectives."""
    fabric = plan.cluster.fabric
    if fabric is None:
        return np.zeros(lanes.step.size)
    rate: Arr = lanes.comm * (1 - plan.intra_comm_share) * fabric.gbs * 0.9e9 / lanes.step
    return rate
