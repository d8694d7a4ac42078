"""Hardware, storage, network and workload tables the simulator draws from, with their sources.

Capacities of the GPUs come from :mod:`bottleneck_operator.analysis.features.hardware` (vendors' datasheets); what
is added here is what the exporters show about each part (dcgm-exporter ``modelName``, power, clocks),
the nodes such GPUs usually sit in, and per-sample costs of common training workloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.analysis.features.hardware import GpuSpec, spec_for

GB = 1e9
GIB = 1024**3
MIB = 1024**2
# DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL's unit: DCGM divides NVML's KiB/s by 1000 (docs/telemetry.md).
NVLINK_TOTAL_UNIT_BYTES = 1.024e6
# NVML's clock-event reasons (nvmlClocksEventReasons): the ones the simulator sets, and those that
# slow a loaded GPU (SW power cap, HW slowdown, SW and HW thermal, HW power brake).
CLOCK_REASON_IDLE = 0x1
CLOCK_REASON_SW_POWER_CAP = 0x4
CLOCK_SLOWDOWN_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


@dataclass(frozen=True)
class GpuKind:
    """One simulated GPU part.

    Attributes:
        key: short name used in scenarios and holdout combos.
        model_name: dcgm-exporter's ``modelName`` label for the part.
        tdp_w / idle_w: board power limit and idle draw (vendor datasheets).
        boost_mhz: maximum SM clock (``DCGM_FI_DEV_SM_CLOCK`` when busy and not power-capped).
        gpus_per_node: node sizes the part ships in (cloud instance families).
        cpus_per_gpu: vCPUs per GPU of those nodes (e.g. p4d: 96 vCPU / 8 A100; g5: 4-24 per A10G).
        mem_gib_per_gpu: host RAM per GPU of those nodes.
        prof_partial: profiling groups are multiplexed or missing on this part (T4/L4/A10).
    """

    key: str
    model_name: str
    tdp_w: float
    idle_w: float
    boost_mhz: float
    gpus_per_node: tuple[int, ...]
    cpus_per_gpu: tuple[int, ...]
    mem_gib_per_gpu: tuple[int, ...]
    prof_partial: bool = False

    @property
    def spec(self) -> GpuSpec:
        return spec_for(self.model_name)


GPU_KINDS: dict[str, GpuKind] = {
    # p3.16xlarge / DGX-1: 8x V100 SXM2, 64-80 vCPU, 488-512 GiB
    "V100": GpuKind("V100", "Tesla V100-SXM2-32GB", 300, 40, 1530, (4, 8), (8, 10), (61, 64)),
    # p4d.24xlarge / DGX A100: 8x A100, 96-256 vCPU, 1152 GiB-2 TiB
    "A100": GpuKind("A100", "NVIDIA A100-SXM4-80GB", 400, 55, 1410, (8,), (12, 16, 32), (144, 256)),
    # p5.48xlarge / DGX H100: 8x H100 SXM5, 192-224 vCPU, 2 TiB
    "H100": GpuKind("H100", "NVIDIA H100 80GB HBM3", 700, 70, 1980, (8,), (24, 28), (256,)),
    "H100-PCIe": GpuKind("H100-PCIe", "NVIDIA H100 PCIe", 350, 50, 1755, (2, 4, 8), (8, 16, 24), (64, 128)),
    # g6 (L4), g4dn (T4), g5 (A10G): 1-8 GPUs, 4-48 vCPU per GPU
    "L4": GpuKind("L4", "NVIDIA L4", 72, 16, 2040, (1, 4, 8), (4, 8, 12, 24), (16, 32, 96), True),
    "T4": GpuKind("T4", "Tesla T4", 70, 10, 1590, (1, 4, 8), (4, 8, 12), (16, 32, 48), True),
    "A10G": GpuKind("A10G", "NVIDIA A10G", 300, 25, 1710, (1, 4, 8), (4, 8, 12, 24), (16, 32, 96), True),
}


@dataclass(frozen=True)
class StorageKind:
    """Where the training data lives.

    Attributes:
        key: short name.
        bw_bps: (low, high) sustained read throughput per node, bytes/s.
        network: True when reads travel over the NIC (NFS, object-store FUSE): they show as node
            network receive bytes and iowait, never as block-device reads (node_disk_*, cAdvisor fs_reads,
            cgroup io.stat all stay near zero).
        device: block device name node-exporter reports for local storage.
        iowait_factor: how much of the waiting shows as iowait / io pressure (FUSE waits sit in the
            request queue and show less of it than NFS or block I/O; HTTP readers wait on sockets and
            show none).
    """

    key: str
    bw_bps: tuple[float, float]
    network: bool
    device: str
    iowait_factor: float


STORAGE_KINDS: dict[str, StorageKind] = {
    # Object store through a FUSE mount (s3fs, mountpoint-s3, gcsfuse): far below local NVMe.
    "object-fuse": StorageKind("object-fuse", (0.1 * GB, 1.2 * GB), True, "nvme0n1", 0.5),
    # Object store read over HTTP by the loader itself (boto3, WebDataset/fsspec streams): its workers
    # sleep on sockets in S state, so no iowait, no D-state tasks and no I/O pressure.
    "object-http": StorageKind("object-http", (0.1 * GB, 2.0 * GB), True, "nvme0n1", 0.0),
    # NFS / EFS: Amazon EFS gives one client up to ~1.5 GiB/s (elastic throughput).
    "nfs": StorageKind("nfs", (0.1 * GB, 1.5 * GIB), True, "nvme0n1", 1.0),
    # SATA SSD ~0.55 GB/s; NVMe Gen3 ~3.5 GB/s, Gen4 ~7 GB/s (vendor sequential-read figures).
    "sata-ssd": StorageKind("sata-ssd", (0.45 * GB, 0.55 * GB), False, "sda", 1.0),
    "nvme-gen3": StorageKind("nvme-gen3", (2.5 * GB, 3.5 * GB), False, "nvme1n1", 1.0),
    "nvme-gen4": StorageKind("nvme-gen4", (5.0 * GB, 7.0 * GB), False, "nvme1n1", 1.0),
}

# Ethernet 10-400 Gb/s; InfiniBand EDR 100, HDR 200, NDR 400 Gb/s per port.
NIC_GBPS: tuple[int, ...] = (10, 25, 50, 100, 200, 400)


@dataclass(frozen=True)
class Workload:
    """Per-sample costs of one kind of training job.

    Attributes:
        key: short name.
        a100_sps: (low, high) compute-bound samples/s of one A100 (ResNet-50 v1.5 AMP: ~2,470 img/s,
            NVIDIA DeepLearningExamples); other GPUs scale by dense TFLOPS.
        bytes_per_sample: (low, high) bytes read from storage per sample (ImageNet JPEG ~110 kB).
        decode_core_s: (low, high) CPU core-seconds per sample (one core decodes+augments 50-200
            ImageNet JPEGs/s, i.e. 5-20 ms).
        h2d_bytes: (low, high) bytes copied host to device per sample (224x224x3 uint8 = 150 kB,
            float32 = 600 kB).
        params: (low, high) trainable parameters (gradients all-reduced each step).
        grad_bytes_per_param: 2 for bf16/fp16 gradients, 4 for fp32.
        batch: (low, high) per-GPU batch size.
        dram_ratio: (low, high) DRAM time / math time of its kernels when not bandwidth-bound.
        tensor_eff: (low, high) tensor-pipe activity while its kernels run.
    """

    key: str
    a100_sps: tuple[float, float]
    bytes_per_sample: tuple[float, float]
    decode_core_s: tuple[float, float]
    h2d_bytes: tuple[float, float]
    params: tuple[float, float]
    grad_bytes_per_param: int
    batch: tuple[int, int]
    dram_ratio: tuple[float, float]
    tensor_eff: tuple[float, float]


WORKLOADS: dict[str, Workload] = {
    # ResNet-50/EfficientNet on ImageNet JPEGs: 2,470 img/s AMP, 938 TF32 on one A100.
    "vision-cnn": Workload(
        "vision-cnn",
        (900, 2600),
        (80e3, 160e3),
        (1 / 200, 1 / 50),
        (150e3, 600e3),
        (11e6, 60e6),
        4,
        (64, 256),
        (0.3, 0.7),
        (0.25, 0.6),
    ),
    "vision-vit": Workload(
        "vision-vit",
        (300, 1100),
        (80e3, 160e3),
        (1 / 180, 1 / 60),
        (150e3, 600e3),
        (86e6, 630e6),
        2,
        (32, 128),
        (0.2, 0.5),
        (0.4, 0.75),
    ),
    # Pre-tokenised text (2-8 kB a sequence), 1-13 B parameters: little I/O and CPU, heavy all-reduce.
    "llm": Workload(
        "llm",
        (0.8, 12),
        (4e3, 16e3),
        (1e-4, 1e-3),
        (4e3, 32e3),
        (1e9, 13e9),
        2,
        (1, 8),
        (0.15, 0.45),
        (0.45, 0.8),
    ),
    # Speech/video clips: big samples, expensive decode.
    "av": Workload(
        "av",
        (150, 600),
        (300e3, 2e6),
        (1 / 40, 1 / 8),
        (0.5e6, 4e6),
        (30e6, 300e6),
        2,
        (8, 64),
        (0.3, 0.6),
        (0.3, 0.6),
    ),
    # Recommendation: tiny samples, embedding lookups (bandwidth-heavy kernels).
    "recsys": Workload(
        "recsys",
        (20e3, 120e3),
        (300, 2e3),
        (5e-6, 3e-5),
        (1e3, 8e3),
        (50e6, 500e6),
        4,
        (1024, 8192),
        (0.5, 0.95),
        (0.05, 0.3),
    ),
}
