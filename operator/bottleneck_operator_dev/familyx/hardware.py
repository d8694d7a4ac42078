"""The parts a Job runs on: GPUs, storage, fabrics (figures and sources in docs/familyx.md).

Every number here is a published capability, not a tuning knob: the scheduler turns them into task
durations, and the exporters compare nothing against them (that is the analysis' business).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One board type.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tensor_tflops: dense BF16/FP16 tensor-core peak.
        fp32_tflops: plain FP32 (CUDA core) peak, what an FP32 model without TF32 gets.
        hbm_gbs: memory bandwidth, GB/s.
        nvlink_gbs: NVLink per direction, GB/s (0: a PCIe-only board).
        pcie_gbs: host PCIe x16 per direction, GB/s.
        max_clock: maximum SM boost clock, MHz.
        tdp_w: board power at the default limit, W.
        idle_w: typical draw with no kernel running, W.
        fb_gib: framebuffer, GiB.
        prof: whether it has the profiling (PROF) fields.
    """

    model: str
    tensor_tflops: float
    fp32_tflops: float
    hbm_gbs: float
    nvlink_gbs: float
    pcie_gbs: float
    max_clock: float
    tdp_w: float
    idle_w: float
    fb_gib: float
    prof: bool = True


GPUS: tuple[Gpu, ...] = (
    Gpu("Tesla V100-SXM2-32GB", 125.0, 15.7, 900.0, 150.0, 15.8, 1530.0, 300.0, 40.0, 32.0),
    Gpu("NVIDIA A100-SXM4-80GB", 312.0, 19.5, 2039.0, 300.0, 31.5, 1410.0, 400.0, 60.0, 80.0),
    Gpu("NVIDIA H100 80GB HBM3", 989.0, 67.0, 3350.0, 450.0, 63.0, 1980.0, 700.0, 75.0, 80.0),
    Gpu("NVIDIA H100 PCIe", 756.0, 51.0, 2000.0, 0.0, 63.0, 1755.0, 350.0, 50.0, 80.0),
    Gpu("NVIDIA L4", 121.0, 30.3, 300.0, 0.0, 31.5, 2040.0, 72.0, 16.0, 24.0),
    Gpu("NVIDIA A10", 125.0, 31.2, 600.0, 0.0, 31.5, 1695.0, 150.0, 20.0, 24.0),
    Gpu("Tesla T4", 65.0, 8.1, 320.0, 0.0, 15.8, 1590.0, 70.0, 10.0, 16.0),
)


@dataclass(frozen=True)
class Storage:
    """Where the dataset's shards live.

    Attributes:
        kind: a short name.
        gbs: throughput the whole node can draw, GB/s, before other tenants take their share.
        latency_s: per-request latency (first byte).
        local: a block device of the node (seen by diskstats, cgroup io.stat and cAdvisor), else
            a network file system or object store (seen as network receive bytes).
        request_mb: bytes per request, MB.
        iowait: whether readers wait in D state (block devices, NFS), which iowait and io PSI count;
            object-store readers wait in socket receive, which neither counts.
    """

    kind: str
    gbs: float
    latency_s: float
    local: bool
    request_mb: float
    iowait: bool


STORAGES: tuple[Storage, ...] = (
    Storage("sata-ssd", 0.55, 0.0002, True, 0.25, True),
    Storage("nvme-gen3", 3.5, 0.0001, True, 0.5, True),
    Storage("nvme-gen4", 7.0, 0.0001, True, 1.0, True),
    Storage("nfs", 1.0, 0.002, False, 1.0, True),
    Storage("efs", 1.5, 0.005, False, 1.0, True),
    Storage("object-store", 2.5, 0.03, False, 8.0, False),
)


@dataclass(frozen=True)
class Fabric:
    """The network between nodes.

    Attributes:
        kind: a short name.
        gbs: per node, per direction, GB/s (all of the node's ports together).
        alpha_s: per-message latency of a collective step.
        rdma: traffic bypasses the kernel's netdev counters (InfiniBand, RoCE): only the infiniband
            collector's port counters and, with GPUDirect RDMA, the GPUs' PCIe counters see it.
    """

    kind: str
    gbs: float
    alpha_s: float
    rdma: bool


FABRICS: tuple[Fabric, ...] = (
    Fabric("eth-10g", 1.25, 50e-6, False),
    Fabric("eth-25g", 3.125, 40e-6, False),
    Fabric("eth-100g", 12.5, 30e-6, False),
    Fabric("roce-100g", 12.5, 10e-6, True),
    Fabric("ib-hdr-200", 25.0, 6e-6, True),
    Fabric("ib-ndr-4x400", 200.0, 5e-6, True),
)

# A kernel launch costs the host this much (CUDA launch plus the framework's dispatch): small
# kernels shorter than it leave the GPU waiting on the host.
LAUNCH_S = (6e-6, 20e-6)
# What a well-tuned kernel reaches of the peaks: GEMMs of tensor-core peak, streaming kernels of
# HBM bandwidth (DCGM calls ~0.8 DRAM activity the practical maximum).
GEMM_EFFICIENCY = (0.55, 0.8)
HBM_EFFICIENCY = (0.75, 0.88)
# Share of the link a ring all-reduce turns into bus bandwidth.
LINK_EFFICIENCY = (0.7, 0.9)
# Pageable host-to-device copies go through a staging buffer at about half the pinned rate.
PAGEABLE_FACTOR = (0.35, 0.6)
# DDP's default gradient bucket.
BUCKET_BYTES = 25e6
