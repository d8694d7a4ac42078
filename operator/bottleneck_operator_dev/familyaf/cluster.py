"""Drawing the cluster a Job runs on: GPUs, topology, fabric, storage, CPUs, memory, neighbours.

What is drawn here is what differs between real clusters; the intended class only makes sure the
resource it names exists (a multi-node Job for a network bound, a CPU limit for CFS throttling, swap
for host memory pressure), never how large it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyaf.hardware import (
    FABRICS,
    GPU_WEIGHTS,
    GPUS,
    PCIE_EFFICIENCY,
    STORAGES,
    Fabric,
    GpuSpec,
    Storage,
)

FloatArray = npt.NDArray[np.float64]
M = Mechanism


@dataclass(frozen=True)
class Cluster:
    """Where one Job runs and how it is set up (one pod per node).

    Attributes:
        gpu: the GPU model.
        pods: pods (= nodes) of the Job.
        gpus: GPUs per pod.
        fabric: the inter-node network, None for a one-node Job.
        nics: fabric ports per node.
        gdr: GPUDirect RDMA: the NIC reads GPU memory over PCIe (RDMA fabrics only).
        storage: where the data is read from; storage_bps what one node gets from it.
        node_cores: CPU cores per node.
        cpu_limit: the pod's CPU limit in cores, None without one.
        workers: data-loader worker processes per pod (0: loading in the training processes).
        neighbours: other pods on each node; neigh_cores the cores they use.
        ram_gib: node memory; swap "none", "zram" or "disk"; mem_limit_gib the pod's limit or None.
        pcie_bps: host-to-device bytes/s per GPU a copy reaches (generation, width, pinned or pageable).
        pcie_note: "" or what degrades it ("pageable", "x8", "gen3").
        power_cap_w: the enforced board power limit.
        clock: per-pod clock spread (1.0 = the model's boost clock).
        precision: "bf16", "tf32" or "fp32".
        data: what a sample is ("images", "tokens", "video", "audio", "tabular").
        overlap: share of gradient communication that overlaps the backward pass.
        prefetch: whether loading overlaps the GPU work (False: loading in the training process).
        h2d_async: pinned, non-blocking copies that overlap compute.
    """

    gpu: GpuSpec
    pods: int
    gpus: int
    fabric: Fabric | None
    nics: int
    gdr: bool
    storage: Storage
    storage_bps: float
    node_cores: int
    cpu_limit: float | None
    workers: int
    neighbours: int
    neigh_cores: float
    ram_gib: float
    swap: str
    mem_limit_gib: float | None
    pcie_bps: float
    pcie_note: str
    power_cap_w: float
    clock: FloatArray
    precision: str
    data: str
    overlap: float
    prefetch: bool
    h2d_async: bool


def _pick(rng: np.random.Generator, options: tuple[int, ...]) -> int:
    return int(options[int(rng.integers(len(options)))])


def _topology(rng: np.random.Generator, gpu: GpuSpec, intent: Bottleneck, mech: Mechanism) -> tuple[int, int]:
    """Pods and GPUs per pod: multi-node for a network bound, several GPUs for an intra-node one."""
    pods = _pick(rng, (1, 1, 1, 2, 2, 3, 4))
    if intent is Bottleneck.INTERCONNECT and mech is M.NETWORK:
        pods = max(pods, 2)
    full = gpu.gpus_per_node
    gpus = full if pods > 1 and rng.random() < 0.8 else _pick(rng, (1, 2, 4, full))
    if intent is Bottleneck.INTERCONNECT and mech is M.NVLINK:
        gpus = max(gpus, 4)
    return pods, min(gpus, full)


def _storage(rng: np.random.Generator, mech: Mechanism) -> Storage:
    if mech is M.LOCAL_DISK:
        pool = tuple(s for s in STORAGES if s.local)
    elif mech is M.NETWORK_STORAGE:
        pool = tuple(s for s in STORAGES if not s.local)
    else:
        pool = STORAGES
    return pool[int(rng.integers(len(pool)))]


def _fabric(rng: np.random.Generator, pods: int, mech: Mechanism) -> tuple[Fabric | None, int, bool]:
    if pods < 2:
        return None, 0, False
    fabric = FABRICS[int(rng.integers(len(FABRICS)))]
    nics = _pick(rng, fabric.nics)
    if mech is M.NETWORK and nics > 2 and rng.random() < 0.6:
        nics = _pick(rng, (1, 2))  # one rail shared by every GPU of the node
    return fabric, nics, fabric.rdma and rng.random() < 0.75


def _pcie(rng: np.random.Generator, gpu: GpuSpec, mech: Mechanism) -> tuple[float, str]:
    """Host-to-device bandwidth a copy reaches, and what (if anything) degrades it."""
    bps = gpu.pcie_bps * rng.uniform(*PCIE_EFFICIENCY)
    degraded = rng.random() < (0.8 if mech is M.PCIE else 0.08)
    if not degraded:
        return bps, ""
    note = ("pageable", "x8", "gen3")[int(rng.integers(3))]
    factor = {"pageable": rng.uniform(0.3, 0.55), "x8": 0.5, "gen3": 15.8 / 31.5 if gpu.pcie_bps < 40e9 else 0.25}
    return bps * factor[note], note


def _cpu(
    rng: np.random.Generator, gpu: GpuSpec, gpus: int, mech: Mechanism
) -> tuple[int, float | None, int, int, float]:
    """Node cores, the pod's CPU limit, loader workers, neighbour pods and the cores they use."""
    cores = _pick(rng, gpu.node_cores)
    share = cores * gpus / gpu.gpus_per_node
    workers = int(rng.integers(2, 13)) * gpus
    limit: float | None = None
    if mech is M.THROTTLED or rng.random() < 0.35:
        limit = float(max(2, round(share * rng.uniform(0.25, 0.9) if mech is M.THROTTLED else share)))
    if mech is M.TOO_FEW_WORKERS:
        workers = _pick(rng, (0, 1, 2, 2, 4)) * (1 if rng.random() < 0.5 else gpus)
    if mech is M.THROTTLED and limit is not None:
        workers = max(workers, int(limit * 1.5) + gpus)
    neighbours = _pick(rng, (0, 0, 1, 2, 3)) if gpus < gpu.gpus_per_node else _pick(rng, (0, 0, 0, 1))
    if mech is M.SATURATED:
        neighbours = max(neighbours, 1)
    free = cores - share
    neigh = 0.0 if neighbours == 0 else rng.uniform(0.05, 0.9) * max(free, cores * 0.3)
    if mech is M.SATURATED:
        neigh = cores * rng.uniform(0.55, 0.9)
        limit = None
        workers = max(workers, int(cores - neigh) + gpus)
    return cores, limit, workers, neighbours, neigh


def _memory(rng: np.random.Generator, gpu: GpuSpec, mech: Mechanism) -> tuple[float, str, float | None]:
    ram = float(_pick(rng, gpu.node_ram_gib))
    swap = ("none", "none", "none", "zram", "disk")[int(rng.integers(5))]
    if mech is M.HOST_MEMORY_PRESSURE and swap == "none":
        swap = "zram" if rng.random() < 0.5 else "disk"
    limit = float(ram * rng.uniform(0.2, 0.9)) if rng.random() < 0.5 else None
    return ram, swap, limit


def draw_cluster(rng: np.random.Generator, intent: Bottleneck, mech: Mechanism) -> Cluster:
    """One Job's cluster; the intended class only guarantees its resource exists."""
    gpu = GPUS[int(rng.choice(len(GPUS), p=GPU_WEIGHTS))]
    if mech is M.NVLINK and gpu.nvlink_bps == 0:
        gpu = GPUS[int(rng.integers(3))]
    pods, gpus = _topology(rng, gpu, intent, mech)
    fabric, nics, gdr = _fabric(rng, pods, mech)
    storage = _storage(rng, mech)
    cores, limit, workers, neighbours, neigh = _cpu(rng, gpu, gpus, mech)
    ram, swap, mem_limit = _memory(rng, gpu, mech)
    pcie, note = _pcie(rng, gpu, mech)
    capped = rng.random() < 0.3
    cap = gpu.tdp_w * (rng.uniform(0.6, 0.9) if capped else 1.0)
    data = ("images", "tokens", "video", "audio", "tabular")[int(rng.choice(5, p=(0.35, 0.3, 0.1, 0.1, 0.15)))]
    return Cluster(
        gpu=gpu,
        pods=pods,
        gpus=gpus,
        fabric=fabric,
        nics=nics,
        gdr=gdr,
        storage=storage,
        storage_bps=float(rng.uniform(*storage.bps)),
        node_cores=cores,
        cpu_limit=limit,
        workers=workers,
        neighbours=neighbours,
        neigh_cores=float(neigh),
        ram_gib=ram,
        swap=swap,
        mem_limit_gib=mem_limit,
        pcie_bps=pcie,
        pcie_note=note,
        power_cap_w=float(cap),
        clock=rng.uniform(0.93, 1.0, pods),
        precision=("bf16", "tf32", "fp32")[int(rng.choice(3, p=(0.75, 0.15, 0.10)))],
        data=data,
        overlap=float(rng.uniform(0.4, 0.95)),
        prefetch=workers > 0,
        h2d_async=note != "pageable" and rng.random() < 0.7,
    )
