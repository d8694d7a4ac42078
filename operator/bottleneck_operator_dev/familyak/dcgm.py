"""dcgm-exporter's view of the simulated GPUs: gauges sampled at DCGM's collect times.

dcgm-exporter collects every ``collect`` seconds and a scrape repeats the last collected values
(TELEMETRY.md). ``GPU_UTIL`` is the share of a short sample period (here 1 s) in which a kernel ran,
NCCL kernels waiting for peers included; PROF ratios are averages over the collect period; the
percentages and MiB are integers on the wire. Which fields exist depends on the drawn field set:
DEV only, the shipped default counters file, or a full profiling file.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyak.draws import power_clock
from bottleneck_operator_dev.familyak.series import FloatArray, Series, gauge
from bottleneck_operator_dev.familyak.spec import JobSpec, Telemetry
from bottleneck_operator_dev.familyak.trace import Trace

DEV_PERIOD_S = 1.0  # NVML's utilisation sample period is 1/6 s to 1 s (TELEMETRY.md)
IDLE_POWER_SHARE = 0.12  # an idle board draws about a tenth of its power (modelling choice)
MIB = 1024.0 * 1024.0


def down_mask(trace: Trace, t: FloatArray) -> FloatArray:
    """1.0 where the trainer's container was restarting at ``t`` (no process on the GPU), else 0.0."""
    mask = np.zeros_like(t)
    for p in trace.restarts():
        mask[(t >= p.at) & (t < p.at + p.seconds)] = 1.0
    return mask


def _dev(spec: JobSpec, trace: Trace, tc: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The DEV fields at the collect times, as pod means over the pod's GPUs."""
    b, pods = spec.board, trace.pods
    busy = np.clip(trace.average("busy", tc, DEV_PERIOD_S), 0.0, 1.0)
    tensor = np.clip(trace.average("tensor", tc, DEV_PERIOD_S), 0.0, 1.0)
    dram = np.clip(trace.average("dram", tc, DEV_PERIOD_S), 0.0, 1.0)
    demand = b.tdp_w * (IDLE_POWER_SHARE + 0.35 * busy + 0.33 * tensor + 0.25 * dram)
    limit = spec.power_cap * b.tdp_w
    power = np.minimum(demand * rng.normal(1.0, 0.02, size=demand.shape), limit)
    idle_clock = rng.uniform(0.2, 0.45) * b.max_clock_mhz
    boost = np.asarray(spec.clock_spread)[:, None] * power_clock(spec.power_cap) * b.max_clock_mhz
    clock = idle_clock + (boost - idle_clock) * np.minimum(1.0, 3.0 * busy)
    clock = np.round(clock * rng.normal(1.0, 0.015, size=clock.shape))  # power management moves it per sample
    # the caching allocator keeps most of the framebuffer reserved; a restarting trainer holds none
    total_mib = np.round(b.mem_gib * 1024.0)
    used = np.round(total_mib * np.clip(rng.normal(spec.model.fb_frac, 0.005, size=(pods, 1)), 0.0, 0.995))
    used = used * (1.0 - down_mask(trace, tc))[None, :] + 300.0 * down_mask(trace, tc)[None, :]
    per_gpu = rng.uniform(0.97, 1.03, size=(pods, spec.gpus, 1))
    capped = (demand[:, None, :] * per_gpu >= 0.98 * limit).mean(axis=1) if spec.power_cap < 1.0 else 0.0 * busy
    nvlink = trace.average("nvlink", tc, DEV_PERIOD_S) * 2.0  # both directions, all links
    return {
        "gpu_util": np.round(100.0 * busy) / 100.0,
        "mem_copy_util": np.round(100.0 * np.minimum(1.0, 1.8 * dram + 0.03 * busy)) / 100.0,
        "fb_used_frac": used / total_mib,
        "power_w": np.round(power, 3),
        "sm_clock_mhz": clock,
        "nvlink_total_bps": nvlink,
        "power_limit_w": np.full_like(busy, limit),
        "clock_slowdown_frac": capped,
        "xid_code": np.zeros_like(busy),
    }


def _prof(trace: Trace, tc: FloatArray, period: float, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The PROF fields at the collect times: averages over the collect period, with DCGM's sampling noise."""
    busy = np.clip(trace.average("busy", tc, period), 0.0, 1.0)
    out = {
        "gr_engine_active": busy * 0.985,
        "tensor_active": np.clip(trace.average("tensor", tc, period), 0.0, 1.0),
        "dram_active": np.clip(trace.average("dram", tc, period), 0.0, 0.95),
        "pcie_rx_bps": trace.average("pcie_rx", tc, period),
        "pcie_tx_bps": trace.average("pcie_tx", tc, period),
        "sm_active": np.clip(trace.average("sm", tc, period), 0.0, 1.0),
        "sm_occupancy": np.clip(trace.average("occ", tc, period), 0.0, 1.0),
        "fp32_active": np.clip(trace.average("fp32", tc, period), 0.0, 1.0),
        "fp16_active": np.clip(trace.average("fp16", tc, period), 0.0, 1.0),
        "nvlink_tx_bps": trace.average("nvlink", tc, period),
        "nvlink_rx_bps": trace.average("nvlink", tc, period),
    }
    # the profiling counters are sampled, not counted: a percent or so of noise per reading
    for name, v in out.items():
        noisy = v * rng.normal(1.0, 0.01, size=v.shape)
        out[name] = noisy if name.endswith("_bps") else np.clip(noisy, 0.0, 1.0)
    return out


FIELD_SETS: dict[str, tuple[str, ...]] = {
    "dev": ("gpu_util", "mem_copy_util", "fb_used_frac", "power_w", "sm_clock_mhz", "nvlink_total_bps", "xid_code"),
    "default": ("gr_engine_active", "tensor_active", "dram_active", "pcie_rx_bps", "pcie_tx_bps"),
    "full": ("sm_active", "sm_occupancy", "fp32_active", "fp16_active", "nvlink_tx_bps", "nvlink_rx_bps"),
}


def render_dcgm(
    spec: JobSpec, tel: Telemetry, trace: Trace, times: FloatArray, rng: np.random.Generator
) -> dict[str, Series]:
    """dcgm-exporter's series at its scrape ``times``: each scrape returns the last collected value."""
    start = float(trace.edges[0]) + tel.dcgm_collect
    count = int((trace.edges[-1] - start) / tel.dcgm_collect) + 1
    tc = np.asarray(start + tel.dcgm_collect * np.arange(count), dtype=np.float64)
    values = _dev(spec, trace, tc, rng)
    if tel.dcgm_fields != "dev":
        values.update(_prof(trace, tc, tel.dcgm_collect, rng))
    names = list(FIELD_SETS["dev"])
    if tel.dcgm_fields in ("default", "full"):
        names += FIELD_SETS["default"]
    if tel.dcgm_fields == "full":
        names += FIELD_SETS["full"]
    if tel.dcgm_power_clocks:
        names += ["power_limit_w", "clock_slowdown_frac"]
    idx = np.searchsorted(tc, times, side="right") - 1
    ok = idx >= 0
    out = {}
    for name in names:
        v = np.where(ok[None, :], values[name][:, np.clip(idx, 0, None)], np.nan)
        out[name] = gauge(v)
    return out
