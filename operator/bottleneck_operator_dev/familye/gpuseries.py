"""dcgm-exporter's view of the job on the fine grid: one row per pod, GPU fields combined per pod.

DEV fields are NVML snapshots (``GPU_UTIL`` is the share of a 1/6-1 s sample period with any kernel
running, so a job with short gaps reads ~100 % while long gaps make it jump between samples);
PROF fields are averages over DCGM's sample period. ``FB_USED`` stays high in healthy jobs (the
caching allocator keeps freed blocks) and is context, not throughput. Power stays under the
enforced limit; when a compute-heavy phase would exceed it, clocks fall and the power-cap reason
bit (0x4) is set; a poorly cooled GPU sets the thermal bit (0x20) and runs slower.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familye.phases import Timeline, wander
from bottleneck_operator_dev.familye.workloads import Plan

FloatArray = npt.NDArray[np.float64]

# (signal, level key in activity.gpu_levels, value during checkpoint pauses, during start-up)
_PROF = (
    ("gr_engine_active", "gr_engine_active", 0.04, 0.05),
    ("sm_active", "sm_active", 0.02, 0.03),
    ("sm_occupancy", "sm_occupancy", 0.01, 0.01),
    ("tensor_active", "tensor_active", 0.0, 0.0),
    ("dram_active", "dram_active", 0.03, 0.02),
    ("fp32_active", "fp32_active", 0.005, 0.01),
    ("fp16_active", "fp16_active", 0.0, 0.0),
)


def _phased(level: FloatArray, tl: Timeline, act: FloatArray, ckpt: float, init: float) -> FloatArray:
    out: FloatArray = level[:, None] * act * tl.train + ckpt * tl.ckpt + init * tl.init
    return out


def _util_snapshot(
    rng: np.random.Generator, plan: Plan, g: dict[str, FloatArray], tl: Timeline, busy: FloatArray
) -> FloatArray:
    """Mean over the pod's GPUs of NVML's GPU_UTIL snapshot (a share), per pod and bin."""
    p_len = plan.env.board.util_period
    micro = g["step"] / plan.step.k
    seen = np.clip(1.0 - np.maximum(0.0, g["gap"] - p_len) / micro, 0.0, 1.0)
    seen = np.maximum(seen, g["busy"])  # a kernel inside the period is enough
    w = np.clip(p_len / micro, 0.0, 1.0)[:, None, None]
    shape = (plan.env.pods, plan.env.gpus, tl.times.size)
    ratio = np.clip(busy / np.maximum(g["busy"][:, None], 1e-6), 0.0, 1.5)[:, None, :]
    q = np.clip(seen[:, None, None] * ratio, 0.0, 1.0)
    hit = rng.random(shape) < q
    part = np.where(hit, rng.uniform(0.85, 1.0, shape), rng.uniform(0.0, 0.15, shape))
    snap = w * q + (1 - w) * part
    idle = tl.train[None, None, :] < 0.5
    snap = np.where(idle, np.clip(busy[:, None, :] * 1.2, 0, 1), snap)
    out: FloatArray = np.clip(snap.mean(axis=1), 0.0, 1.0)
    return out


def dcgm_gauges(
    rng: np.random.Generator, plan: Plan, g: dict[str, FloatArray], pw: dict[str, FloatArray], tl: Timeline
) -> dict[str, FloatArray]:
    """The dcgm-exporter signals of each pod on the fine grid, in the contract's units."""
    env, b, n = plan.env, plan.env.board, tl.times.size
    act = wander(rng, (env.pods,), n, plan.noise * 0.5, rng.uniform(6, 40))
    out = {name: np.clip(_phased(g[key], tl, act, c, i), 0.0, 1.0) for name, key, c, i in _PROF}
    busy = out["gr_engine_active"]
    out["gpu_util"] = _util_snapshot(rng, plan, g, tl, busy)
    ratio = np.clip(busy / np.maximum(g["busy"][:, None], 1e-6), 0.0, 1.5)
    out["mem_copy_util"] = np.clip(g["mem_copy_util"][:, None] * ratio * rng.normal(1, 0.05, (env.pods, n)), 0, 1)
    state = plan.step.grad_bytes / 2 * rng.uniform(8, 16) / max(env.gpus, 1)  # weights + optimizer state
    burst_tx = min(state / max(plan.ckpt_s, 1.0), b.pcie_bps * 0.5) if plan.ckpt_s > 0 else 0.0
    load_rx = min(state / max(plan.init_s, 30.0), b.pcie_bps * 0.5)
    out["pcie_rx_bps"] = _phased(g["pcie_rx_bps"], tl, act, 2e6, load_rx)
    out["pcie_tx_bps"] = _phased(g["pcie_tx_bps"], tl, act, burst_tx, 1e6)
    if b.nvlink_bps > 0:
        nv = _phased(g["nvlink_bps"], tl, act, 0.0, 0.0)
        out["nvlink_tx_bps"] = nv
        out["nvlink_rx_bps"] = nv * rng.normal(1.0, 0.01, nv.shape)
        out["nvlink_total_bps"] = out["nvlink_tx_bps"] + out["nvlink_rx_bps"]
    out.update(_power_clock(rng, plan, g, pw, tl, ratio))
    fb = rng.uniform(0.88, 0.99) if rng.random() < 0.8 else rng.uniform(0.3, 0.8)
    out["fb_used_frac"] = np.clip(fb * (1 - tl.down) * (1 - 0.7 * tl.init) + 0.005, 0, 1) * np.ones((env.pods, 1))
    out["xid_code"] = np.zeros((env.pods, n))
    return out


def _power_clock(
    rng: np.random.Generator,
    plan: Plan,
    g: dict[str, FloatArray],
    pw: dict[str, FloatArray],
    tl: Timeline,
    ratio: FloatArray,
) -> dict[str, FloatArray]:
    """Power, SM clock, enforced limit and the share of GPUs with a slowdown reason, per pod and bin."""
    env, b, n = plan.env, plan.env.board, tl.times.size
    r = ratio[:, None, :]
    power = b.idle_w + (pw["power"][:, :, None] - b.idle_w) * r
    power = np.minimum(power * rng.normal(1.0, 0.015, power.shape), env.power_limit[:, :, None] * 0.995)
    idle_share = 1.0 - tl.train - 0.5 * tl.init
    jitter = rng.normal(1.0, rng.uniform(0.003, 0.015), (env.pods, env.gpus, n))
    clock = (pw["clock"][:, :, None] * (1 - idle_share) + b.idle_mhz * idle_share) * jitter
    clock = np.minimum(clock, b.boost_mhz)
    slow = rng.random((env.pods, env.gpus, n)) < pw["slow"][:, :, None] * np.clip(r, 0, 1)
    return {
        "power_w": power.mean(axis=1),
        "sm_clock_mhz": clock.mean(axis=1),
        "power_limit_w": np.repeat(env.power_limit.mean(axis=1)[:, None], n, axis=1),
        "clock_slowdown_frac": slow.mean(axis=1),
    }
