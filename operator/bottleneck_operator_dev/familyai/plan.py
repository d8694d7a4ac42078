"""What one Job draws: the machines it runs on, the workload, and the cluster around it.

A :class:`Plan` holds physical quantities only (bytes, FLOP, seconds, cores); what limits the
step is measured from them afterwards (:mod:`.stepmodel`), never written into them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyai.hardware import (
    FABRIC_WEIGHTS,
    FABRICS,
    GB,
    GPU_WEIGHTS,
    GPUS,
    STORAGE_WEIGHTS,
    STORAGES,
    FabricSpec,
    GpuSpec,
    StorageSpec,
)
from bottleneck_operator_dev.familyai.workloads import WORKLOAD_WEIGHTS, WORKLOADS, Range, Workload


@dataclass
class Plan:
    """Everything drawn for one Job (mutable while it is drawn; read-only afterwards).

    Environment: ``gpu``, ``gpus_per_pod``, ``pods`` (one per node), ``ncpu`` and ``node_mem`` per
    node, ``storage`` and the bandwidth one client gets (``storage_bw``), the share of it that
    neighbours take on average (``storage_shared``), the inter-node ``fabric`` with the bandwidth a
    node's collectives get (``node_net_bw``), whether nodes carry RDMA adapters (``rdma_hw``),
    whether GPUDirect RDMA is used, the front-end NIC (``nic_bw``), the enforced ``power_limit``,
    node ``swap``, neighbouring pods per node and the CPU share they use.

    Workload (per GPU and step unless said otherwise): samples ``batch``, ``flop`` and ``mfu`` of
    the dense kernels, ``kernels`` launched with ``launch_cost`` host seconds each and running at
    least ``k_exec``, device-memory bytes of memory-bound kernels (``hbm_bytes``), bytes read per
    sample (``stored_bytes``) of which ``cache_hit`` come from the page cache, bytes copied to the
    device per sample (``decoded_bytes``) at ``h2d_eff`` of the link and overlapped by
    ``h2d_overlap``, CPU seconds per sample (``cpu_s``) spread over ``workers`` loader processes per
    pod under an optional ``cpu_limit``, gradient bytes and the collective's traffic factor,
    tensor/expert-parallel bytes (``tp_bytes``), the share of communication hidden under the
    backward pass (``overlap``), host memory, and major-fault stalls under memory pressure.
    """

    gpu: GpuSpec
    gpus_per_pod: int
    pods: int
    ncpu: int
    node_mem: float
    storage: StorageSpec
    storage_bw: float
    storage_shared: float
    fabric: FabricSpec | None
    node_net_bw: float
    rdma_hw: bool
    gpudirect: bool
    nic_bw: float
    power_limit: float
    swap: bool
    neighbours: tuple[int, ...]
    neigh_cpu: float
    workload: Workload
    batch: float
    flop: float
    mfu: float
    tf32: bool
    kernels: float
    k_exec: float
    launch_cost: float
    hbm_bytes: float
    stored_bytes: float
    cache_hit: float
    decoded_bytes: float
    h2d_eff: float
    h2d_overlap: float
    cpu_s: float
    workers: int
    cpu_limit: float | None
    par_eff: float
    grad_bytes: float
    comm_factor: float
    tp_bytes: float
    overlap: float
    host_ws: float
    mem_limit: float | None
    fault_per_step: float
    fault_latency: float
    fb_frac: float
    spin_sync: bool


def log_uniform(rng: np.random.Generator, r: Range) -> float:
    """A value between ``r[0]`` and ``r[1]``, uniform in its logarithm."""
    return float(np.exp(rng.uniform(np.log(r[0]), np.log(r[1]))))


def _pick(rng: np.random.Generator, weights: tuple[float, ...]) -> int:
    p = np.asarray(weights, dtype=float)
    return int(rng.choice(len(p), p=p / p.sum()))


def _environment(rng: np.random.Generator) -> dict[str, object]:
    gpu = GPUS[_pick(rng, GPU_WEIGHTS)]
    sizes = [s for s in (1, 2, 4, 8) if s <= gpu.per_node]
    gpus_per_pod = int(
        rng.choice(sizes, p=np.array([0.25, 0.2, 0.2, 0.35][: len(sizes)]) / sum([0.25, 0.2, 0.2, 0.35][: len(sizes)]))
    )
    pods = 1 if rng.random() < 0.58 else int(rng.choice([2, 3, 4]))
    big = gpu.per_node == 8 and gpu.tdp_w >= 300
    ncpu = int(rng.choice([64, 96, 112, 128, 192, 224] if big else [16, 24, 32, 48, 64]))
    storage = STORAGES[_pick(rng, STORAGE_WEIGHTS)]
    rdma_hw = (big and rng.random() < 0.75) or (pods > 1 and rng.random() < 0.6)
    fabric: FabricSpec | None = None
    node_net_bw = 0.0
    nic_bw = float(rng.choice([25.0, 50.0, 100.0, 200.0])) * 1e9 / 8
    if pods > 1:
        choices = [i for i, f in enumerate(FABRICS) if f.rdma == rdma_hw]
        w = tuple(FABRIC_WEIGHTS[i] for i in choices)
        fabric = FABRICS[choices[_pick(rng, w)]]
        rails = int(rng.choice([1, 2, 4, 8] if fabric.rdma and big else [1, 2]))
        port = float(rng.choice(fabric.port_gbit))
        node_net_bw = rails * port * 1e9 / 8 * rng.uniform(*fabric.efficiency)
        if not fabric.rdma:
            nic_bw = max(nic_bw, port * 1e9 / 8)
    neighbours = tuple(int(rng.poisson(2.0 if gpus_per_pod < gpu.per_node else 0.6)) for _ in range(pods))
    return {
        "gpu": gpu,
        "gpus_per_pod": gpus_per_pod,
        "pods": pods,
        "ncpu": ncpu,
        "node_mem": float(rng.choice([1024, 1536, 2048] if big else [192, 256, 384, 512])) * GB,
        "storage": storage,
        "storage_bw": log_uniform(rng, (storage.low, storage.high)),
        "storage_shared": float(rng.uniform(0.0, 0.45 if max(neighbours) or not storage.local else 0.05)),
        "fabric": fabric,
        "node_net_bw": node_net_bw,
        "rdma_hw": bool(rdma_hw),
        "gpudirect": bool(fabric is not None and fabric.rdma and rng.random() < 0.85),
        "nic_bw": nic_bw,
        "power_limit": gpu.tdp_w * (1.0 if rng.random() < 0.7 else float(rng.uniform(0.6, 0.92))),
        "swap": bool(rng.random() < 0.15),
        "neighbours": neighbours,
        "neigh_cpu": float(rng.uniform(0.0, 0.4)) if max(neighbours) else float(rng.uniform(0.0, 0.03)),
    }


def _workload(rng: np.random.Generator, env: dict[str, object]) -> dict[str, object]:
    wl = WORKLOADS[_pick(rng, WORKLOAD_WEIGHTS)]
    g = int(env["gpus_per_pod"])  # type: ignore[call-overload]
    batch = round(log_uniform(rng, wl.batch))
    flop_sample = log_uniform(rng, wl.flop_sample)
    params = log_uniform(rng, wl.params)
    sharded = wl.kind in ("llm", "diffusion") and rng.random() < 0.6
    workers = int(rng.choice([2, 4, 6, 8, 10, 12, 16])) * g
    ncpu = int(env["ncpu"])  # type: ignore[call-overload]
    workers = max(1, min(workers, ncpu - g - 1))
    eager = rng.random() < 0.7
    host_ws = g * log_uniform(rng, wl.host_bytes) + workers * rng.uniform(0.3e9, 2.5e9)
    pinned = rng.random() < 0.8
    tensor_parallel = wl.kind == "llm" and g >= 2 and rng.random() < 0.35
    return {
        "workload": wl,
        "batch": float(batch),
        "flop": batch * flop_sample,
        "mfu": float(rng.uniform(0.35, 0.72)),
        "tf32": bool(rng.random() < 0.15),
        "kernels": log_uniform(rng, wl.kernels),
        "k_exec": float(rng.uniform(2e-6, 6e-6)),
        "launch_cost": float(rng.uniform(6e-6, 2.5e-5) if eager else rng.uniform(1e-6, 4e-6)),
        "hbm_bytes": batch * flop_sample * log_uniform(rng, wl.bytes_per_flop),
        "stored_bytes": log_uniform(rng, wl.stored_bytes),
        "cache_hit": float(rng.uniform(0.2, 0.98)),
        "decoded_bytes": log_uniform(rng, wl.decoded_bytes),
        "h2d_eff": float(rng.uniform(0.7, 0.9) if pinned else rng.uniform(0.25, 0.5)),
        "h2d_overlap": float(rng.uniform(0.5, 0.95) if pinned else rng.uniform(0.0, 0.3)),
        "cpu_s": log_uniform(rng, wl.cpu_s),
        "workers": workers,
        "cpu_limit": None if rng.random() < 0.5 else (workers + g) * float(rng.uniform(1.0, 1.6)),
        "par_eff": float(rng.uniform(0.75, 0.95)),
        "grad_bytes": params * (2.0 if rng.random() < 0.4 else 4.0) / (g if tensor_parallel else 1),
        "comm_factor": 1.5 if sharded else 1.0,
        "tp_bytes": batch * log_uniform(rng, (1e5, 2e6)) * (flop_sample / 1e12) if tensor_parallel else 0.0,
        "overlap": float(rng.uniform(0.05, 0.4) if tensor_parallel else rng.uniform(0.3, 0.9)),
        "host_ws": host_ws,
        "mem_limit": None if rng.random() < 0.4 else host_ws * float(rng.uniform(1.3, 3.0)),
        "fault_per_step": 0.0,
        "fault_latency": float(rng.uniform(2e-5, 6e-5) if env["swap"] else rng.uniform(1e-4, 8e-4)),
        "fb_frac": float(rng.uniform(0.55, 0.98)),
        "spin_sync": bool(rng.random() < 0.7),
    }


def draw_plan(rng: np.random.Generator) -> Plan:
    """The machines, cluster and workload of one Job, before any aim is applied."""
    env = _environment(rng)
    return Plan(**env, **_workload(rng, env))  # type: ignore[arg-type]
