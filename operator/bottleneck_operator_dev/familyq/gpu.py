"""What dcgm-exporter shows of one pod's GPUs, from the step's stages.

Kernel classes and what the profiling fields make of them (NVIDIA DCGM profiling metrics
documentation; dcgm-exporter's counters files):

- math kernels (GEMMs, convolutions): SM activity ~0.9, tensor pipe at the workload's intensity,
  DRAM activity modest;
- bandwidth-bound kernels (embedding lookups, optimizer updates, norms): SM activity still high,
  because warps waiting on memory count as active, tensor pipe near idle, DRAM activity near its
  practical peak of ~0.8;
- NCCL kernels: the GPU counts as busy for ``GPU_UTIL`` the whole time they run, even while they
  only wait on the network, but only the few SMs of NCCL's channels are active.

Power follows the kernels' demand with a lag (the board averages over about a second and dcgm
collects every few seconds), is held under the enforced limit by lowering the SM clock, and each
GPU's clock differs a little from its neighbours' and drops on thermal events.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyq.design import Plan
from bottleneck_operator_dev.familyq.stages import COMM, H2D, HBM, HOSTMEM, MATH
from bottleneck_operator_dev.familyq.timeline import CHECKPOINT, WARMUP, Timeline

FloatArray = npt.NDArray[np.float64]


def busy_shares(plan: Plan, tl: Timeline) -> dict[str, FloatArray]:
    """Share of wall time each kind of GPU work runs, per sample (0 in phases without steps)."""
    on = tl.stepping > 0
    t, step = tl.stages, np.maximum(tl.step, 1e-9)
    share = {
        "math": np.where(on, t[:, MATH] / step, 0.0),
        "hbm": np.where(on, t[:, HBM] / step, 0.0),
        "comm": np.where(on, t[:, COMM] / step, 0.0),
        "h2d": np.where(on, t[:, H2D] / step, 0.0),
        "stall": np.where(on, t[:, HOSTMEM] / step, 0.0),
    }
    # The links run for the exposed collectives and, hidden under compute, for the rest.
    share["link"] = (
        np.minimum(share["comm"] / (1.0 - plan.hidden), 0.95) if plan.gpus * plan.pods > 1 else share["comm"]
    )
    share["copy"] = np.minimum(share["h2d"] * 1.3, 0.95)
    warm = tl.phase == WARMUP
    share["math"] = np.where(warm, 0.03, share["math"])
    share["copy"] = np.where(warm | (tl.phase == CHECKPOINT), 0.15, share["copy"])
    return share


def gpu_signals(plan: Plan, tl: Timeline, rng: np.random.Generator, dt: float) -> dict[str, FloatArray]:
    """The pod's dcgm-exporter signals (mean over its GPUs unless the contract says otherwise)."""
    s = busy_shares(plan, tl)
    n = len(tl.phase)
    jit = rng.lognormal(0.0, 0.04, n)
    kernels = np.clip((s["math"] + s["hbm"] + s["comm"]) * jit + 0.01, 0.0, 1.0)
    nccl_sm = float(rng.uniform(0.06, 0.25))
    sm = np.clip((0.9 * s["math"] + 0.8 * s["hbm"] + nccl_sm * s["comm"]) * jit, 0.0, 1.0)
    dram = np.clip(
        float(rng.uniform(0.12, 0.35)) * s["math"] + float(rng.uniform(0.7, 0.86)) * s["hbm"] + 0.08 * s["link"], 0, 1
    )
    out: dict[str, FloatArray] = {
        "gpu_util": np.clip(np.round(kernels * 100.0) / 100.0, 0.0, 1.0),
        "gr_engine_active": kernels * float(rng.uniform(0.93, 0.99)),
        "sm_active": sm,
        "sm_occupancy": np.clip(0.35 * s["math"] + 0.62 * s["hbm"] + 0.04 * s["comm"], 0.0, 1.0)
        * jit.clip(0, 1.2)
        / 1.2,
        "tensor_active": np.clip(plan.tensor * s["math"] * jit, 0.0, 1.0),
        "dram_active": dram,
        "fp16_active": np.clip(0.06 * s["math"] + 0.2 * s["hbm"], 0.0, 1.0),
        "fp32_active": np.clip(0.1 * s["math"] + 0.15 * s["hbm"] + 0.02 * s["comm"], 0.0, 1.0),
        "mem_copy_util": np.clip(np.round(dram * rng.uniform(0.85, 1.15, n) * 100.0) / 100.0, 0.0, 1.0),
        "fb_used_frac": np.clip(np.full(n, rng.uniform(0.55, 0.98)) + rng.normal(0, 0.003, n), 0.0, 1.0),
    }
    out.update(_links(plan, s, rng))
    out.update(_power_clocks(plan, s, tl, rng, dt))
    return out


def _links(plan: Plan, s: dict[str, FloatArray], rng: np.random.Generator) -> dict[str, FloatArray]:
    """PCIe and NVLink bytes per GPU: host copies, collectives inside the node and, with GPUDirect RDMA, across it."""
    b = plan.board
    eff = float(rng.uniform(0.7, 0.85))  # achievable share of a link's nominal rate (protocol overheads)
    h2d = b.pcie_bps * eff * s["copy"]
    rx, tx = h2d, 0.04 * h2d
    nv = np.zeros_like(h2d)
    inside = s["link"] * (float(rng.uniform(0.2, 0.5)) if plan.pods > 1 else 1.0)
    if plan.gpus > 1 and b.nvlink_bps > 0:
        nv = b.nvlink_bps * eff * inside
    elif plan.gpus > 1:
        rx, tx = rx + b.pcie_bps * eff * inside, tx + b.pcie_bps * eff * inside
    if plan.fabric is not None:
        across = plan.fabric.node_bps * eff * s["link"] / plan.gpus
        if plan.fabric.rdma:
            rx, tx = rx + across, tx + across
    return {
        "pcie_rx_bps": rx,
        "pcie_tx_bps": tx,
        "nvlink_rx_bps": nv,
        "nvlink_tx_bps": nv * float(rng.uniform(0.97, 1.03)),
        "nvlink_total_bps": 2.0 * nv,
    }


def _power_clocks(
    plan: Plan, s: dict[str, FloatArray], tl: Timeline, rng: np.random.Generator, dt: float
) -> dict[str, FloatArray]:
    """Power under the enforced limit, per-GPU clocks with spread and thermal drops, and the slowdown share."""
    b, n, g = plan.board, len(tl.phase), plan.gpus
    load = 0.95 * s["math"] * (0.55 + 0.45 * plan.tensor / 0.75) + 0.6 * s["hbm"] + 0.3 * s["comm"] + 0.1 * s["copy"]
    demand = b.idle_w + (b.tdp_w - b.idle_w) * np.clip(load, 0.0, 1.0)
    demand = demand[None, :] * rng.uniform(0.95, 1.05, (g, 1))
    cap = plan.power_cap
    capped = demand > cap * 0.98
    clock = b.boost_mhz * rng.uniform(0.96, 1.0, (g, 1)) * rng.normal(1.0, 0.012, (g, n))
    clock = np.where(capped, clock * (cap / demand) ** 0.45, clock)
    thermal = np.zeros((g, n), dtype=bool)
    for _ in range(int(rng.poisson(0.4 * g))):
        at = int(rng.integers(n))
        thermal[int(rng.integers(g)), at : at + int(rng.integers(1, 4))] = True
    clock = np.where(thermal, clock * rng.uniform(0.7, 0.85), clock)
    idle = (tl.phase == WARMUP) | (tl.phase == CHECKPOINT)
    clock = np.where(idle[None, :], clock * rng.uniform(0.35, 0.9), clock)
    clock = np.clip(clock, 210.0, b.boost_mhz)
    power = np.minimum(demand, cap)
    lagged = power @ _lag(n, 1.0 - float(np.exp(-dt / 20.0))).T
    lagged = np.minimum(lagged * rng.normal(1.0, 0.015, (g, n)), cap)
    return {
        "power_w": lagged.mean(axis=0),
        "power_limit_w": np.full(n, cap),
        "sm_clock_mhz": clock.mean(axis=0),
        "clock_slowdown_frac": (capped | thermal).mean(axis=0),
    }


def _lag(n: int, alpha: float) -> FloatArray:
    """The matrix of an exponential moving average over ``n`` samples, started at the first value."""
    i = np.arange(n)
    gap = i[:, None] - i[None, :]
    w = np.where(gap >= 0, alpha * (1.0 - alpha) ** np.maximum(gap, 0), 0.0)
    w[:, 0] = (1.0 - alpha) ** i
    return w
