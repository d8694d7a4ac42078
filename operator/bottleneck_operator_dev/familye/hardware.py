"""Published figures family E is built on: GPU boards, fabrics, storage and host sizes.

Every number here is a datasheet or reference figure (sources in docs/familye.md); what a job does
with them is decided in :mod:`.stepmodel` and :mod:`.workloads`.

Sources, by row:
- A100 / H100 / L4 / A10 / V100 bandwidths and TFLOPS: NVIDIA datasheets as summarised in the
  project's shared telemetry notes; H200: NVIDIA H200 product brief (141 GB HBM3e, 4.8 TB/s, 700 W,
  NVLink 900 GB/s); L40S: NVIDIA L40S datasheet (362 dense BF16 TFLOPS, 864 GB/s, 350 W, PCIe Gen4,
  no NVLink, boost 2520 MHz).
- Board power: datasheet maximum power (A100 SXM4 400 W, A100 PCIe 300 W, H100 SXM5 700 W,
  H100 PCIe 350 W, L40S 350 W, A10 150 W, L4 72 W, V100 SXM2 300 W).
- PCIe x16 per direction: Gen3 15.8, Gen4 31.5, Gen5 63 GB/s; NVLink per direction = half the
  datasheet's bidirectional total.
- InfiniBand HDR 200 Gb/s, NDR 400 Gb/s per port; Ethernet 25-100 Gb/s.
- NVMe Gen3 ~3.5 GB/s, Gen4 ~7 GB/s, SATA SSD ~0.55 GB/s sequential; Amazon EFS up to ~1.5 GiB/s
  per client.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
GIB = 2.0**30


@dataclass(frozen=True)
class Board:
    """One GPU board as dcgm-exporter would name it, with the figures the step model needs.

    Attributes:
        key: a short tag ("a100-sxm").
        model_name: dcgm-exporter's ``modelName`` label.
        tflops: dense BF16/FP16 tensor TFLOPS at boost clock.
        hbm_bps: device memory bandwidth, bytes/s.
        fb_bytes: framebuffer size, bytes.
        tdp_w: maximum board power (the default enforced limit), W.
        idle_w: typical power with nothing running (persistence mode on), W.
        boost_mhz: maximum SM clock, MHz.
        floor_mhz: the lowest clock a power cap pulls a loaded board to (its base clock), MHz.
        idle_mhz: SM clock after a few seconds without work, MHz.
        nvlink_bps: NVLink bandwidth per GPU and direction, bytes/s (0: none).
        pcie_bps: host PCIe x16 bandwidth per direction, bytes/s.
        sms: streaming multiprocessors (NCCL's channels occupy a few of them).
        util_period: NVML's GPU_UTIL sample period on this product, s (1/6 s to 1 s).
        gpus_per_node: the usual count in one server.
        node_cpus: logical CPUs of the usual host.
    """

    key: str
    model_name: str
    tflops: float
    hbm_bps: float
    fb_bytes: float
    tdp_w: float
    idle_w: float
    boost_mhz: float
    floor_mhz: float
    idle_mhz: float
    nvlink_bps: float
    pcie_bps: float
    sms: int
    util_period: float
    gpus_per_node: int
    node_cpus: tuple[int, ...]


PCIE3, PCIE4, PCIE5 = 15.8 * GB, 31.5 * GB, 63.0 * GB

BOARDS: tuple[Board, ...] = (
    Board(
        "v100-sxm",
        "Tesla V100-SXM2-32GB",
        125,
        900 * GB,
        32 * GIB,
        300,
        40,
        1530,
        1290,
        135,
        150 * GB,
        PCIE3,
        80,
        1.0,
        8,
        (80, 96),
    ),
    Board(
        "a100-sxm",
        "NVIDIA A100-SXM4-80GB",
        312,
        2039 * GB,
        80 * GIB,
        400,
        55,
        1410,
        1095,
        210,
        300 * GB,
        PCIE4,
        108,
        1 / 6,
        8,
        (96, 128, 256),
    ),
    Board(
        "a100-pcie",
        "NVIDIA A100 80GB PCIe",
        312,
        1935 * GB,
        80 * GIB,
        300,
        45,
        1410,
        1065,
        210,
        0.0,
        PCIE4,
        108,
        1 / 6,
        4,
        (64, 96, 128),
    ),
    Board(
        "h100-sxm",
        "NVIDIA H100 80GB HBM3",
        989,
        3350 * GB,
        80 * GIB,
        700,
        75,
        1980,
        1590,
        345,
        450 * GB,
        PCIE5,
        132,
        1 / 6,
        8,
        (192, 224),
    ),
    Board(
        "h100-pcie",
        "NVIDIA H100 PCIe",
        756,
        2000 * GB,
        80 * GIB,
        350,
        50,
        1755,
        1125,
        345,
        0.0,
        PCIE5,
        114,
        1 / 6,
        4,
        (96, 128),
    ),
    Board(
        "h200-sxm",
        "NVIDIA H200",
        989,
        4800 * GB,
        141 * GIB,
        700,
        80,
        1980,
        1590,
        345,
        450 * GB,
        PCIE5,
        132,
        1 / 6,
        8,
        (192, 224),
    ),
    Board(
        "l40s",
        "NVIDIA L40S",
        362,
        864 * GB,
        48 * GIB,
        350,
        35,
        2520,
        1110,
        210,
        0.0,
        PCIE4,
        142,
        1 / 6,
        4,
        (64, 96, 128),
    ),
    Board("a10", "NVIDIA A10", 125, 600 * GB, 24 * GIB, 150, 20, 1695, 885, 210, 0.0, PCIE4, 72, 1 / 6, 4, (48, 96)),
    Board("l4", "NVIDIA L4", 121, 300 * GB, 24 * GIB, 72, 16, 2040, 795, 210, 0.0, PCIE4, 58, 1 / 6, 8, (48, 96)),
)
BOARD_BY_KEY = {b.key: b for b in BOARDS}
# How often each board turns up: most training in today's clusters runs on A100/H100-class parts.
BOARD_WEIGHTS = (0.04, 0.24, 0.07, 0.22, 0.06, 0.12, 0.11, 0.08, 0.06)


@dataclass(frozen=True)
class Fabric:
    """How the nodes of a multi-node job talk to each other.

    Attributes:
        key: a short tag.
        port_bps: one port's line rate, bytes/s per direction.
        rdma: traffic bypasses the kernel's netdev counters (InfiniBand, RoCE).
        ib_counters: node-exporter's infiniband collector sees the ports.
        efficiency: share of the line rate NCCL's bus bandwidth reaches.
    """

    key: str
    port_bps: float
    rdma: bool
    ib_counters: bool
    efficiency: float


FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-hdr", 200e9 / 8, True, True, 0.85),
    Fabric("ib-ndr", 400e9 / 8, True, True, 0.85),
    Fabric("roce-100", 100e9 / 8, True, True, 0.8),
    Fabric("roce-200", 200e9 / 8, True, True, 0.8),
    # RoCE ports whose counters node-exporter cannot read (collector off, sysfs not mounted)
    Fabric("roce-hidden", 200e9 / 8, True, False, 0.8),
    Fabric("eth-25", 25e9 / 8, False, False, 0.7),
    Fabric("eth-100", 100e9 / 8, False, False, 0.65),
)
FABRIC_BY_KEY = {f.key: f for f in FABRICS}


@dataclass(frozen=True)
class Storage:
    """Where a job's samples come from.

    Attributes:
        key: a short tag.
        bps: sequential read capability per client, bytes/s.
        latency: per-sample request latency a loader worker waits, s.
        block: reads show as block-device I/O (diskstats, io.stat, container_fs_reads).
        net: reads arrive over netdev (NFS, object stores).
        ib: reads arrive over RDMA (parallel file systems on the fabric).
        iowait: waiting readers sleep in D state and count as iowait / io pressure.
        mechanism: local-disk or network-storage.
    """

    key: str
    bps: float
    latency: float
    block: bool
    net: bool
    ib: bool
    iowait: bool
    mechanism: str


STORAGES: tuple[Storage, ...] = (
    Storage("nvme-gen4", 7.0 * GB, 0.0002, True, False, False, True, "local-disk"),
    Storage("nvme-gen3", 3.5 * GB, 0.0003, True, False, False, True, "local-disk"),
    Storage("sata-ssd", 0.55 * GB, 0.0005, True, False, False, True, "local-disk"),
    Storage("nvme-throttled", 0.4 * GB, 0.0004, True, False, False, True, "local-disk"),
    Storage("nvme-mmap", 3.5 * GB, 0.0003, True, False, False, True, "local-disk"),
    Storage("nfs", 1.2 * GB, 0.004, False, True, False, True, "network-storage"),
    Storage("efs", 1.5 * GIB, 0.008, False, True, False, True, "network-storage"),
    Storage("object-http", 2.5 * GB, 0.03, False, True, False, False, "network-storage"),
    Storage("lustre-ib", 6.0 * GB, 0.002, False, False, True, True, "network-storage"),
)
STORAGE_BY_KEY = {s.key: s for s in STORAGES}
