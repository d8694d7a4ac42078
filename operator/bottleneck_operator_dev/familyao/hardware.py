"""Boards, GPU sharing modes, fabrics and storage: the published figures the model is built on.

Figures come from shared/TELEMETRY.md ("Hardware figures") unless marked ``datasheet``: those
(power limits, maximum SM clocks, MIG profiles) are NVIDIA datasheet or MIG User Guide figures that
TELEMETRY.md does not give, and docs/familyao.md lists them as stated assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU model as the step model and the exporters need it.

    Attributes:
        model_name: dcgm-exporter's ``modelName``.
        tflops: dense BF16/FP16 tensor TFLOPS (TELEMETRY.md).
        hbm_bps: memory bandwidth, B/s (TELEMETRY.md).
        nvlink_bps: NVLink per direction per GPU, B/s (TELEMETRY.md's total halved); 0 without NVLink.
        pcie_bps: host PCIe x16 per direction, B/s (TELEMETRY.md).
        fb_gib: framebuffer, GiB.
        tdp_w: board power limit, W (datasheet).
        max_clock: maximum SM boost clock, MHz (datasheet).
        tf32: whether FP32 matmuls run on tensor cores (TF32, Ampere and newer).
        prof: whether PROF fields exist beyond GR_ENGINE_ACTIVE (TELEMETRY.md: T4 emits only that).
        mig: whether the board can be partitioned with MIG (datasheet).
    """

    model_name: str
    tflops: float
    hbm_bps: float
    nvlink_bps: float
    pcie_bps: float
    fb_gib: float
    tdp_w: float
    max_clock: float
    tf32: bool
    prof: bool
    mig: bool


PCIE3, PCIE4, PCIE5 = 15.8 * GB, 31.5 * GB, 63 * GB

BOARDS: tuple[Board, ...] = (
    Board("Tesla V100-SXM2-32GB", 125, 900 * GB, 150 * GB, PCIE3, 32, 300, 1530, False, True, False),
    Board("NVIDIA A100-SXM4-80GB", 312, 2039 * GB, 300 * GB, PCIE4, 80, 400, 1410, True, True, True),
    Board("NVIDIA H100 80GB HBM3", 989, 3350 * GB, 450 * GB, PCIE5, 80, 700, 1980, True, True, True),
    Board("NVIDIA H100 PCIe", 756, 2000 * GB, 0.0, PCIE5, 80, 350, 1755, True, True, True),
    Board("NVIDIA L4", 121, 300 * GB, 0.0, PCIE4, 24, 72, 2040, True, True, False),
    Board("NVIDIA A10", 125, 600 * GB, 0.0, PCIE4, 24, 150, 1695, True, True, False),
    Board("Tesla T4", 65, 320 * GB, 0.0, PCIE3, 16, 70, 1590, False, False, False),
)

# ResNet-50 trains at ~2,470 img/s with AMP and 938 with TF32 on one A100 (TELEMETRY.md): without
# mixed precision the same step is ~2.6x slower on TF32 boards. Boards without TF32 run FP32 on the
# CUDA cores; a V100 does 15.7 FP32 TFLOPS against 125 FP16 (datasheet): 8x.
FP32_SLOWDOWN_TF32 = 2470 / 938
FP32_SLOWDOWN_CUDA = 125 / 15.7


class Sharing(StrEnum):
    """How this Job's pod holds its GPUs."""

    WHOLE = "whole-gpu"
    MIG = "mig"
    TIME_SLICED = "time-sliced"
    MPS = "mps"


@dataclass(frozen=True)
class MigProfile:
    """A MIG instance profile: its share of the board's SMs and memory bandwidth (MIG User Guide).

    Memory bandwidth follows the instance's memory slices (eighths of the board), SMs its compute
    slices (sevenths): the datasheet figures for A100/H100 80 GB.
    """

    name: str
    sm_share: float
    mem_share: float


MIG_PROFILES: tuple[MigProfile, ...] = (
    MigProfile("1g.10gb", 1 / 7, 1 / 8),
    MigProfile("2g.20gb", 2 / 7, 2 / 8),
    MigProfile("3g.40gb", 3 / 7, 4 / 8),
    MigProfile("4g.40gb", 4 / 7, 4 / 8),
)


class Fabric(StrEnum):
    """How multi-node collectives travel."""

    INFINIBAND = "infiniband"
    ROCE = "roce"
    TCP = "tcp"


# Per-port rates, B/s (TELEMETRY.md: Ethernet 10-400 Gb/s; IB HDR 200, NDR 400 Gb/s).
FABRIC_RATES: dict[Fabric, tuple[float, ...]] = {
    Fabric.INFINIBAND: (200e9 / 8, 400e9 / 8),
    Fabric.ROCE: (100e9 / 8, 200e9 / 8),
    Fabric.TCP: (10e9 / 8, 25e9 / 8, 100e9 / 8),
}


class Storage(StrEnum):
    """Where the training samples are read from."""

    SATA = "sata-ssd"
    NVME = "nvme"
    NFS = "nfs"
    OBJECT = "object-store"
    THROTTLED = "throttled-block"

    @property
    def local(self) -> bool:
        """Block devices the node's disk counters see (a cgroup-throttled volume is still local)."""
        return self in (Storage.SATA, Storage.NVME, Storage.THROTTLED)


# Sustained read rate per node, B/s (TELEMETRY.md: SATA SSD 0.55 GB/s, NVMe Gen3-4 3.5-7 GB/s,
# EFS up to ~1.5 GiB/s per client, network file systems far below NVMe). A blkio-throttled volume
# and an object store are drawn over a range (assumption: 0.1-0.6 GB/s and 0.2-1.5 GB/s).
STORAGE_RATES: dict[Storage, tuple[float, float]] = {
    Storage.SATA: (0.45 * GB, 0.55 * GB),
    Storage.NVME: (3.5 * GB, 7.0 * GB),
    Storage.NFS: (0.3 * GB, 1.6 * GB),
    Storage.OBJECT: (0.2 * GB, 1.5 * GB),
    Storage.THROTTLED: (0.1 * GB, 0.6 * GB),
}

# One core decodes and augments ~50-200 ImageNet JPEGs/s (TELEMETRY.md "Input pipeline").
DECODE_PER_CORE = (50.0, 200.0)
# DCGM_FI_PROF_DRAM_ACTIVE ~0.8 is the practical maximum (TELEMETRY.md, DCGM profiling docs).
DRAM_PRACTICAL_PEAK = 0.8
