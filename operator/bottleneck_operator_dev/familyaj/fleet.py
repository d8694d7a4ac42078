"""Where a Job runs: its nodes, its neighbours on them, its storage, and how their load moves.

A Job of family AJ is placed in a shared fleet: it takes some or all GPUs of one or more nodes of
one kind, and shares each node's CPUs, memory, local disk and NICs with the pods around it, and the
fleet's remote storage with every other reader. Neighbour load changes during the window (pods
arrive and leave), which is why a window is cut into segments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyaj.hardware import GB, GPUS, NODE_KINDS, STORAGES, Gpu, NodeKind, Storage

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Neighbours:
    """What the other pods on one node use, at a load multiplier of 1.

    Attributes:
        pods: how many other pods share the node.
        cpu_cores: cores they keep busy.
        disk_bps: local disk reads they make.
        eth_bps: kernel-stack network bytes they receive (and about half that they send).
        rdma_bps: RDMA bytes they move per direction.
        mem_gib: host memory they hold.
        io_procs: their tasks waiting on I/O, on average.
        majfault_ps: their major faults per second.
    """

    pods: int
    cpu_cores: float
    disk_bps: float
    eth_bps: float
    rdma_bps: float
    mem_gib: float
    io_procs: float
    majfault_ps: float


@dataclass(frozen=True)
class Placement:
    """A Job's place in the fleet.

    Attributes:
        kind: the node kind of all its pods.
        pods: pods (one per node).
        gpus_per_pod: GPUs each pod holds.
        storage: where its dataset lives.
        server_share: share of the remote storage's per-client figure this Job gets (fleet load).
        neighbours: per pod, the node's other pods.
        seg_edges: segment boundaries, seconds from the window start (first <= -lead, last = duration).
        seg_load: neighbour load multiplier per segment.
        seg_server: remote-storage share multiplier per segment.
        power_limit_w: the enforced GPU power limit.
        clock_spread: per pod and GPU, the share of the clock each GPU sustains (silicon spread).
    """

    kind: NodeKind
    pods: int
    gpus_per_pod: int
    storage: Storage
    server_share: float
    neighbours: tuple[Neighbours, ...]
    seg_edges: FloatArray
    seg_load: FloatArray
    seg_server: FloatArray
    power_limit_w: float
    clock_spread: FloatArray

    @property
    def gpu(self) -> Gpu:
        return GPUS[self.kind.gpu]

    @property
    def world(self) -> int:
        return self.pods * self.gpus_per_pod


def draw_kind(rng: np.random.Generator, only: tuple[str, ...] = ()) -> NodeKind:
    """A node kind, as common as the fleet has it (among ``only`` when given)."""
    kinds = [k for k in NODE_KINDS.values() if not only or k.key in only]
    weights = np.array([k.weight for k in kinds])
    return kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]


def draw_neighbours(rng: np.random.Generator, kind: NodeKind, free_gpus: int, busy: float) -> Neighbours:
    """The other pods on one node: GPU Jobs on the free GPUs, plus CPU-only pods.

    Args:
        rng: the Job's generator.
        kind: the node kind.
        free_gpus: GPUs of the node this Job does not hold.
        busy: how loaded the fleet is (0..1): scales how much the neighbours use.
    """
    gpu_pods = int(rng.integers(0, free_gpus + 1)) if free_gpus else 0
    cpu_pods = int(rng.poisson(1.5 * busy))
    pods = gpu_pods + cpu_pods
    if pods == 0:
        return Neighbours(0, 0.3, 0.0, 2e6, 0.0, 8.0, 0.0, 0.5)
    share = busy * rng.uniform(0.2, 1.0)
    cpu = kind.cpus * share * rng.uniform(0.1, 0.5) * min(1.0, pods / 3)
    disk = kind.disk_bps * share * rng.uniform(0.0, 0.35) * (gpu_pods > 0)
    eth = kind.eth_bps * share * rng.uniform(0.0, 0.3)
    rdma = kind.nic_bps * share * rng.uniform(0.0, 0.3) * (gpu_pods > 0) if kind.fabric != "tcp" else 0.0
    mem = kind.memory_gib * rng.uniform(0.05, 0.45) * min(1.0, pods / 2)
    return Neighbours(
        pods=pods,
        cpu_cores=float(cpu),
        disk_bps=float(disk),
        eth_bps=float(eth),
        rdma_bps=float(rdma),
        mem_gib=float(mem),
        io_procs=float(rng.uniform(0.0, 2.0) * share),
        majfault_ps=float(rng.lognormal(1.0, 1.0)),
    )


def draw_segments(rng: np.random.Generator, lead: float, duration: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Segment edges and the neighbour and storage-server load multipliers in each."""
    n_seg = int(rng.integers(1, 5))
    inner = np.sort(rng.uniform(-lead, duration, n_seg - 1))
    edges = np.concatenate([[-lead - 1.0], inner, [duration + 1.0]])
    load = np.clip(rng.lognormal(0.0, 0.35, n_seg), 0.3, 2.0)
    server = np.clip(rng.lognormal(0.0, 0.25, n_seg), 0.4, 1.5)
    return edges.astype(np.float64), load.astype(np.float64), server.astype(np.float64)


def draw_placement(
    rng: np.random.Generator,
    lead: float,
    duration: float,
    *,
    kinds: tuple[str, ...] = (),
    multi: bool | None = None,
    min_gpus: int = 1,
) -> Placement:
    """A placement: node kind (among ``kinds``), pods, storage, neighbours, load segments, power limit.

    Args:
        rng: the Job's generator.
        lead: seconds the Job ran before the window.
        duration: the window's length, seconds.
        kinds: node kinds to choose from (all when empty).
        multi: whether the Job spans several nodes (drawn when None).
        min_gpus: the fewest GPUs per pod.
    """
    kind = draw_kind(rng, kinds)
    if multi is None:
        multi = bool(rng.random() < 0.3)
    pods = int(rng.choice([2, 2, 3, 4, 4, 6, 8])) if multi else 1
    if multi:
        gpp = kind.gpus if rng.random() < 0.8 else max(1, kind.gpus // 2)
    else:
        gpp = int(rng.choice([g for g in (1, 2, 4, 8) if min(min_gpus, kind.gpus) <= g <= kind.gpus]))
    storage = _draw_storage(rng, kind)
    busy = float(rng.uniform(0.1, 0.9))
    neighbours = tuple(draw_neighbours(rng, kind, kind.gpus - gpp, busy) for _ in range(pods))
    edges, load, server = draw_segments(rng, lead, duration)
    gpu = GPUS[kind.gpu]
    capped = rng.random() < 0.3
    limit = gpu.tdp_w * (float(rng.choice([0.6, 0.7, 0.75, 0.8, 0.85, 0.9])) if capped else 1.0)
    spread = np.clip(1.0 - np.abs(rng.normal(0.0, 0.012, (pods, gpp))), 0.95, 1.0)
    return Placement(
        kind=kind,
        pods=pods,
        gpus_per_pod=gpp,
        storage=storage,
        server_share=float(rng.uniform(0.5, 1.0)),
        neighbours=neighbours,
        seg_edges=edges,
        seg_load=load,
        seg_server=server,
        power_limit_w=float(limit),
        clock_spread=spread.astype(np.float64),
    )


def _draw_storage(rng: np.random.Generator, kind: NodeKind) -> Storage:
    keys = ["node-disk", "node-disk-mmap", "nfs", "lustre-rdma", "object-http", "gcsfuse"]
    weights = [4.0, 1.0, 2.5, 1.5 if kind.fabric != "tcp" else 0.0, 1.5, 1.0]
    if kind.disk_kind == "cloud-pd":
        keys.append("efs")
        weights.append(1.5)
    w = np.array(weights)
    return STORAGES[keys[int(rng.choice(len(keys), p=w / w.sum()))]]


def storage_bps(pl: Placement, nb: Neighbours, load: float, server: float) -> float:
    """What one pod's node can read from the Job's storage in one segment, bytes/s."""
    st, kind = pl.storage, pl.kind
    if st.local:
        return max(kind.disk_bps - nb.disk_bps * load, 0.05 * kind.disk_bps)
    per_client = st.per_client_bps * pl.server_share * min(server, 1.2)
    if st.transport == "rdma":
        return min(per_client, max(kind.nic_bps - nb.rdma_bps * load, 0.1 * kind.nic_bps))
    return min(per_client, max(0.9 * kind.eth_bps - nb.eth_bps * load, 0.05 * kind.eth_bps))


__all__ = ["GB", "Neighbours", "Placement", "draw_placement", "storage_bps"]
