"""The boards, storage and clusters the blind family draws its jobs from.

Every capacity here is a published figure (the "Hardware figures" table of TELEMETRY.md, or the
vendor's datasheet where the table is silent), so that a job's telemetry is bounded by what its
hardware can do: a stage is "near capacity" only relative to these numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU model as dcgm-exporter names it, with the figures a step's stage times follow.

    Attributes:
        model: dcgm-exporter's ``modelName`` label.
        tensor_tflops: dense BF16/FP16 tensor TFLOPS (TELEMETRY.md table).
        fp32_tflops: non-tensor FP32 TFLOPS (datasheets).
        hbm_bps: memory bandwidth, bytes/s (TELEMETRY.md table).
        memory_gb: framebuffer size.
        nvlink_bps: NVLink bandwidth per GPU, both directions together; 0 without NVLink.
        pcie_bps: host PCIe bandwidth per direction at x16 (TELEMETRY.md: Gen3 15.8, Gen4 31.5,
            Gen5 63 GB/s).
        tdp_w: default power limit (datasheets).
        idle_w: power at idle in P0, as boards are seen to draw.
        boost_mhz: maximum SM clock (datasheets).
        multiplexed_prof: whether DCGM multiplexes profiling groups on it (T4/A10 per TELEMETRY.md),
            which makes its PROF samples noisier.
    """

    model: str
    tensor_tflops: float
    fp32_tflops: float
    hbm_bps: float
    memory_gb: float
    nvlink_bps: float
    pcie_bps: float
    tdp_w: float
    idle_w: float
    boost_mhz: float
    multiplexed_prof: bool = False


_GEN3, _GEN4, _GEN5 = 15.8 * GB, 31.5 * GB, 63.0 * GB

BOARDS: dict[str, Board] = {
    b.model: b
    for b in (
        # V100 SXM2: 125 TFLOPS FP16, 900 GB/s, 300 GB/s NVLink (TELEMETRY.md); 15.7 FP32, 300 W, 1530 MHz.
        Board("Tesla V100-SXM2-32GB", 125, 15.7, 900 * GB, 32, 300 * GB, _GEN3, 300, 40, 1530),
        # A100 SXM4: 312 TFLOPS, 600 GB/s NVLink; 2,039 GB/s (80 GB) / 1,555 GB/s (40 GB); 400 W, 1410 MHz.
        Board("NVIDIA A100-SXM4-80GB", 312, 19.5, 2039 * GB, 80, 600 * GB, _GEN4, 400, 58, 1410),
        Board("NVIDIA A100-SXM4-40GB", 312, 19.5, 1555 * GB, 40, 600 * GB, _GEN4, 400, 55, 1410),
        # H100 SXM5: 989 TFLOPS, 3.35 TB/s, 900 GB/s NVLink, Gen5; 67 FP32, 700 W, 1980 MHz.
        Board("NVIDIA H100 80GB HBM3", 989, 67.0, 3350 * GB, 80, 900 * GB, _GEN5, 700, 75, 1980),
        # H100 PCIe: ~756 TFLOPS (derived), ~2.0 TB/s, no NVLink bridge here; 51 FP32, 350 W, 1755 MHz.
        Board("NVIDIA H100 PCIe", 756, 51.0, 2000 * GB, 80, 0.0, _GEN5, 350, 48, 1755),
        # L4: 121 TFLOPS, 300 GB/s, Gen4; 30.3 FP32, 72 W, 2040 MHz.
        Board("NVIDIA L4", 121, 30.3, 300 * GB, 24, 0.0, _GEN4, 72, 16, 2040),
        # A10G: the table's A10 figures (125 TFLOPS, 600 GB/s); AWS runs it at 300 W, 1710 MHz.
        Board("NVIDIA A10G", 125, 31.2, 600 * GB, 24, 0.0, _GEN4, 300, 24, 1710, multiplexed_prof=True),
        # T4: 65 TFLOPS, 320 GB/s, Gen3; 8.1 FP32, 70 W, 1590 MHz.
        Board("Tesla T4", 65, 8.1, 320 * GB, 16, 0.0, _GEN3, 70, 11, 1590, multiplexed_prof=True),
    )
}


@dataclass(frozen=True)
class Storage:
    """Where a dataset is read from, and what one pod can get out of it.

    Attributes:
        path: how reads reach it: "block" (a local or attached block device), "nfs" (network file
            system: network receive, D-state readers), "object" (HTTP readers: sockets, S state),
            "rdma-fs" (Lustre/GPFS over InfiniBand: RDMA receive, D state), "page-cache" (the
            dataset fits in RAM: no device reads at all).
        low_bps, high_bps: the effective read bandwidth one pod sees for dataset-style reads.
        request_bytes: typical size of one device request (for reads/s).
    """

    path: str
    low_bps: float
    high_bps: float
    request_bytes: float


STORAGE: dict[str, Storage] = {
    # NVMe Gen4 ~7 GB/s, Gen3 ~3.5 GB/s (TELEMETRY.md); small-file reads get less.
    "nvme": Storage("block", 1.5 * GB, 6.0 * GB, 128e3),
    "nvme-raid": Storage("block", 6.0 * GB, 22.0 * GB, 256e3),
    # SATA SSD ~0.55 GB/s (TELEMETRY.md).
    "sata-ssd": Storage("block", 0.18 * GB, 0.53 * GB, 96e3),
    # Cloud block volumes: gp3 125 MB/s baseline up to 1,000 MB/s provisioned (AWS EBS documentation).
    "block-volume": Storage("block", 0.12 * GB, 1.0 * GB, 192e3),
    # "network file systems typically far below local NVMe"; EFS up to ~1.5 GiB/s per client.
    "nfs": Storage("nfs", 0.06 * GB, 1.1 * GB, 1e6),
    "efs": Storage("nfs", 0.08 * GB, 1.6 * GB, 1e6),
    "object": Storage("object", 0.12 * GB, 2.5 * GB, 8e6),
    "lustre": Storage("rdma-fs", 0.6 * GB, 12.0 * GB, 1e6),
    "page-cache": Storage("page-cache", 15.0 * GB, 40.0 * GB, 0.0),
}
