"""What a Job is: its model, batch, GPUs, links, storage, loader, limits and exporters, as drawn.

A draw starts from a plain configuration and is then steered toward its block's class intent
(``steer``): the label itself comes later, from the timeline, so a steered draw is only a likelier
one, and the family resamples until the timeline agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyac.hardware import (
    FABRIC_GBPS,
    GB,
    GIB,
    GPU_BY_KEY,
    GPUS,
    KERNEL_LAUNCH_S,
    STORAGE_BW,
    Gpu,
)
from bottleneck_operator_dev.familyac.models import KINDS, Model, draw_model


@dataclass(frozen=True)
class Config:
    """One Job's drawn configuration (all pods alike; nodes differ only in neighbours)."""

    model: Model
    precision: str  # "bf16", "fp16", "tf32", "fp32"
    gpu: Gpu
    gpus_per_pod: int
    pods: int
    pods_per_node: int
    intra: str  # "nvlink" or "pcie"
    p2p_share: float  # PCIe peer share of x16 when intra is "pcie"
    fabric: str  # "ib", "roce", "tcp" ("none" when one node)
    nic_gbps: float
    storage: str
    storage_bw: float  # bytes/s the node's share of the storage gives (per connection for "object")
    workers: int  # loader workers per GPU process
    cpu_limit: float | None  # cores per pod
    node_cpus: int
    neighbour_cores: float  # cores other tenants use on each node
    neighbour_pods: int
    mem_limit: float | None  # bytes per pod
    mem_demand: float  # working set the pod would like, bytes
    node_mem: float
    swap: bool
    power_cap: float  # enforced limit / TDP
    clock_spread: float  # sd of per-GPU clock factor
    launch_s: float
    compiled: bool  # CUDA graphs / compiled: fewer launches
    h2d_share: float  # share of the x16 link one GPU's copies get (shared switch)
    scrape: float  # dcgm-exporter scrape interval, s
    node_scrape: float
    field_set: str  # "dev", "default", "full"
    sidecar: bool
    sidecar_net: bool
    reset: str  # exporter whose counters reset in the window ("" none)
    missing: float  # share of scrapes lost

    @property
    def nodes(self) -> int:
        return -(-self.pods // self.pods_per_node)

    @property
    def world(self) -> int:
        return self.pods * self.gpus_per_pod

    @property
    def ranks_per_node(self) -> int:
        return min(self.pods, self.pods_per_node) * self.gpus_per_pod


def _gpu_layout(rng: np.random.Generator, gpu: Gpu) -> tuple[int, int, int, str]:
    gpus_per_pod = int(rng.choice([1, 2, 4, 8] if gpu.nvlink_gbs else [1, 2, 4]))
    pods = int(rng.choice([1, 1, 2, 4]))
    pods_per_node = int(rng.choice([1, 2])) if gpus_per_pod <= 4 else 1
    intra = "nvlink" if gpu.nvlink_gbs > 0 else "pcie"
    return gpus_per_pod, pods, pods_per_node, intra


def draw(rng: np.random.Generator) -> Config:
    """A plain Job: nothing steered yet."""
    gpu = GPUS[int(rng.integers(len(GPUS)))]
    kind = str(rng.choice(KINDS))
    gpus_per_pod, pods, pods_per_node, intra = _gpu_layout(rng, gpu)
    fabric = str(rng.choice(["ib", "roce", "tcp"]))
    storage = str(rng.choice(["nvme", "nvme", "sata", "mmap", "nfs", "object"]))
    lo, hi = STORAGE_BW[storage]
    node_cpus = int(rng.choice([32, 48, 64, 96, 128]))
    limited = bool(rng.random() < 0.6)
    workers = int(rng.choice([2, 4, 6, 8, 12]))
    cpu_limit = float(gpus_per_pod * (workers + 2) * rng.uniform(0.8, 1.6)) if limited else None
    mem_demand = float(gpus_per_pod * (8 + 1.5 * workers) * GIB * rng.uniform(0.7, 1.3))
    mem_limit = float(mem_demand * rng.uniform(1.2, 2.5)) if rng.random() < 0.8 else None
    field_set = str(rng.choice(["dev", "default", "default", "full"]))
    return Config(
        model=draw_model(rng, kind),
        precision=str(rng.choice(["bf16", "bf16", "fp16", "tf32", "fp32"])),
        gpu=gpu,
        gpus_per_pod=gpus_per_pod,
        pods=pods,
        pods_per_node=pods_per_node,
        intra=intra,
        p2p_share=float(rng.uniform(0.25, 0.6)),
        fabric=fabric,
        nic_gbps=float(rng.choice(FABRIC_GBPS[fabric])),
        storage=storage,
        storage_bw=float(np.exp(rng.uniform(np.log(lo), np.log(hi)))),
        workers=workers,
        cpu_limit=cpu_limit,
        node_cpus=node_cpus,
        neighbour_cores=float(node_cpus * rng.uniform(0.0, 0.5)),
        neighbour_pods=int(rng.integers(0, 6)),
        mem_limit=mem_limit,
        mem_demand=mem_demand,
        node_mem=float(rng.choice([256, 512, 1024, 2048]) * GIB),
        swap=bool(rng.random() < 0.3),
        power_cap=float(1.0 if rng.random() < 0.7 else rng.uniform(0.6, 0.95)),
        clock_spread=float(rng.uniform(0.005, 0.04)),
        launch_s=float(rng.uniform(*KERNEL_LAUNCH_S)),
        compiled=bool(rng.random() < 0.3),
        h2d_share=float(rng.choice([1.0, 1.0, 0.5])),
        scrape=float(rng.choice([5.0, 10.0, 15.0, 15.0, 30.0, 30.0, 60.0])),
        node_scrape=float(rng.choice([15.0, 30.0, 30.0, 60.0])),
        field_set=field_set,
        sidecar=bool(rng.random() < 0.8),
        sidecar_net=bool(rng.random() < 0.6),
        reset=str(rng.choice(["", "", "", "", "", "", "node", "sidecar", "cadvisor"])),
        missing=float(rng.choice([0.0, 0.01, 0.03, 0.08])),
    )


MECHANISM_CHOICES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("local-disk", "network-storage"),
    Bottleneck.CPU: ("throttled", "saturated", "too-few-workers"),
    Bottleneck.INTERCONNECT: ("network", "network", "pcie", "pcie-h2d"),
    Bottleneck.GPU: ("compute", "launch-bound"),
    Bottleneck.MEMORY: ("host-memory-pressure", "hbm-bandwidth"),
}


def _pick(rng: np.random.Generator, items: tuple[str, ...]) -> str:
    return str(items[int(rng.integers(len(items)))])


def _fast_input(rng: np.random.Generator, cfg: Config) -> Config:
    """Storage and loaders that keep up with nearly anything: the input pipeline out of the way."""
    return replace(
        cfg,
        storage="nvme",
        storage_bw=float(rng.uniform(5, 7) * GB),
        workers=max(cfg.workers, 8),
        cpu_limit=None,
        neighbour_cores=float(cfg.node_cpus * rng.uniform(0.0, 0.2)),
        mem_limit=None if cfg.mem_limit is None else max(cfg.mem_limit, 1.5 * cfg.mem_demand),
    )


def steer(rng: np.random.Generator, cfg: Config, intent: Bottleneck, mechanism: str) -> Config:
    """Nudge a draw toward one class (and one of its mechanisms); the timeline still decides."""
    if intent is Bottleneck.IO:
        return _steer_io(rng, cfg, mechanism)
    if intent is Bottleneck.CPU:
        return _steer_cpu(rng, cfg, mechanism)
    if intent is Bottleneck.INTERCONNECT:
        return _steer_interconnect(rng, cfg, mechanism)
    if intent is Bottleneck.GPU:
        return _steer_gpu(rng, cfg, mechanism)
    return _steer_memory(rng, cfg, mechanism)


def _steer_io(rng: np.random.Generator, cfg: Config, mechanism: str) -> Config:
    kind = _pick(rng, ("resnet50", "vit", "video", "unet3d", "speech"))
    base = replace(_fast_input(rng, cfg), model=draw_model(rng, kind), workers=int(rng.choice([8, 12, 16])))
    if mechanism == "local-disk":
        storage = _pick(rng, ("sata", "nvme", "mmap"))
        bw = float(rng.uniform(0.08, 0.5) * GB)  # a shared or io.max-throttled device
    else:
        storage = _pick(rng, ("nfs", "object"))
        bw = float(rng.uniform(0.03, 0.3) * GB) if storage == "nfs" else float(rng.uniform(5e6, 25e6))
    return replace(base, storage=storage, storage_bw=bw)


def _steer_cpu(rng: np.random.Generator, cfg: Config, mechanism: str) -> Config:
    kind = _pick(rng, ("resnet50", "vit", "video", "speech"))
    model = draw_model(rng, kind)
    model = replace(model, decode_s=model.decode_s * rng.uniform(1.5, 3.0))  # heavy augmentation
    base = replace(_fast_input(rng, cfg), model=model)
    if mechanism == "throttled":
        return replace(
            base, workers=int(rng.choice([8, 12])), cpu_limit=float(base.gpus_per_pod * rng.uniform(1.0, 3.0))
        )
    if mechanism == "saturated":
        return replace(
            base,
            workers=int(rng.choice([12, 16])),
            neighbour_cores=float(base.node_cpus * rng.uniform(0.85, 1.4)),
            neighbour_pods=int(rng.integers(3, 10)),
        )
    return replace(base, workers=int(rng.choice([1, 2])))


def _steer_interconnect(rng: np.random.Generator, cfg: Config, mechanism: str) -> Config:
    if mechanism == "pcie-h2d":
        model = draw_model(rng, "unet3d")
        # A light segmentation net on large float32 volumes: little math per byte copied.
        model = replace(model, input_bytes=model.input_bytes * rng.uniform(2.0, 4.0), decode_s=model.decode_s * 0.05)
        model = replace(model, flops=model.flops * rng.uniform(0.01, 0.05))
        gpu = GPU_BY_KEY[_pick(rng, ("T4", "V100-SXM2", "L4", "A10"))]
        return replace(
            _fast_input(rng, cfg),
            model=model,
            gpu=gpu,
            intra="nvlink" if gpu.nvlink_gbs else "pcie",
            h2d_share=float(rng.choice([0.25, 0.5])),
            pods=1,
            precision="fp16",
        )
    params = float(rng.choice([350e6, 760e6, 1.3e9]))
    model = replace(draw_model(rng, "gpt"), params=params, batch=int(rng.choice([1, 2])))
    model = replace(model, flops=6 * params * 1024)
    if mechanism == "pcie":
        gpu = GPU_BY_KEY[_pick(rng, ("L4", "A10", "H100-PCIe"))]
        return replace(
            _fast_input(rng, cfg),
            model=model,
            gpu=gpu,
            intra="pcie",
            gpus_per_pod=4,
            pods=1,
            p2p_share=float(rng.uniform(0.2, 0.4)),
        )
    return replace(
        _fast_input(rng, cfg),
        model=model,
        pods=int(rng.choice([2, 4])),
        pods_per_node=1,
        fabric="tcp",
        nic_gbps=float(rng.choice([10.0, 25.0])),
    )


def _steer_gpu(rng: np.random.Generator, cfg: Config, mechanism: str) -> Config:
    if mechanism == "launch-bound":
        model = draw_model(rng, _pick(rng, ("mlp", "resnet50")))
        model = replace(model, batch=int(rng.choice([4, 8, 16])), kernels=int(model.kernels * rng.uniform(1.5, 3.0)))
        gpu = GPU_BY_KEY[_pick(rng, ("A100-SXM4", "H100-SXM5", "H100-PCIe"))]
        return replace(
            _fast_input(rng, cfg),
            model=model,
            gpu=gpu,
            compiled=False,
            pods=1,
            gpus_per_pod=1,
            launch_s=float(rng.uniform(1e-5, 2.5e-5)),
        )
    model = draw_model(rng, _pick(rng, ("gpt", "vit", "bert")))
    model = replace(model, intensity=float(rng.uniform(300, 600)))
    return replace(
        _fast_input(rng, cfg), model=model, precision=_pick(rng, ("bf16", "fp16")), pods=1, fabric="ib", compiled=True
    )


def _steer_memory(rng: np.random.Generator, cfg: Config, mechanism: str) -> Config:
    if mechanism == "hbm-bandwidth":
        model = draw_model(rng, _pick(rng, ("recsys", "resnet50")))
        model = replace(model, intensity=float(rng.uniform(3, 40)), kernels=min(model.kernels, 250))
        return replace(
            _fast_input(rng, cfg), model=model, pods=1, compiled=True, precision=_pick(rng, ("bf16", "fp16"))
        )
    base = _fast_input(rng, cfg)
    model = replace(base.model, decode_s=base.model.decode_s * 0.5)
    return replace(
        base, model=model, mem_limit=float(base.mem_demand / rng.uniform(1.15, 1.8)), swap=bool(rng.random() < 0.6)
    )
