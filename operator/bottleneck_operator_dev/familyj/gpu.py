"""What dcgm-exporter shows of the step: activity ratios, clocks, power, framebuffer and link bytes.

Field meanings follow NVIDIA's DCGM documentation and NVML's: ``GPU_UTIL`` is the share of time
any kernel ran (NCCL kernels spinning on a late peer count as running); ``GR_ENGINE_ACTIVE`` the
share of time the graphics/compute engine was busy; ``SM_ACTIVE`` the share of SM cycles with a
warp resident (warps waiting on memory count); ``PIPE_TENSOR_ACTIVE`` the share of cycles the tensor
pipe issued; ``DRAM_ACTIVE`` the share of cycles the memory interface moved data (about 0.8 is the
practical peak); ``MEM_COPY_UTIL`` the share of time device memory was read or written; the PCIe
and NVLink fields bytes per second. Truth is per pod (the mean over its GPUs) except the framebuffer
(max over GPUs) and the clock-event share (share of GPUs), which are reduced here from per-GPU draws.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyj.plan import Plan, Rng
from bottleneck_operator_dev.familyj.stepmodel import Factors, Stages

FloatArray = npt.NDArray[np.float64]

_DRAM_PEAK = 0.8  # DCGM: DRAM activity of ~0.8 is the practical peak of bandwidth-bound kernels


def _mix(train: FloatArray, pause_value: float | FloatArray, pause: FloatArray) -> FloatArray:
    return np.asarray(train * (1.0 - pause) + pause_value * pause)


def activity(rng: Rng, plan: Plan, st: Stages, f: Factors, pause: FloatArray) -> dict[str, FloatArray]:
    """The activity ratios of each pod's GPUs per tick (before a time-slicing neighbour adds its own)."""
    t = st.step
    gemm, memk, small = st.gemm / t, st.memk / t, st.small / t
    peer_wait = (t - st.own) / t if plan.pods > 1 and plan.comm_s else np.zeros_like(t)
    nccl = np.minimum(1.0, st.comm_exposed / t + peer_wait)
    busy = np.minimum(1.0, gemm + memk + small + nccl)
    math_share = np.minimum(gemm, plan.gemm_flop_s * f.work / f.clock / t)
    tensor_eff = 0.03 if plan.fp32 else rng.uniform(0.5, 0.85)
    dram = np.minimum(0.95, _DRAM_PEAK * (plan.gemm_byte_s + plan.memk_byte_s) * f.work / t)
    out = {
        "gpu_util": busy,
        "gr_engine_active": busy * rng.uniform(0.95, 1.0),
        "sm_active": gemm * rng.uniform(0.85, 0.98) + memk * rng.uniform(0.6, 0.92) + small * 0.25 + nccl * 0.08,
        "sm_occupancy": gemm * rng.uniform(0.12, 0.4) + memk * rng.uniform(0.4, 0.85) + nccl * 0.03,
        "tensor_active": math_share * tensor_eff,
        "dram_active": dram,
        "fp32_active": math_share * (rng.uniform(0.55, 0.8) if plan.fp32 else 0.02) + memk * rng.uniform(0.03, 0.12),
        "fp16_active": memk * (0.0 if plan.fp32 else rng.uniform(0.05, 0.2)),
        "mem_copy_util": np.minimum(1.0, dram * rng.uniform(1.0, 1.25) + gemm * rng.uniform(0.05, 0.2)),
    }
    checkpoint_copy = rng.uniform(0.02, 0.1)  # the state dict is copied off the GPU, then written by the host
    out = {
        k: _mix(np.asarray(v), checkpoint_copy if k in ("gpu_util", "gr_engine_active") else 0.0, pause)
        for k, v in out.items()
    }
    if plan.timeslice:
        # time-slicing: every sharing pod sees the whole GPU, the neighbour's kernels included
        nb = plan.timeslice
        for key, share in (("gpu_util", 1.0), ("gr_engine_active", 1.0), ("sm_active", 0.7), ("tensor_active", 0.3)):
            out[key] = np.minimum(1.0, out[key] + nb * share * (1.0 - out[key]))
    if plan.mig is not None:
        del out["gpu_util"]  # not supported under MIG
    return out


def power_and_clocks(rng: Rng, plan: Plan, act: dict[str, FloatArray], f: Factors) -> dict[str, FloatArray]:
    """Board power, SM clock, the enforced limit and the share of GPUs whose power-cap bit is set."""
    b, g = plan.board, plan.gpus_per_pod
    busy = act.get("gpu_util", act["gr_engine_active"])
    # dynamic power follows what switches: tensor pipes most, then DRAM traffic and busy SMs
    dyn = 0.25 * busy + 0.55 * act["tensor_active"] / 0.6 + 0.3 * act["dram_active"] + 0.2 * act["sm_active"]
    if plan.fp32:
        dyn = dyn + 0.4 * act["fp32_active"]
    if plan.mig is not None:  # power is the whole board's: the other instances' tenants draw too
        dyn = dyn * plan.mig[1] + rng.uniform(0.1, 0.6) * (1.0 - plan.mig[1])
    per_gpu = np.clip(dyn[:, None, :] * (1.0 + 0.04 * rng.standard_normal((plan.pods, g, 1))), 0.0, 1.1)
    limit = b.tdp_w * plan.power_limit_frac
    demand = b.idle_w + (b.tdp_w - b.idle_w) * per_gpu
    capped = demand > limit
    power = np.minimum(demand, limit * rng.uniform(0.97, 1.0)) + rng.normal(0.0, 2.0, demand.shape)
    idle_drop = 1.0 - 0.25 * (1.0 - busy) * rng.uniform(0.0, 1.0, busy.shape)
    clock = b.boost_mhz * f.clock * idle_drop
    step_mhz = 15.0  # NVML reports clocks on a 15 MHz ladder
    # a clock well below what the power limit allows means a thermal or hardware slowdown reason
    slowed = f.clock < 0.85 * plan.cap_clock
    return {
        "power_w": np.asarray(power.mean(axis=1)),
        "sm_clock_mhz": np.asarray(np.round(clock / step_mhz) * step_mhz),
        "power_limit_w": np.full_like(busy, limit),
        "clock_slowdown_frac": np.maximum(np.asarray(capped.mean(axis=1), dtype=np.float64), slowed),
    }


def framebuffer(rng: Rng, plan: Plan, shape: tuple[int, int]) -> dict[str, FloatArray]:
    """Used and free framebuffer (MiB) of the pod's fullest GPU: caching allocators keep most reserved."""
    total = plan.board.memory_gib * 1024.0 * (plan.mig[2] if plan.mig is not None else 1.0)
    frac = float(rng.choice([rng.uniform(0.86, 0.985), rng.uniform(0.55, 0.86), 0.75 + rng.uniform(0, 0.02)]))
    used = total * np.clip(frac + rng.normal(0.0, 0.004, shape), 0.05, 0.995)
    return {"fb_used_mib": np.asarray(used), "fb_free_mib": np.asarray(total - used)}


def link_bytes(rng: Rng, plan: Plan, st: Stages, pause: FloatArray) -> dict[str, FloatArray]:
    """PCIe and NVLink bytes/s per GPU, and each pod's inter-node bytes/s (both directions alike)."""
    t, b = st.step, plan.board
    pinned = plan.h2d_overlap > 0
    h2d = st.h2d * b.pcie_bps * (0.8 if pinned else 0.45) / t
    d2h_share = {"activation-offload": 1.0, "zero-offload": 0.9, "host-embedding-offload": 0.3}
    d2h_ratio = next((v for k, v in d2h_share.items() if k in plan.tags), rng.uniform(0.002, 0.02))
    # bytes per micro-step follow the nominal link time: the link runs at its rate while busy
    inter = plan.comm_s * (1.0 - plan.comm_intra_share) / plan.accum
    rails = max(1, plan.gpus_per_pod * plan.pods_per_node // 2) if plan.fabric.rdma else 1
    nic_share = plan.fabric.port_bps() * rails / plan.pods_per_node * 0.85
    nic = inter * nic_share / t  # bytes/s per pod, each direction
    intra = plan.comm_s * plan.comm_intra_share / plan.accum / t
    base = rng.uniform(2e6, 3e7)
    rx = h2d + base
    tx = h2d * d2h_ratio + base * 0.5
    if plan.pcie_peer:
        peer = intra * b.pcie_bps * 0.7
        rx, tx = rx + peer, tx + peer
    if plan.gdr:
        per_gpu = nic / plan.gpus_per_pod
        rx, tx = rx + per_gpu, tx + per_gpu
    nvl = intra * b.nvlink_bps * 0.8 if b.nvlink_bps and not plan.pcie_peer else np.zeros_like(t)
    live = 1.0 - pause
    return {
        "pcie_rx_bps": np.asarray(rx * live + base * pause),
        "pcie_tx_bps": np.asarray(tx * live + base * pause + rng.uniform(0.5e9, 5e9) * pause),
        "nvlink_rx_bps": np.asarray(nvl * live),
        "nvlink_tx_bps": np.asarray(nvl * live),
        "nvlink_total_bps": np.asarray(2.0 * nvl * live),
        "nic_bps": np.asarray(nic * live),
    }
