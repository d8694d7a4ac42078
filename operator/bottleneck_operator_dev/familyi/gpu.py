"""What dcgm-exporter shows of a family-I job: each GPU field's level from the step model.

Fractions of the step (``stages``) become the profiling fields as NVIDIA defines them: GPU_UTIL is
the share of time any kernel runs (collectives and tiny kernels included), SM activity counts warps
waiting on memory as active, tensor activity 1.0 is a tensor instruction every other cycle, DRAM
activity tops out near 0.8 in practice (DCGM profiling documentation). Power follows activity up to
the enforced limit; a board held at its limit lowers its clock and sets the power-cap bit of its
clock-event reasons (NVML ``nvmlClocksEventReasons``). Values are the mean over the pod's GPUs, so
per-GPU noise shrinks with their number; the framebuffer is the maximum, and a nearly full one is the
caching allocator's doing, never a stall.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyi.plan import Plan
from bottleneck_operator_dev.familyi.scrape import BoolArray, FloatArray
from bottleneck_operator_dev.familyi.series import Levels
from bottleneck_operator_dev.familyi.stages import Stages
from bottleneck_operator_dev.familyi.workloads import Archetype

GB = 1e9


def _u(rng: np.random.Generator, lo: float, hi: float, n: int) -> FloatArray:
    return rng.uniform(lo, hi, size=n)


def gpu_levels(
    rng: np.random.Generator, plan: Plan, stages: Stages, arch: Archetype, pace: FloatArray, *, straggler: bool = False
) -> Levels:
    """Each dcgm signal's level per pod.

    Args:
        rng: the job's generator.
        plan, stages, arch: the job.
        pace: per pod, the share of the step its own GPUs are busy relative to the pacing pod (<= 1:
            faster pods wait for the slowest at each collective).
        straggler: the pacing pod (pace 1) runs its boards slower than its peers (heat, a
            hardware slowdown), with its clock-event reasons saying so.
    """
    n, g, _board = plan.pods, plan.gpus, plan.board
    t = stages.step()
    k_math, k_hbm = stages.math / t * pace, stages.hbm / t * pace
    k_comm, k_launch = stages.exposed_comm() / t, stages.launch / t * pace
    hidden = max(0.0, stages.intra + stages.inter - stages.exposed_comm()) / t
    util = np.clip(k_math + k_hbm + k_comm + 0.5 * k_launch + 0.02, 0.0, 1.0)
    sm = k_math * _u(rng, 0.85, 0.97, n) + k_hbm * _u(rng, 0.75, 0.95, n) + (k_comm + hidden) * 0.15 + 0.1 * k_launch
    tensor = k_math * rng.uniform(*arch.tensor_eff) + 0.01 * k_hbm
    dram = k_math * _u(rng, 0.12, 0.35, n) + k_hbm * _u(rng, 0.78, 0.92, n) + 0.1 * k_comm
    noise = 1.0 / np.sqrt(g)
    lv = Levels(n)
    add = lv.add
    add("gpu_util", util, 0.02, 0.08 * noise, hi=1.0)
    add("gr_engine_active", util * _u(rng, 0.93, 1.0, n), 0.01, 0.06 * noise, hi=1.0)
    add("sm_active", np.clip(sm, 0.0, 1.0), 0.005, 0.08 * noise, hi=1.0)
    occ = k_math * _u(rng, 0.15, 0.45, n) + k_hbm * _u(rng, 0.45, 0.85, n) + 0.05 * (k_comm + k_launch)
    add("sm_occupancy", np.clip(occ, 0.0, 1.0), 0.002, 0.08 * noise, hi=1.0)
    add("tensor_active", np.clip(tensor, 0.0, 1.0), 0.0, 0.1 * noise, hi=1.0)
    add("dram_active", np.clip(dram, 0.0, 0.95), 0.005, 0.06 * noise, hi=1.0)
    add("mem_copy_util", np.clip(dram * _u(rng, 0.95, 1.3, n), 0.0, 1.0), 0.01, 0.08 * noise, hi=1.0)
    pipes = (k_math + k_hbm) * pace
    add("fp32_active", pipes * _u(rng, 0.02, 0.15, n), 0.0, 0.1 * noise, hi=1.0)
    add("fp16_active", pipes * _u(rng, 0.01, 0.12, n), 0.0, 0.1 * noise, hi=1.0)
    _links(rng, plan, stages, lv)
    slow = (pace >= 1.0) & straggler
    _power(rng, plan, util, sm, tensor, dram, lv, slow)
    fb = np.clip(rng.uniform(*arch.fb_used) + rng.normal(0.0, 0.01, n), 0.05, 0.995)
    add("fb_used_frac", fb, fb, 0.002, hi=1.0)
    xid = 0.0 if rng.random() < 0.95 else float(rng.choice([13.0, 31.0, 43.0]))
    add("xid_code", np.full(n, xid), xid, 0.0)
    return lv


def _links(rng: np.random.Generator, plan: Plan, stages: Stages, lv: Levels) -> None:
    """PCIe and NVLink bytes per GPU: H2D copies, collectives inside the node, GPUDirect RDMA between nodes."""
    n, board, t = plan.pods, plan.board, stages.step()
    eff = rng.uniform(0.6, 0.85)
    h2d = stages.h2d * board.pcie_bps * eff / t
    intra_bps = stages.intra / t * (board.nvlink_bps if board.nvlink_bps else board.pcie_bps) * rng.uniform(0.7, 0.9)
    inter = stages.inter / t * plan.fabric.bps * rng.uniform(0.7, 0.9) / plan.gpus
    pcie_intra = 0.0 if board.nvlink_bps else intra_bps
    rdma = inter if plan.fabric.gpudirect and plan.pods > 1 else 0.0
    rx = np.full(n, h2d + pcie_intra + rdma) * rng.uniform(0.95, 1.05, n)
    tx = np.full(n, 0.03 * h2d + pcie_intra + rdma) * rng.uniform(0.95, 1.05, n)
    ckpt = rng.uniform(0.5, 3.0) * GB  # the checkpoint's device-to-host copy
    f = lv.add
    f("pcie_rx_bps", rx, 0.01 * GB, 0.1, hi=board.pcie_bps)
    f("pcie_tx_bps", tx, ckpt, 0.1, hi=board.pcie_bps)
    nv = np.full(n, intra_bps if board.nvlink_bps else 0.0)
    f("nvlink_tx_bps", nv, 0.0, 0.08, hi=max(board.nvlink_bps, 1.0))
    f("nvlink_rx_bps", nv, 0.0, 0.08, hi=max(board.nvlink_bps, 1.0))
    f("nvlink_total_bps", 2.0 * nv, 0.0, 0.08, hi=max(2.0 * board.nvlink_bps, 1.0))


def _power(
    rng: np.random.Generator,
    plan: Plan,
    util: FloatArray,
    sm: FloatArray,
    tensor: FloatArray,
    dram: FloatArray,
    lv: Levels,
    slow: BoolArray,
) -> None:
    """Power, clocks and the power-cap flag: a board at its enforced limit runs slower clocks."""
    n, board, cap = plan.pods, plan.board, plan.power_cap_w
    load = np.clip(0.15 * util + 0.3 * sm + 0.35 * tensor / 0.7 + 0.2 * dram / 0.8, 0.0, 1.15)
    demand = board.idle_w + (board.tdp_w - board.idle_w) * load
    capped = demand > cap
    power = np.where(capped, cap * rng.uniform(0.95, 0.995, n), demand)
    spread = rng.uniform(0.97, 1.0, n) * np.where(slow, rng.uniform(0.85, 0.93, n), 1.0)  # boards differ
    clock = board.boost_mhz * spread * np.where(capped, (cap / demand) ** 0.6, 1.0)
    dip_p = float(np.clip(0.5 * (1.0 - util.mean()) - 0.1, 0.0, 0.5))
    f = lv.add
    f("power_w", np.minimum(power, cap), board.idle_w * 1.1, 0.04, lo=board.idle_w * 0.8, hi=cap)
    f("power_limit_w", np.full(n, cap), cap, 0.0)
    f(
        "sm_clock_mhz",
        clock,
        board.boost_mhz * spread,
        0.02,
        lo=board.idle_mhz,
        hi=board.boost_mhz,
        dip_p=dip_p,
        dip=np.full(n, board.idle_mhz),
    )
    flag = np.where(capped | slow, rng.uniform(0.75, 1.0, n), rng.uniform(0.0, 0.04, n))
    f("clock_slowdown_frac", flag, 0.0, 0.0, hi=1.0, trials=plan.gpus)
