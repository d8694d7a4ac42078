"""What a training Job asks of each resource per sample, and the cluster it runs on.

A :class:`Setup` is everything drawn for a Job (see :mod:`.draw`): the model and its batch, the GPU and
the node, storage, network, limits and the neighbour. :meth:`Setup.caps` turns it into the program's
per-GPU capacities.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck

from .hardware import KB, MB, NVLINK_LATENCY_S, PCIE_PEER_LATENCY_S, Fabric, Gpu, Storage
from .program import Demand


@dataclass(frozen=True)
class Model:
    """A model family: per-sample training work and input (sources in docs/familyy.md).

    Attributes:
        name: a short name for tags.
        flops: training FLOPs per sample (about 3x the forward pass).
        params: parameters whose gradients are all-reduced.
        read_bytes: stored bytes per sample.
        dec_cpu: host CPU seconds to decode and augment a sample (low, high).
        h2d: bytes per sample copied to the GPU.
        intensity: FLOPs per HBM byte of the bandwidth-bound kernels (low, high).
        ops: kernels per step.
        batch: per-GPU batch sizes to draw from.
        gpu_decode: the input is images or video that the GPU can decode.
    """

    name: str
    flops: float
    params: float
    read_bytes: float
    dec_cpu: tuple[float, float]
    h2d: float
    intensity: tuple[float, float]
    ops: int
    batch: tuple[int, ...]
    gpu_decode: bool


MODELS: tuple[Model, ...] = (
    Model("resnet50", 12.3e9, 25.6e6, 110 * KB, (5e-3, 20e-3), 150 * KB, (40, 140), 480, (32, 64, 128, 256), True),
    Model("vit-b16", 52.8e9, 86e6, 110 * KB, (6e-3, 20e-3), 150 * KB, (90, 260), 400, (32, 64, 128), True),
    Model("bert-large", 1.04e12, 340e6, 4 * KB, (1e-4, 5e-4), 4 * KB, (100, 300), 1200, (8, 16, 32), False),
    Model("gpt-1.3b", 1.6e13, 1.3e9, 8 * KB, (5e-5, 3e-4), 16 * KB, (150, 400), 900, (1, 2, 4, 8), False),
    Model("dlrm", 0.12e9, 24e6, 0.16 * KB, (2e-6, 1e-5), 0.5 * KB, (6, 40), 300, (2048, 4096, 8192), False),
    Model("wav2vec2", 3e11, 317e6, 480 * KB, (3e-3, 10e-3), 960 * KB, (60, 180), 1500, (4, 8, 16), False),
    Model("slowfast", 2e11, 34e6, 3 * MB, (60e-3, 200e-3), 4.8 * MB, (30, 100), 900, (4, 8, 16), True),
    Model("unet3d", 9e11, 30e6, 16 * MB, (20e-3, 80e-3), 8 * MB, (20, 60), 600, (1, 2, 4), False),
    Model("sd-unet", 2.4e12, 860e6, 200 * KB, (5e-3, 12e-3), 32 * KB, (60, 150), 2500, (4, 8, 16), True),
)


@dataclass(frozen=True)
class Setup:
    """One Job on one cluster: fixed through the window (phases change only the neighbour, cache, pauses).

    Node-level figures are per node; :meth:`caps` turns them into per-GPU capacities.
    """

    target: Bottleneck
    model: Model
    batch: int
    precision: str
    gpu: Gpu
    gpus_per_node: int
    nodes: int
    storage: Storage
    storage_bps: float
    storage_iops: float
    fabric: Fabric | None
    nic_bps: float
    node_cpus: int
    cpu_quota: float | None
    workers: int
    launch_speed: float
    thread_speed: float
    mfu: float
    clock_factor: float
    power_limit_w: float
    power_capped: bool
    mem_limit: float | None
    node_mem: float
    resident: float
    swap_total: float
    swap_bps: float
    zram: bool
    demand: Demand
    neighbour_cores: float
    neighbour_disk_bps: float
    neighbour_net_bps: float
    neighbour_rdma_bps: float
    neighbour_mem: float
    neighbour_from: float  # seconds into the window the neighbour arrives (inf: never)
    dataset_fits: bool
    warm_at: float  # seconds into the window the page cache holds the dataset (inf: never)
    mmap_reader: bool
    tags: tuple[str, ...]

    def caps(self, *, neighbour: bool) -> dict[str, float]:
        """Per-GPU capacities, with or without the neighbour on the node."""
        g = float(self.gpus_per_node)
        cores = float(self.node_cpus) - (self.neighbour_cores if neighbour else 0.0)
        if self.cpu_quota is not None:
            cores = min(cores, self.cpu_quota)
        disk = self.storage_bps
        if not self.storage.remote and neighbour:
            disk = max(disk - self.neighbour_disk_bps, 0.05 * disk)
        nic = self.nic_bps - (self.neighbour_net_bps if neighbour else 0.0)
        rdma = 0.0
        if self.fabric is not None and self.fabric.rdma:
            rdma = self.fabric.bps - (self.neighbour_rdma_bps if neighbour else 0.0)
        if self.precision == "fp32":
            peak = self.gpu.fp32_tflops * 1e12
        elif self.precision == "tf32":
            peak = self.gpu.tensor_tflops * 1e12 / 2
        else:
            peak = self.gpu.tensor_tflops * 1e12
        latency = NVLINK_LATENCY_S if self.gpu.nvlink_bps > 0 else PCIE_PEER_LATENCY_S
        if self.nodes > 1 and self.fabric is not None:
            latency = self.fabric.latency_s
        return {
            "cores": max(cores, 0.5) / g,
            "workers": float(self.workers),
            "launch": self.launch_speed,
            "thread": self.thread_speed,
            "storage_bw": disk / g,
            "storage_iops": self.storage_iops / g,
            "nic": max(nic, 0.05 * self.nic_bps) / g,
            "rdma": max(rdma, 0.0) / g,
            "pcie": self.gpu.pcie_bps,
            "nvlink": self.gpu.nvlink_bps,
            "msg_rate": 1.0 / latency,
            "hbm": self.gpu.hbm_bps * 0.85,  # DRAM activity ~0.8-0.85 is the practical peak
            "flops": peak * self.mfu * self.clock_factor,
            "host_mem": self.mem_limit if self.mem_limit is not None else self.node_mem * 0.9,
            "swap_bw": self.swap_bps / g,
        }
