"""The machines family N's jobs run on: GPU boards, nodes, storage and fabrics, from public datasheets.

Every figure here is a vendor's published number (sources in docs/familyn.md): the board's default
power limit (TDP), its maximum boost clock, its memory bandwidth and size, its NVLink bandwidth and
the PCIe generation of its host link. Nothing here was fitted to any data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GB = 1e9
MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Board:
    """One GPU board.

    Attributes:
        model_name: what nvidia-smi and dcgm-exporter's ``modelName`` label show.
        tdp_w: the default power limit, W.
        idle_w: a typical idle draw with persistence mode on, W.
        boost_mhz: maximum boost SM clock, MHz.
        base_mhz: base SM clock, MHz (what a heavily capped board falls towards).
        hbm_bps: memory bandwidth, bytes/s.
        fb_mib: framebuffer size as dcgm reports it (FB_USED + FB_FREE), MiB.
        nvlink_bps: NVLink bandwidth per GPU, both directions together, bytes/s (0: no NVLink).
        pcie_bps: host link, per direction, x16, bytes/s.
        prof: whether DCGM profiling (PROF) fields exist on it.
        mig: whether it can be split into MIG instances.
        relative_speed: dense BF16 throughput relative to an A100 (sets compute time on mixed nodes).
    """

    model_name: str
    tdp_w: float
    idle_w: float
    boost_mhz: float
    base_mhz: float
    hbm_bps: float
    fb_mib: float
    nvlink_bps: float
    pcie_bps: float
    prof: bool
    mig: bool
    relative_speed: float


PCIE3, PCIE4, PCIE5 = 15.8 * GB, 31.5 * GB, 63.0 * GB

# Datasheet figures (NVIDIA product pages and datasheets; see docs/familyn.md, "Sources").
BOARDS: dict[str, Board] = {
    "a100-sxm": Board("NVIDIA A100-SXM4-80GB", 400, 55, 1410, 1065, 2039 * GB, 81920, 600 * GB, PCIE4, True, True, 1.0),
    "a100-pcie": Board("NVIDIA A100-PCIE-40GB", 250, 35, 1410, 765, 1555 * GB, 40960, 0.0, PCIE4, True, True, 1.0),
    "h100-sxm": Board(
        "NVIDIA H100 80GB HBM3", 700, 70, 1980, 1590, 3350 * GB, 81559, 900 * GB, PCIE5, True, True, 3.17
    ),
    "h100-pcie": Board("NVIDIA H100 PCIe", 350, 50, 1755, 1125, 2000 * GB, 81559, 0.0, PCIE5, True, True, 2.42),
    "h200": Board("NVIDIA H200", 700, 75, 1980, 1590, 4800 * GB, 143771, 900 * GB, PCIE5, True, True, 3.17),
    "l40s": Board("NVIDIA L40S", 350, 35, 2520, 1110, 864 * GB, 46068, 0.0, PCIE4, True, False, 1.17),
    "l4": Board("NVIDIA L4", 72, 16, 2040, 795, 300 * GB, 23034, 0.0, PCIE4, True, False, 0.39),
    "a10": Board("NVIDIA A10", 150, 25, 1695, 885, 600 * GB, 23028, 0.0, PCIE4, True, False, 0.40),
    "v100": Board("Tesla V100-SXM2-32GB", 300, 40, 1530, 1290, 900 * GB, 32768, 300 * GB, PCIE3, True, False, 0.40),
    "t4": Board("Tesla T4", 70, 12, 1590, 585, 320 * GB, 15360, 0.0, PCIE3, True, False, 0.21),
}

# How often each board turns up in the clusters drawn (training fleets today lean on A100/H100).
BOARD_WEIGHTS: dict[str, float] = {
    "a100-sxm": 0.22,
    "a100-pcie": 0.06,
    "h100-sxm": 0.22,
    "h100-pcie": 0.06,
    "h200": 0.10,
    "l40s": 0.10,
    "l4": 0.06,
    "a10": 0.08,
    "v100": 0.06,
    "t4": 0.04,
}

# Boards a node with that board is plausibly paired with as "the older one" in a mixed job.
OLDER: dict[str, str] = {
    "h200": "h100-sxm",
    "h100-sxm": "a100-sxm",
    "h100-pcie": "a100-pcie",
    "a100-sxm": "v100",
    "a100-pcie": "v100",
    "l40s": "a10",
    "l4": "t4",
    "a10": "t4",
    "v100": "t4",
    "t4": "t4",
}


@dataclass(frozen=True)
class Storage:
    """Where a job's dataset is read from.

    Attributes:
        kind: "nvme", "sata", "block-net" (throttled cloud block volume), "nfs", "lustre", "object".
        read_bps: what one client can read at most, bytes/s.
        block: reads pass through a local block device (cgroup io.stat, node disk counters see them).
        iowait: readers sleep in D state (iowait, io pressure); HTTP object-store readers do not.
        request_bytes: typical size of one read request.
        device_bps: what the device underneath could read (above ``read_bps`` when a cgroup io.max
            limit, not the device, sets the pace: the disk then looks idle while readers wait).
    """

    kind: str
    read_bps: float
    block: bool
    iowait: bool
    request_bytes: float
    device_bps: float = 0.0


def draw_storage(rng: np.random.Generator, kind: str | None = None) -> Storage:
    """A dataset location; figures from vendor pages (NVMe Gen4 ~7 GB/s, SATA ~0.55 GB/s, gp3 0.125-1 GB/s)."""
    kinds = ("nvme", "sata", "block-net", "nfs", "lustre", "object")
    chosen = kind or str(rng.choice(kinds, p=(0.28, 0.06, 0.12, 0.18, 0.12, 0.24)))
    if chosen == "nvme":
        return Storage(chosen, float(rng.uniform(3.0, 7.0) * rng.choice((1, 2, 4))) * GB, True, True, 256e3)
    if chosen == "nvme-limited":
        device = float(rng.uniform(3.0, 7.0)) * GB
        return Storage(chosen, float(rng.uniform(0.1, 0.8)) * GB, True, True, 256e3, device)
    if chosen == "sata":
        return Storage(chosen, float(rng.uniform(0.35, 0.55)) * GB, True, True, 128e3)
    if chosen == "block-net":
        return Storage(chosen, float(rng.uniform(0.125, 1.0)) * GB, True, True, 256e3)
    if chosen == "nfs":
        return Storage(chosen, float(rng.uniform(0.2, 1.6)) * GB, False, True, 1e6)
    if chosen == "lustre":
        return Storage(chosen, float(rng.uniform(1.0, 5.0)) * GB, False, True, 1e6)
    return Storage(chosen, float(rng.uniform(0.15, 2.5)) * GB, False, False, 8e6)


@dataclass(frozen=True)
class Fabric:
    """How a job's nodes talk to each other.

    Attributes:
        kind: "ib" (InfiniBand or RoCE: RDMA, invisible to netdev) or "tcp" (plain Ethernet sockets).
        node_bps: what one node can send per direction over it, bytes/s (all ports together).
        gpudirect: RDMA straight to GPU memory (the traffic shows on each GPU's PCIe as RX ~ TX).
    """

    kind: str
    node_bps: float
    gpudirect: bool


def draw_fabric(rng: np.random.Generator) -> Fabric:
    """A node's fabric: IB HDR 200 / NDR 400 Gb/s ports (1-8 of them) or 25-200 GbE."""
    if rng.random() < 0.6:
        ports = int(rng.choice((1, 2, 4, 8), p=(0.25, 0.25, 0.2, 0.3)))
        gbit = float(rng.choice((200.0, 400.0)))
        return Fabric("ib", ports * gbit / 8 * GB * float(rng.uniform(0.85, 0.95)), bool(rng.random() < 0.8))
    gbit = float(rng.choice((25.0, 50.0, 100.0, 200.0), p=(0.3, 0.2, 0.35, 0.15)))
    return Fabric("tcp", gbit / 8 * GB * float(rng.uniform(0.6, 0.9)), False)


@dataclass(frozen=True)
class Node:
    """One node's host side.

    Attributes:
        cpus: logical CPUs.
        mem_bytes: RAM.
        swap_bytes: swap (0 on most Kubernetes nodes; zram or a swap file where NodeSwap is on).
    """

    cpus: int
    mem_bytes: float
    swap_bytes: float


def draw_node(rng: np.random.Generator, gpus: int, swap: bool) -> Node:
    """A host sized for ``gpus`` GPUs: 8-28 CPUs and 32-256 GB of RAM per GPU, as cloud shapes go."""
    cpus = int(max(8, gpus * int(rng.choice((8, 12, 16, 24, 28)))))
    mem = float(gpus * rng.choice((32, 64, 128, 256)) * GB)
    return Node(cpus, mem, float(mem * rng.uniform(0.05, 0.25)) if swap else 0.0)
