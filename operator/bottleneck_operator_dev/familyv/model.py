"""One training rank's loop as a closed queueing network, and the label it implies.

Customers are the batches in flight: the loader's prefetch (workers x prefetch factor, as PyTorch's
DataLoader keeps them) plus the one being trained on. A cycle visits:

0. storage latency (delay station: a remote store serves many requests at once, each waits its latency);
1. storage bandwidth (queueing station: the client's share of the device or the store);
2. decode (load-dependent: W workers, each batch taking core-seconds, capped by the cores the
   cgroup quota and the node's neighbours leave);
3. swap (queueing station: pages the loader faults back in when its working set exceeds the cgroup
   limit; zero demand without pressure);
4. host-to-device copy (queueing station on the copy engine when pinned and asynchronous);
5. the trainer (queueing station, one batch at a time): GPU kernels by the roofline, the part of
   the gradient exchange that backward does not hide, and a pageable copy, which is synchronous.

Data-parallel ranks step together: a job's rate is its slowest rank's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyv.mva import Kind, Solution, solve

FloatArray = npt.NDArray[np.float64]

KINDS = (Kind.DELAY, Kind.QUEUE, Kind.LOAD_DEPENDENT, Kind.QUEUE, Kind.QUEUE, Kind.QUEUE)
STORAGE_LAT, STORAGE_BW, DECODE, SWAP, H2D, TRAINER = range(6)
MAX_PREFETCH = 8  # batches in flight beyond this change the solved throughput by well under 1 %


class Resource(IntEnum):
    """What the label may name: a station, or one part of the trainer's demand."""

    STORAGE = 0
    CPU = 1
    HOST_MEMORY = 2
    PCIE = 3
    NVLINK = 4
    NETWORK = 5
    COMPUTE = 6
    HBM = 7
    LAUNCH = 8


CLASS_OF = {
    Resource.STORAGE: Bottleneck.IO,
    Resource.CPU: Bottleneck.CPU,
    Resource.HOST_MEMORY: Bottleneck.MEMORY,
    Resource.PCIE: Bottleneck.INTERCONNECT,
    Resource.NVLINK: Bottleneck.INTERCONNECT,
    Resource.NETWORK: Bottleneck.INTERCONNECT,
    Resource.COMPUTE: Bottleneck.GPU,
    Resource.HBM: Bottleneck.MEMORY,
    Resource.LAUNCH: Bottleneck.GPU,
}


@dataclass(frozen=True)
class Rank:
    """One rank's loop in one phase (per step unless said otherwise).

    Attributes:
        read_bytes: bytes read from storage per batch (page-cache hits excluded).
        req_bytes: bytes per storage request.
        storage_bw: the rank's share of the storage's bandwidth, B/s.
        storage_lat: seconds per request.
        storage_conc: requests each worker keeps outstanding.
        decode_cs: core-seconds of decode and augmentation per batch.
        workers: DataLoader workers of the rank.
        prefetch: batches each worker prepares ahead.
        cpu_quota: cores the cgroup quota leaves the rank's workers (inf: no limit).
        cpu_avail: cores the node's neighbours leave the rank's workers.
        swap_s: seconds of swap-in per batch.
        h2d_bytes: bytes copied host to device per batch.
        pcie_bw: copy rate, B/s (pinned: near the link; pageable: staged, about half).
        pinned: pinned and non_blocking, so the copy overlaps the trainer.
        flops_mm, bytes_mm: matrix-multiply kernels' FLOPs and HBM bytes per step.
        flops_el, bytes_el: the other kernels' (norms, activations, optimiser, embeddings).
        peak: FLOP/s the kernels reach at this board's clock.
        hbm_bw: HBM bytes/s the kernels reach.
        launch_s: host time to launch one step's kernels (Python, framework and driver).
        intra_s: intra-node all-reduce time per step.
        intra_over_pcie: the intra-node exchange crosses PCIe (no NVLink).
        inter_s: inter-node all-reduce time per step.
        overlap: share of backward time that hides the exchange.
        exposed_floor: share of the exchange that never hides (the last bucket).
    """

    read_bytes: float
    req_bytes: float
    storage_bw: float
    storage_lat: float
    storage_conc: float
    decode_cs: float
    workers: int
    prefetch: int
    cpu_quota: float
    cpu_avail: float
    swap_s: float
    h2d_bytes: float
    pcie_bw: float
    pinned: bool
    flops_mm: float
    bytes_mm: float
    flops_el: float
    bytes_el: float
    peak: float
    hbm_bw: float
    launch_s: float
    intra_s: float
    intra_over_pcie: bool
    inter_s: float
    overlap: float
    exposed_floor: float

    @property
    def population(self) -> int:
        return min(self.workers * self.prefetch, MAX_PREFETCH) + 1

    @property
    def decode_cap(self) -> float:
        """Cores the workers can use at once: the pool, the quota or what neighbours leave."""
        return max(0.25, min(float(self.workers), self.cpu_quota, self.cpu_avail))


@dataclass(frozen=True)
class Parts:
    """A rank's trainer demand taken apart, seconds per step, one value per speed vector."""

    compute: FloatArray  # compute-bound kernels by the roofline
    hbm: FloatArray  # HBM-bound kernels by the roofline
    launch: FloatArray  # host time to launch them
    gpu: FloatArray  # kernels: max(compute + hbm, launch)
    comm: FloatArray  # the whole exchange (NCCL kernels run this long)
    exposed: FloatArray  # the part backward does not hide
    h2d: FloatArray  # the host-to-device copy


def parts(r: Rank, speeds: FloatArray) -> Parts:
    """The trainer's parts with each resource's speed multiplied by ``speeds[:, resource]``.

    Args:
        r: the rank.
        speeds: shape (S, len(Resource)).
    """
    s = np.atleast_2d(speeds)
    peak, bw = r.peak * s[:, Resource.COMPUTE], r.hbm_bw * s[:, Resource.HBM]
    compute = np.zeros(len(s))
    hbm = np.zeros(len(s))
    for flops, nbytes in ((r.flops_mm, r.bytes_mm), (r.flops_el, r.bytes_el)):
        # the roofline, per kernel group: whichever of math and memory takes longer
        tc, tm = flops / peak, nbytes / bw
        math_bound = tc >= tm
        compute += np.where(math_bound, tc, 0.0)
        hbm += np.where(math_bound, 0.0, tm)
    launch = r.launch_s / s[:, Resource.LAUNCH]
    gpu = np.maximum(compute + hbm, launch)
    intra = r.intra_s / s[:, Resource.PCIE if r.intra_over_pcie else Resource.NVLINK]
    comm = intra + r.inter_s / s[:, Resource.NETWORK]
    backward = (2.0 / 3.0) * (compute + hbm)  # backward is about twice the forward's work
    exposed = np.maximum(comm - r.overlap * backward, r.exposed_floor * comm)
    h2d = r.h2d_bytes / (r.pcie_bw * s[:, Resource.PCIE])
    return Parts(compute, hbm, launch, gpu, comm, exposed, h2d)


def station_demands(r: Rank, speeds: FloatArray, p: Parts | None = None) -> FloatArray:
    """Service demand per batch at the six stations, shape (S, 6) for speeds of shape (S, len(Resource)).

    ``p``: the trainer's parts at these speeds, when the caller has them already.
    """
    s = np.atleast_2d(speeds)
    p = parts(r, s) if p is None else p
    requests = r.read_bytes / r.req_bytes
    storage = s[:, Resource.STORAGE]
    d = np.zeros((len(s), 6))
    d[:, STORAGE_LAT] = requests * r.storage_lat / max(r.storage_conc * r.workers, 1.0) / storage
    d[:, STORAGE_BW] = r.read_bytes / r.storage_bw / storage
    d[:, DECODE] = r.decode_cs / s[:, Resource.CPU]
    d[:, SWAP] = r.swap_s / s[:, Resource.HOST_MEMORY]
    d[:, H2D] = p.h2d if r.pinned else 0.0
    d[:, TRAINER] = p.gpu + p.exposed + (0.0 if r.pinned else p.h2d)
    return d


def decode_alpha(r: Rank) -> FloatArray:
    """Rate multiplier of the decode station with j = 1..N batches there: min(j, cores usable)."""
    j = np.arange(1, r.population + 1, dtype=np.float64)
    return np.minimum(j, r.decode_cap)


def solve_ranks(ranks: list[Rank], speeds: FloatArray) -> Solution:
    """Solve every (rank, speed vector) pair at once; all ranks share one population.

    Args:
        ranks: the ranks (same workers and prefetch).
        speeds: shape (S, len(Resource)).

    Returns:
        The solution with batch index ``rank * S + speed``.
    """
    n = ranks[0].population
    demands = np.concatenate([station_demands(r, speeds) for r in ranks])
    alpha = np.repeat(np.stack([decode_alpha(r) for r in ranks]), len(speeds), axis=0)[:, None, :]
    return solve(demands, KINDS, n, alpha)


SPEEDS = np.vstack([np.ones(len(Resource)), 1.0 + np.eye(len(Resource))])  # base, then each halved


def gains(phases: list[tuple[float, list[Rank]]]) -> FloatArray:
    """How much faster the job trains with each resource's demand halved, for it alone.

    Args:
        phases: (seconds, the ranks) of each training phase of the window.

    Returns:
        Shape (len(Resource),): the window's time for the same batches, before over after.
    """
    # every phase and rank in one solve: they share the population
    ranks = [r for _, rs in phases for r in rs]
    sol = solve_ranks(ranks, SPEEDS)
    x = sol.throughput.reshape(len(ranks), len(SPEEDS))
    before = 0.0
    after = np.zeros(len(Resource))
    i = 0
    for seconds, rs in phases:
        pace = x[i : i + len(rs)].min(axis=0)  # the slowest rank sets the pace
        i += len(rs)
        before += seconds
        after += seconds * pace[0] / pace[1:]  # the same batches at the faster pace
    return before / after


def label(phases: list[tuple[float, list[Rank]]]) -> tuple[Resource, FloatArray]:
    """The resource whose halved demand speeds the job most, and every resource's gain."""
    g = gains(phases)
    return Resource(int(np.argmax(g))), g


def mechanism_of(resource: Resource, rank: Rank, storage_local: bool) -> Mechanism:
    """How the binding resource limits the job."""
    if resource is Resource.CPU:
        cap = rank.decode_cap
        if cap >= rank.workers - 1e-9 and rank.workers < min(rank.cpu_quota, rank.cpu_avail):
            return Mechanism.TOO_FEW_WORKERS
        return Mechanism.THROTTLED if rank.cpu_quota <= rank.cpu_avail else Mechanism.SATURATED
    return {
        Resource.STORAGE: Mechanism.LOCAL_DISK if storage_local else Mechanism.NETWORK_STORAGE,
        Resource.HOST_MEMORY: Mechanism.HOST_MEMORY_PRESSURE,
        Resource.PCIE: Mechanism.PCIE,
        Resource.NVLINK: Mechanism.NVLINK,
        Resource.NETWORK: Mechanism.NETWORK,
        Resource.COMPUTE: Mechanism.COMPUTE,
        Resource.HBM: Mechanism.HBM_BANDWIDTH,
        Resource.LAUNCH: Mechanism.LAUNCH_BOUND,
    }[resource]
