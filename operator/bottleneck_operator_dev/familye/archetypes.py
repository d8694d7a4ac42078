"""Kinds of training job: what one micro-batch costs on each stage.

Figures are per micro-batch on an A100 SXM4 (the reference board) and are scaled to other boards
by their TFLOPS (compute-bound kernels) and memory bandwidth (bandwidth-bound kernels). Anchors:
ResNet-50 trains at ~2,470 img/s on one A100 with AMP (NVIDIA DeepLearningExamples), one core
decodes and augments ~50-200 ImageNet JPEGs/s, an ImageNet JPEG is ~110 KB and a decoded 224 px
crop 150 KB (uint8); token shards hold 2 bytes per token.
"""

from __future__ import annotations

from dataclasses import dataclass

KB, MB = 1e3, 1e6


@dataclass(frozen=True)
class Archetype:
    """One kind of job.

    Attributes:
        name: a short tag.
        kernel_s: GPU kernel time per micro-batch on the reference board, s (low, high).
        math_share: share of that time in compute-bound kernels (low, high).
        batch: samples per GPU and micro-batch (low, high).
        read_bytes: bytes read from storage per sample (low, high).
        cpu_s: core-seconds to decode and augment one sample (low, high).
        h2d_bytes: bytes copied host to device per sample (low, high).
        params: trainable parameters (low, high); gradients are synchronised in BF16.
        tensor: tensor-pipe activity while compute-bound kernels run (low, high).
        worker_rss: resident bytes of one loader worker (low, high).
    """

    name: str
    kernel_s: tuple[float, float]
    math_share: tuple[float, float]
    batch: tuple[int, int]
    read_bytes: tuple[float, float]
    cpu_s: tuple[float, float]
    h2d_bytes: tuple[float, float]
    params: tuple[float, float]
    tensor: tuple[float, float]
    worker_rss: tuple[float, float]


ARCHETYPES: dict[str, Archetype] = {
    a.name: a
    for a in (
        Archetype(
            "llm",
            (0.3, 2.0),
            (0.68, 0.85),
            (4, 16),
            (8 * KB, 64 * KB),
            (0.0005, 0.003),
            (16 * KB, 64 * KB),
            (1e9, 13e9),
            (0.45, 0.75),
            (0.4e9, 1.5e9),
        ),
        Archetype(
            "vit",
            (0.15, 0.6),
            (0.58, 0.75),
            (64, 256),
            (80 * KB, 220 * KB),
            (0.004, 0.015),
            (150 * KB, 600 * KB),
            (0.1e9, 0.6e9),
            (0.35, 0.6),
            (1e9, 3e9),
        ),
        Archetype(
            "cnn",
            (0.1, 0.4),
            (0.35, 0.62),
            (64, 256),
            (80 * KB, 220 * KB),
            (0.004, 0.015),
            (150 * KB, 600 * KB),
            (25e6, 60e6),
            (0.2, 0.45),
            (1e9, 3e9),
        ),
        Archetype(
            "speech",
            (0.2, 0.8),
            (0.55, 0.7),
            (16, 64),
            (150 * KB, 600 * KB),
            (0.008, 0.03),
            (200 * KB, 800 * KB),
            (0.1e9, 1e9),
            (0.3, 0.55),
            (1e9, 2.5e9),
        ),
        Archetype(
            "video",
            (0.5, 2.0),
            (0.6, 0.75),
            (4, 16),
            (2 * MB, 20 * MB),
            (0.08, 0.4),
            (5 * MB, 40 * MB),
            (0.1e9, 1e9),
            (0.35, 0.6),
            (2e9, 5e9),
        ),
        Archetype(
            "recsys",
            (0.05, 0.3),
            (0.1, 0.3),
            (8192, 65536),
            (0.5 * KB, 2 * KB),
            (1e-5, 5e-5),
            (0.5 * KB, 2 * KB),
            (0.1e9, 2e9),
            (0.05, 0.2),
            (1.5e9, 4e9),
        ),
        Archetype(
            "gnn",
            (0.1, 0.5),
            (0.1, 0.3),
            (512, 4096),
            (10 * KB, 50 * KB),
            (0.0005, 0.003),
            (20 * KB, 200 * KB),
            (1e6, 50e6),
            (0.05, 0.2),
            (2e9, 6e9),
        ),
        Archetype(
            "diffusion",
            (0.3, 1.2),
            (0.66, 0.82),
            (8, 64),
            (200 * KB, 800 * KB),
            (0.01, 0.04),
            (100 * KB, 600 * KB),
            (0.8e9, 3e9),
            (0.4, 0.7),
            (1e9, 3e9),
        ),
    )
}

# Which kinds of job each class's mechanisms plausibly come from.
KINDS_FOR = {
    "compute": ("llm", "vit", "diffusion", "speech", "cnn"),
    "hbm-bandwidth": ("recsys", "gnn", "cnn", "llm"),
    "local-disk": ("vit", "cnn", "video", "speech", "diffusion"),
    "network-storage": ("vit", "cnn", "video", "speech", "diffusion"),
    "throttled": ("vit", "cnn", "speech", "video", "gnn"),
    "saturated": ("vit", "cnn", "speech", "video", "gnn"),
    "too-few-workers": ("vit", "cnn", "speech", "video"),
    "network": ("llm", "diffusion", "vit", "recsys"),
    "nvlink": ("llm",),
    "pcie": ("vit", "cnn", "diffusion", "video", "llm"),
    "host-memory-pressure": ("cnn", "vit", "speech", "gnn", "recsys"),
}
