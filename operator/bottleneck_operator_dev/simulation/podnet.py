"""The pod's own network bytes: what the collector counts on the pod's network namespace.

A pod's containers share one network namespace, whose interfaces (``lo`` left out) carry the pod's
reads from network storage, its collectives over sockets and its checkpoint writes to network storage:
the very parts the node's interfaces sum (:mod:`.hostside`), without a neighbour's bytes or RDMA's
(which bypasses the kernel's network stack), plus a little traffic of its own (its metrics and logs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.simulation.scenario import Scenario
from bottleneck_operator_dev.simulation.state import F, JobState, cumulative

# The node's own traffic on its interfaces (kubelet, DNS, the exporters' scrapes), B/s: received, sent.
NODE_NET_RX_BACKGROUND = 2e5
NODE_NET_TX_BACKGROUND = 1e5
# Seeds, with the job's seed, the generator of the pods' own network bytes.
POD_NET_STREAM = 0x4E7


@dataclass(frozen=True)
class PodNet:
    """Each pod's own bytes/s through the kernel's network stack, part by part (shape (P, n))."""

    storage: F  # reads from network storage (NFS, object stores); local block reads are not network
    comm: F  # collectives between nodes over sockets (zero over RDMA, which bypasses the stack)
    ckpt: F  # checkpoint writes to network storage


def pod_network_parts(sc: Scenario, *, read_bps: F, local: float, a: F, evaluation: F, step: F, ckpt: F) -> PodNet:
    """The per-pod terms the node's network bytes sum (no random draw).

    Args:
        sc: the scenario.
        read_bps: bytes/s each pod's loader reads; local: 1.0 for local storage, else 0.0.
        a / evaluation / ckpt: share of each interval training / in evaluation / checkpointing.
        step: per-pod, per-sample step time.
    """
    env = sc.env
    n_nodes_job = sc.n_nodes
    inter = 2 * (n_nodes_job - 1) / n_nodes_job * sc.grad_bytes if n_nodes_job > 1 else 0.0
    comm = np.zeros(step.shape)
    if inter and not env.rdma:  # RDMA traffic never passes the kernel's network stack
        comm = (a * (1 - evaluation) * inter / step) / sc.pods_per_node
    storage = read_bps * (1 - local)
    written = ckpt * sc.grad_bytes * 3 / max(env.ckpt_len_s, 1.0) * (1 - local)
    return PodNet(np.asarray(storage), np.asarray(comm), np.asarray(written))


def pod_network(sc: Scenario, st: JobState, net: PodNet, dt: F) -> None:
    """Fill ``st.pod``'s ``net_rx_c`` and ``net_tx_c``: the pod's counters of its own interfaces.

    Its own traffic is a tenth to a half of the node's background, shared out among the pods a node
    holds, so that a node's pods never add up to more than it carries. The noise comes from a
    generator of its own, seeded by the job's seed, so that every earlier draw stays as it was.
    """
    own = np.random.default_rng([sc.seed, POD_NET_STREAM])
    share = own.uniform(0.1, 0.5, (net.comm.shape[0], 1)) / sc.pods_per_node
    rx = net.storage + net.comm + NODE_NET_RX_BACKGROUND * share
    tx = net.comm + net.ckpt + NODE_NET_TX_BACKGROUND * share
    st.pod["net_rx_c"] = cumulative(rx * np.exp(own.normal(0.0, 0.03, rx.shape)), dt)
    st.pod["net_tx_c"] = cumulative(tx * np.exp(own.normal(0.0, 0.03, tx.shape)), dt)
