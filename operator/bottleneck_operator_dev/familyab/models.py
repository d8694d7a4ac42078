"""The workloads a fleet trains, as per-sample costs: what one training sample asks of each resource.

A "sample" is what the loader yields: an image, a token sequence, a click record, an utterance, a
seed node, a transition. Figures are nominal; :mod:`.fleet` varies each Job around them.
ResNet-50's HBM traffic is calibrated so that the stage model reproduces NVIDIA's published
throughputs (about 2,470 img/s on an A100 with AMP, 1,200 on a V100: TELEMETRY.md); transformers
follow the 6 x parameters x tokens rule for training FLOPs (EleutherAI's Transformer Math 101).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    """Per-sample costs of one model.

    Attributes:
        kind: "cv", "nlp", "rec", "speech", "gnn" or "small".
        name: tag value.
        params: dense parameters (the ones data parallelism all-reduces).
        fwd_gflops: forward GFLOPs per sample (training is about three times that).
        hbm_mb: HBM traffic of the memory-bound kernels per sample at 16-bit activations, MB.
        math_eff: share of the math peak the GEMM/conv kernels reach.
        sample_kb: bytes stored per sample.
        h2d_kb: bytes copied host to device per sample (the decoded tensor).
        cpu_ms: core-milliseconds per sample of decode, augmentation and collation (low, high).
        kernels: kernels launched per step (forward, backward, optimizer).
        batch: per-GPU batch (low, high), drawn as a power of two.
        a2a_kb: embedding all-to-all bytes per sample, KB (sharded embedding tables).
        host_gb: host-resident data per pod, GB (a graph, an embedding cache), 0 when none.
        dataset_gb: dataset size, GB (low, high).
    """

    kind: str
    name: str
    params: float
    fwd_gflops: float
    hbm_mb: float
    math_eff: float
    sample_kb: float
    h2d_kb: float
    cpu_ms: tuple[float, float]
    kernels: int
    batch: tuple[int, int]
    a2a_kb: float = 0.0
    host_gb: float = 0.0
    dataset_gb: tuple[float, float] = (100.0, 1000.0)


MODELS: tuple[Model, ...] = (
    # Vision. JPEG ImageNet averages about 110 KB an image (138 GB over 1.28 M images); a core
    # decodes and augments 50-200 of them a second (TELEMETRY.md): 5-20 ms each.
    Model("cv", "resnet50", 25.6e6, 4.1, 377.0, 0.25, 110.0, 150.0, (5.0, 20.0), 900, (64, 256)),
    Model("cv", "resnet18", 11.7e6, 1.8, 210.0, 0.25, 110.0, 150.0, (5.0, 20.0), 450, (128, 512)),
    Model("cv", "vit-b16", 86e6, 17.6, 320.0, 0.50, 110.0, 150.0, (5.0, 20.0), 700, (32, 128)),
    Model("cv", "maskrcnn", 44e6, 250.0, 6000.0, 0.30, 160.0, 3200.0, (30.0, 80.0), 3000, (2, 8)),
    # Language models: pre-tokenised sequences (4 bytes a token), collation only.
    Model("nlp", "bert-large", 340e6, 348.0, 2200.0, 0.60, 2.0, 4.0, (0.05, 0.2), 1500, (8, 32), dataset_gb=(20, 400)),
    Model("nlp", "gpt-125m", 125e6, 256.0, 1600.0, 0.55, 4.0, 8.0, (0.05, 0.2), 900, (8, 32), dataset_gb=(20, 400)),
    Model("nlp", "gpt-1.3b", 1.3e9, 5325.0, 9000.0, 0.62, 8.0, 16.0, (0.1, 0.3), 1800, (1, 8), dataset_gb=(50, 800)),
    # Click-through-rate models: tiny dense MLPs, embedding gathers dominate HBM traffic.
    Model(
        "rec",
        "dlrm",
        8e6,
        0.005,
        0.6,
        0.25,
        0.16,
        0.2,
        (0.001, 0.006),
        300,
        (2048, 16384),
        a2a_kb=13.0,
        host_gb=0.0,
        dataset_gb=(200, 2000),
    ),
    Model(
        "rec",
        "wide-deep",
        20e6,
        0.01,
        0.4,
        0.25,
        0.3,
        0.4,
        (0.002, 0.01),
        250,
        (1024, 8192),
        a2a_kb=8.0,
        dataset_gb=(100, 1500),
    ),
    # Speech: 15 s utterances as FLAC (about 240 KB), 80-bin filterbanks on the host (assumed costs).
    Model(
        "speech",
        "conformer-m",
        30e6,
        30.0,
        700.0,
        0.40,
        240.0,
        480.0,
        (15.0, 45.0),
        1500,
        (16, 64),
        dataset_gb=(50, 600),
    ),
    Model(
        "speech", "jasper", 330e6, 60.0, 1100.0, 0.45, 240.0, 480.0, (15.0, 45.0), 1200, (16, 64), dataset_gb=(50, 600)
    ),
    # Graph learning: a sample is a seed node with its sampled neighbourhood (fan-out 15 x 10); the
    # graph and its features live in host memory, so storage only supplies seed ids.
    Model(
        "gnn",
        "graphsage",
        2e6,
        0.04,
        0.5,
        0.30,
        0.05,
        200.0,
        (0.05, 0.3),
        250,
        (512, 2048),
        host_gb=120.0,
        dataset_gb=(50, 400),
    ),
    # Small models (tabular MLPs, RL policies): microsecond kernels, many of them.
    Model("small", "mlp", 1e6, 0.002, 0.05, 0.20, 0.5, 0.5, (0.01, 0.05), 900, (64, 512), dataset_gb=(1, 20)),
    Model("small", "rl-policy", 3e6, 0.01, 0.1, 0.20, 2.0, 2.0, (0.02, 0.1), 1400, (32, 256), dataset_gb=(1, 20)),
)

KINDS: tuple[str, ...] = ("cv", "nlp", "rec", "speech", "gnn", "small")


def models_of(kind: str) -> tuple[Model, ...]:
    """The models of one kind, in table order."""
    return tuple(m for m in MODELS if m.kind == kind)
