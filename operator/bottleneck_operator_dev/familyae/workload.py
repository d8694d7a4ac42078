"""What a Job trains and how: the model, its per-sample costs, and the Job's whole configuration.

A model's costs are per training sample: the math (FLOPs), the device-memory traffic, the kernels
the host launches per step, the bytes read from storage, the CPU time to decode a sample and the
bytes copied to the GPU. The figures come from published model cards and throughput results (see
docs/familyae.md); where none exists (how much of a step's GPU time streams memory), the share is
drawn from a range anchored on a published throughput.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyae.hardware import A100, GIB, Fabric, Gpu, NodeShape, Storage, pcie_gbs

# Achieved fraction of the tensor peak that the calibration point implies (assumed share of device
# memory traffic in a step, see `hbm_share`): ResNet-50 AMP on an A100 at ~2,470 img/s [TELEMETRY].
VISION_MM_EFF = {"resnet50": 0.16, "vit-b16": 0.40}
# Assumed: large transformer GEMMs with fused attention reach about half of the tensor peak.
LM_MM_EFF = 0.50
# Assumed: device memory streams at ~80 % of its datasheet bandwidth in element-wise kernels.
HBM_EFF = 0.80
# Adam(W) with FP32 master weights reads param, grad and two moments and writes three: ~30 B/param.
OPT_BYTES_PER_PARAM = 30.0


@dataclass(frozen=True)
class ModelKind:
    """A model family and size.

    Attributes:
        key: tag.
        family: "vision" or "lm".
        params: parameters.
        layers: transformer layers (LM) or blocks (vision).
        width: hidden size (LM); 0 for vision.
        fwd_gflops: forward GFLOPs per 224-px image (vision); 0 for LM (computed from the size).
        fwd_kernels: kernels one forward pass launches (assumed from the layer count).
        act_gb: activation memory per sample at the reference size, GB (assumed).
        hbm_share: range of the device-memory share of a healthy step (assumed).
    """

    key: str
    family: str
    params: float
    layers: int
    width: int
    fwd_gflops: float
    fwd_kernels: int
    act_gb: float
    hbm_share: tuple[float, float]


# [TORCHVISION FLOPS]: ResNet-50 25.6 M params, ~4.1 GFLOPs; ViT-B/16 86.6 M, 17.6 GFLOPs.
RESNET50 = ModelKind("resnet50", "vision", 25.6e6, 16, 0, 4.1, 170, 0.10, (0.32, 0.42))
VIT_B16 = ModelKind("vit-b16", "vision", 86.6e6, 12, 768, 17.6, 300, 0.12, (0.22, 0.33))
# GPT-style decoder sizes (layers, width) as in the GPT-3 paper's small models [GPT3].
GPT_SIZES = (
    ModelKind("gpt-125m", "lm", 125e6, 12, 768, 0, 12 * 22, 0, (0.12, 0.25)),
    ModelKind("gpt-350m", "lm", 350e6, 24, 1024, 0, 24 * 22, 0, (0.12, 0.25)),
    ModelKind("gpt-760m", "lm", 760e6, 24, 1536, 0, 24 * 22, 0, (0.10, 0.22)),
    ModelKind("gpt-1.3b", "lm", 1.3e9, 24, 2048, 0, 24 * 22, 0, (0.10, 0.22)),
)


@dataclass(frozen=True)
class JobConfig:
    """Everything the stage account and the exporters need about one Job.

    Per-sample figures are per training sample (an image, a sequence); per-step figures per GPU.
    """

    # --- hardware
    gpu: Gpu
    node: NodeShape
    gpus_per_pod: int
    pods: int
    pods_per_node: int
    neighbours: int  # other pods on each of the Job's nodes
    neighbour_cores: float  # cores those neighbours use, on average
    fabric: Fabric
    net_eff: float  # share of the fabric's line rate NCCL reaches
    intra: str  # "nvlink", "pcie" (P2P through switches) or "shm" (through host memory)
    intra_gbs: float  # achieved intra-node collective bandwidth per GPU and direction
    pcie_gen: int
    pcie_width: int
    pageable: float  # 1.0 with pinned host buffers, below 1 with pageable ones
    storage: Storage
    swap: str  # "none", "disk" or "zram"
    power_limit_w: float
    # --- workload
    model: ModelKind
    precision: str  # "bf16", "fp16", "tf32" or "fp32"
    size: int  # image side (vision) or sequence length (lm)
    batch: int  # per GPU
    flops: float  # per sample
    mm_eff: float  # achieved share of the math peak in GEMM/conv kernels
    hbm_bytes: float  # per sample
    kernels: float  # per step
    launch_s: float  # host time to issue one kernel
    read_bytes: float  # per sample from storage
    read_ops: float  # storage requests per sample
    dataset_bytes: float
    decode_s: float  # CPU core-seconds per sample
    gpu_decode: bool  # decode on the GPU (DALI) instead of the CPU
    h2d_bytes: float  # per sample
    grad_bytes: float  # all-reduce payload per step
    workers: int  # DataLoader workers per rank (0: loading in the training process)
    cpu_limit: float  # cores per pod (CFS quota); 0 = none
    mem_limit: float  # bytes per pod
    anon_bytes: float  # resident anonymous memory of a healthy pod
    cache_bytes: float = 0.0  # an in-memory dataset cache
    fault_pages: float = 0.0  # swap-ins (or refaults) per sample
    fault_lat_s: float = 0.0  # stall per fault
    oom_per_hour: float = 0.0
    fault: str = ""  # the injected misconfiguration
    variant: str = ""  # how it was injected

    @property
    def nodes(self) -> int:
        return -(-self.pods // self.pods_per_node)

    @property
    def gpus_per_node(self) -> int:
        """GPUs of this Job on one node."""
        return self.gpus_per_pod * self.pods_per_node

    @property
    def world(self) -> int:
        return self.gpus_per_pod * self.pods

    @property
    def pod_share(self) -> float:
        """The pod's share of its node (by GPUs): how much of the node's CPU and memory it may use."""
        return self.gpus_per_pod / self.node.gpus

    @property
    def free_cores(self) -> float:
        """Cores one pod can get on its node: what neighbours and the system leave, split between the Job's pods."""
        return max(1.0, (self.node.cpus - self.neighbour_cores - 2.0) / self.pods_per_node)

    @property
    def cpu_capacity(self) -> float:
        """Cores the pod can use: its CFS quota where one is set, else the free cores."""
        return min(self.cpu_limit, self.free_cores) if self.cpu_limit > 0 else self.free_cores

    @property
    def pcie_gbs(self) -> float:
        """Achieved pinned host-to-device bandwidth of each GPU's link, GB/s."""
        return pcie_gbs(self.pcie_gen, self.pcie_width)


def math_peak(gpu: Gpu, precision: str) -> float:
    """FLOP/s the GPU's math units reach at their peak for a precision."""
    if precision in ("bf16", "fp16"):
        return gpu.tensor_tflops * 1e12
    if precision == "tf32" and gpu.tf32_tflops > 0:
        return gpu.tf32_tflops * 1e12
    return gpu.fp32_tflops * 1e12


def precision_factors(gpu: Gpu, precision: str, mm_eff: float) -> tuple[float, float]:
    """(GEMM efficiency, activation-bytes factor) of a precision relative to mixed precision.

    FP32 without TF32 runs GEMMs on the CUDA cores, which reach a larger share of their (much lower)
    peak (assumed 0.55); FP32 and TF32 keep activations in 4 bytes instead of 2.
    """
    if precision in ("bf16", "fp16"):
        return mm_eff, 1.0
    if precision == "tf32" and gpu.tf32_tflops > 0:
        return mm_eff * 0.85, 1.8
    return max(0.55, mm_eff), 1.8


def vision_costs(kind: ModelKind, size: int) -> tuple[float, float]:
    """(training FLOPs per image, activation GB per image) at an image side (FLOPs grow with area)."""
    area = (size / 224.0) ** 2
    return 3.0 * kind.fwd_gflops * 1e9 * area, kind.act_gb * area


def lm_costs(kind: ModelKind, seq: int) -> tuple[float, float]:
    """(training FLOPs per sequence, activation GB per sequence).

    6 N FLOPs per token plus 12 L d S for attention [KAPLAN]; activations ~34 bytes per token, layer
    and hidden unit with fused attention [MEGATRON ACT].
    """
    per_token = 6.0 * kind.params + 12.0 * kind.layers * kind.width * seq
    return seq * per_token, 34.0 * seq * kind.width * kind.layers / 1e9


def hbm_bytes_for(flops: float, mm_eff: float, share: float) -> float:
    """Device-memory bytes per sample that make `share` of the step stream memory on the reference GPU.

    The share is what the model's element-wise, normalisation and optimizer kernels take of a healthy
    step on an A100 (assumed range per model); the bytes then scale to any GPU by its bandwidth.
    """
    t_math = flops / (A100.tensor_tflops * 1e12 * mm_eff)
    t_mem = t_math * share / (1.0 - share)
    return t_mem * A100.hbm_gbs * 1e9 * HBM_EFF


def draw_model(rng: np.random.Generator, needs: frozenset[str]) -> ModelKind:
    """A model kind, restricted to what the fault needs (vision for decode faults, large LMs for comms)."""
    if "vision" in needs:
        return RESNET50 if rng.random() < 0.6 else VIT_B16
    if "lm" in needs or "big_grads" in needs:
        first = 1 if "big_grads" in needs else 0
        return GPT_SIZES[int(rng.integers(first, len(GPT_SIZES)))]
    pick = rng.random()
    if pick < 0.35:
        return RESNET50
    if pick < 0.55:
        return VIT_B16
    return GPT_SIZES[int(rng.integers(0, len(GPT_SIZES)))]


def fits_batch(gpu: Gpu, kind: ModelKind, act_gb: float, candidates: tuple[int, ...]) -> int:
    """The largest batch whose weights, optimizer state and activations fit in ~85 % of device memory."""
    state_gb = kind.params * 16.0 / 1e9  # weights, grads and Adam moments in mixed precision
    best = candidates[0]
    for b in candidates:
        if state_gb + b * act_gb <= 0.85 * gpu.mem_gib * GIB / 1e9:
            best = b
    return best
