"""The machines family I's jobs run on: GPU boards, storage, fabrics and nodes, from datasheets.

Every figure is a vendor's published number (or derived from one, marked so); the generator draws
a cluster from these and never tunes them. Sources: NVIDIA A100/H100/H200/L40S/L4/A10/V100
datasheets; PCI-SIG per-lane rates; NVMe and SATA interface limits; AWS EBS gp3 and EFS
documentation; InfiniBand Trade Association speed table (HDR 200, NDR 400 Gb/s per port);
NVIDIA DGX A100/H100 user guides (one ConnectX HCA per GPU, node CPU and memory sizes).
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Board:
    """One GPU board as dcgm-exporter names it and as its datasheet describes it.

    Attributes:
        model: dcgm-exporter's ``modelName`` label.
        tdp_w: board power at the default limit (W).
        idle_w: typical draw of an idle board with a context open (W): roughly 12-20 % of TDP.
        tflops: dense BF16/FP16 tensor TFLOPS.
        hbm_bps: memory bandwidth (B/s).
        fb_mib: framebuffer as FB_USED + FB_FREE reports it (MiB).
        nvlink_bps: NVLink bandwidth per direction per GPU (B/s); 0 for PCIe-only boards.
        pcie_bps: host PCIe bandwidth per direction, x16 (B/s).
        boost_mhz: maximum SM clock (MHz).
        idle_mhz: SM clock an idle board falls to between bursts (MHz).
    """

    model: str
    tdp_w: float
    idle_w: float
    tflops: float
    hbm_bps: float
    fb_mib: float
    nvlink_bps: float
    pcie_bps: float
    boost_mhz: float
    idle_mhz: float


PCIE_GEN3, PCIE_GEN4, PCIE_GEN5 = 15.8 * GB, 31.5 * GB, 63.0 * GB  # x16 per direction (derived)

BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 400.0, 58.0, 312.0, 2039 * GB, 81920.0, 300 * GB, PCIE_GEN4, 1410.0, 210.0),
    Board("NVIDIA A100-SXM4-40GB", 400.0, 52.0, 312.0, 1555 * GB, 40960.0, 300 * GB, PCIE_GEN4, 1410.0, 210.0),
    Board("NVIDIA A100-PCIE-40GB", 250.0, 36.0, 312.0, 1555 * GB, 40960.0, 0.0, PCIE_GEN4, 1410.0, 210.0),
    Board("NVIDIA H100 80GB HBM3", 700.0, 72.0, 989.0, 3350 * GB, 81559.0, 450 * GB, PCIE_GEN5, 1980.0, 345.0),
    Board("NVIDIA H100 PCIe", 350.0, 48.0, 756.0, 2000 * GB, 81559.0, 0.0, PCIE_GEN5, 1755.0, 345.0),
    Board("NVIDIA H200", 700.0, 76.0, 989.0, 4800 * GB, 143771.0, 450 * GB, PCIE_GEN5, 1980.0, 345.0),
    Board("NVIDIA L40S", 350.0, 34.0, 362.0, 864 * GB, 46068.0, 0.0, PCIE_GEN4, 2520.0, 210.0),
    Board("NVIDIA L4", 72.0, 16.0, 121.0, 300 * GB, 23034.0, 0.0, PCIE_GEN4, 2040.0, 210.0),
    Board("NVIDIA A10", 150.0, 22.0, 125.0, 600 * GB, 23028.0, 0.0, PCIE_GEN4, 1695.0, 210.0),
    Board("Tesla V100-SXM2-32GB", 300.0, 42.0, 125.0, 900 * GB, 32768.0, 150 * GB, PCIE_GEN3, 1530.0, 135.0),
)
# Boards a cluster of each kind is built from; weights favour what training fleets hold today.
BOARD_WEIGHTS: tuple[float, ...] = (0.2, 0.08, 0.06, 0.22, 0.06, 0.12, 0.1, 0.06, 0.05, 0.05)


@dataclass(frozen=True)
class Storage:
    """Where a job's data loader reads from.

    Attributes:
        kind: a short name, also a tag of the job.
        bps: what one node can read from it (B/s), the figure a saturated loader reaches.
        block: reads show on the node's block devices (and cAdvisor/io.stat); otherwise on the NIC.
        blocks_in_d: readers sleep in D state (iowait, io pressure): block devices and NFS, not sockets.
        req_bytes: typical read request size on the device (B).
        deep_queue: NVMe-like parallel queues, where io_time at 100 % is not saturation.
    """

    kind: str
    bps: float
    block: bool
    blocks_in_d: bool
    req_bytes: float
    deep_queue: bool


STORAGES: tuple[Storage, ...] = (
    Storage("local-nvme-gen4", 7.0 * GB, True, True, 512 * 1024.0, True),
    Storage("local-nvme-gen3", 3.5 * GB, True, True, 256 * 1024.0, True),
    Storage("local-sata-ssd", 0.55 * GB, True, True, 128 * 1024.0, False),
    # Cloud block volume: EBS gp3 baseline 125 MiB/s, provisionable to 1,000 MiB/s.
    Storage("cloud-block-gp3", 0.25 * GB, True, True, 64 * 1024.0, False),
    Storage("nfs-25gbe", 1.2 * GB, False, True, 1024 * 1024.0, False),
    Storage("efs-elastic", 1.5 * 1.074 * GB, False, True, 1024 * 1024.0, False),
    Storage("object-store-https", 2.5 * GB, False, False, 8 * 1024 * 1024.0, False),
    Storage("lustre-client", 5.0 * GB, False, True, 4 * 1024 * 1024.0, False),
)


@dataclass(frozen=True)
class Fabric:
    """How a multi-node job's pods reach each other.

    Attributes:
        kind: a short name, also a tag of the job.
        bps: per-node bandwidth per direction usable by collectives (B/s).
        rdma: traffic bypasses netdev counters (InfiniBand/RoCE port counters instead).
        gpudirect: GPUDirect RDMA: the bytes cross each GPU's PCIe link (RX and TX alike).
    """

    kind: str
    bps: float
    rdma: bool
    gpudirect: bool


STORAGE_WEIGHTS: tuple[float, ...] = (0.2, 0.1, 0.05, 0.1, 0.15, 0.08, 0.22, 0.1)

FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-ndr-8x400", 8 * 50 * GB, True, True),  # DGX H100: 8 x 400 Gb/s ConnectX-7
    Fabric("ib-hdr-8x200", 8 * 25 * GB, True, True),  # DGX A100: 8 x 200 Gb/s ConnectX-6
    Fabric("ib-hdr-1x200", 25 * GB, True, False),
    Fabric("roce-2x100", 2 * 12.5 * GB, True, True),
    Fabric("tcp-100gbe", 12.5 * GB, False, False),
    Fabric("tcp-25gbe", 3.125 * GB, False, False),
)
FABRIC_WEIGHTS: tuple[float, ...] = (0.2, 0.2, 0.12, 0.16, 0.2, 0.12)


@dataclass(frozen=True)
class NodeShape:
    """A GPU node's host side: logical CPUs and memory (DGX A100: 256 threads / 1 TiB; DGX H100: 224 / 2 TiB)."""

    cpus: int
    mem_bytes: float


NODE_SHAPES: tuple[NodeShape, ...] = (
    NodeShape(256, 1024 * 1024 * MIB * 1.0),
    NodeShape(224, 2048 * 1024 * MIB * 1.0),
    NodeShape(192, 768 * 1024 * MIB * 1.0),
    NodeShape(96, 384 * 1024 * MIB * 1.0),
    NodeShape(64, 256 * 1024 * MIB * 1.0),
    NodeShape(48, 192 * 1024 * MIB * 1.0),
)
