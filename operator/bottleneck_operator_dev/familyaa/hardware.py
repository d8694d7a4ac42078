"""The cluster side of the causal graph: GPU boards, links, storage, nodes, exporters' settings.

The boards' figures are published ones (TELEMETRY.md's table and NVIDIA's datasheets; idle power is
assumed), see docs/familyaa.md. The draw's shares are assumed from what cluster trace studies report
(most jobs on one GPU, few across nodes), and ranges no study gives are assumed and said so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GB = 1e9


@dataclass(frozen=True)
class Gpu:
    """One board model as its datasheet gives it.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        half_tflops: dense BF16/FP16 tensor TFLOPS.
        tf32_tflops: dense TF32 tensor TFLOPS (0: no TF32, FP32 runs on the FP32 pipes).
        fp32_tflops: FP32 (non-tensor) TFLOPS.
        hbm_gbs: memory bandwidth, GB/s.
        nvlink_gbs: NVLink bandwidth per direction, GB/s (0: PCIe-only board).
        pcie_gbs: host PCIe x16 bandwidth per direction, GB/s.
        tdp_w: board power limit by default, W.
        max_clock_mhz: maximum SM boost clock, MHz.
        idle_w: power at idle with clocks up (assumed ~10-15 % of TDP).
        memory_gb: framebuffer, GB.
    """

    model: str
    half_tflops: float
    tf32_tflops: float
    fp32_tflops: float
    hbm_gbs: float
    nvlink_gbs: float
    pcie_gbs: float
    tdp_w: float
    max_clock_mhz: float
    idle_w: float
    memory_gb: float


# TELEMETRY.md's hardware table; TDP, clocks and FP32/TF32 rates from NVIDIA's datasheets.
GPUS: tuple[Gpu, ...] = (
    Gpu("Tesla V100-SXM2-32GB", 125.0, 0.0, 15.7, 900.0, 150.0, 15.8, 300.0, 1530.0, 40.0, 32.0),
    Gpu("NVIDIA A100-SXM4-80GB", 312.0, 156.0, 19.5, 2039.0, 300.0, 31.5, 400.0, 1410.0, 55.0, 80.0),
    Gpu("NVIDIA H100 80GB HBM3", 989.0, 494.0, 67.0, 3350.0, 450.0, 63.0, 700.0, 1980.0, 75.0, 80.0),
    Gpu("NVIDIA H100 PCIe", 756.0, 378.0, 51.0, 2000.0, 0.0, 63.0, 350.0, 1755.0, 45.0, 80.0),
    Gpu("NVIDIA L4", 121.0, 60.0, 30.3, 300.0, 0.0, 31.5, 72.0, 2040.0, 12.0, 24.0),
    Gpu("NVIDIA A10", 125.0, 62.5, 31.2, 600.0, 0.0, 31.5, 150.0, 1695.0, 20.0, 24.0),
    Gpu("Tesla T4", 65.0, 0.0, 8.1, 320.0, 0.0, 15.8, 70.0, 1590.0, 10.0, 16.0),
)
# How often each board is drawn (assumed: trace studies report A100/V100-heavy fleets).
GPU_WEIGHTS = np.array([0.16, 0.30, 0.20, 0.08, 0.09, 0.09, 0.08])

# Storage a dataset can live on: (kind, GB/s per node, request size bytes, on a block device).
# Local figures from TELEMETRY.md; the network file system range is assumed below EFS's 1.5 GiB/s.
STORAGE: dict[str, tuple[float, float]] = {
    "nvme": (3.5, 7.0),
    "sata": (0.45, 0.55),
    "nfs": (0.1, 1.5),
    "object": (0.2, 2.5),
    "cache": (20.0, 40.0),  # the page cache: the dataset fits in host RAM (assumed memory-copy rates)
}
BLOCK_STORAGE = frozenset({"nvme", "sata"})


@dataclass(frozen=True)
class Cluster:
    """What the Job runs on, drawn before the workload.

    Attributes:
        gpu: the board.
        gpus_per_pod: boards per pod (one pod per node).
        pods: nodes of the Job.
        fabric: "ethernet" (NCCL over TCP sockets) or "rdma" (InfiniBand/RoCE) between nodes.
        nic_gbs: per-node network bandwidth between nodes, GB/s.
        storage: dataset location (a key of :data:`STORAGE`).
        storage_gbs: its bandwidth per node, GB/s.
        node_cpus: cores per node.
        cpu_limit: the pod's CPU limit in cores, 0 when none.
        mem_limit_gb: the pod's memory limit, 0 when none.
        node_mem_gb: host RAM per node.
        swap: whether the node has swap (zram or disk).
        shared: whether other tenants' pods run on the node.
        power_cap_w: enforced board power limit (at or below TDP).
        board_spread: per-pod mean clock factor of its boards (0.96-1.0, assumed).
        pinned: host buffers pinned (copies overlap compute).
        field_set: "dev", "default" or "full" dcgm-exporter counters.
        scrape: scrape interval per exporter, seconds.
        collect_s: dcgm-exporter's collection interval, seconds.
    """

    gpu: Gpu
    gpus_per_pod: int
    pods: int
    fabric: str
    nic_gbs: float
    storage: str
    storage_gbs: float
    node_cpus: int
    cpu_limit: float
    mem_limit_gb: float
    node_mem_gb: float
    swap: bool
    shared: bool
    power_cap_w: float
    board_spread: tuple[float, ...]
    pinned: bool
    field_set: str
    scrape: dict[str, float]
    collect_s: float

    @property
    def gpus(self) -> int:
        return self.gpus_per_pod * self.pods


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def draw_cluster(rng: np.random.Generator, *, storage: str | None = None, multi: bool | None = None) -> Cluster:
    """Draw a cluster; ``storage`` and ``multi`` (several nodes) pin what the job's class needs."""
    gpu = GPUS[int(rng.choice(len(GPUS), p=GPU_WEIGHTS / GPU_WEIGHTS.sum()))]
    # Philly and Helios: most jobs ask for one GPU, few span nodes (shares here assumed from them).
    if multi is None:
        multi = bool(rng.random() < 0.25)
    if multi:
        pods = int(rng.choice([2, 3, 4]))
        per = 8 if gpu.nvlink_gbs else int(rng.choice([2, 4, 8]))
    else:
        pods = 1
        per = int(rng.choice([1, 1, 2, 4, 8]))
    fabric = "rdma" if rng.random() < 0.6 else "ethernet"
    nic = _log_uniform(rng, 12.5, 100.0) if fabric == "rdma" else _log_uniform(rng, 1.25, 12.5)
    if storage is None:
        storage = str(rng.choice(["nvme", "sata", "nfs", "object", "cache"], p=[0.35, 0.1, 0.25, 0.15, 0.15]))
    lo, hi = STORAGE[storage]
    node_cpus = int(rng.choice([16, 32, 48, 64, 96, 128, 192]))
    node_cpus = max(node_cpus, 4 * per)
    cpu_limit = float(rng.integers(2, node_cpus // 2 + 1)) if rng.random() < 0.45 else 0.0
    node_mem = float(rng.choice([128, 256, 512, 1024, 2048]))
    mem_limit = float(node_mem * rng.uniform(0.1, 0.6)) if rng.random() < 0.6 else 0.0
    cap = gpu.tdp_w if rng.random() < 0.6 else gpu.tdp_w * rng.uniform(0.6, 0.95)
    field_set = str(rng.choice(["dev", "default", "full"], p=[0.2, 0.4, 0.4]))
    si = float(rng.choice([10.0, 15.0, 30.0, 60.0], p=[0.2, 0.35, 0.35, 0.1]))
    scrape = {name: si if rng.random() < 0.7 else float(rng.choice([10.0, 15.0, 30.0, 60.0])) for name in EXPORTERS}
    return Cluster(
        gpu=gpu,
        gpus_per_pod=per,
        pods=pods,
        fabric=fabric,
        nic_gbs=nic,
        storage=storage,
        storage_gbs=_log_uniform(rng, lo, hi),
        node_cpus=node_cpus,
        cpu_limit=cpu_limit,
        mem_limit_gb=mem_limit,
        node_mem_gb=node_mem,
        swap=bool(rng.random() < 0.35),
        shared=bool(rng.random() < 0.4),
        power_cap_w=float(cap),
        board_spread=tuple(float(x) for x in rng.uniform(0.96, 1.0, size=pods)),
        pinned=bool(rng.random() < 0.6),
        field_set=field_set,
        scrape=scrape,
        collect_s=float(rng.choice([5.0, 10.0, 30.0], p=[0.2, 0.2, 0.6])),
    )


EXPORTERS = ("dcgm", "cadvisor", "ksm", "node", "sidecar")
