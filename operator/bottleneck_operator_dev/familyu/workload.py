"""Training workloads: what one GPU's step asks of each resource.

Per-sample figures are order-of-magnitude published ones (docs/familyu.md): ResNet-50 at ~4.1 GFLOP
forward per 224x224 image (x3 for training), ViT-B/16 at ~17.5, decoder LMs at 6 x parameters x
tokens, one core decoding 50-200 ImageNet JPEGs/s, a mean ImageNet JPEG of ~110 KB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KB, MB, GB = 1e3, 1e6, 1e9


@dataclass(frozen=True)
class Workload:
    """One GPU's demands per step (before the scenario's pressures scale them).

    Attributes:
        family: model family, for tags.
        batch: samples per GPU per step.
        flops: training FLOPs per GPU per step.
        b_frac: share of FLOPs in memory-bound kernels (norms, elementwise, attention softmax, lookups).
        intensity_a: FLOP per HBM byte of the matmul group.
        intensity_b: FLOP per HBM byte of the memory-bound group.
        extra_hbm: bytes per step outside both groups' FLOPs (optimizer states, embedding rows).
        read: bytes read from storage per GPU per step.
        decode: CPU core-seconds of decode/augment per GPU per step.
        h2d: bytes copied host to device per GPU per step.
        grad: bytes all-reduced per step (gradients, or FSDP's gather + reduce-scatter volume).
        params: parameters, for tags and host memory.
        precision: "bf16", "fp16", "tf32" or "fp32".
        mmap_dataset: the dataset is memory-mapped (reads show as major faults: IO, not memory).
    """

    family: str
    batch: int
    flops: float
    b_frac: float
    intensity_a: float
    intensity_b: float
    extra_hbm: float
    read: float
    decode: float
    h2d: float
    grad: float
    params: float
    precision: str
    mmap_dataset: bool


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


FAMILIES = ("resnet50", "vit-b16", "lm", "lm", "dlrm", "speech", "video", "unet")


# What each family draws: (params, batch, flops, b_frac, intensity_a, intensity_b, read, decode, h2d, mmap)
_Draw = tuple[float, int, float, float, float, float, float, float, float, bool]


def _vision(rng: np.random.Generator, family: str, fb_gib: float) -> _Draw:
    params = 25.6e6 if family == "resnet50" else 86e6
    fwd = 4.1e9 if family == "resnet50" else 17.5e9
    batch = int(rng.choice([32, 64, 128, 256]))
    h2d = batch * 224 * 224 * 3.0 * float(rng.choice([1.0, 4.0]))  # uint8, or normalised float32
    return (
        params,
        batch,
        3.0 * fwd * batch,
        _u(rng, 0.02, 0.08),
        _logu(rng, 80, 250),
        _logu(rng, 3, 12),
        batch * _logu(rng, 80 * KB, 160 * KB),  # JPEGs
        batch / _logu(rng, 50, 200),  # one core decodes and augments 50-200 images/s
        h2d,
        False,
    )


def _lm(rng: np.random.Generator, family: str, fb_gib: float) -> _Draw:
    params = min(float(rng.choice([125e6, 350e6, 1.3e9, 2.7e9, 6.7e9])), fb_gib * 2**30 / 18.0)
    seq = int(rng.choice([512, 1024, 2048, 4096]))
    batch = int(rng.choice([1, 2, 4, 8, 16]))
    return (
        params,
        batch,
        6.0 * params * seq * batch,
        _u(rng, 0.04, 0.15),
        _logu(rng, 120, 300),
        _logu(rng, 1.5, 6),
        batch * seq * float(rng.choice([2.0, 4.0])),  # pre-tokenised ids
        batch * seq * _logu(rng, 2e-7, 2e-6),  # collation and packing
        batch * seq * 8.0,  # int64 ids and labels
        bool(rng.random() < 0.6),  # Arrow / numpy memmap shards
    )


def _dlrm(rng: np.random.Generator, family: str, fb_gib: float) -> _Draw:
    params = _logu(rng, 5e6, 50e6)  # the dense part; embedding rows are HBM traffic
    batch = int(rng.choice([2048, 8192, 32768]))
    return (
        params,
        batch,
        6.0 * params * batch * _u(rng, 0.05, 0.2),
        _u(rng, 0.3, 0.7),
        _logu(rng, 20, 80),
        _logu(rng, 0.5, 2),
        batch * _logu(rng, 200, 2 * KB),
        batch * _logu(rng, 5e-6, 5e-5),
        batch * _logu(rng, 200, 1 * KB),
        bool(rng.random() < 0.4),
    )


def _media(rng: np.random.Generator, family: str, fb_gib: float) -> _Draw:
    """Speech (FLAC clips, filterbanks), video (decoded clips of 16 frames), latent diffusion U-Nets."""
    if family == "speech":
        params, batch = _logu(rng, 30e6, 600e6), int(rng.choice([8, 16, 32]))
        flops = 6.0 * params * batch * _logu(rng, 300, 1500)  # frames after subsampling
        sample, decode, h2d = _logu(rng, 100 * KB, 600 * KB), _logu(rng, 5e-3, 40e-3), _logu(rng, 200 * KB, 1 * MB)
        b_frac, ia = _u(rng, 0.08, 0.25), _logu(rng, 60, 200)
    elif family == "video":
        params, batch = _logu(rng, 20e6, 300e6), int(rng.choice([4, 8, 16, 32]))
        flops = 3.0 * batch * _logu(rng, 30e9, 200e9)
        sample, decode = _logu(rng, 500 * KB, 4 * MB), _logu(rng, 30e-3, 150e-3)
        h2d = 16 * 224 * 224 * 3.0 * float(rng.choice([1.0, 2.0]))
        b_frac, ia = _u(rng, 0.08, 0.2), _logu(rng, 60, 200)
    else:
        params, batch = _logu(rng, 300e6, 900e6), int(rng.choice([4, 8, 16]))
        flops = 3.0 * batch * _logu(rng, 300e9, 800e9)
        sample, decode, h2d = _logu(rng, 200 * KB, 1.5 * MB), _logu(rng, 5e-3, 30e-3), _logu(rng, 200 * KB, 800 * KB)
        b_frac, ia = _u(rng, 0.1, 0.25), _logu(rng, 80, 250)
    return params, batch, flops, b_frac, ia, _logu(rng, 1.5, 8), batch * sample, batch * decode, batch * h2d, False


_FAMILY = {"resnet50": _vision, "vit-b16": _vision, "lm": _lm, "dlrm": _dlrm, "speech": _media, "video": _media}


def draw_workload(rng: np.random.Generator, *, has_tf32: bool, fb_gib: float, prefer: tuple[str, ...] = ()) -> Workload:
    """A workload that fits the board (parameters x ~16 B of training state within its memory).

    ``prefer``: families drawn three times in four (the model families that tend to stress the
    scenario's target resource: image and video pipelines for storage and decode, LMs for the links).
    """
    pool = prefer if prefer and rng.random() < 0.75 else FAMILIES
    family = str(rng.choice(list(pool)))
    precision = str(rng.choice(["bf16", "fp16", "tf32" if has_tf32 else "fp32", "bf16"]))
    params, batch, flops, b_frac, ia, ib, read, decode, h2d, mmap = _FAMILY.get(family, _media)(rng, family, fb_gib)
    fsdp = params > 1.5e9
    # gradients in the training precision; FSDP moves ~1.5x (gather + reduce-scatter of shards)
    grad = params * (4.0 if precision in ("tf32", "fp32") else 2.0) * (1.5 if fsdp else 1.0)
    extra = params * (16.0 if not fsdp else 4.0)  # Adam: fp32 master weights and moments, read and written
    return Workload(family, batch, flops, b_frac, ia, ib, extra, read, decode, h2d, grad, params, precision, mmap)
