"""Published figures of the boards, storage, links and workloads a Job is drawn on.

Every figure is cited in docs/familyal.md: the GPU rows, PCIe, storage and fabric rates come from
shared/TELEMETRY.md ("Hardware figures"); TDP, boost clock and the FP32/TF32 ratio from NVIDIA's
datasheets. Workload costs are anchored on TELEMETRY.md's input-pipeline figures (50-200 JPEGs/s
per core, ResNet-50 at ~2,470 img/s on one A100 with AMP); the rest are modelling choices, named
as such in the doc.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Board:
    """One GPU type.

    Attributes:
        key: short id used in tags.
        model_name: dcgm-exporter's ``modelName``.
        tensor_tflops: dense BF16/FP16 tensor throughput.
        fp32_slowdown: how much slower matmuls run without mixed precision (TF32 or FP32 pipes).
        tf32: whether non-AMP matmuls still use tensor cores (TF32, Ampere and newer).
        mem_gb: framebuffer size.
        hbm_gbps: memory bandwidth, GB/s.
        nvlink_gbps: NVLink bandwidth, both directions together (0: none).
        pcie_gen: host PCIe generation.
        tdp_w: board power (the default enforced limit).
        max_clock_mhz: maximum SM boost clock.
    """

    key: str
    model_name: str
    tensor_tflops: float
    fp32_slowdown: float
    tf32: bool
    mem_gb: float
    hbm_gbps: float
    nvlink_gbps: float
    pcie_gen: int
    tdp_w: float
    max_clock_mhz: float


BOARDS: tuple[Board, ...] = (
    Board("v100-sxm2", "Tesla V100-SXM2-32GB", 125.0, 8.0, False, 32.0, 900.0, 300.0, 3, 300.0, 1530.0),
    Board("a100-sxm4", "NVIDIA A100-SXM4-80GB", 312.0, 2.0, True, 80.0, 2039.0, 600.0, 4, 400.0, 1410.0),
    Board("h100-sxm5", "NVIDIA H100 80GB HBM3", 989.0, 2.0, True, 80.0, 3350.0, 900.0, 5, 700.0, 1980.0),
    Board("h100-pcie", "NVIDIA H100 PCIe", 756.0, 2.0, True, 80.0, 2000.0, 0.0, 5, 350.0, 1755.0),
    Board("l4", "NVIDIA L4", 121.0, 2.0, True, 24.0, 300.0, 0.0, 4, 72.0, 2040.0),
    Board("a10", "NVIDIA A10", 125.0, 2.0, True, 24.0, 600.0, 0.0, 4, 150.0, 1695.0),
    Board("t4", "Tesla T4", 65.0, 8.0, False, 16.0, 320.0, 0.0, 3, 70.0, 1590.0),
)
BOARD_BY_KEY = {b.key: b for b in BOARDS}

# PCIe x16 per direction, GB/s (TELEMETRY.md, derived from per-lane rates).
PCIE_GBPS = {3: 15.8, 4: 31.5, 5: 63.0}


@dataclass(frozen=True)
class Storage:
    """Where the dataset lives.

    Attributes:
        key: short id used in tags.
        gbps: sequential read bandwidth for the node (local) or per client (remote), GB/s.
        latency_s: median latency of one request as a reader sees it.
        tail_sigma: log-normal sigma of that latency (object stores have long tails).
        block: reads show as block-device I/O (node disk, cgroup io.stat, cAdvisor fs reads).
        pod_net: reads cross the pod's own network namespace (an HTTP client in the pod).
        d_state: readers wait in D state (iowait, io pressure); socket readers wait in S state.
        network: the storage is remote (mechanism ``network-storage``).
    """

    key: str
    gbps: float
    latency_s: float
    tail_sigma: float
    block: bool
    pod_net: bool
    d_state: bool
    network: bool


STORAGES: tuple[Storage, ...] = (
    Storage("nvme-gen4", 7.0, 0.0002, 0.5, True, False, True, False),
    Storage("nvme-gen3", 3.5, 0.0003, 0.5, True, False, True, False),
    Storage("sata-ssd", 0.55, 0.0008, 0.6, True, False, True, False),
    Storage("nfs", 0.6, 0.004, 0.8, False, False, True, True),
    Storage("efs", 1.5 * 1.0737, 0.006, 0.9, False, False, True, True),
    Storage("object-store", 0.9, 0.030, 1.1, False, True, False, True),
)
STORAGE_BY_KEY = {s.key: s for s in STORAGES}


@dataclass(frozen=True)
class Fabric:
    """The network between nodes.

    Attributes:
        key: short id used in tags.
        gbit: per-port line rate, Gb/s.
        rdma: traffic bypasses the kernel's network stack (node_infiniband_* counters see it, netdev does not).
        efficiency: share of line rate NCCL reaches (modelling choice).
    """

    key: str
    gbit: float
    rdma: bool
    efficiency: float


FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-hdr", 200.0, True, 0.85),
    Fabric("ib-ndr", 400.0, True, 0.85),
    Fabric("roce-100", 100.0, True, 0.8),
    Fabric("roce-200", 200.0, True, 0.8),
    Fabric("eth-25-tcp", 25.0, False, 0.6),
    Fabric("eth-100-tcp", 100.0, False, 0.55),
)
FABRIC_BY_KEY = {f.key: f for f in FABRICS}


@dataclass(frozen=True)
class Workload:
    """Per-sample costs of one kind of training (medians; draws scatter them).

    Attributes:
        key: short id used in tags.
        gflop: forward+backward GFLOP per sample done by tensor-core matmuls/convolutions.
        hbm_mb: MB of HBM traffic per sample in memory-bound kernels (elementwise, norms, embeddings).
        mm_eff: share of tensor peak the matmul kernels reach.
        sample_kb: stored bytes per sample, KB.
        size_sigma: log-normal sigma of sample size (image sizes, clip and utterance lengths).
        decode_ms: CPU milliseconds to decode and augment one sample on one core.
        h2d_kb: bytes per sample copied host to device, KB (uint8 tensors).
        kernels: kernels launched per iteration.
        params_m: parameters, millions (gradient bytes for the all-reduce).
        batch: per-GPU batch sizes drawn from.
        pad: whether batches are padded to their longest sample (compute follows the max length).
    """

    key: str
    gflop: float
    hbm_mb: float
    mm_eff: float
    sample_kb: float
    size_sigma: float
    decode_ms: float
    h2d_kb: float
    kernels: int
    params_m: float
    batch: tuple[int, ...]
    pad: bool


WORKLOADS: tuple[Workload, ...] = (
    Workload("resnet-jpeg", 12.3, 250.0, 0.15, 110.0, 0.6, 8.0, 150.0, 480, 25.6, (128, 192, 256), False),
    Workload("vit-jpeg", 52.8, 400.0, 0.45, 110.0, 0.6, 8.0, 150.0, 700, 86.0, (64, 128, 256), False),
    Workload("video-clips", 150.0, 2000.0, 0.3, 2500.0, 0.9, 180.0, 2400.0, 900, 30.0, (8, 16, 32), False),
    Workload("speech", 20.0, 250.0, 0.3, 300.0, 0.8, 20.0, 200.0, 650, 100.0, (32, 64, 96), True),
    Workload("llm-packed", 0.0, 0.0, 0.5, 8.0, 0.1, 0.3, 8.0, 1200, 350.0, (4, 8, 16), False),
    Workload("llm-padded", 0.0, 0.0, 0.45, 2.0, 0.7, 1.5, 2.0, 1000, 125.0, (8, 16, 32), True),
    Workload("recsys-embeddings", 0.4, 40.0, 0.3, 1.0, 0.3, 0.05, 1.0, 350, 50.0, (4096, 8192, 16384), False),
)
WORKLOAD_BY_KEY = {w.key: w for w in WORKLOADS}

# Tokens per sample of the LLM workloads (packed; padded batches hold a quarter of it on median), and their per-token cost: 6 FLOP per parameter per token
# (forward 2, backward 4) and the bytes per FLOP of their unfused elementwise kernels.
LLM_TOKENS = 2048
LLM_HBM_BYTES_PER_FLOP = 0.003
