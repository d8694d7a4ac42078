"""dcgm-exporter's series for one pod's GPUs: what each field reports given what the GPU does.

Semantics (TELEMETRY.md, NVML and DCGM documentation): GPU_UTIL is the share of the sample period
any kernel ran, NCCL's included; MEM_COPY_UTIL the share device memory was read or written (NVML
``utilization.memory``); SM activity counts warps waiting on memory as active; tensor activity is the
tensor pipes' share of cycles; DRAM activity is bandwidth used over peak, ~0.8 in practice at most;
PCIe bytes include headers; the framebuffer stays nearly full under PyTorch's caching allocator.
Board power follows activity up to the enforced limit, where the clock drops and the SW power-cap
clock-event bit (0x4) is set. Each GPU has its own clock (a drawn spread); the slowest paces the
step, so the faster ones wait a little.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyae.activity import Activity
from bottleneck_operator_dev.familyae.hardware import GIB
from bottleneck_operator_dev.familyae.scrape import Level
from bottleneck_operator_dev.familyae.stages import Arr
from bottleneck_operator_dev.familyae.workload import JobConfig, lm_costs, vision_costs

SW_POWER_CAP = 0x4
GPU_IDLE = 0x1
PCIE_OVERHEAD = 1.06  # TLP headers on top of payload (assumed)


def fb_used_share(cfg: JobConfig, rng: np.random.Generator) -> float:
    """Share of device memory in use: state, activations and what the caching allocator keeps."""
    act = vision_costs(cfg.model, cfg.size)[1] if cfg.model.family == "vision" else lm_costs(cfg.model, cfg.size)[1]
    need_gb = cfg.model.params * 16.0 / 1e9 + cfg.batch * act + 0.6  # + CUDA context
    share = need_gb * 1e9 / (cfg.gpu.mem_gib * GIB) * float(rng.uniform(1.05, 1.3))
    return float(np.clip(share, 0.04, 0.97))


def _power_clock(cfg: JobConfig, act: Activity, f_math: Arr, spread: Arr) -> dict[str, Arr]:
    gpu = cfg.gpu
    busy = f_math + 0.55 * act.f_hbm + 0.25 * act.f_exposed + 0.05 * act.f_h2d
    demand = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * np.minimum(1.0, 0.2 + 0.85 * busy) * act.active
    demand = np.where(act.active > 0, demand, gpu.idle_w * 1.15)
    capped = demand > cfg.power_limit_w
    ratio = np.clip((cfg.power_limit_w - gpu.idle_w) / np.maximum(demand - gpu.idle_w, 1e-9), 0.2, 1.0)
    clock = gpu.boost_mhz * spread * np.where(capped, ratio ** (1.0 / 3.0), 1.0)
    reasons = np.where(capped, SW_POWER_CAP, 0) + np.where(act.active > 0, 0, GPU_IDLE)
    return {"power": np.minimum(demand, cfg.power_limit_w), "clock": clock, "reasons": reasons.astype(np.float64)}


def _link_bytes(cfg: JobConfig, act: Activity, rng: np.random.Generator) -> dict[str, Arr]:
    """PCIe and NVLink bytes per GPU: host copies, all-reduce through the NIC or host memory, NVLink rings."""
    net = act.net_bps / cfg.gpus_per_pod  # GPUDirect RDMA reads/writes GPU memory; sockets stage through the host
    shm = act.intra_bps if cfg.intra == "shm" else 0.0 * act.intra_bps
    base = float(rng.uniform(5e6, 4e7)) * act.active  # launches, syncs, small tensors
    nvl = act.intra_bps if cfg.intra == "nvlink" else 0.0 * act.intra_bps
    return {
        "rx": (act.h2d_bps + net + shm) * PCIE_OVERHEAD + base,
        "tx": (net + shm) * PCIE_OVERHEAD + base * 0.6,
        "nvl": nvl,
    }


def dcgm_levels(
    cfg: JobConfig, act: Activity, rng: np.random.Generator, field_set: str, power_clocks: bool
) -> dict[str, Level]:
    """The pod's dcgm-exporter series, one row per GPU, for the drawn field set."""
    g = cfg.gpus_per_pod
    spread = rng.uniform(0.97, 1.0, (g, 1))  # per-GPU clock spread of boards of one model (assumed)
    f_math = act.f_math * spread.min() / spread
    f_exec = f_math + act.f_hbm
    util = np.clip(f_exec + act.f_exposed + 0.005 * act.active, 0.0, 1.0)
    dm, dh = float(rng.uniform(0.12, 0.3)), float(rng.uniform(0.7, 0.82))
    dram = np.clip(f_math * dm + act.f_hbm * dh + act.f_exposed * 0.06 + act.f_h2d * 0.04, 0.0, 0.85)
    pc = _power_clock(cfg, act, f_math, spread)
    links = _link_bytes(cfg, act, rng)
    mem_mib = cfg.gpu.mem_gib * 1024.0
    used = fb_used_share(cfg, rng) * mem_mib * np.ones_like(util) + rng.normal(0.0, 40.0, (g, 1))
    burst = act.burst
    out: dict[str, Level] = {
        "gpu_util": Level(util * 100.0, noise=0.01, burst=burst, cap=100.0, integer=True),
        "mem_copy_util": Level(np.minimum(dram * 125.0, 100.0), noise=0.02, cap=100.0, integer=True),
        "fb_used_frac:used": Level(used, noise=0.002, integer=True),
        "fb_used_frac:free": Level(mem_mib * 0.99 - used, noise=0.002, integer=True),
        "power_w": Level(pc["power"], noise=0.02),
        "sm_clock_mhz": Level(pc["clock"], noise=0.004, integer=True),
        "xid_code": Level(np.zeros_like(util)),
    }
    if cfg.gpu.nvlink_gbs > 0:
        out["nvlink_total_bps"] = Level(2.0 * links["nvl"] * np.ones_like(util), noise=0.05)
    if field_set in ("default", "full"):
        tensor = f_math * act.tensor_in_math
        out |= {
            "gr_engine_active": Level(util * float(rng.uniform(0.97, 1.0)), noise=0.01, burst=burst, cap=1.0),
            "tensor_active": Level(tensor, noise=0.03, burst=burst * 0.5, cap=1.0),
            "dram_active": Level(dram, noise=0.03, burst=burst * 0.5, cap=1.0),
            "pcie_tx_bps": Level(links["tx"] * np.ones_like(util), noise=0.05),
            "pcie_rx_bps": Level(links["rx"] * np.ones_like(util), noise=0.05),
        }
    if field_set == "full":
        out |= _full_fields(cfg, act, f_math, rng, links["nvl"])
    if power_clocks:
        out["power_limit_w"] = Level(np.full_like(util, cfg.power_limit_w))
        out["clock_slowdown_frac:reasons"] = Level(pc["reasons"] * np.ones_like(util))
    return out


def _full_fields(cfg: JobConfig, act: Activity, f_math: Arr, rng: np.random.Generator, nvl: Arr) -> dict[str, Level]:
    """The fields only a custom counters file turns on: SM activity and occupancy, pipes, NVLink bytes."""
    nccl_sm = min(1.0, 16.0 / cfg.gpu.sms)  # NCCL runs on a few blocks per channel (assumed 16 SMs)
    sm = (f_math * 0.93 + act.f_hbm * 0.85) * act.fill + act.f_exposed * nccl_sm
    occ_m, occ_h = float(rng.uniform(0.25, 0.45)), float(rng.uniform(0.5, 0.8))
    occupancy = (f_math * occ_m + act.f_hbm * occ_h) * act.fill**0.5 + act.f_exposed * 0.04
    fp32 = f_math * (0.6 if cfg.precision in ("fp32", "tf32") and act.tensor_in_math == 0 else 0.02) + act.f_hbm * 0.1
    fp16 = act.f_hbm * 0.06 + (f_math * 0.03 if cfg.precision == "fp16" else 0.0)
    out = {
        "sm_active": Level(sm, noise=0.02, burst=act.burst * 0.8, cap=1.0),
        "sm_occupancy": Level(occupancy, noise=0.03, burst=act.burst * 0.5, cap=1.0),
        "fp32_active": Level(fp32, noise=0.04, cap=1.0),
        "fp16_active": Level(fp16, noise=0.04, cap=1.0),
    }
    if cfg.gpu.nvlink_gbs > 0:
        ones = np.ones_like(sm)
        out["nvlink_tx_bps"] = Level(nvl * ones, noise=0.05)
        out["nvlink_rx_bps"] = Level(nvl * ones, noise=0.05)
    return out
