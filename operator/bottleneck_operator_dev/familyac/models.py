"""The model kinds a Job trains, with their per-sample figures (sources in docs/familyac.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Model:
    """Per-sample figures of one model kind (training: forward + backward ~ 3x forward FLOPs).

    Attributes:
        kind: the kind's name.
        params: parameters (dense, all-reduced).
        flops: training FLOPs per sample.
        intensity: FLOPs per byte of HBM traffic of its kernels (arithmetic intensity).
        sample_bytes: bytes read from storage per sample.
        decode_s: CPU seconds to decode and augment one sample on one core.
        input_bytes: bytes copied host to device per sample.
        kernels: kernel launches per step (forward, backward, optimizer), eager mode.
        sm_fill: share of SMs its kernels occupy.
        batch: per-GPU batch size.
    """

    kind: str
    params: float
    flops: float
    intensity: float
    sample_bytes: float
    decode_s: float
    input_bytes: float
    kernels: int
    sm_fill: float
    batch: int


Span = tuple[float, float]
# kind: params, training FLOPs/sample, intensity, sample bytes, decode s, input bytes, kernels, SM fill, batches.
# ResNet-50: 4.1 GFLOPs forward (He et al. 2016); ImageNet JPEGs ~110 kB (derived: ~140 GB / 1.28 M);
# one core decodes 50-200 JPEGs/s (TELEMETRY.md). Other kinds: figures assumed, see the doc.
_TABLE: dict[str, tuple[float, float, Span, Span, Span, float, int, Span, tuple[int, ...]]] = {
    "resnet50": (25.6e6, 12.3e9, (60, 130), (80e3, 140e3), (5e-3, 20e-3), 150e3, 480, (0.75, 0.95), (64, 128, 256)),
    "vit": (86e6, 52.8e9, (120, 260), (80e3, 140e3), (5e-3, 20e-3), 150e3, 380, (0.8, 0.95), (32, 64, 128)),
    "video": (34e6, 150e9, (70, 160), (1e6, 5e6), (0.05, 0.3), 2.4e6, 520, (0.75, 0.95), (8, 16, 32)),
    "unet3d": (19e6, 2.5e12, (60, 150), (10e6, 60e6), (0.2, 1.5), 24e6, 420, (0.8, 0.95), (1, 2, 4)),
    "speech": (100e6, 6e11, (90, 200), (100e3, 500e3), (5e-3, 30e-3), 640e3, 600, (0.7, 0.9), (16, 32, 64)),
    "recsys": (2e7, 5e8, (3, 20), (200, 600), (3e-6, 1e-5), 400, 220, (0.5, 0.8), (4096, 16384, 65536)),
    "mlp": (2e6, 2e7, (10, 40), (100, 400), (2e-6, 1e-5), 256, 300, (0.1, 0.35), (64, 256, 1024)),
}
KINDS = (*_TABLE, "gpt", "bert")


def _transformer(rng: np.random.Generator, kind: str) -> Model:
    """Language models: 6 x params FLOPs per token (Kaplan et al. 2020); uint16 tokens on storage."""
    u = rng.uniform
    params = float(rng.choice([125e6, 350e6, 760e6, 1.3e9, 2.7e9, 6.7e9])) if kind == "gpt" else 110e6
    seq = float(rng.choice([1024, 2048])) if kind == "gpt" else float(rng.choice([128, 256, 512]))
    batch = int(max(1, rng.choice([4, 8, 16, 32]) * min(1.0, 350e6 / params)))
    kernels = 260 + int(params / 2e7)
    return Model(
        kind, params, 6 * params * seq, u(150, 400), 2 * seq, u(2e-5, 1e-4), 8 * seq, kernels, u(0.85, 0.98), batch
    )


def draw_model(rng: np.random.Generator, kind: str) -> Model:
    """One model of a kind, its uncertain figures drawn from their ranges."""
    if kind not in _TABLE:
        return _transformer(rng, kind)
    params, flops, intensity, sample, decode, inputs, kernels, fill, batches = _TABLE[kind]
    scale = rng.uniform(0.5, 2.0) if kind in ("recsys", "mlp", "speech") else 1.0  # sizes vary within a kind
    return Model(
        kind=kind,
        params=params * scale,
        flops=flops * scale,
        intensity=float(rng.uniform(*intensity)),
        sample_bytes=float(rng.uniform(*sample)),
        decode_s=float(rng.uniform(*decode)),
        input_bytes=inputs * (rng.uniform(0.35, 1.7) if kind == "unet3d" else 1.0),
        kernels=kernels,
        sm_fill=float(rng.uniform(*fill)),
        batch=int(rng.choice(batches)),
    )
