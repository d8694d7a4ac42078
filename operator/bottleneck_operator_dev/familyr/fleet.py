"""The hardware and cluster variety of family R: boards, fabrics, storage and how clusters export.

Board figures are the vendors' datasheet numbers (NVIDIA A100, H100, H200, L40S, L4 and A10G
datasheets): board power (TDP), HBM/GDDR bandwidth, the PCIe generation and width the card is built
for, NVLink bandwidth per GPU (0 for PCIe cards without a bridge), maximum SM boost clock and memory
size. Link efficiencies (about 0.8 of the raw PCIe rate for large DMA copies, about 0.9 of an
InfiniBand/Ethernet line rate for NCCL) are the usual published measurements, not tuned values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU model, as its datasheet gives it."""

    model: str
    tdp_w: float
    idle_w: float
    hbm_bps: float
    pcie_gen: int
    nvlink_bps: float
    max_clock_mhz: float
    memory_bytes: float


BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 400.0, 55.0, 2039 * GB, 4, 600 * GB, 1410.0, 80 * GB),
    Board("NVIDIA A100-PCIE-40GB", 250.0, 35.0, 1555 * GB, 4, 0.0, 1410.0, 40 * GB),
    Board("NVIDIA H100 80GB HBM3", 700.0, 70.0, 3350 * GB, 5, 900 * GB, 1980.0, 80 * GB),
    Board("NVIDIA H100 PCIe", 350.0, 45.0, 2000 * GB, 5, 0.0, 1755.0, 80 * GB),
    Board("NVIDIA H200", 700.0, 75.0, 4800 * GB, 5, 900 * GB, 1980.0, 141 * GB),
    Board("NVIDIA L40S", 350.0, 35.0, 864 * GB, 4, 0.0, 2520.0, 48 * GB),
    Board("NVIDIA L4", 72.0, 16.0, 300 * GB, 4, 0.0, 2040.0, 24 * GB),
    Board("NVIDIA A10G", 300.0, 30.0, 600 * GB, 4, 0.0, 1710.0, 24 * GB),
)

# Raw PCIe rate per lane and direction, by generation (PCI-SIG: 8, 16, 32 GT/s, 128b/130b coding).
PCIE_LANE_BPS = {3: 0.985 * GB, 4: 1.969 * GB, 5: 3.938 * GB}
PCIE_EFFICIENCY = 0.8


@dataclass(frozen=True)
class Fabric:
    """How a job's nodes talk: Ethernet through netdev counters, or RDMA seen only by IB port counters."""

    name: str
    rdma: bool
    line_bps: float  # per node, all ports, bytes/s


FABRICS: tuple[Fabric, ...] = (
    Fabric("ethernet-25g", False, 25e9 / 8),
    Fabric("ethernet-100g", False, 100e9 / 8),
    Fabric("roce-200g", True, 200e9 / 8),
    Fabric("infiniband-hdr-4x", True, 4 * 200e9 / 8),
    Fabric("infiniband-ndr-8x", True, 8 * 400e9 / 8),
)
NCCL_EFFICIENCY = 0.9


@dataclass(frozen=True)
class Storage:
    """Where the samples come from; remote kinds never show in block-device or cgroup io.stat reads."""

    name: str
    local: bool
    read_bps: float
    request_bytes: float


STORAGES: tuple[Storage, ...] = (
    Storage("local-nvme", True, 6.5 * GB, 128e3),
    Storage("local-sata-ssd", True, 0.52 * GB, 128e3),
    Storage("nfs", False, 1.2 * GB, 1e6),
    Storage("object-store", False, 2.5 * GB, 8e6),
    Storage("network-block-volume", True, 0.25 * GB, 256e3),
)


@dataclass(frozen=True)
class Cluster:
    """How one cluster publishes what the job does (the part no simulator pins down).

    Attributes:
        scrape_s: scrape interval of every exporter, seconds.
        missed: share of scrapes that never land.
        field_set: dcgm-exporter's counters file: "dev", "default" or "full".
        families_off: exporters or collectors that are not installed ("sidecar", "node_psi", "node_ib", ...).
        dcgm_layout: "exported-labels" (honorLabels false) or "direct".
        node_layout: "instance-ip" or "node-label".
        shared_nodes: whether other tenants' pods share the job's nodes (no MIG, no exclusivity).
        swap: whether the nodes have swap (only then can host pressure show as swap-in).
    """

    scrape_s: float
    missed: float
    field_set: str
    families_off: frozenset[str]
    dcgm_layout: str
    node_layout: str
    shared_nodes: bool
    swap: bool


def draw_cluster(rng: np.random.Generator) -> Cluster:
    """A cluster's exporter set-up, drawn from the variety real installations show."""
    off: set[str] = set()
    for family, share in (("sidecar", 0.25), ("node_psi", 0.2), ("cadvisor_cfs", 0.3), ("ksm", 0.1)):
        if rng.random() < share:
            off.add(family)
    if rng.random() < 0.5:
        off.add("node_ib")  # the infiniband collector is off by default in node-exporter
    return Cluster(
        scrape_s=float(rng.choice([10.0, 15.0, 15.0, 30.0, 30.0, 60.0])),
        missed=float(rng.choice([0.0, 0.0, 0.01, 0.03])),
        field_set=str(rng.choice(["dev", "default", "default", "full"])),
        families_off=frozenset(off),
        dcgm_layout=str(rng.choice(["exported-labels", "direct"])),
        node_layout=str(rng.choice(["instance-ip", "node-label"])),
        shared_nodes=bool(rng.random() < 0.4),
        swap=bool(rng.random() < 0.6),
    )


def pcie_bps(board: Board, gen: int, lanes: int) -> float:
    """Usable host-to-device bytes/s of a link that trained at ``gen`` x ``lanes``."""
    return PCIE_LANE_BPS[min(gen, board.pcie_gen)] * lanes * PCIE_EFFICIENCY
