"""What one Job runs on and how it is set up, drawn with a bias towards its class intent.

The intent only tilts the odds (a slower store, a tighter CPU limit, a slower fabric, ...); every
choice stays possible for every intent, and the label is decided later by the counterfactual in
:mod:`.label`, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyal.hardware import (
    BOARD_BY_KEY,
    FABRIC_BY_KEY,
    STORAGE_BY_KEY,
    WORKLOAD_BY_KEY,
    Board,
    Fabric,
    Storage,
    Workload,
)

B = Bottleneck


@dataclass(frozen=True)
class Cluster:
    """The machines: board, pod layout, nodes, storage and links."""

    board: Board
    pods: int
    gpus: int
    node_cores: int
    node_mem_gb: float
    swap: bool
    storage: Storage
    storage_gbps: float
    storage_latency_s: float
    fabric: Fabric | None
    nics: int
    pcie_shared: bool


@dataclass(frozen=True)
class Pipeline:
    """The training program and its input pipeline (per rank unless said otherwise)."""

    workload: Workload
    batch: int
    amp: bool
    workers: int
    prefetch: int
    cpu_limit: float | None
    mem_limit_gb: float | None
    cache_hit: float
    h2d_scale: float
    bf16_grads: bool
    gpu_decode: bool
    h2d_overlap: float
    comm_overlap: float
    launch_us: float
    hbm_scale: float


@dataclass(frozen=True)
class Disturbances:
    """What makes ranks and iterations differ: clocks, neighbours, fabric episodes, pauses, memory."""

    clock_spread: float
    power_cap: float
    straggler: int | None
    straggler_kind: str
    noisy_pod: int | None
    noisy_share: float
    congestion_rate: float
    congestion_factor: float
    gc_prob: float
    ckpt_every_s: float
    ckpt_s: float
    mem_pressure: float
    oom_rate: float


@dataclass(frozen=True)
class Setup:
    """Everything drawn about one Job's workload and machines."""

    intent: Bottleneck
    cluster: Cluster
    pipeline: Pipeline
    disturbances: Disturbances


def pick(rng: np.random.Generator, options: Sequence[str], weights: Sequence[float]) -> str:
    """One option with the given (unnormalised) weights."""
    w = np.asarray(weights, dtype=np.float64)
    return options[int(rng.choice(len(options), p=w / w.sum()))]


def _board(rng: np.random.Generator, intent: Bottleneck) -> Board:
    keys = ("v100-sxm2", "a100-sxm4", "h100-sxm5", "h100-pcie", "l4", "a10", "t4")
    weights = {
        B.IO: (0.5, 3, 3, 2, 0.5, 0.5, 0.3),
        B.CPU: (0.5, 3, 3, 2, 0.5, 0.5, 0.3),
        B.INTERCONNECT: (0.5, 3, 3, 3, 0.5, 0.5, 0.3),
        B.GPU: (2, 3, 2, 2, 2, 2, 2),
        B.MEMORY: (2, 3, 2, 2, 2, 2, 1),
    }[intent]
    return BOARD_BY_KEY[pick(rng, keys, weights)]


def _layout(rng: np.random.Generator, intent: Bottleneck, board: Board) -> tuple[int, int]:
    """Pods (one per node) and GPUs per pod; interconnect-leaning Jobs span more nodes."""
    pods = int(rng.choice((1, 2, 3, 4), p=(0.15, 0.3, 0.15, 0.4) if intent is B.INTERCONNECT else (0.4, 0.3, 0.1, 0.2)))
    per_node = (1, 2, 4, 8) if board.key not in ("l4", "t4", "a10") else (1, 2, 4)
    gpus = int(rng.choice(per_node))
    while pods * gpus > 16:
        gpus //= 2
    if pods == 1 and intent is B.INTERCONNECT:
        gpus = max(per_node)
    return pods, gpus


def draw_cluster(rng: np.random.Generator, intent: Bottleneck) -> Cluster:
    """Board, layout, node sizes, storage and fabric."""
    board = _board(rng, intent)
    pods, gpus = _layout(rng, intent, board)
    skeys = ("nvme-gen4", "nvme-gen3", "sata-ssd", "nfs", "efs", "object-store")
    sw = (0.5, 0.5, 2, 2, 2, 3) if intent is B.IO else (3, 2, 0.6, 1, 1, 1.5)
    storage = STORAGE_BY_KEY[pick(rng, skeys, sw)]
    # An IO-leaning Job reads from a busy or throttled store: a share of its rated bandwidth, slower requests.
    slow = float(rng.uniform(0.1, 0.4)) if intent is B.IO else 1.0
    gbps = storage.gbps * float(rng.uniform(0.3, 1.0)) * slow
    latency = storage.latency_s * float(rng.lognormal(0.0, 0.5)) * (4.0 if intent is B.IO else 1.0)
    fabric = None
    if pods > 1:
        fkeys = ("ib-hdr", "ib-ndr", "roce-100", "roce-200", "eth-25-tcp", "eth-100-tcp")
        fw = (0.5, 0.1, 2, 0.5, 4, 3) if intent is B.INTERCONNECT else (3, 3, 2, 2, 0.7, 1)
        fabric = FABRIC_BY_KEY[pick(rng, fkeys, fw)]
    nics = int(rng.choice([n for n in (1, 2, 4, 8) if n <= max(gpus, 1)]))
    if intent is B.INTERCONNECT:
        nics = 1
    cores = int(rng.choice((32, 48, 64, 96, 128)))
    return Cluster(
        board=board,
        pods=pods,
        gpus=gpus,
        node_cores=cores,
        node_mem_gb=float(rng.choice((256.0, 512.0, 1024.0, 2048.0))),
        swap=bool(rng.random() < 0.3),
        storage=storage,
        storage_gbps=gbps,
        storage_latency_s=latency,
        fabric=fabric,
        nics=nics,
        pcie_shared=bool(rng.random() < (0.6 if intent is B.INTERCONNECT else 0.3)),
    )


def _workload(rng: np.random.Generator, intent: Bottleneck) -> Workload:
    keys = ("resnet-jpeg", "vit-jpeg", "video-clips", "speech", "llm-packed", "llm-padded", "recsys-embeddings")
    weights = {
        B.IO: (3, 1.5, 2, 2, 0.1, 0.1, 0.5),
        B.CPU: (3, 1, 3, 2, 0.1, 0.5, 0.3),
        B.INTERCONNECT: (0.5, 2, 0.3, 1, 5, 1, 0.5),
        B.GPU: (1, 3, 1, 2, 3, 2, 0.5),
        B.MEMORY: (1, 1, 1, 1, 2, 2, 4),
    }[intent]
    return WORKLOAD_BY_KEY[pick(rng, keys, weights)]


def _batch(rng: np.random.Generator, intent: Bottleneck, wl: Workload, launchy: bool) -> int:
    if launchy:
        return max(1, min(wl.batch) // 16)
    return min(wl.batch) if intent is B.INTERCONNECT else int(rng.choice(wl.batch))


def draw_pipeline(rng: np.random.Generator, intent: Bottleneck, cluster: Cluster, host_memory: bool) -> Pipeline:
    """The program: workload, batch, loader workers, limits and overlaps."""
    wl = _workload(rng, intent)
    hbm_heavy = intent is B.MEMORY and not host_memory
    # A small-batch eager-mode program (many tiny kernels, slow Python dispatch) can be launch-bound.
    launchy = intent is B.GPU and rng.random() < 0.25
    per_gpu_cores = cluster.node_cores / max(cluster.gpus, 1)
    limit: float | None = None
    if rng.random() < (0.8 if intent is B.CPU else 0.6):
        per_gpu = rng.uniform(2.0, 8.0) if intent is B.CPU else rng.uniform(6.0, 24.0)
        limit = float(max(2.0, round(min(per_gpu, per_gpu_cores) * cluster.gpus)))
    few = intent is B.CPU and rng.random() < 0.35
    workers = int(rng.integers(1, 3)) if few else int(rng.integers(4, 13))
    mem_limit = float(rng.uniform(0.1, 0.4) * cluster.node_mem_gb) if rng.random() < 0.7 else None
    return Pipeline(
        workload=wl,
        batch=_batch(rng, intent, wl, launchy),
        amp=bool(rng.random() < {B.GPU: 0.55, B.INTERCONNECT: 0.9}.get(intent, 0.75)),
        workers=workers,
        prefetch=int(rng.choice((1, 2, 2, 4))),
        cpu_limit=limit,
        mem_limit_gb=mem_limit,
        cache_hit=float(rng.uniform(0.0, 0.15) if intent is B.IO else rng.uniform(0.2, 0.95)),
        gpu_decode=bool(rng.random() < {B.CPU: 0.05, B.IO: 0.5, B.GPU: 0.75, B.INTERCONNECT: 0.8}.get(intent, 0.6)),
        bf16_grads=bool(rng.random() < 0.3),
        h2d_scale=float(4.0 if rng.random() < (0.5 if intent is B.INTERCONNECT else 0.15) else 1.0),
        h2d_overlap=float(rng.choice((0.0, 0.6, 0.9))),
        comm_overlap=float(rng.uniform(0.0, 0.3) if intent is B.INTERCONNECT else rng.uniform(0.3, 0.9)),
        launch_us=float(rng.lognormal(np.log(12.0), 0.35) * (3.0 if launchy else 1.0)),
        # unfused elementwise work, embedding gathers, optimizer passes: more HBM bytes per sample
        hbm_scale=float(rng.lognormal(np.log(3.5), 0.4) if hbm_heavy else rng.lognormal(0.0, 0.3)),
    )


def draw_disturbances(
    rng: np.random.Generator, intent: Bottleneck, cluster: Cluster, host_memory: bool
) -> Disturbances:
    """Clock spread, power caps, stragglers, neighbours, congestion, pauses and host memory pressure."""
    ranks = cluster.pods * cluster.gpus
    straggler = int(rng.integers(ranks)) if ranks > 1 and rng.random() < (0.35 if intent is B.GPU else 0.15) else None
    pressure = float(rng.uniform(0.7, 1.0)) if host_memory else float(rng.uniform(0.0, 0.4) * (rng.random() < 0.3))
    noisy = int(rng.integers(cluster.pods)) if rng.random() < (0.5 if intent is B.CPU else 0.2) else None
    return Disturbances(
        clock_spread=float(rng.uniform(0.0, 0.06)),
        power_cap=float(rng.uniform(0.6, 0.9)) if rng.random() < 0.25 else 1.0,
        straggler=straggler,
        straggler_kind=pick(rng, ("thermal", "power-brake", "slow-board"), (2, 1, 1)),
        noisy_pod=noisy,
        noisy_share=float(rng.uniform(0.2, 0.7)),
        congestion_rate=float(rng.uniform(0.0, 0.004) * (3.0 if intent is B.INTERCONNECT else 1.0)),
        congestion_factor=float(rng.uniform(1.5, 5.0)),
        gc_prob=float(rng.uniform(0.0, 0.01)),
        ckpt_every_s=float(rng.choice((0.0, 600.0, 900.0, 1800.0))),
        ckpt_s=float(rng.uniform(5.0, 40.0)),
        mem_pressure=pressure,
        oom_rate=float(rng.uniform(0.0, 3e-4) if host_memory else 0.0),
    )


def draw_setup(rng: np.random.Generator, intent: Bottleneck) -> Setup:
    """One Job's whole setup."""
    cluster = draw_cluster(rng, intent)
    host_memory = intent is B.MEMORY and rng.random() < 0.5
    pipe = draw_pipeline(rng, intent, cluster, host_memory)
    return Setup(intent, cluster, pipe, draw_disturbances(rng, intent, cluster, host_memory))
