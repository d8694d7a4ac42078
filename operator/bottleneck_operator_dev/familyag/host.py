"""The host side of a step: storage reads, loader CPU, the page cache, reclaim and swap, the H2D copy.

Costs are per batch of one rank (one training process and its loader workers); a pod runs
``gpus_per_pod`` ranks that share its CPU quota, memory limit and the node's storage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator_dev.familyag.scenario import Scenario

PAGE = 4096.0
SHARD_REQUEST = 1e6  # bytes per read request when samples sit in large shards (assumed)
ROW_GATHER_S = 0.4e-6  # host seconds per random embedding-row gather on one core (~ a few DRAM misses, assumed)
GATHER_THREADS = 8  # intra-op threads doing host gathers (assumed)
FAULT_S = {"zram": 10e-6, "disk": 80e-6, "none": 0.0}  # one major fault's stall (assumed)


@dataclass(frozen=True)
class HostCosts:
    """One rank's input pipeline and main thread, per batch (a batch is one step).

    Attributes:
        workers, prefetch: loader worker processes and batches each keeps in flight.
        read_s: a worker's synchronous read time for one batch (request latencies + streaming).
        server_s: time the rank's share of the storage is busy with one batch.
        decode_s: a worker's wall time decoding one batch at its CPU share.
        decode_cpu: CPU seconds of that decode.
        fault_s: a worker's stalls on major faults per batch.
        host_s: main-thread seconds per step before the batch can be copied (host gathers, their faults).
        host_cpu: CPU seconds the host gathers burn per step.
        copy_s: the H2D copy of one batch.
        copy_cpu: main-thread seconds blocked in a pageable copy.
        main_speed, worker_speed: CPU share a runnable main thread / worker gets (1: a full core).
        miss_bytes, requests: bytes and requests per batch that reach the storage.
        faults_worker, faults_main: major faults per batch (worker) and per step (main thread).
        avail_cores, wanted_cores: cores the pod may use and wants while its loader is saturated.
        anon, usable, swapped: the pod's anonymous memory, what it may hold, and what sits in swap.
        cache_hit: share of sample bytes served from the page cache.
        h2d_bytes: bytes copied host to device per batch.
    """

    workers: int
    prefetch: int
    read_s: float
    server_s: float
    decode_s: float
    decode_cpu: float
    fault_s: float
    host_s: float
    host_cpu: float
    copy_s: float
    copy_cpu: float
    main_speed: float
    worker_speed: float
    miss_bytes: float
    requests: float
    faults_worker: float
    faults_main: float
    avail_cores: float
    wanted_cores: float
    anon: float
    usable: float
    swapped: float
    cache_hit: float
    h2d_bytes: float


def anon_bytes(sc: Scenario) -> float:
    """The pod's anonymous memory: trainers, loader workers, pinned batches and host-resident tables."""
    pinned = sc.prefetch * sc.workers * sc.batch * sc.model.h2d if sc.pinned else 0.0
    per_rank = sc.main_rss + sc.workers * sc.worker_rss + pinned
    return sc.gpus_per_pod * per_rank + sc.model.tables


def usable_bytes(sc: Scenario) -> float:
    """Memory the pod can hold: its limit, or what the node leaves after the system and the neighbours."""
    node = sc.node_ram * 0.96 - sc.neighbours.memory
    return min(sc.mem_limit, node) if sc.mem_limit is not None else node


def settle_memory(sc: Scenario) -> Scenario:
    """A Job the kernel would OOM-kill at once is not a running Job: make its memory fit RAM plus swap.

    Without swap the anonymous memory must fit; with swap, what does not fit must fit the swap.
    """
    anon, usable = anon_bytes(sc), usable_bytes(sc)
    room = usable * 0.97 + (0.9 * sc.swap_bytes if sc.swap != "none" else 0.0)
    if anon <= room:
        return sc
    node = sc.node_ram * 0.96 - sc.neighbours.memory
    if anon <= node * 0.9:
        return replace(sc, mem_limit=None if sc.mem_limit is None else min(node, anon * 1.15))
    shrink = max(0.1, (node * 0.9 - sc.model.tables) / max(anon - sc.model.tables, 1.0))
    return replace(sc, mem_limit=None, worker_rss=sc.worker_rss * shrink, main_rss=sc.main_rss * shrink)


def _cpu_shares(sc: Scenario, decode_cpu: float, read_s: float, fault_s: float, gather: float) -> tuple[float, ...]:
    """Worker and main-thread CPU shares when the loader runs flat out (processor sharing, fixed point).

    Returns:
        (worker_speed, main_speed, avail_cores, wanted_cores) for the pod.
    """
    ranks = sc.gpus_per_pod
    system = 0.5 + 0.02 * sc.node_cpus
    free = max(1.0, sc.node_cpus - sc.neighbours.cpu - system)
    avail = min(sc.cpu_limit, free) if sc.cpu_limit is not None else free
    main_need = ranks * (1.2 + gather)
    speed, wanted = 1.0, 0.0
    for _ in range(8):
        cycle = read_s + decode_cpu / speed + fault_s
        decoding = sc.workers * (decode_cpu / speed) / cycle if cycle > 0 else 0.0
        wanted = ranks * decoding + main_need
        speed = min(1.0, avail / wanted) if wanted > 0 else 1.0
    main_speed = min(1.0, avail / max(wanted, 1e-9) * 1.1)
    return speed, main_speed, avail, wanted


def _decode_share(sc: Scenario) -> float:
    """Share of the per-sample CPU cost left on the host when decoding moves to the GPU (assumed)."""
    if not sc.gpu_decode:
        return 1.0
    return 0.35 if sc.model.kind == "speech" else 0.15


def _reads(sc: Scenario, hit: float, ample: frozenset[str]) -> tuple[float, float, float, float]:
    """(read_s, server_s, miss_bytes, requests) of one batch."""
    m = sc.model
    miss = sc.batch * m.sample_bytes * (1.0 - hit)
    requests = sc.batch * (1.0 - hit) if sc.files else miss / SHARD_REQUEST
    if "storage" in ample:
        return 0.0, 0.0, miss, requests
    node = sc.storage_bps - (sc.neighbours.disk_bps if sc.storage.block else 0.0)
    share = max(node, 0.2 * sc.storage_bps) / sc.gpus_per_pod
    read = requests * sc.storage_latency + miss / sc.stream_bps
    return read, miss / share, miss, requests


def _faults(sc: Scenario, excess: float, anon: float) -> tuple[float, float]:
    """Major faults per batch in a worker and per step in the main thread, under ``excess`` swapped bytes."""
    m = sc.model
    if excess <= 0.0:
        return 0.0, 0.0
    table_miss = min(1.0, excess / m.tables) if m.tables else 0.0
    heap_excess = max(0.0, excess - m.tables) if m.tables else excess
    heap_miss = min(1.0, heap_excess / max(anon - m.tables, 1.0))
    rows = sc.batch * m.gather / 512.0
    main = rows * table_miss + (64e6 / PAGE) * heap_miss
    worker = (0.3 * sc.worker_rss / PAGE) * heap_miss
    return worker, main


def host_costs(sc: Scenario, ample: frozenset[str] = frozenset()) -> HostCosts:
    """One rank's host-side costs with the ``ample`` stages free (see :data:`~.stages.STAGES`)."""
    m = sc.model
    anon, usable = anon_bytes(sc), usable_bytes(sc)
    excess = max(0.0, anon - usable * 0.97) if sc.swap != "none" else 0.0
    hit = min(1.0, max(0.0, usable - anon) / m.dataset) if sc.cache_warm else 0.0
    read_s, server_s, miss, requests = _reads(sc, hit, ample)
    faults_worker, faults_main = _faults(sc, excess, anon)
    fault_cost = 0.0 if "host-memory" in ample else FAULT_S[sc.swap]
    cpu_free = "cpu" in ample
    decode_cpu = 0.0 if cpu_free else sc.batch * (m.cpu * sc.aug * _decode_share(sc) + m.h2d / 4e9) / sc.host_speed
    rows = sc.batch * m.gather / 512.0
    gather_cpu = 0.0 if cpu_free else rows * ROW_GATHER_S / sc.host_speed
    gather_cores = min(1.0, gather_cpu * 20.0) * GATHER_THREADS if gather_cpu else 0.0
    w_speed, main_speed, avail, wanted = _cpu_shares(sc, decode_cpu, read_s, faults_worker * fault_cost, gather_cores)
    if cpu_free:
        w_speed, main_speed = 1.0, 1.0
    h2d = sc.batch * (m.sample_bytes if sc.gpu_decode else m.h2d)
    rate = sc.gpu.pcie_bps * (0.8 if sc.pinned else 0.4) / sc.pcie_share
    copy_s = 0.0 if "pcie" in ample else h2d / rate
    return HostCosts(
        workers=sc.workers,
        prefetch=sc.prefetch,
        read_s=read_s,
        server_s=server_s,
        decode_s=decode_cpu / w_speed,
        decode_cpu=decode_cpu,
        fault_s=faults_worker * fault_cost,
        host_s=gather_cpu / (GATHER_THREADS * main_speed) + faults_main * fault_cost,
        host_cpu=gather_cpu,
        copy_s=copy_s,
        copy_cpu=0.0 if sc.pinned else copy_s,
        main_speed=main_speed,
        worker_speed=w_speed,
        miss_bytes=miss,
        requests=requests,
        faults_worker=faults_worker,
        faults_main=faults_main,
        avail_cores=avail,
        wanted_cores=wanted,
        anon=anon,
        usable=usable,
        swapped=min(excess, sc.swap_bytes) if sc.swap != "none" else 0.0,
        cache_hit=hit,
        h2d_bytes=h2d,
    )
