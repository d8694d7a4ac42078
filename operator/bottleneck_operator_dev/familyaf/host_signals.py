"""The host's steady signals (cAdvisor, kube-state-metrics, node-exporter, the collector).

From a Job's stage times over a step of ``T`` seconds:

- storage: the read stage runs at what the node gets from its storage; block devices show in
  diskstats, cAdvisor's ``fs`` reads and the pod's ``io.stat``; network storage arrives as network
  receive bytes (NFS in the host's namespace, object stores and FUSE in the pod's); blocking readers
  sit in D state with iowait and io pressure, HTTP readers do not; memory-mapped data reads by
  major faults (IO, not memory pressure);
- CPU: decoding uses the cores its budget allows; a CPU limit shows as CFS throttling and the
  pod's CPU pressure, a busy node as node-wide CPU pressure and runnable processes, too few
  workers as a few processes each at a full core on an otherwise idle node;
- memory: reclaim stalls are swap-ins at the swap device's latency, with memory pressure on the
  pod (and on the node, whose PSI counts every task), and kernel time for the swap work;
- network: a TCP fabric's all-reduce shows in netdev (node and pod); an RDMA fabric's only in the
  infiniband collector's port counters.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyaf.cluster import Cluster
from bottleneck_operator_dev.familyaf.gpu_signals import fabric_bytes
from bottleneck_operator_dev.familyaf.hardware import PAGE
from bottleneck_operator_dev.familyaf.timeline import Level, level, varying
from bottleneck_operator_dev.familyaf.workload import CpuBudget

FloatArray = npt.NDArray[np.float64]
GIB = 2.0**30


def _storage(cl: Cluster, t: Mapping[str, FloatArray], step: float, rng: np.random.Generator) -> dict[str, Level]:
    """Reads, disk activity, io pressure, D-state readers."""
    p, st = cl.pods, cl.storage
    busy = np.clip(t["read"] / step, 0, 1)
    bps = busy * cl.storage_bps * rng.uniform(0.85, 0.97)
    local = bps if st.local else np.zeros(p)
    neigh_disk = rng.uniform(0, 2e8) * cl.neighbours
    request = rng.uniform(8e3, 6.4e4) if st.key == "memmap-nvme" else rng.uniform(6.4e4, 5.12e5)
    swap_disk = t["reclaim"] / step / rng.uniform(6e-5, 2e-4) * PAGE if cl.swap == "disk" else np.zeros(p)
    disk = local + swap_disk
    io_some = busy * rng.uniform(0.8, 1.05) if st.blocking else np.full(p, rng.uniform(0, 0.03))
    io_some = np.clip(io_some, 0, 1)
    io_full = io_some * rng.uniform(0.3, 0.8)
    waiting = cl.workers * busy * rng.uniform(0.4, 1.0) if st.blocking else np.zeros(p)
    iowait = busy * rng.uniform(0.02, 0.15) if st.blocking else np.full(p, rng.uniform(0, 0.01))
    os_busy = rng.uniform(0.005, 0.05)
    neigh_io = rng.uniform(0, 0.2) if cl.neighbours else 0.0
    return {
        "node_disk_read_bps": varying("rate", disk, 0.0, disk * 0.5, neigh_disk),
        "node_disk_reads_ps": varying("rate", disk / request, 0.0, disk / request * 0.5, neigh_disk / request),
        "node_disk_busy_frac": varying(
            "ratio", np.maximum(busy if st.local else np.zeros(p), os_busy), os_busy, None, 0.1
        ),
        "fs_read_bps": varying("rate", local * rng.uniform(0.95, 1.0), 0.0, local * 0.5),
        "sc_io_read_bps": varying("rate", local * rng.uniform(0.95, 1.0), 0.0, local * 0.5),
        "sc_psi_io_some": varying("ratio", io_some, 0.01, io_some * 0.5),
        "sc_psi_io_full": varying("ratio", io_full, 0.005, io_full * 0.5),
        "node_psi_io_some": varying("ratio", io_some, 0.01, io_some * 0.5, neigh_io),
        "node_psi_io_full": varying("ratio", io_full * 0.7, 0.005, io_full * 0.3, neigh_io * 0.3),
        "node_cpu_iowait_frac": varying("ratio", iowait, 0.002, iowait * 0.5, neigh_io * 0.05),
        "sc_procs_iowait": varying("rate", waiting + 0.5 * swap_disk / PAGE / 2e4, 0.0, waiting * 0.5),
    }


def _memory(cl: Cluster, t: Mapping[str, FloatArray], step: float, rng: np.random.Generator) -> dict[str, Level]:
    """Working set, limits, swap, major faults and memory pressure."""
    p = cl.pods
    stall = np.clip(t["reclaim"] / step, 0, 1)
    latency = rng.uniform(8e-6, 2.5e-5) if cl.swap == "zram" else rng.uniform(6e-5, 2e-4)
    swapin = stall / latency if cl.swap != "none" else np.zeros(p)
    memmap = cl.storage.key == "memmap-nvme"
    file_faults = np.clip(t["read"] / step, 0, 1) * cl.storage_bps / rng.uniform(1.6e4, 1.28e5) if memmap else 0.0
    faults = swapin + file_faults + rng.uniform(0, 20)
    pressured = bool(stall.max() > 0.05)
    cgroup = pressured and cl.mem_limit_gib is not None
    limit = cl.mem_limit_gib * GIB if cl.mem_limit_gib is not None else float("nan")
    ram = cl.ram_gib * GIB
    if cgroup:
        ws = limit * rng.uniform(0.97, 0.995, p)
    elif pressured:
        ws = ram * rng.uniform(0.7, 0.9, p)
    else:
        ws = min(ram * 0.6, limit * 0.9 if cl.mem_limit_gib else ram) * rng.uniform(0.2, 0.9, p)
    avail = rng.uniform(0.005, 0.05, p) if pressured and not cgroup else rng.uniform(0.3, 0.85, p)
    swap_used = 0.0 if cl.swap == "none" else (rng.uniform(0.2, 0.9) if pressured else rng.uniform(0, 0.05))
    some = np.clip(stall * rng.uniform(0.9, 1.2), 0, 1)
    full = some * rng.uniform(0.4, 0.85)
    return {
        "mem_working_set_bytes": level(ws, p),
        "mem_limit_bytes": level(limit, p),
        "node_mem_avail_frac": level(avail, p),
        "node_swap_used_frac": level(swap_used, p),
        "node_majfault_ps": varying("rate", faults, 5.0, faults * 0.5, rng.uniform(0, 50) * cl.neighbours),
        "sc_majfault_ps": varying("rate", faults, 2.0, faults * 0.5),
        "sc_swapin_ps": varying("rate", swapin, 0.0, swapin * 0.5),
        "sc_oom_kills": varying("rate", np.zeros(p), 0.0, 0.0),
        "sc_psi_mem_some": varying("ratio", some, 0.0, some * 0.5),
        "sc_psi_mem_full": varying("ratio", full, 0.0, full * 0.5),
        "node_psi_mem_some": varying("ratio", some, 0.0, some * 0.5, rng.uniform(0, 0.02) * cl.neighbours),
        "node_psi_mem_full": varying("ratio", full * 0.8, 0.0, full * 0.4),
    }


def _cpu_use(
    cl: Cluster, t: Mapping[str, FloatArray], step: float, budget: CpuBudget, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cores the pod uses, the cores it asks for, and the kernel's share for swap and TCP."""
    decode = np.clip(t["decode"] / step, 0, 1) * budget.cores
    main = budget.main * np.clip(0.55 + t["issue"] / step, 0, 1) * rng.uniform(0.9, 1.0)
    reader = np.clip(t["read"] / step, 0, 1) * cl.storage_bps / 3e8 if cl.storage.key == "object-store" else 0.0
    reclaim = np.clip(t["reclaim"] / step, 0, 1) * rng.uniform(0.5, 2.0)
    proxy = 0.3 * cl.gpus * np.clip(t["net"] / step, 0, 1) if cl.pods > 1 else 0.0
    used = decode + main + reader + reclaim + proxy
    wanted = used.copy()
    if budget.mechanism is not Mechanism.TOO_FEW_WORKERS:
        wanted = used + np.clip(t["decode"] / step, 0, 1) * max(cl.workers - budget.cores, 0) * 0.8
    if cl.cpu_limit is not None:
        used = np.minimum(used, cl.cpu_limit * rng.uniform(0.93, 0.99))
    tcp = fabric_bytes(cl, t) / step if cl.fabric is not None and not cl.fabric.rdma else np.zeros(cl.pods)
    kernel = reclaim + tcp / 1.25e9 * 0.5
    return np.asarray(used), np.asarray(wanted), np.asarray(kernel)


def _cpu(
    cl: Cluster, t: Mapping[str, FloatArray], step: float, budget: CpuBudget, rng: np.random.Generator
) -> dict[str, Level]:
    """CPU use, throttling, pressure and process states."""
    p, cores = cl.pods, float(cl.node_cores)
    used, wanted, kernel = _cpu_use(cl, t, step, budget, rng)
    over = wanted / max(used.min(), 1e-3)
    throttled = np.zeros(p)
    if cl.cpu_limit is not None:
        ratio = wanted / cl.cpu_limit
        throttled = np.clip((ratio - 0.6) / 0.5, 0, 1) * rng.uniform(0.85, 1.0) + rng.uniform(0, 0.03)
    saturated = budget.mechanism is Mechanism.SATURATED
    node_busy = (used + cl.neigh_cores * (1.0 if saturated else 0.8)) / cores
    node_psi = np.clip((node_busy - 0.85) * 4, 0, 0.9) + rng.uniform(0.002, 0.03)
    pod_psi = np.clip(throttled * rng.uniform(0.5, 0.9) + (node_psi if saturated else 0.0), 0, 1)
    pod_psi = np.maximum(pod_psi, rng.uniform(0.005, 0.05))
    few = budget.mechanism is Mechanism.TOO_FEW_WORKERS
    loaded = np.clip(t["decode"] / step, 0, 1)
    busy_procs = (min(cl.workers, budget.cores) * loaded if few and cl.workers else 0.0) + budget.main * (
        t["issue"] / step > 0.8
    )
    running = np.maximum(used * rng.uniform(0.8, 1.0), np.minimum(wanted * np.minimum(over, 3.0), cl.workers + 8))
    ckpt_cores = cl.gpus * rng.uniform(0.5, 1.5)
    return {
        "cpu_cores": varying("rate", used, ckpt_cores, used * 0.7),
        "sc_cpu_cores": varying("rate", used + 0.02, ckpt_cores + 0.02, used * 0.7),
        "cpu_throttled_frac": varying("ratio", throttled, 0.01, throttled * 0.7),
        "sc_throttled_frac": varying("ratio", throttled, 0.01, throttled * 0.7),
        "sc_psi_cpu_some": varying("ratio", pod_psi, 0.01, pod_psi * 0.7),
        "node_psi_cpu_some": varying("ratio", node_psi, 0.01, node_psi * 0.7, 0.0),
        "node_cpu_busy_frac": varying("ratio", node_busy, (ckpt_cores + cl.neigh_cores) / cores, node_busy * 0.8),
        "node_cpu_system_frac": varying("ratio", kernel / cores + rng.uniform(0.01, 0.03), 0.015, None),
        "node_cpus": level(cores, p),
        "cpu_limit_cores": level(cl.cpu_limit if cl.cpu_limit is not None else float("nan"), p),
        "sc_procs_running": varying("rate", running, ckpt_cores, running * 0.7),
        "sc_procs_busy": varying("rate", np.asarray(busy_procs, dtype=np.float64) * np.ones(p), 1.0, None),
    }


def _network(cl: Cluster, t: Mapping[str, FloatArray], step: float, rng: np.random.Generator) -> dict[str, Level]:
    """Netdev bytes (node and pod), InfiniBand/RoCE port bytes."""
    p, st = cl.pods, cl.storage
    fab = fabric_bytes(cl, t) / step
    rdma = cl.fabric is not None and cl.fabric.rdma
    tcp_fab = np.zeros(p) if rdma else fab
    ib = fab if rdma else np.zeros(p)
    reads = np.clip(t["read"] / step, 0, 1) * cl.storage_bps * rng.uniform(0.85, 0.97)
    remote = np.zeros(p) if st.local else reads * rng.uniform(1.02, 1.08)
    pod_remote = np.zeros(p) if st.local or st.kernel_client else remote
    upload = rng.uniform(2e8, 2e9) if rng.random() < 0.6 else 0.0
    neigh = rng.uniform(1e6, 5e7) * cl.neighbours
    base = rng.uniform(2e5, 5e6)
    return {
        "node_net_rx_bps": varying("rate", remote + tcp_fab + base, base, remote * 0.5 + base, neigh),
        "node_net_tx_bps": varying("rate", tcp_fab + base + remote * 0.02, upload + base, base, neigh * 0.5),
        "sc_net_rx_bps": varying("rate", pod_remote + tcp_fab + base / 4, base / 4, pod_remote * 0.5),
        "sc_net_tx_bps": varying("rate", tcp_fab + pod_remote * 0.02 + base / 4, upload, base / 4),
        "ib_rx_bps": varying("rate", ib, 0.0, ib * 0.02, rng.uniform(0, 1e8) * cl.neighbours if rdma else 0.0),
        "ib_tx_bps": varying("rate", ib, 0.0, ib * 0.02, rng.uniform(0, 1e8) * cl.neighbours if rdma else 0.0),
    }


def host_levels(
    cl: Cluster, t: Mapping[str, FloatArray], step: float, budget: CpuBudget, rng: np.random.Generator
) -> dict[str, Level]:
    """Every host signal's steady levels for one Job."""
    return {
        **_storage(cl, t, step, rng),
        **_memory(cl, t, step, rng),
        **_cpu(cl, t, step, budget, rng),
        **_network(cl, t, step, rng),
    }
