"""What each stage can deliver on a given placement: bandwidths, cores and per-call costs.

The penalties for a bad place (far socket, floating threads, a PCIe path through the root complex,
inter-node traffic staged through host memory) are factors drawn from ranges documented in
docs/familyam.md; everything else is a datasheet figure from :mod:`.hardware`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyam.hardware import PCIE_X16_GBPS, Board, Placement

GB = 1e9
# DCGM: DRAM activity ~0.8 is the practical maximum (TELEMETRY.md "Reading the profiling metrics").
HBM_PRACTICAL = 0.8
# Cross-socket (UPI / Infinity Fabric) paths deliver a share of local bandwidth: an assumed 0.6-0.75.
FAR_SOCKET_BW = 0.7
# Cores the trainer's main process (Python, launches, the optimiser) keeps for itself.
MAIN_CORES = 1.5


@dataclass(frozen=True)
class Cores:
    """The cores the loader workers really get, and which bound set it."""

    effective: float
    demand: float
    bound: Mechanism


def loader_cores(workers: int, p: Placement) -> Cores:
    """Workers run one core each; the CFS quota, the node's free cores or the worker count caps them.

    Floating threads on a two-socket node (CPU manager ``none``) and pinned cores on the far socket
    lose some throughput to remote memory; that loss is applied as fewer effective cores.
    """
    caps: dict[Mechanism, float] = {Mechanism.TOO_FEW_WORKERS: float(workers)}
    if p.cpu_limit is not None:
        caps[Mechanism.THROTTLED] = max(0.5, p.cpu_limit - MAIN_CORES)
    caps[Mechanism.SATURATED] = max(0.5, p.node_cpus - p.neighbour_cores - MAIN_CORES)
    bound = min(caps, key=lambda m: caps[m])
    penalty = 1.0
    if p.sockets == 2 and p.cpu_policy == "none":
        penalty *= 0.9
    if p.far_socket:
        penalty *= 0.85
    return Cores(caps[bound] * penalty, float(workers), bound)


def launch_factor(p: Placement, cpu_demand: float) -> float:
    """How much slower the main thread issues launches than on a quiet near core (>= 1).

    A CFS quota below the pod's demand parks every thread, the launcher included, for the rest of
    each period; a far-socket core reaches the GPU's doorbells across the socket link; floating
    threads migrate among a crowded node's cores.
    """
    factor = 1.0
    if p.cpu_limit is not None and cpu_demand > p.cpu_limit:
        factor += min(2.0, cpu_demand / p.cpu_limit - 1.0)
    if p.far_socket:
        factor += 0.25
    if p.cpu_policy == "none" and p.neighbour_cores > 0.6 * p.node_cpus:
        factor += 0.3
    return factor


def h2d_gbps(board: Board, p: Placement, pinned: bool) -> float:
    """Host-to-device copy rate, GB/s: pinned DMA near the link rate, pageable staged through a bounce buffer."""
    rate = PCIE_X16_GBPS[board.pcie_gen] * (0.8 if pinned else 0.4)
    return rate * (FAR_SOCKET_BW if p.far_socket or (p.sockets == 2 and p.cpu_policy == "none" and not pinned) else 1.0)


def intra_link(board: Board, p: Placement) -> tuple[float, Mechanism]:
    """All-reduce bandwidth between the pod's GPUs, GB/s per direction, and the link it uses."""
    if board.nvlink_gbps > 0:
        return board.nvlink_gbps / 2.0 * 0.8, Mechanism.NVLINK
    pcie = PCIE_X16_GBPS[board.pcie_gen]
    if p.gpus_share_switch:
        return pcie * 0.8, Mechanism.PCIE
    # through the root complex, and across the socket link when the GPUs sit under both sockets
    return pcie * (0.35 if p.sockets == 2 else 0.5), Mechanism.PCIE


def inter_link(board: Board, p: Placement) -> float:
    """All-reduce bandwidth between nodes, GB/s per node: RDMA with GPUDirect, staged, or TCP."""
    link = p.link_gbps * p.nics
    if p.rdma and p.gpudirect:
        return link * 0.9
    if p.rdma:
        # staged through host memory: the NIC and a host bounce copy share the PCIe path
        return min(link * 0.8, PCIE_X16_GBPS[board.pcie_gen] * 0.5)
    return link * 0.6  # NCCL's socket transport over the kernel's TCP stack


def ring_factor(members: int) -> float:
    """Bytes each member moves per byte reduced in a ring all-reduce: 2(n-1)/n."""
    return 2.0 * (members - 1) / members if members > 1 else 0.0
