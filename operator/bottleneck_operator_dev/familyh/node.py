"""What node-exporter would see on each pod's node: the pod, its neighbours, and the node itself.

Node-wide counters mix the job with whatever else runs there (pods of other jobs on a shared node
without MIG, system daemons), so they are drawn as the pod's share plus the neighbours' own load.
RDMA traffic (InfiniBand, RoCE, and Lustre over o2ib) appears only on the infiniband collector's
port counters; TCP traffic (NFS, object stores, NCCL over sockets) only on netdev.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyh.cluster import Accidents, Cluster
from bottleneck_operator_dev.familyh.draft import Draft
from bottleneck_operator_dev.familyh.timeline import Timeline, ar1

Rng = np.random.Generator
Array = npt.NDArray[np.float64]


def _neighbours(rng: Rng, d: Draft, acc: Accidents, n: int) -> dict[str, Array]:
    """The other pods' load on each node: CPU cores, disk and network bytes/s, memory bytes, pressure."""
    shape = (d.pods, n)
    if acc.neighbours == 0:
        # the node's own daemons: kubelet, the runtime, exporters, log shippers
        quiet = np.stack([ar1(rng, n, 0.3, 0.8) for _ in range(d.pods)])
        zero = np.zeros(shape)
        return {
            "cpu": quiet * float(rng.uniform(0.3, 1.5)),
            "disk": quiet * float(rng.uniform(5e4, 1e6)),
            "net": quiet * float(rng.uniform(1e5, 3e6)),
            "mem": zero + float(rng.uniform(6e9, 20e9)),
            "io_psi": zero,
            "cpu_psi": zero,
        }
    job_cores = d.gpus * (d.stages.cores + d.main_cores) if d.cpu_limit is None else d.cpu_limit
    # a node without limits is shared: the job's cores are what the others leave it
    others = max(d.node_cpus - job_cores, 1.0) * float(
        rng.uniform(0.25, 1.0) if d.cpu_limit else rng.uniform(0.85, 1.0)
    )
    wobble = np.stack([ar1(rng, n, 0.12, 0.9) for _ in range(d.pods)])
    return {
        "cpu": others * wobble,
        "disk": float(rng.choice((1e6, 5e7, 3e8))) * wobble,
        "net": float(rng.choice((1e6, 1e8, 1e9))) * wobble,
        "mem": d.node_mem * float(rng.uniform(0.1, 0.5)) * wobble,
        "io_psi": np.full(shape, float(rng.uniform(0.0, 0.15))),
        "cpu_psi": np.full(shape, float(rng.uniform(0.0, 0.1))),
    }


def _fabric(d: Draft, tl: Timeline) -> tuple[Array, Array]:
    """Collective bytes/s per node over RDMA and over TCP (T,)."""
    if d.fabric is None:
        zero = np.zeros_like(tl.t)
        return zero, zero
    rate = tl.running / tl.step * d.link_bytes / d.accum * d.gpus
    return (rate, np.zeros_like(rate)) if d.fabric.rdma else (np.zeros_like(rate), rate)


def node_signals(
    rng: Rng, d: Draft, cl: Cluster, acc: Accidents, tl: Timeline, pod: dict[str, Array]
) -> tuple[dict[str, Array], dict[str, Array]]:
    """The node's counters' rates (``mode_*`` for node_cpu_seconds_total) and gauges (pods, T).

    The rates also hold the pod's own part of the node's netdev bytes (``sc_net_rx_bps``,
    ``sc_net_tx_bps``), which the sidecar counts in the pod's network namespace.
    """
    n = tl.t.size
    nb = _neighbours(rng, d, acc, n)
    rdma, tcp = _fabric(d, tl)
    cpus = float(d.node_cpus)
    busy = np.clip(pod["cpu_cores"] + nb["cpu"] + 0.5, 0.0, cpus * 0.995)
    iowait = np.minimum(cpus - busy, pod["_iowait_procs"] * 0.7)
    system = np.minimum(busy, pod["_sys_cpu"] + 0.01 * busy + 0.2)
    local_read = pod["_read_rate"] * (1.0 if d.storage.local else 0.0) + pod["_refault"]
    disk = local_read + nb["disk"]
    busy_disk = np.clip(
        local_read / d.storage.bw_bps * (0.5 if d.storage.kind == "local-nvme" else 0.95) + nb["disk"] / 3e9, 0.0, 1.0
    )
    lustre = pod["_read_rate"] if d.storage.rdma else 0.0
    rates = {
        "mode_idle": cpus - busy - iowait,
        "mode_iowait": iowait,
        "mode_system": system,
        "mode_user": busy - system,
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": local_read / d.storage.request_bytes + nb["disk"] / 65536.0,
        "node_disk_busy_frac": busy_disk,
        "node_majfault_ps": pod["sc_majfault_ps"] + 5.0,
        "node_net_rx_bps": pod["_net_storage"] + tcp + nb["net"],
        "node_net_tx_bps": tcp
        + 0.02 * pod["_net_storage"]
        + nb["net"] * 0.6
        + tl.pause * (2e8 if d.storage.kind == "object-store" else 0.0),
        "ib_rx_bps": rdma + lustre + 2e4 + 0.0 * busy,
        "ib_tx_bps": rdma + 2e4 + 0.0 * busy,
    }
    # the pod's own namespace (the sidecar's count): its network-storage reads, its collectives over
    # sockets and its checkpoint uploads; not the neighbours' or daemons' bytes, nor anything over RDMA
    own = np.zeros_like(pod["_net_storage"])
    rates["sc_net_rx_bps"] = own + pod["_net_storage"] + tcp
    rates["sc_net_tx_bps"] = (
        own + tcp + 0.02 * pod["_net_storage"] + tl.pause * (2e8 if d.storage.kind == "object-store" else 0.0)
    )
    some = {k: pod[f"sc_psi_{k}"] for k in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full")}
    contention = np.clip((busy / cpus - 0.85) / 0.15, 0.0, 1.0) * 0.8
    rates["node_psi_cpu_some"] = 1 - (1 - some["cpu_some"] * 0.7) * (1 - nb["cpu_psi"]) * (1 - contention)
    rates["node_psi_io_some"] = 1 - (1 - some["io_some"]) * (1 - nb["io_psi"])
    rates["node_psi_io_full"] = some["io_full"] * (1 - nb["io_psi"]) * 0.9
    rates["node_psi_mem_some"] = some["mem_some"]
    rates["node_psi_mem_full"] = some["mem_full"] * 0.8
    return rates, _memory_gauges(rng, d, cl, pod, nb, n)


def _memory_gauges(
    rng: Rng, d: Draft, cl: Cluster, pod: dict[str, Array], nb: dict[str, Array], n: int
) -> dict[str, Array]:
    """Node memory and swap as fractions, and the node's CPU count."""
    used = pod["mem_working_set_bytes"] + nb["mem"] + 8e9
    pressed = bool(pod["_faults"].mean() > 200.0)
    if pressed and d.mem_limit is None:
        # no limit: the node itself runs out, its available memory at the reclaim watermarks
        avail = np.full_like(used, 0.01) + np.abs(rng.normal(0.0, 0.01, used.shape))
    else:
        avail = np.clip(1.0 - used / d.node_mem, 0.02, 0.98)
    if cl.swap == "none":
        swap = np.zeros_like(used)
    else:
        grow = np.linspace(0.0, 1.0, n)[None, :]
        swap = np.clip(
            float(rng.uniform(0.0, 0.05)) + (float(rng.uniform(0.15, 0.5)) * (0.6 + 0.4 * grow) if pressed else 0.0),
            0.0,
            1.0,
        ) * np.ones_like(used)
    return {
        "node_cpus": np.full_like(used, float(d.node_cpus)),
        "node_mem_avail_frac": avail,
        "node_swap_used_frac": swap,
    }
