"""What dcgm-exporter would read from each GPU of a family F job, second by second.

From the step's stage shares (seconds of each stage over the step): NVML's ``GPU_UTIL`` is the share
of time any kernel ran, NCCL's kernels included; SM activity counts warps resident, so memory-bound
kernels look active and NCCL's few channels look nearly idle; tensor activity only comes from the
matrix stages; DRAM activity peaks near 0.8 in bandwidth-bound kernels (DCGM profiling docs, via
TELEMETRY.md). Power follows activity up to the enforced limit, and above it the clock drops: the
board's boost clock is a maximum, never a promise, and boards of one model differ by a few percent.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyf.design import Design

FloatArray = npt.NDArray[np.float64]

# tensor-pipe activity during matrix stages by workload: large bf16 GEMMs keep the pipe fuller than
# convolutions, embeddings' MLPs or RNN-T joints (an assumption of this family, drawn in a range).
_TENSOR = {
    "llm-pretrain-fsdp": (0.45, 0.8),
    "llm-finetune-zero": (0.4, 0.75),
    "llm-pipeline-tp": (0.4, 0.75),
    "recsys-embeddings": (0.15, 0.35),
    "vision-jpeg": (0.25, 0.5),
    "video-decode": (0.25, 0.5),
    "speech-asr": (0.2, 0.45),
    "diffusion": (0.35, 0.65),
}


def shares(d: Design) -> dict[str, float]:
    """Each stage's share of the step's wall time."""
    st = d.stages
    step = st.step
    return {
        "compute": st.compute / step,
        "hbm": st.hbm / step,
        "comm": st.comm / step,
        "comm_exposed": st.comm_exposed / step,
        "h2d": st.h2d / step,
        "read": min(1.0, st.read / step),
        "decode": min(1.0, st.decode / step),
        "swap": st.swap / step,
        "kernel": min(1.0, st.kernel_time / step),
    }


def _link_rates(d: Design, sh: dict[str, float], rng: np.random.Generator) -> dict[str, float]:
    """Bytes per second per GPU on PCIe (each way) and NVLink (each way), averaged over the step."""
    eff = float(rng.uniform(0.7, 0.88))  # achieved share of a link's rate (headers, protocol)
    pcie = d.board.pcie_bps * eff
    rx = sh["h2d"] * pcie + float(rng.uniform(0.05, 0.4)) * 1e9 * min(1.0, sh["kernel"] + 0.1)
    tx = rx * float(rng.uniform(0.02, 0.1))
    if d.stages.h2d > d.stages.compute * 0.3:  # offloaded optimizer: gradients go back to the host
        tx = rx * float(rng.uniform(0.4, 0.9))
    nvlink = 0.0
    if d.comm_link == "pcie":
        rx, tx = rx + sh["comm"] * pcie, tx + sh["comm"] * pcie
    elif d.comm_link == "nvlink":
        nvlink = sh["comm"] * d.board.nvlink_bps * eff
    elif d.comm_link == "network":
        per_gpu = sh["comm"] * d.fabric.node_bps * eff / d.gpus
        if d.fabric.gpudirect:  # the NIC reads and writes GPU memory across PCIe, symmetric
            rx, tx = rx + per_gpu, tx + per_gpu
        if d.gpus > 1 and d.board.nvlink_bps > 0:  # hierarchical collectives: the intra-node part
            nvlink = sh["comm"] * d.board.nvlink_bps * eff * float(rng.uniform(0.05, 0.25))
    return {"pcie_rx": rx, "pcie_tx": tx, "nvlink": nvlink}


def gpu_truth(d: Design, rng: np.random.Generator, activity: FloatArray, noise: FloatArray) -> dict[str, FloatArray]:
    """Per-GPU gauges on the job's grid.

    Args:
        d: the job.
        rng: the job's generator.
        activity: shape (pods, grid): 1 while stepping, 0 in pauses.
        noise: shape (pods, grid): multiplicative step-rate noise around 1.

    Returns:
        name -> shape (pods, gpus, grid) arrays.
    """
    sh = shares(d)
    pods, grid = activity.shape
    shape = (pods, d.gpus, grid)
    a = np.broadcast_to((activity * noise)[:, None, :], shape)
    jitter = rng.normal(1.0, 0.03, shape)
    kernel = np.clip(sh["kernel"] * a * jitter, 0.0, 1.0)
    sm = sh["compute"] * rng.uniform(0.8, 0.97) + sh["hbm"] * rng.uniform(0.65, 0.9)
    # NCCL kernels hold a few SMs (their channels); comm hidden under compute adds no SM time
    sm += sh["comm_exposed"] * rng.uniform(0.08, 0.25)
    lo, hi = _TENSOR[d.workload]
    tensor = np.clip(sh["compute"] * rng.uniform(lo, hi) * a * jitter, 0.0, 1.0)
    dram = sh["compute"] * rng.uniform(0.12, 0.4) + sh["hbm"] * rng.uniform(0.72, 0.86) + sh["comm"] * 0.1
    dram_t = np.clip(dram * a * rng.normal(1.0, 0.03, shape), 0.0, 0.9)
    out = {
        "gpu_util": kernel,
        "gr_engine_active": kernel * rng.uniform(0.93, 0.99),
        "sm_active": np.clip(sm * a * jitter, 0.0, 1.0),
        "tensor_active": tensor,
        "dram_active": dram_t,
        "mem_copy_util": np.clip(dram_t * rng.uniform(0.9, 1.25) + kernel * rng.uniform(0.05, 0.25), 0.0, 1.0),
        "fp32_active": np.clip((sh["compute"] * rng.uniform(0.02, 0.1) + sh["hbm"] * 0.15) * a, 0.0, 1.0),
        "fp16_active": np.clip((sh["compute"] * rng.uniform(0.01, 0.06) + sh["hbm"] * 0.1) * a, 0.0, 1.0),
    }
    out["sm_occupancy"] = out["sm_active"] * rng.uniform(0.2, 0.55)
    links = _link_rates(d, sh, rng)
    for name, key in (("pcie_rx_bps", "pcie_rx"), ("pcie_tx_bps", "pcie_tx")):
        out[name] = links[key] * a * rng.normal(1.0, 0.05, shape).clip(0.5)
    out["nvlink_tx_bps"] = links["nvlink"] * a * rng.normal(1.0, 0.04, shape).clip(0.5)
    out["nvlink_rx_bps"] = out["nvlink_tx_bps"] * rng.normal(1.0, 0.02, shape)
    out["nvlink_total_bps"] = out["nvlink_tx_bps"] + out["nvlink_rx_bps"]
    out.update(_power_and_clocks(d, rng, out))
    return out


def _power_and_clocks(d: Design, rng: np.random.Generator, g: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """Board power, the enforced limit, the SM clock and whether the power cap slowed it."""
    shape = g["gpu_util"].shape
    b = d.board
    act = (
        0.3 * g["gpu_util"]
        + 0.45 * np.minimum(1.0, g["tensor_active"] / 0.6)
        + 0.25 * np.minimum(1.0, g["dram_active"] / 0.8)
    )
    demand = b.idle_w + (b.tdp_w - b.idle_w) * act * rng.uniform(0.9, 1.15, shape[:2])[..., None]
    limit = np.full(shape, b.tdp_w * d.power_cap)
    capped = demand > limit
    power = np.where(capped, limit * rng.uniform(0.96, 1.0, shape), demand)
    lottery = rng.uniform(0.95, 1.0, shape[:2])[..., None]  # boards of one model clock differently
    busy_clock = np.where(capped, (limit / np.maximum(demand, 1.0)) ** 0.6, 1.0)
    idle_drop = 0.55 + 0.45 * np.minimum(1.0, g["gpu_util"] * 4.0)
    clock = b.boost_mhz * lottery * busy_clock * idle_drop * rng.normal(1.0, 0.012, shape)
    fb = np.clip(rng.uniform(0.55, 0.97, shape[:2])[..., None] + rng.normal(0.0, 0.004, shape), 0.05, 0.995)
    return {
        "power_w": power,
        "power_limit_w": limit,
        "sm_clock_mhz": np.minimum(clock, b.boost_mhz),
        "clock_slowdown": capped.astype(np.float64),
        "fb_used_frac": fb,
    }
