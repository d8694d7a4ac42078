"""The hardware a Job can land on: boards, storage and fabrics, with their published figures.

Throughput, memory bandwidth, NVLink and PCIe figures are shared/TELEMETRY.md's "Hardware figures"
table; power limits, boost clocks and framebuffer sizes are the vendors' datasheets (see
docs/familyan.md). Nothing here is tuned: a Job's stage times follow from these and its workload.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU model.

    Attributes:
        key: short id used in tags.
        model_name: dcgm-exporter's ``modelName``.
        tflops: dense BF16/FP16 tensor TFLOPS (TELEMETRY.md).
        fp32_tflops: non-tensor FP32 TFLOPS (datasheets), for FP32 workloads.
        hbm: memory bandwidth, B/s.
        nvlink: NVLink bandwidth per GPU, both directions together, B/s; 0 without NVLink.
        pcie: host PCIe bandwidth per direction, x16, B/s.
        tdp: board power limit at default, W.
        idle: power drawn by an idle board at its idle clock, W.
        boost: maximum SM clock, MHz.
        idle_clock: SM clock an idle board settles at, MHz.
        fb_mib: framebuffer, MiB.
        prof: whether the board has DCGM profiling fields at all (T4: GR_ENGINE_ACTIVE only).
    """

    key: str
    model_name: str
    tflops: float
    fp32_tflops: float
    hbm: float
    nvlink: float
    pcie: float
    tdp: float
    idle: float
    boost: float
    idle_clock: float
    fb_mib: float
    prof: str


# prof: "full" (all PROF groups), "gr-only" (T4: only GR_ENGINE_ACTIVE, TELEMETRY.md)
BOARDS: tuple[Board, ...] = (
    Board(
        "V100-SXM2",
        "Tesla V100-SXM2-32GB",
        125.0,
        15.7,
        900 * GB,
        300 * GB,
        15.8 * GB,
        300,
        40,
        1530,
        135,
        32768,
        "full",
    ),
    Board(
        "A100-SXM4",
        "NVIDIA A100-SXM4-80GB",
        312.0,
        19.5,
        2039 * GB,
        600 * GB,
        31.5 * GB,
        400,
        55,
        1410,
        210,
        81920,
        "full",
    ),
    Board(
        "H100-SXM5",
        "NVIDIA H100 80GB HBM3",
        989.0,
        67.0,
        3350 * GB,
        900 * GB,
        63 * GB,
        700,
        70,
        1980,
        345,
        81559,
        "full",
    ),
    Board("H100-PCIe", "NVIDIA H100 PCIe", 756.0, 51.0, 2000 * GB, 0.0, 63 * GB, 350, 45, 1755, 345, 81559, "full"),
    Board("L4", "NVIDIA L4", 121.0, 30.3, 300 * GB, 0.0, 31.5 * GB, 72, 16, 2040, 210, 23034, "full"),
    Board("A10", "NVIDIA A10", 125.0, 31.2, 600 * GB, 0.0, 31.5 * GB, 150, 20, 1695, 210, 23028, "full"),
    Board("T4", "Tesla T4", 65.0, 8.1, 320 * GB, 0.0, 15.8 * GB, 70, 10, 1590, 300, 15360, "gr-only"),
)
BOARD_BY_KEY = {b.key: b for b in BOARDS}


@dataclass(frozen=True)
class Storage:
    """Where the training data lives.

    Attributes:
        key: short id used in tags.
        bandwidth: sustained read bandwidth one client sees, B/s (TELEMETRY.md "Hardware figures").
        latency: seconds per small-file open+read that the reader waits for.
        block: reads are block-device reads (disk, cAdvisor fs and io.stat see them).
        network: bytes cross the node's NIC (netdev sees them as receive bytes).
        dstate: readers wait in D state (iowait, io pressure); an HTTP reader waits in a socket (S).
    """

    key: str
    bandwidth: float
    latency: float
    block: bool
    network: bool
    dstate: bool

    @property
    def remote(self) -> bool:
        return self.network


STORAGES: tuple[Storage, ...] = (
    Storage("nvme-gen4", 7.0 * GB, 0.0001, True, False, True),
    Storage("nvme-gen3", 3.5 * GB, 0.00012, True, False, True),
    Storage("sata-ssd", 0.55 * GB, 0.0002, True, False, True),
    # Amazon EFS per client up to ~1.5 GiB/s; other network file systems far below local NVMe
    Storage("nfs", 0.8 * GB, 0.002, False, True, True),
    Storage("efs", 1.5 * 1.0737 * GB, 0.004, False, True, True),
    # HTTP object store readers (boto3, fsspec, WebDataset): socket waits, no iowait (TELEMETRY.md)
    Storage("object-store", 1.2 * GB, 0.03, False, True, False),
)
STORAGE_BY_KEY = {s.key: s for s in STORAGES}


@dataclass(frozen=True)
class Fabric:
    """How nodes talk to each other.

    Attributes:
        key: short id used in tags.
        gbps: line rate per port, Gb/s (TELEMETRY.md "NICs / InfiniBand").
        rdma: RDMA (InfiniBand, RoCE): netdev never sees it, node_infiniband_* and PCIe do.
    """

    key: str
    gbps: float
    rdma: bool


FABRICS: tuple[Fabric, ...] = (
    Fabric("tcp-25g", 25.0, False),
    Fabric("tcp-100g", 100.0, False),
    Fabric("roce-100g", 100.0, True),
    Fabric("roce-200g", 200.0, True),
    Fabric("ib-hdr", 200.0, True),
    Fabric("ib-ndr", 400.0, True),
)
FABRIC_BY_KEY = {f.key: f for f in FABRICS}
