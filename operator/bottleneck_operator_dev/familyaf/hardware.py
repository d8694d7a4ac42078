"""Datasheet figures of the hardware a Family AF cluster is drawn from.

Every figure is a public one (see docs/familyaf.md for the sources): GPU peak tensor throughput,
HBM/GDDR bandwidth, memory size, board power, boost clock, NVLink and PCIe per direction; fabrics
per port; storage per client or device. The step model works in seconds, so these figures only
set the scale of the byte and power signals a Job shows.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model.

    Attributes:
        key: short name used in tags.
        model: dcgm-exporter's ``modelName``.
        tflops: dense BF16/FP16 tensor TFLOPS.
        hbm_bps: device memory bandwidth, bytes/s.
        mem_gib: device memory, GiB.
        tdp_w: board power limit by default, W.
        idle_w: typical idle draw, W.
        boost_mhz: maximum SM clock, MHz.
        idle_mhz: SM clock when idle, MHz.
        nvlink_bps: NVLink bytes/s per direction per GPU (0: none, peers talk over PCIe).
        pcie_bps: host link bytes/s per direction at x16.
        node_cores: CPU cores of the servers that carry it.
        node_ram_gib: host memory of those servers, GiB.
        gpus_per_node: GPUs a server carries.
    """

    key: str
    model: str
    tflops: float
    hbm_bps: float
    mem_gib: float
    tdp_w: float
    idle_w: float
    boost_mhz: float
    idle_mhz: float
    nvlink_bps: float
    pcie_bps: float
    node_cores: tuple[int, ...]
    node_ram_gib: tuple[int, ...]
    gpus_per_node: int


GPUS: tuple[GpuSpec, ...] = (
    # A100 SXM4 80 GB datasheet: 312 TFLOPS BF16 dense, 2,039 GB/s, 400 W, NVLink 600 GB/s (both ways),
    # PCIe Gen4; boost 1410 MHz. DGX A100: 2 x 64-core CPUs, 1-2 TB.
    GpuSpec(
        "a100",
        "NVIDIA A100-SXM4-80GB",
        312,
        2039 * GB,
        80,
        400,
        55,
        1410,
        210,
        300 * GB,
        31.5 * GB,
        (96, 128, 128),
        (1024, 2048),
        8,
    ),
    # H100 SXM5: 989 TFLOPS BF16 dense, 3.35 TB/s, 700 W, NVLink 900 GB/s, PCIe Gen5, boost 1980 MHz.
    GpuSpec(
        "h100",
        "NVIDIA H100 80GB HBM3",
        989,
        3350 * GB,
        80,
        700,
        70,
        1980,
        345,
        450 * GB,
        63 * GB,
        (112, 128, 192),
        (2048,),
        8,
    ),
    # H200 SXM: same GH100 compute as H100, 141 GB HBM3e at 4.8 TB/s, 700 W, NVLink 900 GB/s.
    GpuSpec(
        "h200",
        "NVIDIA H200",
        989,
        4800 * GB,
        141,
        700,
        75,
        1980,
        345,
        450 * GB,
        63 * GB,
        (112, 128, 192),
        (2048, 3072),
        8,
    ),
    # L40S: 362 TFLOPS BF16 dense, 48 GB GDDR6 at 864 GB/s, 350 W, PCIe Gen4 x16, no NVLink, boost 2520 MHz.
    GpuSpec(
        "l40s", "NVIDIA L40S", 362, 864 * GB, 48, 350, 35, 2520, 210, 0.0, 31.5 * GB, (32, 48, 64), (256, 512, 768), 4
    ),
)
GPU_WEIGHTS = (0.3, 0.3, 0.2, 0.2)


@dataclass(frozen=True)
class Fabric:
    """The network between a Job's nodes.

    Attributes:
        key: short name used in tags.
        port_bps: bytes/s per port and direction.
        rdma: whether collectives bypass the kernel's stack (InfiniBand, RoCE): then netdev counters
            miss them and node-exporter's infiniband collector counts them.
        nics: how many ports a node may carry.
    """

    key: str
    port_bps: float
    rdma: bool
    nics: tuple[int, ...]


FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-hdr", 200e9 / 8, True, (1, 4, 8)),
    Fabric("ib-ndr", 400e9 / 8, True, (1, 4, 8)),
    Fabric("roce-200", 200e9 / 8, True, (1, 2, 8)),
    Fabric("roce-400", 400e9 / 8, True, (2, 8)),
    Fabric("eth-25", 25e9 / 8, False, (1, 2)),
    Fabric("eth-100", 100e9 / 8, False, (1, 2)),
)


@dataclass(frozen=True)
class Storage:
    """Where the training data is read from.

    Attributes:
        key: short name used in tags.
        bps: (low, high) bytes/s one node (client) gets from it.
        local: a block device on the node (shows in diskstats and io.stat); otherwise the bytes arrive
            over the network.
        blocking: readers wait in D state with iowait (block devices, NFS); HTTP object-store readers
            wait in socket receive instead.
        kernel_client: the bytes pass the host's network namespace, not the pod's (NFS).
    """

    key: str
    bps: tuple[float, float]
    local: bool
    blocking: bool
    kernel_client: bool


STORAGES: tuple[Storage, ...] = (
    Storage("nvme-gen4", (3.5 * GB, 7.0 * GB), True, True, False),
    Storage("nvme-gen3", (2.0 * GB, 3.5 * GB), True, True, False),
    Storage("sata-ssd", (0.4 * GB, 0.55 * GB), True, True, False),
    Storage("memmap-nvme", (2.0 * GB, 6.0 * GB), True, True, False),
    Storage("nfs", (0.3 * GB, 2.0 * GB), False, True, True),
    Storage("object-store", (0.15 * GB, 1.5 * GB), False, False, False),
    Storage("fuse-bucket", (0.1 * GB, 0.8 * GB), False, True, False),
)

# PCIe per direction at x16 and the share of it a large DMA copy reaches.
PCIE_EFFICIENCY = (0.75, 0.88)
# Extra bytes dcgm's PCIe counters include (TLP headers) over the payload.
PCIE_HEADER_OVERHEAD = (1.04, 1.12)
# The share of a link's figure an NCCL ring reaches (nccl-tests busbw against the link).
LINK_EFFICIENCY = (0.7, 0.92)
# DRAM activity a bandwidth-bound kernel reaches: ~0.8 is the practical maximum.
DRAM_PRACTICAL = 0.8
# Host page size for swap-ins.
PAGE = 4096
