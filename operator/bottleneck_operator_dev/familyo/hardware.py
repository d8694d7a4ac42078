"""Published figures for the hardware family O's jobs run on: boards, storage and fabrics.

Every figure is a vendor datasheet value or derived from one (see docs/familyo.md for sources);
none was read off another generator or the project's data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Board:
    """One GPU board as dcgm-exporter names it, with its datasheet limits.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tdp_w: the board's default power limit (TDP), W.
        idle_w: typical power with no kernel running, W.
        bf16_tflops: dense BF16/FP16 tensor throughput.
        hbm_gbs: memory bandwidth, GB/s.
        nvlink_gbs: NVLink bandwidth per direction, GB/s (0: no NVLink).
        pcie_gbs: host PCIe x16 per direction, GB/s (usable payload).
        max_mhz: maximum boost SM clock, MHz.
        mem_gib: framebuffer, GiB.
    """

    model: str
    tdp_w: float
    idle_w: float
    bf16_tflops: float
    hbm_gbs: float
    nvlink_gbs: float
    pcie_gbs: float
    max_mhz: float
    mem_gib: float


# NVIDIA datasheets (A100, H100, H200, L40S, L4, A10); PCIe payload ~80 % of the raw x16 rate.
BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 400.0, 55.0, 312.0, 2039.0, 300.0, 25.0, 1410.0, 80.0),
    Board("NVIDIA A100-PCIE-40GB", 250.0, 35.0, 312.0, 1555.0, 0.0, 25.0, 1410.0, 40.0),
    Board("NVIDIA H100 80GB HBM3", 700.0, 70.0, 989.0, 3350.0, 450.0, 50.0, 1980.0, 80.0),
    Board("NVIDIA H100 PCIe", 350.0, 45.0, 756.0, 2000.0, 0.0, 50.0, 1755.0, 80.0),
    Board("NVIDIA H200", 700.0, 75.0, 989.0, 4800.0, 450.0, 50.0, 1980.0, 141.0),
    Board("NVIDIA L40S", 350.0, 35.0, 362.0, 864.0, 0.0, 25.0, 2520.0, 48.0),
    Board("NVIDIA L4", 72.0, 16.0, 121.0, 300.0, 0.0, 25.0, 2040.0, 24.0),
    Board("NVIDIA A10", 150.0, 20.0, 125.0, 600.0, 0.0, 25.0, 1695.0, 24.0),
)

# Boards a team puts many-node pre-training on: SXM boards with NVLink.
SXM = tuple(b for b in BOARDS if b.nvlink_gbs > 0)


@dataclass(frozen=True)
class Storage:
    """Where a job's samples come from.

    Attributes:
        name: short name.
        gbs: one client's sustained read throughput, GB/s (lo, hi).
        block: reads show as block I/O on the node (disk counters, cAdvisor fs reads).
        network: reads arrive over the node's NIC (netdev receive bytes).
        iowait: readers block in D state (iowait, io pressure); object-store readers wait in sockets.
        req_kib: typical request size, KiB (reads per second = bytes / request).
    """

    name: str
    gbs: tuple[float, float]
    block: bool
    network: bool
    iowait: bool
    req_kib: float


# NVMe Gen4 ~7 GB/s, SATA SSD ~0.55 GB/s, cloud block volumes throttled to 0.125-1 GB/s (gp3),
# NFS/EFS per client up to ~1.5 GiB/s, parallel file systems a few GB/s per client.
STORAGE: dict[str, Storage] = {
    "nvme": Storage("nvme", (3.0, 7.0), True, False, True, 128.0),
    "sata": Storage("sata", (0.45, 0.55), True, False, True, 128.0),
    "cloud-volume": Storage("cloud-volume", (0.125, 1.0), True, False, True, 256.0),
    "nfs": Storage("nfs", (0.6, 1.6), False, True, True, 1024.0),
    "lustre": Storage("lustre", (2.0, 6.0), False, True, True, 1024.0),
    "object-store": Storage("object-store", (0.4, 3.0), False, True, False, 8192.0),
    "feature-store": Storage("feature-store", (0.1, 0.8), False, True, False, 64.0),
    "page-cache": Storage("page-cache", (8.0, 15.0), False, False, False, 128.0),
}


@dataclass(frozen=True)
class Fabric:
    """The network between a job's nodes.

    Attributes:
        name: short name.
        port_gbs: one port's bandwidth per direction, GB/s (Gb/s / 8).
        ports: ports per node used by the job (rails).
        rdma: RDMA (InfiniBand, RoCE): netdev counters never see it; node-exporter's
            infiniband collector and, with GPUDirect RDMA, the GPUs' PCIe counters do.
    """

    name: str
    port_gbs: float
    ports: int
    rdma: bool


FABRICS: tuple[Fabric, ...] = (
    Fabric("eth-25g-tcp", 25 / 8, 1, False),
    Fabric("eth-100g-tcp", 100 / 8, 1, False),
    Fabric("roce-200g", 200 / 8, 2, True),
    Fabric("ib-hdr-1rail", 200 / 8, 1, True),
    Fabric("ib-hdr-8rail", 200 / 8, 8, True),
    Fabric("ib-ndr-8rail", 400 / 8, 8, True),
)
