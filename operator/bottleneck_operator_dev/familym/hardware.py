"""The machines family M's jobs run on: GPU boards, nodes, fabrics and storage, from published figures.

Board figures are the vendors' datasheets: dense BF16 tensor TFLOPS, HBM/GDDR bandwidth, board
power (TDP) and maximum boost clock; NVLink per-GPU bandwidth; host PCIe generation. PCIe x16 per
direction: Gen4 ~31.5 GB/s, Gen5 ~63 GB/s (PCI-SIG per-lane rates). NICs: 25-400 Gb/s Ethernet,
InfiniBand HDR 200 / NDR 400 Gb/s per port. Storage: SATA SSD ~0.55 GB/s, NVMe Gen4 ~7 GB/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU model as dcgm-exporter names it, with its datasheet figures.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tflops: dense BF16/FP16 tensor TFLOPS.
        hbm_bps: memory bandwidth, bytes/s.
        tdp_w: board power limit at the factory setting, W.
        idle_w: typical idle draw, W.
        max_clock_mhz: maximum SM boost clock, MHz.
        nvlink_bps: NVLink bandwidth per GPU per direction, bytes/s (0: none, PCIe only).
        pcie_bps: host link per direction, bytes/s.
        fb_mib: framebuffer, MiB.
        has_prof: whether DCGM profiling (PROF) fields exist on it.
    """

    model: str
    tflops: float
    hbm_bps: float
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    nvlink_bps: float
    pcie_bps: float
    fb_mib: float
    has_prof: bool = True


# Datasheets: A100 (NVIDIA A100 datasheet, 2021), H100/H200 (NVIDIA H100/H200 datasheets),
# L40S and L4 (NVIDIA L40S/L4 product briefs), A10G (AWS G5 documentation / NVIDIA A10 datasheet).
BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 312, 2.039e12, 400, 55, 1410, 300 * GB, 31.5 * GB, 81920),
    Board("NVIDIA A100-SXM4-40GB", 312, 1.555e12, 400, 52, 1410, 300 * GB, 31.5 * GB, 40960),
    Board("NVIDIA A100 80GB PCIe", 312, 1.935e12, 300, 45, 1410, 0.0, 31.5 * GB, 81920),
    Board("NVIDIA H100 80GB HBM3", 989, 3.35e12, 700, 70, 1980, 450 * GB, 63 * GB, 81559),
    Board("NVIDIA H100 PCIe", 756, 2.0e12, 350, 48, 1755, 0.0, 63 * GB, 81559),
    Board("NVIDIA H200", 989, 4.8e12, 700, 75, 1980, 450 * GB, 63 * GB, 143771),
    Board("NVIDIA L40S", 362, 0.864e12, 350, 36, 2520, 0.0, 31.5 * GB, 46068),
    Board("NVIDIA A10G", 125, 0.6e12, 300, 28, 1710, 0.0, 31.5 * GB, 23028),
    Board("NVIDIA L4", 121, 0.3e12, 72, 16, 2040, 0.0, 31.5 * GB, 23034),
)

# Boards with NVLink between the GPUs of a node (SXM); the rest talk peer to peer over PCIe.
NVLINK_BOARDS = tuple(b for b in BOARDS if b.nvlink_bps > 0)


@dataclass(frozen=True)
class Storage:
    """Where a job's dataset lives.

    Attributes:
        kind: "nvme", "sata", "block-volume" (cloud volume throttled above the device), "nfs",
            "object-store" (HTTP: S3/GCS, read through sockets) or "page-cache" (warm after one epoch).
        bps: the throughput the path gives one node, bytes/s.
        blocking: whether readers sleep in D state (iowait, io pressure); object-store readers do not.
        local: whether the bytes show as block-device reads on the node.
    """

    kind: str
    bps: float
    blocking: bool
    local: bool


def draw_storage(rng: np.random.Generator, kind: str) -> Storage:
    """A storage path of one kind, with a throughput from its published range."""
    if kind == "nvme":
        return Storage(kind, float(rng.uniform(2.5, 7.0)) * GB, True, True)
    if kind == "sata":
        return Storage(kind, float(rng.uniform(0.35, 0.55)) * GB, True, True)
    if kind == "block-volume":
        # gp3/pd-balanced style volumes: 125-1000 MB/s provisioned; the device queue is shallow.
        return Storage(kind, float(rng.uniform(0.125, 1.0)) * GB, True, True)
    if kind == "nfs":
        return Storage(kind, float(rng.uniform(0.2, 1.5)) * GB, True, False)
    if kind == "object-store":
        # Bounded per request by latency, not bandwidth: the per-node figure is what the readers reach.
        return Storage(kind, float(rng.uniform(0.5, 3.0)) * GB, False, False)
    return Storage("page-cache", 20 * GB, False, False)


@dataclass(frozen=True)
class Fabric:
    """How the nodes of a job exchange gradients.

    Attributes:
        kind: "ib" (InfiniBand or RoCE: RDMA, invisible to netdev counters) or "tcp" (plain Ethernet).
        bps: per-node bandwidth per direction, bytes/s.
        gpudirect: RDMA traffic passes each GPU's PCIe (symmetric RX and TX there).
    """

    kind: str
    bps: float
    gpudirect: bool


def draw_fabric(rng: np.random.Generator) -> Fabric:
    """A fabric as clusters have them: most training fabrics are RDMA, many smaller ones TCP."""
    if rng.random() < 0.55:
        ports = int(rng.choice([1, 2, 4, 8]))
        gbps = float(rng.choice([200.0, 400.0]))
        return Fabric("ib", ports * gbps / 8 * GB * 0.92, bool(rng.random() < 0.8))
    gbps = float(rng.choice([25.0, 50.0, 100.0]))
    # TCP through the kernel reaches 70-90 % of line rate for NCCL sockets.
    return Fabric("tcp", gbps / 8 * GB * float(rng.uniform(0.7, 0.9)), False)


@dataclass(frozen=True)
class Node:
    """One node of the job's pods.

    Attributes:
        name: the node's name.
        cpus: logical CPUs.
        mem_bytes: RAM.
        swap_bytes: swap (0: none; many Kubernetes nodes run without).
        neighbour_cores: cores other workloads use on it (inference, CPU batch); 0 on dedicated nodes.
        neighbours: how many other pods run there.
    """

    name: str
    cpus: int
    mem_bytes: float
    swap_bytes: float
    neighbour_cores: float
    neighbours: int


def draw_node(rng: np.random.Generator, name: str, gpus: int, shared: bool) -> Node:
    """A GPU node: 8-GPU servers carry 96-224 CPUs, smaller ones 16-64 per few GPUs."""
    cpus = int(rng.choice([96, 128, 192, 224])) if gpus >= 4 else int(rng.choice([16, 32, 48, 64]))
    mem = float(rng.choice([0.5, 1.0, 2.0])) * 1e12 if gpus >= 4 else float(rng.choice([64, 128, 256])) * 1e9
    swap = float(mem * rng.uniform(0.05, 0.25)) if rng.random() < 0.3 else 0.0
    neighbours = int(rng.integers(1, 9)) if shared else 0
    neighbour_cores = float(rng.uniform(0.05, 0.5) * cpus) if shared else float(rng.uniform(0.0, 0.02) * cpus)
    return Node(name, cpus, mem, swap, neighbour_cores, neighbours)
