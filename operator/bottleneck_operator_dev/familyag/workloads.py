"""The models family AG trains, sized from their published figures.

Per-sample training FLOPs are three times the forward FLOPs the papers give (forward, backward for
activations, backward for weights), or ``6 N`` per token plus attention for decoder LLMs (Kaplan et
al. 2020). Byte and CPU costs per sample come from the datasets' published sizes and round,
assumed decode rates; see docs/familyag.md for the sources and which figures are assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass

KB, MB, GB = 1e3, 1e6, 1e9


@dataclass(frozen=True)
class ModelSpec:
    """One model and the data it is usually trained on.

    Attributes:
        kind: workload kind (tag "workload:<kind>").
        name: model name (tag "model:<name>").
        params: parameters.
        trainable: parameters that get gradients (LoRA trains a small share).
        flops: training FLOPs per sample.
        tensor_share: share of those FLOPs in tensor-core GEMMs and convolutions.
        hbm: device-memory bytes per sample moved by the kernels outside the GEMM tiles.
        kernels: kernel launches per step in eager mode (forward, backward, optimizer).
        sample_bytes: stored bytes per sample (compressed image or audio, tokens, records).
        h2d: bytes per sample copied host to device (decoded tensors, token ids).
        cpu: loader CPU seconds per sample on one core (decode, augment, tokenise, parse).
        dataset: bytes of the training set.
        batches: per-GPU micro-batch sizes in samples.
        comm: how gradients travel: "ddp", "fsdp", "moe" (all-to-all) or "embed" (sharded tables).
        min_memory: GPU memory it needs at the smallest batch, bytes.
        gather: bytes per sample gathered on the host from embedding tables (recommenders).
        tables: bytes of host-resident embedding tables (recommenders).
        a2a: bytes per sample each GPU sends in all-to-all exchanges per step (MoE, sharded tables).
        files: the data usually sits in one file per sample (else in large shards).
    """

    kind: str
    name: str
    params: float
    trainable: float
    flops: float
    tensor_share: float
    hbm: float
    kernels: int
    sample_bytes: float
    h2d: float
    cpu: float
    dataset: float
    batches: tuple[int, ...]
    comm: str
    min_memory: float
    gather: float = 0.0
    tables: float = 0.0
    a2a: float = 0.0
    files: bool = False


def _llm_flops(params: float, layers: int, width: int, seq: int, per_token: float = 6.0) -> float:
    """Training FLOPs of one sequence: ``per_token * N`` per token plus the attention score matmuls."""
    return per_token * params * seq + 12.0 * layers * width * seq * seq


def _llm_hbm(layers: int, width: int, seq: int) -> float:
    """Device-memory bytes of one sequence in norms, activations and residuals (about 40 passes of bf16)."""
    return layers * seq * width * 2.0 * 40.0


# ImageNet-1k: 1.28 M training JPEGs, ~110 KB each (~140 GB); one core decodes and augments 50-200 a second.
def _image(
    kind: str,
    name: str,
    params: float,
    flops: float,
    tensor: float,
    hbm: float,
    kernels: int,
    batches: tuple[int, ...],
    memory: float,
) -> ModelSpec:
    return ModelSpec(
        kind,
        name,
        params,
        params,
        flops,
        tensor,
        hbm,
        kernels,
        110 * KB,
        150.5 * KB,
        8e-3,
        140 * GB,
        batches,
        "ddp",
        memory,
        files=True,
    )


# LibriSpeech 960 h (~60 GB of FLAC), utterances ~15 s; FLAC decode (and log-mel features) on the CPU.
def _speech(
    name: str,
    params: float,
    flops: float,
    hbm: float,
    kernels: int,
    h2d: float,
    cpu: float,
    batches: tuple[int, ...],
    memory: float,
) -> ModelSpec:
    return ModelSpec(
        "speech",
        name,
        params,
        params,
        flops,
        0.85,
        hbm,
        kernels,
        290 * KB,
        h2d,
        cpu,
        60 * GB,
        batches,
        "ddp",
        memory,
        files=True,
    )


def _llm(
    kind: str,
    name: str,
    shape: tuple[float, int, int, int],
    kernels: int,
    cpu: float,
    dataset: float,
    batches: tuple[int, ...],
    comm: str,
    memory: float,
    *,
    trainable: float = 0.0,
    per_token: float = 6.0,
) -> ModelSpec:
    params, layers, width, seq = shape
    return ModelSpec(
        kind,
        name,
        params,
        trainable or params,
        _llm_flops(params, layers, width, seq, per_token),
        0.97,
        _llm_hbm(layers, width, seq),
        kernels,
        2.0 * seq,
        16.0 * seq,
        cpu,
        dataset,
        batches,
        comm,
        memory,
    )


# Criteo 1TB click logs: 13 dense and 26 categorical features per record, 128-wide fp32 embeddings.
_CRITEO_ROW = 26 * 128 * 4.0

MODELS: tuple[ModelSpec, ...] = (
    # He et al. 2016: ResNet-50, 25.6 M parameters, ~3.8 G multiply-adds (7.7 GFLOPs) forward at 224 px.
    _image("vision-cnn", "resnet50", 25.6e6, 23e9, 0.9, 380 * MB, 560, (64, 128, 192, 256), 8 * GB),
    # Tan and Le 2019: EfficientNet-B0, 5.3 M parameters, 0.39 GFLOPs forward; depthwise convs are bandwidth-bound.
    _image("vision-cnn", "efficientnet-b0", 5.3e6, 1.2e9, 0.85, 250 * MB, 1400, (32, 64, 128, 256), 6 * GB),
    # Touvron et al. 2021 (DeiT): ViT-B/16, 86 M parameters, 17.6 GFLOPs forward.
    _image("vision-vit", "vit-b16", 86e6, 53e9, 0.95, 350 * MB, 900, (64, 128, 256), 12 * GB),
    # Dosovitskiy et al. 2021: ViT-L/16, 307 M parameters, 61.6 GFLOPs forward.
    _image("vision-vit", "vit-l16", 307e6, 185e9, 0.96, 900 * MB, 1800, (16, 32, 64), 20 * GB),
    # Brown et al. 2020, table 2.1: GPT-3 Medium (350 M, 24 layers, d 1024) and XL (1.3 B, 24, d 2048), 2,048 tokens.
    _llm("llm-pretrain", "gpt-350m", (350e6, 24, 1024, 2048), 1140, 0.1e-3, 600 * GB, (4, 8, 16), "ddp", 12 * GB),
    _llm("llm-pretrain", "gpt-1.3b", (1.3e9, 24, 2048, 2048), 1140, 0.1e-3, 600 * GB, (2, 4, 8), "ddp", 30 * GB),
    # Touvron et al. 2023: Llama 2 7B (32 layers, d 4096) and 13B (40, d 5120), 4,096-token context.
    _llm("llm-pretrain", "llama2-7b", (6.7e9, 32, 4096, 4096), 1500, 0.2e-3, 2000 * GB, (1, 2, 4), "fsdp", 40 * GB),
    _llm("llm-pretrain", "llama2-13b", (13e9, 40, 5120, 4096), 1860, 0.2e-3, 2000 * GB, (1, 2), "fsdp", 70 * GB),
    # Fine-tuning Llama 2 7B on instruction data: LoRA (~20 M trainable, ~4 N FLOPs a token) or full (FSDP);
    # the text is tokenised in the loader (~3 ms of a core per 2,048-token sample, assumed).
    _llm(
        "llm-finetune",
        "llama2-7b-lora",
        (6.7e9, 32, 4096, 2048),
        2000,
        3e-3,
        2 * GB,
        (1, 2, 4, 8),
        "ddp",
        20 * GB,
        trainable=20e6,
        per_token=4.0,
    ),
    _llm("llm-finetune", "llama2-7b-full", (6.7e9, 32, 4096, 2048), 1500, 3e-3, 2 * GB, (1, 2, 4), "fsdp", 40 * GB),
    _llm("llm-finetune", "gpt-1.3b-sft", (1.3e9, 24, 2048, 2048), 1140, 3e-3, 1 * GB, (2, 4, 8), "ddp", 30 * GB),
    # A small mixture of experts (8 experts, top-2, 24 layers, d 2048; ~1.6 B active of ~8 B), after Switch/Mixtral:
    # each MoE layer sends every token's activations out and back, forward and backward.
    ModelSpec(
        "llm-pretrain",
        "moe-8x1b",
        8e9,
        8e9,
        _llm_flops(1.6e9, 24, 2048, 2048),
        0.95,
        _llm_hbm(24, 2048, 2048) * 1.5,
        2200,
        4 * KB,
        32 * KB,
        0.1e-3,
        600 * GB,
        (2, 4, 8),
        "moe",
        60 * GB,
        a2a=2048 * 2048 * 2.0 * 2 * 2 * 2 * 24,
    ),
    # Naumov et al. 2019 (DLRM) on Criteo 1TB: ~14 MFLOPs of MLPs per record, 26 lookups of 128 x fp32;
    # tables either on the host (gathered by the CPU, copied over PCIe) or sharded over the GPUs.
    ModelSpec(
        "recsys",
        "dlrm-host-tables",
        25e9,
        2.5e6,
        14e6,
        0.7,
        60 * KB,
        150,
        160.0,
        160.0 + _CRITEO_ROW,
        0.6e-6,
        1000 * GB,
        (8192, 16384, 32768, 65536),
        "ddp",
        6 * GB,
        gather=_CRITEO_ROW,
        tables=100 * GB,
    ),
    ModelSpec(
        "recsys",
        "dlrm-gpu-tables",
        25e9,
        2.5e6,
        14e6,
        0.7,
        60 * KB + 3 * _CRITEO_ROW / 0.35,
        180,
        160.0,
        160.0,
        0.6e-6,
        1000 * GB,
        (8192, 16384, 32768, 65536),
        "embed",
        20 * GB,
        a2a=_CRITEO_ROW,
    ),
    # Gulati et al. 2020: Conformer-L, 118 M parameters (~20 GFLOPs per second of audio to train, derived).
    _speech("conformer-l", 118e6, 300e9, 600 * MB, 2400, 480 * KB, 45e-3, (16, 32, 64), 16 * GB),
    # Baevski et al. 2020: wav2vec 2.0 Base, 95 M parameters, raw 16 kHz waveform input.
    _speech("wav2vec2-base", 95e6, 430e9, 500 * MB, 1600, 960 * KB, 25e-3, (8, 16, 32), 14 * GB),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(m.kind for m in MODELS))


def models_of(kind: str, gpu_memory: float) -> tuple[ModelSpec, ...]:
    """The models of one kind that fit a GPU of this memory at their smallest batch (FSDP shards them)."""
    return tuple(m for m in MODELS if m.kind == kind and m.min_memory <= gpu_memory)
