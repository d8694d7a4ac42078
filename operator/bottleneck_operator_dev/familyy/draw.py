"""Drawing a Job and its cluster, leaning towards a class.

:func:`draw_setup` squeezes the target mechanism's resource (``squeeze`` <= 1 deepens it) and, for a
share of Jobs, lightly a rival's from another class; the program, not the lean, decides the label,
and :mod:`.generate` squeezes harder or redraws until they agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck

from .hardware import FABRICS, FRONT_END_NIC_BPS, GB, GPUS, KB, STORAGES, Fabric, Gpu, Storage
from .program import Demand
from .workload import MODELS, Model, Setup

T = TypeVar("T")

# Which models can meet a lean at all: a 1.3B-parameter LLM reads 8 KB of tokens per 16 TFLOPs, so
# neither its storage nor its loader's cores ever bind.
_INPUT_HEAVY = ("resnet50", "vit-b16", "slowfast", "wav2vec2", "sd-unet", "unet3d", "dlrm")
_LARGE = ("vit-b16", "bert-large", "gpt-1.3b", "wav2vec2", "sd-unet", "resnet50")
_MODELS_FOR = {
    "launch-bound": ("resnet50", "bert-large", "dlrm", "vit-b16"),
    "hbm-bandwidth": ("dlrm", "resnet50", "unet3d", "slowfast"),
    "pcie": ("resnet50", "slowfast", "vit-b16"),
    "nvlink": _LARGE,
    "network": _LARGE,
}


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Log-uniform: for figures that span decades."""
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    return items[int(rng.integers(len(items)))]


@dataclass
class _Draft:
    """A Job being drawn: every figure of a :class:`Setup`, still open to the lean."""

    target: Bottleneck
    mechanism: str
    model: Model
    gpu: Gpu
    batch: int
    gpn: int = 1
    nodes: int = 1
    fabric: Fabric | None = None
    nic_bps: float = 0.0
    precision: str = "amp"
    mfu: float = 0.5
    power_capped: bool = False
    power_limit: float = 0.0
    clock_factor: float = 1.0
    storage: Storage = STORAGES[0]
    storage_bps: float = 0.0
    storage_iops: float = 0.0
    node_cpus: int = 64
    workers: int = 8
    cpu_quota: float | None = None
    node_mem: float = 512 * GB
    mem_limit: float | None = None
    resident: float = 0.0
    zram: bool = False
    swap_total: float = 0.0
    swap_bps: float = 1 * GB
    shared: bool = False
    nb: dict[str, float] = field(default_factory=dict)
    dec: float = 0.0
    intensity: float = 100.0
    launch_cost: float = 1e-5
    ar_intra: float = 0.0
    h2d: float = 0.0
    hit: float = 0.0
    touch_scale: float = 1.0
    tags: list[str] = field(default_factory=list)


def _hardware(rng: np.random.Generator, target: Bottleneck, mechanism: str) -> _Draft:
    names = _MODELS_FOR.get(mechanism)
    if target in (Bottleneck.CPU, Bottleneck.IO) or mechanism == "host-memory-pressure":
        names = _INPUT_HEAVY
    model = _pick(rng, [m for m in MODELS if names is None or m.name in names])
    gpus = GPUS
    if mechanism in ("launch-bound", "nvlink"):
        gpus = tuple(g for g in GPUS if g.nvlink_bps > 0)
    if mechanism == "pcie":
        gpus = tuple(g for g in GPUS if g.tensor_tflops >= 300)
    if mechanism == "hbm-bandwidth":
        gpus = tuple(g for g in GPUS if g.tensor_tflops * 1e12 / g.hbm_bps > 150)
    gpu = _pick(rng, gpus)
    batch = min(model.batch) if mechanism == "launch-bound" else _pick(rng, model.batch)
    d = _Draft(target, mechanism, model, gpu, batch)
    # Node shape: SXM boards come 4 or 8 to a node; PCIe boards 1 to 8.
    d.gpn = _pick(rng, (4, 8, 8)) if gpu.nvlink_bps > 0 else _pick(rng, (1, 1, 2, 4, 8))
    d.nodes = _pick(rng, (2, 2, 4)) if mechanism == "network" else _pick(rng, (1, 1, 1, 2, 2, 4))
    if mechanism == "nvlink":
        d.nodes, d.gpn = 1, 8
    if d.nodes > 1:
        d.fabric = _pick(rng, FABRICS)
        d.tags.append(f"fabric:{d.fabric.name}")
    d.nic_bps = _pick(rng, FRONT_END_NIC_BPS)
    if d.fabric is not None and not d.fabric.rdma:
        d.nic_bps = d.fabric.bps  # socket collectives share the one Ethernet NIC with storage
    d.precision = _pick(rng, ("amp", "amp", "amp", "tf32", "fp32"))
    if gpu.model_name.startswith(("Tesla V100", "Tesla T4")) and d.precision == "tf32":
        d.precision = "fp32"  # no TF32 before Ampere
    d.mfu = _u(rng, 0.4, 0.72) if d.precision != "fp32" else _u(rng, 0.6, 0.85)
    # Power: the enforced limit is sometimes below TDP (power-capped fleets); the clock follows.
    d.power_capped = bool(rng.random() < 0.25)
    d.power_limit = gpu.tdp_w * (_u(rng, 0.6, 0.9) if d.power_capped else 1.0)
    d.clock_factor = (d.power_limit / gpu.tdp_w) ** 0.4 if d.power_capped else _u(rng, 0.97, 1.0)
    if d.power_capped:
        d.tags.append("power-capped")
    return d


def _host(rng: np.random.Generator, d: _Draft) -> None:
    d.storage = _pick(rng, STORAGES)
    if d.target is Bottleneck.IO:
        remote = d.mechanism == "network-storage"
        d.storage = _pick(rng, [s for s in STORAGES if s.remote == remote])
    d.storage_bps = d.storage.bps * _u(rng, 0.5, 1.0)
    d.storage_iops = d.storage.iops * _u(rng, 0.5, 1.0)
    if not d.storage.remote and rng.random() < 0.2:
        d.storage_bps *= _u(rng, 0.1, 0.4)  # io.max throttling: the device is fast, the cgroup's share is not
        d.tags.append("blkio-throttled")
    d.node_cpus = max(int(_pick(rng, (32, 48, 64, 96, 128, 192, 224, 256))), 96 if d.gpn >= 8 else 0)
    d.workers = int(_pick(rng, (2, 4, 6, 8, 10, 12, 16)))
    if rng.random() < 0.6:
        d.cpu_quota = float(min(d.node_cpus, d.gpn * _pick(rng, (4, 6, 8, 12, 16, 24))))
    d.node_mem = _pick(rng, (256, 512, 1024, 2048)) * GB
    if rng.random() < 0.75:
        d.mem_limit = min(d.node_mem * 0.9, d.gpn * _pick(rng, (24, 32, 64, 96, 128)) * GB)
    d.resident = _limit(d) * _u(rng, 0.3, 0.85)
    d.zram = bool(rng.random() < 0.5)
    d.swap_total = _pick(rng, (0.0, 0.0, 16 * GB, 64 * GB))
    d.swap_bps = _u(rng, 1.0, 3.0) * GB if d.zram else _u(rng, 0.3, 2.0) * GB
    # Neighbour: a co-located Job on shared nodes, sometimes arriving during the window.
    d.shared = bool(rng.random() < 0.45)
    d.nb = dict.fromkeys(("cores", "disk", "net", "rdma", "mem"), 0.0) | {"from": math.inf}
    if d.shared:
        d.nb["cores"] = d.node_cpus * _u(rng, 0.1, 0.7)
        d.nb["disk"] = d.storage.bps * _u(rng, 0.0, 0.6)
        d.nb["net"] = d.nic_bps * _u(rng, 0.0, 0.6)
        d.nb["rdma"] = d.fabric.bps * _u(rng, 0.0, 0.4) if d.fabric is not None and d.fabric.rdma else 0.0
        d.nb["mem"] = d.node_mem * _u(rng, 0.1, 0.5)
        d.nb["from"] = 0.0 if rng.random() < 0.5 else _u(rng, 300.0, 2400.0)
        d.tags.append("shared-node")


def _limit(d: _Draft) -> float:
    return d.mem_limit if d.mem_limit is not None else d.node_mem * 0.9


def _lean(rng: np.random.Generator, d: _Draft, lean: str, s: float) -> None:
    """Squeeze the resource of one mechanism; ``s`` <= 1 squeezes harder, > 1 lightly (a rival)."""
    if lean in ("local-disk", "network-storage"):
        d.storage_bps *= s * _u(rng, 0.05, 0.6)
        d.storage_iops *= _u(rng, 0.3, 1.0) if rng.random() < 0.5 else s * _u(rng, 0.02, 0.2)
        d.hit = _u(rng, 0.0, 0.15)
    elif lean == "throttled":
        d.cpu_quota = float(max(1.0, d.gpn * _u(rng, 1.5, 6.0) * s))
        d.workers = max(d.workers, 8)
        d.dec /= s  # heavier augmentation, on-the-fly tokenisation
    elif lean == "saturated":
        d.cpu_quota = None
        d.node_cpus = int(max(8, d.node_cpus * s * _u(rng, 0.15, 0.5)))
        d.workers = max(d.workers, 12)
        d.dec /= s
        if d.shared:
            d.nb["cores"] = d.node_cpus * _u(rng, 0.2, 0.6)
    elif lean == "too-few-workers":
        d.workers = int(max(1, round(_pick(rng, (1, 2, 3, 4)) * s)))
        d.dec *= 2.0 / s
    elif lean == "pcie":
        # decoded or float tensors far larger than what is stored, from a cached dataset
        d.h2d = d.model.h2d * _u(rng, 1.0, 4.0) / s
        d.workers = max(d.workers, 16)
        d.dec *= s
        d.hit = _u(rng, 0.85, 0.98)
    elif lean == "network" and d.fabric is not None:
        if d.fabric.rdma:
            d.nb["rdma"] = d.fabric.bps * (_u(rng, 0.3, 0.8) if d.shared else 1 - s * _u(rng, 0.2, 0.9))
        else:
            d.nic_bps *= s * _u(rng, 0.2, 1.0)
    elif lean == "nvlink":
        d.ar_intra *= _u(rng, 2.0, 6.0) / s  # tensor-parallel activations exchanged over NVLink
    elif lean == "hbm-bandwidth":
        d.intensity = min(d.intensity, _lu(rng, 3.0, 30.0)) * s
    elif lean == "host-memory-pressure":
        d.resident = _limit(d) * _u(rng, 1.05, 1.5) / s
        d.swap_total = max(d.swap_total, 32 * GB)
        d.swap_bps *= s**0.5
        d.touch_scale = 1.0 / s
    elif lean == "launch-bound":
        d.launch_cost = _u(rng, 10e-6, 25e-6) / s
    elif lean == "compute":
        d.mfu *= _u(rng, 0.6, 1.0) * min(s, 1.0)


def _demand(rng: np.random.Generator, d: _Draft) -> Demand:
    m, gpn, nodes = d.model, d.gpn, d.nodes
    grad_bytes = m.params * (2 if d.precision == "amp" and rng.random() < 0.6 else 4)
    n_gpus = gpn * nodes
    buckets = max(1.0, math.ceil(grad_bytes / 25e6))  # DDP's 25 MB gradient buckets
    ring = bool(rng.random() < 0.6)
    hops = 2.0 * (n_gpus - 1) if ring else 2.0 * math.ceil(math.log2(max(n_gpus, 2)))
    read_bytes = m.read_bytes * _u(rng, 0.8, 1.25)
    rdma = d.fabric is not None and d.fabric.rdma
    return Demand(
        dec_cpu=d.dec + d.h2d / _u(rng, 3 * GB, 8 * GB),  # workers collate the batch: a memcpy of it
        read_cpu=read_bytes * d.storage.cpu_per_byte,
        collate=_u(rng, 50e-6, 500e-6) / d.batch + 0.2e-6,
        launch=m.ops * d.launch_cost / d.batch,
        flops=m.flops,
        hbm_bytes=m.flops / d.intensity,
        gpu_dec_flops=_u(rng, 0.5e9, 2e9) * (read_bytes / (110 * KB)),
        gpu_dec_max=1.0 if m.gpu_decode and rng.random() < 0.25 else 0.0,
        h2d=d.h2d,
        h2d_gpu=read_bytes,
        read_bytes=read_bytes,
        read_reqs=1.0 if rng.random() < 0.6 else _u(rng, 0.02, 0.2),  # per-file reads, or shards
        hit=d.hit,
        remote=d.storage.remote,
        ar_intra=d.ar_intra * grad_bytes / d.batch,
        intra_link=("nvlink" if d.gpu.nvlink_bps > 0 else "pcie") if gpn > 1 else "",
        ar_net=2.0 * (nodes - 1) / nodes * grad_bytes / gpn / d.batch if nodes > 1 else 0.0,
        net_link=("rdma" if rdma else "nic") if nodes > 1 else "",
        gpudirect=bool(rdma and rng.random() < 0.7),
        overlap=_u(rng, 0.3, 0.9),
        msgs=buckets * hops / d.batch if n_gpus > 1 else 0.0,
        resident=d.resident,
        touch=(read_bytes + d.h2d) * _u(rng, 2.0, 6.0) * d.touch_scale,
        touch_thread=d.h2d * _u(rng, 0.5, 2.0),
        fault_s=_u(rng, 15e-6, 40e-6) if d.zram else _u(rng, 80e-6, 300e-6),
        reclaim_cpu=_u(rng, 2e-9, 5e-9) if d.zram else _u(rng, 0.3e-9, 1e-9),
    )


def draw_setup(rng: np.random.Generator, target: Bottleneck, mechanism: str, squeeze: float) -> Setup:
    """Draw a Job that leans towards ``target`` through ``mechanism``; ``squeeze`` (<= 1) deepens the lean."""
    d = _hardware(rng, target, mechanism)
    _host(rng, d)
    m = d.model
    d.dec = _lu(rng, *m.dec_cpu)
    d.intensity = _lu(rng, *m.intensity)
    d.launch_cost = _u(rng, 5e-6, 15e-6) * (0.1 if rng.random() < 0.15 and mechanism != "launch-bound" else 1.0)
    # ring all-reduce inside the node moves 2 (n-1)/n of the gradients; _demand scales by their size
    d.ar_intra = 2.0 * (d.gpn - 1) / d.gpn if d.gpn > 1 else 0.0
    d.hit = _u(rng, 0.0, 0.3)
    d.h2d = m.h2d * (4.0 if rng.random() < 0.15 else 1.0)  # float32 tensors from the loader
    leans = [(mechanism, squeeze)]
    if rng.random() < 0.4:  # a rival from another class, leaned on lightly: the hard cases
        rival = _pick(rng, [x.value for c in CLASSES if c is not target for x in MECHANISMS[c]])
        leans.insert(0, (rival, _u(rng, 1.0, 1.6)))
        d.tags.append(f"rival:{rival}")
    for lean, s in leans:
        _lean(rng, d, lean, s)
    if d.swap_total == 0.0:
        d.swap_bps = 0.2 * GB  # no swap device: the shortfall thrashes file pages back from the disk
    demand = _demand(rng, d)
    if demand.gpu_dec_max > 0:
        d.tags.append("gpu-decode")
    return _setup(rng, d, demand)


def _setup(rng: np.random.Generator, d: _Draft, demand: Demand) -> Setup:
    dataset_fits = bool(rng.random() < 0.2)
    d.tags += [f"model:{d.model.name}", f"gpu:{d.gpu.model_name}", f"storage:{d.storage.name}"]
    d.tags += [f"precision:{d.precision}"] + (["cpu-limit"] if d.cpu_quota is not None else [])
    return Setup(
        target=d.target,
        model=d.model,
        batch=d.batch,
        precision=d.precision,
        gpu=d.gpu,
        gpus_per_node=d.gpn,
        nodes=d.nodes,
        storage=d.storage,
        storage_bps=d.storage_bps,
        storage_iops=d.storage_iops,
        fabric=d.fabric,
        nic_bps=d.nic_bps,
        node_cpus=d.node_cpus,
        cpu_quota=d.cpu_quota,
        workers=d.workers,
        launch_speed=_u(rng, 0.7, 1.3),
        thread_speed=_u(rng, 0.7, 1.3),
        mfu=d.mfu,
        clock_factor=d.clock_factor,
        power_limit_w=d.power_limit,
        power_capped=d.power_capped,
        mem_limit=d.mem_limit,
        node_mem=d.node_mem,
        resident=d.resident,
        swap_total=d.swap_total,
        swap_bps=d.swap_bps,
        zram=d.zram,
        demand=demand,
        neighbour_cores=d.nb["cores"],
        neighbour_disk_bps=d.nb["disk"],
        neighbour_net_bps=d.nb["net"],
        neighbour_rdma_bps=d.nb["rdma"],
        neighbour_mem=d.nb["mem"],
        neighbour_from=d.nb["from"],
        dataset_fits=dataset_fits,
        warm_at=_u(rng, 600.0, 2400.0) if dataset_fits and rng.random() < 0.5 else math.inf,
        mmap_reader=bool(rng.random() < 0.2) and not d.storage.remote,
        tags=tuple(d.tags),
    )
