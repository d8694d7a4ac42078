"""The pod's node as node-exporter sees it: the job's share plus whatever else runs there.

Node series are context, not the job: a neighbour's reads, cores and traffic land in them too.
RDMA traffic (InfiniBand, RoCE) bypasses netdev counters and shows only in the infiniband
collector's port counters (node-exporter ``collector/infiniband_linux.go``); NCCL over TCP sockets
shows in netdev. ``node_disk_io_time_seconds_total`` moves with the device, so reads throttled above
it (a cgroup ``io.max`` or a provider's volume limit) leave the disk looking idle.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyf.design import Design
from bottleneck_operator_dev.familyf.gpu import shares

FloatArray = npt.NDArray[np.float64]


def _cpu_modes(
    d: Design, pod: dict[str, FloatArray], nb: dict[str, FloatArray], net: FloatArray, rng: np.random.Generator
) -> dict[str, FloatArray]:
    """Cores per second spent in each CPU mode, summing to the node's CPUs."""
    cpus = float(d.node.cpus)
    busy = pod["cpu_cores"] + nb["cores"] + rng.uniform(0.5, 2.5) + net / rng.uniform(5e9, 1.2e10)
    if d.mechanism is Mechanism.SATURATED:
        busy = np.maximum(busy, cpus * rng.uniform(0.9, 0.99) * rng.normal(1.0, 0.01, busy.shape))
    busy = np.minimum(busy, cpus * 0.995)
    system = np.minimum(busy, busy * rng.uniform(0.03, 0.08) + pod["sc_swapin_ps"] * 2e-5)
    iowait = np.minimum(cpus - busy, pod["sc_procs_iowait"] * rng.uniform(0.4, 1.0))
    return {
        "cpu_user": busy - system,
        "cpu_system": system,
        "cpu_iowait": np.maximum(iowait, 0.0),
        "cpu_idle": np.maximum(cpus - busy - np.maximum(iowait, 0.0), 0.0),
    }


def _fabric(d: Design, rng: np.random.Generator, a: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Collective bytes per second each way: (over netdev, over RDMA ports)."""
    sh = shares(d)
    eff = rng.uniform(0.7, 0.9)
    if d.comm_link == "network":
        wire = sh["comm"] * d.fabric.node_bps * eff * a * rng.normal(1.0, 0.05, a.shape).clip(0.5)
    elif d.pods > 1:  # pipeline stages between nodes, tensor parallelism inside: a trickle
        wire = sh["comm"] * d.fabric.node_bps * eff * rng.uniform(0.02, 0.1) * a
    else:
        wire = 0.0 * a
    control = rng.uniform(1e5, 5e7) * (0.3 + 0.7 * a)
    if d.fabric.rdma:
        return control, wire
    return wire + control, 0.0 * a


def node_truth(
    d: Design, pod: dict[str, FloatArray], nb: dict[str, FloatArray], a: FloatArray, rng: np.random.Generator
) -> dict[str, FloatArray]:
    """Node-exporter's view of each pod's node, shape (pods, grid).

    Also the pod's own part of the node's network bytes (``own_net_rx``, ``own_net_tx``): what the
    sidecar counts in the pod's network namespace.
    """
    tcp, rdma = _fabric(d, rng, a)
    remote_rx = pod["read"] if d.storage.via_network else 0.0 * a
    rx = tcp + remote_rx + nb["net"]
    tx = tcp + nb["net"] * rng.uniform(0.3, 1.0)
    # the pod's own namespace: its sockets' collectives and control traffic and its network-storage
    # reads; not the neighbours' bytes, nor collectives that go over RDMA ports
    own = {"own_net_rx": tcp + remote_rx, "own_net_tx": tcp}
    disk = (pod["read"] if d.storage.block else 0.0 * a) + nb["disk"]
    device_bps = (
        rng.uniform(2e9, 7e9)
        if not d.storage.device_visible
        else rng.uniform(d.storage.low_bps, d.storage.high_bps) * rng.uniform(1.0, 1.2)
    )
    out = _cpu_modes(d, pod, nb, tcp, rng)
    pressured = d.mechanism is Mechanism.HOST_MEMORY_PRESSURE
    used = pod["mem_working_set_bytes"] + nb["mem"] + d.node.mem_bytes * rng.uniform(0.03, 0.08)
    avail = np.clip(1.0 - used / d.node.mem_bytes, 0.0, 1.0)
    if pressured and d.mem_limit is None:
        avail = np.minimum(avail, rng.uniform(0.01, 0.05) * rng.normal(1.0, 0.05, a.shape).clip(0.5))
    swap_used = 0.0 if d.swap == "none" else (rng.uniform(0.2, 0.9) if pressured else rng.uniform(0.0, 0.05))
    cpus = float(d.node.cpus)
    busy_share = (cpus - out["cpu_idle"] - out["cpu_iowait"]) / cpus
    out.update(
        node_cpus=np.full_like(a, cpus),
        node_disk_read_bps=disk,
        node_disk_reads_ps=disk / rng.uniform(16e3, 1e6),
        node_disk_busy_frac=np.clip(disk / device_bps * rng.normal(1.0, 0.05, a.shape), 0.0, 1.0),
        node_mem_avail_frac=avail,
        node_swap_used_frac=np.full_like(a, swap_used),
        node_majfault_ps=pod["sc_majfault_ps"] + rng.uniform(0.0, 40.0),
        node_net_rx_bps=rx,
        node_net_tx_bps=tx,
        ib_rx_bps=rdma,
        ib_tx_bps=rdma * rng.normal(1.0, 0.01, a.shape),
        node_psi_cpu_some=np.clip(np.maximum(0.0, busy_share - 0.8) * 2.0 + nb["cpu_some"], 0.0, 1.0),
        node_psi_io_some=np.clip(pod["sc_psi_io_some"] * rng.uniform(0.7, 1.0) + nb["io_some"], 0.0, 1.0),
        node_psi_mem_some=np.clip(pod["sc_psi_mem_some"] * rng.uniform(0.6, 1.0), 0.0, 1.0),
    )
    out["node_psi_io_full"] = out["node_psi_io_some"] * rng.uniform(0.2, 0.6)
    out["node_psi_mem_full"] = out["node_psi_mem_some"] * rng.uniform(0.3, 0.8)
    out.update(own)
    return out
