"""What a Job trains, per sample: bytes read, decode cost, math, host-to-device bytes, parameters.

Ranges are modelling choices anchored on TELEMETRY.md's figures where one exists (JPEG decode at
50-200 images per core-second; ResNet-50's ~2,470 img/s on an A100); see docs/familyak.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyak.hardware import DECODE_PER_CORE


@dataclass(frozen=True)
class Workload:
    """Per-sample ranges of one kind of training (each drawn log-uniformly).

    Attributes:
        name: tag value.
        sample_kb: bytes read per sample, KB.
        decode_s: core-seconds to decode and augment a sample.
        gflop: training GFLOPs per sample (forward + backward, ~3x the forward).
        h2d_kb: decoded tensor bytes per sample copied to the GPU, KB.
        params_m: parameters, millions (what the all-reduce moves).
        kernels: kernel launches per step.
        batch: samples per rank per step.
        request_kb: bytes one storage request fetches, KB (one file per sample, or a shard's chunk).
    """

    name: str
    sample_kb: tuple[float, float]
    decode_s: tuple[float, float]
    gflop: tuple[float, float]
    h2d_kb: tuple[float, float]
    params_m: tuple[float, float]
    kernels: tuple[float, float]
    batch: tuple[float, float]
    request_kb: tuple[float, float]


_JPEG = (1.0 / DECODE_PER_CORE[1], 1.0 / DECODE_PER_CORE[0])

WORKLOADS: dict[str, Workload] = {
    "cnn": Workload(
        "cnn", (60.0, 400.0), _JPEG, (8.0, 40.0), (150.0, 600.0), (11.0, 90.0), (300.0, 1200.0), (32, 512), (60, 400)
    ),
    "transformer": Workload(
        "transformer",
        (2.0, 16.0),
        (2e-6, 3e-5),
        (500.0, 20000.0),
        (4.0, 32.0),
        (60.0, 7000.0),
        (400.0, 3000.0),
        (1, 32),
        (256, 8192),
    ),
    "recsys": Workload(
        "recsys",
        (0.5, 4.0),
        (1e-5, 6e-5),
        (0.02, 0.6),
        (0.5, 4.0),
        (20.0, 400.0),
        (200.0, 800.0),
        (1024, 32768),
        (256, 8192),
    ),
    "audio": Workload(
        "audio",
        (150.0, 1500.0),
        (4e-3, 3e-2),
        (20.0, 200.0),
        (150.0, 800.0),
        (30.0, 600.0),
        (400.0, 1500.0),
        (8, 128),
        (150, 1500),
    ),
    "video": Workload(
        "video",
        (1000.0, 6000.0),
        (2e-2, 1e-1),
        (100.0, 600.0),
        (1500.0, 9000.0),
        (30.0, 300.0),
        (500.0, 2000.0),
        (4, 32),
        (1000, 8000),
    ),
}


def loguniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    """A draw spread evenly over orders of magnitude."""
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def pick(rng: np.random.Generator, choices: dict[str, float]) -> str:
    """One key, drawn with the given weights."""
    keys = list(choices)
    w = np.array([choices[k] for k in keys], dtype=np.float64)
    return keys[int(rng.choice(len(keys), p=w / w.sum()))]
