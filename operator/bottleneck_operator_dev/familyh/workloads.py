"""The kinds of training jobs teams run, as the physical quantities one iteration moves and computes.

Each workload gives ranges for what one sample costs: bytes read from storage, CPU time to decode
and augment it on one core, and the training FLOPs (about 3x the forward pass; 6 x parameters x
tokens for a transformer). How much of the kernel time is bound by memory bandwidth rather than
math, and what efficiency the math reaches, are ranges from published model-FLOPs-utilisation
figures (see docs/familyh.md): convolutional nets reach a small share of a tensor core's peak,
large transformers a much larger one, embedding-heavy recommenders almost none.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

KB, MB, GB = 1e3, 1e6, 1e9


@dataclass(frozen=True)
class Workload:
    """One kind of training job.

    Attributes:
        name: short name, also a tag.
        sample_bytes: bytes per sample read from storage (low, high).
        decode_s: CPU-seconds per sample to decode, augment and collate on one core (low, high).
        batch: samples per GPU per iteration (low, high).
        tflop: training TFLOP per sample (low, high).
        mfu: achieved share of the board's dense tensor peak while its kernels run (low, high).
        hbm_share: share of kernel time in bandwidth-bound kernels (low, high).
        grad_gb: gradient (or sharded parameter) gigabytes each rank exchanges per optimizer step (low, high).
        h2d_per_sample: bytes copied host to device per sample after decoding (low, high).
        storages: where its data usually lives.
        host_gb: host memory per rank (GB): pinned buffers, loader workers, caches (low, high).
    """

    name: str
    sample_bytes: tuple[float, float]
    decode_s: tuple[float, float]
    batch: tuple[int, int]
    tflop: tuple[float, float]
    mfu: tuple[float, float]
    hbm_share: tuple[float, float]
    grad_gb: tuple[float, float]
    h2d_per_sample: tuple[float, float]
    storages: tuple[str, ...]
    host_gb: tuple[float, float]


# ResNet-50: 4.1 GFLOP forward -> ~12 GFLOP per trained image; ~2,470 img/s on an A100 with AMP
# (NVIDIA DeepLearningExamples) is ~10 % of the 312 TFLOPS peak. JPEG decode plus augmentation runs
# at 50-200 images/s per core. A transformer token costs 6 x parameters FLOPs; large-model MFU of
# 35-55 % (PaLM, Megatron-LM reports). DLRM-style recommenders spend most kernel time in embedding
# gathers (bandwidth-bound).
WORKLOADS: dict[str, Workload] = {
    "vision-jpeg": Workload(
        "vision-jpeg",
        (80 * KB, 160 * KB),
        (0.004, 0.02),
        (64, 256),
        (0.012, 0.055),
        (0.08, 0.35),
        (0.25, 0.5),
        (0.1, 0.35),
        (150 * KB, 600 * KB),
        ("local-nvme", "nfs", "object-store", "fuse-bucket", "sata-ssd", "cloud-block"),
        (6, 24),
    ),
    "video": Workload(
        "video",
        (1 * MB, 6 * MB),
        (0.04, 0.25),
        (8, 32),
        (0.1, 0.45),
        (0.15, 0.35),
        (0.3, 0.5),
        (0.1, 0.4),
        (5 * MB, 25 * MB),
        ("local-nvme", "nfs", "object-store", "lustre-ib", "cloud-block"),
        (12, 48),
    ),
    "speech": Workload(
        "speech",
        (100 * KB, 400 * KB),
        (0.003, 0.015),
        (16, 64),
        (0.02, 0.06),
        (0.15, 0.3),
        (0.35, 0.55),
        (0.2, 0.6),
        (200 * KB, 800 * KB),
        ("local-nvme", "nfs", "object-store", "fuse-bucket"),
        (8, 32),
    ),
    "diffusion": Workload(
        "diffusion",
        (200 * KB, 1 * MB),
        (0.008, 0.03),
        (8, 64),
        (0.3, 1.5),
        (0.28, 0.45),
        (0.25, 0.45),
        (1.6, 5.0),
        (0.8 * MB, 3 * MB),
        ("object-store", "local-nvme", "lustre-ib", "nfs"),
        (12, 48),
    ),
    "recsys-dlrm": Workload(
        "recsys-dlrm",
        (0.2 * KB, 1 * KB),
        (2e-6, 1.2e-5),
        (4096, 65536),
        (2e-6, 2e-5),
        (0.03, 0.12),
        (0.55, 0.85),
        (0.5, 4.0),
        (0.5 * KB, 2 * KB),
        ("object-store", "local-nvme", "nfs", "cloud-block"),
        (24, 120),
    ),
    "llm-pretrain-fsdp": Workload(
        "llm-pretrain-fsdp",
        (8 * KB, 32 * KB),
        (5e-5, 4e-4),
        (2, 16),
        (50.0, 600.0),
        (0.35, 0.55),
        (0.15, 0.35),
        (4.0, 40.0),
        (8 * KB, 32 * KB),
        ("local-nvme", "lustre-ib", "object-store", "nfs"),
        (16, 64),
    ),
    "llm-finetune": Workload(
        "llm-finetune",
        (2 * KB, 16 * KB),
        (1e-4, 1e-3),
        (1, 8),
        (5.0, 80.0),
        (0.2, 0.45),
        (0.3, 0.7),
        (0.05, 26.0),
        (2 * KB, 16 * KB),
        ("local-nvme", "nfs", "object-store"),
        (16, 96),
    ),
    "llm-tp-pp": Workload(
        "llm-tp-pp",
        (8 * KB, 32 * KB),
        (5e-5, 4e-4),
        (1, 4),
        (100.0, 2000.0),
        (0.35, 0.5),
        (0.15, 0.3),
        (1.0, 8.0),
        (8 * KB, 32 * KB),
        ("lustre-ib", "local-nvme", "object-store"),
        (16, 64),
    ),
}

# Which workloads a class's jobs are drawn from, with weights: the jobs where each bottleneck is
# common in practice (input-heavy vision and speech for IO and CPU, large models for collectives).
BY_CLASS: dict[Bottleneck, tuple[tuple[str, float], ...]] = {
    Bottleneck.IO: (
        ("vision-jpeg", 3),
        ("video", 2),
        ("speech", 2),
        ("diffusion", 2),
        ("recsys-dlrm", 1),
        ("llm-pretrain-fsdp", 0.5),
    ),
    Bottleneck.CPU: (("vision-jpeg", 4), ("video", 2), ("speech", 2), ("diffusion", 1.5), ("recsys-dlrm", 1.5)),
    Bottleneck.INTERCONNECT: (
        ("llm-pretrain-fsdp", 3),
        ("llm-tp-pp", 2),
        ("recsys-dlrm", 1.5),
        ("vision-jpeg", 1),
        ("llm-finetune", 1),
        ("diffusion", 1),
    ),
    Bottleneck.GPU: (
        ("llm-pretrain-fsdp", 2),
        ("llm-tp-pp", 1),
        ("vision-jpeg", 2),
        ("diffusion", 2),
        ("speech", 1),
        ("video", 1),
        ("llm-finetune", 1.5),
        ("recsys-dlrm", 0.5),
    ),
    Bottleneck.MEMORY: (
        ("recsys-dlrm", 3),
        ("llm-finetune", 2.5),
        ("diffusion", 1.5),
        ("vision-jpeg", 1.5),
        ("speech", 1),
        ("llm-pretrain-fsdp", 0.5),
    ),
}

# The sub-mechanism a class's job is drafted towards, with weights; the step model still decides
# the mechanism it is labelled with.
MECHANISM_MIX: dict[Bottleneck, tuple[tuple[Mechanism, float], ...]] = {
    Bottleneck.IO: ((Mechanism.LOCAL_DISK, 1), (Mechanism.NETWORK_STORAGE, 1.6)),
    Bottleneck.CPU: ((Mechanism.THROTTLED, 1.2), (Mechanism.SATURATED, 1), (Mechanism.TOO_FEW_WORKERS, 0.8)),
    Bottleneck.INTERCONNECT: ((Mechanism.NETWORK, 1.8), (Mechanism.NVLINK, 0.6), (Mechanism.PCIE, 0.8)),
    Bottleneck.GPU: ((Mechanism.COMPUTE, 1),),
    Bottleneck.MEMORY: ((Mechanism.HBM_BANDWIDTH, 1), (Mechanism.HOST_MEMORY_PRESSURE, 1)),
}
