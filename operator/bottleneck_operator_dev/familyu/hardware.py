"""Published hardware figures the clusters of family U are drawn from.

Every figure is a datasheet or shared/TELEMETRY.md number (sources in docs/familyu.md); the few that
are judgement (idle power, achievable fractions) are named as such where they are used.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class GpuSpec:
    """One board type.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tensor_tflops: dense BF16/FP16 tensor peak (TF32 counts half of it).
        fp32_tflops: non-tensor FP32 peak.
        has_tf32: Ampere or newer (TF32 tensor math for FP32 training).
        hbm_gbs: memory bandwidth, GB/s.
        nvlink_gbs: NVLink total (both directions) per GPU, GB/s; 0 for PCIe-only boards.
        pcie_gen: host PCIe generation (x16).
        tdp_w: board power at the default limit.
        idle_w: power with no kernel running (judgement: roughly 10-15 % of TDP).
        max_clock_mhz: maximum boost SM clock.
        fb_gib: framebuffer.
        prof: PROF (DCP) fields exist (Volta-or-newer datacenter boards).
    """

    model: str
    tensor_tflops: float
    fp32_tflops: float
    has_tf32: bool
    hbm_gbs: float
    nvlink_gbs: float
    pcie_gen: int
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    fb_gib: float
    prof: bool = True


GPUS: tuple[GpuSpec, ...] = (
    GpuSpec("Tesla V100-SXM2-32GB", 125.0, 15.7, False, 900.0, 300.0, 3, 300.0, 40.0, 1530.0, 32.0),
    GpuSpec("NVIDIA A100-SXM4-80GB", 312.0, 19.5, True, 2039.0, 600.0, 4, 400.0, 55.0, 1410.0, 80.0),
    GpuSpec("NVIDIA H100 80GB HBM3", 989.0, 67.0, True, 3350.0, 900.0, 5, 700.0, 70.0, 1980.0, 80.0),
    GpuSpec("NVIDIA H100 PCIe", 756.0, 51.0, True, 2000.0, 0.0, 5, 350.0, 45.0, 1755.0, 80.0),
    GpuSpec("NVIDIA L4", 121.0, 30.3, True, 300.0, 0.0, 4, 72.0, 16.0, 2040.0, 24.0),
    GpuSpec("NVIDIA A10", 125.0, 31.2, True, 600.0, 0.0, 4, 150.0, 20.0, 1695.0, 24.0),
    GpuSpec("Tesla T4", 65.0, 8.1, False, 320.0, 0.0, 3, 70.0, 10.0, 1590.0, 16.0, prof=False),
)

# PCIe x16 per direction, GB/s (TELEMETRY.md, derived from per-lane rates).
PCIE_GBS = {3: 15.8, 4: 31.5, 5: 63.0}

# Local block devices: sequential read throughput, GB/s (TELEMETRY.md storage figures).
LOCAL_DISKS = {"sata-ssd": 0.55, "nvme-gen3": 3.5, "nvme-gen4": 7.0}

# Shared storage services: (aggregate throughput range GB/s, per-client cap range GB/s).
# NFS servers and Amazon EFS (1.5 GiB/s per client, TELEMETRY.md); object stores read by many
# HTTP streams, whose per-client rate is bounded by the reader's connections.
NETWORK_STORES = {
    "nfs": ((1.0, 8.0), (1.0, 3.0)),
    "efs": ((3.0, 20.0), (1.5 * 1.074, 1.5 * 1.074)),
    "object": ((10.0, 60.0), (0.3, 2.5)),
}

# Node fabrics: (kind, Gb/s per port choices). Ethernet 10-400, InfiniBand HDR 200 / NDR 400 per port.
FABRICS = {
    "ethernet": (25.0, 50.0, 100.0, 200.0),
    "roce": (100.0, 200.0, 400.0),
    "infiniband": (200.0, 400.0),
}

NODE_CPUS = (32, 48, 64, 96, 128, 192, 256)
NODE_MEM_GIB = (256, 512, 1024, 2048)
