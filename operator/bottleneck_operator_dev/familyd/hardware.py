"""The parts family D's clusters are built from: GPU boards, storage, network links.

Every figure is a vendor's published number (the board's datasheet, the link's line rate) or is
derived from one in the line that uses it; where a figure is an estimate it says so. The step
model (:mod:`.stages`) only ever compares a stage's work with one of these capacities.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
GIB = float(1 << 30)
MIB = float(1 << 20)


@dataclass(frozen=True)
class Board:
    """One GPU board as dcgm-exporter would describe it.

    Attributes:
        model: dcgm-exporter's ``modelName`` label (NVML's board name).
        tdp_w: the board's default power limit (datasheet TDP / max power), W.
        idle_w: power with no kernel running but a CUDA context held (an estimate, ~10-20 % of TDP).
        boost_mhz: the datasheet's maximum boost SM clock.
        hbm_bps: memory bandwidth, bytes/s (datasheet).
        fb_mib: framebuffer size as NVML reports it (FB_USED + FB_FREE), MiB.
        nvlink_bps: NVLink bandwidth per GPU per direction, bytes/s; 0 for a PCIe-only board.
        pcie_gen: host PCIe generation (x16).
        prof: whether DCGM's profiling (PROF) fields exist on it (Volta-or-newer datacenter parts).
        gpus_per_node: how many of them a typical server carries.
    """

    model: str
    tdp_w: float
    idle_w: float
    boost_mhz: float
    hbm_bps: float
    fb_mib: float
    nvlink_bps: float
    pcie_gen: int
    prof: bool
    gpus_per_node: int


# Sources: NVIDIA A100 datasheet (SXM4 400 W, PCIe 80 GB 300 W, boost 1410 MHz, 1,555/2,039/1,935 GB/s,
# NVLink 600 GB/s total = 300 GB/s per direction); H100 datasheet (SXM5 700 W, 3.35 TB/s, NVLink
# 900 GB/s total; PCIe 350 W, 2.0 TB/s, boost 1755 MHz; SXM boost 1980 MHz); H200 datasheet (SXM
# 700 W, 141 GB, 4.8 TB/s, NVLink 900 GB/s); L40S datasheet (350 W, 48 GB GDDR6, 864 GB/s, PCIe Gen4,
# no NVLink, boost 2520 MHz); L4 datasheet (72 W, 24 GB, 300 GB/s, boost 2040 MHz); A10 datasheet
# (150 W, 24 GB, 600 GB/s, boost 1695 MHz); V100 SXM2 datasheet (300 W, 900 GB/s, NVLink 300 GB/s
# total, boost 1530 MHz). Idle draws are estimates.
BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 400.0, 60.0, 1410.0, 2039 * GB, 81920.0, 300 * GB, 4, True, 8),
    Board("NVIDIA A100-SXM4-40GB", 400.0, 55.0, 1410.0, 1555 * GB, 40960.0, 300 * GB, 4, True, 8),
    Board("NVIDIA A100 80GB PCIe", 300.0, 45.0, 1410.0, 1935 * GB, 81920.0, 0.0, 4, True, 4),
    Board("NVIDIA H100 80GB HBM3", 700.0, 75.0, 1980.0, 3350 * GB, 81559.0, 450 * GB, 5, True, 8),
    Board("NVIDIA H100 PCIe", 350.0, 50.0, 1755.0, 2000 * GB, 81559.0, 0.0, 5, True, 4),
    Board("NVIDIA H200", 700.0, 80.0, 1980.0, 4800 * GB, 143771.0, 450 * GB, 5, True, 8),
    Board("NVIDIA L40S", 350.0, 35.0, 2520.0, 864 * GB, 46068.0, 0.0, 4, True, 4),
    Board("NVIDIA L4", 72.0, 16.0, 2040.0, 300 * GB, 23034.0, 0.0, 4, True, 4),
    Board("NVIDIA A10", 150.0, 22.0, 1695.0, 600 * GB, 23028.0, 0.0, 4, True, 4),
    Board("Tesla V100-SXM2-32GB", 300.0, 40.0, 1530.0, 900 * GB, 32768.0, 150 * GB, 3, True, 8),
)
# How often each board turns up: today's training fleets are mostly A100/H100-class.
BOARD_WEIGHTS: tuple[float, ...] = (0.18, 0.08, 0.07, 0.2, 0.07, 0.12, 0.1, 0.05, 0.06, 0.07)

# Usable host-to-device bandwidth of an x16 link, bytes/s per direction: the line rate (Gen3 ~15.8,
# Gen4 ~31.5, Gen5 ~63 GB/s, derived from the per-lane rates) times ~0.8 for protocol overhead and DMA
# efficiency with pinned buffers (an estimate).
PCIE_BPS = {3: 15.8 * GB * 0.8, 4: 31.5 * GB * 0.8, 5: 63.0 * GB * 0.8}


@dataclass(frozen=True)
class Storage:
    """Where a job's samples come from.

    Attributes:
        kind: "nvme", "sata", "cloud-volume", "nfs", "object-store".
        bps: what one client can read from it, bytes/s (device or service figure).
        block: reads are block-device I/O (node_disk_*, io.stat, container_fs_reads count them).
        network: reads arrive as network receive bytes on the node.
        dstate: readers wait in uninterruptible sleep (iowait, io pressure); object-store readers
            wait in socket receive instead.
    """

    kind: str
    bps: float
    block: bool
    network: bool
    dstate: bool


# NVMe Gen3 ~3.5, Gen4 ~7 GB/s; SATA SSD ~0.55 GB/s; a provisioned cloud block volume 0.125-1 GB/s
# (gp3-style throughput settings); EFS-like NFS up to ~1.5 GiB/s per client; an object store per
# client bounded by its connections (~30-90 MB/s each, an estimate) - the bps here is the ceiling
# before the draw scales it.
STORAGE: dict[str, Storage] = {
    "nvme": Storage("nvme", 7.0 * GB, True, False, True),
    "sata": Storage("sata", 0.55 * GB, True, False, True),
    "cloud-volume": Storage("cloud-volume", 1.0 * GB, True, False, True),
    "nfs": Storage("nfs", 1.5 * GIB, False, True, True),
    "object-store": Storage("object-store", 2.5 * GB, False, True, False),
}


@dataclass(frozen=True)
class Fabric:
    """How a job's nodes talk to each other.

    Attributes:
        kind: "ethernet" (TCP sockets: netdev counters see it), "infiniband" or "roce" (RDMA: only
            the infiniband collector's port counters see it).
        port_bps: one port's line rate, bytes/s per direction.
        ports: ports per node used by the job's traffic (rails).
        rdma: traffic bypasses the kernel's network stack.
        gpudirect: the NIC reads GPU memory directly (PCIe traffic on the GPU, no host copy).
    """

    kind: str
    port_bps: float
    ports: int
    rdma: bool
    gpudirect: bool

    @property
    def node_bps(self) -> float:
        return self.port_bps * self.ports


# Line rates: Ethernet 25/100/200/400 Gb/s; InfiniBand HDR 200 and NDR 400 Gb/s per port.
ETHERNET_GBPS = (25.0, 50.0, 100.0, 200.0)
INFINIBAND_GBPS = (200.0, 400.0)
ROCE_GBPS = (100.0, 200.0, 400.0)


def gbps(rate: float) -> float:
    """A line rate in Gb/s as bytes/s."""
    return rate * 1e9 / 8.0
