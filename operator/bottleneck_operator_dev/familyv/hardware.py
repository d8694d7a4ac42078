"""Published hardware figures the stations' service demands are built from.

Every number here is a datasheet or documentation figure (see docs/familyv.md, "Sources"); the
efficiencies that turn a peak into what a training loop gets are drawn per job in :mod:`.draw`.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Gpu:
    """One GPU part.

    Attributes:
        model_name: dcgm-exporter's ``modelName`` label.
        tflops16: dense BF16/FP16 tensor TFLOPS.
        tflops32: dense TF32 tensor TFLOPS (FP32 FMA for V100 and T4, which have no TF32).
        hbm: memory bandwidth, B/s.
        tdp: board power limit at default, W.
        idle: power of an idle board with the driver loaded, W.
        max_clock: maximum SM boost clock, MHz.
        pcie_gen: host PCIe generation.
        nvlink: NVLink bandwidth per GPU, both directions together, B/s (0: PCIe only).
        gpus_per_node: the node sizes this part is sold in.
        fb: framebuffer, bytes.
    """

    model_name: str
    tflops16: float
    tflops32: float
    hbm: float
    tdp: float
    idle: float
    max_clock: float
    pcie_gen: int
    nvlink: float
    gpus_per_node: tuple[int, ...]
    fb: float


GPUS: tuple[Gpu, ...] = (
    Gpu("Tesla V100-SXM2-32GB", 125.0, 15.7, 900 * GB, 300.0, 40.0, 1530.0, 3, 300 * GB, (4, 8), 32 * GB),
    Gpu("NVIDIA A100-SXM4-80GB", 312.0, 156.0, 2039 * GB, 400.0, 55.0, 1410.0, 4, 600 * GB, (4, 8), 80 * GB),
    Gpu("NVIDIA H100 80GB HBM3", 989.0, 494.0, 3350 * GB, 700.0, 70.0, 1980.0, 5, 900 * GB, (8,), 80 * GB),
    Gpu("NVIDIA H100 PCIe", 756.0, 378.0, 2000 * GB, 350.0, 45.0, 1755.0, 5, 0.0, (1, 2, 4, 8), 80 * GB),
    Gpu("NVIDIA L4", 121.0, 60.0, 300 * GB, 72.0, 16.0, 2040.0, 4, 0.0, (1, 2, 4, 8), 24 * GB),
    Gpu("NVIDIA A10", 125.0, 62.5, 600 * GB, 150.0, 22.0, 1695.0, 4, 0.0, (1, 2, 4), 24 * GB),
    Gpu("Tesla T4", 65.0, 8.1, 320 * GB, 70.0, 10.0, 1590.0, 3, 0.0, (1, 2, 4, 8), 16 * GB),
)

# PCIe x16 per direction (TELEMETRY.md, derived from the per-lane rates).
PCIE_X16 = {3: 15.8 * GB, 4: 31.5 * GB, 5: 63.0 * GB}


@dataclass(frozen=True)
class Storage:
    """Where a job's samples live.

    Attributes:
        kind: "local-nvme", "local-sata", "nfs" or "object".
        bandwidth: what one client can read, B/s.
        latency: seconds per request at low load.
        local: reads are block-device reads on the node (disk counters, io.stat, D state).
        blocking: the reader waits in the kernel (iowait, io pressure); HTTP object-store readers
            wait in socket receive instead and show none of it.
    """

    kind: str
    bandwidth: float
    latency: float
    local: bool
    blocking: bool


# Local SSDs at their interface rates; NFS and object stores per client (EFS up to ~1.5 GiB/s).
STORAGES: tuple[Storage, ...] = (
    Storage("local-nvme", 3.5 * GB, 100e-6, True, True),
    Storage("local-nvme", 7.0 * GB, 80e-6, True, True),
    Storage("local-sata", 0.55 * GB, 200e-6, True, True),
    Storage("nfs", 1.5 * GB, 2e-3, False, True),
    Storage("object", 1.2 * GB, 40e-3, False, False),
)


@dataclass(frozen=True)
class Nic:
    """A node's fabric for the inter-node gradient exchange.

    Attributes:
        name: what it is.
        gbits: line rate per node, Gb/s.
        rdma: NCCL runs over verbs (InfiniBand or RoCE): the bytes show in the infiniband
            collector's port counters, never in netdev counters.
    """

    name: str
    gbits: float
    rdma: bool


NICS: tuple[Nic, ...] = (
    Nic("ethernet-10g", 10.0, False),
    Nic("ethernet-25g", 25.0, False),
    Nic("ethernet-100g", 100.0, False),
    Nic("roce-100g", 100.0, True),
    Nic("roce-200g", 200.0, True),
    Nic("ib-hdr", 200.0, True),
    Nic("ib-ndr", 400.0, True),
    Nic("ib-ndr-x4", 1600.0, True),  # four NDR ports per node, as 8-GPU boxes are often built
)

# CPU cores per node, by the node sizes clouds and on-premise GPU servers come in.
NODE_CORES = (16, 32, 48, 64, 96, 128, 192)
