"""The hardware family L's clusters are built from: boards, storage, fabrics.

Figures are vendors' published ones (datasheets), cited in docs/familyl.md; where a figure here is
derived from them the comment says so. Bandwidths are bytes per second, per direction.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU board as dcgm-exporter names it, with the figures the step model needs.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tflops: dense BF16/FP16 tensor throughput (TFLOPS).
        hbm_bps: memory bandwidth.
        tdp_w: the board's default power limit.
        idle_w: power drawn with a context open and nothing running.
        boost_mhz: maximum SM clock.
        base_mhz: base SM clock (what a power-capped board falls towards).
        nvlink_bps: NVLink bandwidth per direction over all links; 0 without NVLink.
        pcie_bps: host PCIe x16 bandwidth per direction.
        has_prof: whether DCGM profiling fields exist on it.
    """

    model: str
    tflops: float
    hbm_bps: float
    tdp_w: float
    idle_w: float
    boost_mhz: float
    base_mhz: float
    nvlink_bps: float
    pcie_bps: float
    has_prof: bool = True


# Datasheet figures (NVIDIA A100, H100, H200, L40S, L4, A10 datasheets; the Ada Lovelace whitepaper for
# the RTX 4090's dense FP16 tensor rate with FP32 accumulation). NVLink per direction is half
# the bidirectional figure the datasheets print (derived). PCIe x16 per direction: Gen4 31.5 GB/s,
# Gen5 63 GB/s (derived from the per-lane rate).
BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 312, 2039 * GB, 400, 55, 1410, 1065, 300 * GB, 31.5 * GB),
    Board("NVIDIA A100-SXM4-40GB", 312, 1555 * GB, 400, 52, 1410, 1065, 300 * GB, 31.5 * GB),
    Board("NVIDIA A100 80GB PCIe", 312, 1935 * GB, 300, 45, 1410, 1065, 0.0, 31.5 * GB),
    Board("NVIDIA H100 80GB HBM3", 989, 3350 * GB, 700, 75, 1980, 1590, 450 * GB, 63 * GB),
    Board("NVIDIA H100 PCIe", 756, 2000 * GB, 350, 50, 1755, 1125, 0.0, 63 * GB),
    Board("NVIDIA H200", 989, 4800 * GB, 700, 80, 1980, 1590, 450 * GB, 63 * GB),
    Board("NVIDIA L40S", 362, 864 * GB, 350, 35, 2520, 1110, 0.0, 31.5 * GB),
    Board("NVIDIA L4", 121, 300 * GB, 72, 16, 2040, 795, 0.0, 31.5 * GB),
    Board("NVIDIA A10", 125, 600 * GB, 150, 20, 1695, 885, 0.0, 31.5 * GB),
    # A consumer board some teams rack anyway: no DCGM profiling fields at all (only DEV).
    Board("NVIDIA GeForce RTX 4090", 165, 1008 * GB, 450, 25, 2520, 2235, 0.0, 31.5 * GB, has_prof=False),
)


@dataclass(frozen=True)
class Storage:
    """Where a job's samples live, and how reads from it show on the node.

    Attributes:
        kind: a short name.
        read_bps: what one client can read from it.
        local: reads show as block-device reads (node_disk_*, cAdvisor fs reads); otherwise as
            network receive bytes.
        dstate: readers wait in D state (iowait, io pressure); HTTP object-store readers do not.
    """

    kind: str
    read_bps: float
    local: bool
    dstate: bool


# NVMe Gen4 ~7 GB/s, SATA SSD ~0.55 GB/s, EFS per client ~1.5 GiB/s (vendors' figures); NFS over a
# 25 GbE link and S3 through boto3 streams are set from the links they ride on (derived).
STORAGES: tuple[Storage, ...] = (
    Storage("nvme", 7.0 * GB, True, True),
    Storage("sata-ssd", 0.55 * GB, True, True),
    Storage("nfs", 1.2 * GB, False, True),
    Storage("efs", 1.6 * GB, False, True),
    Storage("object-store", 0.9 * GB, False, False),
)


@dataclass(frozen=True)
class Fabric:
    """The network between nodes.

    Attributes:
        name: a short name.
        bps: per node per direction (all of the node's ports together).
        rdma: traffic bypasses netdev counters; shows on node_infiniband_* and as GPU PCIe bytes.
    """

    name: str
    bps: float
    rdma: bool


# 8 x NDR 400 Gb/s per node (DGX H100 layout), 4 x HDR 200 Gb/s, one 100 GbE RoCE port, one 25 GbE
# TCP port: Gb/s divided by 8 (derived).
FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-ndr-8x", 8 * 50 * GB, True),
    Fabric("ib-hdr-4x", 4 * 25 * GB, True),
    Fabric("roce-100g", 12.5 * GB, True),
    Fabric("tcp-25g", 3.1 * GB, False),
)
