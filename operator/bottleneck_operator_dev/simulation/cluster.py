"""Simulated clusters for the cluster-wide analysis: many Jobs drawn as verdicts plus per-GPU summaries.

Not the telemetry simulator's per-second series (a thousand Jobs of those would take minutes to
draw): each Job is drawn at the level the cluster analysis reads, its verdict, where it ran, and
one summary per GPU. Workloads differ widely (their mix of verdicts, their size, their storage,
whether they run hot) and are pinned to parts of the cluster, so a healthy cluster has nodes and
racks that see far more IO-bound or throttled Jobs than others for no fault of their own. A
pattern plants one fault:

- ``slow-node-storage``: one node's local storage is slow; Jobs there turn IO-bound.
- ``degraded-nic``: one node's NIC runs at a fraction of its rate; multi-node Jobs there turn
  Interconnect-bound, and the pod on it lags its peers on network and activity.
- ``bad-gpu``: one GPU holds a low clock with slowdown reasons set; the Jobs that get it have a straggler.
- ``hot-filesystem``: one shared storage class is overloaded; Jobs reading from it turn IO-bound.
- ``power-capped-rack``: one rack's GPUs are power-capped; its Jobs run with throttled clocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.analysis.cluster.digest import JobDigest, PeerSample
from bottleneck_operator.analysis.cluster.summary import workload_of

PATTERNS: tuple[str, ...] = ("slow-node-storage", "degraded-nic", "bad-gpu", "hot-filesystem", "power-capped-rack")
CLASSES = ("IO", "CPU", "Interconnect", "GPU", "Memory")
SHARED_STORAGE = ("nfs-shared", "cephfs", "s3-fuse")
RACK_SIZE = 10
GPUS_PER_NODE = 8
CLOCK_MHZ = 1410.0
# How strongly a fault shows in the Jobs it touches (the rest keep their workload's behaviour).
FAULT_RATE = 0.85


@dataclass(frozen=True)
class Fault:
    """The planted fault: its pattern and where it is (node, storage class, rack; GPU for bad-gpu)."""

    pattern: str
    dimension: str
    location: str
    gpu: str | None = None


@dataclass(frozen=True)
class PlantedStraggler:
    """The peer a Job's straggler truly is."""

    pod: str
    gpu: str | None


@dataclass
class SimCluster:
    """A drawn cluster: its Jobs' digests, the fault (None: healthy), and each Job's true straggler."""

    jobs: list[JobDigest]
    fault: Fault | None
    stragglers: dict[tuple[str, str, str], PlantedStraggler] = field(default_factory=dict)
    racks: dict[str, str] = field(default_factory=dict)
    load: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Workload:
    name: str
    namespace: str
    probs: tuple[float, ...]  # over CLASSES
    pods: int
    gpus_per_pod: int
    storage: tuple[str, str]  # its usual storage class, and the one some of its runs use
    racks: tuple[int, ...]
    hot: float  # chance a run is mostly clock-throttled (a heavy kernel mix on a warm row)
    hours: float


def _workloads(rng: np.random.Generator, racks: int, count: int = 16) -> list[_Workload]:
    out = []
    for i in range(count):
        probs = rng.dirichlet(np.full(len(CLASSES), 0.6))
        shape = int(rng.choice([1, 2, 4, 8], p=[0.4, 0.2, 0.25, 0.15]))
        gpus = int(rng.choice([1, 4, 8], p=[0.3, 0.3, 0.4])) if shape > 1 else int(rng.choice([1, 2, 4, 8]))
        # Pinned to a node pool: a block of racks, some big, some small.
        usual, other = rng.choice(["local-nvme", *SHARED_STORAGE], size=2, replace=False)
        width = int(rng.integers(2, racks + 1))
        first = int(rng.integers(0, racks - width + 1))
        out.append(
            _Workload(
                name=f"wl{i}-{rng.choice(['resnet', 'llm', 'vit', 'rec', 'asr'])}",
                namespace=f"team-{i % 6}",
                probs=tuple(float(p) for p in probs),
                pods=shape,
                gpus_per_pod=gpus,
                storage=(str(usual), str(other)),
                racks=tuple(range(first, first + width)),
                hot=float(rng.choice([0.0, 0.05, 0.3])),
                hours=float(rng.uniform(0.5, 12.0)),
            )
        )
    return out


def draw_cluster(
    seed: int, *, jobs: int = 1000, nodes: int = 200, pattern: str | None = None, now: float = 1.8e9
) -> SimCluster:
    """One simulated cluster.

    Args:
        seed: the draw's seed (benchmarks and development use disjoint seeds).
        jobs: Jobs to draw.
        nodes: nodes of the cluster (racks of :data:`RACK_SIZE`).
        pattern: one of :data:`PATTERNS`, None for a healthy cluster.
        now: when the last Jobs ended.

    Returns:
        The cluster.
    """
    if pattern is not None and pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}: want one of {', '.join(PATTERNS)}")
    rng = np.random.default_rng(seed)
    racks = max(1, nodes // RACK_SIZE)
    workloads = _workloads(rng, racks)
    node_names = [f"gpu-node-{i}" for i in range(nodes)]
    rack_of = {n: f"rack-{min(i // RACK_SIZE, racks - 1)}" for i, n in enumerate(node_names)}
    fault = _fault(rng, pattern, node_names, racks, workloads)
    cluster = SimCluster(jobs=[], fault=fault, racks=rack_of, load=dict.fromkeys(node_names, 0))
    weights = rng.dirichlet(np.full(len(workloads), 1.0))
    for k in range(jobs):
        wl = workloads[int(rng.choice(len(workloads), p=weights))]
        _draw_job(rng, cluster, wl, k, node_names, now)
    return cluster


def _fault(
    rng: np.random.Generator, pattern: str | None, nodes: list[str], racks: int, workloads: list[_Workload]
) -> Fault | None:
    if pattern is None:
        return None
    if pattern == "hot-filesystem":
        used = sorted({s for w in workloads for s in w.storage if s in SHARED_STORAGE}) or list(SHARED_STORAGE)
        return Fault(pattern, "storage", str(rng.choice(used)))
    if pattern == "power-capped-rack":
        return Fault(pattern, "rack", f"rack-{int(rng.integers(0, racks))}")
    # A node some workload runs on, so the fault meets Jobs.
    wl = workloads[int(rng.integers(0, len(workloads)))]
    rack = int(rng.choice(wl.racks))
    node = nodes[min(rack * RACK_SIZE + int(rng.integers(0, RACK_SIZE)), len(nodes) - 1)]
    gpu = str(int(rng.integers(0, GPUS_PER_NODE))) if pattern == "bad-gpu" else None
    return Fault(pattern, "node", node, gpu)


def _place(
    rng: np.random.Generator, wl: _Workload, nodes: list[str], load: dict[str, int]
) -> list[tuple[str, list[str]]]:
    """Each pod's node and GPU indices: pods on distinct nodes of the workload's racks.

    The least-loaded nodes first, as kube-scheduler's default scoring spreads pods: every node of
    a busy cluster runs Jobs, as GPUs are too dear to leave idle.
    """
    pool = [n for r in wl.racks for n in nodes[r * RACK_SIZE : (r + 1) * RACK_SIZE]] or nodes
    order = np.argsort(np.array([load[n] for n in pool]) + rng.random(len(pool)))
    placed = []
    for i in order[: min(wl.pods, len(pool))]:
        node = pool[int(i)]
        load[node] += 1
        first = int(rng.integers(0, GPUS_PER_NODE - wl.gpus_per_pod + 1))
        placed.append((node, [str(first + g) for g in range(wl.gpus_per_pod)]))
    return placed


def _draw_job(
    rng: np.random.Generator, cluster: SimCluster, wl: _Workload, k: int, nodes: list[str], now: float
) -> None:
    placed = _place(rng, wl, nodes, cluster.load)
    storage = wl.storage[0] if rng.random() < 0.6 else wl.storage[1]
    name = f"{wl.name}-{k}"
    job_nodes = tuple(n for n, _ in placed)
    job_racks = tuple(sorted({cluster.racks[n] for n in job_nodes}))
    cls = CLASSES[int(rng.choice(len(CLASSES), p=wl.probs))]
    throttled = float(rng.uniform(0.6, 0.95)) if rng.random() < wl.hot else float(rng.uniform(0.0, 0.15))
    fault = cluster.fault
    touched = fault is not None and _touches(fault, job_nodes, job_racks, storage)
    bad_pod: int | None = None
    if fault is not None and touched and rng.random() < FAULT_RATE:
        cls, throttled, bad_pod = _faulted(rng, fault, cls, throttled, placed)
    active = _activity(rng, cls)
    seconds = wl.hours * 3600.0 * float(rng.uniform(0.5, 1.5))
    pods = [f"{name}-worker-{i}" for i in range(len(placed))]
    peers, planted = _peers(rng, pods, placed, cls, active, throttled, fault, bad_pod)
    digest = JobDigest(
        namespace=wl.namespace,
        name=name,
        bottleneck=cls,
        gpus=wl.pods * wl.gpus_per_pod,
        seconds=seconds,
        gpu_active=active,
        throttled=throttled,
        workload=workload_of(wl.namespace, "Job", name),
        locations={"node": job_nodes, "storage": (storage,), "fabric": _fabrics(job_racks), "rack": job_racks},
        action=_ACTIONS.get(cls),
        headroom=float(1.0 / max(active, 0.05)) if cls not in ("GPU",) else None,
        peers=tuple(peers) if len(peers) > 1 else (),
        end=now - float(rng.uniform(0, 6 * 24 * 3600.0)),
    )
    cluster.jobs.append(digest)
    if planted is not None and len(peers) > 1:
        cluster.stragglers[digest.key] = PlantedStraggler(pods[planted[0]], planted[1])


_ACTIONS = {
    "IO": "Cache the dataset on local NVMe or raise the storage's throughput",
    "CPU": "Give the data loader more CPU (workers, limits) or move decoding to the GPU",
    "Interconnect": "Overlap gradient all-reduce with compute or use a faster fabric",
    "Memory": "Raise the memory limit or shrink the host-side buffers",
}


def _fabrics(racks: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({f"ib-{int(r.split('-')[1]) // 5}" for r in racks}))


def _touches(fault: Fault, nodes: tuple[str, ...], racks: tuple[str, ...], storage: str) -> bool:
    if fault.dimension == "storage":
        return storage == fault.location
    if fault.dimension == "rack":
        return fault.location in racks
    if fault.pattern == "slow-node-storage":
        # Every loader on a node spills, caches or checkpoints through its local disk.
        return fault.location in nodes
    if fault.pattern == "degraded-nic":
        return fault.location in nodes and len(nodes) > 1
    return fault.location in nodes  # bad-gpu: whether the GPU itself is met is decided per pod


def _faulted(
    rng: np.random.Generator, fault: Fault, cls: str, throttled: float, placed: list[tuple[str, list[str]]]
) -> tuple[str, float, int | None]:
    on = next((i for i, (n, _) in enumerate(placed) if n == fault.location), None)
    if fault.pattern in ("slow-node-storage", "hot-filesystem"):
        return "IO", throttled, on
    if fault.pattern == "degraded-nic":
        return "Interconnect", throttled, on
    if fault.pattern == "power-capped-rack":
        return cls, float(rng.uniform(0.85, 1.0)), None
    if on is not None and fault.gpu in placed[on][1]:
        return cls, throttled, on  # bad-gpu: the Job got the GPU
    return cls, throttled, None


def _activity(rng: np.random.Generator, cls: str) -> float:
    low, high = (0.75, 0.97) if cls == "GPU" else (0.2, 0.7)
    return float(rng.uniform(low, high))


def _peers(
    rng: np.random.Generator,
    pods: list[str],
    placed: list[tuple[str, list[str]]],
    cls: str,
    active: float,
    throttled: float,
    fault: Fault | None,
    bad_pod: int | None,
) -> tuple[list[PeerSample], tuple[int, str | None] | None]:
    """Per-GPU summaries: every peer near the Job's figures (a few % of noise), the faulty one apart."""
    net = float(rng.uniform(1e8, 5e9)) * (3.0 if cls == "Interconnect" else 1.0)
    read = float(rng.uniform(5e7, 2e9))
    io_wait = float(rng.uniform(0.0, 0.1)) + (0.3 if cls == "IO" else 0.0)
    peers: list[PeerSample] = []
    planted: tuple[int, str | None] | None = None
    for i, (node, gpus) in enumerate(placed):
        lag = _PodLag()
        if bad_pod == i and fault is not None:
            lag, planted = _lag(rng, fault, gpus, i)
        pod_net = net * float(rng.normal(1.0, 0.03)) * lag.net
        pod_read = read * float(rng.normal(1.0, 0.03)) * lag.read
        pod_wait = min(1.0, io_wait * float(rng.normal(1.0, 0.05)) + lag.wait)
        for g in gpus:
            bad = lag.gpu is None or lag.gpu == g
            clock = CLOCK_MHZ * (1.0 - 0.25 * throttled) * float(rng.normal(1.0, 0.01)) * (lag.clock if bad else 1.0)
            activity = min(1.0, active * float(rng.normal(1.0, 0.02)) * (lag.activity if bad else 1.0))
            slowdown = throttled + float(rng.normal(0.0, 0.02)) + (lag.slowdown if bad else 0.0)
            peers.append(
                PeerSample(
                    pod=pods[i],
                    node=node,
                    gpu=g,
                    activity=activity,
                    clock_mhz=clock,
                    slowdown=min(1.0, max(0.0, slowdown)),
                    net_bps=pod_net,
                    read_bps=pod_read,
                    io_wait=pod_wait,
                )
            )
    return peers, planted


@dataclass(frozen=True)
class _PodLag:
    gpu: str | None = None
    activity: float = 1.0
    clock: float = 1.0
    slowdown: float = 0.0
    net: float = 1.0
    read: float = 1.0
    wait: float = 0.0


def _lag(
    rng: np.random.Generator, fault: Fault, gpus: list[str], pod: int
) -> tuple[_PodLag, tuple[int, str | None] | None]:
    depth = float(rng.uniform(0.55, 0.8))
    if fault.pattern == "bad-gpu":
        return _PodLag(gpu=fault.gpu, clock=depth, slowdown=0.7), (pod, fault.gpu)
    single = gpus[0] if len(gpus) == 1 else None
    if fault.pattern == "degraded-nic":
        return _PodLag(activity=depth, net=depth * 0.8), (pod, single)
    if fault.pattern == "slow-node-storage":
        return _PodLag(activity=depth, read=depth, wait=0.3), (pod, single)
    return _PodLag(), None
