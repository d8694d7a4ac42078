"""What one family Q job is: its workload, its hardware, its mechanism and its stage times.

A job is drawn the way an SRE meets it: a team's workload (LLM pre-training or fine-tuning,
recommendation, vision with JPEG or video decoding, speech, diffusion) on whatever boards, fabric
and storage its cluster has. The class decides only which stage the draw makes the bound; how
strongly and which stage comes second are drawn too, and the label is then read back from the
step model over the whole timeline (:mod:`.timeline`), never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyq.hardware import BOARDS, FABRICS, STORAGES, Board, Fabric, Storage
from bottleneck_operator_dev.familyq.stages import COMM, DECODE, H2D, HBM, HOSTMEM, MATH, N_STAGES, READ, shape_stages

# Relative stage times of each workload's steady step before the draw moves them (read, decode,
# h2d, math, hbm, comm, hostmem), and its tensor-pipe intensity while math kernels run (dense BF16
# GEMMs keep the pipe busy; embedding-heavy and convolution-light work does not).
WORKLOADS: dict[str, tuple[tuple[float, ...], tuple[float, float]]] = {
    "llm-pretrain": ((0.01, 0.02, 0.01, 1.0, 0.30, 0.20, 0.0), (0.45, 0.75)),
    "llm-finetune": ((0.02, 0.06, 0.02, 1.0, 0.40, 0.12, 0.0), (0.35, 0.65)),
    "recsys-embeddings": ((0.20, 0.20, 0.15, 0.40, 1.0, 0.20, 0.0), (0.08, 0.25)),
    "vision-jpeg": ((0.30, 0.60, 0.05, 1.0, 0.35, 0.05, 0.0), (0.25, 0.45)),
    "video-decode": ((0.40, 0.80, 0.08, 1.0, 0.30, 0.05, 0.0), (0.25, 0.45)),
    "speech": ((0.30, 0.50, 0.04, 1.0, 0.40, 0.08, 0.0), (0.20, 0.40)),
    "diffusion": ((0.15, 0.30, 0.04, 1.0, 0.35, 0.08, 0.0), (0.35, 0.60)),
}


@dataclass(frozen=True)
class Mechanism:
    """One way a class comes about: the stage it makes the bound and where it can happen."""

    name: str
    label: Bottleneck
    stage: int
    workloads: tuple[str, ...]
    storages: tuple[str, ...] = ("local-nvme-gen4", "nfs", "object-store")
    multi_node: bool | None = None  # True: needs several pods; False: one pod; None: either
    needs_peers: bool = False  # needs more than one GPU in all


_ANY_INPUT = ("vision-jpeg", "video-decode", "speech", "diffusion")
_ANY = tuple(WORKLOADS)
MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("object-store-streaming", Bottleneck.IO, READ, (*_ANY_INPUT, "llm-pretrain"), ("object-store",)),
    Mechanism("nfs-shared-dataset", Bottleneck.IO, READ, _ANY_INPUT, ("nfs",)),
    Mechanism("local-disk-saturated", Bottleneck.IO, READ, _ANY_INPUT, ("local-nvme-gen3", "sata-ssd")),
    Mechanism("throttled-volume", Bottleneck.IO, READ, (*_ANY_INPUT, "recsys-embeddings"), ("throttled-pv",)),
    Mechanism("mmap-dataset-faults", Bottleneck.IO, READ, ("llm-finetune", "recsys-embeddings"), ("local-nvme-gen3",)),
    Mechanism("jpeg-decode-workers", Bottleneck.CPU, DECODE, ("vision-jpeg", "diffusion")),
    Mechanism("video-decode-workers", Bottleneck.CPU, DECODE, ("video-decode",)),
    Mechanism("audio-feature-extraction", Bottleneck.CPU, DECODE, ("speech",)),
    Mechanism("cfs-quota-throttling", Bottleneck.CPU, DECODE, _ANY_INPUT),
    Mechanism("tokenize-on-the-fly", Bottleneck.CPU, DECODE, ("llm-finetune",)),
    Mechanism("ethernet-allreduce", Bottleneck.INTERCONNECT, COMM, _ANY, multi_node=True),
    Mechanism(
        "rdma-allreduce", Bottleneck.INTERCONNECT, COMM, ("llm-pretrain", "llm-finetune", "diffusion"), multi_node=True
    ),
    Mechanism("moe-alltoall", Bottleneck.INTERCONNECT, COMM, ("llm-pretrain",), multi_node=True),
    # Pipeline stages hand activations to the next node: point-to-point sends the compute cannot hide.
    Mechanism("pipeline-parallel-activations", Bottleneck.INTERCONNECT, COMM, ("llm-pretrain",), multi_node=True),
    Mechanism(
        "tensor-parallel-over-pcie",
        Bottleneck.INTERCONNECT,
        COMM,
        ("llm-finetune",),
        multi_node=False,
        needs_peers=True,
    ),
    Mechanism("host-to-device-copies", Bottleneck.INTERCONNECT, H2D, ("recsys-embeddings", "video-decode")),
    Mechanism("dense-compute", Bottleneck.GPU, MATH, _ANY),
    Mechanism("overlapped-sharded-training", Bottleneck.GPU, MATH, ("llm-pretrain", "llm-finetune"), multi_node=True),
    Mechanism("power-capped-compute", Bottleneck.GPU, MATH, ("llm-pretrain", "diffusion", "vision-jpeg")),
    Mechanism("hbm-bound-kernels", Bottleneck.MEMORY, HBM, ("recsys-embeddings", "llm-finetune", "speech")),
    Mechanism("host-swap-in", Bottleneck.MEMORY, HOSTMEM, _ANY),
    Mechanism("page-cache-reclaim", Bottleneck.MEMORY, HOSTMEM, _ANY),
)


@dataclass(frozen=True)
class Plan:
    """Everything drawn for one job before its timeline and telemetry.

    Attributes:
        mechanism, workload: what the job is.
        board, gpus, pods, node_gpus, node_cpus, node_mem: hardware; ``gpus`` per pod.
        fabric: between nodes (None for one pod).
        storage: where samples come from.
        stages: steady stage times, seconds per step (see :mod:`.stages`).
        sharp: the smooth maximum's sharpness (prefetch depth).
        hidden: share of the collectives' link time hidden under compute (overlap, gradient accumulation).
        tensor: tensor-pipe activity while math kernels run.
        power_cap: the enforced power limit, W (at or below TDP).
        cpu_limit: the pod's CPU limit in cores, None when unset.
        mem_limit: the pod's memory limit in bytes, None when unset.
        swap: the node has swap (zram or disk).
        neighbours: other tenants' pods on each of the job's nodes.
        strength: the drawn speed-up from removing the bound stage.
        second: the stage drawn to come close, None for a clear job.
    """

    mechanism: Mechanism
    workload: str
    board: Board
    gpus: int
    pods: int
    node_gpus: int
    node_cpus: int
    node_mem: float
    fabric: Fabric | None
    storage: Storage
    stages: np.ndarray
    sharp: float
    hidden: float
    tensor: float
    power_cap: float
    cpu_limit: float | None
    mem_limit: float | None
    swap: bool
    neighbours: int
    strength: float
    second: int | None


def draw_strength(rng: np.random.Generator) -> float:
    """From barely there (1.05-1.2x) to overwhelming (up to 5x), moderate most often."""
    band = rng.choice(3, p=[0.3, 0.45, 0.25])
    lo, hi = ((1.05, 1.2), (1.2, 2.0), (2.0, 5.0))[band]
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _shape(rng: np.random.Generator, mech: Mechanism, board: Board) -> tuple[int, int, int, Fabric | None]:
    """GPUs per pod, pods, GPUs per node, fabric."""
    node_gpus = int(rng.choice(board.gpus_per_node))
    multi = mech.multi_node if mech.multi_node is not None else bool(rng.random() < 0.35)
    if multi:
        gpus, pods = node_gpus if node_gpus > 1 else 1, int(rng.integers(2, 17))
        fabric: Fabric | None = FABRICS[int(rng.integers(len(FABRICS)))]
        if mech.name == "ethernet-allreduce":
            fabric = FABRICS[int(rng.integers(3))]
        elif mech.name in ("rdma-allreduce", "moe-alltoall"):
            fabric = FABRICS[3 + int(rng.integers(len(FABRICS) - 3))]
        return gpus, pods, node_gpus, fabric
    gpus = int(rng.integers(1, node_gpus + 1)) if node_gpus > 1 else 1
    if mech.needs_peers:
        gpus = max(gpus, 2 if node_gpus >= 2 else 1)
    return gpus, 1, node_gpus, None


def _board(rng: np.random.Generator, mech: Mechanism) -> Board:
    if mech.name == "tensor-parallel-over-pcie":
        options = [b for b in BOARDS if b.nvlink_bps == 0 and max(b.gpus_per_node) >= 4]
    elif mech.multi_node:
        options = [b for b in BOARDS if max(b.gpus_per_node) == 8]
    else:
        options = list(BOARDS)
    return options[int(rng.integers(len(options)))]


def _second(rng: np.random.Generator, mech: Mechanism, multi_gpu: bool, mixed: bool) -> int | None:
    """For a mixed job, another class's stage to come within 80-97 % of the bound's saving."""
    if not mixed:
        return None
    pool = [s for s in (READ, DECODE, H2D, MATH, HBM, COMM) if s != mech.stage]
    pool = [s for s in pool if multi_gpu or s != COMM]
    own = {
        mech.stage,
        *((H2D, COMM) if mech.stage in (H2D, COMM) else ()),
        *((HBM, HOSTMEM) if mech.stage in (HBM, HOSTMEM) else ()),
    }
    pool = [s for s in pool if s not in own]
    return int(rng.choice(pool))


def draw_plan(rng: np.random.Generator, mech: Mechanism, strength: float, mixed: bool) -> Plan:
    """One job's plan for a mechanism: hardware, limits, neighbours and sized stage times.

    ``strength`` and ``mixed`` are drawn once per job by the caller, outside its redraws, so that
    the jobs a redraw rejects more often (barely bound, mixed) keep their drawn share.
    """
    workload = str(rng.choice(mech.workloads))
    board = _board(rng, mech)
    gpus, pods, node_gpus, fabric = _shape(rng, mech, board)
    storage = STORAGES[str(rng.choice(mech.storages))]
    profile, (t_lo, t_hi) = WORKLOADS[workload]
    base = np.asarray(profile) * rng.uniform(0.5, 1.5, N_STAGES)
    if gpus * pods == 1:
        base[COMM] = 0.0
    if mech.stage == HOSTMEM:
        base[HOSTMEM] = 0.05
    sharp = float(rng.uniform(3.0, 10.0))
    second = _second(rng, mech, gpus * pods > 1, mixed)
    ratio = float(rng.uniform(0.80, 0.97))
    stages = shape_stages(base, sharp, mech.stage, strength, second, ratio)
    stages = stages * float(np.exp(rng.uniform(np.log(0.15), np.log(2.5)))) / max(float(stages.max()), 1e-9)
    node_cpus = int(rng.choice((16, 32, 48) if node_gpus == 1 else (64, 96, 128, 192, 224, 256)))
    capped = mech.name == "power-capped-compute" or rng.random() < 0.25
    return Plan(
        mechanism=mech,
        workload=workload,
        board=board,
        gpus=gpus,
        pods=pods,
        node_gpus=node_gpus,
        node_cpus=node_cpus,
        node_mem=float(rng.choice((64, 128, 256) if node_gpus == 1 else (512, 1024, 2048))) * 2**30,
        fabric=fabric,
        storage=storage,
        stages=stages,
        sharp=sharp,
        hidden=float(rng.uniform(0.5, 0.9) if mech.name == "overlapped-sharded-training" else rng.uniform(0.0, 0.6)),
        tensor=float(rng.uniform(t_lo, t_hi)),
        power_cap=board.tdp_w * (float(rng.uniform(0.6, 0.9)) if capped else 1.0),
        cpu_limit=_cpu_limit(rng, mech, gpus, node_cpus, node_gpus),
        mem_limit=None if rng.random() < 0.3 else float(rng.uniform(0.5, 0.9)) * 2**30 * 64 * gpus,
        swap=mech.name == "host-swap-in" or (mech.name != "page-cache-reclaim" and rng.random() < 0.2),
        neighbours=0 if gpus == node_gpus else int(rng.integers(1, 4)),
        strength=strength,
        second=second,
    )


def _cpu_limit(rng: np.random.Generator, mech: Mechanism, gpus: int, node_cpus: int, node_gpus: int) -> float | None:
    share = node_cpus * gpus / node_gpus
    if mech.name == "cfs-quota-throttling":
        return float(max(2, round(share * rng.uniform(0.15, 0.5))))
    if rng.random() < 0.4:
        return float(max(2, round(share * rng.uniform(0.6, 1.0))))
    return None
