"""Published hardware figures the programs are built from (sources in docs/familyy.md).

Only datasheet-level numbers live here: what a board, a link or a device can deliver. What a
workload asks of them is in :mod:`.workload`.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
MB = 1e6
KB = 1e3


@dataclass(frozen=True)
class Gpu:
    """One GPU model.

    Attributes:
        model_name: dcgm-exporter's ``modelName`` label.
        tensor_tflops: dense BF16/FP16 tensor peak.
        fp32_tflops: FP32 (non-tensor) peak: what FP32 training without TF32 runs on.
        hbm_bps: memory bandwidth, bytes/s.
        nvlink_bps: NVLink bandwidth per direction per GPU, bytes/s (0: a PCIe-only board).
        pcie_bps: host PCIe x16 per direction, bytes/s.
        tdp_w: board power at its default limit.
        idle_w: power of an idle, clocked-up board.
        max_clock_mhz: maximum SM boost clock.
        memory_gb: framebuffer size.
        prof: whether the board publishes the DCGM profiling fields at all.
    """

    model_name: str
    tensor_tflops: float
    fp32_tflops: float
    hbm_bps: float
    nvlink_bps: float
    pcie_bps: float
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    memory_gb: float
    prof: bool = True


PCIE_GEN3 = 15.8 * GB
PCIE_GEN4 = 31.5 * GB
PCIE_GEN5 = 63.0 * GB

GPUS: tuple[Gpu, ...] = (
    Gpu("Tesla V100-SXM2-32GB", 125, 15.7, 900 * GB, 150 * GB, PCIE_GEN3, 300, 45, 1530, 32),
    Gpu("NVIDIA A100-SXM4-80GB", 312, 19.5, 2039 * GB, 300 * GB, PCIE_GEN4, 400, 60, 1410, 80),
    Gpu("NVIDIA H100 80GB HBM3", 989, 67.0, 3350 * GB, 450 * GB, PCIE_GEN5, 700, 75, 1980, 80),
    Gpu("NVIDIA H100 PCIe", 756, 51.0, 2000 * GB, 0.0, PCIE_GEN5, 350, 50, 1755, 80),
    Gpu("NVIDIA L4", 121, 30.3, 300 * GB, 0.0, PCIE_GEN4, 72, 16, 2040, 24),
    Gpu("NVIDIA A10", 125, 31.2, 600 * GB, 0.0, PCIE_GEN4, 150, 25, 1695, 24),
    Gpu("Tesla T4", 65, 8.1, 320 * GB, 0.0, PCIE_GEN3, 70, 12, 1590, 16, prof=False),
)


@dataclass(frozen=True)
class Storage:
    """Where the dataset lives.

    Attributes:
        name: a short name for tags.
        bps: read throughput a client gets, bytes/s (per node for local devices).
        iops: read requests a client gets per second.
        remote: read over the node's NIC (NFS, object store) rather than a local block device.
        block: shows in block-device counters (io.stat, diskstats, cAdvisor fs reads).
        d_state: readers wait in D state (io pressure, iowait); HTTP readers wait in sockets instead.
        cpu_per_byte: reader CPU seconds per byte (syscalls, TLS and HTTP parsing for object stores).
    """

    name: str
    bps: float
    iops: float
    remote: bool
    block: bool
    d_state: bool
    cpu_per_byte: float


STORAGES: tuple[Storage, ...] = (
    Storage("sata-ssd", 0.55 * GB, 90e3, remote=False, block=True, d_state=True, cpu_per_byte=0.15e-9),
    Storage("nvme-gen3", 3.5 * GB, 500e3, remote=False, block=True, d_state=True, cpu_per_byte=0.1e-9),
    Storage("nvme-gen4", 7.0 * GB, 1000e3, remote=False, block=True, d_state=True, cpu_per_byte=0.1e-9),
    Storage("nfs", 1.0 * GB, 20e3, remote=True, block=False, d_state=True, cpu_per_byte=0.4e-9),
    Storage("efs", 1.5 * 1.074 * GB, 35e3, remote=True, block=False, d_state=True, cpu_per_byte=0.4e-9),
    Storage("object-store", 1.2 * GB, 5.5e3, remote=True, block=False, d_state=False, cpu_per_byte=1.5e-9),
)


@dataclass(frozen=True)
class Fabric:
    """The node's network for collectives.

    Attributes:
        name: a short name for tags.
        bps: bytes/s per direction per node.
        rdma: collectives bypass the kernel's stack (InfiniBand, RoCE): netdev counters never see them.
        latency_s: per-message latency of one collective hop.
    """

    name: str
    bps: float
    rdma: bool
    latency_s: float


FABRICS: tuple[Fabric, ...] = (
    Fabric("eth-10g", 10e9 / 8, rdma=False, latency_s=40e-6),
    Fabric("eth-25g", 25e9 / 8, rdma=False, latency_s=30e-6),
    Fabric("eth-100g", 100e9 / 8, rdma=False, latency_s=25e-6),
    Fabric("roce-100g", 100e9 / 8, rdma=True, latency_s=6e-6),
    Fabric("ib-hdr", 200e9 / 8, rdma=True, latency_s=4e-6),
    Fabric("ib-ndr", 400e9 / 8, rdma=True, latency_s=3e-6),
)

# Front-end Ethernet every node has, for storage and the control plane, beside any RDMA fabric.
FRONT_END_NIC_BPS = (25e9 / 8, 100e9 / 8)
NVLINK_LATENCY_S = 3e-6
PCIE_PEER_LATENCY_S = 8e-6
PAGE = 4096.0
