"""Training workloads as layer make-ups: the kernels of one step, the gradients, the input samples.

Each archetype turns its size parameters into kernel groups (FLOPs, HBM bytes, launches) with the
usual counting rules: a training step costs about three forward passes (forward, and a backward
pass of twice the forward's FLOPs); a dense layer of P parameters costs 2P FLOPs per token forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyt.perf import KernelGroup

ELEMENT_BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.5}  # fp8 GEMMs keep bf16 activations


@dataclass(frozen=True)
class Workload:
    """One model at one batch size and precision.

    Attributes:
        arch: archetype name ("cnn", "transformer", "recommender", "unet", "gnn").
        batch: samples per GPU per step.
        precision: "fp32", "tf32", "bf16", "fp16" or "fp8".
        groups: the step's kernel groups.
        grad_bytes: bytes all-reduced per step (gradients, plus all-to-all exchanges where the model has them).
        sample_bytes: bytes read from storage per sample.
        decode_s: core-seconds of decode / augment / tokenise / neighbour sampling per sample.
        h2d_bytes: bytes copied host to device per sample.
        host_gb: resident host memory of one rank's trainer and its loader workers, GB.
        shared_gb: host memory shared by the pod (a dataset or feature store held in RAM), GB.
        params: parameter count.
    """

    arch: str
    batch: int
    precision: str
    groups: tuple[KernelGroup, ...]
    grad_bytes: float
    sample_bytes: float
    decode_s: float
    h2d_bytes: float
    host_gb: float
    shared_gb: float
    params: float


def _optimizer(params: float, fused: bool) -> KernelGroup:
    # Adam reads and writes fp32 weights, two moments and the gradient: ~32 bytes per parameter.
    return KernelGroup(
        flops=10.0 * params, bytes=32.0 * params, launches=4 if fused else 300, tensor=False, backward=0.0
    )


def cnn(rng: np.random.Generator, batch: int, precision: str) -> Workload:
    """ResNet-18 .. ResNet-152 class: 1.8-11.5 GMAC per 224 px image, 11-60 M parameters."""
    e = ELEMENT_BYTES[precision]
    macs = rng.uniform(1.8e9, 11.5e9)
    params = macs / 4.1e9 * 25.6e6 * rng.uniform(0.8, 1.2)
    layers = int(macs / 4.1e9 * 53)
    act = macs / 4.1e9 * rng.uniform(15e6, 25e6)  # activation elements per image, forward
    conv = KernelGroup(6.0 * macs * batch, 6.0 * macs * batch / rng.uniform(60, 200), 9 * layers, True)
    elementwise = KernelGroup(12.0 * act * batch, 10.0 * act * e * batch, 12 * layers, False)
    raw = rng.random() < 0.8
    return Workload(
        "cnn",
        batch,
        precision,
        (conv, elementwise, _optimizer(params, rng.random() < 0.6)),
        4.0 * params if precision in ("fp32", "tf32") else 2.0 * params,
        rng.uniform(80e3, 160e3) if raw else rng.uniform(150e3, 600e3),  # JPEG, or raw/PNG crops
        rng.uniform(5e-3, 20e-3),  # 50-200 images/s per core
        150_528.0 * (4.0 if rng.random() < 0.3 else 1.0),  # 3x224x224 uint8, or float32 normalised on host
        rng.uniform(3, 8),
        0.0,
        params,
    )


def transformer(rng: np.random.Generator, batch: int, precision: str) -> Workload:
    """A decoder of width d, L layers, sequence s: 12 L d^2 parameters, 6 P FLOPs per token trained."""
    e = ELEMENT_BYTES[precision]
    d = float(rng.choice([768, 1024, 2048, 4096]))
    layers = int(rng.choice([12, 24, 32]))
    seq = float(rng.choice([512, 1024, 2048, 4096]))
    params = 12 * layers * d * d + 50_000 * d
    tokens = batch * seq
    gemm_flops = 6.0 * params * tokens
    gemm_bytes = 3.0 * e * (params + 12.0 * layers * tokens * d)
    attn = KernelGroup(12.0 * layers * seq * seq * d * batch, 8.0 * layers * tokens * d * e, 3 * layers, True)
    ew = KernelGroup(5.0 * layers * tokens * d * 40, rng.uniform(30, 60) * layers * tokens * d * e, 25 * layers, False)
    tokenised = rng.random() < 0.6
    return Workload(
        "transformer",
        batch,
        precision,
        (KernelGroup(gemm_flops, gemm_bytes, 12 * layers, True), attn, ew, _optimizer(params, rng.random() < 0.7)),
        (2.0 if e < 4 else 4.0) * params,
        seq * (2.0 if tokenised else rng.uniform(4.0, 6.0)),
        seq * (rng.uniform(0.05e-6, 0.2e-6) if tokenised else rng.uniform(1e-6, 4e-6)),
        seq * 8.0,
        rng.uniform(4, 12),
        0.0,
        params,
    )


def recommender(rng: np.random.Generator, batch: int, precision: str) -> Workload:
    """DLRM class: 26 sparse features pooled from large embedding tables, a dense MLP of 1-20 M parameters."""
    tables, dim = 26, float(rng.choice([64, 128]))
    pooling = rng.uniform(1, 40)
    dense = rng.uniform(1e6, 20e6)
    emb_bytes = tables * pooling * dim * 4.0 * 3.0  # forward gather, backward read-modify-write
    mlp = KernelGroup(6.0 * dense * batch, 3.0 * 4.0 * dense + batch * 2048 * 4.0, 60, True)
    emb = KernelGroup(2.0 * tables * pooling * dim * batch, emb_bytes * batch, 2 * tables, False)
    alltoall = 2.0 * tables * dim * 4.0 * batch  # pooled embeddings out and gradients back
    return Workload(
        "recommender",
        batch,
        precision,
        (mlp, emb, _optimizer(dense, True)),
        4.0 * dense + alltoall,
        rng.uniform(160, 600),
        rng.uniform(1e-6, 8e-6),
        rng.uniform(200, 600),
        rng.uniform(6, 16),
        rng.uniform(0, 64),
        dense,
    )


def unet(rng: np.random.Generator, batch: int, precision: str) -> Workload:
    """Diffusion U-Net, 0.3-0.9 B parameters, 0.3-1.2 TFLOP per sample trained."""
    e = ELEMENT_BYTES[precision]
    params = rng.uniform(0.3e9, 0.9e9)
    flops = rng.uniform(0.3e12, 1.2e12)
    act = flops / 3.0 / rng.uniform(4000, 9000)
    latents = rng.random() < 0.4  # precomputed VAE latents: small samples, little decode
    return Workload(
        "unet",
        batch,
        precision,
        (
            KernelGroup(flops * batch, flops * batch / rng.uniform(80, 250), 900, True),
            KernelGroup(8.0 * act * batch, 14.0 * act * e * batch, 1500, False),
            _optimizer(params, rng.random() < 0.7),
        ),
        (2.0 if e < 4 else 4.0) * params,
        rng.uniform(20e3, 40e3) if latents else rng.uniform(0.3e6, 1.5e6),
        rng.uniform(0.5e-3, 2e-3) if latents else rng.uniform(15e-3, 60e-3),
        32_768.0 if latents else 786_432.0,
        rng.uniform(5, 12),
        0.0,
        params,
    )


def gnn(rng: np.random.Generator, batch: int, precision: str) -> Workload:
    """Neighbour-sampled GNN (GraphSAGE class): features gathered on the host, sparse aggregation on the GPU."""
    feat = float(rng.choice([100, 128, 256, 602]))
    fanout = rng.uniform(150, 900)  # sampled nodes per seed over all hops
    hidden = float(rng.choice([128, 256, 512]))
    params = 3 * (feat + hidden) * hidden
    nodes = fanout * batch
    agg = KernelGroup(2.0 * nodes * hidden * 3, nodes * (feat + hidden) * 4.0 * 4.0, 40, False)
    dense = KernelGroup(6.0 * nodes * feat * hidden, 3.0 * nodes * (feat + hidden) * 4.0 / 8.0, 30, True)
    return Workload(
        "gnn",
        batch,
        precision,
        (dense, agg, _optimizer(params, True)),
        4.0 * params,
        rng.uniform(20, 200),  # seed ids and edges read per seed; the features sit in host memory
        fanout * rng.uniform(0.1e-6, 0.5e-6),  # neighbour sampling and feature gather on the CPU
        fanout * feat * 4.0,
        rng.uniform(4, 10),
        rng.uniform(20, 200),
        params,
    )


ARCHETYPES = {"cnn": cnn, "transformer": transformer, "recommender": recommender, "unet": unet, "gnn": gnn}
BATCH = {  # samples per GPU: typical ranges of each archetype
    "cnn": (32, 512),
    "transformer": (1, 16),
    "recommender": (2048, 65536),
    "unet": (2, 32),
    "gnn": (256, 2048),
}
