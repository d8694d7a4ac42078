"""The GPU's steady signals (dcgm-exporter's DEV and PROF fields) from a Job's stage times.

Each value is what the stages imply over one step of ``T`` seconds, averaged over the pod's GPUs:

- ``gpu_util`` is the share of the step in which any kernel runs, NCCL's included (a rank waiting
  for a slower pod spins inside the all-reduce kernel, so it looks busy);
- SM activity counts warps resident: GEMMs fill the SMs, small launch-bound kernels do not, NCCL
  uses a few SMs; tensor activity is the achieved share of the tensor peak during GEMMs;
- DRAM activity is the HBM bytes over the peak: bandwidth-bound kernels run at ~0.8 of it;
- PCIe carries host-to-device copies, peer traffic where there is no NVLink, and the fabric's
  bytes under GPUDirect RDMA (RX about TX); NVLink carries the intra-node all-reduce and
  tensor-parallel activations;
- power follows activity up to the enforced limit; over it, clocks drop and the limit bit is set.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyaf.cluster import Cluster
from bottleneck_operator_dev.familyaf.hardware import DRAM_PRACTICAL, LINK_EFFICIENCY, PCIE_HEADER_OVERHEAD
from bottleneck_operator_dev.familyaf.stepmodel import kernel_time, pod_steps
from bottleneck_operator_dev.familyaf.timeline import Level, level, varying
from bottleneck_operator_dev.familyaf.workload import composition

FloatArray = npt.NDArray[np.float64]


def fabric_bytes(cl: Cluster, t: Mapping[str, FloatArray]) -> FloatArray:
    """Bytes per step each node sends (and receives) over the fabric for the all-reduce."""
    if cl.fabric is None:
        return np.zeros(cl.pods)
    eff = sum(LINK_EFFICIENCY) / 2
    return np.asarray(t["net"] * cl.nics * cl.fabric.port_bps * eff, dtype=np.float64)


def _activity(cl: Cluster, t: Mapping[str, FloatArray], step: float, rng: np.random.Generator) -> dict[str, Level]:
    """Engine, SM, tensor, pipe and DRAM activity."""
    p = cl.pods
    kern = kernel_time(t)
    gemm_k = np.maximum(t["gemm"], t["gemm_mem"])
    dp = np.maximum(t["intra"], t["net"])
    wait = step - pod_steps(t, composition(cl)) if p > 1 else np.zeros(p)
    nccl = dp + t["tp"] + wait
    hidden = np.minimum(cl.overlap * dp, 2 * np.maximum(t["issue"], kern) / 3)
    busy = np.clip((kern + nccl - hidden) / step, 0.0, 1.0)
    launch_bound = t["issue"] > kern
    fill = np.where(launch_bound, rng.uniform(0.1, 0.35, p), rng.uniform(0.55, 0.9, p))
    sm = (gemm_k * rng.uniform(0.9, 0.98) + t["ew"] * fill + nccl * rng.uniform(0.05, 0.15)) / step
    occ = (gemm_k * rng.uniform(0.12, 0.3) + t["ew"] * fill * rng.uniform(0.4, 0.8) + nccl * 0.02) / step
    eff = rng.uniform(0.55, 0.85)
    math_ = t["gemm"] * eff / step
    tensor = math_ if cl.precision != "fp32" else np.zeros(p)
    fp32 = t["ew"] / step * rng.uniform(0.05, 0.25) + (math_ if cl.precision == "fp32" else 0.0)
    fp16 = t["ew"] / step * (rng.uniform(0.02, 0.12) if cl.precision == "bf16" else 0.003)
    dram = DRAM_PRACTICAL * (t["gemm_mem"] + t["ew"] * rng.uniform(0.85, 1.0)) / step + nccl / step * 0.02
    ev = rng.uniform(0.5, 0.8)
    return {
        "gpu_util": varying("ratio", busy, rng.uniform(0.0, 0.08), busy * ev),
        "gr_engine_active": varying("ratio", busy * rng.uniform(0.9, 1.0), rng.uniform(0.0, 0.05), busy * ev * 0.95),
        "sm_active": varying("ratio", sm, 0.01, sm * ev),
        "sm_occupancy": varying("ratio", occ, 0.005, occ * ev),
        "tensor_active": varying("ratio", tensor, 0.0, tensor * ev * 0.8),
        "fp32_active": varying("ratio", fp32, 0.002, fp32 * ev),
        "fp16_active": varying("ratio", fp16, 0.0, fp16 * ev),
        "dram_active": varying("ratio", dram, 0.01, dram * ev),
        "mem_copy_util": varying("ratio", np.minimum(1.0, dram * rng.uniform(1.1, 1.5)), 0.01, dram * ev),
    }


def _links(cl: Cluster, t: Mapping[str, FloatArray], step: float, rng: np.random.Generator) -> dict[str, Level]:
    """PCIe and NVLink bytes per second per GPU."""
    p = cl.pods
    head = rng.uniform(*PCIE_HEADER_OVERHEAD)
    rx = t["h2d"] * cl.pcie_bps / step
    tx = np.full(p, rng.uniform(1e6, 2e7))
    link_eff = rng.uniform(*LINK_EFFICIENCY)
    peer = (t["intra"] + t["tp"]) * (cl.gpu.nvlink_bps or cl.gpu.pcie_bps * 0.8) * link_eff / step
    nv = peer if cl.gpu.nvlink_bps > 0 else np.zeros(p)
    if cl.gpu.nvlink_bps == 0:
        rx, tx = rx + peer, tx + peer
    if cl.gdr:
        share = fabric_bytes(cl, t) / cl.gpus / step
        rx, tx = rx + share, tx + share
    ckpt_tx = rng.uniform(0.5e9, 4e9)
    return {
        "pcie_rx_bps": varying("rate", rx * head, 1e6, rx * head * 0.6),
        "pcie_tx_bps": varying("rate", tx * head, ckpt_tx, tx * 0.5),
        "nvlink_tx_bps": varying("rate", nv, 0.0, nv * 0.05),
        "nvlink_rx_bps": varying("rate", nv, 0.0, nv * 0.05),
        "nvlink_total_bps": varying("rate", 2 * nv, 0.0, nv * 0.1),
    }


def _power(cl: Cluster, acts: Mapping[str, Level], rng: np.random.Generator) -> dict[str, Level]:
    """Power, clocks and the power-limit bit; memory in use and the last XID."""
    g, p = cl.gpu, cl.pods
    work = acts["tensor_active"].train + acts["fp32_active"].train * 0.5
    demand = g.idle_w + (g.tdp_w - g.idle_w) * np.clip(
        0.35 * acts["gr_engine_active"].train + 0.45 * work / 0.8 + 0.2 * acts["dram_active"].train / 0.8, 0, 1.05
    )
    cap = cl.power_cap_w
    capped = demand > cap
    power = np.where(capped, cap * rng.uniform(0.97, 0.995, p), demand)
    clock = g.boost_mhz * cl.clock * np.where(capped, (cap / demand) ** 0.4, 1.0)
    idle = g.idle_w * rng.uniform(1.05, 1.4)
    fb = rng.uniform(0.86, 0.985) if rng.random() < 0.8 else rng.uniform(0.25, 0.75)
    slow = np.where(capped, rng.uniform(0.6, 1.0, p), 0.0)
    return {
        "power_w": varying("rate", power, idle, g.idle_w + (power - g.idle_w) * 0.7),
        "sm_clock_mhz": varying("level", clock, clock, clock),
        "clock_slowdown_frac": varying("ratio", slow, 0.0, slow * 0.5),
        "power_limit_w": level(cap, p),
        "fb_used_frac": level(fb * rng.uniform(0.995, 1.0, p), p),
        "xid_code": level(0.0 if rng.random() < 0.97 else float(rng.choice((13, 31, 43, 63))), p),
    }


def gpu_levels(cl: Cluster, t: Mapping[str, FloatArray], step: float, rng: np.random.Generator) -> dict[str, Level]:
    """Every dcgm-exporter signal's steady levels for one Job."""
    acts = _activity(cl, t, step, rng)
    return {**acts, **_links(cl, t, step, rng), **_power(cl, acts, rng)}
