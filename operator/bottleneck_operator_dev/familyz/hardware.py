"""Published hardware figures the controllers run against (sources in docs/familyz.md).

Every number here is a datasheet or vendor figure; nothing is fitted to any data. The models draw
from these tables and derive the rest (per-GPU link shares, bytes per step) from them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One board type.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tensor_tflops: dense BF16/FP16 tensor-core peak at the maximum boost clock.
        fp32_tflops: non-tensor FP32 peak at the maximum boost clock.
        hbm_gbps: memory bandwidth, GB/s.
        tdp_w: the board's default power limit (TDP), W.
        idle_w: power of an idle board at its idle clocks, W.
        max_clock_mhz: maximum boost SM clock, MHz.
        idle_clock_mhz: SM clock an idle board drops to, MHz.
        nvlink_gbps: NVLink bandwidth per GPU per direction, GB/s (0: none).
        pcie_gbps: host PCIe x16 per direction, GB/s.
        memory_gb: framebuffer size.
    """

    model: str
    tensor_tflops: float
    fp32_tflops: float
    hbm_gbps: float
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    idle_clock_mhz: float
    nvlink_gbps: float
    pcie_gbps: float
    memory_gb: float


GPUS: tuple[Gpu, ...] = (
    Gpu("Tesla V100-SXM2-32GB", 125.0, 15.7, 900.0, 300.0, 40.0, 1530.0, 135.0, 150.0, 15.8, 32.0),
    Gpu("NVIDIA A100-SXM4-80GB", 312.0, 19.5, 2039.0, 400.0, 55.0, 1410.0, 210.0, 300.0, 31.5, 80.0),
    Gpu("NVIDIA H100 80GB HBM3", 989.0, 67.0, 3350.0, 700.0, 70.0, 1980.0, 345.0, 450.0, 63.0, 80.0),
    Gpu("NVIDIA H100 PCIe", 756.0, 51.0, 2000.0, 350.0, 45.0, 1755.0, 345.0, 0.0, 63.0, 80.0),
    Gpu("NVIDIA L4", 121.0, 30.3, 300.0, 72.0, 16.0, 2040.0, 210.0, 0.0, 31.5, 24.0),
    Gpu("NVIDIA A10", 125.0, 31.2, 600.0, 150.0, 20.0, 1695.0, 210.0, 0.0, 31.5, 24.0),
    Gpu("Tesla T4", 65.0, 8.1, 320.0, 70.0, 10.0, 1590.0, 300.0, 0.0, 15.8, 16.0),
)

# Boards that come in 8-GPU NVLink boxes; the others sit 1-4 to a PCIe host.
NVLINK_BOXES = frozenset(g.model for g in GPUS if g.nvlink_gbps > 0)

# Storage a DataLoader reads from: (mechanism name, bytes/s ceiling, IOPS ceiling, latency s, queue depth).
# Local devices by Little's law (throughput = outstanding requests / latency, capped by the device).
LOCAL_DISKS: tuple[tuple[str, float, float, float, int], ...] = (
    ("sata-ssd", 0.55e9, 90e3, 200e-6, 32),
    ("nvme-gen3", 3.5e9, 500e3, 90e-6, 256),
    ("nvme-gen4", 7.0e9, 1000e3, 80e-6, 256),
    ("throttled-volume", 0.25e9, 16e3, 1e-3, 32),  # a cloud block volume's provisioned ceiling
)
# Network storage rides the NIC: (name, per-client bytes/s ceiling, request latency s).
NETWORK_STORES: tuple[tuple[str, float, float], ...] = (
    ("nfs", 1.2e9, 1.5e-3),
    ("efs", 1.5 * 2**30, 3e-3),
    ("object-store", 2.0e9, 20e-3),
)

# NIC line rates, bits/s: Ethernet 10-400 Gb/s; InfiniBand HDR 200, NDR 400 per port.
ETHERNET_GBPS: tuple[float, ...] = (10.0, 25.0, 50.0, 100.0, 200.0)
RDMA_GBPS: tuple[float, ...] = (100.0, 200.0, 400.0)

# CFS: the bandwidth controller accounts quota per period (cpu.max default period 100 ms).
CFS_PERIOD_S = 0.1
# One core decodes and augments roughly 50-200 ImageNet JPEGs per second.
DECODE_PER_CORE = (50.0, 200.0)
# The SM clock moves in 15 MHz bins (NVML's supported-clocks table steps).
CLOCK_BIN_MHZ = 15.0
PAGE = 4096.0
