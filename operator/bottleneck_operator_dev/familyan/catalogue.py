"""The rest of the workload catalogue, and the one draw that picks a kind for a Job.

Fine-tuning on many small files, recommendation models with embedding tables in HBM or host memory,
speech with CPU feature extraction, diffusion models with large activations, and reinforcement-style
loops whose environments step on the host.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyan.hardware import Board
from bottleneck_operator_dev.familyan.workloads import (
    GB,
    KB,
    KIND_WEIGHTS,
    KINDS,
    MB,
    Workload,
    WorkloadDraw,
    _lu,
    _pick,
    _u,
    image_jpeg,
    llm_pretrain,
)


def finetune_smallfiles(
    rng: np.random.Generator, board: Board, intent: Bottleneck, gpus: int, per_node: int
) -> Workload:
    """Fine-tuning a small model (BERT-size, ResNet-18) on many small files: opens, tokenising, tiny kernels."""
    name, params, layers = (("distilbert", 66e6, 6), ("bert-base", 110e6, 12), ("resnet18", 11.7e6, 18))[
        int(rng.choice(3))
    ]
    batch = int(rng.choice([8, 16, 32, 64]))
    seq = int(rng.choice([128, 256, 512]))
    file_kb = _lu(rng, 4, 40) if intent is not Bottleneck.IO else _lu(rng, 20, 200)
    return Workload(
        kind="finetune-smallfiles",
        tags=(f"model:{name}", f"batch:{batch}", f"seq:{seq}", "input:file-per-sample"),
        flops=6 * params * batch * seq,
        kernel_eff=_u(rng, 0.2, 0.45),
        tensor=True,
        hbm_bytes=layers * batch * seq * 768 * 34 * 3,
        launches=layers * _u(rng, 60, 110),
        launch_s=_u(rng, 8e-6, 2.5e-5),
        h2d_bytes=batch * seq * 16,
        h2d_sync=0.6,
        input_bytes=batch * file_kb * KB,
        files=float(batch),
        decode_core_s=batch * _u(rng, 2e-4, 2e-3 if intent is Bottleneck.CPU else 8e-4),
        serial_core_s=0.0,
        workers=int(rng.choice([1, 2, 4] if intent in (Bottleneck.IO, Bottleneck.CPU) else [2, 4, 8])),
        sync_bytes=params * 4,
        sync_factor=2.0,
        alltoall_bytes=0.0,
        tp_bytes=0.0,
        bubble=0.0,
        overlap=_u(rng, 0.3, 0.7),
        host_mem=_u(rng, 4, 12) * GB,
        fb_frac=_u(rng, 0.3, 0.8),
        fill=_u(rng, 0.3, 0.6),
        dataset_bytes=_lu(rng, 2, 400) * GB,
        mmap=False,
        ckpt_bytes=params * 12,
        eval_cost=0.34,
    )


def recsys_embedding(rng: np.random.Generator, board: Board, intent: Bottleneck, gpus: int, per_node: int) -> Workload:
    """A DLRM-style model: small MLPs and huge embedding tables, sharded in HBM (all-to-all) or in host memory."""
    host = rng.random() < {Bottleneck.MEMORY: 0.4, Bottleneck.INTERCONNECT: 0.5}.get(intent, 0.3)
    batch = int(rng.choice([4096, 8192, 16384, 32768]))
    features, dim = int(rng.choice([26, 40, 100])), int(rng.choice([64, 128, 256]))
    pooling = _lu(rng, 1, 60 if intent is Bottleneck.MEMORY else 20)
    rows = batch * features * pooling
    row_bytes = dim * 4.0
    table = _lu(rng, 50, 2000) * GB  # all tables of the model
    mlp = _lu(rng, 5e6, 60e6)
    # random row gathers move whole 32-byte sectors and the backward pass updates rows in place
    hbm = 0.0 if host else rows * row_bytes * 3.5
    return Workload(
        kind="recsys-embedding",
        tags=(f"tables:{'host' if host else 'hbm'}", f"batch:{batch}", f"dim:{dim}", f"pooling:{pooling:.0f}"),
        flops=6 * mlp * batch,
        kernel_eff=_u(rng, 0.25, 0.5),
        tensor=True,
        hbm_bytes=hbm + batch * 4 * KB,
        launches=_u(rng, 300, 900),
        launch_s=_u(rng, 5e-6, 1e-5),
        h2d_bytes=batch * features * 8 + (batch * features * row_bytes * 2 if host else 0.0),
        h2d_sync=0.9 if host else 0.3,
        input_bytes=batch * _u(rng, 0.4, 3.0) * KB,
        files=batch / 2e5,
        decode_core_s=batch * _u(rng, 1e-6, 4e-6) + (rows * _u(rng, 4e-8, 1.2e-7) if host else 0.0),
        serial_core_s=0.0,
        workers=int(rng.choice([2, 4, 8])),
        sync_bytes=mlp * 4,
        sync_factor=2.0,
        alltoall_bytes=0.0 if host else batch * features * row_bytes * 2,
        tp_bytes=0.0,
        bubble=0.0,
        overlap=_u(rng, 0.1, 0.4),
        host_mem=(table / max(gpus, 1) if host else 0.0) + _u(rng, 8, 24) * GB,
        fb_frac=_u(rng, 0.7, 0.97),
        fill=_u(rng, 0.5, 0.8),
        dataset_bytes=_lu(rng, 500, 20000) * GB,
        mmap=False,
        ckpt_bytes=table / max(gpus, 1) + mlp * 12,
        eval_cost=0.34,
    )


def speech_audio(rng: np.random.Generator, board: Board, intent: Bottleneck, gpus: int, per_node: int) -> Workload:
    """Speech recognition (wav2vec2/conformer size): FLAC decode, resampling, log-mel and SpecAugment on the CPU."""
    params = _pick(rng, ("95", "300", "600"))
    p = float(params) * 1e6
    batch, clip = int(rng.choice([8, 16, 24, 32])), _u(rng, 8, 25)
    frames = batch * clip * 50  # 20 ms frames
    per_clip_ms = _u(rng, 25, 80) if intent is Bottleneck.CPU else _u(rng, 6, 30)
    return Workload(
        kind="speech-audio",
        tags=(f"params:{params}M", f"batch:{batch}", f"clip:{clip:.0f}s"),
        flops=6 * p * frames,
        kernel_eff=_u(rng, 0.3, 0.55),
        tensor=True,
        hbm_bytes=frames * 24 * 1024 * 34 * 3,
        launches=_u(rng, 1200, 3000),
        launch_s=_u(rng, 5e-6, 1e-5),
        h2d_bytes=frames * 80 * 4 * 2,
        h2d_sync=0.3,
        input_bytes=batch * clip * 16000 * 2 * 0.55,  # 16 kHz 16-bit, FLAC at about 55 %
        files=float(batch),
        decode_core_s=batch * per_clip_ms / 1000.0,
        serial_core_s=0.0,
        workers=int(rng.choice([2, 4, 6, 8, 12])),
        sync_bytes=p * 4,
        sync_factor=2.0,
        alltoall_bytes=0.0,
        tp_bytes=0.0,
        bubble=0.0,
        overlap=_u(rng, 0.4, 0.8),
        host_mem=_u(rng, 8, 24) * GB,
        fb_frac=_u(rng, 0.6, 0.95),
        fill=_u(rng, 0.7, 0.92),
        dataset_bytes=_lu(rng, 100, 3000) * GB,
        mmap=False,
        ckpt_bytes=p * 12,
        eval_cost=0.34,
    )


def diffusion(rng: np.random.Generator, board: Board, intent: Bottleneck, gpus: int, per_node: int) -> Workload:
    """Latent diffusion (UNet or DiT): large activations, group norms and attention over many positions."""
    res = int(rng.choice([256, 512, 768, 1024]))
    name, fwd_tf, params = (("unet-860m", 0.4, 860e6), ("dit-xl", 0.12, 675e6))[int(rng.choice(2))]
    scale = (res / 512) ** 2
    fused = rng.random() < (0.25 if intent is Bottleneck.MEMORY else 0.8)
    latents = rng.random() < 0.5  # precomputed latents: no JPEG decode, no VAE encoder
    batch = max(1, int(rng.choice([4, 8, 16, 32]) / max(scale, 1)))
    act_gb = _u(rng, 6, 14) * scale * (1.0 if fused else 3.2)
    return Workload(
        kind="diffusion",
        tags=(f"model:{name}", f"resolution:{res}", f"attention:{'fused' if fused else 'eager'}")
        + (("input:latents",) if latents else ("input:images",)),
        flops=batch * (3 * fwd_tf * scale + (0.0 if latents else 1.1 * scale)) * 1e12,
        kernel_eff=_u(rng, 0.35, 0.6),
        tensor=True,
        hbm_bytes=batch * act_gb * GB,
        launches=_u(rng, 2000, 5000),
        launch_s=_u(rng, 5e-6, 1e-5),
        h2d_bytes=batch * ((res / 8) ** 2 * 4 * 2 if latents else res * res * 3),
        h2d_sync=0.3,
        input_bytes=batch * ((res / 8) ** 2 * 8 if latents else _lu(rng, 300, 1200) * KB * scale),
        files=batch / 1000.0,
        decode_core_s=0.0 if latents else batch * _u(rng, 0.01, 0.04) * scale,
        serial_core_s=0.0,
        workers=int(rng.choice([2, 4, 8])),
        sync_bytes=params * 4,
        sync_factor=2.0,
        alltoall_bytes=0.0,
        tp_bytes=0.0,
        bubble=0.0,
        overlap=_u(rng, 0.5, 0.9),
        host_mem=_u(rng, 10, 30) * GB,
        fb_frac=_u(rng, 0.8, 0.98),
        fill=_u(rng, 0.8, 0.95),
        dataset_bytes=_lu(rng, 200, 5000) * GB,
        mmap=False,
        ckpt_bytes=params * 16,
        eval_cost=0.34,
    )


def rl_env(rng: np.random.Generator, board: Board, intent: Bottleneck, gpus: int, per_node: int) -> Workload:
    """An on-policy RL loop: a rollout of host-side environment steps, then a short update of a small policy."""
    envs = int(rng.choice([16, 32, 64, 128, 256]))
    horizon = int(rng.choice([64, 128, 256]))
    env_ms = _u(rng, 0.3, 2.0) if intent is Bottleneck.CPU else _u(rng, 0.02, 0.5)
    params = _lu(rng, 1e6, 30e6)
    epochs = int(rng.choice([4, 8, 16]))
    samples = envs * horizon
    return Workload(
        kind="rl-env",
        tags=(f"envs:{envs}", f"horizon:{horizon}", f"env-step:{env_ms:.2f}ms"),
        flops=6 * params * samples * epochs + 2 * params * samples,
        kernel_eff=_u(rng, 0.1, 0.3),
        tensor=True,
        hbm_bytes=samples * epochs * 200 * KB,
        launches=epochs * samples / 512 * 120 + horizon * 30,
        launch_s=_u(rng, 8e-6, 2e-5),
        h2d_bytes=samples * 84 * 84 * 4,
        h2d_sync=1.0,
        input_bytes=0.0,
        files=0.0,
        decode_core_s=0.0,
        serial_core_s=samples * env_ms / 1000.0,
        workers=int(rng.choice([1, 2, 4, 8, 16])),
        sync_bytes=params * 4 * epochs,
        sync_factor=2.0,
        alltoall_bytes=0.0,
        tp_bytes=0.0,
        bubble=0.0,
        overlap=0.2,
        host_mem=_u(rng, 4, 16) * GB + envs * 50 * MB,
        fb_frac=_u(rng, 0.2, 0.6),
        fill=_u(rng, 0.2, 0.5),
        dataset_bytes=0.0,
        mmap=False,
        ckpt_bytes=params * 12,
        eval_cost=0.5,
    )


DRAWS: dict[str, WorkloadDraw] = {
    "image-jpeg": image_jpeg,
    "llm-pretrain": llm_pretrain,
    "finetune-smallfiles": finetune_smallfiles,
    "recsys-embedding": recsys_embedding,
    "speech-audio": speech_audio,
    "diffusion": diffusion,
    "rl-env": rl_env,
}


def draw_kind(rng: np.random.Generator, intent: Bottleneck) -> str:
    """A workload kind, leaning towards those that tend to hit the intended stage."""
    return _pick(rng, KINDS, KIND_WEIGHTS[intent])
