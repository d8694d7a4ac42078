"""node-exporter's view: one row per node (pods of the job on one node share it), neighbours included."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familye.hardware import GB
from bottleneck_operator_dev.familye.phases import Timeline, wander
from bottleneck_operator_dev.familye.workloads import Plan

FloatArray = npt.NDArray[np.float64]
Rows = dict[str, FloatArray]


def _per_node(plan: Plan, pod_rows: FloatArray) -> FloatArray:
    """Sum pod rows (P, n) onto their nodes (N, n)."""
    env = plan.env
    out = np.zeros((env.nodes, pod_rows.shape[1]))
    np.add.at(out, env.node_of, pod_rows)
    return out


# The node's own network background (kubelet, daemons, exporters, the job's pods' metrics), B/s.
BG_RX, BG_TX = 2e5, 1e5
# The share of that background the job's pods on the node send and receive themselves.
OWN_BACKGROUND = 0.25


def _nic_share(plan: Plan, g: Rows, tl: Timeline) -> FloatArray:
    """Each pod's share of its node's fabric bytes (P, n): the node's NIC bytes split among its pods."""
    env = plan.env
    out: FloatArray = (g["nic_bps"][:, None] / np.bincount(env.node_of)[env.node_of][:, None]) * tl.train
    return out


def pod_net_rows(plan: Plan, h: Rows, g: Rows, tl: Timeline) -> Rows:
    """The pod's own network namespace (P, n): the same terms as the node's netdev bytes, the pod's alone.

    Its reads from network storage, its collectives where they go over TCP (RDMA bypasses netdev),
    and a share of the node's background; never the neighbours' bytes. No draw: nothing moves.
    """
    env, st = plan.env, plan.env.storage
    tcp = 0.0 if env.fabric is None or env.fabric.rdma else 1.0
    nic = _nic_share(plan, g, tl) * tcp
    reads = h["read_bps"][:, None] * tl.train * (1.0 if st.net else 0.0)
    per_node = np.bincount(env.node_of)[env.node_of][:, None]
    return {
        "sc_net_rx_bps": reads + nic + OWN_BACKGROUND * BG_RX / per_node,
        "sc_net_tx_bps": nic + OWN_BACKGROUND * BG_TX / per_node,
    }


def node_rows(rng: np.random.Generator, plan: Plan, h: Rows, g: Rows, pods: dict[str, Rows], tl: Timeline) -> Rows:
    """Per node and bin: CPU modes (as core rates), disk, memory, faults, network, pressure and RDMA."""
    env, st, n = plan.env, plan.env.storage, tl.times.size
    cad, side = pods["cadvisor"], pods["sidecar"]
    nb = wander(rng, (env.nodes,), n, 0.25, rng.uniform(3, 20))
    reads = h["read_bps"][:, None] * tl.train
    net_reads = _per_node(plan, reads * (1.0 if st.net else 0.0))
    tcp = 0.0 if env.fabric is None or env.fabric.rdma else 1.0
    nic = _per_node(plan, _nic_share(plan, g, tl))
    modes = _cpu_modes(rng, plan, cad, side, nb, net_reads + nic * tcp)
    busy = modes["node_cpu:system"] + modes["node_cpu:other"]
    disk = _per_node(plan, side["sc_io_read_bps"] if "sc_io_read_bps" in side else cad["fs_read_bps"])
    disk = disk + env.nb_disk_bps[:, None] * nb
    device = 7 * GB if st.key == "nvme-throttled" or not st.block else st.bps
    req = rng.uniform(16e3, 64e3) if st.key == "nvme-mmap" else rng.uniform(128e3, 1e6)
    mem_used = _per_node(plan, cad["mem_working_set_bytes"]) + env.nb_mem_frac[:, None] * env.node_mem
    avail = np.clip(1.0 - mem_used / env.node_mem - rng.uniform(0.02, 0.08), 0.01, 0.98)
    pressure = plan.mechanism == "host-memory-pressure"
    swap = np.zeros((env.nodes, n))
    if env.swap:
        swap = np.full((env.nodes, n), rng.uniform(0.2, 0.85) if pressure else rng.uniform(0.0, 0.05))
        swap = np.clip(swap + np.linspace(0, rng.uniform(0, 0.1), n), 0, 1)

    def worst(key: str, extra: FloatArray) -> FloatArray:
        m = np.zeros((env.nodes, n))
        np.maximum.at(m, env.node_of, side[key])
        out: FloatArray = np.clip(1 - (1 - m) * (1 - extra[:, None] * nb), 0, 0.99)
        return out

    rdma = env.fabric is not None and env.fabric.rdma
    ib_rx = nic * rdma + _per_node(plan, reads * st.ib)
    return {
        "node_cpus": np.full((env.nodes, n), float(env.node_cpus)),
        **modes,
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": disk / req,
        "node_disk_busy_frac": np.clip(disk / device * rng.uniform(1.2, 3.0) + 0.002, 0, 1),
        "node_mem_avail_frac": avail,
        "node_swap_used_frac": swap,
        "node_majfault_ps": _per_node(plan, side["sc_majfault_ps"]) + rng.uniform(1, 30),
        "node_net_rx_bps": net_reads + nic * tcp + env.nb_net_bps[:, None] * nb + BG_RX,
        "node_net_tx_bps": nic * tcp + env.nb_net_bps[:, None] * nb * 0.5 + BG_TX,
        "node_psi_cpu_some": np.clip(
            worst("sc_psi_cpu_some", env.nb_cpu_psi) + (busy / env.node_cpus) ** 8 * 0.4, 0, 0.99
        ),
        "node_psi_io_some": worst("sc_psi_io_some", env.nb_io_psi),
        "node_psi_io_full": worst("sc_psi_io_full", env.nb_io_psi * 0.3),
        "node_psi_mem_some": worst("sc_psi_mem_some", np.zeros(env.nodes)),
        "node_psi_mem_full": worst("sc_psi_mem_full", np.zeros(env.nodes)),
        "ib_rx_bps": ib_rx + 1e4,
        "ib_tx_bps": nic * rdma + 1e4,
    }


def _cpu_modes(rng: np.random.Generator, plan: Plan, cad: Rows, side: Rows, nb: FloatArray, net: FloatArray) -> Rows:
    """node_cpu_seconds_total by mode, as core-seconds per second: idle, iowait, system, the rest."""
    env = plan.env
    cpus = float(env.node_cpus)
    job_cpu = _per_node(plan, cad["cpu_cores"])
    busy = np.minimum(job_cpu + env.nb_cores[:, None] * nb + rng.uniform(0.5, 2.0), cpus * 0.995)
    # the kernel's share: network receive processing, page-fault and reclaim work
    system = busy * rng.uniform(0.05, 0.1) + net / GB * 0.4 + _per_node(plan, side["sc_majfault_ps"]) * 2e-5
    system = np.minimum(system, busy)
    # idle CPUs whose last task now sleeps in D state on I/O count as iowait (proc(5))
    d_state = _per_node(plan, side["sc_procs_iowait"]) + env.nb_io_psi[:, None] * nb * 4
    iowait = np.minimum(cpus - busy, d_state * rng.uniform(0.5, 0.9))
    return {
        "node_cpu:idle": cpus - busy - iowait,
        "node_cpu:iowait": iowait,
        "node_cpu:system": system,
        "node_cpu:other": busy - system,
    }
