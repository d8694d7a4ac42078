"""The node's view (node-exporter): the pod's load plus its neighbours', and the whole job's levels.

A pod that does not fill its node shares it (no MIG): neighbours add CPU, disk, network, memory and
their own pressure to every node-level signal, which is why node-level signals are weaker evidence
for a job than its own cgroup's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyg.design import Design
from bottleneck_operator_dev.familyg.gpu_view import gpu_levels, link_bytes
from bottleneck_operator_dev.familyg.host_view import TCP_BYTES_PER_CORE, _reads, cpu_levels, io_levels, memory_levels

Levels = dict[str, np.ndarray]


@dataclass(frozen=True)
class JobLevels:
    """Per-pod levels of every raw key, training and paused, and who shares each node.

    Attributes:
        train: key -> shape (pods,) while the job trains.
        pause: key -> shape (pods,) during a checkpoint pause.
        neighbours: other pods on each pod's node, shape (pods,).
    """

    train: Levels
    pause: Levels
    neighbours: np.ndarray


def _neighbours(d: Design, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n, cpus = d.pods, d.cluster.node_cpus
    count = np.where(d.gpus >= 8, 0, rng.integers(0, 5, n)) * (rng.random(n) < 0.7)
    on = count > 0
    return {
        "count": count,
        "cpu": on * rng.uniform(0, 0.45, n) * cpus,
        "disk": on * (rng.random(n) < 0.35) * rng.uniform(0, 0.6, n) * d.cluster.storage.rate_bps,
        "net": on * rng.uniform(0, 2e9, n),
        "mem": on * rng.uniform(0.02, 0.3, n),
        "faults": on * rng.uniform(0, 200, n),
        "io_some": on * (rng.random(n) < 0.3) * rng.uniform(0, 0.4, n),
        "mem_some": on * (rng.random(n) < 0.15) * rng.uniform(0, 0.2, n),
    }


def node_levels(
    d: Design, rng: np.random.Generator, pod: Levels, nb: dict[str, np.ndarray], net: dict[str, float]
) -> Levels:
    """Node-exporter levels: the pod's own plus the neighbours' (shape (pods,) each)."""
    n, cpus, c = d.pods, float(d.cluster.node_cpus), d.cluster
    tcp = net["tcp_rx"] + net["tcp_tx"]
    sys_cores = cpus * rng.uniform(0.005, 0.02, n) + tcp / TCP_BYTES_PER_CORE + pod["sc_psi_mem_some"] * d.gpus
    busy = np.minimum(0.98, (pod["cpu_cores"] + nb["cpu"] + sys_cores) / cpus)
    if d.label.value == "CPU" and d.mechanism == "saturated":
        busy = rng.uniform(0.9, 0.98, n)  # the node's cores are all taken, by the job or by its neighbours
    iowait = np.minimum(1 - busy, (pod["sc_procs_iowait"] + nb["io_some"] * 4) / cpus * rng.uniform(0.6, 1.0, n))
    disk = pod["fs_read_bps"] + nb["disk"]
    tight = pod["node_tight"] > 0
    ws = pod["mem_working_set_bytes"] + nb["mem"] * c.node_mem_bytes
    avail = np.where(tight, rng.uniform(0.01, 0.05, n), np.clip(1 - ws / c.node_mem_bytes - 0.05, 0.05, 0.95))
    swapped = (pod["sc_swapin_ps"] > 0) | tight
    ib = c.ib_collector and (c.fabric.ib_counters or c.storage.rdma)
    return {
        "node_cpus": np.full(n, cpus),
        "node_cpu_busy_frac": busy,
        "node_cpu_iowait_frac": iowait,
        "node_cpu_system_frac": np.minimum(busy, sys_cores / cpus),
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": pod["disk_ops"] + nb["disk"] / 256e3,
        "node_disk_busy_frac": np.minimum(1.0, pod["disk_busy"] + nb["disk"] / c.storage.rate_bps),
        "node_mem_avail_frac": avail,
        "node_swap_used_frac": np.where(swapped, rng.uniform(0.2, 0.9, n), rng.uniform(0, 0.05, n)) * c.swap,
        "node_majfault_ps": pod["sc_majfault_ps"] + nb["faults"] + rng.uniform(0, 20, n),
        "node_net_rx_bps": net["tcp_rx"] + net["nfs_rx"] + nb["net"] + rng.uniform(1e5, 5e6, n),
        "node_net_tx_bps": net["tcp_tx"] + nb["net"] * 0.3 + rng.uniform(1e5, 5e6, n),
        "node_psi_cpu_some": np.minimum(1.0, np.maximum(0, busy - 0.75) * 2 + 0.1 * pod["sc_psi_cpu_some"]),
        "node_psi_io_some": np.minimum(1.0, pod["sc_psi_io_some"] * rng.uniform(0.7, 1.0, n) + nb["io_some"]),
        "node_psi_io_full": pod["sc_psi_io_some"] * rng.uniform(0.1, 0.5, n) + nb["io_some"] * 0.2,
        "node_psi_mem_some": np.minimum(1.0, pod["sc_psi_mem_some"] * rng.uniform(0.5, 1.0, n) + nb["mem_some"]),
        "node_psi_mem_full": pod["sc_psi_mem_full"] * rng.uniform(0.3, 0.8, n) + nb["mem_some"] * 0.3,
        "ib_rx_bps": np.full(n, net["ib_rx"] if ib else np.nan),
        "ib_tx_bps": np.full(n, net["ib_tx"] if ib else np.nan),
    }


def _network(d: Design, links: dict[str, float], read_rate: float) -> dict[str, float]:
    """Bytes per second each path carries for the pod while training."""
    c, t = d.cluster, d.stages.step
    inter = links["inter"] * d.gpus / t if d.pods > 1 else 0.0
    remote_read = read_rate * min(1.0, d.stages.read / t) if c.storage.remote else 0.0
    return {
        "tcp_rx": inter if c.fabric.netdev else 0.0,
        "tcp_tx": inter if c.fabric.netdev else 0.0,
        "nfs_rx": remote_read if c.storage.network else 0.0,
        "ib_rx": (inter if c.fabric.ib_counters else 0.0) + (remote_read if c.storage.rdma else 0.0),
        "ib_tx": inter if c.fabric.ib_counters else 0.0,
    }


def _paused(train: Levels, n: int, gpus: int, upload: float) -> Levels:
    """Host levels during a checkpoint: the loader idles, one process per GPU serialises state and
    writes it out (over the NIC when the storage is remote); the neighbours go on as before."""
    out = {k: v * (0.4 if k.startswith("node_") else 0.05) for k, v in train.items()}
    out["node_net_tx_bps"] = train["node_net_tx_bps"] * 0.4 + upload
    for key in (
        "mem_working_set_bytes",
        "mem_limit_bytes",
        "cpu_limit_cores",
        "node_cpus",
        "node_mem_avail_frac",
        "node_swap_used_frac",
        "node_tight",
    ):
        if key in train:
            out[key] = train[key]
    out["cpu_cores"] = np.full(n, float(gpus))
    out["sc_cpu_cores"] = out["cpu_cores"] + 0.02
    out["sc_procs_running"] = np.full(n, float(gpus))
    return out


def job_levels(d: Design, rng: np.random.Generator) -> JobLevels:
    """Every raw key's per-pod level for one design, training and paused."""
    links = link_bytes(d, rng)
    read_rate = _reads(d, rng)
    net = _network(d, links, read_rate)
    gpu_train, gpu_pause = gpu_levels(d, rng, links)
    io = io_levels(d, rng, read_rate)
    pod: Levels = {**io, **cpu_levels(d, rng, net["tcp_rx"] + net["tcp_tx"], float(io["read_total"].mean()))}
    pod.update(memory_levels(d, rng, io["mmap_faults"]))
    nb = _neighbours(d, rng)
    node = node_levels(d, rng, pod, nb, net)
    host_train = {**pod, **node}
    upload = float(rng.uniform(0.2e9, 2e9)) if d.cluster.storage.network else 0.0
    host_pause = _paused(host_train, d.pods, d.gpus, upload)
    n = d.pods
    train = {k: np.broadcast_to(np.asarray(v, float), (n,)).copy() for k, v in {**gpu_train, **host_train}.items()}
    pause = {k: np.broadcast_to(np.asarray(v, float), (n,)).copy() for k, v in {**gpu_pause, **host_pause}.items()}
    return JobLevels(train, pause, np.asarray(nb["count"], dtype=int))
