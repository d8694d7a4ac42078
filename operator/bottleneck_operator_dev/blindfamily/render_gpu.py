"""What dcgm-exporter shows for a job's GPUs, from the timeline's busy shares.

Each field is the mean over the pod's GPUs (``fb_used_frac`` the fullest GPU), as the signal
catalogue defines them. GPU_UTIL counts any resident kernel, NCCL's spinning kernels included
(TELEMETRY.md: "including communication and tiny kernels"), and is read over a short NVML sample
period, so it is noisy when steps are long; the PROF fields are averages over the collect interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.blindfamily.draft import Draft, link_rates
from bottleneck_operator_dev.blindfamily.stages import Stages
from bottleneck_operator_dev.blindfamily.timeline import FloatArray, Timeline
from bottleneck_operator_dev.blindfamily.workloads import KERNELS, draw


@dataclass(frozen=True)
class KernelDraw:
    """One job's kernel mix, drawn from the profile of what bounds its compute."""

    sm: float
    occupancy: float
    tensor: float
    fp32: float
    fp16: float
    dram: float
    dense: float
    nccl_sm: float
    memutil: float


def kernel_draw(d: Draft, s: Stages, rng: np.random.Generator) -> KernelDraw:
    """The kernel mix; DRAM activity follows the memory-traffic time over the compute time.

    A kernel whose memory traffic would take as long as its compute keeps DRAM busy near the
    practical peak (~0.86 here; TELEMETRY.md gives ~0.8); one with half that traffic, about half.
    """
    parts = {"flop": s.flop, "launch": s.launch, "hbm": s.hbm}
    key = {"flop": d.kernel, "launch": "launch", "hbm": "hbm"}[max(parts, key=lambda k: parts[k])]
    p = KERNELS[key]
    dram = float(np.clip(0.86 * s.hbm / max(s.compute, 1e-12) * rng.uniform(0.92, 1.06), 0.03, 0.92))
    return KernelDraw(
        sm=draw(p.sm, rng),
        occupancy=draw(p.occupancy, rng),
        tensor=draw(p.tensor, rng),
        fp32=draw(p.fp32, rng),
        fp16=draw(p.fp16, rng),
        dram=dram,
        dense=draw(p.dense, rng),
        nccl_sm=float(rng.uniform(0.08, 0.25)),
        memutil=float(rng.uniform(0.85, 1.3)),
    )


def _noisy(x: FloatArray, rng: np.random.Generator, sd: float | FloatArray) -> FloatArray:
    out: FloatArray = np.clip(x + rng.standard_normal(x.shape) * sd, 0.0, 1.0)
    return out


def gpu_signals(d: Draft, s: Stages, tl: Timeline, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The DCGM fields of every pod, shape (pods, samples)."""
    kd = kernel_draw(d, s, rng)
    comp, pause = tl.comp, tl.pause_gpu[None, :]
    nccl = tl.comm + tl.wait_peers
    busy = np.clip(comp * kd.dense + tl.exposed + tl.wait_peers + pause + 0.003, 0.0, 1.0)
    # NVML's sample period is 1/6 s on A100/H100 and up to 1 s on others; against a longer step a
    # reading is close to all-or-nothing, and the pod's GPUs move in lockstep so averaging helps little.
    period = 1 / 6 if "A100" in d.board.model or "H100" in d.board.model else 1.0
    sd_inst = np.sqrt(busy * (1 - busy)) * np.minimum(0.9, 0.5 * np.sqrt(tl.step_s / period)) / d.k**0.25 + 0.005
    prof_sd = 0.03 if d.board.multiplexed_prof else 0.01
    out = {
        "gpu_util": np.round(_noisy(busy, rng, sd_inst) * 100 * d.k) / (100 * d.k),
        "gr_engine_active": _noisy(busy * rng.uniform(0.95, 1.0), rng, prof_sd),
        "sm_active": _noisy(comp * kd.sm + nccl * kd.nccl_sm + pause * 0.35, rng, prof_sd),
        "sm_occupancy": _noisy(comp * kd.occupancy + nccl * 0.03 + pause * kd.occupancy * 0.6, rng, prof_sd / 2),
        "tensor_active": _noisy(comp * kd.tensor + pause * kd.tensor * 0.5, rng, prof_sd / 2),
        "fp32_active": _noisy(comp * kd.fp32 + nccl * 0.01 + pause * kd.fp32 * 0.5, rng, prof_sd / 2),
        "fp16_active": _noisy(comp * kd.fp16 + tl.comm * 0.01, rng, prof_sd / 2),
    }
    out.update(_links(d, tl, busy, kd, rng))
    dram = _noisy(comp * kd.dram + out.pop("_hbm_traffic") / d.board.hbm_bps + pause * 0.15, rng, prof_sd)
    out["dram_active"] = dram
    out["mem_copy_util"] = np.round(_noisy(dram * kd.memutil, rng, sd_inst * 0.5) * 100) / 100
    out["fb_used_frac"] = _framebuffer(d, tl, rng)
    out.update(_power_clocks(d, busy, out, rng))
    return out


def _links(d: Draft, tl: Timeline, busy: FloatArray, kd: KernelDraw, rng: np.random.Generator) -> dict[str, FloatArray]:
    """PCIe and NVLink bytes per GPU: the batch copy, the all-reduce's links, and the driver's own traffic.

    PROF PCIe counters include protocol headers, a few percent on top of the payload.
    """
    lr = link_rates(d)
    nvl = lr.get("nvlink", 0.0) * tl.comm
    p2p = lr.get("p2p", 0.0) * tl.comm
    staging = lr.get("staging", 0.0) * tl.comm
    h2d = d.pcie_bps * tl.h2d
    ctrl = float(rng.uniform(2e6, 15e6)) * busy + (
        float(rng.uniform(2e7, 6e7)) * tl.comp if d.stage == "launch" else 0.0
    )
    d2h = float(rng.uniform(0.3e6, 5e6)) * tl.active[None, :]
    hdr = float(rng.uniform(1.04, 1.1))

    def jitter(x: FloatArray) -> FloatArray:
        out: FloatArray = np.maximum(0.0, x * (1.0 + 0.03 * rng.standard_normal(x.shape)))
        return out

    out = {
        "pcie_rx_bps": jitter((h2d + p2p + staging + ctrl) * hdr),
        "pcie_tx_bps": jitter((d2h + p2p + staging + 0.6 * ctrl) * hdr),
        "nvlink_total_bps": jitter(2.0 * nvl),
        "nvlink_tx_bps": jitter(nvl),
        "nvlink_rx_bps": jitter(nvl),
        "_hbm_traffic": 2.0 * (nvl + p2p + staging) + h2d,
    }
    return out


def _framebuffer(d: Draft, tl: Timeline, rng: np.random.Generator) -> FloatArray:
    """The fullest GPU's framebuffer share: set by the framework's allocator, not by the bottleneck.

    PyTorch's caching allocator keeps freed blocks (most jobs 0.85-0.99), JAX preallocates 75 %,
    small models on big boards leave most of it free (TELEMETRY.md).
    """
    level = float(
        rng.choice([rng.uniform(0.85, 0.99), rng.uniform(0.75, 0.8), rng.uniform(0.2, 0.6)], p=[0.7, 0.1, 0.2])
    )
    per_pod = np.clip(level + rng.normal(0.0, 0.01, (d.n_pods, 1)), 0.02, 1.0)
    ramp = np.minimum(1.0, np.cumsum(tl.active) / max(1.0, float(rng.uniform(1, 3))))[None, :]
    out: FloatArray = np.clip(per_pod * np.maximum(ramp, 0.3) + rng.normal(0, 0.002, tl.comp.shape), 0.0, 1.0)
    return out


def _power_clocks(
    d: Draft, busy: FloatArray, f: dict[str, FloatArray], rng: np.random.Generator
) -> dict[str, FloatArray]:
    """Power, SM clock, enforced limit and slowdown reasons, per GPU then averaged over the pod.

    Power follows activity; above the enforced limit the clock drops (dynamic power ~ clock^2 in
    this range) and the power-cap reason bit is set. Boards differ by a few percent, GPU Boost
    moves the clock sample to sample, and boards without application clocks drop clocks when idle.
    """
    b = d.board
    p, n = busy.shape
    act = 1.25 * (
        0.1 * busy
        + 0.35 * f["sm_active"]
        + 0.3 * f["tensor_active"] / 0.6
        + 0.15 * f["dram_active"] / 0.8
        + 0.1 * f["fp32_active"] / 0.6
    )
    limit = d.power_cap_w or b.tdp_w
    spread = 1.0 + 0.04 * rng.standard_normal((p, d.k, 1))
    demand = b.idle_w + (b.tdp_w - b.idle_w) * np.clip(act, 0.0, 1.2)[:, None, :] * spread
    capped = demand > limit
    ratio = np.where(capped, np.sqrt(np.clip((limit - b.idle_w) / np.maximum(demand - b.idle_w, 1e-6), 0.2, 1.0)), 1.0)
    # Hot boards: the whole job's (T4 chassis), or the one straggling pod of a compute-bound job.
    hot = np.full((p, 1, 1), d.thermal)
    heat = np.full((p, 1, 1), d.clock_ratio if d.thermal else 1.0)
    if d.straggler is not None and d.stage == "flop":
        hot[d.straggler[0]], heat[d.straggler[0]] = True, 1.0 / d.straggler[1]
    ratio = np.where(hot, ratio * heat * (1 + 0.02 * rng.standard_normal((p, d.k, n))), ratio)
    clock = (
        b.boost_mhz * ratio * (1 - rng.uniform(0, 0.02, (p, d.k, 1))) * (1 + 0.01 * rng.standard_normal((p, d.k, n)))
    )
    if rng.random() < 0.5:
        clock = np.where(busy[:, None, :] < 0.05, clock * rng.uniform(0.15, 0.5, (p, d.k, n)), clock)
    clock = np.round(np.minimum(clock, b.boost_mhz) / 15.0) * 15.0
    power = np.where(
        capped, limit * rng.uniform(0.96, 1.0, demand.shape), demand * (1 + 0.02 * rng.standard_normal(demand.shape))
    )
    power = np.where(hot, np.minimum(power, b.idle_w + (power - b.idle_w) * heat**2), power)
    slow = (capped | hot).astype(np.float64)
    return {
        "power_w": power.mean(axis=1),
        "sm_clock_mhz": clock.mean(axis=1),
        "power_limit_w": np.full((p, n), limit),
        "clock_slowdown_frac": slow.mean(axis=1),
    }
