"""What dcgm-exporter's fields read, as true values on the base grid, from the throughput and kernel mix.

The SM station's busy time X * t splits into compute-bound kernels (tensor pipes, few warps) and
memory-bound kernels (FP32/FP16 pipes, many warps, HBM busy); collectives keep NCCL kernels resident
on a few SMs while the links work. Values are pod means over its GPUs, as the contract reads them.
Counter-typed DCGM fields the contract reads as gauges (PCIe/NVLink bytes per second) are rates here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .cluster import Setup
from .hardware import HBM_PRACTICAL
from .solve import Flow
from .stations import Demands, power_fraction
from .workload import Workload

FloatArray = npt.NDArray[np.float64]

PCIE_HEADERS = 1.06  # DCGM's PCIe byte counts include TLP headers (dcgm-exporter counters file)
XID_CODES = (13, 31, 43, 63)  # graphics engine exception, MMU fault, GPU stopped, row remapping (NVIDIA XID catalog)


def _noise(rng: np.random.Generator, x: FloatArray, sigma: float) -> FloatArray:
    out: FloatArray = x * np.exp(rng.normal(0.0, sigma, size=x.shape))
    return out


def _pipes(wl: Workload, su: Setup, d: Demands, fl: Flow, rng: np.random.Generator) -> dict[str, FloatArray]:
    """Activity ratios of the engine, the SMs and their pipes, and DRAM."""
    x = fl.x[None, :]
    comp, mem = np.maximum(d.f_c, d.b_c), np.maximum(d.f_m, d.b_m)
    busy = np.clip(x * (comp + mem), 0.0, 1.0)
    comm = np.clip(x * d.comm_s, 0.0, 1.0)
    util = 1.0 - (1.0 - busy) * (1.0 - comm)
    nccl_sms = float(rng.uniform(0.06, 0.2))  # NCCL runs its channels on a handful of SMs
    tensor_path = wl.precision in ("bf16", "fp16") or (wl.precision == "tf32" and su.gpu.bf16)
    half = wl.precision in ("bf16", "fp16")
    occ_c, occ_m = float(rng.uniform(0.12, 0.35)), float(rng.uniform(0.45, 0.85))
    sm = x * (0.95 * comp + 0.85 * mem) * wl.sm_fill + nccl_sms * comm
    return {
        "gpu_util": util,
        "gr_engine_active": util * float(rng.uniform(0.96, 1.0)),
        "sm_active": np.clip(sm, 0.0, 1.0),
        "sm_occupancy": np.clip(x * (occ_c * comp + occ_m * mem) * wl.sm_fill + 0.03 * comm, 0.0, 1.0),
        "tensor_active": np.clip(x * d.f_c * min(wl.compute_eff * 1.15, 0.95), 0.0, 1.0)
        if tensor_path
        else np.zeros_like(util),
        "fp32_active": np.clip(x * (0.5 * d.f_m + (0.03 if tensor_path else 0.85) * d.f_c), 0.0, 1.0),
        "fp16_active": np.clip(x * 0.3 * d.f_m, 0.0, 1.0) if half else np.zeros_like(util),
        "dram_active": np.clip(x * HBM_PRACTICAL * (d.b_c + d.b_m) + 0.04 * comm, 0.0, 1.0),
        "_busy": busy,
        "_comm": comm,
    }


def _links(su: Setup, d: Demands, fl: Flow) -> dict[str, FloatArray]:
    x = fl.x[None, :]
    rx = x * (d.h2d + d.p2p + d.netpcie) * PCIE_HEADERS + 2e6
    tx = x * (d.p2p + d.netpcie + 0.02 * d.h2d) * PCIE_HEADERS + 1e6
    nvl = x * d.nvl if su.gpu.nvlink_gbps > 0 else np.zeros_like(rx)
    return {
        "pcie_rx_bps": rx,
        "pcie_tx_bps": tx,
        "nvlink_tx_bps": nvl,
        "nvlink_rx_bps": nvl,
        "nvlink_total_bps": 2 * nvl,
    }


def _power(
    su: Setup, d: Demands, busy: FloatArray, comm: FloatArray, rng: np.random.Generator
) -> dict[str, FloatArray]:
    g = su.gpu
    phi = power_fraction(d.f_c, d.b_c, d.f_m, d.b_m)
    draw = g.idle_w + (g.tdp_w - g.idle_w) * (phi * busy * d.clock**2 + 0.12 * comm)
    power = np.minimum(draw, su.power_cap_w * rng.uniform(0.97, 1.0, size=draw.shape))
    util = 1.0 - (1.0 - busy) * (1.0 - comm)
    return {
        "power_w": power,
        # boost clocks hold while kernels run; the sampled clock sags in the idle gaps
        "sm_clock_mhz": g.max_sm_mhz * d.clock * (0.85 + 0.15 * util),
        "power_limit_w": np.full(power.shape, su.power_cap_w),
        "clock_slowdown_frac": d.capped * (busy > 0.3),
    }


def gpu_readings(
    wl: Workload, su: Setup, d: Demands, fl: Flow, rng: np.random.Generator
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    """(rates, levels) of dcgm-exporter's fields, pod means, shape (pods, T); dcgm has no counters read by rate."""
    pipes = _pipes(wl, su, d, fl, rng)
    busy, comm = pipes.pop("_busy"), pipes.pop("_comm")
    levels = {k: np.clip(_noise(rng, v, 0.03), 0.0, 1.0) for k, v in pipes.items()}
    levels["mem_copy_util"] = np.clip(levels["dram_active"] * float(rng.uniform(1.0, 1.25)), 0.0, 1.0)
    levels.update({k: _noise(rng, v, 0.03) for k, v in _links(su, d, fl).items()})
    levels.update(_power(su, d, busy, comm, rng))
    fb = float(rng.uniform(0.82, 0.99))  # the caching allocator keeps what it once took
    levels["fb_used_frac"] = np.clip(fb + rng.normal(0.0, 0.002, size=busy.shape), 0.0, 1.0)
    xid = np.zeros(busy.shape)
    if rng.random() < 0.03:
        xid[:, int(rng.integers(0, busy.shape[1])) :] = float(XID_CODES[int(rng.integers(0, len(XID_CODES)))])
    levels["xid_code"] = xid
    return {}, levels
