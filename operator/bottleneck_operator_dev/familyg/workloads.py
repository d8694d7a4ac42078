"""The kinds of training job family G draws: what teams really run, each with its own shape.

Each workload fixes what does not depend on the cluster: how long its kernels take per
micro-batch on a reference board, how much of that is memory-bound, its numeric precision, how
big its input samples are and how much CPU decoding they cost, and how its gradients move. The
cluster (hardware.py) and the job's design (design.py) decide the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck


@dataclass(frozen=True)
class Workload:
    """One kind of training job.

    Attributes:
        name: a short name (also the job name's prefix).
        namespace: the team namespace it runs in.
        kernels_s: range of kernel seconds per micro-batch on the board it is sized for.
        hbm_share: range of the share of kernel time in HBM-bound kernels (elementwise, norms,
            embedding gathers, optimizer updates, attention without fusion).
        precision: "bf16", "fp16", "tf32" or "fp32": what the math kernels run in.
        accum: gradient accumulation steps it is run with (one is drawn).
        comm: "ddp" (all-reduce of gradients), "fsdp" (all-gather + reduce-scatter of shards),
            "alltoall" (embedding exchange) or "pipeline" (activations between stages).
        workers: range of loader worker processes per GPU.
        mmap: the dataset is memory-mapped (Arrow, LMDB, numpy memmap): reads are major faults.
        host_gib: range of the host memory (GiB) one pod keeps resident.
        fb_frac: range of the framebuffer held (the caching allocator keeps freed blocks).
        classes: the classes it is drawn for, each with a weight.
    """

    name: str
    namespace: str
    kernels_s: tuple[float, float]
    hbm_share: tuple[float, float]
    precision: str
    accum: tuple[int, ...]
    comm: str
    workers: tuple[int, int]
    mmap: bool
    host_gib: tuple[float, float]
    fb_frac: tuple[float, float]
    classes: dict[Bottleneck, float]


B = Bottleneck
WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "llm-pretrain-fsdp",
        "genai",
        (0.6, 2.4),
        (0.15, 0.35),
        "bf16",
        (1, 2, 4, 8),
        "fsdp",
        (1, 3),
        True,
        (40, 160),
        (0.88, 0.99),
        {B.GPU: 3, B.INTERCONNECT: 3, B.MEMORY: 1, B.IO: 0.5, B.CPU: 0.3},
    ),
    Workload(
        "llm-finetune-zero",
        "genai",
        (0.3, 1.2),
        (0.2, 0.4),
        "bf16",
        (1, 4, 16),
        "ddp",
        (1, 4),
        True,
        (60, 400),
        (0.7, 0.98),
        {B.GPU: 2, B.INTERCONNECT: 2, B.MEMORY: 2, B.CPU: 0.5, B.IO: 0.5},
    ),
    Workload(
        "llm-pipeline-tp",
        "genai",
        (0.4, 1.6),
        (0.2, 0.35),
        "bf16",
        (4, 8, 16),
        "pipeline",
        (1, 2),
        True,
        (40, 200),
        (0.85, 0.99),
        {B.GPU: 2, B.INTERCONNECT: 2, B.MEMORY: 1},
    ),
    Workload(
        "recsys-embeddings",
        "recsys",
        (0.05, 0.4),
        (0.45, 0.8),
        "fp32",
        (1,),
        "alltoall",
        (4, 12),
        False,
        (100, 700),
        (0.8, 0.98),
        {B.MEMORY: 4, B.INTERCONNECT: 2, B.CPU: 2, B.IO: 2, B.GPU: 0.5},
    ),
    Workload(
        "vision-jpeg",
        "vision",
        (0.08, 0.5),
        (0.3, 0.55),
        "fp16",
        (1, 2),
        "ddp",
        (4, 16),
        False,
        (20, 120),
        (0.6, 0.97),
        {B.CPU: 4, B.IO: 3, B.GPU: 2, B.MEMORY: 1.5, B.INTERCONNECT: 1},
    ),
    Workload(
        "vision-fp32-legacy",
        "vision",
        (0.15, 0.7),
        (0.25, 0.5),
        "fp32",
        (1,),
        "ddp",
        (4, 10),
        False,
        (16, 80),
        (0.5, 0.95),
        {B.GPU: 2, B.CPU: 2, B.IO: 1.5, B.MEMORY: 1.5},
    ),
    Workload(
        "video-decode",
        "vision",
        (0.2, 0.9),
        (0.25, 0.45),
        "bf16",
        (1, 2),
        "ddp",
        (6, 16),
        False,
        (60, 300),
        (0.8, 0.98),
        {B.CPU: 4, B.IO: 3, B.MEMORY: 2, B.GPU: 1},
    ),
    Workload(
        "speech-conformer",
        "speech",
        (0.15, 0.8),
        (0.3, 0.5),
        "bf16",
        (1, 2, 4),
        "ddp",
        (3, 10),
        False,
        (30, 150),
        (0.85, 0.98),
        {B.CPU: 2, B.IO: 2, B.GPU: 2, B.INTERCONNECT: 1.5, B.MEMORY: 1},
    ),
    Workload(
        "diffusion-latent",
        "genai",
        (0.3, 1.4),
        (0.2, 0.4),
        "bf16",
        (1, 2),
        "ddp",
        (2, 8),
        True,
        (30, 200),
        (0.85, 0.99),
        {B.GPU: 3, B.IO: 2, B.INTERCONNECT: 2, B.CPU: 1, B.MEMORY: 1},
    ),
)


def fits(workload: Workload, target: Bottleneck) -> float:
    """The weight a workload is drawn with for a target class (0: never)."""
    return workload.classes.get(target, 0.0)
