"""What dcgm-exporter would read from the pod's GPUs, as true per-instant values (pod means).

Field meanings follow NVIDIA's DCGM profiling documentation: GPU_UTIL is the share of time any
kernel ran (communication kernels included), SM activity counts warps waiting on memory as active,
tensor activity 1.0 is a tensor instruction every other cycle, DRAM activity's practical peak is
about 0.8. Power follows activity up to the enforced limit (a cap below TDP on many clusters), and the
SM clock falls when the board hits it.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyp.timeline import Timeline
from bottleneck_operator_dev.familyp.workloads import Plan

FloatArray = np.ndarray


def _activity(rng: np.random.Generator, tl: Timeline, amp: bool) -> dict[str, FloatArray]:
    kernels = tl.tensor + tl.hbm
    ta = rng.uniform(0.45, 0.85) if amp else rng.uniform(0.15, 0.35)  # TF32/FP32 jobs use the pipes less
    sa_t, sa_h = rng.uniform(0.8, 0.97), rng.uniform(0.6, 0.92)
    busy = np.clip(kernels + tl.comm + rng.uniform(0.0, 0.03), 0.0, 1.0) * np.minimum(1.0, tl.active + 0.02)
    sm = np.clip(tl.tensor * sa_t + tl.hbm * sa_h + tl.comm * 0.08, 0, 1)
    return {
        "gpu_util": busy,
        "gr_engine_active": np.clip(busy * rng.uniform(0.95, 1.0), 0, 1),
        "sm_active": sm,
        "sm_occupancy": np.clip(
            tl.tensor * sa_t * rng.uniform(0.2, 0.5) + tl.hbm * sa_h * rng.uniform(0.45, 0.8), 0, 1
        ),
        "tensor_active": np.clip(tl.tensor * ta + tl.hbm * 0.04, 0, 1),
        "fp16_active": np.clip((tl.tensor * 0.04 + tl.hbm * 0.06) if amp else tl.hbm * 0.01, 0, 1),
        "fp32_active": np.clip((tl.hbm * 0.08 + tl.tensor * 0.02) if amp else (tl.tensor * 0.35 + tl.hbm * 0.12), 0, 1),
        "dram_active": np.clip(
            tl.tensor * rng.uniform(0.15, 0.35) + tl.hbm * rng.uniform(0.72, 0.88) + tl.comm * 0.08, 0, 1
        ),
    }


def _links(rng: np.random.Generator, plan: Plan, tl: Timeline) -> dict[str, FloatArray]:
    """PCIe and NVLink bytes per GPU, per direction (B/s)."""
    board, pool = plan.board, plan.pool
    eff = rng.uniform(0.7, 0.9)
    multi_node = plan.pods > 1 and plan.pods_per_node * plan.gpus < plan.pods * plan.gpus
    pcie_h2d = board.pcie_bps * (0.8 if plan.pinned else 0.35)
    rx = tl.h2d * pcie_h2d + tl.active * rng.uniform(2e7, 2e8)
    tx = tl.active * rng.uniform(5e6, 8e7)
    nvlink = np.zeros_like(rx)
    if multi_node:
        per_gpu = pool.fabric_bps / pool.gpus * eff
        net = tl.comm_total * per_gpu
        # GPUDirect RDMA lets the NIC read and write GPU memory over PCIe; NCCL's socket transport
        # stages through host memory, which crosses PCIe too: either way the bytes show on both directions.
        rx, tx = rx + net, tx + net
        if board.nvlink_bps > 0:
            nvlink = np.minimum(net * rng.uniform(1.0, 2.5), board.nvlink_bps * 0.9)
    elif plan.gpus > 1 and board.nvlink_bps > 0:
        nvlink = tl.comm_total * board.nvlink_bps * eff
    elif plan.gpus > 1:  # PCIe-only box: peer traffic crosses the host bridge
        peer = tl.comm_total * board.pcie_bps * eff * 0.8
        rx, tx = rx + peer, tx + peer
    if plan.workload == "llm-pretrain-3d" and board.nvlink_bps > 0:
        # Tensor parallelism exchanges activations inside the node while compute runs.
        nvlink = np.minimum(nvlink + tl.tensor * board.nvlink_bps * rng.uniform(0.1, 0.35), board.nvlink_bps * 0.95)
    return {
        "pcie_rx_bps": np.minimum(rx, board.pcie_bps),
        "pcie_tx_bps": np.minimum(tx, board.pcie_bps),
        "nvlink_rx_bps": nvlink,
        "nvlink_tx_bps": nvlink * rng.uniform(0.97, 1.03),
        "nvlink_total_bps": nvlink * 2.0,
    }


def _power(rng: np.random.Generator, plan: Plan, sig: dict[str, FloatArray]) -> dict[str, FloatArray]:
    board = plan.board
    capped = rng.random() < 0.4
    cap = board.tdp_w * (rng.uniform(0.6, 0.9) if capped else 1.0)
    load = 0.15 * sig["gpu_util"] + 0.5 * sig["tensor_active"] + 0.3 * sig["dram_active"] + 0.25 * sig["sm_active"]
    demand = board.idle_w + (board.tdp_w - board.idle_w) * np.clip(load, 0, 1.1)
    power = np.minimum(demand, cap * rng.uniform(0.96, 0.995)) * np.exp(rng.normal(0, 0.02, demand.shape))
    # Boost varies between boards of one model and from sample to sample; a capped board clocks down.
    spread = rng.uniform(0.9, 1.0, (demand.shape[0], 1)) * np.exp(rng.normal(0, 0.015, demand.shape))
    clock = board.max_clock_mhz * spread * np.minimum(1.0, (cap / np.maximum(demand, 1.0)) ** 0.6)
    clock = clock * (0.7 + 0.3 * np.minimum(1.0, sig["gpu_util"] * 1.5))
    slowdown = (demand > cap).astype(float)
    if plan.pool.name.startswith(("pcie-l", "cloud")) and rng.random() < 0.15:
        slowdown = np.maximum(slowdown, (sig["gpu_util"] > 0.5).astype(float))  # hot chassis: thermal slowdown
        clock = clock * 0.9
    return {
        "power_w": np.minimum(power, cap),
        "power_limit_w": np.full(demand.shape, cap),
        "sm_clock_mhz": np.round(np.minimum(clock, board.max_clock_mhz)),
        "clock_slowdown_frac": slowdown,
    }


def dcgm_truth(rng: np.random.Generator, plan: Plan, tl: Timeline) -> dict[str, FloatArray]:
    """The pod-mean DCGM signals, per pod and fine instant, before dcgm-exporter samples them."""
    amp = plan.workload not in ("gnn-sampling",) and rng.random() < 0.85
    sig = _activity(rng, tl, amp)
    sig.update(_links(rng, plan, tl))
    sig.update(_power(rng, plan, sig))
    if plan.partition == "timeslice":
        # Every pod sharing a time-sliced GPU reads the same, summed, activity.
        other = rng.uniform(0.1, 0.5)
        for name in ("gpu_util", "gr_engine_active", "sm_active", "tensor_active", "dram_active"):
            sig[name] = np.clip(sig[name] + other * rng.uniform(0.3, 1.0), 0, 1)
    pods, n = tl.active.shape
    sig["mem_copy_util"] = np.clip(sig["dram_active"] * rng.uniform(1.0, 1.3) + tl.h2d * 0.05, 0, 1)
    sig["fb_used_frac"] = np.clip(np.full((pods, n), rng.uniform(0.55, 0.98)) + rng.normal(0, 0.005, (pods, n)), 0, 1)
    xid = float(rng.choice([0.0, 13.0, 31.0, 43.0], p=[0.94, 0.02, 0.02, 0.02]))
    sig["xid_code"] = np.full((pods, n), xid)
    return sig
