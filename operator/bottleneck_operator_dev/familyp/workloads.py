"""What the tenants run: workloads, their launch settings, and the step model each one gets.

A job is drawn the way a shared cluster sees it: a team's workload (LLM pre-training, LoRA
fine-tuning, RLHF, recommendation, vision, video, speech, diffusion, graph learning), queued and
gang-scheduled onto one node pool, launched with its own settings (loader workers, pinned memory,
prefetch depth, gradient accumulation, CPU limit). The stage times follow from those; the class the
family asks for picks which stage is pushed to bind, and by how much (from barely, 1.03-1.2x ahead
of the runner-up, to overwhelming). The label is then read back from the step model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyp.fleet import BOARDS, POOLS, STORAGE, Board, NodePool
from bottleneck_operator_dev.familyp.steps import StepModel, tune_margin

B = Bottleneck
POOL = {p.name: p for p in POOLS}
SXM = ("hgx-h100", "hgx-h200", "hgx-a100-ib", "hgx-a100-roce")
PCIE = ("pcie-a100", "pcie-l40s", "pcie-l4", "cloud-a10g", "pcie-h100")


@dataclass(frozen=True)
class Workload:
    """A kind of job a team runs; stage ranges are fractions of the GPU's kernel time."""

    pools: tuple[str, ...]
    pods: tuple[int, int]
    gpus: tuple[int, ...]
    hbm: tuple[float, float]
    read: tuple[float, float]
    decode: tuple[float, float]
    h2d: tuple[float, float]
    comm: tuple[float, float]
    storage: tuple[str, ...]
    mechanisms: dict[Bottleneck, tuple[str, ...]]


WORKLOADS: dict[str, Workload] = {
    "llm-pretrain-3d": Workload(
        (*SXM, "legacy-v100"),
        (2, 16),
        (8,),
        (0.15, 0.35),
        (0.005, 0.05),
        (0.005, 0.04),
        (0.0, 0.01),
        (0.05, 0.5),
        ("nvme", "object", "nfs"),
        {B.GPU: ("compute",), B.INTERCONNECT: ("network",), B.MEMORY: ("hbm-bandwidth",), B.IO: ("network-storage",)},
    ),
    "llm-lora-finetune": Workload(
        ("hgx-h100", "hgx-a100-ib", "pcie-l40s", "cloud-a10g", "pcie-a100", "pcie-h100"),
        (1, 1),
        (1, 2, 4, 8),
        (0.2, 0.45),
        (0.01, 0.1),
        (0.02, 0.2),
        (0.005, 0.05),
        (0.02, 0.2),
        ("nvme", "object", "nfs"),
        {
            B.GPU: ("compute",),
            B.MEMORY: ("host-memory-pressure",),
            B.CPU: ("too-few-workers",),
            B.INTERCONNECT: ("pcie",),
        },
    ),
    "rlhf-ppo": Workload(
        ("hgx-h100", "hgx-h200", "hgx-a100-ib"),
        (1, 4),
        (8,),
        (0.35, 0.65),
        (0.0, 0.02),
        (0.01, 0.05),
        (0.0, 0.02),
        (0.05, 0.3),
        ("nvme", "object"),
        {B.MEMORY: ("hbm-bandwidth",), B.GPU: ("compute",), B.INTERCONNECT: ("nvlink", "network")},
    ),
    "recsys-dlrm": Workload(
        ("hgx-a100-ib", "hgx-a100-roce", "hgx-h100", "pcie-l40s"),
        (1, 8),
        (4, 8),
        (0.3, 0.6),
        (0.05, 0.4),
        (0.05, 0.3),
        (0.01, 0.08),
        (0.1, 0.5),
        ("object", "nvme", "nfs"),
        {
            B.MEMORY: ("host-memory-pressure", "hbm-bandwidth"),
            B.INTERCONNECT: ("network", "nvlink"),
            B.CPU: ("saturated", "throttled"),
            B.IO: ("network-storage", "local-disk"),
            B.GPU: ("compute",),
        },
    ),
    "vision-jpeg": Workload(
        ("pcie-a100", "pcie-l40s", "cloud-a10g", "pcie-l4", "legacy-v100", "pcie-h100", "hgx-a100-ib"),
        (1, 8),
        (1, 2, 4, 8),
        (0.1, 0.3),
        (0.1, 0.6),
        (0.2, 0.9),
        (0.02, 0.15),
        (0.02, 0.25),
        ("nvme", "block", "nfs", "object"),
        {
            B.CPU: ("saturated", "throttled", "too-few-workers"),
            B.IO: ("local-disk", "network-storage"),
            B.GPU: ("compute",),
            B.INTERCONNECT: ("pcie",),
        },
    ),
    "video-decode": Workload(
        ("pcie-l40s", "pcie-l4", "cloud-a10g", "infer-t4", "pcie-a100"),
        (1, 4),
        (1, 2, 4),
        (0.15, 0.35),
        (0.2, 0.8),
        (0.1, 1.0),
        (0.02, 0.1),
        (0.02, 0.15),
        ("object", "nfs", "block"),
        {B.IO: ("network-storage", "local-disk"), B.CPU: ("saturated", "throttled"), B.GPU: ("compute",)},
    ),
    "speech-asr": Workload(
        ("pcie-a100", "cloud-a10g", "pcie-l40s", "legacy-v100", "hgx-a100-roce"),
        (1, 4),
        (1, 4, 8),
        (0.15, 0.35),
        (0.05, 0.5),
        (0.1, 0.8),
        (0.01, 0.06),
        (0.05, 0.3),
        ("nfs", "object", "nvme"),
        {
            B.CPU: ("saturated", "too-few-workers"),
            B.IO: ("network-storage",),
            B.GPU: ("compute",),
            B.MEMORY: ("host-memory-pressure",),
            B.INTERCONNECT: ("network",),
        },
    ),
    "diffusion": Workload(
        ("hgx-h100", "hgx-a100-ib", "pcie-l40s", "hgx-h200"),
        (1, 8),
        (4, 8),
        (0.2, 0.55),
        (0.05, 0.4),
        (0.02, 0.2),
        (0.01, 0.05),
        (0.05, 0.3),
        ("object", "nvme", "block"),
        {
            B.GPU: ("compute",),
            B.MEMORY: ("hbm-bandwidth",),
            B.IO: ("network-storage", "local-disk"),
            B.INTERCONNECT: ("network", "nvlink"),
        },
    ),
    "gnn-sampling": Workload(
        ("pcie-a100", "pcie-l40s", "cloud-a10g", "pcie-h100", "hgx-a100-ib"),
        (1, 4),
        (1, 2, 4),
        (0.3, 0.6),
        (0.01, 0.1),
        (0.3, 1.2),
        (0.1, 0.6),
        (0.02, 0.2),
        ("nvme",),
        {
            B.CPU: ("saturated", "too-few-workers"),
            B.INTERCONNECT: ("pcie",),
            B.MEMORY: ("host-memory-pressure", "hbm-bandwidth"),
            B.GPU: ("compute",),
        },
    ),
}

# The stage each mechanism binds on.
STAGE = {
    "compute": "tensor",
    "hbm-bandwidth": "hbm",
    "host-memory-pressure": "swap",
    "network": "comm",
    "nvlink": "comm",
    "pcie": "h2d",
    "network-storage": "read",
    "local-disk": "read",
    "saturated": "decode",
    "throttled": "decode",
    "too-few-workers": "decode",
}


@dataclass(frozen=True)
class Plan:
    """One job as scheduled and launched, with its step model (everything telemetry needs)."""

    workload: str
    mechanism: str
    model: StepModel
    pool: NodePool
    board: Board
    pods: int
    gpus: int
    pods_per_node: int
    storage: str
    storage_bps: float
    workers: int
    cpu_limit: float | None
    pinned: bool
    grad_accum: int
    overlap: float
    partition: str
    mem_limit_gib: float | None
    swap_pages: float
    neighbours: int
    tags: tuple[str, ...]


def _u(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    return float(rng.uniform(*lo_hi))


def _margin(rng: np.random.Generator) -> float:
    kind = rng.random()
    if kind < 0.35:
        return float(rng.uniform(1.03, 1.2))  # barely there: the hard cases
    if kind < 0.75:
        return float(rng.uniform(1.2, 2.0))
    return float(np.exp(rng.uniform(np.log(2.0), np.log(6.0))))


def _topology(rng: np.random.Generator, wl: Workload, mech: str) -> tuple[NodePool, int, int]:
    """Pool, pods and GPUs per pod, consistent with the mechanism (a network bound needs nodes)."""
    pools = [POOL[p] for p in wl.pools]
    if mech == "nvlink":
        pools = [p for p in pools if BOARDS[p.board].nvlink_bps > 0] or pools
    pool = pools[int(rng.integers(len(pools)))]
    gpus = int(rng.choice([g for g in wl.gpus if g <= pool.gpus] or [1]))
    lo, hi = wl.pods
    if mech == "network":
        lo = max(lo, 2)
        hi = max(hi, 2)
    elif mech == "nvlink":
        lo, hi, gpus = 1, 1, pool.gpus
    pods = int(rng.integers(lo, hi + 1))
    return pool, pods, gpus


def _launch(rng: np.random.Generator, pool: NodePool, gpus: int, mech: str) -> tuple[int, float | None, bool]:
    """Loader workers per pod, the pod's CPU limit (None: none), pinned memory."""
    share = pool.cpus * gpus / pool.gpus
    workers = int(rng.choice([2, 4, 6, 8, 10, 12, 16])) * max(1, gpus // 2)
    limit: float | None = float(np.ceil(share * rng.uniform(0.4, 0.95))) if rng.random() < 0.55 else None
    if mech == "throttled":
        limit = float(max(2, int(workers * rng.uniform(0.3, 0.7))))
    elif mech == "too-few-workers":
        workers, limit = int(rng.integers(1, 5)), None
    elif mech == "saturated":
        workers, limit = int(share * rng.uniform(1.0, 1.6)) + 1, None
    return workers, limit, bool(rng.random() < 0.65)


def draw_plan(rng: np.random.Generator, target: Bottleneck, mech_hint: str | None) -> Plan:
    """One job whose step model binds on ``target`` (with ``mech_hint`` for Memory), labelled from the model."""
    for _ in range(50):
        names = [n for n, w in WORKLOADS.items() if target in w.mechanisms]
        if mech_hint is not None:
            names = [n for n in names if mech_hint in WORKLOADS[n].mechanisms[target]]
        name = names[int(rng.integers(len(names)))]
        wl = WORKLOADS[name]
        mechs = wl.mechanisms[target]
        mech = mech_hint if mech_hint in mechs else str(mechs[int(rng.integers(len(mechs)))])
        pool, pods, gpus = _topology(rng, wl, mech)
        if mech in ("nvlink", "network") and pods * gpus < 2:
            continue
        plan = _build(rng, name, wl, target, mech, pool, pods, gpus)
        # A Memory job's mechanism is its larger Memory stage; redraw until it is the one asked for.
        if plan is not None and (target is not B.MEMORY or plan.model.memory_mechanism() == mech):
            return plan
    raise RuntimeError("no plan binds on the requested class")  # pragma: no cover - the draws always bind


def _stage_model(
    rng: np.random.Generator, wl: Workload, target: Bottleneck, mech: str, *, comm_scale: float, pinned: bool
) -> StepModel | None:
    """The workload's stage times (kernel time = 1), pushed to bind on ``mech``'s stage, then sized."""
    hbm = _u(rng, wl.hbm)
    if target is B.GPU:
        hbm = min(hbm, 0.45)
    model = StepModel(
        read=_u(rng, wl.read),
        decode=_u(rng, wl.decode),
        h2d=_u(rng, wl.h2d) * (0.4 if pinned else 1.0),
        tensor=1.0 - hbm,
        hbm=hbm,
        # Gradient accumulation syncs once per several micro-batches: exposed comm shrinks with it.
        comm=_u(rng, wl.comm) * comm_scale,
        swap=float(rng.choice([0.0, 0.0, 0.02])),
        prefetch=int(rng.choice([1, 2, 2, 4, 8])),
    )
    tuned = tune_margin(model, STAGE[mech], target, _margin(rng))
    if tuned is None:
        return None
    scale = _u(rng, (0.15, 2.5)) / tuned.step
    stages: dict[str, Any] = {
        f: getattr(tuned, f) * scale for f in ("read", "decode", "h2d", "tensor", "hbm", "comm", "swap")
    }
    return replace(tuned, **stages)


def _build(
    rng: np.random.Generator,
    name: str,
    wl: Workload,
    target: Bottleneck,
    mech: str,
    pool: NodePool,
    pods: int,
    gpus: int,
) -> Plan | None:
    board = BOARDS[pool.board]
    workers, limit, pinned = _launch(rng, pool, gpus, mech)
    accum = int(rng.choice([1, 1, 2, 4, 8])) if pods * gpus > 1 else 1
    overlap = _u(rng, (0.3, 0.85))
    tuned = _stage_model(rng, wl, target, mech, comm_scale=1.0 / accum if pods * gpus > 1 else 0.0, pinned=pinned)
    if tuned is None:
        return None
    storage = str(rng.choice(wl.storage))
    if mech == "local-disk":
        storage = str(rng.choice(["nvme", "block"]))
    elif mech == "network-storage" and storage in ("nvme", "block"):
        storage = str(rng.choice(["nfs", "object"]))
    ppn = 1 if mech == "network" else int(max(1, min(pods, pool.gpus // max(gpus, 1))))
    partition = "whole"
    if gpus == 1 and rng.random() < 0.25:
        partition = "mig" if board.mig and rng.random() < 0.5 else "timeslice"
    tags = [name, pool.name, storage, f"accum{accum}", "pinned" if pinned else "pageable", partition]
    tags += _extras(rng, target, storage, limit)
    share = pool.mem_gib * gpus / pool.gpus
    mem_limit = float(np.ceil(share * rng.uniform(0.3, 0.9))) if rng.random() < 0.7 else None
    # Kubernetes nodes mostly run without swap: pressure then shows as reclaim and refaults.
    swap = float(rng.random() < 0.45)
    neighbours = int(rng.integers(0, 2 if gpus == pool.gpus else 7))
    return Plan(
        workload=name,
        mechanism=mech,
        model=tuned,
        pool=pool,
        board=board,
        pods=pods,
        gpus=gpus,
        pods_per_node=ppn,
        storage=storage,
        storage_bps=_u(rng, STORAGE[storage]),
        workers=workers,
        cpu_limit=limit,
        pinned=pinned,
        grad_accum=accum,
        overlap=overlap,
        partition=partition,
        mem_limit_gib=mem_limit,
        swap_pages=swap,
        neighbours=neighbours,
        tags=tuple(tags),
    )


def _extras(rng: np.random.Generator, target: Bottleneck, storage: str, limit: float | None) -> list[str]:
    """Tags for the twists a real cluster adds: memory-mapped datasets, memory-hungry neighbours."""
    extras = [] if limit is not None else ["no-cpu-limit"]
    if storage in ("nvme", "block") and rng.random() < 0.3:
        extras.append("mmap-dataset")  # Arrow/LMDB readers fault their data in: IO that looks like paging
    if target is not B.MEMORY and rng.random() < 0.12:
        extras.append("memory-hog-neighbour")
    return extras
