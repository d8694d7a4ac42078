"""What one Job of family AG runs on and how it is set up: everything the step simulation needs.

:func:`draw_scenario` draws a plausible cluster Job (hardware, workload, loader, limits, neighbours);
:mod:`.intents` then tilts a few of these choices towards the block's class intent. Nothing here
knows the label: that comes from the counterfactual runs in :mod:`.counterfactual`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator_dev.familyag.hardware import (
    FABRICS,
    GB,
    GIB,
    GPUS,
    STORAGE,
    Fabric,
    GpuModel,
    StorageKind,
    fabric_by_key,
)
from bottleneck_operator_dev.familyag.workloads import KINDS, ModelSpec, models_of

# Kinds whose samples can be decoded on the GPU (nvJPEG/DALI for images, GPU features for audio).
DECODED = ("vision-cnn", "vision-vit", "speech")


@dataclass(frozen=True)
class Neighbours:
    """Other tenants of the pods' nodes: what they take from the node, per node.

    Attributes:
        count: pods of other Jobs on each node.
        cpu: cores they keep busy.
        disk_bps: bytes per second they read from the node's local disk.
        net_bps: bytes per second they receive (and about half of it they send).
        memory: bytes of anonymous memory they hold.
    """

    count: int = 0
    cpu: float = 0.0
    disk_bps: float = 0.0
    net_bps: float = 0.0
    memory: float = 0.0


@dataclass(frozen=True)
class Scenario:
    """One Job's hardware, workload and configuration (per pod where it says so).

    Attributes are grouped: hardware (gpu .. nvlink_health), workload (model .. grad_bytes), input
    pipeline (storage .. prefetch), host (cpu_limit .. swap), GPU behaviour (launch_s .. spread).
    """

    gpu: GpuModel
    pods: int
    gpus_per_pod: int
    node_gpus: int
    node_cpus: int
    node_ram: float
    fabric: Fabric | None
    nic_ports: int
    pcie_share: float
    nvlink_health: float
    model: ModelSpec
    batch: int
    mode: str
    grad_bytes: float
    storage: StorageKind
    storage_bps: float
    storage_latency: float
    stream_bps: float
    files: bool
    cache_warm: bool
    aug: float
    gpu_decode: bool
    workers: int
    prefetch: int
    pinned: bool
    cpu_limit: float | None
    host_speed: float
    mem_limit: float | None
    main_rss: float
    worker_rss: float
    swap: str
    swap_bytes: float
    launch_s: float
    tensor_eff: float
    power_cap: float
    spread: tuple[tuple[float, ...], ...]
    neighbours: Neighbours

    @property
    def ranks(self) -> int:
        """GPUs of the whole Job (one training process each)."""
        return self.pods * self.gpus_per_pod


def _pick(rng: np.random.Generator, options: Sequence[object], weights: Sequence[float] | None = None) -> int:
    """Index of one option, with optional weights."""
    p = None if weights is None else np.asarray(weights, dtype=float) / float(np.sum(weights))
    return int(rng.choice(len(options), p=p))


def _uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(rng.uniform(low, high))


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def draw_gpu(rng: np.random.Generator) -> GpuModel:
    """A GPU model, weighted roughly as clusters hold them."""
    return GPUS[_pick(rng, GPUS, (0.28, 0.26, 0.1, 0.16, 0.2))]


def draw_fabric(rng: np.random.Generator, gpu: GpuModel) -> Fabric:
    """The inter-node fabric of a multi-node Job, by the GPU class it usually comes with."""
    if gpu.key in ("h100", "h200"):
        keys: tuple[str, ...] = ("ib-ndr", "roce-200", "eth-100")
        weights: tuple[float, ...] = (0.55, 0.35, 0.1)
    elif gpu.key == "a100":
        keys = ("ib-hdr", "roce-100", "eth-100", "eth-25")
        weights = (0.4, 0.25, 0.25, 0.1)
    else:
        keys = ("roce-100", "eth-100", "eth-50", "eth-25")
        weights = (0.2, 0.35, 0.2, 0.25)
    return fabric_by_key(keys[_pick(rng, keys, weights)])


def draw_model(rng: np.random.Generator, gpu: GpuModel, kinds: tuple[str, ...] = KINDS) -> ModelSpec:
    """A model of a random kind that fits the GPU."""
    for _ in range(20):
        kind = kinds[_pick(rng, kinds)]
        fitting = models_of(kind, gpu.memory_bytes)
        if fitting:
            return fitting[_pick(rng, fitting)]
    return models_of("vision-cnn", gpu.memory_bytes)[0]


def draw_storage(rng: np.random.Generator, kind: StorageKind | None = None, low: float = 0.0) -> dict[str, float]:
    """Bandwidth, latency and per-stream rate of a storage kind; ``low`` leans the bandwidth to its low end."""
    kind = kind or STORAGE[_pick(rng, STORAGE, (0.3, 0.08, 0.12, 0.05, 0.2, 0.1, 0.15))]
    lo, hi = kind.bps
    share = float(rng.uniform(0.0, 1.0 - low))
    bps = lo * (hi / lo) ** share
    latency = _log_uniform(rng, *kind.latency_s)
    stream = bps if kind.block else min(bps, _uniform(rng, 0.05, 0.15) * GB if kind.pod_net else 0.6 * GB)
    return {"bps": bps, "latency": latency, "stream": stream}


def draw_neighbours(rng: np.random.Generator, node_cpus: int, node_ram: float, shared: bool) -> Neighbours:
    """Other tenants: likely when the pods take part of a node, occasional CPU-only ones otherwise."""
    if not shared and rng.random() > 0.3:
        return Neighbours()
    count = int(rng.integers(1, 5 if shared else 3))
    return Neighbours(
        count=count,
        cpu=_uniform(rng, 0.02, 0.35) * node_cpus,
        disk_bps=_log_uniform(rng, 5e6, 400e6) if rng.random() < 0.5 else 0.0,
        net_bps=_log_uniform(rng, 1e6, 300e6),
        memory=_uniform(rng, 0.02, 0.25) * node_ram,
    )


def _tensor_efficiency(rng: np.random.Generator, model: ModelSpec) -> float:
    """Share of tensor peak the model's GEMMs and convolutions reach while they run (assumed ranges)."""
    ranges = {"vision-cnn": (0.3, 0.45), "vision-vit": (0.4, 0.55), "speech": (0.35, 0.5), "recsys": (0.25, 0.4)}
    return _uniform(rng, *ranges.get(model.kind, (0.45, 0.62)))


def _host(rng: np.random.Generator, gpu: GpuModel, node_gpus: int) -> tuple[int, float]:
    """Node CPUs and RAM, scaled from the product's usual 8-GPU (or largest) server."""
    scale = node_gpus / max(gpu.node_gpus)
    cpus = max(8, round(gpu.node_cpus[_pick(rng, gpu.node_cpus)] * scale))
    ram = max(32 * GIB, gpu.node_ram[_pick(rng, gpu.node_ram)] * scale)
    return cpus, ram


def _layout(rng: np.random.Generator, gpu: GpuModel, model: ModelSpec) -> tuple[int, int, int]:
    """Pods, GPUs per pod and GPUs per node."""
    node_gpus = gpu.node_gpus[_pick(rng, gpu.node_gpus)]
    per_pod = node_gpus if rng.random() < 0.75 else max(1, node_gpus // int(rng.choice([2, 4])))
    big = model.comm in ("fsdp", "moe") or model.kind == "llm-pretrain"
    pods = (1, 2, 4, 8)[_pick(rng, (1, 2, 4, 8), (0.3, 0.3, 0.25, 0.15) if big else (0.5, 0.25, 0.17, 0.08))]
    return pods, per_pod, node_gpus


def draw_scenario(rng: np.random.Generator) -> Scenario:
    """A plausible training Job on a shared cluster, before any class intent is applied."""
    gpu = draw_gpu(rng)
    model = draw_model(rng, gpu)
    pods, per_pod, node_gpus = _layout(rng, gpu, model)
    cpus, ram = _host(rng, gpu, node_gpus)
    fabric = draw_fabric(rng, gpu) if pods > 1 else None
    storage = STORAGE[_pick(rng, STORAGE, (0.3, 0.08, 0.12, 0.05, 0.2, 0.1, 0.15))]
    store = draw_storage(rng, storage)
    workers = (1, 2, 4, 6, 8, 10, 12, 16)[_pick(rng, range(8), (0.04, 0.08, 0.2, 0.14, 0.24, 0.1, 0.1, 0.1))]
    swap = ("none", "zram", "disk")[_pick(rng, (0, 1, 2), (0.75, 0.15, 0.1))]
    spread = tuple(tuple(float(x) for x in np.clip(rng.normal(1.0, 0.012, per_pod), 0.95, 1.0)) for _ in range(pods))
    return Scenario(
        gpu=gpu,
        pods=pods,
        gpus_per_pod=per_pod,
        node_gpus=node_gpus,
        node_cpus=cpus,
        node_ram=ram,
        fabric=fabric,
        nic_ports=fabric.ports[_pick(rng, fabric.ports)] if fabric else 0,
        pcie_share=float(rng.choice([1.0, 2.0], p=[0.6, 0.4])),
        nvlink_health=1.0 if rng.random() < 0.96 else 0.5,
        model=model,
        batch=int(model.batches[_pick(rng, model.batches)]),
        mode=("eager", "compiled", "graphs")[_pick(rng, (0, 1, 2), (0.6, 0.3, 0.1))],
        grad_bytes=2.0 if rng.random() < 0.6 else 4.0,
        storage=storage,
        storage_bps=store["bps"],
        storage_latency=store["latency"],
        stream_bps=store["stream"],
        files=model.files and rng.random() < 0.6,
        cache_warm=rng.random() < 0.6,
        aug=_uniform(rng, 0.6, 2.0),
        gpu_decode=model.kind in DECODED and rng.random() < 0.3,
        workers=workers,
        prefetch=2 if rng.random() < 0.8 else 4,
        pinned=rng.random() < 0.8,
        cpu_limit=None if rng.random() < 0.45 else float(rng.choice([4, 6, 8, 12, 16])) * per_pod,
        host_speed=_uniform(rng, 0.8, 1.25),
        mem_limit=None if rng.random() < 0.5 else _uniform(rng, 48, 160) * GIB * per_pod,
        main_rss=_uniform(rng, 3, 8) * GIB,
        worker_rss=_uniform(rng, 0.3, 1.5) * GIB,
        swap=swap,
        swap_bytes=0.0 if swap == "none" else _uniform(rng, 0.05, 0.25) * ram,
        launch_s=_uniform(rng, 4e-6, 12e-6),
        tensor_eff=_tensor_efficiency(rng, model),
        power_cap=gpu.tdp_w if rng.random() < 0.75 else gpu.tdp_w * _uniform(rng, 0.6, 0.9),
        spread=spread,
        neighbours=draw_neighbours(rng, cpus, ram, per_pod < node_gpus),
    )


def with_gpu(sc: Scenario, gpu: GpuModel, rng: np.random.Generator, per_pod: int | None = None) -> Scenario:
    """The Job moved to another GPU product: its node shape is drawn again for that product."""
    node_gpus = gpu.node_gpus[_pick(rng, gpu.node_gpus)]
    if per_pod is not None:
        node_gpus = max(node_gpus, per_pod)
    cpus, ram = _host(rng, gpu, node_gpus)
    per = per_pod if per_pod is not None else min(sc.gpus_per_pod, node_gpus)
    return replace(sc, gpu=gpu, node_gpus=node_gpus, gpus_per_pod=per, node_cpus=cpus, node_ram=ram)


def refit(sc: Scenario, rng: np.random.Generator) -> Scenario:
    """Make a tilted Job consistent again: a fabric exactly when it spans nodes, one clock factor per GPU,
    power cap and swap within the hardware's range."""
    fabric, ports = sc.fabric, sc.nic_ports
    if sc.pods == 1:
        fabric, ports = None, 0
    elif fabric is None:
        fabric = draw_fabric(rng, sc.gpu)
        ports = fabric.ports[_pick(rng, fabric.ports)]
    spread = sc.spread
    if len(spread) != sc.pods or any(len(s) != sc.gpus_per_pod for s in spread):
        draws = np.clip(rng.normal(1.0, 0.012, (sc.pods, sc.gpus_per_pod)), 0.95, 1.0)
        spread = tuple(tuple(float(x) for x in row) for row in draws)
    cap = min(sc.power_cap, sc.gpu.tdp_w) if sc.power_cap >= 0.5 * sc.gpu.tdp_w else sc.gpu.tdp_w
    nb = sc.neighbours
    nb = replace(nb, cpu=min(nb.cpu, 0.9 * sc.node_cpus), memory=min(nb.memory, 0.3 * sc.node_ram))
    decode = sc.gpu_decode and sc.model.kind in DECODED
    return replace(
        sc,
        fabric=fabric,
        nic_ports=max(ports, 1) if fabric else 0,
        spread=spread,
        power_cap=cap,
        neighbours=nb,
        gpu_decode=decode,
    )


__all__ = [
    "FABRICS",
    "Neighbours",
    "Scenario",
    "draw_fabric",
    "draw_model",
    "draw_scenario",
    "draw_storage",
    "refit",
    "with_gpu",
]
