"""Published figures of the hardware family AJ's fleet is built from: GPUs, node kinds, storage, fabrics.

Every figure is a datasheet or specification value (sources in docs/familyaj.md); nothing here is
random. Bandwidths are bytes per second per direction unless a name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
GBIT = 1e9 / 8
PCIE_X16 = {3: 15.8 * GB, 4: 31.5 * GB, 5: 63.0 * GB}  # per direction, headers included


@dataclass(frozen=True)
class Gpu:
    """One GPU model.

    Attributes:
        key: short name used in tags and node names.
        model_name: dcgm-exporter's ``modelName``.
        tflops: dense BF16/FP16 tensor TFLOPS at the boost clock.
        memory_gib: framebuffer, GiB.
        hbm_bps: memory bandwidth, bytes/s.
        nvlink_bps: NVLink bandwidth per GPU per direction, bytes/s (0: none).
        pcie_gen: host PCIe generation (x16).
        tdp_w: board power limit at default, W.
        idle_w: typical power with the clocks up and nothing running, W.
        boost_mhz: maximum SM clock, MHz.
        sms: streaming multiprocessors.
    """

    key: str
    model_name: str
    tflops: float
    memory_gib: float
    hbm_bps: float
    nvlink_bps: float
    pcie_gen: int
    tdp_w: float
    idle_w: float
    boost_mhz: float
    sms: int

    @property
    def pcie_bps(self) -> float:
        return PCIE_X16[self.pcie_gen]


GPUS: dict[str, Gpu] = {
    g.key: g
    for g in (
        Gpu("h100-sxm", "NVIDIA H100 80GB HBM3", 989.0, 80, 3.35e12, 450 * GB, 5, 700, 90, 1980, 132),
        Gpu("h200-sxm", "NVIDIA H200", 989.0, 141, 4.8e12, 450 * GB, 5, 700, 95, 1980, 132),
        Gpu("h100-pcie", "NVIDIA H100 PCIe", 756.0, 80, 2.0e12, 0.0, 5, 350, 55, 1755, 114),
        Gpu("a100-sxm", "NVIDIA A100-SXM4-80GB", 312.0, 80, 2.039e12, 300 * GB, 4, 400, 60, 1410, 108),
        Gpu("a100-pcie", "NVIDIA A100-PCIE-40GB", 312.0, 40, 1.555e12, 0.0, 4, 250, 40, 1410, 108),
        Gpu("l40s", "NVIDIA L40S", 362.0, 48, 0.864e12, 0.0, 4, 350, 60, 2520, 142),
        Gpu("l4", "NVIDIA L4", 121.0, 24, 0.3e12, 0.0, 4, 72, 16, 2040, 58),
        Gpu("a10", "NVIDIA A10", 125.0, 24, 0.6e12, 0.0, 4, 150, 30, 1695, 72),
        Gpu("v100-sxm", "Tesla V100-SXM2-32GB", 125.0, 32, 0.9e12, 150 * GB, 3, 300, 45, 1530, 80),
    )
}


@dataclass(frozen=True)
class NodeKind:
    """One kind of GPU node in the fleet.

    Attributes:
        key: short name (tags, node names).
        gpu: key of its GPU model.
        gpus: GPUs per node.
        cpus: logical CPUs node-exporter counts.
        memory_gib: host RAM.
        disk_bps: local data disk read bandwidth (all drives together).
        disk_kind: "nvme", "sata" or "cloud-pd" (a network block volume capped by the provider).
        nic_bps: the training fabric's total bandwidth per node per direction.
        fabric: "ib", "roce" or "tcp" (RDMA fabrics are invisible to netdev counters).
        eth_bps: the node's Ethernet (kernel network stack) bandwidth per direction.
        gpus_per_pcie_switch: GPUs sharing one host PCIe uplink.
        swap: whether the node has swap (zram or disk).
        weight: how common the kind is in the fleet.
    """

    key: str
    gpu: str
    gpus: int
    cpus: int
    memory_gib: float
    disk_bps: float
    disk_kind: str
    nic_bps: float
    fabric: str
    eth_bps: float
    gpus_per_pcie_switch: int
    swap: bool
    weight: float


NODE_KINDS: dict[str, NodeKind] = {
    k.key: k
    for k in (
        NodeKind(
            "dgx-h100", "h100-sxm", 8, 224, 2048, 25 * GB, "nvme", 8 * 400 * GBIT, "ib", 2 * 100 * GBIT, 2, False, 3.0
        ),
        NodeKind(
            "hgx-h200", "h200-sxm", 8, 192, 2048, 28 * GB, "nvme", 8 * 400 * GBIT, "roce", 2 * 200 * GBIT, 2, False, 2.0
        ),
        NodeKind(
            "dgx-a100", "a100-sxm", 8, 256, 2048, 14 * GB, "nvme", 8 * 200 * GBIT, "ib", 2 * 100 * GBIT, 2, False, 2.5
        ),
        NodeKind(
            "h100-pcie-8",
            "h100-pcie",
            8,
            128,
            1024,
            12 * GB,
            "nvme",
            2 * 200 * GBIT,
            "roce",
            2 * 100 * GBIT,
            2,
            True,
            1.5,
        ),
        NodeKind("a100-pcie-4", "a100-pcie", 4, 64, 512, 6.5 * GB, "nvme", 100 * GBIT, "tcp", 100 * GBIT, 2, True, 1.5),
        NodeKind("l40s-8", "l40s", 8, 128, 1024, 12 * GB, "nvme", 2 * 100 * GBIT, "roce", 2 * 100 * GBIT, 2, True, 2.0),
        NodeKind("l4-cloud-4", "l4", 4, 48, 192, 1.2 * GB, "cloud-pd", 50 * GBIT, "tcp", 50 * GBIT, 4, False, 1.5),
        NodeKind("a10-cloud-4", "a10", 4, 48, 192, 0.6 * GB, "cloud-pd", 40 * GBIT, "tcp", 40 * GBIT, 4, False, 1.5),
        NodeKind(
            "dgx1-v100", "v100-sxm", 8, 80, 512, 2.0 * GB, "sata", 4 * 100 * GBIT, "ib", 2 * 10 * GBIT, 2, True, 0.8
        ),
    )
}


@dataclass(frozen=True)
class Storage:
    """Where a Job's dataset lives.

    Attributes:
        key: short name.
        local: whether reads are block reads on the node (disk counters, container fs reads).
        per_client_bps: the most one node gets from it, bytes/s (local kinds: the node's disk).
        latency_s: per-request latency a reader waits.
        transport: how remote bytes arrive: "tcp" (netdev counters), "rdma" (InfiniBand counters)
            or "" for local storage.
        reader: how the reader waits: "posix" (D state, iowait), "http" (sleeping in socket
            receive: no iowait), "fuse" (D state, network receive), "mmap" (major faults).
    """

    key: str
    local: bool
    per_client_bps: float
    latency_s: float
    transport: str
    reader: str


STORAGES: dict[str, Storage] = {
    s.key: s
    for s in (
        Storage("node-disk", True, 0.0, 0.0002, "", "posix"),
        Storage("node-disk-mmap", True, 0.0, 0.0002, "", "mmap"),
        Storage("nfs", False, 1.2 * GB, 0.002, "tcp", "posix"),
        Storage("efs", False, 1.5 * 2**30, 0.004, "tcp", "posix"),
        Storage("lustre-rdma", False, 12 * GB, 0.0008, "rdma", "posix"),
        Storage("object-http", False, 2.5 * GB, 0.03, "tcp", "http"),
        Storage("gcsfuse", False, 0.8 * GB, 0.02, "tcp", "fuse"),
    )
}
