"""dcgm-exporter's view of the job's GPUs: DEV and PROF fields at each scrape, per pod.

Sources: the DCGM field definitions (NVIDIA DCGM documentation, "Profiling metrics"; NVML's
``nvmlUtilization_t``) as summarised in TELEMETRY.md. ``GPU_UTIL`` is the share of a short sample
period (1/6 s to 1 s) in which any kernel ran, so a snapshot of a GPU that alternates between
work and waits reads near 0 or near 1; the PROF fields are averages over DCGM's update period. The
SM, tensor, DRAM and pipe activities each kernel kind shows are per-job draws from ranges that
follow the definitions: warps waiting on memory count as SM-active, DRAM activity peaks near 0.8
in practice, NCCL kernels occupy a few SMs (one block per channel) and move data through HBM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyd.activity import PodActivity
from bottleneck_operator_dev.familyd.power import activity, board_power, clock_ratio, dynamic_demand
from bottleneck_operator_dev.familyd.scrapes import Scrapes, held
from bottleneck_operator_dev.familyd.stages import FloatArray
from bottleneck_operator_dev.familyd.workload import Workload
from bottleneck_operator_dev.familyd.world import Rng, Setup

SNAPSHOT = 1.0  # seconds: the longest GPU_UTIL sample period (NVML: 1/6 s to 1 s by product)


@dataclass(frozen=True)
class KernelMix:
    """What each kind of kernel shows in the PROF fields (shares while that kind runs)."""

    sm: tuple[float, float, float]  # math, HBM-bound, NCCL
    occupancy: tuple[float, float, float]
    tensor: tuple[float, float]  # math, HBM-bound
    dram: tuple[float, float, float]
    fp32: tuple[float, float]
    fp16: tuple[float, float]
    copy: tuple[float, float, float]  # MEM_COPY_UTIL: share of time memory is read or written


def draw_mix(rng: Rng, precision: str) -> KernelMix:
    """Per-job kernel behaviour (estimates within the fields' definitions)."""
    u = rng.uniform
    tensor_math = {"bf16": u(0.35, 0.75), "tf32": u(0.2, 0.45), "fp32": u(0.0, 0.04)}[precision]
    fp32_math = {"bf16": u(0.03, 0.12), "tf32": u(0.08, 0.2), "fp32": u(0.4, 0.7)}[precision]
    return KernelMix(
        sm=(u(0.85, 0.97), u(0.75, 0.95), u(0.08, 0.25)),
        occupancy=(u(0.15, 0.45), u(0.4, 0.85), u(0.02, 0.06)),
        tensor=(tensor_math, u(0.0, 0.06)),
        dram=(u(0.12, 0.4), u(0.7, 0.88), u(0.05, 0.15)),
        fp32=(fp32_math, u(0.08, 0.25)),
        fp16=(u(0.0, 0.05), u(0.02, 0.12)),
        copy=(u(0.3, 0.6), u(0.85, 1.0), u(0.15, 0.3)),
    )


def _snapshot(rng: Rng, share: FloatArray, step: FloatArray, period: float) -> FloatArray:
    """A sample over ``period`` seconds of a GPU that is busy ``share`` of each ``step``-long cycle."""
    k = np.clip(1.0 - period / np.maximum(step, 1e-3), 0.0, 1.0)
    hit = (rng.random(share.shape) < share).astype(np.float64)
    noisy = share + k * (hit - share) + 0.015 * rng.standard_normal(share.shape)
    return np.asarray(np.clip(noisy, 0.0, 1.0), dtype=np.float64)


def _power_and_clock(
    rng: Rng, setup: Setup, w: Workload, act: PodActivity, at: np.ndarray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Pod means of power (W) and SM clock (MHz), and the share of GPUs held at the power limit."""
    b = setup.board
    shares = activity(w.precision, act.math[:, at], act.hbm[:, at], act.nccl[:, at])
    eff = rng.normal(1.0, 0.04, size=(setup.pods, setup.gpus, 1))  # silicon and cooling differ per board
    slow = np.ones((setup.pods, setup.gpus, 1))
    slow[:, 0, 0] = w.slow_gpu  # a slowed GPU draws less at its lower clock
    demand = dynamic_demand(b, w.intensity, shares[:, None, :] * eff) * slow**2
    ratio = clock_ratio(b, setup.power_cap_w, demand)
    power = board_power(b, setup.power_cap_w, demand, ratio, rng)
    clock = b.boost_mhz * setup.clock_lock * ratio * slow * (1.0 + 0.006 * rng.standard_normal(ratio.shape))
    limited = ((ratio < 0.995) | (slow < 1.0)).mean(axis=1)
    return power.mean(axis=1), np.rint(np.minimum(clock, b.boost_mhz)).mean(axis=1), limited


def dcgm_scrapes(
    rng: Rng, setup: Setup, w: Workload, act: PodActivity, times: FloatArray, index: np.ndarray, grid: FloatArray
) -> Scrapes:
    """The fields the cluster's counters file exports, per pod, at dcgm-exporter's scrapes."""
    # every field is read once per collection; scrapes between two collections repeat it
    at, repeat = np.unique(held(grid, index, setup.exporters.dcgm_collect, rng), return_inverse=True)
    mix = draw_mix(rng, w.precision)
    math, hbm, nccl, busy, step = (x[:, at] for x in (act.math, act.hbm, act.nccl, act.busy, act.step))
    g: dict[str, FloatArray] = {}
    g["DCGM_FI_DEV_GPU_UTIL"] = np.rint(100 * _snapshot(rng, busy, step, SNAPSHOT))
    copy = mix.copy[0] * math + mix.copy[1] * hbm + mix.copy[2] * nccl
    g["DCGM_FI_DEV_MEM_COPY_UTIL"] = np.rint(100 * _snapshot(rng, np.minimum(copy, 1.0), step, SNAPSHOT))
    fb_total = setup.board.fb_mib
    fb_share = float(rng.uniform(0.45, 0.98))
    used = np.rint(fb_total * np.clip(fb_share + 0.003 * rng.standard_normal(busy.shape), 0.02, 0.995))
    g["DCGM_FI_DEV_FB_USED"], g["DCGM_FI_DEV_FB_FREE"] = used, fb_total - used
    power, clock, limited = _power_and_clock(rng, setup, w, act, at)
    g["DCGM_FI_DEV_POWER_USAGE"], g["DCGM_FI_DEV_SM_CLOCK"] = np.round(power, 3), clock
    if setup.board.nvlink_bps > 0:
        g["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"] = act.nvlink_bps[:, at] * rng.uniform(0.97, 1.03, size=busy.shape)
    g["DCGM_FI_DEV_XID_ERRORS"] = np.zeros_like(busy)
    # PROF fields average over DCGM's update period: the share of the work that period caught
    # scales every PROF field of that sample alike.
    gr = _snapshot(rng, busy, step, setup.exporters.dcgm_collect)
    caught = np.where(busy > 1e-3, gr / np.maximum(busy, 1e-3), 1.0)

    def prof(share: FloatArray) -> FloatArray:
        return np.clip(share * caught + 0.01 * rng.standard_normal(share.shape), 0.0, 1.0)

    g["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] = gr
    g["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] = prof(mix.tensor[0] * math + mix.tensor[1] * hbm)
    g["DCGM_FI_PROF_DRAM_ACTIVE"] = prof(mix.dram[0] * math + mix.dram[1] * hbm + mix.dram[2] * nccl)
    header = float(rng.uniform(1.04, 1.1))  # the PROF PCIe counts include packet headers
    g["DCGM_FI_PROF_PCIE_RX_BYTES"] = act.h2d_bps[:, at] * header * rng.uniform(0.95, 1.05, size=busy.shape)
    g["DCGM_FI_PROF_PCIE_TX_BYTES"] = act.d2h_bps[:, at] * header * rng.uniform(0.95, 1.05, size=busy.shape)
    g["DCGM_FI_PROF_SM_ACTIVE"] = prof(mix.sm[0] * math + mix.sm[1] * hbm + mix.sm[2] * nccl)
    g["DCGM_FI_PROF_SM_OCCUPANCY"] = prof(mix.occupancy[0] * math + mix.occupancy[1] * hbm + mix.occupancy[2] * nccl)
    g["DCGM_FI_PROF_PIPE_FP32_ACTIVE"] = prof(mix.fp32[0] * math + mix.fp32[1] * hbm)
    g["DCGM_FI_PROF_PIPE_FP16_ACTIVE"] = prof(mix.fp16[0] * math + mix.fp16[1] * hbm)
    if setup.board.nvlink_bps > 0:
        half = act.nvlink_bps[:, at] / 2.0
        g["DCGM_FI_PROF_NVLINK_TX_BYTES"] = half * rng.uniform(0.97, 1.03, size=busy.shape)
        g["DCGM_FI_PROF_NVLINK_RX_BYTES"] = half * rng.uniform(0.97, 1.03, size=busy.shape)
    g["DCGM_FI_DEV_POWER_MGMT_LIMIT"] = np.full_like(busy, setup.power_cap_w)
    g["clock_slowdown_frac"] = limited
    return Scrapes("dcgm", times, index, gauges={k: v[:, repeat] for k, v in g.items()})
