"""Published capacities of the boards, links and storage a family Q job runs on.

Figures are vendors' datasheet values (NVIDIA A100, H100, H200, L40S, L4 and A10G datasheets; PCIe
per-lane rates from the PCI-SIG generations; InfiniBand HDR/NDR port rates) or, where marked, derived
from them. Everything a board does in a window is scaled from these, never from another simulator.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU board as dcgm-exporter would describe it.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tdp_w: the board's maximum power limit (datasheet TDP/TGP).
        idle_w: power drawn with no kernel running (derived: typical idle readings, ~15-20 % of TDP).
        boost_mhz: maximum SM boost clock.
        base_mhz: base clock, the floor a power- or thermal-capped board rarely drops under.
        hbm_bps: memory bandwidth, bytes/s.
        nvlink_bps: NVLink bandwidth per direction, bytes/s (0: no NVLink).
        pcie_bps: host PCIe x16 bandwidth per direction, bytes/s.
        fb_mib: framebuffer size, MiB.
        gpus_per_node: the node shapes the board ships in.
    """

    model: str
    tdp_w: float
    idle_w: float
    boost_mhz: float
    base_mhz: float
    hbm_bps: float
    nvlink_bps: float
    pcie_bps: float
    fb_mib: float
    gpus_per_node: tuple[int, ...]


PCIE_GEN4 = 31.5 * GB  # 16 lanes x 1.97 GB/s (derived)
PCIE_GEN5 = 63.0 * GB  # 16 lanes x 3.94 GB/s (derived)

BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 400, 60, 1410, 1065, 2039 * GB, 300 * GB, PCIE_GEN4, 81920, (8,)),
    Board("NVIDIA A100-PCIE-40GB", 250, 40, 1410, 765, 1555 * GB, 0.0, PCIE_GEN4, 40960, (1, 4, 8)),
    Board("NVIDIA H100 80GB HBM3", 700, 90, 1980, 1590, 3350 * GB, 450 * GB, PCIE_GEN5, 81559, (8,)),
    Board("NVIDIA H200", 700, 95, 1980, 1590, 4800 * GB, 450 * GB, PCIE_GEN5, 143771, (8,)),
    Board("NVIDIA L40S", 350, 35, 2520, 1110, 864 * GB, 0.0, PCIE_GEN4, 46068, (1, 4, 8)),
    Board("NVIDIA L4", 72, 16, 2040, 795, 300 * GB, 0.0, PCIE_GEN4, 23034, (1, 2, 4, 8)),
    Board("NVIDIA A10G", 300, 25, 1710, 885, 600 * GB, 0.0, PCIE_GEN4, 23028, (1, 4, 8)),
)


@dataclass(frozen=True)
class Fabric:
    """How a multi-node job's pods reach each other.

    Attributes:
        name: short name.
        rdma: True when the traffic bypasses netdev (InfiniBand, RoCE): it shows on the
            infiniband collector's port counters and, with GPUDirect RDMA, as PCIe RX~TX on the GPUs.
        node_bps: per-node bandwidth per direction, bytes/s (all ports).
    """

    name: str
    rdma: bool
    node_bps: float


FABRICS: tuple[Fabric, ...] = (
    Fabric("ethernet-25g", False, 25e9 / 8),
    Fabric("ethernet-100g", False, 100e9 / 8),
    Fabric("ethernet-200g", False, 200e9 / 8),
    Fabric("ib-hdr-1x", True, 200e9 / 8),
    Fabric("ib-ndr-4x", True, 4 * 400e9 / 8),
    Fabric("ib-ndr-8x", True, 8 * 400e9 / 8),
    Fabric("roce-400g", True, 400e9 / 8),
)


@dataclass(frozen=True)
class Storage:
    """Where the data loader reads from.

    Attributes:
        name: short name.
        bps: what one node can read from it, bytes/s.
        local_block: reads show on the node's disks and in the container's block counters.
        via_network: reads arrive as network receive bytes (NFS, object stores).
        blocking_wait: readers wait in D state (iowait, io pressure) rather than on a socket.
    """

    name: str
    bps: float
    local_block: bool
    via_network: bool
    blocking_wait: bool


STORAGES: dict[str, Storage] = {
    s.name: s
    for s in (
        Storage("local-nvme-gen4", 7.0 * GB, True, False, True),
        Storage("local-nvme-gen3", 3.5 * GB, True, False, True),
        Storage("nfs", 1.2 * GB, False, True, True),
        Storage("object-store", 2.5 * GB, False, True, False),
        Storage("throttled-pv", 0.25 * GB, True, False, True),
        Storage("sata-ssd", 0.55 * GB, True, False, True),
    )
}
