"""One family-R job before any exporter sees it: workload, hardware, faults, and its stage times.

A job starts from how real fleets go wrong (a link that trained narrow, a NIC at a lower rate, an
NFS server another team just started reading from, a cache that is cold for the first epoch,
tokenisation that grows with sequence length, swap-in on an overcommitted node) and from the
workloads teams run. The intended stage is only a starting point: the label is what the step model
says after everything is drawn, and a draw whose model disagrees is drawn again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyr import fleet, steps
from bottleneck_operator_dev.familyr.steps import COMM, COMPUTE, H2D, HBM, HOSTMEM, PRE, READ, FloatArray

FINE_S = 5.0  # the model's own time resolution
LEAD_S = 300.0  # history before the window, so the first rates have samples behind them

# Workloads that can be bound by each stage (what a team would be running when that stage binds).
WORKLOADS: dict[str, tuple[str, ...]] = {
    "read": ("vision-jpeg-on-nfs", "video-clips-object-store", "speech-cold-nvme-cache", "llm-shards-network-volume"),
    "preprocess": ("vision-heavy-augmentation", "llm-tokenise-on-the-fly", "rl-cpu-environment", "speech-fbank"),
    "hostmem": ("recsys-host-embedding-cache", "dataloader-workers-copy-dataset", "fine-tune-cpu-offload-swap"),
    "h2d": ("recsys-embedding-offload", "zero-offload-optimizer", "vision-uint8-batches-narrow-link"),
    "compute": ("llm-pretrain-fsdp", "diffusion-unet", "vision-transformer", "speech-conformer"),
    "hbm": ("long-context-attention", "recsys-embedding-lookup", "rlhf-generation-decode"),
    "comm": ("moe-all-to-all", "fsdp-over-ethernet", "tensor-parallel-across-nodes", "nvlink-lane-down"),
}
CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("read",),
    Bottleneck.CPU: ("preprocess",),
    Bottleneck.INTERCONNECT: ("h2d", "comm"),
    Bottleneck.GPU: ("compute",),
    Bottleneck.MEMORY: ("hostmem", "hbm"),
}


@dataclass
class JobPlan:
    """Everything the exporters need to know about one job (mutable while it is drawn)."""

    stage: str
    workload: str
    board: fleet.Board
    pods: int
    gpus: int
    fabric: fleet.Fabric
    storage: fleet.Storage
    cluster: fleet.Cluster
    h2d_bps: float
    nvlink_bps: float
    net_bps: float
    cpu_limit: float | None
    node_cpus: int
    workers: int
    power_limit_w: float
    times: FloatArray
    stages: FloatArray
    overlap: FloatArray
    weight: FloatArray
    tags: list[str] = field(default_factory=list)


def draw_topology(rng: np.random.Generator, stage: str, workload: str) -> tuple[fleet.Board, int, int]:
    """Board, pods and GPUs per pod that fit the workload (a comm-bound job needs peers)."""
    boards = fleet.BOARDS
    if workload == "nvlink-lane-down":
        boards = tuple(b for b in boards if b.nvlink_bps > 0)
    board = boards[int(rng.integers(len(boards)))]
    gpus = int(rng.choice([1, 2, 4, 8, 8])) if board.nvlink_bps > 0 else int(rng.choice([1, 1, 2, 4, 8]))
    pods = int(rng.choice([1, 1, 2, 4, 8, 16]))
    if stage == "comm":
        gpus = max(gpus, 2 if workload == "nvlink-lane-down" else 1)
        pods = 1 if workload == "nvlink-lane-down" else max(pods, 2)
        if workload == "nvlink-lane-down":
            gpus = max(gpus, 4)
    return board, pods, gpus


def draw_links(
    rng: np.random.Generator, workload: str, board: fleet.Board, fabric: fleet.Fabric, tags: list[str]
) -> tuple[float, float, float]:
    """Usable PCIe, NVLink and network bytes/s, with the faults real fleets show."""
    gen, lanes = board.pcie_gen, 16
    if rng.random() < 0.15 or workload == "vision-uint8-batches-narrow-link":
        gen, lanes = (3, 16) if rng.random() < 0.5 else (gen, 8)
        tags.append(f"pcie-trained-gen{gen}-x{lanes}")
    nvlink = board.nvlink_bps
    if workload == "nvlink-lane-down" or (nvlink > 0 and rng.random() < 0.05):
        nvlink *= float(rng.choice([1 / 12, 1 / 18, 0.5]))
        tags.append("nvlink-degraded")
    net = fabric.line_bps * fleet.NCCL_EFFICIENCY
    if rng.random() < 0.12:
        net *= float(rng.choice([0.25, 0.5]))
        tags.append("nic-negotiated-lower-rate")
    return fleet.pcie_bps(board, gen, lanes), nvlink, net


def base_stages(
    rng: np.random.Generator, workload: str, gpus_total: int, board: fleet.Board
) -> tuple[FloatArray, float]:
    """Seconds per step of every stage before the bound is set, and the comm overlap share."""
    s = np.zeros(len(steps.STAGES))
    s[COMPUTE] = rng.uniform(0.15, 1.5)
    s[HBM] = s[COMPUTE] * rng.uniform(0.05, 0.4)
    s[READ] = s[COMPUTE] * rng.uniform(0.05, 0.6)
    s[PRE] = s[COMPUTE] * rng.uniform(0.05, 0.6)
    s[H2D] = s[COMPUTE] * rng.uniform(0.005, 0.08)
    s[HOSTMEM] = s[COMPUTE] * rng.uniform(0.002, 0.01)  # a little reclaim happens on any node
    overlap = rng.uniform(0.3, 0.9)
    if gpus_total > 1:
        # Gradient accumulation exchanges once every k micro-steps: it hides communication.
        accumulate = int(rng.choice([1, 1, 2, 4, 8]))
        s[COMM] = s[COMPUTE] * rng.uniform(0.1, 0.9) / accumulate
    if workload in ("long-context-attention", "rlhf-generation-decode"):
        # Attention over long sequences streams K/V: slower memory (GDDR boards) makes it bandwidth-bound.
        s[HBM] *= 2.0 * np.sqrt(2000e9 / board.hbm_bps)
    if workload in ("tensor-parallel-across-nodes", "moe-all-to-all"):
        overlap = rng.uniform(0.0, 0.3)  # these exchanges sit on the critical path, between layers
    return s, float(overlap)


def profiles(rng: np.random.Generator, plan: JobPlan, start: float) -> None:
    """Give the stages their life over time: jitter, a warming cache, neighbours, checkpoint pauses."""
    n = plan.times.size
    jitter = np.exp(rng.normal(0.0, rng.uniform(0.02, 0.08), (len(steps.STAGES), n)))
    plan.stages = plan.stages * jitter
    rel = plan.times - start
    if plan.workload == "speech-cold-nvme-cache" or (plan.storage.local and rng.random() < 0.1):
        warm_at = rng.uniform(0.2, 0.7) * rel[-1]
        plan.stages[READ] *= np.where(rel < warm_at, 1.0, rng.uniform(0.1, 0.3))
        plan.tags.append("cache-warms-mid-window")
    if not plan.storage.local and rng.random() < 0.4:
        at = rng.uniform(0.1, 0.8) * rel[-1]
        plan.stages[READ] *= np.where(rel < at, 1.0, rng.uniform(1.2, 2.0))
        plan.tags.append("shared-storage-neighbour-starts")
    if plan.workload == "llm-tokenise-on-the-fly" and rng.random() < 0.5:
        plan.stages[PRE] *= np.linspace(0.8, 1.3, n)  # a sequence-length curriculum
        plan.tags.append("sequence-length-curriculum")
    if plan.workload == "moe-all-to-all":
        plan.stages[COMM] *= np.exp(rng.normal(0.0, 0.25, n))  # routing decides the volume
    if rng.random() < 0.3:
        at = int(rng.integers(n // 3, n))
        length = int(rng.integers(3, 12))
        plan.weight[at : at + length] = 0.0
        plan.tags.append("checkpoint-pause")
