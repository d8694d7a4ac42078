"""What the stages leave behind: each pod's activity, bytes and stalls per latent time.

Every quantity is a rate or a level on the latent grid, (P, N): what a perfect, continuous
exporter would read. The exporters (:mod:`.exporters`) then sample, cache, integrate and lose it.
GPU quantities are per GPU (the pod's GPUs then differ by their clocks and a little noise).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyai.plan import Plan
from bottleneck_operator_dev.familyai.stepmodel import Stages, Step, cpu_caps, links
from bottleneck_operator_dev.familyai.timeline import DT, Timeline

FloatArray = npt.NDArray[np.float64]
Latents = dict[str, FloatArray]


def gpu_activity(rng: np.random.Generator, plan: Plan, tl: Timeline, st: Stages, sp: Step) -> Latents:
    """Kernel-level activity ratios of each pod's GPUs (P, N), in DCGM's terms."""
    t = sp.T[None, :]
    running = ~(tl.pause | tl.warm)[None, :]
    collective = plan.gpus_per_pod * plan.pods > 1
    tiny = plan.kernels * plan.k_exec * tl.mult["compute"]
    gemm = np.maximum(st["compute"] - tiny, 0.0)
    comm = st["pcie_comm"] + st["nvlink"] + st["net"]
    nccl = comm + (sp.wait if collective else 0.0)
    busy = np.minimum(1.0, (st["compute"] + st["hbm"] + sp.exposed + (sp.wait if collective else 0.0)) / t)
    a_c, a_m, a_t = rng.uniform(0.85, 0.98), rng.uniform(0.7, 0.95), rng.uniform(0.05, 0.3)
    a_n = min(0.35, 24.0 / plan.gpu.sms * rng.uniform(0.7, 1.3))
    tens = rng.uniform(0.2, 0.45) if plan.tf32 else rng.uniform(0.35, 0.8)
    d_c, d_m = rng.uniform(0.1, 0.35), rng.uniform(0.74, 0.88)
    sm = np.minimum(0.99, (gemm * a_c + st["hbm"] * a_m + tiny * a_t + nccl * a_n) / t)
    occ = (gemm * a_c * rng.uniform(0.15, 0.45) + st["hbm"] * a_m * rng.uniform(0.45, 0.9) + tiny * a_t * 0.2) / t
    warm_busy = rng.uniform(0.0, 0.25)
    out: Latents = {
        "busy": np.where(running, busy, tl.warm[None, :] * warm_busy),
        "sm": np.where(running, sm, tl.warm[None, :] * warm_busy * 0.3),
        "occ": np.where(running, np.minimum(occ + nccl / t * a_n * 0.25, 0.95), 0.0),
        "tensor": np.where(running, np.minimum(gemm * tens / t, 0.95), 0.0),
        "dram": np.where(running, np.minimum((gemm * d_c + st["hbm"] * d_m + nccl * 0.1) / t, 0.9), 0.0),
        "fp16": np.where(running, st["hbm"] / t * rng.uniform(0.0, 0.15), 0.0),
        "fp32": np.where(running, (st["hbm"] * rng.uniform(0.02, 0.2) + tiny * 0.1) / t, 0.0),
    }
    out["gr"] = out["busy"] * rng.uniform(0.96, 1.0)
    out["memcopy"] = np.minimum(1.0, out["dram"] * rng.uniform(1.0, 1.3) + 0.02 * out["busy"])
    return full(out, tl.alive.shape)


def gpu_bytes(rng: np.random.Generator, plan: Plan, tl: Timeline, sp: Step) -> Latents:
    """PCIe and NVLink bytes per second of each GPU, each direction (P, N)."""
    lk, g = links(plan), plan.gpus_per_pod
    t = sp.T[None, :]
    running = ~(tl.pause | tl.warm)[None, :] & ~tl.evaluating[None, :]
    ev = tl.evaluating[None, :]
    inter = lk.node_bytes / g / t
    h2d = plan.batch * plan.decoded_bytes / t * ~(tl.pause | tl.warm)[None, :]
    p2p = 0.0 if plan.gpu.nvlink_bw else lk.intra_bytes / t
    hdr = rng.uniform(1.04, 1.1)  # DCGM counts TLP headers
    background = rng.uniform(1e6, 5e7)
    state = 16.0 * plan.grad_bytes / max(plan.comm_factor, 1.0)  # weights and optimizer states
    ckpt = np.minimum(state / 30.0, lk.pcie * 0.5) * tl.pause[None, :]
    cap = lk.pcie * 2 * 0.97 if g >= 2 and plan.gpu.per_node == 8 else lk.pcie * 0.97
    comm_on = np.where(running, 1.0, np.where(ev, 0.03, 0.0))
    rx = np.minimum(cap, (h2d + (p2p + inter) * comm_on) * hdr + background)
    tx = np.minimum(cap, ((p2p + inter) * comm_on + ckpt) * hdr + background * 0.5)
    nv = lk.intra_bytes / t * comm_on if plan.gpu.nvlink_bw else np.zeros_like(rx)
    nv = np.minimum(nv, plan.gpu.nvlink_bw / 2 * 0.97)
    return full(
        {"pcie_rx": rx, "pcie_tx": tx, "nvlink_tx": nv, "nvlink_rx": nv * rng.uniform(0.98, 1.02)}, tl.alive.shape
    )


def power_and_clock(rng: np.random.Generator, plan: Plan, tl: Timeline, act: Latents) -> Latents:
    """Board power and SM clock per pod (P, N), per GPU spread applied later; power capped at the limit."""
    gpu = plan.gpu
    idle = gpu.tdp_w * rng.uniform(0.09, 0.15)
    demand = idle + (gpu.tdp_w * rng.uniform(0.95, 1.15) - idle) * np.minimum(
        1.0, 0.35 * act["sm"] + 0.5 * act["tensor"] + 0.3 * act["dram"]
    )
    capped = demand > plan.power_limit
    scale = np.where(capped, ((plan.power_limit - idle) / np.maximum(demand - idle, 1e-9)) ** 0.7, 1.0)
    return full(
        {
            "power": np.minimum(demand, plan.power_limit * rng.uniform(0.985, 1.0)),
            "clock": gpu.boost_mhz * scale,
            "capped": capped.astype(float),
        },
        tl.alive.shape,
    )


def host(rng: np.random.Generator, plan: Plan, tl: Timeline, st: Stages, sp: Step) -> Latents:
    """The pod's CPU, memory, storage and network activity (P, N)."""
    g, t = plan.gpus_per_pod, sp.T[None, :]
    running = ~(tl.pause | tl.warm)[None, :]
    samples = plan.batch * g / t * running
    reads = samples * plan.stored_bytes * (1 - plan.cache_hit)
    reads = reads + tl.warm[None, :] * rng.uniform(0.2, 1.0) * plan.storage_bw * 0.3  # loading the checkpoint
    caps = cpu_caps(plan, tl)
    cores_cap = np.minimum.reduce(list(caps.values()))
    decode = np.minimum(samples * plan.cpu_s, cores_cap)
    main = g * (1.0 if plan.spin_sync else np.minimum(1.0, st["launch"] / t + 0.15))
    main = main + (tl.warm[None, :] * g * 0.8)
    client = reads / (2e8 if plan.storage.kind == "object-http" else 3e8 if plan.storage.kind == "fuse" else 1e10)
    tcp = 0.0 if plan.fabric is None or plan.fabric.rdma else links(plan).node_bytes / t / 1.5e9
    faults = plan.fault_per_step / t * running
    reclaim = faults * 2e-5
    demand = decode + main + client + tcp + reclaim
    limit = np.inf if plan.cpu_limit is None else plan.cpu_limit
    cores = np.minimum(demand, min(limit, plan.ncpu))
    want = np.maximum(samples * plan.cpu_s, 1e-9)
    io_share = np.clip(st["io"] / t, 0.0, 1.0) * running
    return full(
        {
            "cores": cores,
            "demand_ratio": (np.maximum(decode, np.minimum(want, plan.workers)) + main + client + tcp) / limit
            if plan.cpu_limit is not None
            else np.zeros_like(t * cores),
            "decode": decode,
            "main": main + 0 * cores,
            "tcp": tcp + 0 * cores,
            "reclaim": reclaim,
            "reads": reads,
            "io_share": io_share,
            "faults": faults,
            "samples": samples,
            "mem_stall": np.clip(st["host_mem"] / t, 0.0, 1.0) * running,
            "cpu_wait": np.clip((want - decode) / np.maximum(want, 1e-9), 0.0, 1.0) * running,
        },
        tl.alive.shape,
    )


def full(latents: Latents, shape: tuple[int, ...]) -> Latents:
    """Every latent broadcast to the pods-by-time shape, as float arrays of its own."""
    return {k: np.broadcast_to(np.asarray(v, dtype=float), shape).copy() for k, v in latents.items()}


def integrate(rate: FloatArray) -> FloatArray:
    """A counter's value on the latent grid from its per-second rate (trapezoids)."""
    steps = (rate[..., 1:] + rate[..., :-1]) * (DT / 2)
    out: FloatArray = np.concatenate([np.zeros_like(rate[..., :1]), np.cumsum(steps, axis=-1)], axis=-1)
    return out
