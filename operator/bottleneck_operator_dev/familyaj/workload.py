"""What a Job trains and how it is configured: the per-sample and per-step costs of its pipeline.

Figures per sample follow published workloads: ResNet-50 at ~4.1 GFLOP forward (x3 with backward),
ImageNet JPEGs of ~110 KB decoding at 50-200 images per core-second, ViT-B/16 at ~17.6 GFLOP
forward, decoder language models at 6 x parameters FLOP per token. A workload starts from one of
those archetypes and its knobs (workers, limits, pinned memory, offload, parallelism) are drawn the
way teams set them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GIB = float(2**30)
ARCHETYPES = ("cnn", "vit", "llm", "speech", "video", "recsys", "policy", "diffusion", "volumetric")


@dataclass(frozen=True)
class Workload:
    """One Job's training configuration and costs (per GPU unless said otherwise).

    Attributes:
        archetype: the model family it starts from.
        batch: samples per GPU per step.
        read_bytes: bytes read from storage per sample.
        cache_hit: share of reads served from the page cache.
        samples_per_request: samples per storage request (1: a file per sample; shards: many).
        cpu_s: core-seconds of decode and augmentation per sample.
        workers: data-loader workers per GPU process (0: loading in the training process).
        cpu_limit: the pod's CPU limit in cores (None: no limit).
        dev_bytes: bytes copied host to device per sample.
        pinned: whether batches are in pinned memory (copies overlap and run at full speed).
        offload_bytes: optimizer/parameter offload traffic per step, each direction.
        flops: FLOP per sample (forward and backward).
        mfu: share of dense peak the compute-bound kernels reach.
        tensor_share: share of that work on the tensor pipes (0 for plain FP32).
        hbm_bytes: bytes the memory-bound kernels move per sample.
        kernels: kernel launches per step.
        dispatch_s: host time to dispatch one kernel.
        kernel_floor_s: the shortest a kernel runs on the GPU, however little work it has.
        grad_bytes: gradient (or sharded parameter) bytes synchronised per step.
        comm_factor: traffic relative to one all-reduce (FSDP ~1.5).
        tp_bytes: tensor-parallel activation bytes per step within the node.
        overlap: share of the compute that communication can hide behind.
        rss_gib: host memory the pod's processes need.
        mem_limit_gib: the pod's memory limit (None: none).
        thrash_bytes: bytes refaulted per step when memory is short.
        fault_s: time one refault costs.
        fb_frac: share of the framebuffer the process (its caching allocator) holds.
    """

    archetype: str
    batch: int
    read_bytes: float
    cache_hit: float
    samples_per_request: float
    cpu_s: float
    workers: int
    cpu_limit: float | None
    dev_bytes: float
    pinned: bool
    offload_bytes: float
    flops: float
    mfu: float
    tensor_share: float
    hbm_bytes: float
    kernels: float
    dispatch_s: float
    kernel_floor_s: float
    grad_bytes: float
    comm_factor: float
    tp_bytes: float
    overlap: float
    rss_gib: float
    mem_limit_gib: float | None
    thrash_bytes: float
    fault_s: float
    fb_frac: float


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Log-uniform between lo and hi."""
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


# Per archetype: read bytes, decode core-seconds, device bytes, FLOP and HBM bytes per sample, the share
# of dense peak its matmuls reach, per-GPU batch, parameters and kernels per step. A number is fixed;
# (lo, hi) is drawn uniformly, ("log", lo, hi) log-uniformly.
Range = float | tuple[float, float] | tuple[str, float, float]
_COSTS: dict[str, dict[str, Range]] = {
    "cnn": dict(read=(80e3, 140e3), cpu=("log", 0.004, 0.012), dev=150e3, fl=12.3e9, mfu=(0.10, 0.2),
                hbm=(80e6, 200e6), b=("log", 64, 256), p=25e6, k=(400, 1500)),
    "vit": dict(read=(80e3, 140e3), cpu=("log", 0.004, 0.012), dev=150e3, fl=53e9, mfu=(0.3, 0.5),
                hbm=(80e6, 250e6), b=("log", 64, 256), p=86e6, k=(600, 2000)),
    "llm": dict(read=(8e3, 32e3), cpu=("log", 1e-4, 5e-4), dev=(8e3, 32e3), fl=0.0, mfu=(0.35, 0.55),
                hbm=0.0, b=("log", 1, 8), p=("log", 0.35e9, 8e9), k=(2000, 8000)),
    "speech": dict(read=(150e3, 500e3), cpu=("log", 0.01, 0.04), dev=(300e3, 1.2e6), fl=(20e9, 60e9),
                   mfu=(0.2, 0.4), hbm=(100e6, 300e6), b=("log", 16, 64), p=("log", 100e6, 600e6), k=(800, 3000)),
    "video": dict(read=(1e6, 5e6), cpu=("log", 0.04, 0.2), dev=(2.4e6, 9.6e6), fl=(150e9, 600e9), mfu=(0.25, 0.45),
                  hbm=(0.5e9, 2e9), b=("log", 4, 16), p=("log", 80e6, 400e6), k=(1000, 3000)),
    "recsys": dict(read=(1e3, 4e3), cpu=("log", 2e-5, 1e-4), dev=(1e3, 4e3), fl=(20e6, 100e6), mfu=(0.15, 0.3),
                   hbm=(5e6, 20e6), b=("log", 2048, 16384), p=("log", 50e6, 300e6), k=(500, 2000)),
    "policy": dict(read=(1e3, 10e3), cpu=("log", 1e-5, 1e-4), dev=(1e3, 20e3), fl=(5e6, 50e6), mfu=(0.1, 0.3),
                   hbm=(1e6, 10e6), b=("log", 64, 1024), p=("log", 1e6, 30e6), k=(1500, 8000)),
    "diffusion": dict(read=(300e3, 800e3), cpu=("log", 0.01, 0.04), dev=(0.8e6, 3.1e6), fl=(1.5e12, 3e12),
                      mfu=(0.3, 0.5), hbm=(2e9, 6e9), b=("log", 4, 32), p=("log", 0.8e9, 2.6e9), k=(1500, 4000)),
    "volumetric": dict(read=(20e6, 120e6), cpu=("log", 0.2, 1.0), dev=(8e6, 32e6), fl=(0.5e12, 2e12), mfu=(0.2, 0.4),
                       hbm=(2e9, 8e9), b=("log", 1, 4), p=("log", 20e6, 100e6), k=(800, 2500)),
}  # fmt: skip


def _draw_range(rng: np.random.Generator, r: Range) -> float:
    if isinstance(r, tuple) and len(r) == 3:
        return _lu(rng, float(r[1]), float(r[2]))
    if isinstance(r, tuple):
        return _u(rng, float(r[0]), float(r[1]))
    return float(r)


def _archetype_costs(rng: np.random.Generator, arch: str) -> dict[str, float]:
    """Per-sample costs of an archetype: read, cpu, device bytes, flops, hbm bytes, batch, params, kernels."""
    return {key: _draw_range(rng, r) for key, r in _COSTS[arch].items()}


def draw_workload(rng: np.random.Generator, arch: str, gpus_per_pod: int) -> Workload:
    """A neutral workload of one archetype: configured as a careful team would configure it."""
    c = _archetype_costs(rng, arch)
    batch = max(1, round(c["b"]))
    params = c["p"]
    flops, hbm = c["fl"], c["hbm"]
    if arch == "llm":
        seq = float(rng.choice([2048, 4096, 8192]))
        flops = 6.0 * params * seq
        hbm = flops / rng.uniform(400.0, 900.0)
        c["read"] = c["dev"] = seq * 4.0
    bf16 = rng.random() < 0.85
    workers = int(rng.choice([4, 6, 8, 10, 12]))
    limited = rng.random() < 0.45
    cores_needed = gpus_per_pod * (workers + 1.5)
    return Workload(
        archetype=arch,
        batch=batch,
        read_bytes=c["read"],
        cache_hit=_u(rng, 0.0, 0.9),
        samples_per_request=float(rng.choice([1.0, 1.0, 64.0, 256.0])),
        cpu_s=c["cpu"],
        workers=workers,
        cpu_limit=float(np.ceil(cores_needed * _u(rng, 1.1, 2.0))) if limited else None,
        dev_bytes=c["dev"] * (1.0 if rng.random() < 0.7 else 4.0),
        pinned=rng.random() < 0.8,
        offload_bytes=0.0,
        flops=flops,
        mfu=c["mfu"] * (1.0 if bf16 else 0.45),
        tensor_share=_u(rng, 0.85, 1.0) if bf16 else _u(rng, 0.0, 0.3),
        hbm_bytes=hbm,
        kernels=c["k"],
        dispatch_s=_lu(rng, 4e-6, 12e-6) / (8.0 if rng.random() < 0.15 else 1.0),
        kernel_floor_s=_u(rng, 2e-6, 6e-6),
        grad_bytes=params * (2.0 if bf16 else 4.0),
        comm_factor=1.5 if (arch in ("llm", "diffusion") and rng.random() < 0.7) else 1.0,
        tp_bytes=0.0,
        overlap=_u(rng, 0.3, 0.66),
        rss_gib=gpus_per_pod * _u(rng, 3.0, 8.0) + gpus_per_pod * workers * _u(rng, 0.3, 1.5),
        mem_limit_gib=None,
        thrash_bytes=0.0,
        fault_s=_lu(rng, 8e-6, 1.2e-4),
        fb_frac=_u(rng, 0.55, 0.97),
    )
