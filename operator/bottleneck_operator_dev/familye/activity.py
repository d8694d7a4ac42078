"""What the hardware does, on average, while the job trains: the step account read as activity.

Each stage of :mod:`.stepmodel` occupies a device for a share of the step, and each device's
counters see only that: the SMs during kernels (few of them for NCCL's kernels, which spin while a
rank waits for a slower peer), DRAM mostly during bandwidth-bound kernels, links while bytes move,
cores while workers decode, D-state sleepers while they wait on block or NFS storage (an HTTP
reader sleeps in S state and leaves no iowait). Figures per state are drawn per job within ranges
read from NVIDIA's DCGM profiling documentation (SM activity >= 0.8 for dense kernels, DRAM activity
~0.8 as the practical maximum, tensor activity 1.0 = one tensor instruction every other cycle).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familye.stepmodel import pod_times
from bottleneck_operator_dev.familye.workloads import Plan

FloatArray = npt.NDArray[np.float64]
PCIE_OVERHEAD = 1.12  # DCGM's PCIe byte counts include packet headers


def gpu_levels(rng: np.random.Generator, plan: Plan) -> dict[str, FloatArray]:
    """Per pod (shape (P,)), the training-phase mean of each GPU activity, plus the stage shares."""
    s, env = plan.step, plan.env
    t = pod_times(s)
    own = np.maximum(t.gpu_side, t.input)
    step = float(own.max())
    peer_wait = step - own if env.pods * env.gpus > 1 else np.zeros_like(own)
    f_math, f_hbm = t.math / step, t.hbm / step
    f_nccl = (t.comm + t.tp + peer_wait) / step
    f_idle = np.clip(1.0 - f_math - f_hbm - f_nccl, 0.0, 1.0)
    nccl_sm = rng.uniform(8, 32) / env.board.sms
    sm = f_math * rng.uniform(0.85, 0.97) + f_hbm * rng.uniform(0.65, 0.92) + f_nccl * nccl_sm
    tensor_scale = plan.tensor if plan.amp else plan.tensor * rng.uniform(0.15, 0.35)
    overlapped_comm = s.t_comm / step
    link_dram = (s.nvlink_bytes + s.p2p_bytes + s.nic_bytes / env.gpus) * 2 / step / env.board.hbm_bps
    gdr = s.nic_bytes / env.gpus if env.fabric is not None and env.fabric.rdma else 0.0
    return {
        "busy": f_math + f_hbm + f_nccl,
        "f_math": f_math,
        "f_idle": f_idle,
        "gap": f_idle * step / s.k,
        "gr_engine_active": f_math + f_hbm + f_nccl,
        "sm_active": sm,
        "sm_occupancy": f_math * rng.uniform(0.12, 0.3) + f_hbm * rng.uniform(0.4, 0.8) + f_nccl * nccl_sm * 0.3,
        "tensor_active": f_math * tensor_scale + f_hbm * rng.uniform(0.0, 0.06),
        "dram_active": f_math * rng.uniform(0.12, 0.35) + f_hbm * rng.uniform(0.62, 0.85) + link_dram,
        "fp32_active": f_hbm * rng.uniform(0.04, 0.18) + (0.0 if plan.amp else f_math * rng.uniform(0.35, 0.7)),
        "fp16_active": f_hbm * rng.uniform(0.01, 0.08) if plan.amp else f_hbm * 0.0,
        "mem_copy_util": f_math * rng.uniform(0.25, 0.5) + f_hbm * rng.uniform(0.7, 0.95) + f_nccl * 0.08,
        "pcie_rx_bps": np.full_like(own, (s.h2d_bytes + s.p2p_bytes + gdr) / step * PCIE_OVERHEAD + 2e6),
        "pcie_tx_bps": np.full_like(own, (s.p2p_bytes + gdr) / step * PCIE_OVERHEAD + 1e6),
        "nvlink_bps": np.full_like(own, s.nvlink_bytes / step),
        "nic_bps": np.full_like(own, s.nic_bytes / step),
        "comm_share": np.minimum(1.0, overlapped_comm + t.tp / step),
        "step": np.full_like(own, step),
    }


def gpu_power(rng: np.random.Generator, plan: Plan, g: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """Per GPU (shape (P, G)): mean power, clock and the chance a sample finds a slowdown reason set."""
    env, b = plan.env, plan.env.board
    dyn = b.tdp_w - b.idle_w
    head = env.power_limit - b.idle_w
    capped = plan.math_draw_w > head
    p_math = np.minimum(plan.math_draw_w, head * rng.uniform(0.96, 0.995))
    f_math = g["f_math"][:, None]
    f_hbm = (g["busy"] - g["f_math"])[:, None]
    power = b.idle_w + f_math * p_math + f_hbm * dyn * rng.uniform(0.3, 0.55) + g["f_idle"][:, None] * dyn * 0.05
    power = np.minimum(power * rng.normal(1.0, 0.02, power.shape), env.power_limit * 0.995)
    # a sample finds the clock of whatever runs: compute at its capped clock, the rest at the base
    clock = b.boost_mhz * (f_math * plan.gpu_clock + (1 - f_math) * plan.gpu_base)
    slow = np.where(capped, f_math, 0.0)
    slow = np.where(env.hot, 1.0, slow)
    return {"power": power, "clock": clock, "slow": np.broadcast_to(slow, power.shape).copy()}


def host_levels(rng: np.random.Generator, plan: Plan) -> dict[str, FloatArray]:
    """Per pod: the job's CPU, worker states, pressure and I/O while it trains."""
    s, env, st = plan.step, plan.env, plan.env.storage
    t = pod_times(s)
    step = float(np.max(np.maximum(t.gpu_side, t.input)))
    rate = s.samples / step
    tau = s.workers / rate  # seconds between two samples of one worker
    share = np.minimum(1.0, s.cores / s.workers)
    run = s.cpu_cost / tau
    # run-queue wait grows steeply as the loader's demand nears the cores it can get (queueing);
    # at the bound every worker gets cores/workers of a core
    u_cpu = np.clip(rate * s.cpu_cost / s.cores, 0.0, 0.999)
    bound_wait = s.cpu_cost / share - s.cpu_cost
    cpu_wait = np.minimum(s.cpu_cost * u_cpu**4 / (1 - u_cpu), np.maximum(bound_wait, s.cpu_cost * 0.05)) / tau
    # storage: each sample's read is served at the pod's bandwidth; waits queue up as it nears saturation
    service = s.read_bytes / s.io_bps
    u_io = np.clip(rate * service, 0.0, 0.999)
    at_bound = t.input >= t.gpu_side * 0.999
    queue = np.where(
        at_bound & (u_io > 0.95), np.maximum(0.0, tau - s.latency - s.cpu_cost / share - s.stall), service / (1 - u_io)
    )
    io_wait = np.clip((s.latency + queue) / tau, 0.0, 1.0)
    stall = np.clip(s.stall / tau, 0.0, 1.0)
    read = rate * s.read_bytes
    cpu = _cpu(rng, plan, t.gpu_side / step, run, cpu_wait, stall, read, step)
    n_eff = min(s.workers, 3)
    iowaits = st.iowait
    levels = {
        **cpu,
        "psi_cpu": np.clip(
            1 - (1 - cpu_wait) ** n_eff + 0.6 * np.nan_to_num(cpu["throttled"]) * (cpu["rho"] > 0.9), 0, 0.99
        ),
        "psi_io_some": np.clip(1 - (1 - io_wait) ** n_eff, 0, 0.99)
        if iowaits
        else np.full_like(stall, rng.uniform(0, 0.01)),
        "psi_io_full": np.clip(io_wait ** min(s.workers, 3), 0, 0.95) if iowaits else np.zeros_like(stall),
        "psi_mem_some": np.clip(1 - (1 - stall) ** n_eff + s.main_stall / step, 0, 0.99),
        "psi_mem_full": np.clip(stall**2 * 0.8 + s.main_stall / step * 0.5, 0, 0.95),
        "procs_running": s.workers * np.minimum(1.0, run + cpu_wait)
        + env.gpus * np.minimum(1.0, t.gpu_side / step + 0.3),
        "procs_iowait": s.workers * ((io_wait if iowaits else 0.0) + stall),
        "procs_busy": s.workers * np.clip((run / share - 0.6) / 0.3, 0, 1) * (share >= 0.9)
        + env.gpus * (plan.main_cores >= 0.9),
        "read_bps": read,
        "rate": np.full_like(stall, rate),
        "step_s": np.full_like(stall, step),
        "stall": stall,
        "io_wait": io_wait,
    }
    return {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (env.pods,)).copy() for k, v in levels.items()}


def _cpu(
    rng: np.random.Generator,
    plan: Plan,
    gpu_busy: FloatArray,
    run: float,
    cpu_wait: FloatArray,
    stall: FloatArray,
    read: float,
    step: float,
) -> dict[str, FloatArray]:
    """The job's CPU use (capped by its limit), how close it runs to the limit, and CFS throttling."""
    s, env, st = plan.step, plan.env, plan.env.storage
    mains = env.gpus * plan.main_cores * (0.55 + 0.45 * gpu_busy)
    net_cpu = read / 1e9 * (1.0 if st.key == "object-http" else 0.3 if st.net else 0.0)
    reclaim = (
        s.workers * stall * rng.uniform(0.2, 0.5) + s.main_stall / step * env.gpus * 0.5
    )  # direct reclaim is CPU work
    demand = s.workers * (run + cpu_wait) + mains + net_cpu + reclaim
    limit = env.cpu_limit
    limited = np.isfinite(limit)
    room = env.node_cpus / np.bincount(env.node_of)[env.node_of] * 0.98  # a pod cannot use more than its node has
    rho = np.where(limited, demand / limit, 0.0)
    # at the limit nearly every period throttles; below it, bursty loaders still hit it now and then
    bursty = np.clip((rho - 0.55) / 0.45, 0, 1) ** 1.5 * rng.uniform(0.2, 0.8)
    throttled = np.where(rho >= 0.98, rng.uniform(0.75, 0.98), bursty)
    return {
        "cpu": np.minimum(np.where(limited, np.minimum(demand, limit), demand), room),
        "throttled": np.where(limited, throttled, np.nan),
        "rho": rho,
    }
