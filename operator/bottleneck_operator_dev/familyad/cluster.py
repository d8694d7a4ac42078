"""Where a Job runs: GPUs, pods and nodes, fabric, storage, loader, limits, neighbours, exporters.

Like workload.py, a draw leans some choices towards the mechanism its block wants; the label is
still read from the resulting service demands (label.py), never from the lean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Mechanism as M

from .hardware import (
    FABRICS,
    GPUS,
    OP_ISSUE_S,
    PAGEABLE_EFFICIENCY,
    PINNED_EFFICIENCY,
    RDMA_EFFICIENCY,
    STORAGES,
    TCP_EFFICIENCY,
    Gpu,
    Storage,
)
from .workload import Workload

FloatArray = npt.NDArray[np.float64]

# What each field set exports (dcgm-exporter's shipped counters files, or a custom one).
FIELD_SETS = ("dev", "default", "full")


@dataclass(frozen=True)
class Setup:
    """A Job's placement, limits and telemetry.

    Attributes:
        gpu: the GPU model; gpus: GPUs per pod; pods: pods (one per node).
        clocks: per-GPU clock factor (silicon spread), shape (pods, gpus).
        power_cap_w: the enforced power limit (the TDP when none is set).
        fabric: fabric key (hardware.FABRICS); rdma: whether it bypasses the kernel's stack.
        nics: fabric ports per node; fabric_eff: share of line rate a ring reaches.
        pinned: host buffers are pinned; h2d_eff: share of the PCIe link a host-to-device copy reaches.
        storage: where samples live; storage_gbps: what this Job's client gets (object store: per
            connection); storage_latency_s: time to first byte; conns: object-store connections per worker.
        cache_hit: share of sample reads the node's page cache serves.
        workers: loader workers per rank; prefetch: batches each worker keeps ahead.
        cpu_limit: pod CPU limit in cores (None: none); node_cpus: CPUs of each node.
        mem_limit_gb: pod memory limit (None: none); node_mem_gb: memory of each node; swap: the node's
            swap ("none", "zram", "nvme"); locality: how skewed the pod's reuse of its memory is
            (1: uniform; higher: a hot set that stays resident, so fewer faults per byte over the limit).
        neighbours: other pods on each node, shape (pods,); nb_cpu: cores they use at peak;
            nb_io: share of the storage path they take at peak; nb_net: share of the NIC;
            nb_mem_gb: host memory they hold.
        op_s: host seconds to issue one operator.
        scrape_s: Prometheus scrape interval; dcgm_collect_s: dcgm-exporter's collect interval.
        field_set: "dev", "default" or "full"; power_fields: POWER_MGMT_LIMIT and clock reasons exported.
        families: exporters present ("cadvisor", "ksm", "node", "node_psi", "sidecar", "sidecar_net").
        miss: probability of a missed scrape; reset: (exporter, share of the window) of a counter reset.
        samples: length of the window in steps.
    """

    gpu: Gpu
    gpus: int
    pods: int
    clocks: FloatArray
    power_cap_w: float
    fabric: str
    rdma: bool
    nics: int
    fabric_eff: float
    pinned: bool
    h2d_eff: float
    storage: Storage
    storage_gbps: float
    storage_latency_s: float
    conns: int
    cache_hit: float
    workers: int
    prefetch: int
    cpu_limit: float | None
    node_cpus: int
    mem_limit_gb: float | None
    node_mem_gb: float
    swap: str
    locality: float
    neighbours: npt.NDArray[np.int64]
    nb_cpu: float
    nb_io: float
    nb_net: float
    nb_mem_gb: float
    op_s: float
    scrape_s: float
    dcgm_collect_s: float
    field_set: str
    power_fields: bool
    families: frozenset[str]
    miss: float
    reset: tuple[str, float] | None
    samples: int


def _pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    return str(options[int(rng.integers(0, len(options)))])


def _gpu_and_shape(rng: np.random.Generator, want: M, lean: bool, wl: Workload) -> tuple[Gpu, int, int]:
    """GPU model, GPUs per pod, pods."""
    gpus = {
        M.PCIE: ("l4", "a10", "t4", "h100pcie"),
        M.NVLINK: ("h100", "h100", "a100", "v100"),
        M.HBM_BANDWIDTH: ("h100", "l4", "a100", "h100pcie"),
        M.COMPUTE: ("v100", "a100", "a10", "t4"),
        M.LAUNCH_BOUND: ("h100", "a100"),
    }.get(want, tuple(GPUS)) if lean else tuple(GPUS)  # fmt: skip
    gpu = GPUS[_pick(rng, gpus)]
    g = int(rng.choice([1, 2, 4, 8], p=[0.25, 0.2, 0.25, 0.3]))
    if wl.tp > 1 or (lean and want in (M.NVLINK, M.PCIE) and wl.kind != "med3d"):
        g = max(g, wl.tp, 4 if want is M.PCIE else 8)
    pods = int(rng.choice([1, 2, 3, 4, 8], p=[0.4, 0.25, 0.1, 0.15, 0.1]))
    if lean and want is M.NETWORK:
        pods = max(pods, int(rng.choice([2, 4, 8])))
        g = max(g, 4)
    if lean and want is M.NVLINK:
        pods = 1 if rng.random() < 0.6 else pods
    return gpu, g, pods


def _fabric(rng: np.random.Generator, want: M, lean: bool) -> tuple[str, int, float]:
    keys = ("tcp-25g", "tcp-50g", "tcp-100g") if lean and want is M.NETWORK else tuple(FABRICS)
    if lean and want in (M.COMPUTE, M.HBM_BANDWIDTH, M.LAUNCH_BOUND, M.NVLINK):
        keys = ("ib-hdr", "ib-ndr", "roce-200g")
    fabric = _pick(rng, keys)
    rdma = FABRICS[fabric][1]
    nics = int(rng.choice([4, 8])) if rdma and rng.random() < 0.6 else int(rng.choice([1, 2]))
    return fabric, nics, float(rng.uniform(*(RDMA_EFFICIENCY if rdma else TCP_EFFICIENCY)))


def _storage(rng: np.random.Generator, want: M, lean: bool) -> tuple[Storage, float, float, int, float]:
    """Storage, its bandwidth for this client, latency, connections per worker, page-cache hits."""
    keys: tuple[str, ...] = tuple(STORAGES)
    if lean and want is M.LOCAL_DISK:
        keys = ("sata-ssd", "nvme-gen3", "sata-ssd")
    elif lean and want is M.NETWORK_STORAGE:
        keys = ("nfs", "efs", "s3")
    elif lean and want not in (M.LOCAL_DISK, M.NETWORK_STORAGE):
        keys = ("nvme-gen4", "nvme-gen3", "lustre", "s3")
    st = STORAGES[_pick(rng, keys)]
    lo, hi = st.gbps
    if lean and want is M.NETWORK_STORAGE and st.kind == "nfs":
        hi = min(hi, 0.6)
    gbps = float(rng.uniform(lo, hi))
    latency = float(rng.uniform(*st.latency_s))
    conns = int(rng.choice([1, 2]) if lean and want is M.NETWORK_STORAGE else rng.choice([1, 2, 4, 8]))
    io_want = lean and want in (M.LOCAL_DISK, M.NETWORK_STORAGE)
    hit = 0.0 if st.kind == "object" else float(rng.uniform(0.0, 0.3) if io_want else rng.beta(2, 2))
    return st, gbps, latency, conns, hit


def _cpu(rng: np.random.Generator, want: M, lean: bool, g: int) -> tuple[int, float | None, int, float]:
    """Loader workers per rank, pod CPU limit, node CPUs, neighbours' peak CPU cores."""
    node_cpus = int(rng.choice([32, 48, 64, 96, 128, 192, 256]))
    workers = int(rng.choice([2, 4, 6, 8, 10, 12, 16]))
    limit: float | None = float(rng.choice([g * 4, g * 8, g * 12, g * 16])) if rng.random() < 0.5 else None
    nb_cpu = float(rng.uniform(0.0, 0.4)) * node_cpus
    if lean and want is M.THROTTLED:
        workers = int(rng.choice([6, 8, 12, 16]))
        limit = float(max(1.0, round(g * workers * rng.uniform(0.2, 0.6))))
    elif lean and want is M.SATURATED:
        node_cpus = int(rng.choice([16, 24, 32, 48]))
        workers, limit = int(rng.choice([8, 12, 16])), None
        nb_cpu = float(rng.uniform(0.4, 0.85)) * node_cpus
    elif lean and want is M.TOO_FEW_WORKERS:
        workers, limit = int(rng.choice([1, 2, 3])), None if rng.random() < 0.5 else float(g * 16)
    elif lean:
        workers, limit = int(rng.choice([8, 12, 16])), None if rng.random() < 0.6 else float(g * 24)
        nb_cpu = float(rng.uniform(0.0, 0.15)) * node_cpus
    node_cpus = max(node_cpus, int(g * 8))
    return workers, limit, node_cpus, nb_cpu


def _memory(
    rng: np.random.Generator, want: M, lean: bool, wl: Workload, g: int, workers: int, prefetch: int
) -> tuple[float | None, float, str, float]:
    """Pod memory limit, node memory, swap, neighbours' memory (GB)."""
    batch_gb = wl.batch * (wl.sample_bytes + 2 * wl.h2d_bytes) / 1e9
    ws = g * wl.rank_gb + g * workers * (wl.worker_gb + prefetch * batch_gb) + wl.cache_gb
    node_mem = float(rng.choice([256, 512, 1024, 2048]))
    node_mem = max(node_mem, 1.3 * ws)
    swap = str(rng.choice(["none", "none", "zram", "nvme"]))
    limit: float | None = ws * float(rng.uniform(1.2, 3.0)) if rng.random() < 0.6 else None
    nb_mem = float(rng.uniform(0.0, 0.4)) * node_mem
    if lean and want is M.HOST_MEMORY_PRESSURE:
        swap = str(rng.choice(["zram", "nvme", "none"]))
        if rng.random() < 0.75:
            limit = ws / float(rng.uniform(1.01, 1.35))
        else:  # the node itself is overcommitted: neighbours hold what the limit would have left
            limit, nb_mem = None, node_mem - 4.0 - ws / float(rng.uniform(1.01, 1.3))
    return limit, node_mem, swap, nb_mem


def _telemetry(rng: np.random.Generator, gpu: Gpu) -> tuple[float, float, str, bool, frozenset[str]]:
    scrape = float(rng.choice([5, 10, 15, 15, 30, 30, 30, 60]))
    collect = 30.0 if rng.random() < 0.5 else float(min(scrape, 30.0))
    field_set = str(rng.choice(FIELD_SETS, p=[0.3, 0.4, 0.3])) if gpu.prof else "dev"
    power_fields = field_set == "full" or rng.random() < 0.4
    fams = {"cadvisor": 0.95, "ksm": 0.9, "node": 0.92, "node_psi": 0.85, "sidecar": 0.6, "sidecar_net": 0.5}
    present = {f for f, p in fams.items() if rng.random() < p}
    present -= {"node_psi"} if "node" not in present else set()
    present -= {"sidecar_net"} if "sidecar" not in present else set()
    return scrape, collect, field_set, power_fields, frozenset(present)


def draw_setup(rng: np.random.Generator, want: M, lean: bool, wl: Workload, step: float) -> Setup:
    """Where and how one workload runs, and what its exporters see."""
    gpu, g, pods = _gpu_and_shape(rng, want, lean, wl)
    fabric, nics, fabric_eff = _fabric(rng, want, lean)
    storage, gbps, latency, conns, hit = _storage(rng, want, lean)
    workers, cpu_limit, node_cpus, nb_cpu = _cpu(rng, want, lean, g)
    prefetch = int(rng.choice([2, 2, 4, 8]))
    mem_limit, node_mem, swap, nb_mem = _memory(rng, want, lean, wl, g, workers, prefetch)
    pinned = not (lean and want is M.PCIE and rng.random() < 0.7) and rng.random() < 0.8
    spread = float(rng.uniform(0.005, 0.04))
    capped = rng.random() < 0.3
    scrape, collect, field_set, power_fields, families = _telemetry(rng, gpu)
    generous = lean and want in (M.COMPUTE, M.HBM_BANDWIDTH, M.LAUNCH_BOUND)
    nb_io = float(rng.uniform(0.3, 0.7) if lean and want is M.LOCAL_DISK else rng.uniform(0.0, 0.3))
    op_hi = OP_ISSUE_S[1] * (1.4 if lean and want is M.LAUNCH_BOUND else 1.0)
    span = max(20.0, 22.0 * max(scrape, collect) / step) * float(rng.uniform(1.0, 2.5))
    reset = (_pick(rng, ["node", "cadvisor", "sidecar", "dcgm"]), float(rng.uniform(0.2, 0.8)))
    return Setup(
        gpu=gpu, gpus=g, pods=pods,
        clocks=np.clip(1.0 - np.abs(rng.normal(0.0, spread, size=(pods, g))), 0.85, 1.0),
        power_cap_w=gpu.tdp_w * (float(rng.uniform(0.6, 0.95)) if capped else 1.0),
        fabric=fabric, rdma=FABRICS[fabric][1], nics=nics, fabric_eff=fabric_eff,
        pinned=pinned, h2d_eff=float(rng.uniform(*(PINNED_EFFICIENCY if pinned else PAGEABLE_EFFICIENCY))),
        storage=storage, storage_gbps=gbps, storage_latency_s=latency, conns=conns, cache_hit=hit,
        workers=workers, prefetch=prefetch, cpu_limit=cpu_limit, node_cpus=node_cpus,
        mem_limit_gb=mem_limit, node_mem_gb=node_mem, swap=swap, locality=float(rng.uniform(1.0, 4.0)),
        neighbours=rng.integers(0, 2 if generous else 6, size=pods),
        nb_cpu=nb_cpu, nb_io=0.0 if generous else nb_io, nb_net=float(rng.uniform(0.0, 0.3)), nb_mem_gb=nb_mem,
        op_s=float(rng.uniform(OP_ISSUE_S[0], op_hi)),
        scrape_s=scrape, dcgm_collect_s=collect, field_set=field_set, power_fields=power_fields,
        families=families, miss=float(rng.uniform(0.0, 0.04)),
        reset=reset if rng.random() < 0.15 else None, samples=int(np.ceil(span)),
    )  # fmt: skip
