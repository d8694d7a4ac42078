"""Published hardware and workload figures family S draws from (sources in docs/familys.md).

Every number here is a datasheet figure, a published throughput, or derived from them as the doc
says; nothing is fitted to any model's output.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
MB = 1e6
KB = 1e3


@dataclass(frozen=True)
class Gpu:
    """One board as its datasheet describes it.

    Attributes:
        model_name: dcgm-exporter's ``modelName`` label.
        tflops: dense BF16/FP16 tensor TFLOPS.
        hbm_bps: memory bandwidth, B/s.
        memory_gb: framebuffer, GB.
        tdp_w: board power limit at default, W.
        idle_w: power with the context up and no kernel running, W (about a fifth of TDP).
        max_clock_mhz: maximum SM boost clock, MHz.
        nvlink_bps: NVLink bandwidth per direction per GPU, B/s (0: none).
        pcie_bps: host PCIe x16 per direction, B/s.
    """

    model_name: str
    tflops: float
    hbm_bps: float
    memory_gb: float
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    nvlink_bps: float
    pcie_bps: float


PCIE_GEN3, PCIE_GEN4, PCIE_GEN5 = 15.8 * GB, 31.5 * GB, 63.0 * GB

GPUS: dict[str, Gpu] = {
    "V100": Gpu("Tesla V100-SXM2-32GB", 125.0, 900 * GB, 32, 300, 55, 1530, 150 * GB, PCIE_GEN3),
    "A100": Gpu("NVIDIA A100-SXM4-80GB", 312.0, 2039 * GB, 80, 400, 60, 1410, 300 * GB, PCIE_GEN4),
    "H100": Gpu("NVIDIA H100 80GB HBM3", 989.0, 3350 * GB, 80, 700, 90, 1980, 450 * GB, PCIE_GEN5),
    "H100PCIe": Gpu("NVIDIA H100 PCIe", 756.0, 2000 * GB, 80, 350, 50, 1755, 0.0, PCIE_GEN5),
    "L4": Gpu("NVIDIA L4", 121.0, 300 * GB, 24, 72, 16, 2040, 0.0, PCIE_GEN4),
    "A10": Gpu("NVIDIA A10", 125.0, 600 * GB, 24, 150, 30, 1695, 0.0, PCIE_GEN4),
    "T4": Gpu("Tesla T4", 65.0, 320 * GB, 16, 70, 12, 1590, 0.0, PCIE_GEN3),
}

# The A100's figures are the reference the workloads' per-sample GPU times were published against.
REFERENCE_GPU = GPUS["A100"]


@dataclass(frozen=True)
class Workload:
    """One MLPerf Training reference benchmark as its data and model make it behave.

    Attributes:
        name: the benchmark.
        sample_bytes: bytes read from storage per sample.
        cpu_s: CPU seconds (one core) to decode/augment/collate one sample.
        h2d_bytes: bytes copied host to device per sample.
        gpu_s: GPU seconds per sample (forward + backward + optimizer) on an A100 at the usual batch.
        hbm_share: share of that GPU time in bandwidth-bound kernels (norms, elementwise, lookups).
        tensor: tensor-pipe activity while compute-bound kernels run.
        comm_bytes: bytes each GPU all-reduces (or gathers) per step, gradients or shards.
        batch: per-GPU batch range (samples).
        min_memory_gb: smallest framebuffer the benchmark fits on.
        mmap_features: features are read through a memory map (major faults are IO, not pressure).
        host_gb: host memory the input pipeline keeps resident per GPU, GB.
        comm_per_sample: ``comm_bytes`` is per sample (DLRM's embedding all-to-all), not per step.
    """

    name: str
    sample_bytes: float
    cpu_s: float
    h2d_bytes: float
    gpu_s: float
    hbm_share: float
    tensor: float
    comm_bytes: float
    batch: tuple[int, int]
    min_memory_gb: float
    mmap_features: bool = False
    host_gb: float = 4.0
    comm_per_sample: bool = False


WORKLOADS: dict[str, Workload] = {
    # ImageNet JPEGs ~110 kB; 50-200 img/s per core to decode+augment; 2,470 img/s per A100 with AMP.
    "resnet50": Workload("resnet50", 110 * KB, 1 / 125, 150 * KB, 1 / 2470, 0.35, 0.55, 2 * 25.6e6, (128, 256), 16),
    "retinanet": Workload("retinanet", 250 * KB, 1 / 50, 3 * 800 * 800, 1 / 110, 0.30, 0.5, 2 * 37e6, (16, 32), 24),
    "unet3d": Workload("unet3d", 28 * MB, 0.15, 4 * 128**3 + 128**3, 1 / 40, 0.45, 0.45, 2 * 19e6, (2, 4), 24),
    "bert": Workload("bert", 2 * KB, 1e-4, 12 * KB, 1 / 400, 0.32, 0.6, 2 * 340e6, (16, 56), 24),
    "dlrm_dcnv2": Workload(
        "dlrm_dcnv2", 700, 2e-6, 1 * KB, 3e-6, 0.62, 0.3, 13 * KB, (4096, 16384), 24, comm_per_sample=True
    ),
    "gpt3": Workload("gpt3", 4 * KB, 1e-4, 16 * KB, 0.1, 0.25, 0.65, 2 * 1.3e9, (1, 8), 80),
    "llama2_70b_lora": Workload("llama2_70b_lora", 32 * KB, 2e-4, 64 * KB, 2.0, 0.28, 0.6, 3e9, (1, 1), 80),
    "stable_diffusion": Workload(
        "stable_diffusion", 300 * KB, 1 / 60, 3 * 512 * 512 * 2, 0.06, 0.30, 0.55, 2 * 865e6, (8, 32), 40
    ),
    # R-GAT on IGBH: 1024-dim fp32 features of ~1,000 sampled nodes per seed, gathered on the host.
    "rgat": Workload(
        "rgat", 4 * MB, 2e-3, 4 * MB, 3e-4, 0.45, 0.35, 2 * 12e6, (256, 1024), 24, mmap_features=True, host_gb=60.0
    ),
}


@dataclass(frozen=True)
class Storage:
    """Where the dataset lives.

    Attributes:
        kind: "nvme", "sata", "pvc-throttled", "nfs", "object-store".
        bps: throughput cap for the pod, B/s.
        stream_bps: one reader's throughput, B/s (object stores serve one stream slowly).
        block: reads show as block-device IO (disk counters, cgroup io.stat, D state).
        network: reads arrive over the NIC (netdev counters).
        psi: readers wait in the kernel's IO accounting (PSI io, iowait); object-store readers wait on sockets.
    """

    kind: str
    bps: float
    stream_bps: float
    block: bool
    network: bool
    psi: bool


# Ranges of pod-visible throughput per storage kind, B/s.
STORAGE_RANGES: dict[str, tuple[float, float]] = {
    "nvme": (2.0 * GB, 7.0 * GB),
    "sata": (0.35 * GB, 0.55 * GB),
    "pvc-throttled": (0.05 * GB, 0.5 * GB),
    "nfs": (0.1 * GB, 1.6 * GB),
    "object-store": (0.1 * GB, 2.0 * GB),
}
