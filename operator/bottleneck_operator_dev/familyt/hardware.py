"""The parts a family-T job runs on: GPUs, host links, fabrics and storage, from published figures.

Every figure is a vendor datasheet value (or derived from one); docs/familyt.md lists the sources.
Peak rates are dense (no structured sparsity): training kernels do not use 2:4 sparsity.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
TFLOPS = 1e12


@dataclass(frozen=True)
class Gpu:
    """One GPU part.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        peak: precision -> dense peak FLOP/s of the pipe that precision runs on ("fp32" is the
            non-tensor FP32 pipe; a precision the part lacks is absent).
        hbm_bps: device memory bandwidth, B/s.
        nvlink_bps: NVLink bandwidth per GPU, both directions together, B/s (0: none).
        pcie_bps: host link, one direction, x16, B/s.
        tdp_w: board power (the default enforced limit).
        max_clock_mhz: maximum boost SM clock.
        memory_gb: device memory.
    """

    model: str
    peak: dict[str, float]
    hbm_bps: float
    nvlink_bps: float
    pcie_bps: float
    tdp_w: float
    max_clock_mhz: float
    memory_gb: float

    @property
    def tensor_precisions(self) -> tuple[str, ...]:
        return tuple(p for p in ("fp8", "bf16", "fp16", "tf32") if p in self.peak)


PCIE_GEN3, PCIE_GEN4, PCIE_GEN5 = 15.8 * GB, 31.5 * GB, 63.0 * GB

GPUS: tuple[Gpu, ...] = (
    Gpu(
        "Tesla V100-SXM2-32GB",
        {"fp32": 15.7 * TFLOPS, "fp16": 125 * TFLOPS},
        900 * GB,
        300 * GB,
        PCIE_GEN3,
        300,
        1530,
        32,
    ),
    Gpu(
        "NVIDIA A100-SXM4-80GB",
        {"fp32": 19.5 * TFLOPS, "tf32": 156 * TFLOPS, "bf16": 312 * TFLOPS, "fp16": 312 * TFLOPS},
        2039 * GB,
        600 * GB,
        PCIE_GEN4,
        400,
        1410,
        80,
    ),
    Gpu(
        "NVIDIA H100 80GB HBM3",
        {"fp32": 67 * TFLOPS, "tf32": 494.5 * TFLOPS, "bf16": 989 * TFLOPS, "fp16": 989 * TFLOPS, "fp8": 1979 * TFLOPS},
        3350 * GB,
        900 * GB,
        PCIE_GEN5,
        700,
        1980,
        80,
    ),
    Gpu(
        "NVIDIA H100 PCIe",
        {"fp32": 51 * TFLOPS, "tf32": 378 * TFLOPS, "bf16": 756 * TFLOPS, "fp16": 756 * TFLOPS, "fp8": 1513 * TFLOPS},
        2000 * GB,
        0.0,
        PCIE_GEN5,
        350,
        1755,
        80,
    ),
    Gpu(
        "NVIDIA L4",
        {"fp32": 30.3 * TFLOPS, "tf32": 60 * TFLOPS, "bf16": 121 * TFLOPS, "fp16": 121 * TFLOPS, "fp8": 242.5 * TFLOPS},
        300 * GB,
        0.0,
        PCIE_GEN4,
        72,
        2040,
        24,
    ),
    Gpu(
        "NVIDIA A10",
        {"fp32": 31.2 * TFLOPS, "tf32": 62.5 * TFLOPS, "bf16": 125 * TFLOPS, "fp16": 125 * TFLOPS},
        600 * GB,
        0.0,
        PCIE_GEN4,
        150,
        1695,
        24,
    ),
    Gpu("Tesla T4", {"fp32": 8.1 * TFLOPS, "fp16": 65 * TFLOPS}, 320 * GB, 0.0, PCIE_GEN3, 70, 1590, 16),
)


@dataclass(frozen=True)
class Fabric:
    """The network between nodes.

    Attributes:
        name: "ethernet", "roce" or "infiniband".
        node_bps: one node's bandwidth, one direction, all its NICs together, B/s.
        alpha_s: per-message latency of one ring step.
        rdma: traffic bypasses the kernel's netdev counters (node-exporter's infiniband collector sees it).
    """

    name: str
    node_bps: float
    alpha_s: float
    rdma: bool


def fabric(name: str, gbit_per_port: float, ports: int) -> Fabric:
    """A fabric of ``ports`` NICs of ``gbit_per_port`` Gb/s each (per direction)."""
    alpha = {"ethernet": 30e-6, "roce": 8e-6, "infiniband": 5e-6}[name]
    return Fabric(name, gbit_per_port * ports * 1e9 / 8, alpha, name != "ethernet")


@dataclass(frozen=True)
class Storage:
    """Where the training data lives.

    Attributes:
        kind: "sata", "nvme", "nfs" or "object".
        read_bps: sustained sequential read throughput one node gets, B/s.
        local: a block device of the node (reads show in disk and cgroup io counters).
    """

    kind: str
    read_bps: float
    local: bool

    @property
    def blocks(self) -> bool:
        """Readers block in D state (disk, NFS); object-store readers wait on sockets in S state."""
        return self.kind != "object"


STORAGE_RANGES: dict[str, tuple[float, float]] = {
    # SATA SSD ~0.55 GB/s; NVMe Gen3 3.5 to Gen4 7 GB/s; NFS / EFS per client up to ~1.5 GiB/s;
    # HTTP object stores per node, a few hundred MB/s to a few GB/s.
    "sata": (0.25 * GB, 0.55 * GB),
    "nvme": (1.5 * GB, 7.0 * GB),
    "nfs": (0.08 * GB, 1.6 * GB),
    "object": (0.1 * GB, 2.5 * GB),
}
