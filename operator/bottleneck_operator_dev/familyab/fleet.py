"""Draw a Job's configuration from fleet-like distributions.

The shapes follow what published fleet studies report: most Jobs use one GPU and a few use many
(Philly, Helios, PAI), legacy V100/P100/T4 next to newer parts (PAI's 2020 trace), TCP Ethernet on
PS/worker Jobs (PAI 2019), shared nodes with several co-located workers (PAI's machine metrics),
CPU requests of 4-12 cores a GPU (Helios and PAI examples). The weights themselves are this
family's assumptions, set down in docs/familyab.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, TypeVar

import numpy as np

from bottleneck_operator_dev.familyab.config import Config
from bottleneck_operator_dev.familyab.hardware import (
    GPUS,
    NODE_TYPES,
    RDMA_EFFICIENCY,
    STORAGE_RANGES,
    TCP_EFFICIENCY,
    Gpu,
    Nic,
    NodeType,
    Storage,
    storage,
)
from bottleneck_operator_dev.familyab.models import KINDS, Model, models_of

Rng = np.random.Generator
K = TypeVar("K")

KIND_WEIGHTS = {"cv": 0.32, "nlp": 0.28, "rec": 0.14, "speech": 0.08, "gnn": 0.06, "small": 0.12}
GPU_WEIGHTS = {
    "v100": 0.20,
    "a100": 0.26,
    "h100": 0.10,
    "h100pcie": 0.04,
    "a10": 0.08,
    "l4": 0.05,
    "t4": 0.15,
    "p100": 0.12,
}
GPU_COUNT_WEIGHTS = {1: 0.50, 2: 0.10, 4: 0.14, 8: 0.14, 16: 0.07, 32: 0.05}
STORAGE_WEIGHTS = {"nvme": 0.30, "sata": 0.05, "nfs": 0.30, "lustre": 0.12, "object": 0.23}
FORMAT_WEIGHTS = {
    "cv": {"files": 0.55, "shards": 0.45},
    "speech": {"files": 0.6, "shards": 0.4},
    "nlp": {"memmap": 0.6, "shards": 0.4},
    "rec": {"parquet": 0.8, "shards": 0.2},
    "gnn": {"memmap": 0.7, "files": 0.3},
    "small": {"memmap": 0.5, "parquet": 0.5},
}
WORKER_WEIGHTS = {1: 0.05, 2: 0.15, 4: 0.30, 6: 0.15, 8: 0.20, 12: 0.10, 16: 0.05}
SXM = ("v100", "a100", "h100")


def pick(rng: Rng, table: Mapping[K, float]) -> K:
    """One key of ``table``, drawn with the table's weights."""
    keys = list(table)
    p = np.asarray([table[k] for k in keys], dtype=np.float64)
    return keys[int(rng.choice(len(keys), p=p / p.sum()))]


def pick_str(rng: Rng, table: Mapping[str, float]) -> str:
    return pick(rng, table)


def pick_int(rng: Rng, table: Mapping[int, float]) -> int:
    return pick(rng, table)


def loguniform(rng: Rng, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def pow2_between(rng: Rng, lo: int, hi: int) -> int:
    """A power of two in [lo, hi] (batch sizes are powers of two in practice)."""
    exps = np.arange(int(np.log2(lo)), int(np.log2(hi)) + 1)
    return int(2 ** int(rng.choice(exps)))


def fits(model: Model, gpu: Gpu) -> bool:
    """Whether weights, gradients and Adam state (16 bytes a parameter) fit in 80 % of the GPU."""
    return model.params * 16.0 < 0.8 * gpu.memory_gib * 2**30


def draw_gpu(rng: Rng, model: Model) -> Gpu:
    """A GPU that can hold the model (resampled until it fits; the largest parts always do)."""
    for _ in range(20):
        gpu = GPUS[pick_str(rng, GPU_WEIGHTS)]
        if fits(model, gpu):
            return gpu
    return GPUS["a100"]


def draw_placement(rng: Rng, kind: str, node: NodeType) -> tuple[int, int, int]:
    """(gpus_per_pod, pods, pods_per_node) for a GPU count drawn from the fleet's job sizes."""
    weights = dict(GPU_COUNT_WEIGHTS)
    if kind in ("gnn", "small"):  # small models rarely scale out
        weights = {1: 0.8, 2: 0.12, 4: 0.08}
    n = min(pick_int(rng, weights), node.gpus * 4)
    if n <= node.gpus:
        if n > 1 and rng.random() < 0.3:  # one pod per GPU, packed on one node
            return 1, n, n
        return n, 1, 1
    return node.gpus, n // node.gpus, 1


def draw_nic(rng: Rng, gpu: Gpu) -> tuple[Nic, float, bool]:
    """The node network, the share of line rate a collective gets on it, and GPUDirect RDMA."""
    speeds: dict[str, tuple[float, ...]]
    if gpu.key in SXM:
        table = {"ib": 0.5, "roce": 0.2, "eth": 0.3}
        speeds = {"ib": (100.0,) if gpu.key == "v100" else (200.0, 400.0), "roce": (100.0, 200.0), "eth": (25.0, 100.0)}
        ports = (4, 8) if gpu.key != "v100" else (1, 2, 4)
    else:
        table = {"eth": 0.85, "roce": 0.15}
        speeds = {"eth": (25.0, 25.0, 100.0), "roce": (100.0,)}
        ports = (1, 2)
    kind = pick_str(rng, table)
    rdma = kind != "eth"
    nic = Nic(kind, float(rng.choice(speeds[kind])), int(rng.choice(ports)), rdma)
    eff = rng.uniform(*(RDMA_EFFICIENCY if rdma else TCP_EFFICIENCY))
    return nic, float(eff), bool(rdma and gpu.key in SXM and rng.random() < 0.8)


def draw_storage(rng: Rng, kind: str | None = None) -> Storage:
    """A storage of ``kind`` (drawn from the fleet's mix when None) with a capability in its range."""
    kind = kind or pick_str(rng, STORAGE_WEIGHTS)
    (lo, hi), (llo, lhi) = STORAGE_RANGES[kind]
    return storage(kind, rng.uniform(lo, hi), loguniform(rng, llo, lhi))


def draw_cached(rng: Rng, model: Model, node: NodeType, store: Storage) -> float:
    """Share of reads the page cache serves: all of a warm dataset that fits, a little of one that does not."""
    if store.kind == "object":  # HTTP readers bypass the kernel's page cache
        return 0.0
    dataset = loguniform(rng, *model.dataset_gb)
    cache = node.mem_gib * rng.uniform(0.3, 0.7)
    if dataset <= cache:
        return float(rng.uniform(0.9, 0.99)) if rng.random() < 0.8 else 0.0
    return 0.6 * cache / dataset


def draw_format(rng: Rng, kind: str, store: Storage) -> str:
    """The data format; memory-mapped arrays need a file system, so object stores get shards."""
    fmt = pick_str(rng, FORMAT_WEIGHTS[kind])
    return "shards" if fmt == "memmap" and store.kind == "object" else fmt


def draw_limits(rng: Rng, gpus_per_pod: int) -> tuple[float | None, float | None]:
    """The pod's CPU and memory limits, or None where the pod sets none."""
    cpu = None if rng.random() < 0.45 else float(rng.choice([2, 4, 6, 8, 12, 16]) * gpus_per_pod)
    mem = None if rng.random() < 0.35 else float(rng.choice([16, 24, 32, 48, 64, 96, 128]) * gpus_per_pod)
    return cpu, mem


def draw_arch(rng: Rng, kind: str) -> str:
    if kind == "rec":
        return pick_str(rng, {"a2a": 0.5, "ps": 0.35, "host": 0.15})
    if kind in ("cv", "nlp") and rng.random() < 0.08:  # TensorFlow PS/worker Jobs
        return "ps"
    return "ddp"


def draw_neighbours(rng: Rng, node: NodeType, gpus_per_node: int, nic: Nic) -> dict[str, float]:
    """Pods of other Jobs on each node and what they use there.

    A Job that leaves GPUs free on its nodes shares them (PAI's machines averaged about five
    co-located workers); a Job that fills its nodes still has a few CPU-only neighbours.
    """
    free = node.gpus - gpus_per_node
    count = int(rng.integers(1, free + 3)) if free > 0 else int(rng.integers(0, 3))
    heavy = free > 0
    per_pod_cpu = node.cpus / node.gpus * (rng.uniform(0.3, 1.5) if heavy else rng.uniform(0.05, 0.4))
    return {
        "count": float(count),
        "cpu": min(count * per_pod_cpu, node.cpus * 0.9),
        "disk": count * loguniform(rng, 1e6, 4e8) if rng.random() < 0.5 else 0.0,
        "net": count * loguniform(rng, 1e6, 1e9),
        # Neighbours that train across nodes too move RDMA bytes, up to a few GB/s each.
        "rdma": count * loguniform(rng, 1e7, min(0.3 * nic.node_bytes_per_s, 5e9))
        if nic.rdma and heavy and rng.random() < 0.4
        else 0.0,
        "mem": count * rng.uniform(4.0, 48.0),
    }


def draw_precision(rng: Rng, gpu: Gpu) -> str:
    choice = pick_str(rng, {"amp": 0.55, "tf32": 0.25, "fp32": 0.20})
    if choice == "tf32" and gpu.tf32_tflops <= 0:
        return "amp" if gpu.tensor_cores else "fp32"
    return choice


def draw_memory(rng: Rng, model: Model, arch: str, gpus_per_pod: int) -> tuple[float, float, float]:
    """GiB of the training processes, of each loader worker, and of host-resident data (per pod)."""
    base = gpus_per_pod * rng.uniform(3.0, 8.0)
    worker = rng.uniform(0.3, 3.0)  # copy-on-write growth of each worker's dataset index
    host = model.host_gb * rng.uniform(0.5, 2.0) / 1.074
    if arch == "host":  # embedding tables kept in host memory
        host += rng.uniform(50.0, 400.0)
    return float(base), float(worker), float(host)


def draw_cpu_ms(rng: Rng, model: Model) -> float:
    """Core-ms per sample; a quarter of language Jobs tokenise raw text on the fly (0.5-3 us a token)."""
    ms = loguniform(rng, *model.cpu_ms)
    if model.kind == "nlp" and rng.random() < 0.25:
        tokens = model.sample_kb * 1024 / 4
        ms += tokens * rng.uniform(0.5, 3.0) / 1000.0
    return ms


class PracticeDraw(TypedDict):
    """The :class:`Config` fields :func:`draw_practice` draws."""

    hbm_scale: float
    grad_bytes: float
    storage_share: float
    streams: int
    workers: int
    pinned: bool
    launch_us: float
    power_cap: float
    clock_sigma: float
    swap: bool
    ckpt_every_s: float
    ckpt_storage: Storage
    eval_every_s: float
    eval_s: float
    overlap_comm: float
    overlap_h2d: float
    coupling: float


def draw_practice(rng: Rng, arch: str, store: Storage) -> PracticeDraw:
    """Software and operations choices: precision aside, what the Job's authors and operators did."""
    has_eval = rng.random() < 0.4
    overlap = {"ddp": (0.5, 0.9), "ps": (0.05, 0.3)}.get(arch, (0.0, 0.2))
    return {
        "hbm_scale": float(rng.uniform(0.5, 1.0)),  # fused kernels, flash attention
        "grad_bytes": 4.0 if rng.random() < 0.7 else 2.0,
        "storage_share": float(rng.uniform(0.2, 1.0)) if store.kind in ("nfs", "lustre") else 1.0,
        "streams": int(rng.integers(1, 9)) if store.kind == "object" else int(rng.integers(1, 3)),
        "workers": pick_int(rng, WORKER_WEIGHTS),
        "pinned": bool(rng.random() < 0.8),
        "launch_us": 1.0 if rng.random() < 0.1 else loguniform(rng, 5.0, 20.0),  # CUDA graphs, else eager
        "power_cap": float(rng.uniform(0.6, 0.9)) if rng.random() < 0.15 else 1.0,
        "clock_sigma": float(rng.uniform(0.005, 0.03)),
        "swap": bool(rng.random() < 0.1),
        "ckpt_every_s": float(rng.uniform(600.0, 3600.0)),
        "ckpt_storage": store if not store.local or rng.random() < 0.5 else draw_storage(rng, "nfs"),
        "eval_every_s": float(rng.uniform(900.0, 3600.0)) if has_eval else 0.0,
        "eval_s": float(rng.uniform(30.0, 300.0)) if has_eval else 0.0,
        "overlap_comm": float(rng.uniform(*overlap)),
        "overlap_h2d": float(rng.uniform(0.6, 0.95)),
        "coupling": float(rng.uniform(0.0, 0.3)),
    }


def draw_config(rng: Rng, kind: str | None = None) -> Config:
    """A Job as the fleet would submit it (``kind`` fixed when given)."""
    kind = kind or pick_str(rng, KIND_WEIGHTS)
    assert kind in KINDS
    choices = models_of(kind)
    model = choices[int(rng.integers(len(choices)))]
    gpu = draw_gpu(rng, model)
    node = NODE_TYPES[gpu.key][int(rng.integers(len(NODE_TYPES[gpu.key])))]
    gpus_per_pod, pods, pods_per_node = draw_placement(rng, kind, node)
    nic, net_eff, gdr = draw_nic(rng, gpu)
    arch = draw_arch(rng, kind)
    store = draw_storage(rng)
    cpu_limit, mem_limit = draw_limits(rng, gpus_per_pod)
    nb = draw_neighbours(rng, node, gpus_per_pod * min(pods, pods_per_node), nic)
    base_gib, worker_gib, host_gib = draw_memory(rng, model, arch, gpus_per_pod)
    return Config(
        model=model,
        batch=pow2_between(rng, *model.batch),
        cpu_ms=draw_cpu_ms(rng, model),
        gpu=gpu,
        node=node,
        gpus_per_pod=gpus_per_pod,
        pods=pods,
        pods_per_node=pods_per_node,
        nic=nic,
        net_eff=net_eff,
        gdr=gdr,
        arch=arch,
        storage=store,
        fmt=draw_format(rng, kind, store),
        cached=draw_cached(rng, model, node, store),
        cpu_limit=cpu_limit,
        mem_limit_gib=mem_limit,
        precision=draw_precision(rng, gpu),
        dali=bool(kind == "cv" and rng.random() < 0.15),
        neighbours=int(nb["count"]),
        nb_cpu=nb["cpu"],
        nb_disk_bps=nb["disk"],
        nb_net_bps=nb["net"],
        nb_rdma_bps=nb["rdma"],
        nb_mem_gib=nb["mem"],
        base_gib=base_gib,
        worker_gib=worker_gib,
        host_gib=host_gib,
        **draw_practice(rng, arch, store),
    )
