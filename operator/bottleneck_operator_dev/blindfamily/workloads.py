"""The training workloads of the blind family: what one sample costs at each stage of the step.

A job's stage times follow from these per-sample costs and its hardware: read bytes over the
storage's bandwidth, decode core-seconds over the cores its loader gets, copy bytes over PCIe,
samples over the GPU's rate, gradient bytes over the slowest link. Figures come from TELEMETRY.md
where it has them (ImageNet JPEGs, ResNet-50 rates, decode cost per core) and are otherwise
orders of magnitude any practitioner would recognise (sequence lengths, parameter counts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.blindfamily.hardware import Board

Range = tuple[float, float]


@dataclass(frozen=True)
class KernelProfile:
    """What the GPU's counters show while the job's kernels run (ranges, drawn once per job).

    Attributes:
        sm: SM activity during compute (warps waiting on memory count as active).
        occupancy: resident warps over the maximum during compute.
        tensor, fp32, fp16: pipe activities during compute (tensor 1.0 = an instruction every
            other cycle, TELEMETRY.md).
        dram: DRAM activity during compute (~0.8 is the practical peak, TELEMETRY.md).
        dense: share of compute time with a kernel resident (what GPU_UTIL sees).
        power: share of (TDP - idle) drawn at full activity.
    """

    sm: Range
    occupancy: Range
    tensor: Range
    fp32: Range
    fp16: Range
    dram: Range
    dense: Range
    power: Range


KERNELS: dict[str, KernelProfile] = {
    # Transformer GEMMs under AMP: tensor-heavy, low occupancy (big tiles, many registers).
    "gemm": KernelProfile(
        (0.86, 0.97), (0.14, 0.32), (0.36, 0.72), (0.03, 0.1), (0.04, 0.12), (0.22, 0.48), (0.97, 1.0), (0.85, 1.08)
    ),
    # Convolutions under AMP: tensor pipes less busy, more elementwise and DRAM traffic.
    "conv": KernelProfile(
        (0.8, 0.95), (0.25, 0.5), (0.18, 0.42), (0.05, 0.15), (0.08, 0.22), (0.35, 0.6), (0.96, 1.0), (0.75, 1.0)
    ),
    # FP32 without TF32: the FP32 pipe does the work, tensor pipes idle.
    "fp32": KernelProfile(
        (0.8, 0.96), (0.3, 0.55), (0.0, 0.04), (0.35, 0.78), (0.0, 0.02), (0.22, 0.5), (0.96, 1.0), (0.7, 0.95)
    ),
    # Gathers, embeddings, elementwise chains: DRAM at its practical peak, pipes mostly waiting.
    "hbm": KernelProfile(
        (0.75, 0.95), (0.45, 0.82), (0.01, 0.12), (0.05, 0.25), (0.03, 0.15), (0.8, 0.92), (0.97, 1.0), (0.6, 0.85)
    ),
    # Many tiny kernels: a kernel is nearly always resident but few SMs have work.
    "launch": KernelProfile(
        (0.18, 0.5), (0.04, 0.2), (0.0, 0.12), (0.03, 0.12), (0.0, 0.05), (0.05, 0.25), (0.82, 0.96), (0.3, 0.55)
    ),
}


@dataclass(frozen=True)
class Archetype:
    """One kind of training job and its per-sample costs.

    Attributes:
        name: short name.
        jobs: base names for the job (a random suffix is added).
        namespaces: teams that run it.
        kernel: key of ``KERNELS``.
        a100_rate: samples/s per GPU at full speed on an A100 80 GB, with the job's precision.
        batch: samples per GPU per step.
        read_bytes: bytes read from storage per sample.
        cpu_s: core-seconds of decode/augment/collate per sample.
        h2d_bytes: bytes copied host-to-device per sample.
        params: parameter count; the gradient all-reduce moves ``params * grad_bytes`` per step.
        grad_bytes: bytes per parameter on the wire (FSDP's gather and scatter folded in).
        dataset_gb: dataset size (whether it fits in the page cache).
    """

    name: str
    jobs: tuple[str, ...]
    namespaces: tuple[str, ...]
    kernel: str
    a100_rate: Range
    batch: Range
    read_bytes: Range
    cpu_s: Range
    h2d_bytes: Range
    params: Range
    grad_bytes: float
    dataset_gb: Range


ARCHETYPES: dict[str, Archetype] = {
    a.name: a
    for a in (
        # ResNet-50: 2,470 img/s on one A100 with AMP; 50-200 JPEGs/s per core (TELEMETRY.md).
        Archetype(
            "resnet",
            ("resnet50-imagenet", "resnet101-inat", "convnext-t-imagenet"),
            ("vision-research", "perception"),
            "conv",
            (1900, 2600),
            (128, 256),
            (90e3, 140e3),
            (1 / 200, 1 / 50),
            (150e3, 151e3),
            (25e6, 45e6),
            4.0,
            (140, 300),
        ),
        Archetype(
            "vit",
            ("vit-b16-pretrain", "vit-l16-finetune", "deit-s-distill"),
            ("vision-research",),
            "gemm",
            (700, 1300),
            (64, 256),
            (90e3, 140e3),
            (1 / 160, 1 / 40),
            (150e3, 151e3),
            (86e6, 304e6),
            4.0,
            (140, 1500),
        ),
        Archetype(
            "llm",
            ("llama-7b-pretrain", "gpt-1b3-continued", "mistral-sft", "codegen-13b"),
            ("llm-pretrain", "genai"),
            "gemm",
            (0.6, 6.0),
            (1, 8),
            (8e3, 16e3),
            (1e-4, 1e-3),
            (16e3, 33e3),
            (1.3e9, 13e9),
            3.0,
            (500, 3000),
        ),
        Archetype(
            "bert",
            ("bert-large-squad", "roberta-base-classify", "e5-embed-finetune"),
            ("nlp", "search-ranking"),
            "gemm",
            (300, 900),
            (16, 64),
            (1e3, 4e3),
            (2e-4, 2e-3),
            (1e3, 4e3),
            (110e6, 340e6),
            4.0,
            (1, 20),
        ),
        Archetype(
            "asr",
            ("whisper-small-ft", "conformer-ctc", "wav2vec2-pretrain"),
            ("speech",),
            "gemm",
            (150, 450),
            (16, 64),
            (150e3, 600e3),
            (0.008, 0.04),
            (80e3, 320e3),
            (100e6, 800e6),
            4.0,
            (100, 2000),
        ),
        Archetype(
            "video",
            ("videomae-k400", "x3d-kinetics", "slowfast-ava"),
            ("video-understanding",),
            "conv",
            (80, 260),
            (8, 32),
            (1e6, 6e6),
            (0.03, 0.15),
            (1.2e6, 4.8e6),
            (30e6, 120e6),
            4.0,
            (500, 5000),
        ),
        Archetype(
            "unet3d",
            ("unet3d-brats", "swin-unetr-ct", "nnunet-kidney"),
            ("medical-imaging",),
            "conv",
            (6, 30),
            (2, 8),
            (20e6, 80e6),
            (0.2, 1.0),
            (16e6, 64e6),
            (20e6, 90e6),
            4.0,
            (100, 2000),
        ),
        Archetype(
            "dlrm",
            ("dlrm-criteo", "two-tower-retrieval", "dcn-v2-ranking"),
            ("recsys",),
            "hbm",
            (60e3, 300e3),
            (8192, 65536),
            (150, 500),
            (1e-6, 8e-6),
            (200, 600),
            (10e6, 200e6),
            4.0,
            (500, 4000),
        ),
        Archetype(
            "gnn",
            ("graphsage-products", "gat-fraud", "pinsage-items"),
            ("graph-ml", "fraud"),
            "hbm",
            (2e3, 15e3),
            (512, 4096),
            (4e3, 40e3),
            (2e-4, 2e-3),
            (20e3, 200e3),
            (1e6, 20e6),
            4.0,
            (50, 800),
        ),
        Archetype(
            "rl",
            ("ppo-locomotion", "sac-manipulation", "impala-atari"),
            ("robotics", "rl-agents"),
            "launch",
            (20e3, 120e3),
            (256, 4096),
            (0.0, 64.0),
            (1e-5, 1e-4),
            (400, 4e3),
            (0.2e6, 5e6),
            4.0,
            (1, 5),
        ),
        Archetype(
            "diffusion",
            ("sd15-finetune", "sdxl-lora", "dit-xl-pretrain"),
            ("genai", "creative"),
            "gemm",
            (30, 130),
            (8, 32),
            (150e3, 600e3),
            (0.005, 0.03),
            (0.75e6, 3e6),
            (0.6e9, 2.6e9),
            4.0,
            (200, 5000),
        ),
        Archetype(
            "surrogate",
            ("fno-weather", "meshgraph-cfd", "pinn-heat"),
            ("climate-sim", "cfd-surrogates"),
            "fp32",
            (100, 1500),
            (8, 64),
            (0.5e6, 8e6),
            (5e-4, 5e-3),
            (0.5e6, 8e6),
            (1e6, 100e6),
            4.0,
            (100, 2000),
        ),
        Archetype(
            "detection",
            ("yolov8-coco", "detr-objects365", "maskrcnn-lvis"),
            ("perception", "autonomy"),
            "conv",
            (200, 600),
            (16, 64),
            (120e3, 200e3),
            (0.015, 0.06),
            (1.2e6, 2.5e6),
            (7e6, 70e6),
            4.0,
            (20, 200),
        ),
    )
}


def gpu_rate(arch: Archetype, board: Board, kernel: str, rng: np.random.Generator) -> float:
    """Samples/s per GPU at full speed on ``board``, scaled from the A100 figure by what bounds the kernels.

    Tensor work scales with tensor TFLOPS (sub-linearly: newer boards rarely reach their ratio),
    FP32 work with FP32 TFLOPS, bandwidth-bound work with HBM bandwidth, launch-bound work with
    the host's launch rate (nearly board-independent).
    """
    base = float(rng.uniform(*arch.a100_rate))
    if kernel in ("gemm", "conv"):
        return base * float((board.tensor_tflops / 312.0) ** 0.8)
    if kernel == "fp32":
        return base * board.fp32_tflops / 19.5
    if kernel == "hbm":
        return base * board.hbm_bps / 2039e9
    return base * float(rng.uniform(0.8, 1.3))


def draw(r: Range, rng: np.random.Generator, log: bool = False) -> float:
    """One value from a range, log-uniform for ranges that span orders of magnitude."""
    lo, hi = r
    if log and lo > 0:
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    return float(rng.uniform(lo, hi))
