"""Boards, fabrics and storage that family K's clusters are built from, with their public figures.

Figures are from the vendors' datasheets (NVIDIA V100, T4, A10, L4, L40S, A100, H100, H200 product
briefs; PCIe per-lane rates from the PCI-SIG specifications; InfiniBand rates from the IBTA roadmap)
as collected in the project's telemetry notes. Idle power and the lowest settable power cap are
rounded from ``nvidia-smi -q`` ranges that the boards' documentation gives (min/max power limit).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Board:
    """One GPU model as dcgm-exporter names it, with what bounds its stages.

    Attributes:
        model: dcgm-exporter's ``modelName`` label.
        tdp_w: default (maximum) power limit, W.
        min_cap_w: lowest power limit an administrator can set, W.
        idle_w: power drawn with no kernel running, W.
        max_clock: maximum boost SM clock, MHz.
        tflops: dense BF16/FP16 tensor throughput, TFLOP/s.
        hbm_gbs: memory bandwidth, GB/s.
        fb_mib: framebuffer size, MiB.
        pcie_gbs: host link per direction (x16), GB/s.
        nvlink_gbs: NVLink per direction, all links, GB/s (0: none).
        prof: whether DCGM profiling fields exist on this board.
        weight: how often family K's clusters carry it.
    """

    model: str
    tdp_w: float
    min_cap_w: float
    idle_w: float
    max_clock: float
    tflops: float
    hbm_gbs: float
    fb_mib: float
    pcie_gbs: float
    nvlink_gbs: float
    prof: bool
    weight: float


GEN3, GEN4, GEN5 = 15.8, 31.5, 63.0

BOARDS: tuple[Board, ...] = (
    Board("Tesla V100-SXM2-32GB", 300, 150, 40, 1530, 125, 900, 32510, GEN3, 150, True, 1.0),
    Board("Tesla T4", 70, 60, 10, 1590, 65, 320, 15360, GEN3, 0, True, 1.0),
    Board("NVIDIA A10", 150, 100, 18, 1695, 125, 600, 23028, GEN4, 0, True, 1.0),
    Board("NVIDIA L4", 72, 40, 12, 2040, 121, 300, 23034, GEN4, 0, True, 0.8),
    Board("NVIDIA L40S", 350, 200, 35, 2520, 362, 864, 46068, GEN4, 0, True, 1.0),
    Board("NVIDIA A100-PCIE-40GB", 250, 150, 35, 1410, 312, 1555, 40960, GEN4, 0, True, 0.8),
    Board("NVIDIA A100-SXM4-80GB", 400, 200, 55, 1410, 312, 2039, 81920, GEN4, 300, True, 1.6),
    Board("NVIDIA H100 PCIe", 350, 200, 45, 1755, 756, 2000, 81559, GEN5, 0, True, 0.8),
    Board("NVIDIA H100 80GB HBM3", 700, 200, 70, 1980, 989, 3350, 81559, GEN5, 450, True, 1.6),
    Board("NVIDIA H200", 700, 200, 75, 1980, 989, 4800, 143771, GEN5, 450, True, 1.0),
)


@dataclass(frozen=True)
class Fabric:
    """How the pods of a multi-node job reach each other.

    Attributes:
        name: a short tag.
        gbs: per-node usable bandwidth per direction, GB/s.
        rdma: True when the traffic bypasses netdev (InfiniBand, RoCE): it shows in the infiniband
            collector's port counters and, with GPUDirect RDMA, as symmetric PCIe traffic on the GPUs.
    """

    name: str
    gbs: float
    rdma: bool


# Ethernet at 10/25/100 Gb/s with NCCL's socket transport; RoCE and InfiniBand HDR/NDR ports.
FABRICS: tuple[Fabric, ...] = (
    Fabric("eth10-tcp", 1.1, False),
    Fabric("eth25-tcp", 2.8, False),
    Fabric("eth100-tcp", 9.0, False),
    Fabric("roce100", 11.5, True),
    Fabric("ib-hdr200x2", 46.0, True),
    Fabric("ib-ndr400x4", 180.0, True),
)


@dataclass(frozen=True)
class Storage:
    """Where the training data is read from.

    Attributes:
        name: a short tag.
        gbs: sustained read throughput one node gets, GB/s.
        block: True when reads go through a local block device (diskstats, cgroup io.stat see them).
        network: True when reads arrive over the node's NIC (netdev sees them).
        dstate: True when waiting readers sleep in D state and count as iowait (NFS, block);
            HTTP object-store readers wait in socket receive, in S state.
        cpu_per_gb: core-seconds per GB read spent by the reader itself (TLS, HTTP, decompression).
    """

    name: str
    gbs: float
    block: bool
    network: bool
    dstate: bool
    cpu_per_gb: float


STORAGES: tuple[Storage, ...] = (
    Storage("sata-ssd", 0.55, True, False, True, 0.05),
    Storage("nvme-gen3", 3.5, True, False, True, 0.05),
    Storage("nvme-gen4", 7.0, True, False, True, 0.05),
    Storage("nfs", 0.9, False, True, True, 0.3),
    Storage("efs", 1.5, False, True, True, 0.3),
    Storage("http-object-store", 1.2, False, True, False, 2.5),
    Storage("http-zstd-shards", 0.6, False, True, False, 4.0),
)

# Node CPU counts seen on GPU servers, per GPUs per node (small workstations to 8-GPU servers).
NODE_CORES: tuple[int, ...] = (16, 24, 32, 48, 64, 96, 128, 192)
NODE_RAM_GIB: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)
