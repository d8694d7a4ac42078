"""From activity to what the kernel and the pod's cgroup count: CPU modes, pressure, bytes, faults.

Rates per second and levels on the latent grid (P, N), for one pod's cgroup and for its node
(where neighbours add their share). Kernel semantics follow TELEMETRY.md: block reads only in the
block counters, NFS over the node's interfaces, HTTP object reads in the pod's own network
namespace without iowait, RDMA on InfiniBand port counters only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyai.accounting import Latents, full
from bottleneck_operator_dev.familyai.plan import Plan
from bottleneck_operator_dev.familyai.stepmodel import Step, links
from bottleneck_operator_dev.familyai.timeline import Timeline, ar1

FloatArray = npt.NDArray[np.float64]
GiB = 2.0**30


def comm_share(tl: Timeline) -> FloatArray:
    """How much of a training step's collective traffic flows at each time (N,): none while paused."""
    out: FloatArray = np.where(tl.evaluating, 0.03, 1.0) * ~(tl.pause | tl.warm)
    return out[None, :]


def pod_view(rng: np.random.Generator, plan: Plan, tl: Timeline, h: Latents, sp: Step) -> Latents:
    """The pod cgroup's counters and gauges (rates per second, ratios, bytes, process counts)."""
    kind = plan.storage.kind
    noise = np.exp(0.05 * ar1(rng, h["cores"].shape, 30.0))
    thr = np.zeros_like(h["cores"])
    if plan.cpu_limit is not None:
        thr = np.clip((h["demand_ratio"] - 0.6) / 0.4, 0.0, 1.0) ** 1.5 * 0.97
    used = (h["cores"] + tl.neigh_cpu * plan.ncpu) / plan.ncpu
    contention = np.clip((used - 0.85) / 0.15, 0.0, 1.0)
    io_some = np.clip(h["io_share"] * (rng.uniform(0.85, 1.0) if plan.storage.iowait else 0.05), 0.0, 1.0)
    mem_some = np.clip(h["mem_stall"] * rng.uniform(1.0, 1.2), 0.0, 1.0)
    swapin = h["faults"] * rng.uniform(0.6, 0.95) if plan.swap else np.zeros_like(thr)
    block = h["reads"] if plan.storage.block else np.zeros_like(thr)
    in_pod_net = kind in ("object-http", "fuse")
    t = sp.T[None, :]
    over_tcp = plan.fabric is not None and not plan.fabric.rdma
    tcp: FloatArray = (links(plan).node_bytes if over_tcp else 0.0) / t * comm_share(tl)
    background = rng.uniform(2e4, 2e6)
    state = 16.0 * plan.grad_bytes * plan.gpus_per_pod / max(plan.comm_factor, 1.0)
    ckpt = tl.pause[None, :] * (min(state / 60.0, plan.nic_bw * 0.5) if in_pod_net else 0.0)
    ws_target = plan.host_ws if plan.mem_limit is None else min(plan.host_ws, plan.mem_limit * 0.985)
    cache = min(plan.stored_bytes * 2e4, 20 * GiB) * rng.uniform(0.0, 1.0)
    workers = float(plan.workers)
    per_worker = h["decode"] / max(workers, 1.0)
    return full(
        {
            "cpu": np.minimum(h["cores"] * noise, min(plan.cpu_limit or np.inf, float(plan.ncpu))),
            "throttled": thr,
            "psi_cpu_some": np.clip(0.85 * thr + 0.8 * contention * (h["cpu_wait"] + 0.2), 0.0, 1.0),
            "psi_io_some": io_some,
            "psi_io_full": io_some * h["io_share"] * rng.uniform(0.4, 0.8),
            "psi_mem_some": mem_some,
            "psi_mem_full": mem_some * rng.uniform(0.3, 0.7),
            "io_read": block + swapin * 4096.0 * (0.0 if plan.fault_latency < 8e-5 else 1.0),
            "majfault": h["faults"] + rng.uniform(0.0, 3.0),
            "swapin": swapin,
            "net_rx": h["reads"] * (1.03 if in_pod_net else 0.0) + tcp + background,
            "net_tx": tcp + ckpt + background * 0.5,
            "ws": np.minimum((ws_target + cache) * np.exp(0.01 * ar1(rng, thr.shape, 120.0)), plan.mem_limit or np.inf),
            "procs_running": np.round(h["decode"] + np.minimum(h["main"], plan.gpus_per_pod)),
            "procs_iowait": np.round(
                workers * h["io_share"] * (1.0 if plan.storage.dstate else 0.0) * rng.uniform(0.5, 1.0)
            ),
            "procs_busy": (per_worker >= 0.9) * workers + (h["main"] >= 0.9 * plan.gpus_per_pod) * plan.gpus_per_pod,
        },
        tl.alive.shape,
    )


def node_view(rng: np.random.Generator, plan: Plan, tl: Timeline, h: Latents, pod: Latents, sp: Step) -> Latents:
    """The node's counters and gauges, the pod's share plus its neighbours' and the system's."""
    n = plan.ncpu
    sys_base = rng.uniform(0.3, 1.5)
    nfs = h["reads"] if plan.storage.kind == "nfs" else 0.0
    system = 0.1 * h["cores"] + h["tcp"] + h["reclaim"] + nfs / 2e9 + 0.15 * sys_base
    busy = np.minimum(h["cores"] + tl.neigh_cpu * n + sys_base, n * 0.995)
    idle = n - busy
    waiting = plan.workers * h["io_share"] * rng.uniform(0.5, 1.0) if plan.storage.iowait else 0.0 * busy
    iowait = np.minimum(idle * 0.95, waiting)
    neigh_disk = (max(plan.neighbours) > 0) * tl.neigh_io * rng.uniform(0.0, 3e8)
    disk = pod["io_read"] + neigh_disk
    device = plan.storage_bw if plan.storage.kind == "cloud-block" else plan.storage.high
    node_rx = pod["net_rx"] + nfs * 1.03 + tl.neigh_net + rng.uniform(1e5, 5e6)
    node_tx = pod["net_tx"] + tl.neigh_net * rng.uniform(0.3, 1.0) + rng.uniform(1e5, 5e6)
    ib = 0.0 * busy
    if plan.rdma_hw:
        rdma = plan.fabric is not None and plan.fabric.rdma
        ib = (links(plan).node_bytes if rdma else 0.0) / sp.T[None, :] * comm_share(tl)
        ib = ib + (max(plan.neighbours) > 0) * tl.neigh_io * rng.uniform(0.0, 2e9)
    neigh_mem = sum(plan.neighbours) / max(plan.pods, 1) * rng.uniform(2.0, 40.0) * GiB
    used_cpu = busy / n
    return full(
        {
            "busy": busy,
            "system": np.minimum(system, busy),
            "iowait": iowait,
            "idle": n - busy - iowait,
            "disk": disk,
            "disk_ops": disk / rng.uniform(64e3, 1.05e6),
            "disk_busy": np.clip(disk / device * rng.uniform(1.0, 1.5), 0.0, 1.0),
            "mem_avail": np.clip(1 - (pod["ws"] + neigh_mem) / plan.node_mem - rng.uniform(0.02, 0.06), 0.005, 1.0),
            "swap_used": (rng.uniform(0.01, 0.1) + 0.5 * pod["psi_mem_some"]) * np.ones_like(busy)
            if plan.swap
            else 0 * busy,
            "majfault": pod["majfault"] + rng.uniform(0.0, 20.0),
            "net_rx": node_rx,
            "net_tx": node_tx,
            "ib_rx": ib,
            "ib_tx": ib * rng.uniform(0.97, 1.03),
            "psi_cpu_some": np.clip(3 * np.clip(used_cpu - 0.75, 0, 0.25) + 0.5 * pod["psi_cpu_some"], 0.0, 1.0),
            "psi_io_some": np.clip(pod["psi_io_some"] + 0.05 * tl.neigh_io, 0.0, 1.0),
            "psi_io_full": pod["psi_io_full"] * rng.uniform(0.5, 1.0),
            "psi_mem_some": pod["psi_mem_some"] * rng.uniform(0.5, 1.0),
            "psi_mem_full": pod["psi_mem_full"] * rng.uniform(0.3, 1.0),
        },
        tl.alive.shape,
    )
