"""What dcgm-exporter shows of a pod's GPUs, from the seconds the activity account gives them.

Field meanings follow NVIDIA's DCGM documentation: GPU_UTIL is the share of time any kernel ran
(tiny kernels and NCCL's spinning ones included), GR_ENGINE_ACTIVE the graphics engine's busy share,
SM_ACTIVE the share of SM-cycles with a resident warp (warps waiting on memory count), TENSOR_ACTIVE
tensor-pipe cycles, DRAM_ACTIVE the memory interface's busy share (about 0.8 in practice at most),
PCIe and NVLink as bytes per second. Power is drawn against the enforced limit, and the SM clock
drops when the draw would exceed it (power-capped boards run below their boost clock, each GPU by a
slightly different amount).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyn.activity import Activity
from bottleneck_operator_dev.familyn.plans import Plan

FloatArray = npt.NDArray[np.float64]


def _kernels(rng: np.random.Generator, plan: Plan, act: Activity) -> dict[str, FloatArray]:
    """The ratio fields, from the seconds in each kind of kernel."""
    tc, hbm, launch = act.share("tc"), act.share("hbm"), act.share("launch")
    sync = act.sync / act.step
    warm = act.compiling * float(rng.uniform(0.03, 0.25))
    other = plan.time_shared * float(rng.uniform(0.4, 0.9)) * act.live  # a time-sliced tenant's kernels
    busy = tc + hbm + sync
    out = {
        "gpu_util": np.clip(busy + 0.9 * launch + warm + other, 0.0, 1.0),
        "gr_engine_active": np.clip(busy + 0.5 * launch + 0.8 * warm + other, 0.0, 1.0),
        "sm_active": tc * rng.uniform(0.8, 0.97) + hbm * rng.uniform(0.75, 0.95) + sync * rng.uniform(0.05, 0.2),
        "tensor_active": tc * plan.tensor_eff + hbm * rng.uniform(0.0, 0.06),
        "dram_active": tc * rng.uniform(0.1, 0.4) + hbm * rng.uniform(0.68, 0.86) + sync * 0.04,
        "sm_occupancy": tc * rng.uniform(0.12, 0.35) + hbm * rng.uniform(0.35, 0.7) + sync * 0.03,
        "fp32_active": tc * plan.fp32_share + hbm * rng.uniform(0.05, 0.2),
        "fp16_active": tc * rng.uniform(0.0, 0.08),
    }
    for name in ("sm_active", "tensor_active", "dram_active", "sm_occupancy", "fp32_active", "fp16_active"):
        out[name] = np.clip(out[name] + other * 0.5 + warm * 0.2, 0.0, 0.95)
    out["mem_copy_util"] = np.clip(out["dram_active"] * rng.uniform(1.05, 1.35), 0.0, 1.0)
    return out


def _links(rng: np.random.Generator, plan: Plan, act: Activity) -> dict[str, FloatArray]:
    """PCIe and NVLink bytes per second per GPU (means over the pod's GPUs)."""
    board = plan.boards[0]
    slot = 0.5 if rng.random() < 0.1 else 1.0  # an x8 slot
    pcie = board.pcie_bps * slot * float(rng.uniform(0.7, 0.9))
    rx = act.share("h2d") * pcie
    heavy_tx = plan.workload in ("recsys", "llm-offload")
    tx = rx * float(rng.uniform(0.3, 1.0) if heavy_tx else rng.uniform(0.02, 0.1))
    comm = act.comm_total / act.step * act.stepping
    nvlink = np.zeros_like(rx)
    if plan.comm_link == "nvlink":
        nvlink = comm * board.nvlink_bps / 2 * float(rng.uniform(0.6, 0.85))
    elif plan.comm_link == "pcie":
        both = comm * pcie * float(rng.uniform(0.6, 0.85))
        rx, tx = rx + both, tx + both
    else:
        net = comm * plan.net_bps / plan.gpus * float(rng.uniform(0.7, 0.95))
        if plan.fabric.gpudirect:
            rx, tx = rx + net, tx + net
        if board.nvlink_bps > 0 and plan.gpus > 1:
            nvlink = net * float(rng.uniform(1.0, 3.0))
    small = 2e5 * act.live
    link = board.pcie_bps * slot  # what the slot carries at most, headers included
    return {
        "pcie_rx_bps": np.minimum(rx + small, link),
        "pcie_tx_bps": np.minimum(tx + small, link),
        "nvlink_tx_bps": nvlink,
        "nvlink_rx_bps": nvlink * float(rng.uniform(0.97, 1.0)),
        "nvlink_total_bps": nvlink * 2.0,
    }


def _power_clock(rng: np.random.Generator, plan: Plan, k: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """Power, SM clock and slowdown share: each GPU of a pod on its own, then the pod's mean."""
    pods, n = k["gpu_util"].shape
    g = plan.gpus
    out = {name: np.empty((pods, n)) for name in ("power_w", "sm_clock_mhz", "clock_slowdown_frac", "power_limit_w")}
    for p, board in enumerate(plan.boards):
        cap = plan.power_cap[p]
        act = 0.25 * k["gpu_util"][p] + 0.4 * k["sm_active"][p] + 0.2 * k["dram_active"][p]
        act = act + 0.3 * k["tensor_active"][p]
        if plan.mig_slice < 1.0:  # the other instances of the board draw power too
            act = act * plan.mig_slice + float(rng.uniform(0.1, 0.6)) * (1 - plan.mig_slice)
        lottery = rng.normal(1.0, 0.04, (g, 1))
        demand = board.idle_w + (board.tdp_w - board.idle_w) * np.minimum(act[None, :] * lottery, 1.05)
        capped = demand > cap
        power = np.minimum(demand, cap * rng.uniform(0.96, 0.999, (g, n))) * rng.normal(1.0, 0.01, (g, n))
        power = np.clip(power, board.idle_w * 0.8, cap * 0.999)
        busy = k["gpu_util"][p][None, :] > 0.05
        clock = np.where(busy, board.boost_mhz * rng.uniform(0.97, 1.0, (g, 1)), board.boost_mhz * 0.3)
        ratio = np.clip(cap / np.maximum(demand, 1.0), 0.0, 1.0) ** 0.7
        clock = np.where(capped, np.maximum(board.boost_mhz * ratio, board.base_mhz * 0.7), clock)
        hot = rng.random((g, 1)) < 0.03  # a board near its thermal limit
        clock = np.where(hot & busy, clock * 0.9, clock) * rng.normal(1.0, 0.01, (g, n))
        clock = np.minimum(np.round(clock / 15.0) * 15.0, board.boost_mhz)
        out["power_w"][p] = power.mean(axis=0)
        out["sm_clock_mhz"][p] = clock.mean(axis=0)
        out["clock_slowdown_frac"][p] = ((capped | hot) & busy).mean(axis=0)
        out["power_limit_w"][p] = cap
    return out


def gpu_truth(rng: np.random.Generator, plan: Plan, act: Activity) -> dict[str, FloatArray]:
    """Every dcgm-exporter signal of each pod along the grid, in the contract's units."""
    out = _kernels(rng, plan, act)
    out.update(_links(rng, plan, act))
    out.update(_power_clock(rng, plan, out))
    fb = plan.fb_frac + rng.uniform(0.0, 0.02)
    ramp = np.clip(np.cumsum(act.compiling, axis=1) / max(float(act.compiling.sum(axis=1).max()), 1.0), 0.05, 1.0)
    out["fb_used_frac"] = np.minimum(np.where(act.compiling > 0, fb * ramp, fb), 0.995) * np.ones_like(act.live)
    out["xid_code"] = np.zeros_like(act.live)
    return out
