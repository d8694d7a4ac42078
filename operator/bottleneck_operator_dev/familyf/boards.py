"""Hardware of the clusters family F runs on: GPU boards, fabrics, storage and node shapes.

Every figure is a vendor's published number (datasheets cited per entry) or the project's
shared telemetry notes (``TELEMETRY.md``); nothing here was fitted to any classifier.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU board as its datasheet gives it.

    Attributes:
        model_name: dcgm-exporter's ``modelName`` label.
        tdp_w: the board's maximum power limit (W).
        idle_w: typical idle draw with the driver loaded (W).
        boost_mhz: maximum SM boost clock (MHz).
        hbm_bps: device memory bandwidth (B/s).
        fb_mib: framebuffer size (MiB).
        nvlink_bps: NVLink bandwidth per GPU per direction (B/s), 0 where the board has none.
        pcie_bps: host link bandwidth per direction, x16 (B/s).
    """

    model_name: str
    tdp_w: float
    idle_w: float
    boost_mhz: float
    hbm_bps: float
    fb_mib: float
    nvlink_bps: float
    pcie_bps: float


# NVIDIA datasheets: A100 (SXM4 80GB: 400 W, 1410 MHz, 2,039 GB/s, NVLink 600 GB/s total), H100 SXM5
# (700 W, 1980 MHz, 3.35 TB/s, NVLink 900 GB/s total), H100 PCIe (350 W, 1755 MHz, 2.0 TB/s), H200 SXM
# (700 W, 1980 MHz, 4.8 TB/s, 141 GB), L40S (350 W, 2520 MHz, 864 GB/s GDDR6, 48 GB, PCIe Gen4, no
# NVLink), A10 (150 W, 1695 MHz, 600 GB/s, 24 GB). PCIe per direction from TELEMETRY.md.
BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 400.0, 55.0, 1410.0, 2039 * GB, 81920.0, 300 * GB, 31.5 * GB),
    Board("NVIDIA A100-SXM4-40GB", 400.0, 50.0, 1410.0, 1555 * GB, 40960.0, 300 * GB, 31.5 * GB),
    Board("NVIDIA H100 80GB HBM3", 700.0, 70.0, 1980.0, 3350 * GB, 81559.0, 450 * GB, 63.0 * GB),
    Board("NVIDIA H100 PCIe", 350.0, 48.0, 1755.0, 2000 * GB, 81559.0, 0.0, 63.0 * GB),
    Board("NVIDIA H200", 700.0, 75.0, 1980.0, 4800 * GB, 143771.0, 450 * GB, 63.0 * GB),
    Board("NVIDIA L40S", 350.0, 36.0, 2520.0, 864 * GB, 46068.0, 0.0, 31.5 * GB),
    Board("NVIDIA A10", 150.0, 20.0, 1695.0, 600 * GB, 23028.0, 0.0, 31.5 * GB),
)


@dataclass(frozen=True)
class Fabric:
    """How a cluster's nodes talk to each other.

    Attributes:
        name: a short name for tags.
        node_bps: per-node bandwidth per direction over all rails (B/s).
        rdma: True when NCCL runs over verbs (InfiniBand or RoCE): netdev counters never see it,
            the infiniband collector's port counters do.
        gpudirect: with GPUDirect RDMA the NIC reads and writes GPU memory across PCIe, so the
            traffic also shows on each GPU's PCIe counters.
    """

    name: str
    node_bps: float
    rdma: bool
    gpudirect: bool


# IB NDR 400 Gb/s, HDR 200 Gb/s per port (TELEMETRY.md); DGX H100-class nodes carry eight NDR rails,
# A100-class four to eight HDR; Ethernet clusters one or two 100 Gb/s ports with NCCL over sockets.
FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-ndr-8rail", 8 * 50 * GB, True, True),
    Fabric("ib-hdr-4rail", 4 * 25 * GB, True, True),
    Fabric("roce-200-2port", 2 * 25 * GB, True, False),
    Fabric("eth-100-tcp", 12.5 * GB, False, False),
    Fabric("eth-25-tcp", 3.125 * GB, False, False),
)


@dataclass(frozen=True)
class Storage:
    """Where the training data is read from.

    Attributes:
        name: a short name for tags.
        low_bps, high_bps: the range of per-pod read throughput it delivers (B/s).
        block: True when reads go through a block device the node and the cgroup's io.stat see.
        device_visible: True when node_disk_* sees the reads as the device working (not a
            throttled cloud volume whose limit sits above the device).
        via_network: reads arrive as network receive bytes on the node.
        dstate: readers wait in uninterruptible sleep (iowait, io pressure); object-store clients
            wait in socket receive instead and show neither.
    """

    name: str
    low_bps: float
    high_bps: float
    block: bool
    device_visible: bool
    via_network: bool
    dstate: bool


# NVMe Gen4 ~7 GB/s, SATA SSD ~0.55 GB/s, EFS up to ~1.5 GiB/s per client (TELEMETRY.md); cloud block
# volumes are throttled at the provider (e.g. AWS gp3 125-1,000 MB/s per its documentation).
STORAGES: tuple[Storage, ...] = (
    Storage("local-nvme", 2.0 * GB, 7.0 * GB, True, True, False, True),
    Storage("local-sata-ssd", 0.35 * GB, 0.55 * GB, True, True, False, True),
    Storage("throttled-volume", 0.125 * GB, 1.0 * GB, True, False, False, True),
    Storage("nfs", 0.3 * GB, 1.6 * GB, False, False, True, True),
    Storage("object-store", 0.2 * GB, 2.5 * GB, False, False, True, False),
)
LOCAL_STORAGES = frozenset({"local-nvme", "local-sata-ssd"})


@dataclass(frozen=True)
class NodeShape:
    """A GPU node: its CPUs, RAM and GPU slots."""

    cpus: int
    mem_bytes: float
    gpus: int


NODE_SHAPES: tuple[NodeShape, ...] = (
    NodeShape(224, 2048 * GB, 8),
    NodeShape(128, 1024 * GB, 8),
    NodeShape(96, 1152 * GB, 8),
    NodeShape(64, 512 * GB, 4),
    NodeShape(48, 384 * GB, 4),
    NodeShape(32, 256 * GB, 2),
)

WORKLOADS: tuple[str, ...] = (
    "llm-pretrain-fsdp",
    "llm-finetune-zero",
    "llm-pipeline-tp",
    "recsys-embeddings",
    "vision-jpeg",
    "video-decode",
    "speech-asr",
    "diffusion",
)
