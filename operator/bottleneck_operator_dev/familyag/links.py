"""Collectives between the Job's GPUs: how long they take and which links carry their bytes.

Costs follow the bus-bandwidth accounting of nccl-tests (doc/PERFORMANCE.md): a ring all-reduce
moves ``2 (n-1)/n`` of the payload through every rank's link, an all-gather or reduce-scatter
``(n-1)/n``. Rings cross each node boundary once, so a node's fabric carries what one rank's link
carries; an all-to-all sends each rank's payload to all others, the off-node share over the fabric.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator_dev.familyag.scenario import Scenario

NCCL_SM_SHARE = 0.12  # share of SMs NCCL's channels keep busy during a collective (assumed)


@dataclass(frozen=True)
class Collective:
    """One collective: its duration and the bytes one GPU (or one node's fabric) moves, each way.

    Attributes:
        seconds: how long the comm stream is busy with it (0 when there is nothing to move).
        intra: bytes a GPU sends to GPUs of its own node (NVLink, or PCIe peer-to-peer without it).
        node: bytes the node sends over the fabric.
    """

    seconds: float = 0.0
    intra: float = 0.0
    node: float = 0.0


@dataclass(frozen=True)
class CommCosts:
    """The collectives of one step.

    Attributes:
        kind: "none" (one GPU), "ddp", "fsdp", "moe" or "embed".
        bucket: all-reduce after each of the three backward groups (DDP and the dense part of MoE/embed).
        gather: FSDP all-gather before each forward and backward group.
        scatter: FSDP reduce-scatter after each backward group.
        a2a: all-to-all inside a group (MoE: every group; embed: first forward and last backward).
        nvlink: intra-node traffic goes over NVLink (else over PCIe).
        rdma: the fabric is RDMA (InfiniBand/RoCE): node netdev counters never see it.
    """

    kind: str
    bucket: Collective
    gather: Collective
    scatter: Collective
    a2a: Collective
    nvlink: bool
    rdma: bool


def _bandwidths(sc: Scenario, a2a: bool) -> tuple[float, float]:
    """Per-GPU intra-node bandwidth and the node's fabric bandwidth a large collective reaches, B/s."""
    gpu = sc.gpu
    if gpu.nvlink_bps > 0:
        intra = gpu.nvlink_bps * 0.8 * sc.nvlink_health * (0.75 if a2a else 1.0)
    else:
        intra = gpu.pcie_bps * 0.7 / sc.pcie_share * (0.8 if a2a else 1.0)
    fabric = sc.fabric
    node = fabric.port_bps * sc.nic_ports * fabric.efficiency if fabric else 0.0
    return intra, node


def _free(sc: Scenario, ample: frozenset[str]) -> tuple[bool, bool]:
    """Whether the intra-node links and the fabric are made ample."""
    intra = ("nvlink" if sc.gpu.nvlink_bps > 0 else "pcie") in ample
    return intra, "network" in ample


def collective(sc: Scenario, ample: frozenset[str], payload: float, pattern: str) -> Collective:
    """One collective of ``payload`` bytes per rank: "allreduce", "gather" (or reduce-scatter) or "a2a".

    Args:
        sc: the Job.
        ample: stages made ample (an ample link moves its bytes in no time).
        payload: the tensor size per rank (all-reduce, all-gather output) or bytes sent (all-to-all).
        pattern: the collective's traffic pattern.

    Returns:
        Its duration and bytes.
    """
    n, per_node, nodes = sc.ranks, sc.gpus_per_pod, sc.pods
    if n <= 1 or payload <= 0.0:
        return Collective()
    if pattern == "a2a":
        intra_bytes = payload * (per_node - 1) / n
        node_bytes = per_node * payload * (n - per_node) / n
    else:
        factor = (2.0 if pattern == "allreduce" else 1.0) * (n - 1) / n
        intra_bytes = factor * payload * (1.0 if nodes == 1 else (per_node - 1) / per_node)
        node_bytes = factor * payload if nodes > 1 else 0.0
    intra_bw, node_bw = _bandwidths(sc, pattern == "a2a")
    intra_free, net_free = _free(sc, ample)
    t_intra = 0.0 if intra_free or intra_bytes <= 0 else intra_bytes / intra_bw
    t_node = 0.0 if net_free or node_bytes <= 0 else node_bytes / node_bw
    latency = 0.0 if (intra_free or per_node == 1) and (net_free or nodes == 1) else 30e-6 * (1 + nodes)
    return Collective(max(t_intra, t_node) + latency, intra_bytes, node_bytes)


def comm_costs(sc: Scenario, ample: frozenset[str] = frozenset()) -> CommCosts:
    """The step's collectives for the Job's parallelism."""
    m = sc.model
    kind = m.comm if sc.ranks > 1 else "none"
    dense = m.trainable * (0.2 if kind in ("moe", "embed") else 1.0)
    bucket = collective(sc, ample, dense * sc.grad_bytes / 3.0, "allreduce") if kind != "fsdp" else Collective()
    gather = scatter = a2a = Collective()
    if kind == "fsdp":
        gather = collective(sc, ample, m.params * 2.0 / 2.5, "gather")
        scatter = collective(sc, ample, m.params * sc.grad_bytes / 3.0, "gather")
    elif kind == "moe":
        a2a = collective(sc, ample, sc.batch * m.a2a / 5.0, "a2a")
    elif kind == "embed":
        a2a = collective(sc, ample, sc.batch * m.a2a / 2.0, "a2a")
    return CommCosts(
        kind=kind,
        bucket=bucket,
        gather=gather,
        scatter=scatter,
        a2a=a2a,
        nvlink=sc.gpu.nvlink_bps > 0,
        rdma=bool(sc.fabric and sc.fabric.rdma),
    )
