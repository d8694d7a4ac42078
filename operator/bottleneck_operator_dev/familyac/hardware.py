"""Hardware figures the timelines are built from: GPUs, host links, fabrics, storage.

Every figure here is listed with its source in docs/familyac.md; where no public source was found
the doc says so and the figure is marked "assumed" beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
MIB = 1024.0 * 1024.0
GIB = 1024.0 * MIB


@dataclass(frozen=True)
class Gpu:
    """One GPU model.

    Attributes:
        key: short name used in tags.
        model_name: dcgm-exporter's ``modelName`` label as nvidia-smi prints it.
        tensor_tflops: dense BF16/FP16 tensor-core TFLOPS.
        fp32_tflops: non-tensor FP32 TFLOPS (what FP32 training without TF32 gets).
        hbm_gbs: memory bandwidth, GB/s.
        fb_gib: framebuffer, GiB.
        tdp_w: board power limit at default, W.
        idle_w: power with no kernel running (assumed, no datasheet gives it).
        boost_mhz: maximum SM clock.
        nvlink_gbs: NVLink bandwidth per direction, GB/s (0: none).
        pcie_gbs: host PCIe x16 bandwidth per direction, GB/s.
    """

    key: str
    model_name: str
    tensor_tflops: float
    fp32_tflops: float
    hbm_gbs: float
    fb_gib: float
    tdp_w: float
    idle_w: float
    boost_mhz: float
    nvlink_gbs: float
    pcie_gbs: float


GPUS: tuple[Gpu, ...] = (
    Gpu("V100-SXM2", "Tesla V100-SXM2-32GB", 125.0, 15.7, 900.0, 32.0, 300.0, 40.0, 1530.0, 150.0, 15.8),
    Gpu("A100-SXM4", "NVIDIA A100-SXM4-80GB", 312.0, 19.5, 2039.0, 80.0, 400.0, 55.0, 1410.0, 300.0, 31.5),
    Gpu("H100-SXM5", "NVIDIA H100 80GB HBM3", 989.0, 67.0, 3350.0, 80.0, 700.0, 75.0, 1980.0, 450.0, 63.0),
    Gpu("H100-PCIe", "NVIDIA H100 PCIe", 756.0, 51.0, 2000.0, 80.0, 350.0, 50.0, 1755.0, 0.0, 63.0),
    Gpu("L4", "NVIDIA L4", 121.0, 30.3, 300.0, 24.0, 72.0, 16.0, 2040.0, 0.0, 31.5),
    Gpu("A10", "NVIDIA A10", 125.0, 31.2, 600.0, 24.0, 150.0, 20.0, 1695.0, 0.0, 31.5),
    Gpu("T4", "Tesla T4", 65.0, 8.1, 320.0, 16.0, 70.0, 10.0, 1590.0, 0.0, 15.8),
)
GPU_BY_KEY = {g.key: g for g in GPUS}

# Practical shares of a peak: DRAM activity ~0.8 is the practical maximum (TELEMETRY.md); PCIe and
# NVLink payload efficiency after headers and protocol (assumed, TELEMETRY.md notes headers count).
HBM_PRACTICAL = 0.8
LINK_PAYLOAD = 0.8

# Storage: what one node can read, bytes/s (TELEMETRY.md "Hardware figures"), and per-request latency.
STORAGE_BW = {
    "sata": (0.25 * GB, 0.55 * GB),
    "nvme": (1.5 * GB, 7.0 * GB),
    "mmap": (1.5 * GB, 7.0 * GB),  # a memory-mapped dataset on local NVMe: read through page faults
    "nfs": (0.05 * GB, 1.5 * GIB),  # EFS per client up to ~1.5 GiB/s; most NFS far below local NVMe
    "object": (0.02 * GB, 0.09 * GB),  # per connection (assumed: no public per-connection figure found)
}
STORAGE_LATENCY = {"sata": 2e-4, "nvme": 1e-4, "mmap": 1e-4, "nfs": 2e-3, "object": 0.1}  # s; S3 first byte 100-200 ms
LOCAL_STORAGE = ("sata", "nvme", "mmap")

# Fabrics between nodes, line rate in Gb/s per port (TELEMETRY.md), and payload efficiency (assumed).
FABRIC_GBPS = {"ib": (100.0, 200.0, 400.0), "roce": (100.0, 200.0, 400.0), "tcp": (10.0, 25.0, 40.0, 100.0)}
FABRIC_EFFICIENCY = {"ib": 0.9, "roce": 0.85, "tcp": 0.65}

# GPUs without NVLink reduce over PCIe; across CPU sockets peer traffic goes through the host bridge
# at a fraction of the x16 rate (assumed 0.25-0.6: no vendor figure found).
PCIE_P2P_SHARE = (0.25, 0.6)

KERNEL_LAUNCH_S = (5e-6, 20e-6)  # per launch, the host's side (CUDA launch 5-50 us; ~20 us on V100 PyTorch)
CFS_PERIOD_S = 0.1  # cpu.cfs_period_us default 100 ms (kernel sched-bwc)
DDP_BUCKET_BYTES = 25.0 * MIB  # DistributedDataParallel bucket_cap_mb default 25
ADAM_BYTES_PER_PARAM = 16.0  # mixed-precision Adam state and master weights (ZeRO paper: 16 bytes/param)
MAJOR_FAULT_S = {"swap": 1.5e-4, "file": 8e-5}  # one major fault's stall (assumed, none found)
PAGE = 4096.0
