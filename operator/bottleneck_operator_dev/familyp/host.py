"""What the pod's cgroup and its node would show: CPU, storage, memory, network, pressure.

Pressure follows the kernel's PSI definition (Documentation/accounting/psi.rst): "some" is the share
of time at least one task waits on the resource, "full" the share when all non-idle tasks do. Host
memory pressure shows as swap-in and reclaim (refaults are major faults) with memory stalls, and the
kernel's reclaim work shows as system CPU; reads from NFS and object stores cross the NIC, not a disk
(object-store readers sleep in sockets: no iowait); RDMA traffic only shows on the InfiniBand ports.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyp.fleet import GIB
from bottleneck_operator_dev.familyp.timeline import Timeline
from bottleneck_operator_dev.familyp.workloads import Plan

FloatArray = np.ndarray
PAGE = 4096.0


def _cores(plan: Plan) -> float:
    """Cores the loader workers can actually run on."""
    share = plan.pool.cpus * plan.gpus / plan.pool.gpus
    avail = plan.cpu_limit - 0.8 * plan.gpus if plan.cpu_limit is not None else share * 1.3
    return float(max(0.5, min(plan.workers, avail)))


def _cpu(rng: np.random.Generator, plan: Plan, tl: Timeline) -> dict[str, FloatArray]:
    main = plan.gpus * rng.uniform(0.9, 1.3) * np.minimum(1.0, tl.active + 0.15)
    loader = tl.decode * _cores(plan)
    reader = tl.read * plan.storage_bps / plan.pods_per_node / 1.2e9 if plan.storage == "object" else 0.0 * tl.read
    reclaim = tl.swap * rng.uniform(0.5, 1.5)
    cores = main + loader + reader + reclaim
    limit = plan.cpu_limit
    if limit is not None:
        cores = np.minimum(cores, limit)
        near = np.clip((cores / limit - 0.8) / 0.2, 0, 1)
        throttled = np.clip(near * rng.uniform(0.6, 0.97) + rng.uniform(0, 0.04), 0, 1)
    else:
        throttled = np.full_like(cores, np.nan)
    # Runnable workers wait for a CPU only when there are more of them than cores to run on.
    total = plan.cpu_limit if plan.cpu_limit is not None else plan.pool.cpus * plan.gpus / plan.pool.gpus * 1.3
    crowded = max(0.0, 1.0 - total / (plan.workers + plan.gpus))
    waiting = np.clip(tl.decode * (crowded + rng.uniform(0.0, 0.08)), 0, 1)
    if plan.mechanism == "throttled":
        waiting = np.clip(waiting + tl.decode * rng.uniform(0.4, 0.8), 0, 1)
    busy_workers = np.where(tl.decode > 0.85, min(plan.workers, _cores(plan)), 0.0)
    return {
        "cpu_cores": cores,
        "sc_cpu_cores": cores + 0.02,
        "cpu_throttled_frac": throttled,
        "sc_throttled_frac": throttled,
        "sc_psi_cpu_some": np.clip(waiting + rng.uniform(0.0, 0.03), 0, 1),
        "sc_procs_running": np.round(plan.gpus * tl.active + tl.decode * plan.workers),
        "sc_procs_busy": np.round(plan.gpus * np.minimum(tl.active, 1.0) + busy_workers),
    }


def _storage(rng: np.random.Generator, plan: Plan, tl: Timeline) -> dict[str, FloatArray]:
    rate = tl.read * plan.storage_bps / plan.pods_per_node
    block = rate if plan.storage in ("nvme", "block") else 0.0 * rate
    waits = plan.storage in ("nvme", "block", "nfs")
    io_some = np.clip(tl.read * rng.uniform(0.6, 1.0), 0, 1) if waits else 0.0 * rate
    swapin = tl.swap * rng.uniform(2e4, 9e4) * plan.swap_pages
    refault = tl.swap * rng.uniform(5e3, 4e4) * (1.0 - plan.swap_pages)
    mmap = rate / rng.uniform(6e4, 2.5e5) if "mmap-dataset" in plan.tags else 0.0 * rate
    mem_some = np.clip(tl.swap * rng.uniform(1.0, 1.3) + rng.uniform(0, 0.01), 0, 1)
    return {
        "fs_read_bps": block + swapin * PAGE,
        "sc_io_read_bps": block + swapin * PAGE,
        "sc_psi_io_some": np.clip(io_some + tl.swap * 0.3, 0, 1),
        "sc_psi_io_full": np.clip(io_some * rng.uniform(0.3, 0.8), 0, 1),
        "sc_procs_iowait": np.round(np.minimum(tl.read, 1.0) * plan.workers * 0.6) if waits else 0.0 * rate,
        "sc_psi_mem_some": mem_some,
        "sc_psi_mem_full": mem_some * rng.uniform(0.4, 0.8),
        "sc_swapin_ps": swapin,
        "sc_majfault_ps": swapin * rng.uniform(1.0, 1.2) + refault + mmap + rng.uniform(0, 3),
        "net_read_bps": 0.0 * rate if plan.storage in ("nvme", "block") else rate,
    }


def _memory(rng: np.random.Generator, plan: Plan, tl: Timeline) -> dict[str, FloatArray]:
    pods, n = tl.active.shape
    limit = plan.mem_limit_gib * GIB if plan.mem_limit_gib is not None else np.nan
    if plan.mechanism == "host-memory-pressure" and plan.mem_limit_gib is not None:
        ws = limit * rng.uniform(0.96, 0.995)
    else:
        cap = plan.mem_limit_gib if plan.mem_limit_gib is not None else plan.pool.mem_gib / plan.pods_per_node
        ws = cap * GIB * rng.uniform(0.2, 0.85)
    grow = 1.0 + np.linspace(0, rng.uniform(0.0, 0.03), n)
    kills = (tl.swap > 0.2) * (rng.random((pods, n)) < 0.004) / 5.0
    return {
        "mem_working_set_bytes": np.minimum(ws * grow * np.ones((pods, 1)), limit if np.isfinite(limit) else np.inf),
        "mem_limit_bytes": np.full((pods, n), limit),
        "sc_oom_kills": kills,
    }


def pod_truth(rng: np.random.Generator, plan: Plan, tl: Timeline) -> dict[str, FloatArray]:
    """The pod's own cgroup signals (cAdvisor, kube-state-metrics, the sidecar), per pod and instant."""
    sig = _cpu(rng, plan, tl)
    sig.update(_storage(rng, plan, tl))
    sig.update(_memory(rng, plan, tl))
    pods, n = tl.active.shape
    if plan.cpu_limit is not None:
        sig["cpu_limit_cores"] = np.full((pods, n), plan.cpu_limit)
    return sig


def node_truth(rng: np.random.Generator, plan: Plan, tl: Timeline, pod: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """The pod's node as node-exporter reads it: the job's pods on the node plus its neighbours."""
    pods, n = tl.active.shape
    node_of = np.arange(pods) // plan.pods_per_node

    def on_node(x: FloatArray) -> FloatArray:
        return np.stack([x[node_of == node_of[p]].sum(axis=0) for p in range(pods)])

    cpus = float(plan.pool.cpus)
    noisy = min(plan.neighbours, 3) * rng.uniform(0.0, 0.4, (pods, 1))
    # A neighbour that hogs memory stalls the node, not this pod's cgroup.
    hog = noisy * rng.uniform(0.1, 0.6) if "memory-hog-neighbour" in plan.tags else 0.0 * noisy
    swap_node = plan.swap_pages > 0.5
    mem_pressed = plan.mechanism == "host-memory-pressure" and plan.mem_limit_gib is None
    comm_net = tl.comm_total * plan.pool.fabric_bps / plan.pool.gpus * plan.gpus * rng.uniform(0.7, 0.9)
    multi = plan.pods > plan.pods_per_node
    ib = on_node(comm_net) if multi and plan.pool.fabric != "tcp" else np.zeros((pods, n))
    tcp = on_node(comm_net) if multi and plan.pool.fabric == "tcp" else np.zeros((pods, n))
    disk = on_node(pod["fs_read_bps"]) + noisy * rng.uniform(0, 3e8)
    io_some = on_node(pod["sc_psi_io_some"]) / plan.pods_per_node
    return {
        "node_cpus": np.full((pods, n), cpus),
        "node_cpu_busy_frac": np.clip((on_node(pod["cpu_cores"]) + noisy * cpus * 0.3) / cpus, 0, 1),
        "node_cpu_iowait_frac": np.clip(on_node(pod["sc_procs_iowait"]) / cpus * rng.uniform(0.3, 1.0), 0, 1),
        "node_cpu_system_frac": np.clip(0.02 + on_node(tl.swap) * 0.8 / cpus + rng.uniform(0, 0.03), 0, 1),
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": disk / rng.uniform(6.4e4, 1e6),
        "node_disk_busy_frac": np.clip(disk / plan.pool.nvme_bps * rng.uniform(0.5, 1.2), 0, 1),
        "node_mem_avail_frac": np.full(
            (pods, n),
            rng.uniform(0.01, 0.06) if mem_pressed or "memory-hog-neighbour" in plan.tags else rng.uniform(0.25, 0.9),
        ),
        "node_swap_used_frac": np.full((pods, n), rng.uniform(0.3, 0.9) if swap_node and mem_pressed else 0.0),
        "node_majfault_ps": on_node(pod["sc_majfault_ps"]) + noisy * rng.uniform(0, 200),
        "node_net_rx_bps": on_node(pod["net_read_bps"]) + tcp + noisy * rng.uniform(1e6, 5e8) + 2e5,
        "node_net_tx_bps": tcp + noisy * rng.uniform(1e6, 3e8) + 1e5,
        "node_psi_cpu_some": np.clip(on_node(pod["sc_psi_cpu_some"]) / plan.pods_per_node + noisy * 0.1, 0, 1),
        "node_psi_io_some": np.clip(io_some + noisy * 0.05, 0, 1),
        "node_psi_io_full": np.clip(io_some * rng.uniform(0.2, 0.6), 0, 1),
        "node_psi_mem_some": np.clip(on_node(pod["sc_psi_mem_some"]) / plan.pods_per_node + hog, 0, 1),
        "node_psi_mem_full": np.clip(on_node(pod["sc_psi_mem_full"]) / plan.pods_per_node + hog * 0.5, 0, 1),
        "ib_rx_bps": ib,
        "ib_tx_bps": ib * rng.uniform(0.98, 1.02),
    }
