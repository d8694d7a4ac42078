"""What cAdvisor, kube-state-metrics, the collector and node-exporter would read around a pod.

The pod's own cgroup carries its processes' CPU time (capped by its CFS quota), its block reads,
its refaults and its pressure; the node carries the pod plus its neighbours. Kernel facts used:
RDMA traffic (InfiniBand, RoCE) bypasses netdev counters; readers of HTTP object stores sleep in
socket receive (no iowait, no D state); FUSE and NFS readers wait in D state with iowait and show
their bytes as network receive; memory-mapped datasets read through major faults.
"""

from __future__ import annotations

from bottleneck_operator_dev.familyaj.fleet import Neighbours, Placement
from bottleneck_operator_dev.familyaj.gpu_truth import comm_bytes
from bottleneck_operator_dev.familyaj.stepmodel import Stages
from bottleneck_operator_dev.familyaj.workload import GIB, Workload


def _clip(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return min(max(x, lo), hi)


def _pressure(
    w: Workload, st: Stages, T: float, cpu_short: bool, waits_in_d: bool
) -> tuple[float, float, float, float]:
    """The pod cgroup's CPU some, I/O some and full, and memory some pressure over one step."""
    input_share = _clip(max(st.cpu, st.read) / T)
    cpu_some = 0.03 + (0.55 * input_share + 0.2 if cpu_short else 0.04 * input_share)
    io_some = _clip(st.read / T * 1.2) * (0.95 if waits_in_d else 0.03)
    io_full = io_some * (0.6 if st.read >= 0.8 * T else 0.15)
    mem_some = _clip(st.memstall / T * 1.15 + (0.01 if w.mem_limit_gib else 0.0))
    return _clip(cpu_some), io_some, io_full, mem_some


def pod_levels(w: Workload, pl: Placement, st: Stages, step: float) -> dict[str, float]:
    """Levels of the pod's own signals (cAdvisor, kube-state-metrics, collector) over one step."""
    g, T, storage = pl.gpus_per_pod, step, pl.storage
    read_bps = w.batch * g * (1 - w.cache_hit) * w.read_bytes / T
    serial = st.serial_input
    main = min(1.0, (st.launch + st.fixed + 0.04 * T + (st.cpu + st.read * 0.2 if serial else 0.0)) / T)
    work_cores = st.cpu * st.cpu_cores / T if not serial else 0.0
    _, inter_b = comm_bytes(w, pl)
    tcp_comm = inter_b * g / T if pl.kind.fabric == "tcp" else 0.0
    refaults = w.thrash_bytes / 4096.0 / T
    system = tcp_comm / 5e9 + refaults * 2e-6 + (0.15 * read_bps / 1e9 if storage.reader == "fuse" else 0.0)
    demand = g * main + work_cores + system + w.offload_bytes / T / 2e9
    cores = min(demand, w.cpu_limit) if w.cpu_limit else demand
    limit_bound = st.cpu_bound_by == "limit" and st.cpu / T > 0.5
    if w.cpu_limit:
        throttled = (
            0.6 + 0.35 * _clip(st.cpu / T) if limit_bound else _clip((cores / w.cpu_limit - 0.45) * 1.1, 0.0, 0.6)
        )
    else:
        throttled = 0.0
    node_bound = st.cpu_bound_by == "node" and st.cpu / T > 0.5
    waits_in_d = storage.reader in ("posix", "fuse", "mmap")
    read_wait = _clip(st.read / T * 1.2)
    cpu_some, io_some, io_full, mem_some = _pressure(w, st, T, limit_bound or node_bound, waits_in_d)
    workers = max(w.workers, 1) * g
    per_worker = work_cores / workers if workers else 0.0
    ws = min(w.rss_gib, 0.985 * w.mem_limit_gib if w.mem_limit_gib else w.rss_gib) * GIB
    local = read_bps if storage.local else 0.0
    tcp_storage = read_bps if (not storage.local and storage.transport == "tcp") else 0.0
    return {
        "cpu_cores": cores,
        "sc_cpu_cores": cores + 0.02,
        "cpu_throttled_frac": throttled,
        "sc_throttled_frac": throttled,
        "cpu_limit_cores": w.cpu_limit or 0.0,
        "mem_working_set_bytes": ws,
        "mem_limit_bytes": (w.mem_limit_gib or 0.0) * GIB,
        "fs_read_bps": local,
        "sc_io_read_bps": local,
        "sc_psi_cpu_some": cpu_some,
        "sc_psi_io_some": io_some,
        "sc_psi_io_full": io_full,
        "sc_psi_mem_some": mem_some,
        "sc_psi_mem_full": mem_some * 0.7,
        "sc_majfault_ps": refaults + (local / 32768.0 if storage.reader == "mmap" else 0.0) + 0.5,
        "sc_swapin_ps": refaults * 0.9 if pl.kind.swap else 0.0,
        "sc_oom_kills": (1.0 / 1800.0) if (w.thrash_bytes > 0 and not pl.kind.swap and w.mem_limit_gib) else 0.0,
        "sc_procs_running": min(cores + (2.0 if (limit_bound or node_bound) else 0.0), g * (1 + max(w.workers, 0))),
        "sc_procs_iowait": workers * read_wait * (0.8 if waits_in_d else 0.0),
        "sc_procs_busy": g * float(main > 0.9) + (workers if per_worker > 0.9 else 0.0),
        "sc_net_rx_bps": tcp_storage + tcp_comm + 2e5,
        "sc_net_tx_bps": tcp_comm + 1e5,
        "_system_cores": system,
        "_tcp_storage": tcp_storage,
        "_local_read": local,
        "_rdma_storage": read_bps if storage.transport == "rdma" else 0.0,
        "_io_procs": workers * read_wait * (0.8 if waits_in_d else 0.0),
        "_refaults": refaults,
        "_rss": ws,
    }


def node_levels(
    pl: Placement, nb: Neighbours, pod: dict[str, float], w: Workload, step: float, load: float
) -> dict[str, float]:
    """Levels of node-exporter's signals on the pod's node: the pod plus its neighbours."""
    kind, T = pl.kind, step
    cpus = float(kind.cpus)
    others = nb.cpu_cores * load
    busy = _clip((pod["cpu_cores"] + others + 0.005 * cpus) / cpus, 0.0, 0.995)
    io_procs = pod["_io_procs"] + nb.io_procs * load
    iowait = _clip(min(1.0 - busy, io_procs / cpus * 0.9))
    system = _clip((pod["_system_cores"] + 0.08 * others + 0.003 * cpus) / cpus)
    disk = min(pod["_local_read"] + nb.disk_bps * load, 0.98 * kind.disk_bps)  # neighbours get what is left
    util = disk / kind.disk_bps
    if kind.disk_kind == "nvme":
        disk_busy = 1.0 - 2.718281828 ** (-4.0 * util)
    else:
        disk_busy = util * (1.02 if kind.disk_kind == "sata" else 0.9)
    mem_used = pod["_rss"] / GIB + nb.mem_gib * (0.7 + 0.3 * load) + 0.03 * kind.memory_gib
    avail = _clip(1.0 - mem_used / kind.memory_gib, 0.005, 0.99)
    pressure = pod["sc_psi_mem_some"]
    swap_used = _clip(0.03 + 0.6 * min(1.0, pressure * 3.0)) if kind.swap else 0.0
    _, inter_b = comm_bytes(w, pl)
    node_inter = inter_b * pl.gpus_per_pod / T
    rdma_comm = node_inter if kind.fabric != "tcp" else 0.0
    cpu_some = _clip(0.02 + max(0.0, busy - 0.8) * 3.5)
    return {
        "node_cpus": cpus,
        "node_cpu_busy_frac": busy,
        "node_cpu_iowait_frac": iowait,
        "node_cpu_system_frac": min(system, busy),
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": disk / (131072.0 if disk > 0 else 1.0) + 2.0,
        "node_disk_busy_frac": _clip(disk_busy + 0.005),
        "node_mem_avail_frac": avail,
        "node_swap_used_frac": swap_used,
        "node_majfault_ps": pod["sc_majfault_ps"] + nb.majfault_ps,
        "node_net_rx_bps": min(pod["sc_net_rx_bps"] + nb.eth_bps * load + 1.5e6, 0.97 * kind.eth_bps),
        "node_net_tx_bps": min(pod["sc_net_tx_bps"] + 0.5 * nb.eth_bps * load + 1.0e6, 0.97 * kind.eth_bps),
        "node_psi_cpu_some": max(cpu_some, 0.5 * pod["sc_psi_cpu_some"] if others < 1 else cpu_some),
        "node_psi_io_some": _clip(max(pod["sc_psi_io_some"], 0.04 * nb.io_procs * load)),
        "node_psi_io_full": _clip(pod["sc_psi_io_full"] * 0.8),
        "node_psi_mem_some": _clip(max(pod["sc_psi_mem_some"], 0.3 * max(0.0, 0.1 - avail) * 10)),
        "node_psi_mem_full": _clip(pod["sc_psi_mem_full"] * 0.8),
        "ib_rx_bps": min(rdma_comm + pod["_rdma_storage"] + nb.rdma_bps * load + 1e5, 0.97 * kind.nic_bps),
        "ib_tx_bps": min(rdma_comm + nb.rdma_bps * load + 1e5, 0.97 * kind.nic_bps),
    }


def idle_pod_levels(w: Workload, pl: Placement, startup: bool) -> dict[str, float]:
    """Pod levels while the step loop pauses for a checkpoint, or before it starts (model loading)."""
    g = pl.gpus_per_pod
    cores = g * (1.0 if startup else 0.9) + 0.3
    if w.cpu_limit:
        cores = min(cores, w.cpu_limit)
    read = 8e8 if startup else 0.0
    return {
        "cpu_cores": cores,
        "sc_cpu_cores": cores + 0.02,
        "cpu_throttled_frac": 0.05 if w.cpu_limit else 0.0,
        "sc_throttled_frac": 0.05 if w.cpu_limit else 0.0,
        "cpu_limit_cores": w.cpu_limit or 0.0,
        "mem_working_set_bytes": min(w.rss_gib, w.mem_limit_gib or w.rss_gib) * GIB * (0.5 if startup else 1.0),
        "mem_limit_bytes": (w.mem_limit_gib or 0.0) * GIB,
        "fs_read_bps": read if pl.storage.local else 0.0,
        "sc_io_read_bps": read if pl.storage.local else 0.0,
        "sc_psi_cpu_some": 0.02,
        "sc_psi_io_some": 0.2 if startup else 0.02,
        "sc_psi_io_full": 0.1 if startup else 0.01,
        "sc_psi_mem_some": 0.0,
        "sc_psi_mem_full": 0.0,
        "sc_majfault_ps": 5.0,
        "sc_swapin_ps": 0.0,
        "sc_oom_kills": 0.0,
        "sc_procs_running": float(g),
        "sc_procs_iowait": 0.5 if startup else 0.0,
        "sc_procs_busy": float(g),
        "sc_net_rx_bps": 2e5 if pl.storage.local else read + 2e5,
        "sc_net_tx_bps": 1e5,
        "_system_cores": 0.1,
        "_tcp_storage": 0.0 if pl.storage.local else read,
        "_local_read": read if pl.storage.local else 0.0,
        "_rdma_storage": 0.0,
        "_io_procs": 0.5 if startup else 0.0,
        "_refaults": 0.0,
        "_rss": min(w.rss_gib, w.mem_limit_gib or w.rss_gib) * GIB,
    }
