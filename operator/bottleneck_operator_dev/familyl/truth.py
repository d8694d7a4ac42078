"""What each stage of family L's step does to the hardware, per sample: the "true" signals.

From a scenario's step model come the shares of wall time each stage occupies; from those, and the
board, storage and fabric, come what dcgm-exporter, node-exporter, cAdvisor, kube-state-metrics and
the collector would measure if they sampled continuously. Counter signals are given here as their
rates (per second); :mod:`.scrape` integrates them into counters and reads them back the way
Prometheus does. Phases (warm-up, evaluation passes, checkpoint pauses) scale the stages per sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyl.workloads import Scenario

Arr = npt.NDArray[np.float64]
M = Mechanism
GIB = 2.0**30


@dataclass(frozen=True)
class Phases:
    """Per-sample multipliers of the step's stages (1.0: steady training).

    Attributes:
        gpu: kernels (0 in a checkpoint pause, lower in warm-up).
        comm: collectives (0 in evaluation passes and pauses: no gradients to reduce).
        input: the input side (reads and decode).
        ckpt: 1 where a checkpoint is being written.
    """

    gpu: Arr
    comm: Arr
    input: Arr
    ckpt: Arr


def phases(rng: np.random.Generator, n: int) -> Phases:
    gpu, comm, inp, ckpt = np.ones(n), np.ones(n), np.ones(n), np.zeros(n)
    if rng.random() < 0.3:  # warm-up at the window's start: compilation, allocator growth
        w = int(rng.integers(1, max(2, n // 8)))
        gpu[:w] *= rng.uniform(0.2, 0.7)
    for _ in range(int(rng.integers(0, 3))):  # checkpoint writes: the trainer waits on storage
        at, ln = int(rng.integers(0, n)), int(rng.integers(1, 4))
        gpu[at : at + ln], comm[at : at + ln], inp[at : at + ln], ckpt[at : at + ln] = 0.03, 0.0, 0.1, 1.0
    if rng.random() < 0.35:  # an evaluation pass: forward only, no gradient traffic
        at, ln = int(rng.integers(0, n)), int(rng.integers(1, max(2, n // 6)))
        gpu[at : at + ln] *= 0.6
        comm[at : at + ln] = 0.0
    return Phases(gpu, comm, inp, ckpt)


def noise(rng: np.random.Generator, n: int, sigma: float) -> Arr:
    return np.exp(rng.normal(0.0, sigma, n))


def shares(sc: Scenario) -> dict[str, float]:
    """Share of wall time of each stage's visible effect, from the step model."""
    s, t = sc.step, sc.step.time
    kern = max(s.math, s.hbm) + 0.15 * min(s.math, s.hbm)
    return {
        "math": kern * s.math / max(s.math + s.hbm, 1e-9) / t,
        "hbm": kern * s.hbm / max(s.math + s.hbm, 1e-9) / t,
        "launch": s.launch / t,
        "comm": min(s.comm, t) / t,
        "comm_exposed": s.comm_exposed / t,
        "h2d": min(s.h2d, t) / t,
        "swap": s.swap / t,
        "read": min(s.read, t) / t,
        "decode": min(s.decode, t) / t,
    }


def gpu_truth(rng: np.random.Generator, sc: Scenario, ph: Phases, n: int) -> tuple[dict[str, Arr], Arr]:
    """Per-GPU-mean dcgm signals (and the per-GPU power, to cap); shapes (n,)."""
    f, g = shares(sc), sc.gpus
    math = np.clip(f["math"] * ph.gpu * noise(rng, n, 0.06), 0, 1)
    hbm = np.clip(f["hbm"] * ph.gpu * noise(rng, n, 0.06), 0, 1)
    launch = f["launch"] * ph.gpu
    comm = np.clip(f["comm"] * ph.comm * noise(rng, n, 0.1), 0, 1)
    busy = np.clip(math + hbm + 0.6 * launch + f["comm_exposed"] * ph.comm + 0.4 * f["h2d"] * ph.gpu, 0, 1)
    occ_m, occ_h = rng.uniform(0.2, 0.45), rng.uniform(0.4, 0.7)
    out = {
        "gpu_util": np.clip(busy * rng.uniform(1.0, 1.15), 0, 1),
        "gr_engine_active": np.clip(busy * 0.97, 0, 1),
        "sm_active": np.clip(0.92 * math + 0.85 * hbm + 0.15 * launch + 0.1 * comm, 0, 1),
        "sm_occupancy": np.clip(occ_m * math + occ_h * hbm + 0.03 * launch, 0, 1),
        "tensor_active": np.clip(sc.tensor_eff * math + 0.04 * hbm, 0, 1),
        "dram_active": np.clip(rng.uniform(0.75, 0.88) * hbm + rng.uniform(0.1, 0.3) * math + 0.05 * comm, 0, 1),
        "fp16_active": np.clip(0.08 * sc.tensor_eff * math, 0, 1),
        "fp32_active": np.clip(0.05 * math + 0.1 * hbm + 0.05 * launch, 0, 1),
    }
    out["mem_copy_util"] = np.clip(out["dram_active"] * rng.uniform(0.85, 1.0), 0, 1)
    b = sc.board
    h2d = f["h2d"] * ph.gpu * b.pcie_bps * rng.uniform(0.7, 0.85)
    rdma = sc.pods > 1 and sc.fabric.rdma
    net_per_gpu = comm * sc.fabric.bps * 0.85 / g if sc.pods > 1 else 0.0 * comm
    input_bytes = 0.02 * b.pcie_bps * ph.input * f["decode"]
    # Offload moves parameters up and gradients/optimizer state down, so both directions carry bytes.
    out["pcie_rx_bps"] = 0.85 * h2d + input_bytes + (net_per_gpu if rdma else 0.0)
    out["pcie_tx_bps"] = 0.5 * h2d + 0.1 * input_bytes + (net_per_gpu if rdma else 0.0)
    intra = b.nvlink_bps > 0 and g > 1
    nv = comm * b.nvlink_bps * rng.uniform(0.7, 0.85) * (1.0 if sc.pods == 1 else 0.3) if intra else 0.0 * comm
    out["nvlink_tx_bps"], out["nvlink_rx_bps"] = nv, nv * rng.uniform(0.97, 1.03)
    out["nvlink_total_bps"] = out["nvlink_tx_bps"] + out["nvlink_rx_bps"]
    act = np.clip(0.3 * busy + 0.5 * out["tensor_active"] / 0.7 + 0.25 * out["dram_active"], 0, 1.2)
    return out, act


def power_clock(rng: np.random.Generator, sc: Scenario, act: Arr, n: int) -> dict[str, Arr]:
    """Power and SM clock per GPU under the enforced limit, averaged over the pod's GPUs."""
    b, g = sc.board, sc.gpus
    cap = float(rng.uniform(0.6, 0.95)) if rng.random() < 0.4 else 1.0
    limit = b.tdp_w * cap
    spread = rng.uniform(0.9, 1.1, (g, 1)) * noise(rng, n, 0.04)[None, :]
    demand = b.idle_w + (b.tdp_w - b.idle_w) * np.clip(act[None, :] * spread, 0, 1.1)
    power = np.minimum(demand, limit * rng.uniform(0.97, 0.995, (g, 1)))
    over = np.clip((demand - limit) / max(limit, 1.0), 0, 1)
    capped = demand > limit
    clock = b.boost_mhz - (b.boost_mhz - b.base_mhz) * np.clip(2.5 * over, 0, 1)
    clock = np.minimum(clock * rng.uniform(0.97, 1.0, (g, 1)), b.boost_mhz)
    return {
        "power_w": power.mean(axis=0),
        "power_limit_w": np.full(n, limit),
        "sm_clock_mhz": np.round(clock / 15.0).mean(axis=0) * 15.0,
        "clock_slowdown_frac": capped.mean(axis=0).astype(np.float64),
        "fb_used_frac": np.full(n, rng.uniform(0.55, 0.98)) + 0.0 * act,
    }


def cpu_truth(rng: np.random.Generator, sc: Scenario, ph: Phases, n: int, neighbours: float) -> dict[str, Arr]:
    """The pod's cgroup CPU and the node's CPU modes."""
    f, g = shares(sc), sc.gpus
    decode = np.clip(f["decode"] * ph.input * noise(rng, n, 0.07), 0, 1)
    trainer = g * (0.55 + 0.4 * f["launch"]) * np.clip(ph.gpu + 0.2, 0, 1)
    demand = trainer + sc.workers * decode * rng.uniform(0.9, 1.0)
    limit = sc.cpu_limit
    cores = np.minimum(demand, limit * 0.99) if limit else demand
    cores = np.minimum(cores, sc.node_cpus - neighbours * 0.5)
    thr = np.clip((demand / limit - 0.8) * 3.0, 0, 0.97) if limit else np.zeros(n)
    swap_sys = 0.15 * f["swap"]
    node_busy = np.clip((cores + neighbours) / sc.node_cpus + swap_sys, 0, 1)
    iowait = (
        np.clip(f["read"] * ph.input * sc.workers / sc.node_cpus * 0.8, 0, 1 - node_busy)
        if sc.storage.dstate
        else 0 * cores
    )
    return {
        "cpu_cores": cores,
        "sc_cpu_cores": cores + rng.uniform(0.005, 0.02),
        "cpu_throttled_frac": thr,
        "sc_throttled_frac": thr * rng.uniform(0.95, 1.0),
        "cpu_limit_cores": np.full(n, limit if limit else np.nan),
        "node_cpus": np.full(n, float(sc.node_cpus)),
        "node_cpu_busy_frac": node_busy,
        "node_cpu_iowait_frac": iowait,
        "node_cpu_system_frac": np.clip(0.03 * node_busy + swap_sys, 0, 1),
        "node_psi_cpu_some": np.clip((demand + neighbours - 0.9 * sc.node_cpus) / sc.node_cpus * 2 + 0.01, 0, 1),
        "sc_psi_cpu_some": np.clip(thr * 0.8 + 0.3 * np.clip(demand / sc.node_cpus - 0.9, 0, 1) + 0.01, 0, 1),
        "sc_procs_running": np.round(np.minimum(demand, cores + 2) + rng.uniform(0, 2, n)),
        "sc_procs_busy": np.round(sc.workers * (decode > 0.9) + g * (f["launch"] > 0.4)).astype(np.float64),
    }
