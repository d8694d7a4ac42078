"""The machines family H's jobs run on: GPU boards, host links, storage and fabrics, from datasheets.

Every figure here is a vendor's published number (see docs/familyh.md for the sources) or a
figure derived from one; nothing is fitted to telemetry. The generator only ever uses them as
capacities: how fast a stage *could* go, never what a signal *should* read.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Board:
    """One GPU model as its datasheet gives it.

    Attributes:
        model_name: dcgm-exporter's ``modelName`` label for it.
        tdp_w: the board's maximum power limit (W), the default enforced limit.
        idle_w: power drawn with a context loaded and nothing running (W).
        dense_tflops: dense BF16/FP16 tensor throughput (TFLOPS); FP16 for V100 and T4.
        hbm_bps: memory bandwidth (B/s).
        fb_mib: framebuffer size (MiB) as NVML reports it (a little under the marketing size).
        boost_mhz: maximum SM boost clock (MHz).
        idle_mhz: the SM clock a loaded but idle board settles to (MHz).
        nvlink_bps: NVLink bandwidth per GPU per direction (B/s), 0 without NVLink.
        pcie_bps: host link bandwidth per direction for x16 (B/s).
        prof: whether DCGM's profiling (PROF) fields exist on it at all.
    """

    model_name: str
    tdp_w: float
    idle_w: float
    dense_tflops: float
    hbm_bps: float
    fb_mib: float
    boost_mhz: float
    idle_mhz: float
    nvlink_bps: float
    pcie_bps: float
    prof: bool = True


_GEN3, _GEN4, _GEN5 = 15.8 * GB, 31.5 * GB, 63.0 * GB

# Datasheet figures (NVIDIA A100, H100, H200, L40S, A10, L4, V100 and T4 datasheets); NVLink per
# direction is half the datasheet's bidirectional total.
BOARDS: dict[str, Board] = {
    "a100-sxm": Board("NVIDIA A100-SXM4-80GB", 400, 55, 312, 2039 * GB, 81920, 1410, 1095, 300 * GB, _GEN4),
    "a100-pcie": Board("NVIDIA A100-PCIE-40GB", 250, 38, 312, 1555 * GB, 40960, 1410, 765, 0.0, _GEN4),
    "h100-sxm": Board("NVIDIA H100 80GB HBM3", 700, 72, 989, 3350 * GB, 81559, 1980, 1755, 450 * GB, _GEN5),
    "h100-pcie": Board("NVIDIA H100 PCIe", 350, 50, 756, 2000 * GB, 81559, 1755, 1125, 0.0, _GEN5),
    "h200": Board("NVIDIA H200", 700, 75, 989, 4800 * GB, 143771, 1980, 1755, 450 * GB, _GEN5),
    "l40s": Board("NVIDIA L40S", 350, 36, 362, 864 * GB, 46068, 2520, 1110, 0.0, _GEN4),
    "a10": Board("NVIDIA A10", 150, 18, 125, 600 * GB, 23028, 1695, 885, 0.0, _GEN4),
    "l4": Board("NVIDIA L4", 72, 16, 121, 300 * GB, 23034, 2040, 795, 0.0, _GEN4),
    "v100-sxm": Board("Tesla V100-SXM2-32GB", 300, 40, 125, 900 * GB, 32510, 1530, 1290, 150 * GB, _GEN3),
    "t4": Board("Tesla T4", 70, 10, 65, 320 * GB, 15109, 1590, 585, 0.0, _GEN3),
}

# Where a board usually sits: big training clusters run SXM boards, inference-class cards show up in
# shared fine-tuning and vision pools. Weights are a rough fleet mix, not measured.
BOARD_MIX: tuple[tuple[str, float], ...] = (
    ("a100-sxm", 0.22),
    ("h100-sxm", 0.22),
    ("h200", 0.10),
    ("a100-pcie", 0.08),
    ("h100-pcie", 0.06),
    ("l40s", 0.12),
    ("a10", 0.07),
    ("l4", 0.05),
    ("v100-sxm", 0.05),
    ("t4", 0.03),
)


@dataclass(frozen=True)
class Storage:
    """Where a job's samples come from.

    Attributes:
        kind: a short name, also a tag.
        local: reads go through a local block device (cAdvisor's fs reads and node disk counters see them).
        network: reads arrive as TCP bytes on the node's NICs (NFS, object stores, FUSE).
        rdma: reads arrive over RDMA (a parallel file system on InfiniBand): only the IB port counters see them.
        blocking: readers wait in D state (iowait, io pressure); object-store readers sleep on sockets instead.
        bw_bps: what one client can pull from it (B/s) at best.
        latency_s: one request's latency (s).
        request_bytes: typical read size.
    """

    kind: str
    local: bool
    network: bool
    rdma: bool
    blocking: bool
    bw_bps: float
    latency_s: float
    request_bytes: float


# NVMe Gen4 ~7 GB/s (vendor datasheets); SATA SSD ~0.55 GB/s; EFS per client up to ~1.5 GiB/s (AWS
# documentation); cloud block volumes throttled at 0.25-1 GB/s by their provisioned throughput.
STORAGES: dict[str, Storage] = {
    "local-nvme": Storage("local-nvme", True, False, False, True, 6.5 * GB, 0.0001, 512 * 1024),
    "sata-ssd": Storage("sata-ssd", True, False, False, True, 0.52 * GB, 0.0002, 256 * 1024),
    "cloud-block": Storage("cloud-block", True, False, False, True, 0.5 * GB, 0.0008, 256 * 1024),
    "nfs": Storage("nfs", False, True, False, True, 1.2 * GB, 0.002, 1024 * 1024),
    "lustre-ib": Storage("lustre-ib", False, False, True, True, 5.0 * GB, 0.0008, 4 * 1024 * 1024),
    "object-store": Storage("object-store", False, True, False, False, 1.5 * GB, 0.03, 8 * 1024 * 1024),
    "fuse-bucket": Storage("fuse-bucket", False, True, False, True, 0.6 * GB, 0.02, 2 * 1024 * 1024),
}


@dataclass(frozen=True)
class Fabric:
    """The network between nodes that collectives use.

    Attributes:
        kind: a short name, also a tag.
        rdma: RDMA (InfiniBand, RoCE): node-exporter's netdev counters never see the bytes.
        bw_bps: per-node bandwidth per direction (B/s), all rails together.
        gpudirect: GPUDirect RDMA: the NIC reads GPU memory, so traffic also crosses each GPU's PCIe link.
    """

    kind: str
    rdma: bool
    bw_bps: float
    gpudirect: bool


# IB HDR 200 Gb/s and NDR 400 Gb/s per port (InfiniBand Trade Association roadmap); an 8-rail node
# has one port per GPU. Ethernet figures are per port.
FABRICS: dict[str, Fabric] = {
    "ib-ndr-8rail": Fabric("ib-ndr-8rail", True, 8 * 50 * GB, True),
    "ib-hdr-4rail": Fabric("ib-hdr-4rail", True, 4 * 25 * GB, True),
    "ib-hdr-1port": Fabric("ib-hdr-1port", True, 25 * GB, False),
    "roce-100g": Fabric("roce-100g", True, 12.5 * GB, True),
    "eth-100g-tcp": Fabric("eth-100g-tcp", False, 12.5 * GB, False),
    "eth-25g-tcp": Fabric("eth-25g-tcp", False, 3.1 * GB, False),
}

# Node CPU counts as GPU servers ship them: DGX A100 128 cores (256 threads), DGX H100 112 cores
# (224 threads); cloud PCIe-card instances with far fewer.
NODE_CPUS_SXM = (128, 192, 224, 256)
NODE_CPUS_PCIE = (32, 48, 64, 96, 128)
NODE_MEM_BYTES = (256 * GB, 512 * GB, 1024 * GB, 2048 * GB)
