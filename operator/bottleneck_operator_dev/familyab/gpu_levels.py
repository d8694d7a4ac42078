"""What dcgm-exporter reports for one pod in each phase (train, checkpoint, evaluation, down).

Values are the pod's mean over its GPUs (``fb_used_frac`` the maximum), in the contract's units.
The activity shares come from :class:`.breakdown.Breakdown`: a kernel running counts for
GPU_UTIL whatever it does; SM activity counts SMs with a warp resident (memory-bound kernels fill
them too); tensor activity follows the math kernels at the precision's tensor-pipe use.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyab.breakdown import Breakdown
from bottleneck_operator_dev.familyab.config import Config, Practices
from bottleneck_operator_dev.familyab.stages import Stages

Levels = npt.NDArray[np.float64]  # one value per phase: train, ckpt, eval, down
Rng = np.random.Generator

# Shares of an SM a kernel keeps busy, by workload: large GEMMs and convolutions fill every SM,
# a click model's small MLPs and a graph model's gathers fewer, microsecond kernels few (assumed).
SM_FILL = {"small": 0.25, "rec": 0.6, "gnn": 0.5}
TENSOR_USE = {"amp": 0.55, "tf32": 0.35, "fp32": 0.0}  # tensor-pipe activity inside math kernels (assumed)


def lv(train: float, ckpt: float, evaluation: float, down: float) -> Levels:
    return np.asarray([train, ckpt, evaluation, down], dtype=np.float64)


def activity_levels(cfg: Config, b: Breakdown, rng: Rng) -> dict[str, Levels]:
    """Utilisation and pipe activity: GPU_UTIL, graphics engine, SM, occupancy, tensor, DRAM, FP pipes."""
    t = b.step
    fill = SM_FILL.get(cfg.model.kind, 0.9)
    overlapped = b.comm - b.comm_exposed
    sm = (b.math * fill + b.hbm * 0.85 + b.comm_exposed * 0.15 + overlapped * 0.05) / t
    occ_math = 0.15 if cfg.model.kind == "small" else 0.25  # tensor-core GEMMs run few warps per SM
    occupancy = (b.math * fill * occ_math + b.hbm * 0.85 * 0.55 + b.comm_exposed * 0.15 * 0.3) / t
    tensor_use = TENSOR_USE[cfg.precision] if cfg.gpu.tensor_cores else 0.0
    tensor_use *= 0.3 if cfg.model.kind == "small" else 1.0
    d_hbm = 0.62 if cfg.model.kind in ("rec", "gnn") else 0.79  # random gathers keep DRAM less busy
    dram = (b.math * 0.2 + b.hbm * d_hbm + b.comm * 0.05) / t
    fp16 = (b.hbm * 0.08 + b.math * 0.03) / t if cfg.precision == "amp" else 0.01
    fp32 = {"fp32": b.math * 0.6 + b.hbm * 0.05, "tf32": b.hbm * 0.05}.get(cfg.precision, b.hbm * 0.04) / t
    util = b.kernel_share
    gr = float(rng.uniform(0.93, 1.0))
    copy_ratio = float(rng.uniform(1.05, 1.35))  # NVML's memory utilisation reads above DRAM activity
    out = {
        "gpu_util": lv(util, 0.02, 0.7 * util, 0.0),
        "gr_engine_active": lv(util * gr, 0.02 * gr, 0.7 * util * gr, 0.0),
        "sm_active": lv(sm, 0.005, 0.7 * sm, 0.0),
        "sm_occupancy": lv(occupancy, 0.002, 0.7 * occupancy, 0.0),
        "tensor_active": lv(b.math * tensor_use / t, 0.0, 0.7 * b.math * tensor_use / t, 0.0),
        "dram_active": lv(dram, 0.01, 0.7 * dram, 0.0),
        "fp16_active": lv(fp16, 0.0, 0.7 * fp16, 0.0),
        "fp32_active": lv(fp32, 0.001, 0.7 * fp32, 0.0),
    }
    out["mem_copy_util"] = np.minimum(1.0, out["dram_active"] * copy_ratio)
    return {k: np.clip(v, 0.0, 1.0) for k, v in out.items()}


def link_levels(cfg: Config, st: Stages, b: Breakdown) -> dict[str, Levels]:
    """PCIe and NVLink bytes/s per GPU; DCGM's PCIe counters include packet headers (about 8 %)."""
    f, t = st.flows, b.step
    g = max(cfg.gpus_per_node, 1)
    peer_pcie = f.intra_bytes_gpu if cfg.intra == "pcie" else 0.0
    gdr = f.inter_bytes_node / g if cfg.gdr else 0.0  # GPUDirect RDMA crosses each GPU's PCIe both ways
    rx = (f.h2d_bytes_gpu + peer_pcie + gdr) / t * 1.08
    tx = (2e3 + peer_pcie + gdr) / t * 1.08
    ckpt_tx = f.ckpt_bytes / cfg.gpus / f.ckpt_s * 1.08  # state copied to the host to be written
    nvl = f.intra_bytes_gpu / t if cfg.intra == "nvlink" else 0.0
    return {
        "pcie_rx_bps": lv(rx, 1e5, 0.5 * f.h2d_bytes_gpu / t, 0.0),
        "pcie_tx_bps": lv(tx, ckpt_tx, 2e3, 0.0),
        "nvlink_tx_bps": lv(nvl, 0.0, 0.0, 0.0),
        "nvlink_rx_bps": lv(nvl, 0.0, 0.0, 0.0),
        "nvlink_total_bps": lv(2 * nvl, 0.0, 0.0, 0.0),
    }


def board_levels(cfg: Config, st: Stages, b: Breakdown, prac: Practices, rng: Rng) -> dict[str, Levels]:
    """Power, clocks, the enforced limit, clock-event reasons, framebuffer and the last XID."""
    gpu, t = cfg.gpu, b.step
    allowed = gpu.tdp_w * cfg.power_cap - gpu.idle_w
    span = gpu.tdp_w - gpu.idle_w
    dynamic = (min(span * 0.95, allowed) * b.math + min(span * 0.6, allowed) * b.hbm + span * 0.2 * b.comm_exposed) / t
    train_w = gpu.idle_w + dynamic
    clock = gpu.boost_mhz * st.flows.clock * float(rng.uniform(0.97, 1.0))
    capped = st.flows.clock < 0.999
    # PyTorch's caching allocator keeps most of the board reserved, except for small models.
    fb = float(rng.uniform(0.05, 0.4)) if cfg.model.kind == "small" else float(rng.uniform(0.85, 0.99))
    limit = gpu.tdp_w * cfg.power_cap
    return {
        "power_w": lv(train_w, gpu.idle_w * 1.1, gpu.idle_w + 0.7 * dynamic, gpu.idle_w),
        "sm_clock_mhz": lv(clock, clock, clock, gpu.boost_mhz * 0.3),
        "power_limit_w": lv(limit, limit, limit, limit),
        "clock_slowdown_frac": lv(0.9 if capped else 0.0, 0.0, 0.45 if capped else 0.0, 0.0),
        "fb_used_frac": lv(fb, fb, fb, 0.01),
        "xid_code": lv(prac.xid, prac.xid, prac.xid, prac.xid),
    }


def gpu_levels(cfg: Config, st: Stages, b: Breakdown, prac: Practices, rng: Rng) -> dict[str, Levels]:
    """Every dcgm-exporter signal of one pod, per phase."""
    return activity_levels(cfg, b, rng) | link_levels(cfg, st, b) | board_levels(cfg, st, b, prac, rng)
