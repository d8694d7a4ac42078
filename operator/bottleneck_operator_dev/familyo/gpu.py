"""What dcgm-exporter would read off one pod's GPUs while its step runs as the step model says.

Every value is a share of the step's time (or bytes moved in it) seen through the field's NVIDIA
definition: GPU_UTIL is the time any kernel ran, SM activity counts warps waiting on memory, DRAM
activity tops out near 0.8, power follows activity up to the enforced limit and the clock gives way
above it. Per-GPU spread (board binning, clocks moving with power management) is drawn per GPU.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyo.workload import Plan

FloatArray = npt.NDArray[np.float64]


def _shares(plan: Plan) -> dict[str, float]:
    """Time shares of one step on a GPU of the job."""
    s, step = plan.stages, plan.stages.step
    roof = max(s.math, s.hbm)
    comm_on_gpu = min(s.comm, step)
    return {
        "busy": min(1.0, (s.kernel + s.comm_exposed) / step),
        "roof": roof / step,
        "math": s.math / step,
        "hbm": s.hbm / step,
        "launch": s.launch / step,
        "comm": comm_on_gpu / step,
        "h2d": s.h2d / step,
        "intra": s.intra / step,
        "inter": s.inter / step,
    }


def gpu_truth(
    plan: Plan, rng: np.random.Generator, activity: FloatArray, power_cap: float, inter_node_bps: float
) -> dict[str, FloatArray]:
    """The pod's GPU signals per sample (pod mean over its GPUs; fb max), in the contract's units.

    Args:
        plan: the job.
        rng: this pod's generator.
        activity: per sample, the share of the sample the job spent stepping (checkpoints, jitter).
        power_cap: enforced limit as a share of TDP.
        inter_node_bps: bytes/s this node moves over the fabric (GPUDirect RDMA puts it on PCIe).
    """
    sh, g, n = _shares(plan), plan.gpus, activity.size
    noise = rng.normal(1.0, 0.03, (g, n)).clip(0.85, 1.15)
    act = activity[None, :] * noise
    fill_main, fill_tiny, fill_nccl = rng.uniform(0.8, 0.97), rng.uniform(0.1, 0.35), rng.uniform(0.05, 0.2)
    busy = np.clip(sh["busy"] * act, 0.0, 1.0)
    sm = np.clip(act * (fill_main * sh["roof"] + fill_tiny * sh["launch"] + fill_nccl * sh["comm"]), 0.0, 1.0)
    tensor = np.clip(act * plan.tensor_eff * min(sh["math"], sh["roof"]), 0.0, 1.0)
    dram = np.clip(act * (0.82 * sh["hbm"] + 0.08 * sh["math"] + 0.03 * sh["comm"]), 0.0, 0.88)
    occ_base = rng.uniform(0.25, 0.5) + (0.2 if sh["hbm"] > sh["math"] else 0.0)
    out: dict[str, FloatArray] = {
        "gpu_util": np.clip(busy + rng.uniform(0.0, 0.04), 0.0, 1.0).mean(0),
        "gr_engine_active": np.clip(busy * rng.uniform(0.93, 1.0), 0.0, 1.0).mean(0),
        "sm_active": sm.mean(0),
        "sm_occupancy": np.clip(sm * occ_base, 0.0, 1.0).mean(0),
        "tensor_active": tensor.mean(0),
        "dram_active": dram.mean(0),
        "fp16_active": np.clip(busy * rng.uniform(0.01, 0.08), 0.0, 1.0).mean(0),
        "fp32_active": np.clip(busy * rng.uniform(0.03, 0.2), 0.0, 1.0).mean(0),
        "mem_copy_util": np.clip(dram * 1.1 + busy * rng.uniform(0.05, 0.2), 0.0, 1.0).mean(0),
    }
    out.update(_links(plan, rng, sh, act, inter_node_bps))
    out.update(_power_clock(plan, rng, busy, tensor, dram, power_cap))
    full = rng.uniform(0.85, 0.98) if plan.arch.name != "llm-finetune-lora" else rng.uniform(0.3, 0.8)
    out["fb_used_frac"] = np.clip(full + rng.normal(0.0, 0.004, (g, n)), 0.0, 1.0).max(0)
    out["xid_code"] = np.zeros(n)
    return out


def _links(
    plan: Plan, rng: np.random.Generator, sh: dict[str, float], act: FloatArray, inter_node_bps: float
) -> dict[str, FloatArray]:
    """PCIe and NVLink bytes per GPU: a stage near its time share moves bytes near the link's rate."""
    b, eff = plan.board, rng.uniform(0.75, 0.93)
    pcie = b.pcie_gbs * 1e9 * eff
    rx = act * (sh["h2d"] * pcie + rng.uniform(1e6, 3e7))
    tx = act * (sh["h2d"] * pcie * rng.uniform(0.01, 0.06) + rng.uniform(1e6, 1e7))
    if b.nvlink_gbs > 0:
        nvl = act * sh["intra"] * b.nvlink_gbs * 1e9 * eff
    else:
        # Peer traffic without NVLink crosses the host's PCIe switch, both ways.
        nvl = np.zeros_like(act)
        rx = rx + act * sh["intra"] * pcie
        tx = tx + act * sh["intra"] * pcie
    if plan.fabric is not None and plan.fabric.rdma:
        per_gpu = inter_node_bps / plan.gpus
        rx, tx = rx + act * per_gpu, tx + act * per_gpu
    nvl_rx = nvl * rng.uniform(0.97, 1.03)
    return {
        "pcie_rx_bps": rx.mean(0),
        "pcie_tx_bps": tx.mean(0),
        "nvlink_tx_bps": nvl.mean(0),
        "nvlink_rx_bps": nvl_rx.mean(0),
        "nvlink_total_bps": (nvl + nvl_rx).mean(0),
    }


def _power_clock(
    plan: Plan,
    rng: np.random.Generator,
    busy: FloatArray,
    tensor: FloatArray,
    dram: FloatArray,
    cap: float,
) -> dict[str, FloatArray]:
    """Power follows activity up to the enforced limit; above it the clock gives way (power-cap bit)."""
    b, g, n = plan.board, busy.shape[0], busy.shape[1]
    limit = b.tdp_w * cap
    demand = b.idle_w + (b.tdp_w - b.idle_w) * np.clip(0.3 * busy + 0.5 * tensor / 0.8 + 0.25 * dram / 0.8, 0.0, 1.05)
    demand = demand * rng.normal(1.0, 0.02, (g, n))
    capped = demand > limit
    power = np.where(capped, limit * rng.uniform(0.96, 0.999, (g, n)), np.minimum(demand, limit * 0.999))
    bin_ = rng.uniform(0.9, 1.0, (g, 1))  # per-board binning
    idle_drop = 1.0 - rng.uniform(0.0, 0.45, (g, n)) * (1.0 - busy)
    ratio = np.clip((limit - b.idle_w) / np.maximum(demand - b.idle_w, 1e-9), 0.5, 1.0)
    clock = b.max_mhz * bin_ * idle_drop * np.where(capped, ratio**0.7, 1.0) * rng.normal(1.0, 0.01, (g, n))
    return {
        "power_w": power.mean(0),
        "power_limit_w": np.full(n, limit),
        "sm_clock_mhz": np.clip(clock, 210.0, b.max_mhz).mean(0),
        "clock_slowdown_frac": capped.mean(0),
    }
