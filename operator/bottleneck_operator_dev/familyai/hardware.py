"""Published hardware figures the generator draws machines from.

Every figure is a vendor datasheet value (see docs/familyai.md for the sources); nothing here is
tuned to any analysis. Bandwidths are bytes per second, compute in FLOP/s, power in watts.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
TFLOP = 1e12


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model as its datasheet gives it.

    Attributes:
        model_name: dcgm-exporter's ``modelName`` label value.
        short: a short tag for the model.
        dense_bf16: dense BF16/FP16 tensor throughput, FLOP/s (no sparsity).
        hbm_bw: device memory bandwidth, B/s.
        memory_bytes: framebuffer size, bytes.
        nvlink_bw: total NVLink bandwidth (both directions, all links), B/s; 0 without NVLink.
        pcie_gen: host PCIe generation (x16).
        tdp_w: maximum board power, W.
        boost_mhz: maximum SM clock, MHz.
        sms: streaming multiprocessors.
        per_node: GPUs a node of this model usually carries (the largest pod size).
    """

    model_name: str
    short: str
    dense_bf16: float
    hbm_bw: float
    memory_bytes: float
    nvlink_bw: float
    pcie_gen: int
    tdp_w: float
    boost_mhz: float
    sms: int
    per_node: int


GPUS: tuple[GpuSpec, ...] = (
    GpuSpec("NVIDIA H100 80GB HBM3", "h100-sxm", 989 * TFLOP, 3.35e12, 80 * GB, 900 * GB, 5, 700.0, 1980.0, 132, 8),
    GpuSpec("NVIDIA H200", "h200-sxm", 989 * TFLOP, 4.8e12, 141 * GB, 900 * GB, 5, 700.0, 1980.0, 132, 8),
    GpuSpec("NVIDIA H100 PCIe", "h100-pcie", 756 * TFLOP, 2.0e12, 80 * GB, 0.0, 5, 350.0, 1755.0, 114, 8),
    GpuSpec("NVIDIA A100-SXM4-80GB", "a100-80", 312 * TFLOP, 2.039e12, 80 * GB, 600 * GB, 4, 400.0, 1410.0, 108, 8),
    GpuSpec("NVIDIA A100-SXM4-40GB", "a100-40", 312 * TFLOP, 1.555e12, 40 * GB, 600 * GB, 4, 400.0, 1410.0, 108, 8),
    GpuSpec("NVIDIA L40S", "l40s", 362 * TFLOP, 864 * GB, 48 * GB, 0.0, 4, 350.0, 2520.0, 142, 8),
    GpuSpec("NVIDIA L4", "l4", 121 * TFLOP, 300 * GB, 24 * GB, 0.0, 4, 72.0, 2040.0, 58, 8),
    GpuSpec("NVIDIA A10", "a10", 125 * TFLOP, 600 * GB, 24 * GB, 0.0, 4, 150.0, 1695.0, 72, 4),
    GpuSpec("Tesla V100-SXM2-32GB", "v100", 125 * TFLOP, 900 * GB, 32 * GB, 300 * GB, 3, 300.0, 1530.0, 80, 8),
)
# How often each model is drawn: recent datacenter parts dominate today's training clusters.
GPU_WEIGHTS: tuple[float, ...] = (0.24, 0.14, 0.08, 0.2, 0.07, 0.1, 0.07, 0.05, 0.05)

# PCIe x16, one direction, after 128b/130b (Gen3+) encoding.
PCIE_BW: dict[int, float] = {3: 15.75 * GB, 4: 31.5 * GB, 5: 63.0 * GB}


@dataclass(frozen=True)
class StorageSpec:
    """Where a job reads its samples from.

    Attributes:
        kind: short name (a tag).
        low, high: the range of sustained read bandwidth one client gets, B/s.
        block: reads show in the block layer (node disk counters, cgroup io.stat, cAdvisor fs reads).
        network: reads arrive over the node's network interfaces.
        iowait: readers wait in io_schedule (iowait, io pressure, D state).
        dstate: readers sit in uninterruptible sleep while waiting (D state).
        local: a device inside the node (the verdict's local-disk mechanism).
    """

    kind: str
    low: float
    high: float
    block: bool
    network: bool
    iowait: bool
    dstate: bool
    local: bool


STORAGES: tuple[StorageSpec, ...] = (
    StorageSpec("local-nvme", 2.5 * GB, 7.0 * GB, True, False, True, True, True),
    StorageSpec("local-sata", 0.4 * GB, 0.55 * GB, True, False, True, True, True),
    StorageSpec("cloud-block", 0.125 * GB, 1.0 * GB, True, False, True, True, False),
    StorageSpec("nfs", 0.2 * GB, 1.6 * GB, False, True, True, True, False),
    StorageSpec("object-http", 0.15 * GB, 2.0 * GB, False, True, False, False, False),
    StorageSpec("fuse", 0.1 * GB, 0.8 * GB, False, True, False, True, False),
)
STORAGE_WEIGHTS: tuple[float, ...] = (0.3, 0.07, 0.16, 0.2, 0.15, 0.12)


@dataclass(frozen=True)
class FabricSpec:
    """The network between nodes that collectives use.

    Attributes:
        kind: short name (a tag).
        port_gbit: line rate of one port, Gbit/s, drawn from ``port_gbit`` choices.
        rdma: traffic bypasses the kernel (InfiniBand, RoCE): node_infiniband counters see it,
            netdev counters do not.
        efficiency: (low, high) share of line rate NCCL reaches.
    """

    kind: str
    port_gbit: tuple[float, ...]
    rdma: bool
    efficiency: tuple[float, float]


FABRICS: tuple[FabricSpec, ...] = (
    FabricSpec("ib", (100.0, 200.0, 400.0), True, (0.82, 0.93)),
    FabricSpec("roce", (100.0, 200.0, 400.0), True, (0.75, 0.9)),
    FabricSpec("tcp", (25.0, 50.0, 100.0, 200.0), False, (0.45, 0.8)),
)
FABRIC_WEIGHTS: tuple[float, ...] = (0.45, 0.3, 0.25)
