"""Published figures of the parts family W's clusters are built from (sources in docs/familyw.md).

Nominal figures only: what a stage really delivers is a nominal figure times an efficiency that
the plan draws per Job, because no training step reaches a datasheet's peak.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Gpu:
    """One GPU part.

    Attributes:
        key: short id used in tags.
        model_name: dcgm-exporter's ``modelName`` label.
        tflops: dense BF16/FP16 tensor TFLOPS (FP16 for V100).
        hbm: memory bandwidth, B/s.
        nvlink: NVLink bandwidth per GPU, both directions together, B/s (0: PCIe-only part).
        pcie: host link bandwidth per direction, x16, B/s.
        tdp: board power, W (the default enforced limit).
        max_clock: maximum boost SM clock, MHz.
        idle: idle board power, W.
        prof: which PROF fields the part emits ("full", or "gr-only" where groups are multiplexed).
    """

    key: str
    model_name: str
    tflops: float
    hbm: float
    nvlink: float
    pcie: float
    tdp: float
    max_clock: float
    idle: float
    prof: str = "full"


GPUS: tuple[Gpu, ...] = (
    Gpu("v100", "Tesla V100-SXM2-32GB", 125.0, 900 * GB, 300 * GB, 15.8 * GB, 300.0, 1530.0, 40.0),
    Gpu("a100", "NVIDIA A100-SXM4-80GB", 312.0, 2039 * GB, 600 * GB, 31.5 * GB, 400.0, 1410.0, 55.0),
    Gpu("h100", "NVIDIA H100 80GB HBM3", 989.0, 3350 * GB, 900 * GB, 63.0 * GB, 700.0, 1980.0, 70.0),
    Gpu("h100pcie", "NVIDIA H100 PCIe", 756.0, 2000 * GB, 0.0, 63.0 * GB, 350.0, 1755.0, 50.0),
    Gpu("l4", "NVIDIA L4", 121.0, 300 * GB, 0.0, 31.5 * GB, 72.0, 2040.0, 16.0),
    Gpu("a10", "NVIDIA A10", 125.0, 600 * GB, 0.0, 31.5 * GB, 150.0, 1695.0, 20.0),
    Gpu("t4", "Tesla T4", 65.0, 320 * GB, 0.0, 15.8 * GB, 70.0, 1590.0, 10.0, prof="gr-only"),
)
# How often each part is drawn: the datacenter parts that multi-GPU training mostly runs on first.
GPU_WEIGHTS: tuple[float, ...] = (0.10, 0.32, 0.24, 0.10, 0.10, 0.08, 0.06)


@dataclass(frozen=True)
class Storage:
    """Where the dataset lives.

    Attributes:
        kind: "nvme", "sata" (local block devices), "nfs" (network file system), "object" (HTTP object store).
        bandwidth: per-pod throughput ceiling, B/s, before other tenants take their share.
        latency: median per-request latency, s.
        request: bytes per request.
        local: reads are block IO on the node (seen by diskstats, io.stat, cAdvisor's fs reads).
        dstate: readers wait in D state (iowait, io pressure); HTTP readers wait in sockets instead.
    """

    kind: str
    bandwidth: float
    latency: float
    request: float
    local: bool
    dstate: bool


STORAGES: tuple[Storage, ...] = (
    Storage("nvme", 7.0 * GB, 0.0002, 512e3, True, True),
    Storage("nvme3", 3.5 * GB, 0.0002, 512e3, True, True),
    Storage("sata", 0.55 * GB, 0.0005, 256e3, True, True),
    Storage("nfs", 1.2 * GB, 0.004, 1e6, False, True),
    Storage("object", 1.6 * GB, 0.045, 8e6, False, False),
)

# Node interconnects: (kind, per-port bits/s). RDMA kinds bypass netdev counters.
FABRICS: tuple[tuple[str, float], ...] = (
    ("eth", 25e9),
    ("eth", 100e9),
    ("roce", 100e9),
    ("roce", 200e9),
    ("ib", 200e9),
    ("ib", 400e9),
)

# Efficiencies: what a stage reaches against its nominal figure (ranges drawn per Job).
MATMUL_EFFICIENCY = (0.45, 0.72)  # model FLOPs utilisation of dense matmul kernels
HBM_EFFICIENCY = (0.78, 0.9)  # STREAM-like kernels reach ~80-90 % of peak bandwidth
PCIE_EFFICIENCY = (0.75, 0.85)  # TLP/DLLP overhead and pinned-memory copies
NVLINK_EFFICIENCY = (0.7, 0.85)  # NCCL ring bus bandwidth against the link's peak
NET_EFFICIENCY = (0.8, 0.92)  # TCP or RDMA goodput against line rate
LAUNCH_SECONDS = (6e-6, 14e-6)  # PyTorch eager: host-side dispatch and launch per kernel
