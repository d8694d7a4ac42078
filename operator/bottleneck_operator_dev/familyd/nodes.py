"""The nodes under the job: its pods' activity plus neighbours and the node's own background.

Node-exporter sees the whole node, so everything here is the sum of what the job's pods on that
node do, what other workloads' pods do (:attr:`.world.Setup.neighbours`) and what the kubelet,
daemons and exporters use. Pressure (PSI) at node level counts a stall when any task on the node
stalls ("some") or when all non-idle tasks do ("full", which other busy tasks make rarer), per
the kernel's PSI documentation (Documentation/accounting/psi.rst).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyd.activity import BLOCK, STALL_CEILING, PodActivity, wander
from bottleneck_operator_dev.familyd.hardware import GB
from bottleneck_operator_dev.familyd.stages import FloatArray
from bottleneck_operator_dev.familyd.workload import Workload
from bottleneck_operator_dev.familyd.world import Rng, Setup


@dataclass(frozen=True)
class NodeActivity:
    """Per node, per grid point (shape (nodes, grid)).

    Attributes:
        cpus: logical CPUs.
        busy, iowait, system: cores busy (not idle, not iowait), in iowait, in kernel mode.
        disk_bps, disk_iops, disk_util: block reads of the busiest device, reads/s, share of time busy.
        net_rx, net_tx, ib_rx, ib_tx: bytes/s on netdev (physical NICs) and on InfiniBand/RoCE ports.
        pod_net_rx, pod_net_tx: per pod (shape (pods, grid)), the bytes/s of the pod's own network
            namespace: its storage reads, socket collectives and checkpoint writes, and its share of
            the node's background; never the neighbours' bytes nor RDMA.
        majfault: major faults per second.
        mem_avail, swap_used: shares of MemTotal available and of SwapTotal in use.
        swap_total: bytes of swap (0 without).
        psi_cpu, psi_io, psi_io_full, psi_mem, psi_mem_full: shares of time stalled.
    """

    cpus: float
    busy: FloatArray
    iowait: FloatArray
    system: FloatArray
    disk_bps: FloatArray
    disk_iops: FloatArray
    disk_util: FloatArray
    net_rx: FloatArray
    net_tx: FloatArray
    ib_rx: FloatArray
    ib_tx: FloatArray
    majfault: FloatArray
    mem_avail: FloatArray
    swap_used: FloatArray
    swap_total: float
    psi_cpu: FloatArray
    psi_io: FloatArray
    psi_io_full: FloatArray
    psi_mem: FloatArray
    psi_mem_full: FloatArray
    pod_net_rx: FloatArray
    pod_net_tx: FloatArray


# The share of a node's background network bytes that its job's pods send and receive themselves
# (their metrics, logs and DNS); the rest is the kubelet's, the daemons' and the exporters'.
OWN_BACKGROUND = 0.25


def _per_node(setup: Setup, x: FloatArray) -> FloatArray:
    """Sum the job's pods' rows by node."""
    out = np.zeros((setup.nodes, x.shape[-1]))
    np.add.at(out, np.arange(setup.pods) // setup.pods_per_node, x)
    return out


def _any(*shares: FloatArray) -> FloatArray:
    """Share of time at least one of several independent stall sources is stalled."""
    none = np.ones_like(shares[0])
    for s in shares:
        none = none * (1.0 - np.clip(s, 0.0, 1.0))
    return np.asarray(np.minimum(1.0 - none, STALL_CEILING), dtype=np.float64)


def _neighbours(rng: Rng, setup: Setup, w: Workload, n: int) -> dict[str, FloatArray]:
    """Other workloads on the job's nodes: cores, disk, network, faults, stalls (some nodes noisy)."""
    count = np.asarray(setup.neighbours, dtype=float)[:, None]
    nodes = setup.nodes
    noisy_disk = (rng.random((nodes, 1)) < 0.25) * (count > 0)
    return {
        "cores": w.neighbour_cores[:, None] * wander(rng, (nodes, n), 0.15, 12),
        "disk": noisy_disk * rng.uniform(0.05, 1.5, size=(nodes, 1)) * GB * wander(rng, (nodes, n), 0.3, 8),
        "net": count * rng.uniform(1e6, 80e6, size=(nodes, 1)) * wander(rng, (nodes, n), 0.3, 8),
        "majfault": count * rng.uniform(0.0, 20.0, size=(nodes, 1)),
        "io": noisy_disk * rng.uniform(0.1, 0.5, size=(nodes, 1)) + count * 0.005,
        "mem": count * rng.uniform(0.0, 0.01, size=(nodes, 1)),
    }


def _disk(rng: Rng, setup: Setup, w: Workload, block: FloatArray, other: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(reads/s, share of time busy) of the node's data device."""
    kind = w.io_kind
    if kind == "cloud-volume":
        device = float(np.max(w.read_bps))  # the provisioned throughput is the device's ceiling
    elif kind in BLOCK and kind != "iomax":
        device = max(float(np.max(w.read_bps)) * setup.pods_per_node / float(rng.uniform(0.85, 1.0)), 0.5 * GB)
    else:
        device = setup.storage.bps if setup.storage.block else float(rng.uniform(3.5, 7.0)) * GB
    total = block + other
    # a device with deep queues is "busy" (a request in flight) well before its bandwidth is used up
    util = np.clip(total / device * float(rng.uniform(1.0, 1.4)), 0.0, 1.0)
    request = float(rng.uniform(16e3, 64e3)) if kind == "mmap" else float(rng.uniform(128e3, 1e6))
    return total / request, np.maximum(util, 0.003)


def node_activity(rng: Rng, setup: Setup, w: Workload, act: PodActivity) -> NodeActivity:
    """Aggregate the pods onto their nodes and add what else runs there."""
    n = act.busy.shape[1]
    cpus = float(setup.node_cpus)
    nb = _neighbours(rng, setup, w, n)
    background = rng.uniform(0.3, 1.5, size=(setup.nodes, 1))
    used = np.minimum(_per_node(setup, act.cores) + nb["cores"] + background, cpus * 0.995)
    idle = cpus - used
    iowait = np.minimum(idle * 0.98, _per_node(setup, act.dstate) * float(rng.uniform(0.3, 0.7)) + nb["io"] * 2.0)
    system = np.minimum(_per_node(setup, act.system_cores) + 0.1 * nb["cores"] + 0.3 * background, used)
    block = _per_node(setup, act.block_bps)
    other_disk = nb["disk"] + rng.uniform(0.0, 3e6, size=(setup.nodes, 1))
    iops, util = _disk(rng, setup, w, block, other_disk)
    # the checkpoint's write rate is kept (walrus) for the pods' own bytes, without moving any draw
    ckpt_tx = _per_node(setup, act.paused) * (
        ckpt_bps := float(rng.uniform(0.2, 1.5)) * GB if w.io_kind in ("nfs", "object-store") else 0.0
    )
    bg_net = rng.uniform(2e5, 3e6, size=(setup.nodes, 1))
    of = np.arange(setup.pods) // setup.pods_per_node
    own_bg = OWN_BACKGROUND * bg_net[of] / np.bincount(of)[of][:, None]
    pressure = w.node_pressure
    swap_total = float(setup.node_mem * rng.uniform(0.05, 0.25)) if setup.swap else 0.0
    swap_level = float(rng.uniform(0.3, 0.9)) if w.mem_kind == "swap" else float(rng.uniform(0.0, 0.05))
    mem_level = float(rng.uniform(0.01, 0.05)) if pressure else float(rng.uniform(0.25, 0.85))
    load = used / cpus
    cpu_stall = np.clip((load - 0.75) / 0.25, 0.0, 1.0) ** 2 * 0.8
    return NodeActivity(
        cpus=cpus,
        busy=used,
        iowait=iowait,
        system=system,
        disk_bps=block + other_disk,
        disk_iops=iops,
        disk_util=util,
        net_rx=_per_node(setup, act.net_rx) + nb["net"] + bg_net,
        net_tx=_per_node(setup, act.net_tx) + 0.5 * nb["net"] + bg_net + ckpt_tx,
        ib_rx=_per_node(setup, act.ib_rx) + 2e3,
        ib_tx=_per_node(setup, act.ib_tx) + 2e3,
        majfault=_per_node(setup, act.majfault) + nb["majfault"],
        mem_avail=np.clip(mem_level * wander(rng, (setup.nodes, n), 0.05, 10), 0.002, 0.99),
        swap_used=np.clip(swap_level * wander(rng, (setup.nodes, n), 0.03, 20), 0.0, 1.0)
        if setup.swap
        else np.zeros((setup.nodes, n)),
        swap_total=swap_total,
        psi_cpu=np.asarray(cpu_stall + rng.uniform(0.001, 0.02), dtype=np.float64),
        psi_io=_any(np.broadcast_to(nb["io"], used.shape), *_rows(setup, act.io_wait)),
        psi_io_full=np.clip(
            _per_node(setup, act.io_full) / setup.pods_per_node * (1.0 - 0.5 * np.minimum(nb["cores"] / cpus * 4, 1.0)),
            0.0,
            STALL_CEILING,
        ),
        psi_mem=_any(np.broadcast_to(nb["mem"], used.shape), *_rows(setup, act.mem_wait)),
        psi_mem_full=np.clip(_per_node(setup, act.mem_full) / setup.pods_per_node * 0.8, 0.0, STALL_CEILING),
        pod_net_rx=act.net_rx + own_bg,
        pod_net_tx=act.net_tx + act.paused * ckpt_bps + own_bg,
    )


def _rows(setup: Setup, x: FloatArray) -> list[FloatArray]:
    """The pods' rows of ``x`` grouped as one (nodes, grid) array per slot on a node."""
    slots = []
    for s in range(setup.pods_per_node):
        rows = np.zeros((setup.nodes, x.shape[-1]))
        for node in range(setup.nodes):
            pod = node * setup.pods_per_node + s
            if pod < setup.pods:
                rows[node] = x[pod]
        slots.append(rows)
    return slots
