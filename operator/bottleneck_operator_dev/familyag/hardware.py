"""Hardware a Job of family AG can land on: GPUs, node shapes, fabrics and storage, from public figures.

Every figure is a datasheet or documentation number (see docs/familyag.md for the sources) or, where
marked "assumed", a round value chosen for the model. Bandwidths are bytes per second, one direction.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
GIB = float(2**30)


@dataclass(frozen=True)
class GpuModel:
    """One GPU product.

    Attributes:
        key: short name used in tags ("a100", "h100", ...).
        model_name: dcgm-exporter's ``modelName`` label for it.
        tensor_flops: dense BF16/FP16 tensor-core peak, FLOP/s.
        vector_flops: non-tensor FP32 peak, FLOP/s.
        hbm_bps: device-memory bandwidth, B/s.
        memory_bytes: framebuffer size, bytes.
        nvlink_bps: NVLink bandwidth per direction, B/s (0: none, peers talk over PCIe).
        pcie_bps: host link per direction (x16 of its generation), B/s.
        tdp_w: board power limit at default, W.
        idle_w: power drawn with a context open and no kernel running (assumed), W.
        max_sm_mhz: maximum boost SM clock, MHz.
        sms: streaming multiprocessors.
        util_period_s: NVML's GPU_UTIL sample period for the product (1/6 s to 1 s; assumed per class).
        node_gpus: GPUs per node in the usual servers for it.
        node_cpus: logical CPUs per node in those servers.
        node_ram: host memory per node in those servers, bytes.
    """

    key: str
    model_name: str
    tensor_flops: float
    vector_flops: float
    hbm_bps: float
    memory_bytes: float
    nvlink_bps: float
    pcie_bps: float
    tdp_w: float
    idle_w: float
    max_sm_mhz: float
    sms: int
    util_period_s: float
    node_gpus: tuple[int, ...]
    node_cpus: tuple[int, ...]
    node_ram: tuple[float, ...]


# PCIe x16 per direction after 128b/130b encoding: Gen4 ~31.5 GB/s, Gen5 ~63 GB/s.
PCIE4 = 31.5 * GB
PCIE5 = 63.0 * GB

GPUS: tuple[GpuModel, ...] = (
    # NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOPS BF16 dense, 19.5 FP32, 2,039 GB/s, NVLink 600 GB/s total.
    GpuModel(
        "a100",
        "NVIDIA A100-SXM4-80GB",
        312e12,
        19.5e12,
        2039 * GB,
        80 * GIB,
        300 * GB,
        PCIE4,
        400.0,
        55.0,
        1410.0,
        108,
        1.0,
        (4, 8),
        (96, 128, 256),
        (1024 * GIB, 1152 * GIB, 2048 * GIB),
    ),
    # NVIDIA H100 datasheet (SXM5): 989 TFLOPS BF16 dense, 67 FP32, 3.35 TB/s, NVLink 900 GB/s total, 700 W.
    GpuModel(
        "h100",
        "NVIDIA H100 80GB HBM3",
        989e12,
        67e12,
        3350 * GB,
        80 * GIB,
        450 * GB,
        PCIE5,
        700.0,
        70.0,
        1980.0,
        132,
        1.0,
        (8,),
        (192, 208, 224),
        (2048 * GIB, 1872 * GIB),
    ),
    # NVIDIA H200 product brief (SXM): same die as H100, 141 GB HBM3e at 4.8 TB/s, up to 700 W.
    GpuModel(
        "h200",
        "NVIDIA H200",
        989e12,
        67e12,
        4800 * GB,
        141 * GB,
        450 * GB,
        PCIE5,
        700.0,
        75.0,
        1980.0,
        132,
        1.0,
        (8,),
        (192, 224),
        (2048 * GIB, 3072 * GIB),
    ),
    # NVIDIA L40S datasheet: 362 TFLOPS BF16 dense, 91.6 FP32, 48 GB GDDR6 at 864 GB/s, PCIe Gen4, 350 W.
    GpuModel(
        "l40s",
        "NVIDIA L40S",
        362e12,
        91.6e12,
        864 * GB,
        48 * GB,
        0.0,
        PCIE4,
        350.0,
        35.0,
        2520.0,
        142,
        1.0 / 6.0,
        (2, 4, 8),
        (64, 96, 128),
        (384 * GIB, 512 * GIB, 768 * GIB),
    ),
    # NVIDIA L4 datasheet: 121 TFLOPS BF16 dense, 30.3 FP32, 24 GB GDDR6 at 300 GB/s, PCIe Gen4, 72 W.
    GpuModel(
        "l4",
        "NVIDIA L4",
        121e12,
        30.3e12,
        300 * GB,
        24 * GB,
        0.0,
        PCIE4,
        72.0,
        16.0,
        2040.0,
        58,
        1.0 / 6.0,
        (1, 2, 4, 8),
        (16, 48, 96),
        (64 * GIB, 192 * GIB, 384 * GIB),
    ),
)


@dataclass(frozen=True)
class Fabric:
    """How a node reaches the other nodes of a multi-node Job.

    Attributes:
        key: tag name ("ib-ndr", "roce-200", "eth-25", ...).
        port_bps: line rate of one port, B/s.
        ports: choices of ports per node (rail-optimised servers carry one per GPU).
        rdma: NCCL runs over RDMA (InfiniBand/RoCE): bytes bypass the kernel's network stack.
        efficiency: share of line rate a large NCCL collective reaches (assumed).
    """

    key: str
    port_bps: float
    ports: tuple[int, ...]
    rdma: bool
    efficiency: float


FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-ndr", 400e9 / 8, (1, 4, 8), True, 0.85),  # InfiniBand NDR 400 Gb/s per port
    Fabric("ib-hdr", 200e9 / 8, (1, 2, 8), True, 0.85),  # InfiniBand HDR 200 Gb/s per port
    Fabric("roce-200", 200e9 / 8, (1, 2, 8), True, 0.8),
    Fabric("roce-100", 100e9 / 8, (1, 2), True, 0.8),
    Fabric("eth-100", 100e9 / 8, (1, 2), False, 0.6),  # NCCL over TCP sockets
    Fabric("eth-50", 50e9 / 8, (1,), False, 0.6),
    Fabric("eth-25", 25e9 / 8, (1,), False, 0.6),
)


@dataclass(frozen=True)
class StorageKind:
    """Where the training data is read from.

    Attributes:
        key: tag name.
        block: reads are block-device I/O on the node (disk counters, cAdvisor fs reads, io.stat).
        pod_net: reads arrive over the pod's own network namespace (HTTP object stores).
        host_net: reads arrive over the node's network in the host namespace (kernel NFS/Lustre clients).
        dstate: readers wait in uninterruptible sleep (iowait, io pressure); HTTP readers sleep in S.
        device_idle: the limit sits above the device (cgroup io.max): the disk looks idle while readers wait.
        bps: low and high bandwidth one node gets, B/s.
        latency_s: low and high time to first byte of one request, s.
        local: the mechanism is a local disk (else network storage).
    """

    key: str
    block: bool
    pod_net: bool
    host_net: bool
    dstate: bool
    device_idle: bool
    bps: tuple[float, float]
    latency_s: tuple[float, float]
    local: bool


STORAGE: tuple[StorageKind, ...] = (
    # NVMe Gen4 ~7 GB/s, Gen3 ~3.5 GB/s, SATA SSD ~0.55 GB/s (TELEMETRY.md figures).
    StorageKind("nvme", True, False, False, True, False, (3.0 * GB, 7.0 * GB), (80e-6, 150e-6), True),
    StorageKind("sata-ssd", True, False, False, True, False, (0.45 * GB, 0.55 * GB), (150e-6, 300e-6), True),
    # A cloud block volume: the provider's throttle is reached with requests in flight on the device.
    StorageKind("block-volume", True, False, False, True, False, (0.125 * GB, 1.0 * GB), (0.5e-3, 1.5e-3), True),
    # A local NVMe behind a cgroup io.max read limit: the device is idle while the readers wait.
    StorageKind("nvme-iomax", True, False, False, True, True, (0.1 * GB, 0.6 * GB), (80e-6, 150e-6), True),
    StorageKind("nfs", False, False, True, True, False, (0.3 * GB, 2.5 * GB), (0.5e-3, 3e-3), False),
    StorageKind("lustre", False, False, True, True, False, (1.0 * GB, 8.0 * GB), (0.3e-3, 1.5e-3), False),
    # HTTP object store (S3/GCS through boto3/fsspec): high time to first byte, S-state readers.
    StorageKind("object-store", False, True, False, False, False, (0.5 * GB, 3.0 * GB), (15e-3, 60e-3), False),
)


def gpu_by_key(key: str) -> GpuModel:
    """The GPU model with this key."""
    for gpu in GPUS:
        if gpu.key == key:
            return gpu
    raise KeyError(key)


def storage_by_key(key: str) -> StorageKind:
    """The storage kind with this key."""
    for kind in STORAGE:
        if kind.key == key:
            return kind
    raise KeyError(key)


def fabric_by_key(key: str) -> Fabric:
    """The fabric with this key."""
    for fabric in FABRICS:
        if fabric.key == key:
            return fabric
    raise KeyError(key)
