"""What a Job trains and where: models, clusters and conditions, drawn widely.

:func:`draw_config` draws one Job's configuration, leaning towards one class by ``push`` (how much
the leaned-on resource is weakened); :func:`rank_costs` turns a configuration into each rank's task
costs for the scheduler. Figures are sourced in docs/familyx.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyx.hardware import (
    FABRICS,
    GEMM_EFFICIENCY,
    GPUS,
    HBM_EFFICIENCY,
    LAUNCH_S,
    LINK_EFFICIENCY,
    PAGEABLE_FACTOR,
    STORAGES,
    Fabric,
    Gpu,
    Storage,
)

GROUPS = 4  # layer groups per pass: enough for bucket overlap, few enough to schedule fast


@dataclass(frozen=True)
class Model:
    """A model family's per-sample costs (forward pass; backward is twice the math and traffic).

    Attributes:
        name: a short name.
        gflops: forward GFLOPs per sample.
        elem_mb: forward HBM traffic of the non-GEMM (normalisation, activation, attention softmax,
            embedding gather) kernels per sample, MB at 16-bit.
        gemm_eff: how much of the GEMM efficiency its convolutions/GEMMs reach (small or odd shapes less).
        kernels: kernels launched per forward pass.
        params_m: parameters whose gradients are all-reduced, millions.
        sample_mb: bytes read from storage per sample, MB.
        decode_ms: CPU ms per sample to decode and augment on one reference core.
        h2d_mb: bytes copied to the GPU per sample, MB.
        batches: per-GPU batch sizes teams use.
        fill: share of SMs its kernels keep busy while they run.
    """

    name: str
    gflops: float
    elem_mb: float
    gemm_eff: float
    kernels: int
    params_m: float
    sample_mb: float
    decode_ms: float
    h2d_mb: float
    batches: tuple[int, ...]
    fill: float


MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model("resnet50", 4.1, 100.0, 0.35, 160, 25.6, 0.11, 8.0, 0.6, (64, 128, 256), 0.9),
        Model("vit-b16", 17.6, 120.0, 0.75, 200, 86.0, 0.11, 8.0, 0.6, (64, 128, 256), 0.92),
        Model("bert-large", 360.0, 1300.0, 0.9, 600, 340.0, 0.004, 0.3, 0.004, (8, 16, 32), 0.92),
        Model("gpt-1.3b", 5600.0, 4000.0, 0.9, 720, 1300.0, 0.008, 0.2, 0.016, (2, 4, 8), 0.94),
        Model("dlrm", 0.005, 0.6, 0.5, 60, 5.0, 0.0008, 0.02, 0.0008, (2048, 8192, 32768), 0.7),
        Model("unet3d", 600.0, 3000.0, 0.4, 300, 19.0, 30.0, 150.0, 8.0, (1, 2, 4), 0.85),
        Model("video-x3d", 50.0, 400.0, 0.4, 300, 35.0, 4.0, 120.0, 19.0, (8, 16, 32), 0.85),
        Model("conformer", 60.0, 500.0, 0.6, 400, 100.0, 0.5, 20.0, 0.5, (16, 32, 64), 0.88),
        Model("gnn-sage", 0.3, 30.0, 0.3, 80, 5.0, 0.2, 2.0, 0.5, (256, 512, 1024), 0.6),
        Model("mlp-policy", 0.0005, 0.02, 0.3, 40, 2.0, 0.001, 0.01, 0.001, (32, 64, 256), 0.25),
    )
}

# Models that lean a draw towards a class: what teams whose Jobs end up bound there tend to run.
LEAN_MODELS: dict[str, tuple[str, ...]] = {
    "io": ("resnet50", "vit-b16", "unet3d", "video-x3d", "conformer", "dlrm"),
    "cpu": ("resnet50", "vit-b16", "video-x3d", "conformer", "gnn-sage", "unet3d"),
    "net": ("gpt-1.3b", "bert-large", "vit-b16", "conformer", "resnet50"),
    "pcie": ("unet3d", "video-x3d", "resnet50", "dlrm", "bert-large"),
    "nvlink": ("gpt-1.3b", "bert-large"),
    "compute": ("gpt-1.3b", "bert-large", "vit-b16", "resnet50", "conformer"),
    "launch": ("mlp-policy", "gnn-sage", "dlrm"),
    "hbm": ("dlrm", "gnn-sage", "resnet50", "conformer", "vit-b16"),
    "hostmem": ("resnet50", "vit-b16", "video-x3d", "conformer", "gnn-sage"),
}


@dataclass(frozen=True)
class Config:
    """One Job's workload and cluster, and the conditions of one phase.

    Times are seconds, rates GB/s, sizes bytes unless named otherwise.
    """

    model: Model
    batch: int
    precision: str  # "amp" (16-bit tensor cores), "tf32", "fp32"
    gpu: Gpu
    gpus_per_node: int
    nodes: int
    fabric: Fabric
    net_share: float  # share of the fabric left by other tenants (Ethernet) or 1
    storage: Storage
    storage_share: float  # share of the storage's throughput this Job's node gets
    cache_hit: float  # share of reads served from the page cache
    mmap: bool  # the dataset is memory-mapped: reads arrive as major faults
    cores: int  # node CPUs
    cpu_limit: float | None  # the pod's CPU limit (cores), None: no limit
    cpu_speed: float  # core speed against the reference decode core
    workers: int  # loader workers per GPU
    prefetch: int  # batches per worker in the queue
    neighbour_cores: tuple[float, ...]  # per representative node: cores other tenants keep busy
    neighbour_mem: bool  # a tenant on the first node exhausts the node's memory (not this pod's)
    pinned: bool
    prefetcher: bool
    switch_share: float  # GPUs sharing one PCIe uplink during copies
    mem_limit_gb: float | None
    mem_stretch: float  # host memory pressure: extra time per unit of CPU work (0: none)
    swap: bool
    power_ratio: float  # enforced limit / TDP
    clocks: tuple[float, ...]  # per representative node: slowest board's clock against its maximum
    launch_s: float
    gemm_eff: float
    hbm_eff: float
    link_eff: float
    pageable: float
    fsdp: bool  # sharded data parallel: 1.5x the gradient traffic of an all-reduce
    flop_scale: float = 1.0  # longer sequences / wider layers than the family's reference
    elem_scale: float = 1.0  # unfused or FP32 elementwise work: more HBM traffic per sample

    @property
    def ranks(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def cpu_mechanism(self) -> Mechanism:
        """How the CPU limits this Job when it does: the quota, the node, or too few workers."""
        quota, node = self.cpu_supply()
        if quota < node and quota < self.demand():
            return Mechanism.THROTTLED
        if node < self.demand():
            return Mechanism.SATURATED
        return Mechanism.TOO_FEW_WORKERS

    def demand(self) -> float:
        """Cores per GPU the loader and the main process would use flat out."""
        return self.workers + 1.0

    def cpu_supply(self, node: int = 0) -> tuple[float, float]:
        """Cores per GPU the quota allows and the node has left after its other tenants."""
        quota = self.cpu_limit / self.gpus_per_node if self.cpu_limit is not None else math.inf
        free = max(self.cores - self.neighbour_cores[node], 1.0) / self.gpus_per_node
        return quota, free

    def cpu_factor(self, node: int = 0) -> float:
        """Speed of a loader worker against a whole reference core (quota, node and core speed)."""
        quota, free = self.cpu_supply(node)
        return self.cpu_speed * min(1.0, min(quota, free) / self.demand())


def _pick(rng: np.random.Generator, items: tuple[str, ...] | list[str]) -> str:
    return str(items[int(rng.integers(len(items)))])


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _cluster(rng: np.random.Generator, lean: str) -> tuple[Gpu, int, int, Fabric]:
    """The boards, how many per node, how many nodes and the fabric between them."""
    gpu = GPUS[int(rng.integers(len(GPUS)))]
    if lean == "nvlink":
        gpu = GPUS[int(rng.integers(3))]  # the NVLink boards
    if lean in ("hbm", "compute") and rng.random() < 0.6:
        gpu = GPUS[int(rng.integers(1, 4))]  # A100/H100: the parts whose roofline ridge is high
    gpn = int(rng.choice((1, 2, 4, 8))) if gpu.nvlink_gbs > 0 else int(rng.choice((1, 2, 4)))
    nodes = 1
    if lean == "net":
        nodes = int(rng.choice((2, 3, 4, 8)))
        gpn = max(gpn, 2)
    elif rng.random() < 0.3:
        nodes = int(rng.choice((2, 4)))
    if lean in ("nvlink", "pcie") and gpn == 1 and lean == "nvlink":
        gpn = 8
    if lean == "pcie" and rng.random() < 0.5:
        gpn = max(gpn, 2)
    fabric = FABRICS[int(rng.integers(len(FABRICS)))]
    if lean == "net":
        fabric = FABRICS[int(rng.integers(4))]
    return gpu, gpn, nodes, fabric


def draw_config(rng: np.random.Generator, lean: str, push: float) -> Config:
    """A Job leaning towards the key ``lean`` (a key of ``graph.KEY_CLASS``), weakened by ``push`` >= 1."""
    model = MODELS[_pick(rng, LEAN_MODELS[lean])] if rng.random() < 0.8 else MODELS[_pick(rng, list(MODELS))]
    gpu, gpn, nodes, fabric = _cluster(rng, lean)
    precision = _pick(rng, ("amp",) * 7 + ("tf32", "tf32", "fp32"))
    storage = STORAGES[int(rng.integers(len(STORAGES)))]
    if lean == "io":
        storage = STORAGES[int(rng.choice((0, 3, 4, 5, 1)))]
    cache_hit = _u(rng, 0.0, 0.9) if lean not in ("io",) else _u(rng, 0.0, 0.3)
    cores = int(rng.choice((32, 48, 64, 96, 128, 192)))
    cpu_limit: float | None = None
    if rng.random() < 0.6:
        cpu_limit = float(gpn * rng.choice((4, 6, 8, 12, 16)))
    workers = int(rng.choice((2, 4, 6, 8, 10, 12)))
    neighbours = tuple(_u(rng, 0.0, 0.5) * cores if rng.random() < 0.4 else 0.0 for _ in range(min(nodes, 4)))
    mem_limit: float | None = float(rng.choice((64, 128, 256, 512))) if rng.random() < 0.8 else None
    batch = int(rng.choice(model.batches))
    clocks = tuple(_u(rng, 0.9, 1.0) for _ in range(min(nodes, 4)))
    cfg = Config(
        model=model,
        batch=batch,
        precision=precision,
        gpu=gpu,
        gpus_per_node=gpn,
        nodes=nodes,
        fabric=fabric,
        net_share=1.0 if fabric.rdma else _u(rng, 0.5, 1.0),
        storage=storage,
        storage_share=_u(rng, 0.4, 1.0),
        cache_hit=cache_hit,
        mmap=rng.random() < 0.15,
        cores=cores,
        cpu_limit=cpu_limit,
        cpu_speed=_u(rng, 0.8, 1.3),
        workers=workers,
        prefetch=2,
        neighbour_cores=neighbours,
        neighbour_mem=rng.random() < 0.12,
        pinned=rng.random() < 0.7,
        prefetcher=rng.random() < 0.4,
        switch_share=float(rng.choice((1.0, 1.0, 1.5, 2.0))),
        mem_limit_gb=mem_limit,
        mem_stretch=0.0,
        swap=rng.random() < 0.4,
        power_ratio=1.0 if rng.random() < 0.7 else _u(rng, 0.6, 0.95),
        clocks=clocks,
        launch_s=_u(rng, *LAUNCH_S),
        gemm_eff=_u(rng, *GEMM_EFFICIENCY),
        hbm_eff=_u(rng, *HBM_EFFICIENCY),
        link_eff=_u(rng, *LINK_EFFICIENCY),
        pageable=_u(rng, *PAGEABLE_FACTOR),
        fsdp=rng.random() < 0.2,
    )
    return lean_on(cfg, lean, push, rng)


def lean_on(cfg: Config, lean: str, push: float, rng: np.random.Generator) -> Config:
    """Weaken the resource behind ``lean`` by ``push`` (and strengthen the usual suspects a little)."""
    p = push
    if lean in ("io_local", "io_remote", "io"):
        return replace(
            cfg, storage_share=cfg.storage_share / p, cache_hit=cfg.cache_hit / p, workers=max(2, cfg.workers)
        )
    if lean == "cpu":
        choice = rng.random()
        if choice < 0.35 and cfg.cpu_limit is not None:
            return replace(cfg, cpu_limit=max(1.0, cfg.cpu_limit / p), cpu_speed=cfg.cpu_speed / math.sqrt(p))
        if choice < 0.7:
            busy = tuple(min(cfg.cores - 2.0, cfg.cores * (1 - 0.5 / p)) for _ in cfg.neighbour_cores)
            return replace(cfg, neighbour_cores=busy, cpu_limit=None, cpu_speed=cfg.cpu_speed / math.sqrt(p))
        return replace(cfg, workers=max(1, int(cfg.workers / p)), cpu_limit=None, cpu_speed=cfg.cpu_speed / p)
    if lean == "hostmem":
        limit = cfg.mem_limit_gb or 128.0
        return replace(cfg, mem_limit_gb=limit, mem_stretch=0.4 * p * _u(rng, 1.0, 2.0), pinned=False, cache_hit=0.0)
    if lean == "net":
        return replace(cfg, net_share=cfg.net_share / p, prefetcher=True)
    if lean == "nvlink":
        return replace(cfg, link_eff=cfg.link_eff / p, batch=min(cfg.model.batches), fsdp=True)
    if lean == "pcie":
        return replace(cfg, pageable=cfg.pageable / p, switch_share=cfg.switch_share * math.sqrt(p), pinned=False)
    if lean == "compute":
        return replace(
            cfg,
            storage_share=1.0,
            cache_hit=max(cfg.cache_hit, 0.8),
            flop_scale=math.sqrt(p),
            cpu_speed=cfg.cpu_speed * 1.5,
            workers=max(cfg.workers, 8),
            pinned=True,
            nodes=1 if p > 2 else cfg.nodes,
        )
    if lean == "launch":
        return replace(cfg, launch_s=cfg.launch_s * p, batch=min(cfg.model.batches), cache_hit=max(cfg.cache_hit, 0.8))
    if lean == "hbm":
        return replace(
            cfg,
            elem_scale=p,
            cache_hit=max(cfg.cache_hit, 0.8),
            workers=max(cfg.workers, 8),
            pinned=True,
            nodes=1 if p > 2 else cfg.nodes,
        )
    raise ValueError(f"no lean {lean!r}")


LEANS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("io",),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.INTERCONNECT: ("net", "pcie", "nvlink", "net", "pcie"),
    Bottleneck.GPU: ("compute", "launch", "compute"),
    Bottleneck.MEMORY: ("hostmem", "hbm"),
}
