"""Published hardware figures the simulation runs on: boards, host links, storage and fabrics.

Every figure here is cited in docs/familyak.md (shared/TELEMETRY.md "Hardware figures", or the
vendor's datasheet); ranges that are modelling choices are marked as such there, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU type.

    Attributes:
        key: short id used in tags.
        model_name: dcgm-exporter's ``modelName`` label value.
        tflops: dense BF16/FP16 tensor TFLOPS (TELEMETRY.md).
        fp32_ratio: matmul throughput without mixed precision, as a share of ``tflops`` (TF32 on
            Ampere and newer is half of dense BF16; V100 and T4 run FP32 at an eighth).
        hbm_gbs: memory bandwidth, GB/s (TELEMETRY.md).
        mem_gib: framebuffer, GiB.
        nvlink_gbs: NVLink bandwidth per GPU, both directions together, GB/s; 0 without NVLink.
        pcie_gen: host PCIe generation.
        tdp_w: board power (datasheet).
        max_clock_mhz: maximum boost SM clock (datasheet).
        prof: whether DCGM profiling fields exist (Volta-or-newer datacenter boards).
    """

    key: str
    model_name: str
    tflops: float
    fp32_ratio: float
    hbm_gbs: float
    mem_gib: float
    nvlink_gbs: float
    pcie_gen: int
    tdp_w: float
    max_clock_mhz: float
    prof: bool = True
    max_gpus: int = 8


BOARDS: tuple[Board, ...] = (
    Board("v100", "Tesla V100-SXM2-32GB", 125.0, 0.125, 900.0, 32.0, 300.0, 3, 300.0, 1530.0),
    Board("a100", "NVIDIA A100-SXM4-80GB", 312.0, 0.5, 2039.0, 80.0, 600.0, 4, 400.0, 1410.0),
    Board("h100", "NVIDIA H100 80GB HBM3", 989.0, 0.5, 3350.0, 80.0, 900.0, 5, 700.0, 1980.0),
    Board("h100pcie", "NVIDIA H100 PCIe", 756.0, 0.5, 2000.0, 80.0, 0.0, 5, 350.0, 1755.0, max_gpus=4),
    Board("l4", "NVIDIA L4", 121.0, 0.5, 300.0, 24.0, 0.0, 4, 72.0, 2040.0, max_gpus=4),
    Board("a10", "NVIDIA A10", 125.0, 0.5, 600.0, 24.0, 0.0, 4, 150.0, 1695.0, max_gpus=4),
    Board("t4", "Tesla T4", 65.0, 0.125, 320.0, 16.0, 0.0, 3, 70.0, 1590.0, max_gpus=4),
)
BOARD_BY_KEY = {b.key: b for b in BOARDS}

# PCIe x16, one direction, GB/s (TELEMETRY.md, derived from the per-lane rates).
PCIE_GBS = {3: 15.8, 4: 31.5, 5: 63.0}


class Storage(StrEnum):
    """Where the DataLoader reads samples from."""

    NVME = "local-nvme"
    SATA = "local-sata"
    NFS = "nfs"
    OBJECT = "object-store"

    @property
    def local(self) -> bool:
        """Block reads on the node: seen by node_disk_* and container_fs_reads_bytes_total."""
        return self in (Storage.NVME, Storage.SATA)

    @property
    def blocks_in_d_state(self) -> bool:
        """Readers wait in D state (iowait, io pressure): block devices and NFS, not HTTP sockets."""
        return self is not Storage.OBJECT


# Device or service throughput ranges, GB/s, one client (TELEMETRY.md "Hardware figures": SATA SSD
# 0.55, NVMe Gen3 3.5 / Gen4 7; EFS per client up to ~1.5 GiB/s; network file systems far below NVMe).
STORAGE_GBS: dict[Storage, tuple[float, float]] = {
    Storage.NVME: (3.5, 7.0),
    Storage.SATA: (0.45, 0.55),
    Storage.NFS: (0.1, 1.5),
    Storage.OBJECT: (0.2, 1.5),
}
# Per-request latency, seconds (modelling ranges, docs/familyak.md).
STORAGE_LATENCY_S: dict[Storage, tuple[float, float]] = {
    Storage.NVME: (8e-5, 3e-4),
    Storage.SATA: (1.5e-4, 6e-4),
    Storage.NFS: (5e-4, 5e-3),
    Storage.OBJECT: (1e-2, 6e-2),
}


class Fabric(StrEnum):
    """How pods on different nodes exchange gradients."""

    NONE = "none"
    ETHERNET = "ethernet"  # NCCL over TCP sockets: netdev counters see it
    ROCE = "roce"  # RDMA: netdev does not see it, node_infiniband_* does
    INFINIBAND = "infiniband"

    @property
    def rdma(self) -> bool:
        return self in (Fabric.ROCE, Fabric.INFINIBAND)


# Per-port line rates, Gb/s (TELEMETRY.md: 10-400 Gb/s Ethernet; IB HDR 200, NDR 400).
FABRIC_GBPS: dict[Fabric, tuple[float, ...]] = {
    Fabric.ETHERNET: (10.0, 25.0, 40.0, 100.0),
    Fabric.ROCE: (100.0, 200.0),
    Fabric.INFINIBAND: (100.0, 200.0, 400.0),
}

# One CPU core decodes and augments roughly 50-200 ImageNet JPEGs per second (TELEMETRY.md).
DECODE_PER_CORE = (50.0, 200.0)
