"""What node-exporter shows on the nodes of a job's pods: the job's share plus everyone else's.

Every node carries background traffic on its interfaces (kubelet and API watches, image pulls in
bursts, log shipping, metric scrapes) and, on shared nodes, neighbours' CPU. Collective traffic over
RDMA (InfiniBand, RoCE) appears only on the infiniband collector's port counters, never in netdev;
over plain TCP it appears in netdev and costs softirq/system CPU. Reads from NFS and object stores are
network receive bytes, not disk reads.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familym.plans import Plan
from bottleneck_operator_dev.familym.stages import Stages, Timing

Array = npt.NDArray[np.float64]
MB = 1e6


def _background(rng: np.random.Generator, pods: int, length: int) -> Array:
    """Bytes/s a node's interfaces carry for the platform: a steady floor plus image-pull bursts."""
    floor = rng.uniform(0.3, 8.0, size=(pods, 1)) * MB * rng.lognormal(0.0, 0.3, size=(pods, length))
    bursts = (rng.random((pods, length)) < 0.04) * rng.uniform(50, 400, size=(pods, length)) * MB
    out: Array = floor + bursts
    return out


def _network(rng: np.random.Generator, plan: Plan, s: Stages, tm: Timing, dataset_bps: Array) -> dict[str, Array]:
    pods, length = tm.pod_step.shape
    step = tm.step[None, :]
    fabric = plan.fabric
    net = np.minimum(s.comm * plan.net_share / step, 1.0) * (fabric.bps if fabric is not None else 0.0)
    remote = dataset_bps if plan.storage.kind in ("nfs", "object-store") else 0.0 * dataset_bps
    tcp = net if fabric is not None and fabric.kind == "tcp" else 0.0 * net
    out = {
        "node_net_rx_bps": _background(rng, pods, length) + remote + tcp,
        "node_net_tx_bps": _background(rng, pods, length) * 0.6 + tcp + 0.01 * remote,
    }
    if fabric is not None and fabric.kind == "ib":
        out["ib_rx_bps"] = net + rng.uniform(0.0, 0.2, (pods, length)) * MB
        out["ib_tx_bps"] = net + rng.uniform(0.0, 0.2, (pods, length)) * MB
    out["_tcp_bps"] = tcp
    return out


def _disk(rng: np.random.Generator, plan: Plan, dataset_bps: Array) -> dict[str, Array]:
    st = plan.storage
    pods, length = dataset_bps.shape
    local = dataset_bps if st.local or st.kind == "page-cache" else 0.0 * dataset_bps
    other = rng.uniform(0.0, 3.0, (pods, length)) * MB
    reads = local + other
    size = rng.uniform(64, 1024) * 1024  # request size: readahead and loader chunking
    # Deep-queue NVMe is rarely "busy" at its throughput; a SATA SSD is; a throttled cloud volume
    # caps above the device, so the device looks half idle while the readers wait.
    scale = {"nvme": 0.5, "sata": 1.0, "block-volume": 0.35, "page-cache": 0.3}.get(st.kind, 0.0)
    cap = st.bps if st.local else 3e9
    busy = np.clip(scale * local / cap + other / 2e9, 0.0, 1.0)
    return {"node_disk_read_bps": reads, "node_disk_reads_ps": reads / size, "node_disk_busy_frac": busy}


def node_signals(
    rng: np.random.Generator, plan: Plan, s: Stages, tm: Timing, pod: dict[str, Array]
) -> dict[str, Array]:
    """Node-exporter signals on each pod's node, true values (pods, T)."""
    pods, length = tm.pod_step.shape
    cpus = np.array([n.cpus for n in plan.nodes], dtype=float)[:, None]
    neigh = np.array([n.neighbour_cores for n in plan.nodes])[:, None] * rng.lognormal(0, 0.15, (pods, length))
    out = _network(rng, plan, s, tm, pod["_dataset_bps"])
    out.update(_disk(rng, plan, pod["_dataset_bps"]))
    tcp = out.pop("_tcp_bps")
    busy = np.clip((pod["cpu_cores"] + neigh + tcp / (2e9)) / cpus, 0.0, 1.0)
    waiting = pod["sc_procs_iowait"] + rng.uniform(0, 0.3, (pods, length))
    out["node_cpus"] = np.repeat(cpus, length, axis=1)
    out["node_cpu_busy_frac"] = busy
    out["node_cpu_iowait_frac"] = np.minimum(1.0 - busy, waiting / cpus)
    swap_sys = pod["sc_swapin_ps"] / 4e5
    out["node_cpu_system_frac"] = np.clip(0.02 + 0.15 * busy + tcp / 2e9 / cpus + swap_sys, 0.0, busy)
    out["node_psi_cpu_some"] = np.clip(2.0 * (busy - 0.8), 0.0, 1.0) + rng.uniform(0, 0.02, (pods, length))
    out["node_psi_io_some"] = np.clip(pod["sc_psi_io_some"] + rng.uniform(0, 0.02, (pods, length)), 0.0, 1.0)
    out["node_psi_io_full"] = np.minimum(
        pod["sc_psi_io_full"] + rng.uniform(0, 0.005, (pods, length)), out["node_psi_io_some"]
    )
    out["node_psi_mem_some"] = pod["sc_psi_mem_some"]
    out["node_psi_mem_full"] = pod["sc_psi_mem_full"]
    out["node_majfault_ps"] = pod["sc_majfault_ps"] + rng.uniform(0, 50, (pods, length))
    pressured = plan.mechanism == "host-memory-pressure"
    swap = np.array([n.swap_bytes > 0 for n in plan.nodes])[:, None]
    no_limit_pressure = pressured and rng.random() < 0.5  # node-wide, not inside a memory.max
    avail = rng.uniform(0.01, 0.06) if no_limit_pressure else rng.uniform(0.25, 0.8)
    out["node_mem_avail_frac"] = np.clip(avail + rng.normal(0, 0.005, (pods, length)), 0.0, 1.0)
    used = rng.uniform(0.3, 0.9) if pressured else rng.uniform(0.0, 0.05)
    out["node_swap_used_frac"] = np.where(swap, used, 0.0) * np.ones((pods, length))
    return out
