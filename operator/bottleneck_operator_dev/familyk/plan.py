"""What one family K job is: its cluster (boards, nodes, storage, fabric, limits) and its step.

A job is drawn for a target (class, mechanism) from the workloads teams run, then its step is drawn
until the stage model (:mod:`.stages`) agrees that the target's stage is the one whose removal
shortens the step most. The label is therefore decided by the step model, never by a signal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyk.hardware import (
    BOARDS,
    FABRICS,
    NODE_CORES,
    NODE_RAM_GIB,
    STORAGES,
    Board,
    Fabric,
    Storage,
)
from bottleneck_operator_dev.familyk.stages import Step, bounding_stage

# (class, mechanism, stage the mechanism loads, workloads it is drawn from)
MECHANISMS: tuple[tuple[Bottleneck, str, str, tuple[str, ...]], ...] = (
    (Bottleneck.IO, "local-disk", "io", ("vision-jpeg", "video-decode", "speech")),
    (Bottleneck.IO, "network-storage", "io", ("vision-jpeg", "llm-pretrain", "speech", "diffusion")),
    (Bottleneck.CPU, "saturated", "cpu", ("vision-jpeg", "video-decode", "speech")),
    (Bottleneck.CPU, "throttled", "cpu", ("vision-jpeg", "speech", "diffusion")),
    (Bottleneck.CPU, "too-few-workers", "cpu", ("vision-jpeg", "llm-finetune", "recsys")),
    (Bottleneck.CPU, "host-tokenisation", "cpu", ("llm-finetune", "speech")),
    (Bottleneck.INTERCONNECT, "network", "links", ("llm-pretrain", "llm-finetune", "recsys", "vision-jpeg")),
    (Bottleneck.INTERCONNECT, "nvlink-or-p2p", "links", ("llm-pretrain", "llm-finetune", "diffusion")),
    (Bottleneck.INTERCONNECT, "pcie-copy", "links", ("recsys", "llm-finetune")),
    (Bottleneck.GPU, "tensor-compute", "compute", ("llm-pretrain", "llm-finetune", "diffusion", "vision-jpeg")),
    (Bottleneck.GPU, "fp32-compute", "compute", ("vision-jpeg", "speech", "recsys")),
    (Bottleneck.MEMORY, "host-memory-pressure", "swap", ("recsys", "llm-finetune", "vision-jpeg")),
    (Bottleneck.MEMORY, "hbm-bandwidth", "hbm", ("recsys", "llm-pretrain", "diffusion", "speech")),
)


@dataclass(frozen=True)
class Cluster:
    """Where a job runs and how its telemetry is collected."""

    boards: tuple[Board, ...]  # one per pod (elastic jobs can land on different boards)
    gpus: tuple[int, ...]  # GPUs per pod
    node_cores: int
    node_ram_gib: int
    storage: Storage
    fabric: Fabric | None  # None: every pod on one node
    cpu_limit: float | None  # cores per pod, None: no CPU limit (no CFS counters)
    mem_limit_gib: float | None
    power_cap_frac: float  # enforced limit / TDP
    swap: bool
    neighbours: int  # other pods on the pods' nodes
    nodes_shared: bool  # several pods of the job on one node


@dataclass(frozen=True)
class Plan:
    """One job's target, cluster and step (per the slowest pod), with the stage model's reading."""

    label: Bottleneck
    mechanism: str
    workload: str
    cluster: Cluster
    step: Step
    speedup: float
    runner_up: float
    amp: bool
    workers: int
    intra_comm_share: float  # share of the collectives' time spent on links inside a node


def _board(rng: np.random.Generator, needs_nvlink: bool) -> Board:
    pool = [b for b in BOARDS if b.nvlink_gbs > 0] if needs_nvlink else list(BOARDS)
    w = np.array([b.weight for b in pool])
    return pool[int(rng.choice(len(pool), p=w / w.sum()))]


def draw_cluster(rng: np.random.Generator, mechanism: str, workload: str) -> Cluster:
    """A cluster the mechanism can happen on, with the variety of real ones."""
    spread = 0.7 if workload == "llm-pretrain" else 0.4  # pre-training runs span nodes more often
    multi_node = mechanism == "network" or (mechanism not in ("nvlink-or-p2p", "pcie-copy") and rng.random() < spread)
    pods = int(rng.integers(2, 17)) if multi_node else int(rng.choice([1, 1, 1, 2, 4]))
    board = _board(rng, mechanism == "nvlink-or-p2p" and rng.random() < 0.6)
    boards = [board] * pods
    if pods > 2 and rng.random() < 0.15:  # an elastic job that picked up spare nodes of another kind
        boards[-1] = _board(rng, False)
    per_pod = int(rng.choice([1, 2, 4, 8])) if board.nvlink_gbs else int(rng.choice([1, 1, 2, 4]))
    if mechanism == "nvlink-or-p2p":
        per_pod = max(per_pod, 4)
    gpus = [per_pod] * pods
    if pods > 2 and rng.random() < 0.2:  # uneven elastic pods
        gpus[-1] = max(1, per_pod // 2)
    storage_pool = list(STORAGES)
    if mechanism in ("local-disk", "network-storage"):
        storage_pool = [s for s in STORAGES if s.block == (mechanism == "local-disk")]
    storage = storage_pool[int(rng.integers(len(storage_pool)))]
    fabric = FABRICS[int(rng.integers(len(FABRICS)))] if pods > 1 and (multi_node or rng.random() < 0.5) else None
    cores = int(rng.choice(NODE_CORES))
    throttled = mechanism == "throttled"
    cpu_limit = float(rng.integers(4, 17)) if throttled or rng.random() < 0.35 else None
    mem_limit = float(rng.choice([32, 64, 128, 256])) if rng.random() < 0.5 else None
    cap = 1.0 if rng.random() < 0.6 else float(rng.uniform(max(board.min_cap_w / board.tdp_w, 0.6), 0.95))
    return Cluster(
        boards=tuple(boards),
        gpus=tuple(gpus),
        node_cores=cores,
        node_ram_gib=int(rng.choice(NODE_RAM_GIB)),
        storage=storage,
        fabric=fabric,
        cpu_limit=cpu_limit,
        mem_limit_gib=mem_limit,
        power_cap_frac=cap,
        swap=(mechanism == "host-memory-pressure" and rng.random() < 0.65) or rng.random() < 0.1,
        neighbours=int(rng.integers(1, 6)) if rng.random() < 0.35 else 0,
        nodes_shared=fabric is None and pods > 1,
    )


def _base_step(rng: np.random.Generator, workload: str, cluster: Cluster) -> Step:
    """A step where nothing in particular is wrong: every lane below the compute."""
    compute = float(rng.uniform(0.12, 1.5))
    heavy = {"recsys": 0.45, "speech": 0.65, "diffusion": 0.7}.get(workload, 0.78)
    math_share = float(np.clip(rng.normal(heavy, 0.08), 0.2, 0.95))
    # A power cap below what the math draws lowers the clock; the math stretches accordingly.
    cap_stretch = cluster.power_cap_frac**-0.5 if cluster.power_cap_frac < 0.9 else 1.0
    math = compute * math_share * cap_stretch
    bw = compute * (1.0 - math_share)
    multi = sum(cluster.gpus) > 1
    return Step(
        io=compute * float(rng.uniform(0.05, 0.7)),
        decode=compute * float(rng.uniform(0.1, 0.8)),
        host=compute * float(rng.uniform(0.05, 0.5)),
        swap=0.0,
        copy=compute * float(rng.uniform(0.01, 0.3)),
        math=math,
        math_mem=math * float(rng.uniform(0.15, 0.6)),
        bw=bw,
        bw_math=bw * float(rng.uniform(0.1, 0.45)),
        comm=compute * float(rng.uniform(0.1, 0.9)) if multi else 0.0,
        overlap=float(rng.uniform(0.3, 0.95)) if multi else 0.0,
    )


def _load(rng: np.random.Generator, step: Step, stage: str, mechanism: str, r: float) -> Step:
    """The step with the mechanism's stage made ``r`` times what the others allow."""
    rest = max(step.loader_lane, step.host_lane, step.copy, step.gpu_lane)
    if stage == "io":
        return replace(step, io=r * rest)
    if stage == "cpu" and mechanism == "host-tokenisation":
        return replace(step, host=r * rest)
    if stage == "cpu":
        return replace(step, decode=r * rest)
    if stage == "swap":
        return replace(step, swap=max(r * rest - step.host, 0.0))
    if stage == "links" and mechanism == "pcie-copy":
        return replace(step, copy=r * rest)
    if stage == "links":
        c = step.compute
        return replace(step, comm=r * rest - (1.0 - step.overlap) * c, overlap=float(rng.uniform(0.6, 0.97)))
    if stage == "hbm":
        c = step.compute
        share = float(rng.uniform(0.55, 0.9))
        return replace(step, math=c * (1 - share), math_mem=c * (1 - share) * 0.5, bw=c * share * r**0.5)
    # compute: every other lane under the compute by r, and one of them (the runner-up) right at it
    ceiling = step.compute / r
    lanes = {k: min(getattr(step, k), ceiling) for k in ("io", "decode", "host", "copy")}
    lanes[str(rng.choice(list(lanes)))] = ceiling
    return replace(step, comm=min(step.comm, step.compute * step.overlap), **lanes)


def draw_plan(rng: np.random.Generator, index: int) -> Plan:
    """The plan of the job whose target is ``MECHANISMS`` row ``index``."""
    label, mechanism, stage, workloads = MECHANISMS[index]
    # Moderate bottlenecks (removing them gives 1.1-1.5x) as often as strong ones (1.5-3.5x).
    low, high = (1.1, 1.5) if rng.random() < 0.5 else (1.5, 3.5)
    for _ in range(400):
        workload = workloads[int(rng.integers(len(workloads)))]
        cluster = draw_cluster(rng, mechanism, workload)
        amp = mechanism != "fp32-compute" and rng.random() < 0.85
        step = _load(rng, _base_step(rng, workload, cluster), stage, mechanism, float(rng.uniform(low, high)))
        if min(step.io, step.decode, step.comm, step.copy) < 0 or step.math <= step.math_mem:
            continue
        top, speed, second = bounding_stage(step)
        if top == stage and low - 0.05 <= speed < high + 0.5 and speed >= second * 1.03:
            workers = _workers(rng, mechanism, cluster)
            intra = _intra_share(rng, mechanism, cluster)
            return Plan(label, mechanism, workload, cluster, step, speed, second, amp, workers, intra)
    raise RuntimeError(f"no plan for {mechanism} after 400 draws")  # pragma: no cover - a model error


def _workers(rng: np.random.Generator, mechanism: str, cluster: Cluster) -> int:
    if mechanism == "too-few-workers":
        return int(rng.integers(1, 4)) * cluster.gpus[0]
    return int(rng.integers(4, 13)) * cluster.gpus[0]


def _intra_share(rng: np.random.Generator, mechanism: str, cluster: Cluster) -> float:
    if cluster.fabric is None:
        return 1.0
    if mechanism == "network":
        return float(rng.uniform(0.05, 0.3))
    if mechanism == "nvlink-or-p2p":
        return float(rng.uniform(0.6, 0.95))
    return float(rng.uniform(0.2, 0.8))
