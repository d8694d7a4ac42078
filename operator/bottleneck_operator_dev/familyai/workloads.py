"""Training workloads as per-sample physical quantities (ranges, drawn log-uniformly).

Figures are orders of magnitude from public model descriptions: ResNet-50 costs ~4.1 GFLOP per
224x224 image forward (x3 for a training step), a 224x224 RGB image is ~150 kB decoded, an
ImageNet JPEG ~110 kB stored; a decoder-only transformer costs ~6 FLOP per parameter per token;
one CPU core decodes and augments 50-200 JPEGs per second (TELEMETRY.md).
"""

from __future__ import annotations

from dataclasses import dataclass

Range = tuple[float, float]


@dataclass(frozen=True)
class Workload:
    """One kind of training job.

    Attributes:
        kind: short name (a tag).
        flop_sample: training FLOP per sample (forward + backward).
        stored_bytes: bytes read from storage per sample.
        decoded_bytes: bytes copied host to device per sample.
        cpu_s: CPU seconds of decode/augment/collate per sample.
        batch: samples per GPU per step.
        params: trainable parameters.
        kernels: CUDA kernels launched per step.
        bytes_per_flop: device-memory bytes moved by memory-bound kernels per training FLOP.
        host_bytes: host memory the trainer process holds, bytes per GPU.
    """

    kind: str
    flop_sample: Range
    stored_bytes: Range
    decoded_bytes: Range
    cpu_s: Range
    batch: Range
    params: Range
    kernels: Range
    bytes_per_flop: Range
    host_bytes: Range


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "vision-cnn",
        (5e9, 3.5e10),
        (8e4, 5e5),
        (1.5e5, 6e5),
        (4e-3, 2e-2),
        (64, 256),
        (1.1e7, 6e7),
        (300, 1500),
        (4e-3, 2.5e-2),
        (6e9, 2e10),
    ),
    Workload(
        "vit",
        (5e10, 4e11),
        (1e5, 3e5),
        (1.5e5, 6e5),
        (4e-3, 2e-2),
        (32, 256),
        (8e7, 6e8),
        (500, 3000),
        (5e-4, 4e-3),
        (8e9, 3e10),
    ),
    Workload(
        "llm",
        (2.5e13, 1.2e15),
        (4e3, 3.2e4),
        (1.6e4, 1.3e5),
        (1e-4, 2e-3),
        (1, 8),
        (1e9, 7e10),
        (2000, 20000),
        (1e-4, 8e-4),
        (2e10, 1.2e11),
    ),
    Workload(
        "recsys",
        (1e7, 1e8),
        (2e2, 2e3),
        (5e2, 4e3),
        (2e-5, 2e-4),
        (2048, 32768),
        (1e6, 1e8),
        (200, 1500),
        (5e-2, 0.6),
        (2e10, 1e11),
    ),
    Workload(
        "speech",
        (2e10, 2e11),
        (1e5, 6e5),
        (2e5, 2e6),
        (5e-3, 4e-2),
        (8, 64),
        (1e8, 1e9),
        (1000, 5000),
        (1e-3, 1e-2),
        (8e9, 3e10),
    ),
    Workload(
        "video",
        (1e11, 2e12),
        (1e6, 2e7),
        (5e6, 5e7),
        (2e-2, 0.3),
        (2, 16),
        (1e8, 1e9),
        (1000, 4000),
        (2e-3, 2e-2),
        (1.5e10, 5e10),
    ),
    Workload(
        "small-eager",
        (1e7, 1e9),
        (1e3, 5e4),
        (1e3, 5e4),
        (5e-5, 1e-3),
        (32, 1024),
        (1e5, 5e7),
        (1000, 20000),
        (5e-3, 5e-2),
        (3e9, 1.2e10),
    ),
    Workload(
        "diffusion",
        (5e11, 3e12),
        (2e5, 2e6),
        (6e5, 3e6),
        (5e-3, 3e-2),
        (4, 64),
        (8e8, 3e9),
        (2000, 8000),
        (1e-3, 5e-3),
        (1.5e10, 6e10),
    ),
)
WORKLOAD_WEIGHTS: tuple[float, ...] = (0.17, 0.14, 0.22, 0.08, 0.1, 0.07, 0.1, 0.12)
