"""Drawing one job: cluster, workload, phases, and the steering that makes a class bind.

A job is drawn for a target class and mechanism (so the family's classes come out balanced), but
its label is whatever the queueing model says: the draw only turns one physical knob of the target
resource (a slower store, heavier augmentation, a tighter memory limit, more bytes per step ...)
until the model names that resource. Hard jobs first turn a rival resource until it binds, then
the target only just past it, so the runner-up nearly binds too.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyv.hardware import GB, GPUS, NICS, NODE_CORES, STORAGES, Gpu, Nic, Storage
from bottleneck_operator_dev.familyv.model import (
    CLASS_OF,
    DECODE,
    H2D,
    SPEEDS,
    STORAGE_BW,
    STORAGE_LAT,
    SWAP,
    TRAINER,
    Resource,
    label,
    station_demands,
)
from bottleneck_operator_dev.familyv.plan import Plan, Pod
from bottleneck_operator_dev.familyv.workloads import WORKLOADS

FloatArray = npt.NDArray[np.float64]

TARGET_RESOURCE = {
    Mechanism.LOCAL_DISK: Resource.STORAGE,
    Mechanism.NETWORK_STORAGE: Resource.STORAGE,
    Mechanism.THROTTLED: Resource.CPU,
    Mechanism.SATURATED: Resource.CPU,
    Mechanism.TOO_FEW_WORKERS: Resource.CPU,
    Mechanism.HOST_MEMORY_PRESSURE: Resource.HOST_MEMORY,
    Mechanism.PCIE: Resource.PCIE,
    Mechanism.NVLINK: Resource.NVLINK,
    Mechanism.NETWORK: Resource.NETWORK,
    Mechanism.COMPUTE: Resource.COMPUTE,
    Mechanism.HBM_BANDWIDTH: Resource.HBM,
    Mechanism.LAUNCH_BOUND: Resource.LAUNCH,
}

# Resources that plausibly come close to each target in real jobs (the hard cases' runner-up).
RIVALS = {
    Resource.STORAGE: (Resource.CPU, Resource.COMPUTE, Resource.NETWORK, Resource.HOST_MEMORY),
    Resource.CPU: (Resource.STORAGE, Resource.COMPUTE, Resource.HBM),
    Resource.HOST_MEMORY: (Resource.STORAGE, Resource.CPU),
    Resource.PCIE: (Resource.COMPUTE, Resource.CPU, Resource.HBM),
    Resource.NVLINK: (Resource.COMPUTE, Resource.HBM),
    Resource.NETWORK: (Resource.COMPUTE, Resource.HBM, Resource.STORAGE),
    Resource.COMPUTE: (Resource.HBM, Resource.NETWORK, Resource.CPU, Resource.STORAGE),
    Resource.HBM: (Resource.COMPUTE, Resource.LAUNCH),
    Resource.LAUNCH: (Resource.CPU, Resource.COMPUTE),
}

NEIGHBOURS = ("none", "quiet", "cpu", "disk", "net", "mem")


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Log-uniform in [lo, hi]."""
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _proxy(plan: Plan, knobs: FloatArray) -> Resource:
    """The asymptotic (many batches in flight) answer: the station with the largest demand per server."""
    ranks = [plan.rank(i, 0, knobs=knobs) for i in range(plan.n_pods)]
    best = np.zeros(len(SPEEDS))
    for r in ranks:
        d = station_demands(r, SPEEDS)
        per_server = np.max(
            np.stack(
                [
                    d[:, STORAGE_BW] + d[:, STORAGE_LAT] / r.population,
                    d[:, DECODE] / r.decode_cap,
                    d[:, SWAP],
                    d[:, H2D],
                    d[:, TRAINER],
                ]
            ),
            axis=0,
        )
        best = np.maximum(best, per_server)
    return Resource(int(np.argmax(best[0] / best[1:])))


def _steer(plan: Plan, knobs: FloatArray, res: Resource, *, fine: bool) -> FloatArray:
    """Turn ``res``'s knob up until the model names it (first the cheap asymptote, then exact MVA).

    With ``fine``, the last step is bisected so that ``res`` binds only just.
    """
    k = knobs.copy()
    for _ in range(60):
        if _proxy(plan, k) is res:
            break
        k[res] *= 2.0
    lo, step = k[res] / 2.0, 1.5
    for _ in range(60):
        if label(plan.training_phases(k))[0] is res:
            break
        lo = k[res]
        k[res] *= step
        step = min(step * 1.2, 3.0)
    else:
        raise RuntimeError(f"could not make {res.name} bind for a {plan.target} job")
    if fine:
        hi = k[res]
        for _ in range(3):
            mid = math.sqrt(lo * hi)
            k[res] = mid
            if label(plan.training_phases(k))[0] is res:
                hi = mid
            else:
                lo = mid
        k[res] = hi
    return k


def _cluster(rng: np.random.Generator, target: Mechanism) -> dict[str, Any]:
    """GPU part, pods, GPUs per pod, fabric, storage and cores, as far as the mechanism needs them."""
    gpus_ok = [g for g in GPUS if g.nvlink > 0] if target is Mechanism.NVLINK else list(GPUS)
    gpu = gpus_ok[int(rng.integers(len(gpus_ok)))]
    n_pods = int(rng.choice([2, 2, 3, 4] if target is Mechanism.NETWORK else [1, 1, 1, 2, 2, 3, 4]))
    multi = [s for s in gpu.gpus_per_node if s > 1] or [1]
    gpus = int(rng.choice(multi if target is Mechanism.NVLINK or n_pods > 1 else list(gpu.gpus_per_node)))
    nics = [n for n in NICS if not (gpu.nvlink > 0 and n.gbits < 25)]  # NVLink boxes do not ship on 10 GbE
    if target is Mechanism.LOCAL_DISK:
        storages = [s for s in STORAGES if s.local]
    elif target is Mechanism.NETWORK_STORAGE:
        storages = [s for s in STORAGES if not s.local]
    else:
        storages = list(STORAGES)
    storage = storages[int(rng.integers(len(storages)))]
    # a shared store's per-client share; a local disk's io.max (blkio) throttle, where one is set
    share = float(rng.uniform(0.4, 1.0)) if not storage.local else 1.0
    if storage.local and rng.random() < 0.25:
        share = float(rng.uniform(0.05, 0.3))
    cores = int(rng.choice([c for c in NODE_CORES if c >= 8 * gpus] or [max(NODE_CORES)]))
    return {
        "gpu": gpu,
        "n_pods": n_pods,
        "gpus": gpus,
        "nic": nics[int(rng.integers(len(nics)))],
        "storage": storage,
        "storage_share": share,
        "cores": cores,
    }


def _workload(rng: np.random.Generator, gpu: Gpu) -> dict[str, Any]:
    """Model family, per-sample figures, batch, precision and the kernels' efficiencies."""
    wl = WORKLOADS[int(rng.integers(len(WORKLOADS)))]
    names = ("flops", "ai_mm", "ai_el", "read", "decode", "h2d", "kernels", "launch")
    per_sample = {n: _lu(rng, *getattr(wl, n)) for n in names}
    params = _lu(rng, *wl.params)
    precision = str(rng.choice(["amp", "amp", "bf16", "tf32"]))
    mfu, hbm_eff = float(rng.uniform(0.45, 0.8)), float(rng.uniform(0.7, 0.9))
    tflops = gpu.tflops16 if precision in ("amp", "bf16") else gpu.tflops32
    # training's matrix multiplies are compute-bound: keep them right of the roofline's ridge
    per_sample["ai_mm"] = max(per_sample["ai_mm"], 1.3 * tflops * 1e12 * mfu / (gpu.hbm * hbm_eff))
    return {
        "workload": wl,
        "per_sample": per_sample,
        "batch": max(1, round(_lu(rng, *wl.batch))),
        "precision": precision,
        "mfu": mfu,
        "hbm_eff": hbm_eff,
        "grad_bytes": params * (2.0 if precision == "bf16" else 4.0),
    }


def _host(rng: np.random.Generator, target: Mechanism, gpus: int, cores: int) -> dict[str, Any]:
    """Loader workers, CPU quota, node size and host memory, as the CPU and memory mechanisms need."""
    workers = int(rng.integers(1, 5)) if target is Mechanism.TOO_FEW_WORKERS else int(rng.integers(4, 17))
    pod_quota = math.inf
    if target is Mechanism.THROTTLED:
        pod_quota = gpus * (1.0 + min(workers, cores / gpus - 1) * float(rng.uniform(0.35, 0.85)))
    elif target is not Mechanism.SATURATED and rng.random() < 0.35:
        pod_quota = gpus * (1.0 + workers * float(rng.uniform(1.1, 2.0)))  # a generous limit
    if target is Mechanism.SATURATED:
        cores = int(rng.choice([c for c in NODE_CORES if 2 * gpus <= c <= 64] or [min(NODE_CORES)]))
        workers = max(workers, cores // gpus)
    mem_need = float(rng.uniform(16, 120)) * GB * max(1, gpus // 2)
    memory_target = target is Mechanism.HOST_MEMORY_PRESSURE
    if memory_target or rng.random() < 0.12:
        mem_limit = mem_need * float(rng.uniform(0.7, 0.97))
        swap_s = _lu(rng, 1e-3, 2e-2) * (1.0 if memory_target else 0.3)
    else:
        mem_limit = mem_need * float(rng.uniform(1.2, 2.5)) if rng.random() < 0.7 else math.inf
        swap_s = 0.0
    return {
        "workers": workers,
        "prefetch": int(rng.choice([2, 2, 2, 4])),
        "pod_quota": pod_quota,
        "cores": cores,
        "mem_need": mem_need,
        "mem_limit": mem_limit,
        "swap_s": swap_s,
    }


def _pods(rng: np.random.Generator, gpu: Gpu, n_pods: int, gpus: int, forced: str | None) -> list[Pod]:
    """Each pod's neighbour, and its boards' clocks under spread and power caps."""
    pods = []
    capped_cluster = rng.random() < 0.3
    for _ in range(n_pods):
        kind = forced or str(rng.choice(NEIGHBOURS, p=[0.4, 0.15, 0.12, 0.12, 0.11, 0.10]))
        level = float(rng.uniform(0.5, 0.9)) if forced else float(rng.uniform(0.2, 0.9))
        spread = rng.uniform(0.93, 1.0, size=gpus)  # boards differ (binning, cooling)
        limit = np.full(gpus, gpu.tdp)
        if capped_cluster:
            limit = np.round(gpu.tdp * rng.uniform(0.6, 0.9) * np.ones(gpus))
        demand = gpu.idle + (gpu.tdp - gpu.idle) * rng.uniform(0.75, 1.02, size=gpus)  # busy draw
        capped = demand > limit
        # dynamic power goes about as clock^2.5 at these voltages: the clock the cap leaves
        factor = np.where(capped, ((limit - gpu.idle) / (demand - gpu.idle)) ** 0.4, 1.0)
        clock = np.floor(gpu.max_clock * spread * factor / 15.0) * 15.0  # clocks come in 15 MHz bins
        busy = np.minimum(demand, limit)
        pods.append(Pod(kind, level, (True, True), clock / gpu.max_clock, limit, capped.astype(np.float64), busy))
    return pods


def _phases(
    rng: np.random.Generator, target: Mechanism, storage: Storage, pods: list[Pod], step: float
) -> dict[str, Any]:
    """The window's length, its one change (a neighbour arriving, a cache warming) and its pauses."""
    window = max(float(rng.uniform(20, 60)) * 60.0, 24 * step)
    change, change_at = "none", window
    hit = float(rng.uniform(0.0, 0.3)) if storage.kind != "object" else 0.0
    cache_hit = (hit, hit)
    u = rng.random()
    if u < 0.25 and any(p.neighbour not in ("none", "quiet") for p in pods):
        change, change_at = "neighbour-arrives", float(rng.uniform(0.25, 0.75)) * window
        pods = [replace(p, active=(False, True)) if p.neighbour != "none" else p for p in pods]
    elif u < 0.4 and storage.kind != "object" and target is not Mechanism.NETWORK_STORAGE:
        change, change_at = "cache-warms", float(rng.uniform(0.2, 0.5)) * window
        cache_hit = (hit, float(rng.uniform(0.5, 0.9)))
    pauses: list[tuple[float, float, str]] = []
    if rng.random() < 0.35:
        every, length = float(rng.uniform(300, 1200)), float(rng.uniform(10, 90))
        t = float(rng.uniform(0.2, 1.0)) * every
        while t + length < window:
            pauses.append((t, t + length, "checkpoint"))
            t += every
    if rng.random() < 0.2:
        t0 = float(rng.uniform(0.3, 0.8)) * window
        if not any(s <= t0 + 180 and t0 <= e for s, e, _ in pauses):
            pauses.append((t0, t0 + float(rng.uniform(30, 180)), "eval"))
    return {
        "window": window,
        "change": change,
        "change_at": change_at,
        "cache_hit": cache_hit,
        "pauses": tuple(sorted(pauses)),
        "pods": tuple(pods),
    }


def draw_plan(rng: np.random.Generator, target: Mechanism, step: float) -> Plan:
    """Draw one job for a target mechanism and steer it until the model's label is that resource."""
    # each part returns Plan fields by name; Plan's constructor checks that all are there
    fields: dict[str, Any] = {"target": target}
    fields |= _cluster(rng, target)
    gpu: Gpu = fields["gpu"]
    nic: Nic = fields["nic"]
    fields |= _workload(rng, gpu)
    fields |= _host(rng, target, fields["gpus"], fields["cores"])
    forced = "cpu" if target is Mechanism.SATURATED else None
    pods = _pods(rng, gpu, fields["n_pods"], fields["gpus"], forced)
    fields |= _phases(rng, target, fields["storage"], pods, step)
    fields |= {
        "pinned": bool(rng.random() < (0.3 if target is Mechanism.PCIE else 0.7)),
        "cuda_graphs": bool(rng.random() < 0.15) and target is not Mechanism.LAUNCH_BOUND,
        "overlap": float(rng.uniform(0.5, 0.95)),
        "exposed_floor": float(rng.uniform(0.05, 0.2)),
        "gdr": nic.rdma and rng.random() < 0.7,
        "knobs": np.ones(len(Resource)),
        "hard": bool(rng.random() < 0.4),
        "rival": None,
        "answer": None,
    }
    plan = Plan(**fields)
    return _steer_plan(rng, plan)


def _steer_plan(rng: np.random.Generator, plan: Plan) -> Plan:
    """The target binds, by a margin (easy) or only just past a rival that binds first (hard)."""
    res = TARGET_RESOURCE[plan.target]
    knobs = np.ones(len(Resource))
    rival = None
    if plan.hard:
        base = plan.rank(0, 0)
        usable = [r for r in RIVALS[res] if not (r is Resource.NETWORK and plan.n_pods == 1)]
        if r_ok := [r for r in usable if not (r is Resource.HOST_MEMORY and base.swap_s == 0.0)]:
            rival = r_ok[int(rng.integers(len(r_ok)))]
            knobs = _steer(plan, knobs, rival, fine=False)
            knobs[rival] *= float(rng.uniform(1.0, 1.3))
    knobs = _steer(plan, knobs, res, fine=rival is not None)
    answer = label(plan.training_phases(knobs))
    if rival is None:
        extra = knobs.copy()
        extra[res] *= float(rng.uniform(1.3, 3.0))
        if (bigger := label(plan.training_phases(extra)))[0] is res:
            knobs, answer = extra, bigger
    return replace(plan, knobs=knobs, rival=rival, hard=rival is not None, answer=answer)


def target_class(mechanism: Mechanism) -> Bottleneck:
    """The class a mechanism belongs to."""
    return CLASS_OF[TARGET_RESOURCE[mechanism]]
