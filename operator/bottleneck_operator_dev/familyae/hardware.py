"""Hardware figures: GPUs, nodes, host links, fabrics and storage.

Every figure here is taken from a published source, named in a comment by the short name that the
table in docs/familyae.md resolves to a document. Figures that no public source gives are marked
"assumed" and listed as such in the doc.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
GIB = 1024.0**3
MIB = 1024.0**2


@dataclass(frozen=True)
class Gpu:
    """One GPU model, as its datasheet gives it.

    Attributes:
        key: a short tag for the Job's tags.
        model_name: the name NVML (and so dcgm-exporter's ``modelName``) reports.
        tensor_tflops: dense FP16/BF16 tensor-core peak.
        tf32_tflops: dense TF32 tensor-core peak; 0 where the GPU has no TF32.
        fp32_tflops: FP32 peak on the CUDA cores (no tensor cores).
        hbm_gbs: device memory bandwidth, GB/s.
        mem_gib: device memory.
        tdp_w: maximum board power (the default enforced limit).
        boost_mhz: maximum SM clock.
        sms: streaming multiprocessors.
        nvlink_gbs: NVLink bandwidth per GPU and direction, GB/s; 0 without NVLink.
        pcie_gen: host link generation (x16).
        bf16: whether BF16 is supported (Ampere and newer).
    """

    key: str
    model_name: str
    tensor_tflops: float
    tf32_tflops: float
    fp32_tflops: float
    hbm_gbs: float
    mem_gib: float
    tdp_w: float
    boost_mhz: float
    sms: int
    nvlink_gbs: float
    pcie_gen: int
    bf16: bool

    @property
    def idle_w(self) -> float:
        # Assumed: no datasheet gives idle board power; ~13 % of TDP is what nvidia-smi shows on an
        # idle datacenter GPU with a context open.
        return 0.13 * self.tdp_w


# [TELEMETRY] hardware table; [V100 WP] FP32 and boost; [A100 DS]; [H100 KLOCKWOOD]; [H100 PCIe PB];
# [L4 SPEC]; [A10 SPEC]; [T4 SPEC]. NVLink per direction is half the bidirectional total.
V100 = Gpu("v100-sxm2", "Tesla V100-SXM2-32GB", 125, 0, 15.7, 900, 32, 300, 1530, 80, 150, 3, False)
A100 = Gpu("a100-sxm4", "NVIDIA A100-SXM4-80GB", 312, 156, 19.5, 2039, 80, 400, 1410, 108, 300, 4, True)
H100 = Gpu("h100-sxm5", "NVIDIA H100 80GB HBM3", 989, 495, 67, 3350, 80, 700, 1980, 132, 450, 5, True)
H100_PCIE = Gpu("h100-pcie", "NVIDIA H100 PCIe", 756, 378, 51, 2000, 80, 350, 1755, 114, 0, 5, True)
L4 = Gpu("l4", "NVIDIA L4", 121, 60, 30.3, 300, 24, 72, 2040, 58, 0, 4, True)
A10 = Gpu("a10", "NVIDIA A10", 125, 62.5, 31.2, 600, 24, 150, 1695, 72, 0, 4, True)
T4 = Gpu("t4", "Tesla T4", 65, 0, 8.1, 320, 16, 70, 1590, 40, 0, 3, False)

GPUS: tuple[Gpu, ...] = (V100, A100, H100, H100_PCIE, L4, A10, T4)
# How often each model turns up in a training cluster (assumed: recent datacenter parts dominate).
GPU_WEIGHTS: tuple[float, ...] = (0.08, 0.30, 0.22, 0.10, 0.10, 0.12, 0.08)


@dataclass(frozen=True)
class Fabric:
    """How a node reaches the others.

    Attributes:
        kind: "ib" (InfiniBand), "roce" (RDMA over Ethernet) or "tcp" (sockets over Ethernet).
        ports: ports NCCL can use.
        port_gbps: line rate of one port, Gb/s.
    """

    kind: str
    ports: int
    port_gbps: float

    @property
    def rdma(self) -> bool:
        return self.kind in ("ib", "roce")

    @property
    def line_bytes(self) -> float:
        """Line rate of all ports together, bytes/s."""
        return self.ports * self.port_gbps * 1e9 / 8


@dataclass(frozen=True)
class NodeShape:
    """A GPU node.

    Attributes:
        key: tag.
        gpus: GPUs in the node.
        cpus: logical CPUs.
        mem_gib: host memory.
        nvme_gbs: local NVMe read bandwidth, GB/s.
        fabrics: the fabrics this kind of node is built with (first: the one it is bought for).
        eth_gbps: the node's Ethernet NIC (pod network, storage, TCP sockets), Gb/s.
    """

    key: str
    gpus: int
    cpus: int
    mem_gib: float
    nvme_gbs: float
    fabrics: tuple[Fabric, ...]
    eth_gbps: float


# [DGX-1 RUNAI], [DGX-1 IPTRONICS]: 2x20-core E5-2698 v4 (80 threads), 512 GB, 4x EDR 100 Gb/s;
# local SSD cache bandwidth assumed (SATA RAID 0).
DGX1 = NodeShape("dgx1", 8, 80, 512, 2.0, (Fabric("ib", 4, 100), Fabric("tcp", 2, 10)), 10)
# [DGX A100 HT]: 2x64-core EPYC 7742 (256 threads), 1 TB, 15 TB NVMe, 8x HDR 200 Gb/s.
# NVMe read bandwidth assumed (4 Gen4 drives).
DGXA100 = NodeShape(
    "dgx-a100", 8, 256, 1024, 20.0, (Fabric("ib", 8, 200), Fabric("roce", 8, 200), Fabric("tcp", 2, 100)), 100
)
# [DGX H100 BASEPOD]: 2x56-core 8480C (224 threads), 2 TB, 8x 3.84 TB U.2 NVMe, 8x NDR 400 Gb/s,
# 100 GbE. NVMe bandwidth assumed.
DGXH100 = NodeShape(
    "dgx-h100", 8, 224, 2048, 30.0, (Fabric("ib", 8, 400), Fabric("roce", 8, 400), Fabric("tcp", 1, 100)), 100
)
# Assumed: a common 2-socket PCIe server (no single datasheet).
PCIE8 = NodeShape("pcie-8gpu", 8, 128, 1024, 7.0, (Fabric("roce", 2, 200), Fabric("tcp", 2, 100)), 100)
# [AWS BATCH GPU]: g5.12xlarge 4 GPUs/48 vCPU/192 GiB/40 Gb/s, g5.48xlarge 8/192/768/100,
# g4dn.12xlarge 4/48/192/50. Local NVMe bandwidth assumed.
CLOUD4 = NodeShape("cloud-4gpu", 4, 48, 192, 2.0, (Fabric("tcp", 1, 40),), 40)
CLOUD8 = NodeShape("cloud-8gpu", 8, 192, 768, 4.0, (Fabric("tcp", 1, 100),), 100)
G4DN = NodeShape("g4dn-12xl", 4, 48, 192, 1.8, (Fabric("tcp", 1, 50),), 50)

NODES_FOR: dict[str, tuple[NodeShape, ...]] = {
    V100.key: (DGX1,),
    A100.key: (DGXA100,),
    H100.key: (DGXH100,),
    H100_PCIE.key: (PCIE8,),
    L4.key: (CLOUD4, CLOUD8),
    A10.key: (CLOUD4, CLOUD8),
    T4.key: (G4DN,),
}

# [TELEMETRY]: per direction, x16: Gen3 15.8, Gen4 31.5, Gen5 63 GB/s (derived from lane rates).
PCIE_X16_GBS = {1: 4.0, 2: 8.0, 3: 15.8, 4: 31.5, 5: 63.0}
# [CUDA BP]: pinned copies reach ~12 GB/s on a Gen3 x16 card, i.e. ~0.76 of the link.
PINNED_EFFICIENCY = 0.76


def pcie_gbs(gen: int, width: int) -> float:
    """Achieved pinned host-to-device bandwidth of a link, GB/s per direction."""
    return PCIE_X16_GBS[gen] * width / 16 * PINNED_EFFICIENCY


@dataclass(frozen=True)
class Storage:
    """Where the training data lives, seen from one node.

    Attributes:
        kind: "nvme", "sata", "blockvol" (a network block volume), "nfs" or "object".
        gbs: bandwidth one node can read, GB/s.
        iops: requests per second the node can issue to it.
        lat_s: latency of one request.
        label: what it is, for the tags.
    """

    kind: str
    gbs: float
    iops: float
    lat_s: float
    label: str

    @property
    def local(self) -> bool:
        """Block storage on (or attached to) the node: its reads are disk reads."""
        return self.kind in ("nvme", "sata", "blockvol")


def nvme(gbs: float) -> Storage:
    # [TELEMETRY] NVMe Gen3 ~3.5, Gen4 ~7 GB/s; IOPS and latency assumed (datacenter NVMe).
    return Storage("nvme", gbs, 600_000, 0.1e-3, "local-nvme")


# [EBS GP3]: gp3 baseline 3,000 IOPS and 125 MiB/s; latency assumed ("single-digit ms").
GP3_BASELINE = Storage("blockvol", 125 * MIB / GB, 3_000, 1.0e-3, "gp3-baseline")


def nfs(gbs: float, lat_s: float) -> Storage:
    # [EFS PERF]: ~1 ms read latency, up to 1,500 MiB/s per client; on-premises NFS assumed alike.
    return Storage("nfs", gbs, 40_000, lat_s, "nfs")


def object_store(gbs: float, lat_s: float) -> Storage:
    # [S3 PERF]: 5,500 GET/s per prefix; small-object latency "tens of milliseconds" (median).
    return Storage("object", gbs, 5_500, lat_s, "object-store")
