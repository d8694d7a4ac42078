"""What a Job trains: the model kind and size, batch, precision, and what one sample costs each station.

Costs are per sample (or per step, for what does not scale with the batch) in physical units: FLOPs
of tensor-core kernels, bytes of memory-bound kernels, bytes read from storage, core-seconds of
decoding, bytes copied to the GPU, gradient bytes to all-reduce. The figures come from published
model sizes (the ResNet, ViT and GPT-3 papers' tables, DLRM's Criteo setup) and the training-FLOPs
rule (6 x parameters per token, Kaplan et al. 2020); docs/familyad.md lists each one.

A draw takes the mechanism its block wants (``want``) and leans some choices towards it; the label
still comes only from the physics (label.py), and family.py redraws until the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Mechanism as M

from .hardware import JPEG_PER_CORE_S


@dataclass(frozen=True)
class Workload:
    """One training workload, per GPU.

    Attributes:
        kind, size: what it is ("lm", "gpt-1.3b"), for tags.
        params: parameters of the whole model.
        batch: samples per GPU per step.
        precision: "bf16", "fp16", "tf32" or "fp32".
        flops: tensor-core (GEMM/conv) FLOPs per sample, forward and backward.
        mem_bytes: HBM bytes of memory-bound kernels per sample.
        step_mem_bytes: HBM bytes per step that do not scale with the batch (the optimizer).
        ops: operators the host issues per step and rank.
        compute_eff: share of the tensor peak its GEMMs/convolutions reach.
        sample_bytes: bytes read from storage per sample.
        requests: storage requests per sample (1 for one file per sample, less for shards).
        decode_s: core-seconds of decoding/augmentation per sample.
        h2d_bytes: bytes copied host to device per sample.
        grad_bytes: gradient bytes all-reduced per step (whole model, before tensor parallelism).
        tp: tensor-parallel degree (inside a node).
        tp_bytes: tensor-parallel collective bytes per sample and GPU.
        a2a_bytes: embedding all-to-all bytes per sample and GPU (recommenders).
        rank_gb, worker_gb: host memory of one trainer rank, of one loader worker, GB.
        cache_gb: samples a pod keeps decoded in RAM, GB (0: none).
        dataset_gb: size of the dataset on storage, GB.
        mmap: the dataset is memory-mapped (its reads are major faults).
        sm_fill: share of the SMs its kernels occupy while they run.
    """

    kind: str
    size: str
    params: float
    batch: int
    precision: str
    flops: float
    mem_bytes: float
    step_mem_bytes: float
    ops: float
    compute_eff: float
    sample_bytes: float
    requests: float
    decode_s: float
    h2d_bytes: float
    grad_bytes: float
    tp: int
    tp_bytes: float
    a2a_bytes: float
    rank_gb: float
    worker_gb: float
    cache_gb: float
    dataset_gb: float
    mmap: bool
    sm_fill: float


# Which kinds each wanted mechanism leans towards (a lean, not a rule: any kind may come out).
_LEAN: dict[M, tuple[str, ...]] = {
    M.LOCAL_DISK: ("cnn", "vit", "av"),
    M.NETWORK_STORAGE: ("cnn", "av", "vit"),
    M.THROTTLED: ("cnn", "av"),
    M.SATURATED: ("cnn", "av"),
    M.TOO_FEW_WORKERS: ("cnn", "av", "vit"),
    M.HOST_MEMORY_PRESSURE: ("med3d", "recsys", "cnn"),
    M.HBM_BANDWIDTH: ("recsys", "cnn", "lm"),
    M.COMPUTE: ("lm", "vit"),
    M.LAUNCH_BOUND: ("lm",),
    M.PCIE: ("med3d", "lm", "recsys"),
    M.NVLINK: ("lm",),
    M.NETWORK: ("lm", "recsys"),
}
KINDS = ("cnn", "vit", "lm", "recsys", "av", "med3d")


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _opt_ops(rng: np.random.Generator, tensors: float) -> float:
    """Optimizer operators per step: fused (a handful), foreach (tens), or one loop per tensor."""
    style = rng.choice(["fused", "foreach", "loop"], p=[0.35, 0.45, 0.2])
    return {"fused": 6.0, "foreach": 40.0}.get(str(style), 4.0 * tensors)


def _cnn(rng: np.random.Generator, want: M, lean: bool) -> Workload:
    # (name, GMACs per 224x224 image, parameters): He et al. 2016, Table 1.
    name, gmac, params, modules = [
        ("resnet18", 1.8, 11.7e6, 60),
        ("resnet50", 4.1, 25.6e6, 160),
        ("resnet101", 7.8, 44.5e6, 310),
        ("resnet152", 11.5, 60.2e6, 460),
    ][int(rng.integers(0, 4))]
    res = float(rng.choice([1.0, 1.0, 1.5, 2.0]))  # 224, or larger crops: cost grows with pixels
    batch = int(rng.choice([32, 64, 128, 192, 256]))
    fp32_on_cpu = rng.random() < 0.4  # normalised to float32 on the CPU, or uint8 normalised on the GPU
    io_heavy = lean and want in (M.LOCAL_DISK, M.NETWORK_STORAGE)
    return Workload(
        "cnn", name, params, batch, str(rng.choice(["fp16", "bf16", "tf32"])),
        flops=6e9 * gmac * res,
        # calibrated so ResNet-50 AMP on an A100 lands near NVIDIA's ~2,470 img/s (see the doc)
        mem_bytes=450e6 * (gmac / 4.1) ** 0.9 * res * _u(rng, 0.6, 1.4),
        step_mem_bytes=16.0 * params,
        ops=3.0 * modules + _opt_ops(rng, modules),
        compute_eff=_u(rng, 0.45, 0.7),
        sample_bytes=110e3 * res * (_u(rng, 1.5, 4.0) if io_heavy else _u(rng, 0.7, 1.5)),
        requests=1.0 if rng.random() < 0.6 else 1.0 / 1000.0,
        decode_s=res / _u(rng, *JPEG_PER_CORE_S),
        h2d_bytes=224 * 224 * 3 * res * (4.0 if fp32_on_cpu else 1.0),
        grad_bytes=4.0 * params, tp=1, tp_bytes=0.0, a2a_bytes=0.0,
        rank_gb=_u(rng, 3, 6), worker_gb=_u(rng, 0.3, 1.2), cache_gb=0.0,
        dataset_gb=_logu(rng, 140, 1500) if io_heavy else _logu(rng, 20, 1500),
        mmap=False, sm_fill=_u(rng, 0.8, 0.98),
    )  # fmt: skip


def _vit(rng: np.random.Generator, want: M, lean: bool) -> Workload:
    # (name, GMACs per 224x224 image, parameters): Dosovitskiy et al. 2021 and timm's tables.
    name, gmac, params, layers = [
        ("vit-s16", 4.6, 22e6, 12),
        ("vit-b16", 17.6, 86e6, 12),
        ("vit-l16", 61.6, 304e6, 24),
    ][int(rng.integers(0, 3))]
    batch = int(rng.choice([32, 64, 128, 256]))
    return Workload(
        "vit", name, params, batch, str(rng.choice(["fp16", "bf16"])),
        flops=6e9 * gmac,
        mem_bytes=120e6 * (gmac / 17.6) ** 0.8 * _u(rng, 0.6, 1.5),
        step_mem_bytes=16.0 * params,
        ops=45.0 * layers + _opt_ops(rng, 12.0 * layers),
        compute_eff=_u(rng, 0.5, 0.75),
        sample_bytes=110e3 * _u(rng, 0.7, 1.5),
        requests=1.0 if rng.random() < 0.5 else 1.0 / 1000.0,
        decode_s=1.0 / _u(rng, *JPEG_PER_CORE_S),
        h2d_bytes=224 * 224 * 3 * float(rng.choice([1.0, 4.0])),
        grad_bytes=4.0 * params, tp=1, tp_bytes=0.0, a2a_bytes=0.0,
        rank_gb=_u(rng, 3, 8), worker_gb=_u(rng, 0.3, 1.2), cache_gb=0.0,
        dataset_gb=_logu(rng, 20, 1500), mmap=False, sm_fill=_u(rng, 0.85, 0.98),
    )  # fmt: skip


def _lm(rng: np.random.Generator, want: M, lean: bool) -> Workload:
    # (name, parameters, layers, d_model): Brown et al. 2020, Table 2.1.
    sizes = [
        ("gpt-125m", 125e6, 12, 768),
        ("gpt-350m", 350e6, 24, 1024),
        ("gpt-760m", 760e6, 24, 1536),
        ("gpt-1.3b", 1.3e9, 24, 2048),
        ("gpt-2.7b", 2.7e9, 32, 2560),
        ("gpt-6.7b", 6.7e9, 32, 4096),
    ]
    pick = {M.LAUNCH_BOUND: (0, 2), M.NETWORK: (2, 6), M.NVLINK: (1, 4), M.COMPUTE: (2, 6), M.PCIE: (0, 4)}
    name, params, layers, d = sizes[int(rng.integers(*pick.get(want, (0, 6)))) if lean else int(rng.integers(0, 6))]
    small = lean and want is M.LAUNCH_BOUND
    wide = lean and want is M.NVLINK  # tensor parallelism only pays for its collectives on big steps
    seq = int(rng.choice([512, 1024]) if small else rng.choice([2048, 4096] if wide else [512, 1024, 2048, 4096]))
    batch = int(rng.choice([1, 2]) if small else rng.choice([8, 16, 32] if wide else [1, 2, 4, 8, 16]))
    no_flash = (
        {M.HBM_BANDWIDTH: 0.85, M.LAUNCH_BOUND: 0.1, M.COMPUTE: 0.1, M.NVLINK: 0.1}.get(want, 0.4) if lean else 0.4
    )
    flash = rng.random() >= no_flash
    heads = d / 64.0
    tp_want = lean and want in (M.NVLINK, M.PCIE) and rng.random() < 0.85
    tp = int(rng.choice([4, 8, 8])) if tp_want else (int(rng.choice([1, 1, 1, 2, 4])))
    per_token_mem = layers * d * 2.0 * _u(rng, 25, 45) + (0.0 if flash else layers * heads * seq * 2.0 * 8.0)
    return Workload(
        "lm", name, params, batch, "bf16" if rng.random() < 0.8 else "fp16",
        flops=seq * (6.0 * params + 6.0 * layers * seq * d),
        mem_bytes=seq * per_token_mem,
        step_mem_bytes=32.0 * params,  # Adam: fp32 master, moments and bf16 copy read and written
        ops=45.0 * layers + 20.0 + _opt_ops(rng, 12.0 * layers + 4.0),
        compute_eff=_u(rng, 0.35, 0.6) if d < 1500 else _u(rng, 0.5, 0.75),
        sample_bytes=seq * float(rng.choice([2.0, 4.0])),
        requests=1.0 / 512.0,
        decode_s=2e-6 * seq / 1024.0,
        h2d_bytes=seq * 16.0,  # int64 ids and labels
        grad_bytes=params * float(rng.choice([2.0, 4.0])),
        tp=tp, tp_bytes=seq * layers * 4.0 * d * 2.0 * 2.0 * (tp - 1) / tp, a2a_bytes=0.0,
        rank_gb=_u(rng, 4, 12), worker_gb=_u(rng, 0.2, 0.6), cache_gb=0.0,
        dataset_gb=_logu(rng, 50, 5000), mmap=rng.random() < 0.6,
        sm_fill=_u(rng, 0.35, 0.7) if small else _u(rng, 0.8, 0.98),
    )  # fmt: skip


def _recsys(rng: np.random.Generator, want: M, lean: bool) -> Workload:
    # DLRM on Criteo-like data: 13 dense features, 26 categorical tables (Naumov et al. 2019).
    tables = int(rng.choice([26, 52, 100]))
    dim = int(rng.choice([64, 128, 256]))
    pooling = _u(rng, 1.0, 20.0)
    dense = _logu(rng, 1e6, 2e7)
    rows_bytes = tables * pooling * dim * 4.0
    batch = int(rng.choice([2048, 4096, 8192, 16384, 32768]))
    return Workload(
        "recsys", f"dlrm-{tables}x{dim}", dense + tables * 1e6 * dim, batch, "fp32",
        flops=6.0 * dense,
        # gathers forward, gradient scatter and the sparse optimizer's read-modify-write backward,
        # at poor sector efficiency for short rows
        mem_bytes=rows_bytes * _u(rng, 4.0, 8.0),
        step_mem_bytes=16.0 * dense,
        ops=_u(rng, 150, 600),
        compute_eff=_u(rng, 0.3, 0.6),
        sample_bytes=_u(rng, 160, 600),
        requests=1.0 / 65536.0,
        decode_s=_logu(rng, 2e-6, 3e-5),
        h2d_bytes=tables * pooling * 8.0 + 13 * 4.0,
        grad_bytes=4.0 * dense, tp=1, tp_bytes=0.0,
        a2a_bytes=tables * dim * 4.0 * 2.0,
        rank_gb=_u(rng, 6, 16), worker_gb=_u(rng, 0.5, 2.0),
        cache_gb=_logu(rng, 20, 200) if rng.random() < 0.5 else 0.0,
        dataset_gb=_logu(rng, 100, 4000), mmap=False, sm_fill=_u(rng, 0.6, 0.9),
    )  # fmt: skip


def _av(rng: np.random.Generator, want: M, lean: bool) -> Workload:
    # speech (conformer-like) or video (clip classifiers): big encoded samples, costly decoding.
    video = rng.random() < 0.5
    gmac = _logu(rng, 20, 200) if video else _logu(rng, 5, 40)
    params = _logu(rng, 30e6, 300e6)
    return Workload(
        "av", "video-clip" if video else "speech", params, int(rng.choice([8, 16, 32, 64])),
        str(rng.choice(["fp16", "bf16"])),
        flops=6e9 * gmac,
        mem_bytes=gmac * _u(rng, 30e6, 90e6),
        step_mem_bytes=16.0 * params,
        ops=_u(rng, 600, 3000),
        compute_eff=_u(rng, 0.35, 0.65),
        sample_bytes=_logu(rng, 2e6, 10e6) if video else _logu(rng, 0.2e6, 2e6),
        requests=1.0 if rng.random() < 0.5 else 1.0 / 200.0,
        decode_s=_logu(rng, 0.04, 0.3) if video else _logu(rng, 0.005, 0.04),
        h2d_bytes=_logu(rng, 2e6, 20e6) if video else _logu(rng, 0.3e6, 2e6),
        grad_bytes=4.0 * params, tp=1, tp_bytes=0.0, a2a_bytes=0.0,
        rank_gb=_u(rng, 3, 8), worker_gb=_u(rng, 0.5, 2.0), cache_gb=0.0,
        dataset_gb=_logu(rng, 200, 5000), mmap=False, sm_fill=_u(rng, 0.7, 0.95),
    )  # fmt: skip


def _med3d(rng: np.random.Generator, want: M, lean: bool) -> Workload:
    # 3D U-Net on CT/MRI patches: float32 volumes, heavy 3D augmentation, often cached in RAM.
    pcie = lean and want is M.PCIE
    gmac = _logu(rng, 20, 120) if pcie else _logu(rng, 100, 1000)
    params = _logu(rng, 5e6, 90e6)
    side = float(rng.choice([96, 128, 160]))
    return Workload(
        "med3d", f"unet3d-{int(side)}", params, int(rng.choice([1, 2, 4])), str(rng.choice(["fp16", "bf16"])),
        flops=6e9 * gmac,
        mem_bytes=gmac * _u(rng, 8e6, 20e6),
        step_mem_bytes=16.0 * params,
        ops=_u(rng, 400, 1500),
        compute_eff=_u(rng, 0.35, 0.6),
        sample_bytes=_logu(rng, 10e6, 150e6),
        requests=1.0,
        decode_s=_logu(rng, 0.03, 0.4) if not pcie else _logu(rng, 0.005, 0.03),
        h2d_bytes=side**3 * 4.0 * float(rng.choice([1, 2, 4])) * (float(rng.choice([4, 8])) if pcie else 1.0),
        grad_bytes=4.0 * params, tp=1, tp_bytes=0.0, a2a_bytes=0.0,
        rank_gb=_u(rng, 4, 10), worker_gb=_u(rng, 0.5, 2.5),
        cache_gb=_logu(rng, 10, 200) if rng.random() < 0.6 else 0.0,
        dataset_gb=_logu(rng, 50, 2000), mmap=False, sm_fill=_u(rng, 0.75, 0.95),
    )  # fmt: skip


_DRAWS = {"cnn": _cnn, "vit": _vit, "lm": _lm, "recsys": _recsys, "av": _av, "med3d": _med3d}


def draw_workload(rng: np.random.Generator, want: M, lean: bool) -> Workload:
    """One workload; with ``lean`` its kind (and some sizes) lean towards the wanted mechanism."""
    kinds = _LEAN[want] if lean else KINDS
    kind = str(kinds[int(rng.integers(0, len(kinds)))])
    return _DRAWS[kind](rng, want, lean)
