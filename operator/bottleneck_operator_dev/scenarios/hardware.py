"""The second family's hardware mix: GPU parts, fabrics and storage, drawn with their own weights.

Figures are NVIDIA's datasheet values as collected in the project's TELEMETRY.md ("Hardware
figures"): PCIe x16 per direction Gen3 15.8, Gen4 31.5, Gen5 63 GB/s; NVLink per GPU (both
directions) 300 (V100), 600 (A100), 900 (H100/H200) GB/s; storage SATA 0.55, NVMe Gen3 3.5 / Gen4 7
GB/s, network file systems ~1.5 GiB/s per client at best. Power limits and clocks are the parts'
published TDP and maximum boost clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GB = 1e9


@dataclass(frozen=True)
class Part:
    """One GPU part as dcgm-exporter names it, with the figures the renderer needs."""

    model_name: str
    pcie_bps: float  # per direction
    nvlink_bps: float  # per GPU, both directions summed; 0 without NVLink
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    memory_gb: float
    mig: bool  # supports MIG
    weight: float  # share of the mix


PARTS: tuple[Part, ...] = (
    Part("NVIDIA H100 80GB HBM3", 63 * GB, 900 * GB, 700.0, 70.0, 1980.0, 80, True, 3.0),
    Part("NVIDIA H200", 63 * GB, 900 * GB, 700.0, 75.0, 1980.0, 141, True, 1.0),
    Part("NVIDIA A100-SXM4-80GB", 31.5 * GB, 600 * GB, 400.0, 55.0, 1410.0, 80, True, 3.0),
    Part("NVIDIA A100-SXM4-40GB", 31.5 * GB, 600 * GB, 400.0, 50.0, 1410.0, 40, True, 1.0),
    Part("NVIDIA H100 PCIe", 63 * GB, 0.0, 350.0, 50.0, 1755.0, 80, True, 1.0),
    Part("NVIDIA A10G", 31.5 * GB, 0.0, 300.0, 25.0, 1710.0, 24, False, 1.5),
    Part("NVIDIA L4", 31.5 * GB, 0.0, 72.0, 16.0, 2040.0, 24, False, 1.5),
    Part("NVIDIA L40S", 31.5 * GB, 0.0, 350.0, 35.0, 2520.0, 48, False, 1.0),
    Part("Tesla V100-SXM2-32GB", 15.8 * GB, 300 * GB, 300.0, 40.0, 1530.0, 32, False, 0.7),
)


@dataclass(frozen=True)
class Fabric:
    """How the GPUs of different nodes talk."""

    kind: str  # "ethernet" (TCP, counted by node_network_*), "rdma" (GPUDirect: bypasses them)
    nic_bps: float  # per NIC, per direction
    nics: int  # NICs per node
    gpudirect: bool


@dataclass(frozen=True)
class Storage:
    """Where the dataset comes from and how a reader waits on it."""

    kind: str  # "nvme", "sata", "nfs", "fuse", "http", "mmap"
    bps: float  # deliverable bytes/s to one node
    request_bytes: float  # bytes per completed read (for reads/s)


def draw_part(rng: np.random.Generator) -> Part:
    w = np.array([p.weight for p in PARTS])
    return PARTS[int(rng.choice(len(PARTS), p=w / w.sum()))]


def draw_fabric(rng: np.random.Generator, gpus_per_node: int) -> Fabric:
    r = rng.random()
    if r < 0.4:
        gbit = float(rng.choice([25.0, 50.0, 100.0, 200.0]))
        return Fabric("ethernet", gbit / 8 * GB, int(rng.choice([1, 2])), False)
    # InfiniBand HDR/NDR, often one NIC per GPU on 8-GPU nodes (rail-optimised)
    gbit = float(rng.choice([200.0, 400.0]))
    nics = gpus_per_node if rng.random() < 0.6 else max(1, gpus_per_node // 2)
    return Fabric("rdma", gbit / 8 * GB, nics, bool(rng.random() < 0.85))


def draw_storage(rng: np.random.Generator) -> Storage:
    kind = str(rng.choice(["nvme", "sata", "nfs", "fuse", "http", "mmap"], p=[0.22, 0.08, 0.2, 0.12, 0.23, 0.15]))
    if kind == "nvme":
        return Storage(kind, float(rng.uniform(2.5, 7.0)) * GB, float(rng.uniform(128e3, 1e6)))
    if kind == "sata":
        return Storage(kind, float(rng.uniform(0.35, 0.55)) * GB, float(rng.uniform(64e3, 256e3)))
    if kind in ("nfs", "fuse"):
        return Storage(kind, float(rng.uniform(0.1, 1.6)) * GB, 1e6)
    if kind == "http":
        # per-connection object-store throughput (~50-100 MB/s) times the readers' connections
        return Storage(kind, float(rng.uniform(0.08, 2.0)) * GB, 8e6)
    return Storage(kind, float(rng.uniform(1.0, 6.0)) * GB, 128e3)  # mmap over a local NVMe
