"""What a family AH Job runs on: GPUs, fabrics, storage and nodes, with figures from public datasheets.

Peak figures are dense (no sparsity). Sources are listed in docs/familyah.md: the NVIDIA A100, H100,
H200, L40S and L4 datasheets for the GPUs, the PCIe per-lane rates for the host links, and the
InfiniBand/Ethernet signalling rates for the fabrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

TERA, GIGA = 1e12, 1e9
T = TypeVar("T")


@dataclass(frozen=True)
class Gpu:
    """One GPU model's datasheet figures.

    Attributes:
        key: short name used in tags.
        model_name: dcgm-exporter's ``modelName`` for it.
        tensor_flops: dense BF16/FP16 tensor FLOP/s.
        fp32_flops: FP32 (non-tensor) FLOP/s.
        hbm_bps: device memory bandwidth, B/s.
        memory_bytes: device memory.
        tdp_w: board power (TDP/TGP), W.
        idle_w: power with no kernel running, W.
        boost_mhz: maximum SM clock.
        nvlink_bps: NVLink bandwidth per GPU per direction, B/s (0: none).
        pcie_bps: host PCIe x16 bandwidth per direction, B/s.
    """

    key: str
    model_name: str
    tensor_flops: float
    fp32_flops: float
    hbm_bps: float
    memory_bytes: float
    tdp_w: float
    idle_w: float
    boost_mhz: float
    nvlink_bps: float
    pcie_bps: float


GEN4, GEN5 = 31.5 * GIGA, 63.0 * GIGA
GPUS: dict[str, Gpu] = {
    g.key: g
    for g in (
        Gpu(
            "a100", "NVIDIA A100-SXM4-80GB", 312 * TERA, 19.5 * TERA, 2039 * GIGA, 80e9, 400, 55, 1410, 300 * GIGA, GEN4
        ),
        Gpu("h100", "NVIDIA H100 80GB HBM3", 989 * TERA, 67 * TERA, 3350 * GIGA, 80e9, 700, 75, 1980, 450 * GIGA, GEN5),
        Gpu("h200", "NVIDIA H200", 989 * TERA, 67 * TERA, 4800 * GIGA, 141e9, 700, 75, 1980, 450 * GIGA, GEN5),
        Gpu("l40s", "NVIDIA L40S", 362 * TERA, 91.6 * TERA, 864 * GIGA, 48e9, 350, 35, 2520, 0.0, GEN4),
        Gpu("l4", "NVIDIA L4", 121 * TERA, 30.3 * TERA, 300 * GIGA, 24e9, 72, 16, 2040, 0.0, GEN4),
    )
}


@dataclass(frozen=True)
class Fabric:
    """A node-to-node network: signalling rate per port, RDMA or kernel TCP, achievable share."""

    key: str
    gbit: float
    rdma: bool
    efficiency: float

    def bps(self, ports: int) -> float:
        """Bytes per second a node's ``ports`` deliver to collectives."""
        return ports * self.gbit * 1e9 / 8 * self.efficiency


FABRICS: dict[str, Fabric] = {
    f.key: f
    for f in (
        Fabric("ib-ndr", 400, True, 0.92),
        Fabric("ib-hdr", 200, True, 0.92),
        Fabric("roce-200", 200, True, 0.85),
        Fabric("roce-100", 100, True, 0.85),
        Fabric("eth-100", 100, False, 0.55),
        Fabric("eth-25", 25, False, 0.6),
    )
}


@dataclass(frozen=True)
class Storage:
    """Where the training data is read from.

    Attributes:
        key: tag name.
        local: a block device of the node (shows in disk and cgroup io counters).
        http: read through the pod's own sockets (object stores): no iowait, pod network bytes.
        low_bps, high_bps: range of the throughput a node gets from it.
        io_size: typical request size, bytes.
    """

    key: str
    local: bool
    http: bool
    low_bps: float
    high_bps: float
    io_size: float


STORAGES: dict[str, Storage] = {
    s.key: s
    for s in (
        Storage("nvme-gen4", True, False, 3.0e9, 7.0e9, 131072.0),
        Storage("sata-ssd", True, False, 0.3e9, 0.55e9, 131072.0),
        Storage("nfs", False, False, 0.15e9, 1.5e9, 1048576.0),
        Storage("object-store", False, True, 0.08e9, 1.2e9, 8388608.0),
    )
}


def pick(rng: np.random.Generator, items: Sequence[T], weights: Sequence[float] | None = None) -> T:
    """One of ``items``, with the given (unnormalised) weights."""
    if weights is None:
        return items[int(rng.integers(len(items)))]
    w = np.asarray(weights, dtype=np.float64)
    return items[int(rng.choice(len(items), p=w / w.sum()))]


def node_cpus(rng: np.random.Generator, gpu: Gpu, gpus_per_node: int) -> int:
    """Cores of a node that holds ``gpus_per_node`` GPUs of this model (typical server shapes)."""
    if gpu.key in ("a100", "h100", "h200"):
        return int(pick(rng, (96, 128, 192, 224)))
    if gpu.key == "l40s":
        return int(pick(rng, (48, 64, 96, 128)))
    return int(max(8 * gpus_per_node, pick(rng, (16, 32, 48, 64, 96))))


def node_memory(rng: np.random.Generator, cpus: int) -> float:
    """Node RAM in bytes: 4 to 16 GiB per core."""
    return float(cpus * pick(rng, (4, 8, 8, 16)) * 2**30)


def clock_factor(rng: np.random.Generator, power_cap_frac: float) -> float:
    """Sustained SM clock as a share of boost under a power cap (cube-root law) and part-to-part spread."""
    capped = min(1.0, power_cap_frac ** (1 / 3) * 1.04)
    return float(capped * rng.uniform(0.93, 1.0))
