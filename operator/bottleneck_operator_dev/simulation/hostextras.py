"""Host quantities added after the first ones, from a generator of their own so that adding them left
every earlier draw in place: the pods' swap-ins and OOM kills, and the nodes' RDMA port counters.

RDMA (InfiniBand, RoCE) bypasses the kernel's network stack: its bytes show only on the adapters' port
counters (node-exporter's infiniband collector; TELEMETRY.md).
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.simulation.hostside import jitter, node_sum
from bottleneck_operator_dev.simulation.scenario import Scenario
from bottleneck_operator_dev.simulation.state import F, JobState, cumulative


def host_extras(
    sc: Scenario,
    st: JobState,
    side: np.random.Generator,
    *,
    x: dict[str, F],
    step: F,
    sps: F,
    a: F,
    evaluation: F,
    rel: F,
    dt: F,
    N: int,
) -> None:
    """The host quantities added after the first ones, from their own generator ``side``: the pods'
    swap-ins and OOM kills, and the nodes' RDMA port counters (arguments as :func:`host_state`'s)."""
    P, n = step.shape
    env = sc.env
    # Pages back from swap: the memory-pressure faults of a pod with swap to fault from (each swap-in
    # fault reads its page and, with swap readahead, up to seven neighbours); none without swap.
    # Under host memory pressure most faults are anonymous pages pushed out; elsewhere the few faults
    # are file pages (a swap-in now and then).
    pressure_faults = sps * sc.gpus_per_pod * sc.faults_per_sample * (0.8 if sc.mechanism == "mem-host" else 0.05)
    pages = side.uniform(1.0, 4.0) if env.swap_bytes > 0 else 0.0
    st.pod["swapin_c"] = cumulative(jitter(side, pressure_faults * pages, 0.1), dt)
    # The OOM killer ends a process of a pod at its memory limit now and then (a loader worker, a
    # tokenizer): the trainer goes on, the counter steps.
    kills = np.zeros((P, n))
    busy = np.flatnonzero(rel > env.startup_s)
    for _ in range(env.oom_kills if busy.size else 0):
        kills[int(side.integers(P)), int(side.choice(busy))] += 1.0
    st.pod["oom_c"] = np.cumsum(kills, axis=-1)
    _node_rdma(sc, st, side, step=step, a=a, evaluation=evaluation, dt=dt, N=N)


def _node_rdma(
    sc: Scenario, st: JobState, side: np.random.Generator, *, step: F, a: F, evaluation: F, dt: F, N: int
) -> None:
    """Bytes each InfiniBand/RoCE port of the nodes moves: the job's collectives over RDMA, split
    across the ports (NCCL spreads its rings over the rails), on top of the fabric's management
    traffic; idle adapters carry only that."""
    ports = sc.env.ib_ports
    if not ports:
        return
    n = step.shape[1]
    per_node = np.zeros((N, n))
    if sc.env.rdma and sc.n_nodes > 1:
        inter = 2 * (sc.n_nodes - 1) / sc.n_nodes * sc.grad_bytes
        per_pod = (a * (1 - evaluation) * inter / step) / sc.pods_per_node
        per_node = node_sum(per_pod, st.pod_node, N)
    share = np.clip(1.0 + side.normal(0.0, 0.05, (N, ports, 1)), 0.5, 1.5)
    share = share / share.sum(axis=1, keepdims=True)
    for key in ("ib_rx_c", "ib_tx_c"):
        idle = side.uniform(2e3, 5e4, (N, ports, n))
        rate = jitter(side, per_node[:, None, :] * share, 0.03) + idle
        st.node[key] = cumulative(rate, dt, side.uniform(1e12, 1e15, (N, ports, 1)))
