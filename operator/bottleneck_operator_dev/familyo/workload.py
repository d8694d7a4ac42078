"""Workloads teams really run, and how one job of a class is drawn.

Each archetype fixes what kind of job it is (how many pods and GPUs, which boards, where its data
lives, how much of the step is math, HBM traffic, launches and collectives); the target class then
grows one of its stages until the step model itself names that class, by a drawn strength from
barely there (1.05x) to overwhelming.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyo.hardware import BOARDS, FABRICS, STORAGE, SXM, Board, Fabric, Storage
from bottleneck_operator_dev.familyo.stepmodel import CLASS_STAGES, Stages, label_of, mechanism_of, raise_until


@dataclass(frozen=True)
class Archetype:
    """A kind of training job.

    Attributes:
        name: short name (a tag of every job drawn from it).
        pods: (min, max) pods.
        gpus: GPUs per pod to choose from.
        boards: the boards it runs on.
        storage: where its samples live.
        tensor_eff: tensor-pipe activity while its math kernels run (lo, hi).
        hbm_ratio: HBM time / math time of its kernels when healthy (lo, hi).
        launch: latency-bound share of kernel time (lo, hi).
        comm: collective time / math time before overlap (lo, hi).
        cpu_per_gpu: cores its input pipeline typically gets per GPU (lo, hi).
    """

    name: str
    pods: tuple[int, int]
    gpus: tuple[int, ...]
    boards: tuple[Board, ...]
    storage: tuple[str, ...]
    tensor_eff: tuple[float, float]
    hbm_ratio: tuple[float, float]
    launch: tuple[float, float]
    comm: tuple[float, float]
    cpu_per_gpu: tuple[float, float]


ARCHETYPES: tuple[Archetype, ...] = (
    Archetype(
        "llm-pretrain-fsdp",
        (2, 16),
        (8,),
        SXM,
        ("lustre", "object-store", "nvme"),
        (0.45, 0.8),
        (0.2, 0.5),
        (0.02, 0.08),
        (0.4, 1.2),
        (4, 12),
    ),
    Archetype(
        "llm-finetune-lora",
        (1, 1),
        (1, 1, 2, 4),
        BOARDS,
        ("page-cache", "nvme", "object-store"),
        (0.25, 0.6),
        (0.3, 0.7),
        (0.05, 0.3),
        (0.1, 0.4),
        (2, 8),
    ),
    Archetype(
        "llm-tp-pp", (2, 8), (8,), SXM, ("lustre", "nvme"), (0.35, 0.7), (0.25, 0.6), (0.04, 0.12), (0.5, 1.5), (4, 10)
    ),
    Archetype(
        "recsys-embedding",
        (1, 8),
        (4, 8),
        BOARDS,
        ("feature-store", "object-store", "nvme"),
        (0.05, 0.25),
        (0.6, 1.2),
        (0.05, 0.2),
        (0.3, 1.0),
        (6, 16),
    ),
    Archetype(
        "vision-jpeg",
        (1, 4),
        (1, 2, 4, 8),
        BOARDS,
        ("nvme", "nfs", "sata", "cloud-volume"),
        (0.3, 0.65),
        (0.3, 0.7),
        (0.03, 0.12),
        (0.05, 0.3),
        (8, 24),
    ),
    Archetype(
        "video-decode",
        (1, 4),
        (2, 4, 8),
        BOARDS,
        ("nfs", "object-store", "nvme"),
        (0.3, 0.6),
        (0.3, 0.7),
        (0.03, 0.1),
        (0.05, 0.3),
        (8, 24),
    ),
    Archetype(
        "speech-asr",
        (1, 4),
        (1, 4, 8),
        BOARDS,
        ("nfs", "nvme", "object-store"),
        (0.2, 0.5),
        (0.4, 0.8),
        (0.08, 0.3),
        (0.1, 0.4),
        (4, 16),
    ),
    Archetype(
        "diffusion-webdataset",
        (1, 8),
        (4, 8),
        BOARDS,
        ("object-store", "lustre", "nvme"),
        (0.4, 0.75),
        (0.3, 0.6),
        (0.03, 0.1),
        (0.1, 0.5),
        (4, 12),
    ),
)


@dataclass(frozen=True)
class Plan:
    """One job before any exporter sees it."""

    arch: Archetype
    board: Board
    pods: int
    gpus: int
    storage: Storage
    storage_gbs: float
    fabric: Fabric | None
    node_cpus: int
    cpu_mode: str  # how the pipeline gets its cores: "free", "limit" or "workers"
    pipeline_cores: float  # cores the input pipeline can use
    cpu_limit: float | None  # the pod's CPU limit, cores
    tensor_eff: float
    stages: Stages
    label: Bottleneck
    mechanism: str
    strength: float
    tags: tuple[str, ...]


def _u(rng: np.random.Generator, lohi: tuple[float, float]) -> float:
    return float(rng.uniform(lohi[0], lohi[1]))


def _strength(rng: np.random.Generator) -> float:
    """From barely there to overwhelming: a third of jobs within 1.05-1.2x."""
    r = rng.random()
    if r < 0.33:
        return float(rng.uniform(1.05, 1.2))
    if r < 0.75:
        return float(rng.uniform(1.2, 2.0))
    return float(np.exp(rng.uniform(np.log(2.0), np.log(6.0))))


def _baseline(rng: np.random.Generator, arch: Archetype, pods: int, gpus: int) -> Stages:
    """A healthy step of this archetype (in seconds), before the class's stage is grown."""
    math = float(np.exp(rng.uniform(np.log(0.08), np.log(2.5))))
    comm = math * _u(rng, arch.comm)
    accum = int(rng.choice([1, 1, 2, 4, 8]))  # gradient accumulation: one sync per `accum` micro-batches
    intra = comm * (0.35 if pods > 1 else 1.0) if gpus > 1 else 0.0
    inter = comm * 0.65 if pods > 1 else 0.0
    gpu_side = math * 1.1
    return Stages(
        read=gpu_side * rng.uniform(0.05, 0.75),
        cpu=gpu_side * rng.uniform(0.1, 0.8),
        h2d=math * rng.uniform(0.005, 0.04),
        math=math,
        hbm=math * _u(rng, arch.hbm_ratio),
        launch=math * _u(rng, arch.launch),
        intra=intra / accum,
        inter=inter / accum,
        overlap=float(rng.uniform(0.0, 0.3) if rng.random() < 0.25 else rng.uniform(0.5, 0.95)),
        swap=0.0,
    )


_GROW = {
    Bottleneck.IO: ("read",),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.GPU: ("math", "math", "launch"),
    Bottleneck.MEMORY: ("hbm", "swap"),
}


def _target_stage(rng: np.random.Generator, cls: Bottleneck, pods: int, gpus: int) -> str:
    if cls is Bottleneck.INTERCONNECT:
        options = ["h2d"] + (["intra", "intra"] if gpus > 1 else []) + (["inter"] * 3 if pods > 1 else [])
        return str(rng.choice(options))
    return str(rng.choice(_GROW[cls]))


def _near_miss(rng: np.random.Generator, stages: Stages, stage: str) -> Stages:
    """A hard case: another class's stage brought close to the bound (mixed or borderline jobs)."""
    own = next(names for names in CLASS_STAGES.values() if stage in names)
    other = str(rng.choice([s for s in ("read", "cpu", "hbm", "inter", "swap") if s not in own]))
    bump = float(rng.uniform(0.7, 0.97)) * stages.step
    if other == "swap":
        bump *= 0.3
    return replace(stages, **{other: max(getattr(stages, other), bump)})


def draw_plan(rng: np.random.Generator, cls: Bottleneck, mechanism_hint: str) -> Plan:
    """One job whose step model makes ``cls`` the bound (``mechanism_hint`` picks Memory's kind)."""
    arch = ARCHETYPES[int(rng.integers(len(ARCHETYPES)))]
    pods = int(rng.integers(arch.pods[0], arch.pods[1] + 1))
    gpus = int(rng.choice(arch.gpus))
    board = arch.boards[int(rng.integers(len(arch.boards)))]
    storage_names = [s for s in arch.storage if not (cls is Bottleneck.IO and s == "page-cache")]
    storage = STORAGE[str(rng.choice(storage_names))]
    # Multi-rail fabrics are built around SXM boards; PCIe boards sit on one NIC.
    fabrics = FABRICS if board.nvlink_gbs > 0 else tuple(f for f in FABRICS if f.ports <= 2)
    fabric = fabrics[int(rng.integers(len(fabrics)))] if pods > 1 else None
    stages = _baseline(rng, arch, pods, gpus)
    stage = _target_stage(rng, cls, pods, gpus)
    if cls is Bottleneck.MEMORY:
        stage = "swap" if mechanism_hint == "host-memory-pressure" else "hbm"
        if stage == "swap":
            # Host pressure on a job whose kernels are also HBM-bound would be the other mechanism.
            stages = replace(stages, hbm=min(stages.hbm, 0.9 * stages.math))
    stages = replace(stages, **{stage: 0.0})
    tags = [arch.name, board.model, storage.name, fabric.name if fabric else "single-node"]
    if rng.random() < 0.3:
        stages = _near_miss(rng, stages, stage)
        tags.append("hard:mixed")
    strength = _strength(rng)
    stages = raise_until(stages, stage, cls, strength)
    label = label_of(stages)
    node_cpus = int(rng.choice([32, 48, 64, 96, 128, 192, 224, 256]))
    cpu_mode, cores, limit = _cpu_setup(rng, cls, gpus, node_cpus, arch)
    mechanism = _mechanism(stages, label, storage, cpu_mode, board)
    tags.append(f"strength:{stages.strength(label):.2f}")
    return Plan(
        arch,
        board,
        pods,
        gpus,
        storage,
        _u(rng, storage.gbs),
        fabric,
        node_cpus,
        cpu_mode,
        cores,
        limit,
        _u(rng, arch.tensor_eff),
        stages,
        label,
        mechanism,
        stages.strength(label),
        tuple(tags),
    )


def _cpu_setup(
    rng: np.random.Generator, cls: Bottleneck, gpus: int, node_cpus: int, arch: Archetype
) -> tuple[str, float, float | None]:
    """How the input pipeline gets its cores: all free ones, a CFS limit, or a few worker processes."""
    want = min(node_cpus * 0.9, gpus * _u(rng, arch.cpu_per_gpu))
    mode = str(rng.choice(["free", "limit", "workers"]))
    if mode == "limit":
        limit = float(max(2.0, round(want)))
        return mode, limit - 1.0, limit
    if mode == "workers":
        workers = float(max(1, int(want * rng.uniform(0.25, 0.6))))
        cap = None if rng.random() < 0.6 else float(round(want * 1.5) + 2)
        return mode, workers, cap
    return mode, float(node_cpus * rng.uniform(0.7, 0.9)), None


def _mechanism(stages: Stages, label: Bottleneck, storage: Storage, cpu_mode: str, board: Board) -> str:
    if label is Bottleneck.IO:
        return "local-disk" if storage.block else "network-storage"
    if label is Bottleneck.CPU:
        return {"free": "saturated", "limit": "throttled", "workers": "too-few-workers"}[cpu_mode]
    return mechanism_of(stages, label, nvlink=board.nvlink_gbs > 0)
