"""Published figures of the hardware a Job is drawn on: GPUs, host links, storage, fabrics, hosts.

Every number here has its source in docs/familyad.md (the table of figures). Throughputs are the
vendors' peak figures; what a Job achieves of them is drawn in workload.py as an efficiency, since a
datasheet peak is a ceiling that real kernels and transfers never reach.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One GPU model.

    Attributes:
        key: short id used in tags.
        model_name: dcgm-exporter's ``modelName`` label for it.
        tensor_tflops: dense FP16/BF16 tensor-core peak, TFLOP/s.
        fp32_tflops: non-tensor FP32 peak, TFLOP/s.
        hbm_gbps: device memory bandwidth, GB/s.
        fb_mib: framebuffer dcgm-exporter reports (FB_USED + FB_FREE), MiB.
        nvlink_gbps: NVLink bandwidth per GPU, both directions together, GB/s (0: none).
        pcie_gen: host link generation (x16).
        tdp_w: board power limit by default, W.
        idle_w: typical draw with no kernel running, W.
        max_sm_mhz: boost SM clock, MHz.
        sms: streaming multiprocessors.
        prof: whether DCGM profiling (PROF) fields exist on it.
        bf16: whether its tensor cores take BF16 (V100 and T4 do FP16 only).
    """

    key: str
    model_name: str
    tensor_tflops: float
    fp32_tflops: float
    hbm_gbps: float
    fb_mib: float
    nvlink_gbps: float
    pcie_gen: int
    tdp_w: float
    idle_w: float
    max_sm_mhz: float
    sms: int
    prof: bool = True
    bf16: bool = True


GPUS: dict[str, Gpu] = {
    g.key: g
    for g in (
        Gpu("v100", "Tesla V100-SXM2-32GB", 125.0, 15.7, 900.0, 32510.0, 300.0, 3, 300.0, 40.0, 1530.0, 80, bf16=False),
        Gpu("a100", "NVIDIA A100-SXM4-80GB", 312.0, 19.5, 2039.0, 81920.0, 600.0, 4, 400.0, 55.0, 1410.0, 108),
        Gpu("h100", "NVIDIA H100 80GB HBM3", 989.0, 67.0, 3350.0, 81559.0, 900.0, 5, 700.0, 70.0, 1980.0, 132),
        Gpu("h100pcie", "NVIDIA H100 PCIe", 756.0, 51.0, 2000.0, 81559.0, 0.0, 5, 350.0, 45.0, 1755.0, 114),
        Gpu("l4", "NVIDIA L4", 121.0, 30.3, 300.0, 23034.0, 0.0, 4, 72.0, 16.0, 2040.0, 58),
        Gpu("a10", "NVIDIA A10", 125.0, 31.2, 600.0, 23028.0, 0.0, 4, 150.0, 22.0, 1695.0, 72),
        Gpu("t4", "Tesla T4", 65.0, 8.1, 320.0, 15360.0, 0.0, 3, 70.0, 10.0, 1590.0, 40, bf16=False),
    )
}

# PCIe x16 bandwidth per direction, GB/s, headers included (TELEMETRY.md, from per-lane rates).
PCIE_GBPS = {3: 15.8, 4: 31.5, 5: 63.0}

# A DMA copy from pinned host memory reaches most of the link; a copy from pageable memory goes
# through a staging buffer and reaches far less (NVIDIA's data-transfer guide shows the gap; the
# exact shares vary by host and are drawn from these ranges).
PINNED_EFFICIENCY = (0.70, 0.85)
PAGEABLE_EFFICIENCY = (0.25, 0.50)

# Kernels reach at most ~0.8 of peak DRAM bandwidth (DCGM docs via TELEMETRY.md: DRAM_ACTIVE ~0.8 is
# the practical maximum); memory-bound kernels are costed at this share of the datasheet figure.
HBM_PRACTICAL = 0.8


@dataclass(frozen=True)
class Storage:
    """Where a Job's samples live.

    Attributes:
        key: short id used in tags.
        kind: "local" (a block device on the node), "nfs" (a network file system mounted on the
            node) or "object" (an HTTP object store read by the loader processes).
        gbps: aggregate read bandwidth one client gets, GB/s (low, high).
        latency_s: time to first byte of one request, seconds (low, high).
    """

    key: str
    kind: str
    gbps: tuple[float, float]
    latency_s: tuple[float, float]


STORAGES: dict[str, Storage] = {
    s.key: s
    for s in (
        Storage("sata-ssd", "local", (0.40, 0.55), (1e-4, 3e-4)),
        Storage("nvme-gen3", "local", (2.0, 3.5), (8e-5, 1.5e-4)),
        Storage("nvme-gen4", "local", (4.0, 7.0), (6e-5, 1.2e-4)),
        Storage("nfs", "nfs", (0.10, 1.2), (5e-4, 3e-3)),
        Storage("efs", "nfs", (0.10, 1.6), (1e-3, 5e-3)),
        Storage("lustre", "nfs", (1.0, 5.0), (3e-4, 1e-3)),
        Storage("s3", "object", (0.085, 0.090), (0.02, 0.10)),  # gbps: per connection
    )
}

# Network fabrics between nodes: (key, per-port Gb/s, RDMA?). Ethernet 10-400 Gb/s; InfiniBand HDR
# 200 and NDR 400 Gb/s per port (TELEMETRY.md); RoCE is RDMA over Ethernet.
FABRICS: dict[str, tuple[float, bool]] = {
    "tcp-25g": (25.0, False),
    "tcp-50g": (50.0, False),
    "tcp-100g": (100.0, False),
    "tcp-200g": (200.0, False),
    "roce-100g": (100.0, True),
    "roce-200g": (200.0, True),
    "ib-hdr": (200.0, True),
    "ib-ndr": (400.0, True),
}
# Share of the line rate a ring all-reduce reaches: RDMA close to the link, TCP sockets well below
# (nccl-tests PERFORMANCE.md defines bus bandwidth; the shares are drawn, no single source gives them).
RDMA_EFFICIENCY = (0.80, 0.92)
TCP_EFFICIENCY = (0.45, 0.75)

# One core decodes and augments ~50-200 ImageNet JPEGs/s (TELEMETRY.md).
JPEG_PER_CORE_S = (50.0, 200.0)

# Host time to issue one eager PyTorch operator (Python, dispatcher, CUDA launch): the CUDA launch
# alone is ~4-6 us, an eager element-wise op ~20 us on a V100 host (Nsight Systems guide).
OP_ISSUE_S = (6e-6, 30e-6)

# Swap-in or refault latency of one major fault: zram (compressed RAM) or an NVMe swap device.
FAULT_S = {"zram": (8e-6, 20e-6), "nvme": (60e-6, 150e-6), "none": (80e-6, 400e-6)}

PAGE = 4096.0
CFS_PERIOD_S = 0.1  # the kernel's default cpu.max period (100000 us)
