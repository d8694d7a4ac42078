"""Training workloads, per sample, from published model sizes and input formats.

Each entry gives log-uniform ranges. FLOPs are training FLOPs (about three times the forward pass);
``ai_mm`` and ``ai_el`` are the arithmetic intensities (FLOP per HBM byte) of the matrix-multiply
kernels and of the rest, which place each kernel group on one side of the roofline's ridge.
"""

from __future__ import annotations

from dataclasses import dataclass

Range = tuple[float, float]


@dataclass(frozen=True)
class Workload:
    """One family of models.

    Attributes:
        name: what it is.
        params: parameters (gradients all-reduced each step).
        flops: training FLOPs per sample in matrix multiplies and convolutions.
        ai_mm: FLOP per HBM byte of those kernels.
        ai_el: FLOP-equivalent per HBM byte of the other kernels (norms, activations, embeddings, optimiser).
        read: bytes read from storage per sample.
        decode: core-seconds of decode and augmentation per sample.
        h2d: bytes copied to the GPU per sample.
        batch: samples per rank per step.
        kernels: kernels launched per step (forward, backward, optimiser).
        launch: host seconds per kernel launch (framework, Python and driver).
    """

    name: str
    params: Range
    flops: Range
    ai_mm: Range
    ai_el: Range
    read: Range
    decode: Range
    h2d: Range
    batch: Range
    kernels: Range
    launch: Range


WORKLOADS: tuple[Workload, ...] = (
    # ResNet-50: 25.6 M parameters, 4.1 GFLOP forward per 224x224 image; ImageNet JPEGs ~110 KB;
    # one core decodes and augments 50-200 images/s; uint8 crops 150 KB, float32 600 KB.
    Workload(
        "resnet50",
        (25e6, 26e6),
        (11e9, 13e9),
        (250, 600),
        (25, 60),
        (80e3, 140e3),
        (5e-3, 20e-3),
        (150e3, 600e3),
        (64, 256),
        (450, 700),
        (5e-6, 12e-6),
    ),
    # ViT-B/16 to ViT-L/16: 86-304 M parameters, 17.5-61.6 GFLOP forward.
    Workload(
        "vit",
        (86e6, 304e6),
        (50e9, 185e9),
        (300, 700),
        (60, 140),
        (80e3, 140e3),
        (5e-3, 20e-3),
        (150e3, 600e3),
        (32, 128),
        (600, 1500),
        (5e-6, 12e-6),
    ),
    # GPT/BERT-style language models, 125 M-1.3 B parameters, 6 x params FLOPs per token, pre-tokenised shards.
    Workload(
        "transformer-lm",
        (125e6, 1.3e9),
        (0.4e12, 16e12),
        (300, 800),
        (80, 200),
        (2e3, 16e3),
        (2e-5, 1e-4),
        (4e3, 32e3),
        (4, 32),
        (900, 3000),
        (5e-6, 15e-6),
    ),
    # Speech (wav2vec 2.0 / Conformer): FLAC decode and filterbank features on the CPU.
    Workload(
        "speech",
        (30e6, 320e6),
        (60e9, 400e9),
        (250, 600),
        (40, 100),
        (150e3, 600e3),
        (15e-3, 60e-3),
        (300e3, 1.2e6),
        (16, 64),
        (800, 2500),
        (5e-6, 12e-6),
    ),
    # Video classifiers: clips of 16-32 frames decoded on the CPU.
    Workload(
        "video",
        (30e6, 120e6),
        (100e9, 400e9),
        (250, 600),
        (30, 80),
        (1e6, 8e6),
        (0.1e0, 0.5e0),
        (2.4e6, 12e6),
        (8, 32),
        (600, 1500),
        (5e-6, 12e-6),
    ),
    # 3D U-Net on medical volumes: large float32 crops copied to the device.
    Workload(
        "unet3d",
        (19e6, 31e6),
        (300e9, 900e9),
        (200, 500),
        (20, 50),
        (20e6, 80e6),
        (0.1e0, 0.6e0),
        (8e6, 32e6),
        (1, 4),
        (400, 900),
        (5e-6, 12e-6),
    ),
    # DLRM-style recommenders: embedding gathers dominate HBM traffic.
    Workload(
        "recommender",
        (20e6, 80e6),
        (20e6, 100e6),
        (100, 300),
        (1, 5),
        (200.0, 600.0),
        (1e-6, 4e-6),
        (200.0, 600.0),
        (2048, 32768),
        (300, 800),
        (5e-6, 12e-6),
    ),
    # Graph neural networks and small MLPs: many small kernels per step.
    Workload(
        "gnn",
        (1e6, 20e6),
        (5e6, 200e6),
        (50, 200),
        (5, 20),
        (2e3, 20e3),
        (2e-5, 2e-4),
        (2e3, 20e3),
        (256, 2048),
        (800, 4000),
        (6e-6, 20e-6),
    ),
)
