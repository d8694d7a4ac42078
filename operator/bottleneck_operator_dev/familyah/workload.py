"""Operator lists of published architectures: FLOPs and bytes of each operator from its shapes.

Each architecture is a list of operators of one training sample's forward pass (a batch scales the
activation bytes and FLOPs, never the weight bytes); the backward pass costs twice the FLOPs and
bytes and twice the kernels, the optimizer one memory-bound pass over the parameters' states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
BPE = 2.0  # bytes per activation element (BF16)


@dataclass(frozen=True)
class Ops:
    """Forward operators of one sample: per operator FLOPs, activation bytes, weight bytes, tensor-core use, kernels."""

    flops: FloatArray
    act_bytes: FloatArray
    weight_bytes: FloatArray
    tensor: BoolArray
    kernels: FloatArray


@dataclass(frozen=True)
class Arch:
    """A published architecture and what one sample of its data costs.

    Attributes:
        key: tag name.
        ops: forward operators of one sample.
        params: parameters whose gradients are all-reduced.
        alltoall_per_sample: bytes exchanged per sample outside the all-reduce (embedding all-to-all).
        sample_bytes: bytes read from storage per sample.
        decode_s: CPU seconds to decode and augment one sample.
        h2d_bytes: bytes copied host to device per sample.
        worker_mem: host memory of one loader worker, bytes.
        text: a token stream (no image decode).
    """

    key: str
    ops: Ops
    params: float
    alltoall_per_sample: float
    sample_bytes: float
    decode_s: float
    h2d_bytes: float
    worker_mem: float
    text: bool


def _ops(rows: list[tuple[float, float, float, bool, float]]) -> Ops:
    a = np.array([r[:3] for r in rows], dtype=np.float64)
    return Ops(
        a[:, 0],
        a[:, 1],
        a[:, 2],
        np.array([r[3] for r in rows], dtype=np.bool_),
        np.array([r[4] for r in rows], dtype=np.float64),
    )


def _block(s: float, d: float, flash: bool) -> list[tuple[float, float, float, bool, float]]:
    """One transformer block (pre-LN, 4d MLP, 64-wide heads) of a length-``s`` sequence."""
    h = d / 64
    sd = s * d
    attn: list[tuple[float, float, float, bool, float]]
    if flash:
        attn = [(4 * s * s * d, 4 * sd * BPE, 0.0, True, 1)]
    else:
        attn = [
            (2 * s * s * d, (2 * sd + h * s * s) * BPE, 0.0, True, 1),
            (5 * h * s * s, 3 * h * s * s * BPE, 0.0, False, 3),
            (2 * s * s * d, (h * s * s + 2 * sd) * BPE, 0.0, True, 1),
        ]
    return [
        (8 * sd, 2 * sd * BPE, 2 * d * BPE, False, 1),
        (6 * sd * d, 4 * sd * BPE, 3 * d * d * BPE, True, 1),
        *attn,
        (2 * sd * d, 2 * sd * BPE, d * d * BPE, True, 1),
        (sd, 3 * sd * BPE, 0.0, False, 2),
        (8 * sd, 2 * sd * BPE, 2 * d * BPE, False, 1),
        (8 * sd * d, 5 * sd * BPE, 4 * d * d * BPE, True, 1),
        (32 * sd, 8 * sd * BPE, 0.0, False, 1),
        (8 * sd * d, 5 * sd * BPE, 4 * d * d * BPE, True, 1),
        (sd, 3 * sd * BPE, 0.0, False, 2),
    ]


def transformer(key: str, layers: int, d: int, s: int, vocab: int, *, flash: bool, image: bool) -> Arch:
    """GPT-2 / BERT / ViT shapes: ``layers`` blocks of width ``d`` over ``s`` tokens, a ``vocab``-wide head."""
    rows = [(0.0, s * d * BPE, 0.0, False, 1.0)]
    for _ in range(layers):
        rows += _block(float(s), float(d), flash)
    head_tokens = 1.0 if image else float(s)
    rows += [
        (2 * head_tokens * d * vocab, (head_tokens * (d + vocab)) * BPE, d * vocab * BPE, True, 1),
        (5 * head_tokens * vocab, 4 * head_tokens * vocab * 4, 0.0, False, 3),
    ]
    params = 12.0 * layers * d * d + float(vocab) * d
    if image:
        return Arch(key, _ops(rows), params, 0.0, 110e3, 8e-3, 224 * 224 * 3, 0.35e9, False)
    return Arch(key, _ops(rows), params, 0.0, s * 2.0, 40e-6, s * 8.0, 0.15e9, True)


def _conv(
    h: float, cin: float, cout: float, k: float, stride: float, dims: int = 2
) -> list[tuple[float, float, float, bool, float]]:
    """A convolution plus its norm and activation (two elementwise kernels)."""
    ho = h / stride
    vol_in, vol_out, kk = h**dims, ho**dims, k**dims
    return [
        (2 * vol_out * cin * cout * kk, (vol_in * cin + vol_out * cout) * BPE, cin * cout * kk * BPE, True, 1),
        (8 * vol_out * cout, 4 * vol_out * cout * BPE, 2 * cout * BPE, False, 2),
    ]


def resnet50() -> Arch:
    """ResNet-50 v1.5 on 224x224 images: bottleneck blocks of stages (3, 4, 6, 3)."""
    rows = _conv(224, 3, 64, 7, 2)
    size, cin = 56.0, 64.0
    for blocks, width, stride in ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)):
        for b in range(blocks):
            st = float(stride if b == 0 else 1)
            rows += _conv(size, cin, width, 1, 1) + _conv(size, width, width, 3, st)
            size /= st
            rows += _conv(size, width, 4 * width, 1, 1)
            rows.append((size * size * 4 * width, 3 * size * size * 4 * width * BPE, 0.0, False, 2))
            cin = 4.0 * width
    rows.append((2 * 2048 * 1000, 2048 * BPE, 2048 * 1000 * BPE, True, 1))
    return Arch("resnet50", _ops(rows), 25.6e6, 0.0, 110e3, 8e-3, 224 * 224 * 3, 0.4e9, False)


def unet3d() -> Arch:
    """3D U-Net on 128^3 crops (MLPerf image segmentation shapes): five levels, two 3^3 convs each way."""
    rows: list[tuple[float, float, float, bool, float]] = []
    size, cin = 128.0, 1.0
    for width in (32.0, 64.0, 128.0, 256.0, 320.0):
        rows += _conv(size, cin, width, 3, 1, 3) + _conv(size, width, width, 3, 1, 3)
        cin, size = width, size / 2
    for width in (256.0, 128.0, 64.0, 32.0):
        size *= 2
        rows += _conv(size, 2 * width, width, 3, 1, 3) + _conv(size, width, width, 3, 1, 3)
    return Arch("unet3d", _ops(rows), 19e6, 0.0, 60e6, 80e-3, 2 * 128**3 * 4.0, 1.2e9, False)


def dlrm(pooling: float) -> Arch:
    """DLRM (MLPerf recommendation shapes): 26 embedding tables of width 128, bottom and top MLPs."""
    gather = 26 * pooling * 128 * 4.0 * 2.5  # random 512-byte rows reach ~40 % of streaming bandwidth
    rows: list[tuple[float, float, float, bool, float]] = [(26 * pooling * 128, gather, 0.0, False, 26)]
    for a, b in ((13, 512), (512, 256), (256, 128), (1024, 1024), (1024, 1024), (1024, 512), (512, 256)):
        rows.append((2.0 * a * b, (a + b) * BPE, a * b * BPE, True, 1))
        rows.append((b, 2 * b * BPE, 0.0, False, 1))
    rows.append((2 * 27 * 27 * 128, 27 * 128 * BPE * 2, 0.0, True, 2))
    return Arch("dlrm", _ops(rows), 3.2e6, 26 * 128 * 2.0 * 2, 160.0, 3e-6, 160.0, 0.2e9, True)


def architecture(key: str, rng: np.random.Generator) -> Arch:
    """One of the family's architectures by key, with its drawn variant (attention kind, pooling)."""
    flash = bool(rng.random() < 0.6)
    if key == "gpt2-124m":
        return transformer(key, 12, 768, 1024, 50257, flash=flash, image=False)
    if key == "gpt2-355m":
        return transformer(key, 24, 1024, 1024, 50257, flash=flash, image=False)
    if key == "gpt2-774m":
        return transformer(key, 36, 1280, 1024, 50257, flash=flash, image=False)
    if key == "bert-large":
        return transformer(key, 24, 1024, 512, 30522, flash=flash, image=False)
    if key == "vit-b16":
        return transformer(key, 12, 768, 197, 1000, flash=flash, image=True)
    if key == "resnet50":
        return resnet50()
    if key == "unet3d":
        return unet3d()
    return dlrm(float(rng.integers(1, 40)))


ARCHS = ("gpt2-124m", "gpt2-355m", "gpt2-774m", "bert-large", "vit-b16", "resnet50", "unet3d", "dlrm")
