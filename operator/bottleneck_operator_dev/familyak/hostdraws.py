"""Drawing the host side of one Job: storage, DataLoader workers, CPU limit, copies and memory.

Each part is solved from the demand ratios of :mod:`.draws` (a stage's time over the GPU's kernel
time), then clipped to what the drawn hardware can do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyak.hardware import GB, PCIE_GBS, STORAGE_GBS, STORAGE_LATENCY_S, Board, Storage
from bottleneck_operator_dev.familyak.spec import Host, Loader
from bottleneck_operator_dev.familyak.stages import PAGEABLE_EFFICIENCY, PINNED_EFFICIENCY
from bottleneck_operator_dev.familyak.workloads import WORKLOADS, Workload, loguniform, pick

M = Mechanism
_CLIENT_CPU_PER_GB = {
    Storage.NVME: (0.02, 0.1),
    Storage.SATA: (0.02, 0.1),
    Storage.NFS: (0.2, 0.6),
    Storage.OBJECT: (0.6, 2.0),
}


def _storage(rng: np.random.Generator, mechanism: Mechanism) -> Storage:
    if mechanism is M.LOCAL_DISK:
        return Storage(pick(rng, {"local-nvme": 0.5, "local-sata": 0.5}))
    if mechanism is M.NETWORK_STORAGE:
        return Storage(pick(rng, {"nfs": 0.5, "object-store": 0.5}))
    return Storage(pick(rng, {"local-nvme": 0.4, "nfs": 0.3, "object-store": 0.2, "local-sata": 0.1}))


def _cpu(
    rng: np.random.Generator, mechanism: Mechanism, need: float, gpus: int
) -> tuple[int, float | None, int, float]:
    """(workers per rank, pod CPU limit, node CPUs, cores neighbours use) for ``need`` cores per rank.

    ``need`` is the cores one rank's loader must have to take its drawn share of the step.
    """
    node_choices = (16, 24, 32, 48, 64, 96, 128)
    if mechanism is M.TOO_FEW_WORKERS:
        workers = 0 if need < 1.5 else int(max(1, math.floor(need * rng.uniform(0.4, 0.9))))
        node = next((n for n in node_choices if n >= gpus * (workers + 2) * 2), 128)
        return workers, None, node, rng.uniform(0.0, 2.0)
    if mechanism is M.THROTTLED:
        workers = int(np.clip(math.ceil(need * rng.uniform(1.5, 3.0)), 4, 16))
        limit = max(1.0 * gpus, gpus * need * (workers + 1) / workers)
        node = next((n for n in node_choices if n >= 2 * limit), 128)
        return workers, round(limit * 2) / 2, node, rng.uniform(0.0, 4.0)
    if mechanism is M.SATURATED:
        workers = int(np.clip(math.ceil(need * rng.uniform(1.3, 2.5)), 2, 16))
        free = gpus * need * (workers + 1) / workers
        node = int(rng.choice([n for n in node_choices if n >= free] or [128]))
        return workers, None, node, max(0.0, node - free)
    workers = int(np.clip(math.ceil(need * rng.uniform(1.3, 2.5)), 1, 16))
    spare = gpus * (workers + 1) * rng.uniform(1.05, 1.6)
    if rng.random() < 0.4:
        node = next((n for n in node_choices if n >= spare * 1.5), 128)
        return workers, round(spare * 2) / 2, node, rng.uniform(0.0, 0.3 * node)
    node = next((n for n in node_choices if n >= spare * 1.3), 128)
    return workers, None, node, rng.uniform(0.0, max(0.0, node - spare))


def _memory(rng: np.random.Generator, hot: str, r: dict[str, float], gpus: int, workers: int, t_gpu: float) -> Host:
    """The pod's memory: ample for most Jobs; swap-thrashing or growing to OOM kills for host-memory intents.

    The CPU fields are filled in by the caller.
    """
    anon_base = loguniform(rng, 4.0, 40.0) * GB * gpus / 2
    worker_rss = loguniform(rng, 0.2, 2.5) * GB
    anon = anon_base + gpus * workers * worker_rss
    node_mem = float(rng.choice([256.0, 512.0, 1024.0, 2048.0])) * GB
    limit: float | None = None if rng.random() < 0.35 else anon / rng.uniform(0.3, 0.8)
    swap, growth = bool(rng.random() < 0.2), 0.0
    if hot == "hostmem" and r.get("oom", 0.0) > 0:  # no swap: the workers grow into the limit
        limit, swap = anon / rng.uniform(0.6, 0.85), False
        growth = (limit - anon) / r["oom"]
    touch = rng.uniform(0.3, 0.7)
    if hot == "hostmem" and r.get("oom", 0.0) == 0:
        slow = 1.0 + rng.uniform(1.2, 2.5) / touch  # faulting the main process's pages back outlasts the step
        stall = float(np.clip(1.0 - 1.0 / slow, 0.05, 0.9))
        limit, swap = anon / (0.9 + 0.25 * stall), True
    return Host(0, None, 0.0, limit, node_mem, anon_base, worker_rss, growth, swap, touch * t_gpu, 0)


@dataclass(frozen=True)
class _Reads:
    storage: Storage
    gbs: float
    cache_hit: float
    sample: float
    latency: float
    per_request: float
    t_latency: float  # seconds per step the requests' latency may take, over all workers


def _reads(
    rng: np.random.Generator, hot: str, storage: Storage, wl: Workload, fit: tuple[float, float, int, int]
) -> _Reads:
    """Storage throughput, page-cache share and request concurrency that give reads their drawn share of the step.

    ``fit`` is (sample bytes, seconds of reading wanted per step, batch, GPUs).
    """
    sample, t_io, batch, gpus = fit
    wanted = gpus * batch * sample / t_io / GB
    if hot != "io" and wanted > STORAGE_GBS[storage][1]:
        storage = Storage.NVME  # a Job this hungry reads from local NVMe, and from the page cache
    lo, hi = STORAGE_GBS[storage]
    gbs = float(np.clip(wanted, lo, hi))
    cache_hit = 0.0
    if hot != "io" and wanted > hi:
        cache_hit = float(min(0.98, 1.0 - hi / wanted * rng.uniform(0.5, 0.9)))
    elif rng.random() < 0.3:
        cache_hit = rng.uniform(0.0, 0.3)
    sample *= float(np.clip(gbs / wanted, 0.25, 8.0 if hot == "io" else 1.0))
    latency = loguniform(rng, *STORAGE_LATENCY_S[storage])
    per_request = max(1.0, loguniform(rng, *wl.request_kb) * 1e3 / sample)
    # the latency part: object-store readers of an IO Job wait on it most of their time
    share = rng.uniform(0.6, 1.2) if hot == "io" and storage is Storage.OBJECT else rng.uniform(0.2, 0.7)
    return _Reads(storage, gbs, cache_hit, sample, latency, per_request, share * t_io)


def draw_host(
    rng: np.random.Generator,
    mechanism: Mechanism,
    hot: str,
    r: dict[str, float],
    sizes: tuple[str, int, int, float, Board],
) -> tuple[Loader, Host]:
    """The loader and host of a Job whose rank runs ``batch`` samples in ``t_gpu`` kernel seconds."""
    wl_name, batch, gpus, t_gpu, board = sizes
    wl = WORKLOADS[wl_name]
    storage = _storage(rng, mechanism)
    if hot == "hostmem" and rng.random() < 0.3:  # OOM route: a near-balanced loop loses its restarts
        r["oom"] = rng.uniform(60.0, 240.0)
        r[str(rng.choice(["io", "cpu", "launch"]))] = rng.uniform(0.88, 0.97)
    sample = loguniform(rng, *wl.sample_kb) * 1e3
    decode = loguniform(rng, *wl.decode_s)
    client = loguniform(rng, *_CLIENT_CPU_PER_GB[storage])
    need = batch * (decode + client * sample / GB) / (r["cpu"] * t_gpu)
    most = 12.0 if hot == "cpu" else 9.0  # lighter augmentation: no rank gets dozens of decoding cores
    if need > most:
        decode *= most / need
        need = most
    workers, cpu_limit, node_cpus, neighbour_cpus = _cpu(rng, mechanism, need, gpus)
    rd = _reads(rng, hot, storage, wl, (sample, r["io"] * t_gpu, batch, gpus))
    concurrency = float(np.clip(batch / rd.per_request * rd.latency / (max(workers, 1) * rd.t_latency), 1.0, 64.0))
    pinned = bool(rng.random() < (0.3 if hot == "h2d" else 0.7))
    link = PCIE_GBS[board.pcie_gen] * GB * (PINNED_EFFICIENCY if pinned else PAGEABLE_EFFICIENCY)
    h2d_hi = 8.0 if hot == "h2d" else 1.5
    h2d = float(np.clip(r["h2d"] * t_gpu * link / batch, wl.h2d_kb[0] * 250.0, wl.h2d_kb[1] * 1e3 * h2d_hi))
    mem = _memory(rng, hot, r, gpus, workers, t_gpu)
    neighbours = 0 if neighbour_cpus < 0.5 else int(rng.integers(1, 7))
    host = replace(mem, node_cpus=node_cpus, cpu_limit=cpu_limit, neighbour_cpus=neighbour_cpus, neighbours=neighbours)
    loader = Loader(
        batch=batch,
        sample_bytes=rd.sample,
        decode_s=decode,
        workers=workers,
        prefetch=int(rng.choice([2, 2, 2, 4])),
        storage=rd.storage,
        storage_gbs=rd.gbs,
        latency_s=rd.latency,
        per_request=rd.per_request,
        concurrency=concurrency,
        cache_hit=rd.cache_hit,
        client_cpu_per_gb=client,
        collate_s=rng.uniform(0.01, 0.06) * t_gpu * (3.0 if wl_name == "recsys" else 1.0),
        h2d_bytes=h2d,
        pinned=pinned,
        jitter=rng.uniform(0.3, 0.7) if rd.storage is Storage.OBJECT else rng.uniform(0.08, 0.4),
    )
    return loader, host
