"""The catalogue of training workloads: what one step of each asks of the GPU, the host and the links.

Each kind draws its model, batch, sequence or image size and precision, and from them (not from
any class) its per-step FLOPs, HBM bytes, host-to-device bytes, input bytes, decode cost and
collective bytes. Figures and assumptions are listed in docs/familyan.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyan.hardware import Board

KB, MB, GB = 1e3, 1e6, 1e9

KINDS = ("image-jpeg", "llm-pretrain", "finetune-smallfiles", "recsys-embedding", "speech-audio", "diffusion", "rl-env")

# How an intent leans the choice of workload kind (weights in KINDS order): a bias, never the label.
KIND_WEIGHTS: dict[Bottleneck, tuple[float, ...]] = {
    Bottleneck.IO: (3, 0.5, 3, 1.5, 1, 1, 0),
    Bottleneck.CPU: (3, 0.5, 1, 1, 3, 1, 2),
    Bottleneck.INTERCONNECT: (1, 4, 0.5, 2.5, 0.5, 1, 0.5),
    Bottleneck.GPU: (2, 2.5, 1, 0.5, 1, 2, 1),
    Bottleneck.MEMORY: (1, 1.5, 0.5, 3, 0.5, 2.5, 0),
}


@dataclass(frozen=True)
class Workload:
    """What one optimiser step asks of one GPU's share of the Job (all figures per GPU per step).

    Attributes:
        kind: one of KINDS.
        tags: what was drawn, for the Job's tags.
        flops: FLOPs of compute-bound kernels.
        kernel_eff: share of the board's peak those kernels reach.
        tensor: the FLOPs run on tensor cores (False: FP32 pipes).
        hbm_bytes: bytes moved by bandwidth-bound kernels (norms, elementwise, gathers).
        launches: kernel launches; the host issues each in ``launch_s`` seconds.
        launch_s: host seconds per launch.
        h2d_bytes: host-to-device bytes; ``h2d_sync`` of the copy time is not overlapped.
        h2d_sync: see above.
        input_bytes: bytes read from storage; ``files`` files opened.
        files: see above.
        decode_core_s: CPU core-seconds of decode/augment/collate (runs beside the GPU, prefetched).
        serial_core_s: CPU core-seconds the GPU waits for (environment steps), spread over ``workers``.
        workers: loader (or environment) processes per GPU.
        sync_bytes: bytes of the data-parallel gradient sync (all-reduce or its FSDP equivalent).
        sync_factor: the collective's traffic per byte synchronised (2 for a ring all-reduce, 3 for FSDP).
        alltoall_bytes: embedding all-to-all bytes (model-parallel tables), forward plus backward.
        tp_bytes: tensor-parallel activation bytes, inside the node.
        bubble: pipeline-parallel bubble share of compute time.
        overlap: share of compute the gradient sync can hide behind (backward is about 2/3 of it).
        host_mem: host memory the pod needs per GPU, bytes.
        fb_frac: framebuffer share in use (the caching allocator keeps it reserved).
        fill: SM fill during compute kernels; small models leave SMs idle.
        dataset_bytes: dataset size per node (does it fit the page cache?).
        mmap: dataset read through memory maps (its major faults are IO, not memory pressure).
        ckpt_bytes: checkpoint bytes each GPU writes.
        eval_cost: an evaluation step's compute relative to a training step.
    """

    kind: str
    tags: tuple[str, ...]
    flops: float
    kernel_eff: float
    tensor: bool
    hbm_bytes: float
    launches: float
    launch_s: float
    h2d_bytes: float
    h2d_sync: float
    input_bytes: float
    files: float
    decode_core_s: float
    serial_core_s: float
    workers: int
    sync_bytes: float
    sync_factor: float
    alltoall_bytes: float
    tp_bytes: float
    bubble: float
    overlap: float
    host_mem: float
    fb_frac: float
    fill: float
    dataset_bytes: float
    mmap: bool
    ckpt_bytes: float
    eval_cost: float


def _pick(rng: np.random.Generator, options: Sequence[str], weights: Sequence[float] | None = None) -> str:
    p = None if weights is None else np.asarray(weights, dtype=float) / float(np.sum(weights))
    return str(options[int(rng.choice(len(options), p=p))])


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Log-uniform: sizes and rates spread over orders of magnitude."""
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def peak_flops(board: Board, tensor: bool) -> float:
    """FLOP/s a board offers: dense BF16/FP16 tensor, else its FP32 pipes."""
    return (board.tflops if tensor else board.fp32_tflops) * 1e12


# (name, forward GFLOPs per image at its size and params M: torchvision's model docs; HBM MB per image
# moved by bandwidth-bound kernels and the matmul/conv kernels' efficiency: assumptions, docs/familyan.md)
_VISION = (
    ("resnet50", 4.09, 25.6, 300.0, 0.20, 224),
    ("resnet152", 11.51, 60.2, 700.0, 0.22, 224),
    ("vit-b16", 17.56, 86.6, 250.0, 0.45, 224),
    ("efficientnet-b4", 4.39, 19.3, 1400.0, 0.10, 380),
)


def image_jpeg(rng: np.random.Generator, board: Board, intent: Bottleneck, gpus: int, per_node: int) -> Workload:
    """Image classification with a CPU JPEG decode pipeline (ImageNet-style, one file per image or tar shards)."""
    wm = {Bottleneck.MEMORY: (1, 1, 1, 4), Bottleneck.GPU: (1, 3, 3, 0.5)}.get(intent, (3, 1, 2, 1))
    name, gf, params, hbm_mb, eff, px = _VISION[int(rng.choice(4, p=np.asarray(wm) / sum(wm)))]
    amp = rng.random() < (0.9 if intent is Bottleneck.GPU else 0.7)
    batch = int(rng.choice([64, 128, 192, 256]))
    jpeg = _lu(rng, 250 * KB, 600 * KB) if intent is Bottleneck.IO else _lu(rng, 90 * KB, 200 * KB)
    rate_lo, rate_hi = (40.0, 110.0) if intent is Bottleneck.CPU else (90.0, 220.0)
    decode = batch / _u(rng, rate_lo, rate_hi) * (px / 224) ** 2
    gpu_decode = intent is Bottleneck.GPU and rng.random() < 0.5  # DALI-style: decode on the GPU
    sharded = rng.random() < (0.2 if intent is Bottleneck.IO else 0.5)
    cpu_norm = rng.random() < 0.3  # normalised to float32 on the host: 4x the PCIe bytes
    return Workload(
        kind="image-jpeg",
        tags=(f"model:{name}", f"precision:{'amp' if amp else 'fp32'}", f"batch:{batch}", f"image:{px}")
        + (("decode:gpu",) if gpu_decode else ())
        + (("input:tar-shards",) if sharded else ("input:file-per-image",)),
        flops=3 * gf * 1e9 * batch * (1.15 if gpu_decode else 1.0),
        kernel_eff=eff * (1.0 if amp else 0.5),
        tensor=True,
        hbm_bytes=hbm_mb * MB * batch * (1.0 if amp else 1.8),
        launches=_u(rng, 900, 2500),
        launch_s=_u(rng, 5e-6, 1.2e-5),
        h2d_bytes=batch * px * px * 3 * (4 if cpu_norm else 1),
        h2d_sync=_u(rng, 0.1, 0.5),
        input_bytes=batch * jpeg,
        files=batch / (1000.0 if sharded else 1.0),
        decode_core_s=decode * (0.08 if gpu_decode else 1.0),
        serial_core_s=0.0,
        workers=int(rng.choice([2, 4, 6, 8, 12])),
        sync_bytes=params * 1e6 * 4,
        sync_factor=2.0,
        alltoall_bytes=0.0,
        tp_bytes=0.0,
        bubble=0.0,
        overlap=_u(rng, 0.5, 0.9),
        host_mem=_u(rng, 6, 20) * GB,
        fb_frac=_u(rng, 0.55, 0.95),
        fill=_u(rng, 0.75, 0.95),
        dataset_bytes=_lu(rng, 40, 1500) * GB,
        mmap=False,
        ckpt_bytes=params * 1e6 * 12,
        eval_cost=0.34,
    )


_LLM_SIZES = (0.125, 0.35, 1.3, 2.7, 7.0, 13.0, 30.0, 70.0)  # billions of parameters
_LLM_DIMS = (768, 1024, 2048, 2560, 4096, 5120, 7168, 8192)
_LLM_LAYERS = (12, 24, 24, 32, 32, 40, 60, 80)


def _llm_parallelism(rng: np.random.Generator, b: float, intent: Bottleneck, gpus: int) -> str:
    if b <= 1.3:
        return _pick(rng, ("ddp", "fsdp"), (2, 1))
    if intent is Bottleneck.INTERCONNECT:
        return _pick(rng, ("fsdp", "tp+dp", "pp+dp"), (3, 1, 1))
    return _pick(rng, ("fsdp", "tp+dp", "pp+dp"), (2, 2, 1)) if gpus > 1 else "fsdp"


def llm_pretrain(rng: np.random.Generator, board: Board, intent: Bottleneck, gpus: int, per_node: int) -> Workload:
    """Decoder-only language-model pre-training with DDP, FSDP/ZeRO-3, tensor or pipeline parallelism."""
    fits = [i for i, b in enumerate(_LLM_SIZES) if b * 16 / max(gpus, 1) < board.fb_mib / 1024 * 0.7]
    idx = int(rng.choice(fits)) if fits else 0
    b, d, layers = _LLM_SIZES[idx], _LLM_DIMS[idx], _LLM_LAYERS[idx]
    params = b * 1e9
    seq = int(rng.choice([1024, 2048, 4096, 8192]))
    accum = int(rng.choice([1, 2, 4, 8]))
    tokens = int(rng.choice([1, 2, 4])) * seq * accum
    flash = rng.random() < (0.35 if intent is Bottleneck.MEMORY else 0.85)
    par = _llm_parallelism(rng, b, intent, gpus)
    tp = per_node if par in ("tp+dp", "pp+dp") else 1
    # activation bytes per token per layer, Korthikanti et al.: 34*d (+5*heads*seq without fused attention)
    heads = d // 128
    act = layers * tokens * (34 * d + (0 if flash else 5 * heads * seq))
    offload = intent is Bottleneck.MEMORY and not flash and rng.random() < 0.5
    pp_stages = 4 if par == "pp+dp" else 1
    shard = params / tp / pp_stages
    return Workload(
        kind="llm-pretrain",
        tags=(f"params:{b:g}B", f"seq:{seq}", f"parallelism:{par}", f"attention:{'flash' if flash else 'eager'}")
        + (("optimizer:cpu-offload",) if offload else ()),
        flops=6 * shard * tokens * (1 + seq / (6 * d)),
        kernel_eff=_u(rng, 0.45, 0.75),
        tensor=True,
        hbm_bytes=3 * act / tp,
        launches=layers * 40 * accum / pp_stages,
        launch_s=_u(rng, 4e-6, 1e-5),
        h2d_bytes=tokens * 8 + (shard * 8 if offload else 0.0),
        h2d_sync=1.0 if offload else 0.2,
        input_bytes=tokens * _u(rng, 2, 4),
        files=0.01,
        decode_core_s=tokens * _u(rng, 2e-8, 2e-7),
        serial_core_s=shard * 2e-9 if offload else 0.0,
        workers=int(rng.choice([1, 2, 4])),
        sync_bytes=shard * 2,
        sync_factor=3.0 * accum if par == "fsdp" else 2.0,
        alltoall_bytes=0.0,
        tp_bytes=8 * layers * tokens * d * 2 * (tp - 1) / tp / pp_stages if tp > 1 else 0.0,
        bubble=(pp_stages - 1) / (accum * 2 + pp_stages - 1) if pp_stages > 1 else 0.0,
        overlap=_u(rng, 0.3, 0.8),
        host_mem=(shard * 12 if offload else 0.0) + _u(rng, 8, 24) * GB,
        fb_frac=_u(rng, 0.8, 0.98),
        fill=_u(rng, 0.85, 0.98),
        dataset_bytes=_lu(rng, 100, 4000) * GB,
        mmap=True,
        ckpt_bytes=shard * 16,
        eval_cost=0.34,
    )


WorkloadDraw = Callable[[np.random.Generator, Board, Bottleneck, int, int], Workload]
