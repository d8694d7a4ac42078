"""What dcgm-exporter shows of the step model, per pod (the mean over its GPUs unless said otherwise).

Field meanings follow NVIDIA's DCGM documentation: ``GPU_UTIL`` is the share of NVML's sample period
(1/6-1 s) in which any kernel ran, so idle gaps shorter than that period vanish from it, while
``GR_ENGINE_ACTIVE`` is the true time share; NCCL kernels count as busy while they wait for peers,
and use few SMs. ``SM_ACTIVE`` counts warps that wait on memory as active. ``PIPE_TENSOR_ACTIVE``
1.0 means a tensor instruction every other cycle. ``DRAM_ACTIVE`` reads ~0.8 at the practical peak.
Power follows the activity, never above the enforced limit; the SM clock drops when the limit bites.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familym.dynamics import Power
from bottleneck_operator_dev.familym.plans import Plan
from bottleneck_operator_dev.familym.stages import Stages, Timing

Array = npt.NDArray[np.float64]

# NVML's utilisation sample period is 1/6 s to 1 s; idle gaps much shorter than this are hidden.
NVML_PERIOD_S = 0.5


def _activity(
    rng: np.random.Generator, plan: Plan, s: Stages, tm: Timing, training: npt.NDArray[np.bool_]
) -> dict[str, Array]:
    step = tm.step[None, :]
    wait = (step - tm.pod_step) if len(plan.nodes) > 1 else np.zeros_like(tm.pod_step)
    group_a, group_b = np.maximum(s.comp_a, s.mem_a), np.maximum(s.comp_b, s.mem_b)
    nccl = tm.comm_exposed + wait
    busy = np.clip((tm.kernels + nccl) / step, 0.0, 1.0)
    fill_a, fill_b, fill_n = rng.uniform(0.85, 0.97), rng.uniform(0.6, 0.85), rng.uniform(0.05, 0.2)
    occ_a, occ_b = rng.uniform(0.15, 0.35), rng.uniform(0.3, 0.6)
    tensor_eff = rng.uniform(0.45, 0.85) if plan.amp else rng.uniform(0.0, 0.04)
    dram_peak = rng.uniform(0.72, 0.9)
    out = {
        "gr_engine_active": busy,
        "sm_active": (fill_a * group_a + fill_b * group_b + fill_n * nccl) / step,
        "sm_occupancy": (occ_a * group_a + occ_b * group_b + 0.05 * nccl) / step,
        "tensor_active": tensor_eff * s.comp_a / step,
        "dram_active": (dram_peak * (s.mem_a + s.mem_b) + 0.1 * dram_peak * nccl) / step,
        "fp32_active": (rng.uniform(0.05, 0.15) if plan.amp else rng.uniform(0.3, 0.6)) * (s.comp_a + s.comp_b) / step,
        "fp16_active": (rng.uniform(0.04, 0.12) if plan.amp else 0.0) * tm.kernels / step,
    }
    idle_gap = step * (1.0 - busy)
    hidden = np.clip(idle_gap / NVML_PERIOD_S, 0.15, 1.0)
    out["gpu_util"] = 1.0 - (1.0 - busy) * hidden
    pause = ~training
    for key, v in out.items():
        v[:, pause] = v[:, pause] * rng.uniform(0.0, 0.1, size=(v.shape[0], int(pause.sum())))
        out[key] = np.clip(v, 0.0, 1.0)
    return out


def _links(
    plan: Plan, s: Stages, tm: Timing, training: npt.NDArray[np.bool_], rng: np.random.Generator
) -> dict[str, Array]:
    """PCIe and NVLink bytes per second per GPU."""
    b, step = plan.board, tm.step[None, :]
    eff = rng.uniform(0.7, 0.85)  # achievable share of the link's raw rate for bulk copies
    h2d = s.h2d * b.pcie_bps * eff / step
    intra = np.minimum(s.comm * (1.0 - plan.net_share) / step, 1.0) * eff
    inter = np.minimum(s.comm * plan.net_share / step, 1.0)
    net_bps = plan.fabric.bps if plan.fabric is not None else 0.0
    per_gpu_net = inter * net_bps / max(plan.gpus, 1)
    rdma = per_gpu_net if plan.fabric is not None and plan.fabric.gpudirect else 0.0 * per_gpu_net
    gpus_talk = plan.gpus > 1
    p2p = intra * b.pcie_bps * 0.5 if gpus_talk and b.nvlink_bps == 0 else 0.0 * intra
    nvl = intra * b.nvlink_bps if gpus_talk and b.nvlink_bps > 0 else 0.0 * intra
    base = rng.uniform(0.5e6, 5e6)
    rx = h2d + rdma + p2p + base
    tx = 0.05 * h2d + rdma + p2p + base
    pause = ~training
    tx[:, pause] += b.pcie_bps * rng.uniform(0.1, 0.4)  # a checkpoint copies weights and optimizer state out
    return {
        "pcie_rx_bps": np.minimum(rx, b.pcie_bps),
        "pcie_tx_bps": np.minimum(tx, b.pcie_bps),
        "nvlink_tx_bps": nvl,
        "nvlink_rx_bps": nvl,
        "nvlink_total_bps": 2.0 * nvl,
    }


def gpu_signals(
    rng: np.random.Generator, plan: Plan, power: Power, s: Stages, tm: Timing, training: npt.NDArray[np.bool_]
) -> dict[str, Array]:
    """All dcgm-exporter signals of the pods, as true values on the grid (shape (pods, T))."""
    out = _activity(rng, plan, s, tm, training)
    out.update(_links(plan, s, tm, training, rng))
    b = plan.board
    pods, length = tm.pod_step.shape
    load = 0.3 * out["gr_engine_active"] + 0.45 * out["tensor_active"] / 0.85 + 0.25 * out["dram_active"] / 0.8
    demand = b.idle_w + (b.tdp_w - b.idle_w) * np.clip(load * 1.1, 0.0, 1.05)
    limit = power.limit_w[:, None]
    noise = rng.normal(0.0, 0.015, size=(pods, length))
    out["power_w"] = np.clip(np.minimum(demand, limit) * (1.0 + noise), b.idle_w * 0.8, limit * 0.995)
    biting = demand > limit * 0.97
    squeeze = np.where(biting, np.clip((limit - b.idle_w) / (demand - b.idle_w), 0.3, 1.0) ** 0.4, 1.0)
    # Boost clocks sit near the maximum under load, lower when idle, and spread between GPUs.
    idle_drop = 0.75 + 0.25 * np.clip(out["gr_engine_active"] * 3.0, 0.0, 1.0)
    jitter = rng.normal(1.0, 0.01, size=(pods, length))
    out["sm_clock_mhz"] = b.max_clock_mhz * power.spread[:, None] * squeeze * idle_drop * jitter
    out["sm_clock_mhz"] = np.minimum(out["sm_clock_mhz"], b.max_clock_mhz)
    share = biting * rng.uniform(0.5, 1.0, size=(pods, 1))
    out["clock_slowdown_frac"] = np.round(share * plan.gpus) / max(plan.gpus, 1)
    out["power_limit_w"] = np.repeat(limit, length, axis=1)
    out["mem_copy_util"] = np.clip(out["dram_active"] * rng.uniform(0.9, 1.25), 0.0, 1.0)
    fb = rng.uniform(0.3, 0.6) if rng.random() < 0.15 else rng.uniform(0.85, 0.985)
    out["fb_used_frac"] = np.clip(fb + rng.normal(0.0, 0.005, size=(pods, length)), 0.0, 1.0)
    out["xid_code"] = np.zeros((pods, length))
    return out
