"""What node-exporter, cAdvisor, kube-state-metrics and the sidecar would read on one pod's node.

The pod's own cgroup (cAdvisor, the sidecar) sees only the job; node-exporter sees the node, with
whatever the neighbours do on a shared node. Storage reads show where the storage puts them: block
counters for local disks and volumes, NIC receive bytes for NFS and object stores, InfiniBand port
counters for a parallel file system over RDMA; only block and NFS readers wait in D state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyo.workload import Plan

FloatArray = npt.NDArray[np.float64]
PAGE = 4096.0


@dataclass(frozen=True)
class Node:
    """The node a pod runs on.

    Attributes:
        neighbours: other jobs' pods on it.
        swap: the node has swap (NodeSwap) turned on.
        mem_gib: host RAM.
        neighbour_pressure: a neighbour keeps the node's memory tight (node-level pressure only).
    """

    neighbours: int
    swap: bool
    mem_gib: float
    neighbour_pressure: bool


def draw_node(rng: np.random.Generator, plan: Plan, swap: bool) -> Node:
    """The pod's node; ``swap`` is the cluster's choice (NodeSwap is set per cluster, not per node)."""
    shared = plan.gpus < 8 and rng.random() < 0.7
    neighbours = int(rng.integers(1, 5)) if shared else int(rng.random() < 0.15)
    return Node(
        neighbours=neighbours,
        swap=swap,
        mem_gib=float(rng.choice([256, 512, 1024, 2048])),
        neighbour_pressure=bool(neighbours > 0 and rng.random() < 0.2),
    )


def _cpu(plan: Plan, rng: np.random.Generator, act: FloatArray, swap_share: float) -> dict[str, FloatArray]:
    """The job's cores: the input pipeline's share of its cores, the trainer, the kernel's swap work."""
    s, step = plan.stages, plan.stages.step
    pipeline = plan.pipeline_cores * s.cpu / step
    trainer = plan.gpus * rng.uniform(0.5, 1.1)
    reader = (s.read / step) * plan.storage_gbs * rng.uniform(0.3, 1.0) if not plan.storage.block else 0.0
    kswap = swap_share * rng.uniform(1.0, 4.0)
    demand = act * (pipeline + trainer + reader) + kswap
    limit = plan.cpu_limit
    used = np.minimum(demand, limit) if limit is not None else np.minimum(demand, plan.node_cpus * 0.98)
    if limit is None:
        throttled = np.zeros_like(act)
    elif plan.cpu_mode == "limit" and plan.label is Bottleneck.CPU:
        throttled = np.clip(rng.uniform(0.6, 0.98) * act, 0.0, 1.0)
    else:
        throttled = np.clip((used / limit - 0.85) * 3.0, 0.0, 0.6) * rng.uniform(0.5, 1.0)
    workers = plan.pipeline_cores if plan.cpu_mode != "free" else plan.gpus * rng.uniform(4, 12)
    pegged = workers * (s.cpu / step) if plan.cpu_mode != "limit" else 0.0
    return {
        "cpu_cores": used,
        "cpu_throttled_frac": throttled,
        "workers": np.full(act.size, workers),
        "pegged": act * pegged,
    }


def host_truth(
    plan: Plan, node: Node, rng: np.random.Generator, act: FloatArray, inter_node_bps: float, step: float
) -> dict[str, FloatArray]:
    """The pod's and its node's host signals per sample, in the contract's units (``step``: grid seconds)."""
    s, step, st, n = plan.stages, plan.stages.step, plan.storage, act.size
    read_share, swap_share = s.read / step, s.swap / step
    read_bps = act * read_share * plan.storage_gbs * 1e9 * rng.uniform(0.85, 0.98)
    if st.name == "page-cache":
        read_bps = read_bps * 0.0
    cpu = _cpu(plan, rng, act, swap_share)
    nb_cpu = node.neighbours * rng.uniform(1.0, 16.0)
    busy = np.clip((cpu["cpu_cores"] + nb_cpu + rng.uniform(0.3, 2.0)) / plan.node_cpus, 0.0, 1.0)
    io_wait_share = read_share * act if st.iowait else np.zeros(n)
    mmap = st.block and plan.arch.name.startswith("llm") and rng.random() < 0.6
    out: dict[str, FloatArray] = {
        "cpu_cores": cpu["cpu_cores"],
        "cpu_throttled_frac": cpu["cpu_throttled_frac"],
        "node_cpus": np.full(n, float(plan.node_cpus)),
        "node_cpu_busy_frac": busy,
        "node_cpu_iowait_frac": np.clip((1.0 - busy) * io_wait_share * rng.uniform(0.05, 0.4), 0.0, 1.0),
        "node_cpu_system_frac": np.clip(
            rng.uniform(0.01, 0.05, n) + act * swap_share * 16.0 / plan.node_cpus, 0.0, 1.0 - busy
        ),
    }
    if plan.cpu_limit is not None:
        out["cpu_limit_cores"] = np.full(n, plan.cpu_limit)
    out.update(_disk_net(plan, node, rng, (read_bps, act), inter_node_bps))
    out.update(_memory(plan, node, rng, act, swap_share, read_bps if mmap else np.zeros(n), step))
    out.update(_pressure(plan, node, rng, act, io_wait_share, swap_share, busy))
    out.update(_sidecar_procs(plan, rng, cpu, io_wait_share))
    return out


def _disk_net(
    plan: Plan, node: Node, rng: np.random.Generator, reads: tuple[FloatArray, FloatArray], inter_node_bps: float
) -> dict[str, FloatArray]:
    """Disk, NIC and InfiniBand counters; ``reads`` is the job's read rate and its activity per sample."""
    read_bps, act = reads
    st, n = plan.storage, read_bps.size
    block = read_bps if st.block else np.zeros(n)
    nb_disk = node.neighbours * rng.uniform(0.0, 2e8)
    disk = block + nb_disk + rng.uniform(1e4, 1e6, n)
    # A throttled cloud volume caps the job far below what the device could do: the disk looks idle.
    device_gbs = 3.0 if st.name == "cloud-volume" else plan.storage_gbs
    busy = np.clip(disk / (device_gbs * 1e9) * rng.uniform(0.9, 1.05), 0.0, 1.0)
    over_ib = plan.fabric is not None and plan.fabric.rdma and st.name == "lustre"
    net_read = read_bps if st.network and not over_ib else np.zeros(n)
    tcp = inter_node_bps if plan.fabric is not None and not plan.fabric.rdma else 0.0
    nb_net = node.neighbours * rng.uniform(0.0, 3e8)
    rdma = inter_node_bps if plan.fabric is not None and plan.fabric.rdma else 0.0
    ib_read = read_bps if over_ib else np.zeros(n)
    return {
        "fs_read_bps": block,
        "sc_io_read_bps": block * rng.uniform(0.98, 1.0),
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": disk / (st.req_kib * 1024.0),
        "node_disk_busy_frac": busy,
        "node_net_rx_bps": net_read + act * tcp * rng.uniform(0.95, 1.05) + nb_net + rng.uniform(1e5, 5e6, n),
        "node_net_tx_bps": act * tcp * rng.uniform(0.95, 1.05) + nb_net * 0.5 + rng.uniform(1e5, 5e6, n),
        "ib_rx_bps": act * rdma + ib_read + rng.uniform(1e3, 1e5, n),
        "ib_tx_bps": act * rdma * rng.uniform(0.97, 1.03) + rng.uniform(1e3, 1e5, n),
    }


def _memory(
    plan: Plan,
    node: Node,
    rng: np.random.Generator,
    act: FloatArray,
    swap_share: float,
    mmap_bps: FloatArray,
    step: float,
) -> dict[str, FloatArray]:
    """Host memory: pressure shows as swap-in (with swap) or refaults of evicted pages (without)."""
    n = act.size
    limit_gib = node.mem_gib * rng.uniform(0.3, 0.9)
    pressured = swap_share > 0
    ws_frac = rng.uniform(0.95, 0.995) if pressured else rng.uniform(0.2, 0.75)
    swapin = act * swap_share * rng.uniform(2e3, 3e4) if node.swap else np.zeros(n)
    refault = act * swap_share * rng.uniform(1e3, 2e4)
    majfault = mmap_bps / (PAGE * rng.uniform(8, 32)) + refault + rng.uniform(0, 20, n)
    nb_tight = node.neighbour_pressure
    avail = rng.uniform(0.01, 0.06) if pressured or nb_tight else rng.uniform(0.25, 0.8)
    kills = np.zeros(n)
    if pressured and rng.random() < 0.25:
        kills[int(rng.integers(n))] = 1.0 / step  # one worker killed in that sample
    nb_faults = rng.uniform(1e3, 1e4) if nb_tight else 0.0
    swap_used = (rng.uniform(0.3, 0.9) if pressured or nb_tight else rng.uniform(0.0, 0.05)) if node.swap else 0.0
    return {
        "mem_working_set_bytes": np.full(n, limit_gib * ws_frac * 2**30) * rng.normal(1.0, 0.003, n),
        "mem_limit_bytes": np.full(n, limit_gib * 2**30),
        "node_mem_avail_frac": np.clip(avail + rng.normal(0, 0.005, n), 0.0, 1.0),
        "node_swap_used_frac": np.full(n, swap_used),
        "node_majfault_ps": majfault + nb_faults,
        "sc_majfault_ps": majfault,
        "sc_swapin_ps": swapin,
        "sc_oom_kills": kills,
    }


def _pressure(
    plan: Plan,
    node: Node,
    rng: np.random.Generator,
    act: FloatArray,
    io_share: FloatArray,
    swap_share: float,
    busy: FloatArray,
) -> dict[str, FloatArray]:
    """PSI: the share of time some (or all) of the pod's (the node's) tasks stall on a resource."""
    cpu_some = {"free": 0.5, "limit": 0.6}.get(plan.cpu_mode, 0.03) * plan.stages.cpu / plan.stages.step
    pod_cpu = np.clip(act * cpu_some * rng.uniform(0.6, 1.2) + rng.uniform(0.0, 0.02), 0.0, 1.0)
    io_some = np.clip(io_share * rng.uniform(0.5, 0.95), 0.0, 1.0)
    io_full = io_some * rng.uniform(0.3, 0.8)
    mem_some = np.clip(act * swap_share * rng.uniform(0.8, 1.0), 0.0, 1.0)
    mem_full = mem_some * rng.uniform(0.4, 0.9)
    nb_mem = rng.uniform(0.05, 0.3) if node.neighbour_pressure else 0.0
    return {
        "sc_psi_cpu_some": pod_cpu,
        "sc_psi_io_some": io_some,
        "sc_psi_io_full": io_full,
        "sc_psi_mem_some": mem_some,
        "sc_psi_mem_full": mem_full,
        "node_psi_cpu_some": np.clip(pod_cpu * 0.5 + np.clip(busy - 0.85, 0, 1) * 2.0, 0.0, 1.0),
        "node_psi_io_some": np.clip(io_some * rng.uniform(0.7, 1.0) + rng.uniform(0, 0.02), 0.0, 1.0),
        "node_psi_io_full": np.clip(io_full * rng.uniform(0.7, 1.0), 0.0, 1.0),
        "node_psi_mem_some": np.clip(mem_some + nb_mem, 0.0, 1.0),
        "node_psi_mem_full": np.clip(mem_full + nb_mem * 0.5, 0.0, 1.0),
    }


def _sidecar_procs(
    plan: Plan, rng: np.random.Generator, cpu: dict[str, FloatArray], io_share: FloatArray
) -> dict[str, FloatArray]:
    workers = cpu["workers"]
    return {
        "sc_cpu_cores": cpu["cpu_cores"] * rng.uniform(1.0, 1.02) + 0.01,
        "sc_throttled_frac": cpu["cpu_throttled_frac"],
        "sc_procs_running": np.round(np.minimum(cpu["cpu_cores"], workers + plan.gpus)).astype(np.float64),
        "sc_procs_iowait": np.round(workers * io_share * rng.uniform(0.3, 0.9)),
        "sc_procs_busy": np.round(cpu["pegged"]),
    }
