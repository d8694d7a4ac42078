"""What the pod's own cgroup shows: cAdvisor, kube-state-metrics and the collector sidecar.

The trainer's ranks, the loader's workers, the readers' own CPU (HTTP and TLS for object stores,
the NFS client, page-fault handling for memory maps) and the kernel's reclaim all land in the pod's
cgroup; neighbours never do (TELEMETRY.md, cgroup v2). Pressure (PSI) follows what the pod's tasks
wait on: D-state reads are IO pressure, runnable-but-waiting is CPU pressure, reclaim and swap-in
are memory pressure; a reader blocked in a socket is none of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.blindfamily.draft import Draft, link_rates
from bottleneck_operator_dev.blindfamily.hardware import STORAGE
from bottleneck_operator_dev.blindfamily.timeline import FloatArray, Timeline

# Bytes/s one core moves through each read path (user + system time together).
_READER_BPS = {
    "object": (0.3e9, 0.8e9),
    "nfs": (1.5e9, 3e9),
    "block": (3e9, 6e9),
    "rdma-fs": (2e9, 4e9),
    "page-cache": (6e9, 10e9),
}
_MEMSTALL = ("host-swap", "host-reclaim", "cgroup-memory-limit")


@dataclass(frozen=True)
class PodLoad:
    """A pod's load, for the node renderer to add up (each (pods, samples))."""

    cpu: FloatArray
    sys: FloatArray
    d_tasks: FloatArray
    block_bps: FloatArray
    net_rx: FloatArray
    net_tx: FloatArray
    ib_rx: FloatArray
    ib_tx: FloatArray
    majfault: FloatArray
    swapin: FloatArray
    ws: FloatArray
    psi: dict[str, FloatArray]


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / (1.0 + np.exp(-x))
    return out


def _cpu(d: Draft, tl: Timeline, read: FloatArray, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """Rank, worker, reader and reclaim cores (the ranks spin on CUDA syncs while the GPU works)."""
    path = "object" if d.io_mode == "fuse" else STORAGE[d.storage].path
    if d.stage == "launch":
        rank = np.full_like(tl.comp, float(d.k)) * tl.active
    elif d.serial_input:
        rank = d.k * np.minimum(1.0, tl.cpu + 0.9 * tl.device)
    else:
        rank = d.k * (0.25 + 0.7 * tl.device) * tl.active
    if d.nodes > 1:
        # NCCL's proxy thread busy-polls RDMA completions; sockets cost CPU in proportion to traffic.
        rank = rank + d.k * (float(rng.uniform(0.5, 1.0)) * tl.active if d.rdma_bps else 0.4 * tl.comm)
    workers = np.zeros_like(rank) if d.serial_input else d.cores * tl.cpu
    if d.stage == "cpu" and not d.serial_input:
        # A CPU-bound loader keeps its cores busy while the GPU idles: the pipeline's slack is on the GPU.
        workers = d.cores * np.minimum(tl.active, tl.cpu * float(rng.uniform(1.02, 1.08)))
    reader = read / float(rng.uniform(*_READER_BPS["block" if d.io_mode == "mmap" else path]))
    reclaim = (tl.mem_gpu * d.k + tl.mem_in * max(d.workers, 1) * 0.5) * float(rng.uniform(0.3, 0.7))
    return rank + workers + reader + reclaim + 0.05, workers


def _throttle(
    d: Draft, demand: FloatArray, active: FloatArray, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """CPU used under the limit, and the share of CFS periods throttled (bursty even below the limit).

    When the loader wants more than the quota, the quota is used up in nearly every period, and
    the cgroup is throttled in most of them.
    """
    if d.cpu_limit is None:
        return demand, np.zeros_like(demand)
    if d.mechanism == "cfs-throttled":
        used = d.cpu_limit * rng.uniform(0.95, 0.995, demand.shape) * (0.15 + 0.85 * active)
        thr = float(rng.uniform(0.55, 0.95)) * active + 0.02 * rng.standard_normal(used.shape)
        return used, np.clip(thr, 0.0, 1.0)
    used = np.minimum(demand, d.cpu_limit * rng.uniform(0.97, 0.995, demand.shape))
    ratio = used / d.cpu_limit
    thr = np.clip((ratio - 0.7) / 0.25, 0.0, 1.0) ** 1.5 * float(rng.uniform(0.75, 0.98))
    thr = thr + float(rng.uniform(0.0, 0.04)) * ratio
    return used, np.clip(thr + 0.01 * rng.standard_normal(used.shape), 0.0, 1.0)


def _memory(d: Draft, tl: Timeline, rng: np.random.Generator) -> dict[str, FloatArray]:
    """Working set, limit, swap-ins, refault reads and OOM kills."""
    p, n = tl.comp.shape
    ws = d.k * rng.uniform(3e9, 10e9) + max(d.workers, 1) * rng.uniform(0.3e9, 1.5e9)
    if d.arch.name in ("dlrm", "gnn"):
        ws += rng.uniform(40e9, 300e9)  # host-resident embeddings or graph
    ws = min(ws, d.cluster.node_mem_gb * 1e9 * 0.9)
    limit = np.nan
    if d.mechanism == "cgroup-memory-limit":
        limit = ws
    elif rng.random() < (0.8 if d.cpu_limit is not None else 0.3):
        limit = ws * rng.uniform(1.3, 3.0)
    stall = np.minimum(1.0, 2.0 * tl.mem_gpu)
    full = ws * rng.uniform(0.96, 0.995) if d.mechanism in _MEMSTALL else ws
    ws_t = np.clip(full * (1 + 0.01 * rng.standard_normal((p, n))), 0, limit if np.isfinite(limit) else None)
    swapin = stall * (rng.uniform(8e3, 6e4) if d.swap == "zram" else rng.uniform(1.5e3, 8e3)) * (d.swap != "none")
    refault = stall * rng.uniform(40e6, 300e6) * (d.mechanism in ("host-reclaim", "cgroup-memory-limit"))
    oom = np.zeros((p, n))
    if d.mechanism in ("host-reclaim", "cgroup-memory-limit") and rng.random() < 0.6:
        hits = rng.integers(0, n, int(rng.integers(1, 4)))
        oom[rng.integers(0, p, hits.size), hits] = 1.0
    return {"ws": ws_t, "limit": np.full((p, n), limit), "swapin": swapin, "refault": refault, "oom": oom}


def host_signals(
    d: Draft, tl: Timeline, rng: np.random.Generator, step: float
) -> tuple[dict[str, FloatArray], PodLoad]:
    """The pod-level signals (cAdvisor, KSM, sidecar) and the load the node sees from the pod."""
    spec = STORAGE[d.storage]
    read = d.storage_bps * tl.read
    block = read if spec.path == "block" else np.zeros_like(read)
    demand, workers = _cpu(d, tl, read, rng)
    used, thr = _throttle(d, demand, tl.active[None, :], rng)
    mem = _memory(d, tl, rng)
    fault_bytes = float(rng.uniform(16e3, 128e3))
    majfault = (block / fault_bytes if d.io_mode == "mmap" else 0.0) + mem["swapin"] * rng.uniform(1.0, 1.2)
    majfault = majfault + mem["refault"] / rng.uniform(16e3, 64e3) + rng.uniform(0, 3, used.shape)
    disk_swap = mem["swapin"] * 4096 * (d.swap == "disk")
    fs_read = block + mem["refault"] + disk_swap + rng.uniform(0, 5e4, used.shape)
    psi = _pressure(d, tl, used, workers, thr, rng)
    sig = {
        "cpu_cores": used * (1 + 0.02 * rng.standard_normal(used.shape)),
        "mem_working_set_bytes": mem["ws"],
        "mem_limit_bytes": mem["limit"],
        "fs_read_bps": fs_read,
        "cpu_throttled_frac": thr,
        "sc_cpu_cores": (used + rng.uniform(0.005, 0.02)) * (1 + 0.02 * rng.standard_normal(used.shape)),
        "sc_throttled_frac": np.clip(thr * rng.uniform(0.9, 1.0) + 0.01 * rng.standard_normal(thr.shape), 0, 1),
        "sc_io_read_bps": fs_read * rng.uniform(0.97, 1.03, used.shape),
        "sc_majfault_ps": majfault,
        "sc_swapin_ps": mem["swapin"],
        "sc_oom_kills": mem["oom"] / step,
        **{f"sc_psi_{k}": v for k, v in psi.items()},
        **_procs(d, tl, used, workers, rng),
    }
    if d.cpu_limit is not None:
        sig["cpu_limit_cores"] = np.full_like(used, d.cpu_limit)
    return sig, _load(d, tl, sig, read, psi, rng)


def _pressure(
    d: Draft, tl: Timeline, used: FloatArray, workers: FloatArray, thr: FloatArray, rng: np.random.Generator
) -> dict[str, FloatArray]:
    """The pod cgroup's PSI: what its tasks wait on."""
    path = STORAGE[d.storage].path
    waits_d = path in ("block", "nfs", "rdma-fs") and d.io_mode != "fuse"
    # More runnable workers than cores: some task waits for a CPU nearly all the time.
    runnable = d.workers * np.minimum(1.0, tl.cpu * 1.05)
    over = np.clip((runnable - d.cores) / max(d.cores, 1.0) * 4.0, 0.0, 1.0) if d.cpu_limit is None else 0.0
    base = float(rng.uniform(0.002, 0.03))
    cpu = 1 - (1 - thr * float(rng.uniform(0.6, 0.9))) * (1 - over) * (1 - base)
    io = tl.read * float(rng.uniform(0.75, 1.0)) * waits_d
    io = io + tl.mem_gpu * (0.5 if d.swap == "disk" else 0.0) + tl.mem_gpu * 0.4 * (d.mechanism == "host-reclaim")
    io_full = io * np.clip(1 - tl.device * rng.uniform(0.8, 1.0), 0, 1) * float(rng.uniform(0.5, 0.9))
    mem = (tl.mem_gpu + tl.mem_in) * float(rng.uniform(0.8, 1.2))
    if d.io_mode == "mmap":
        mem = mem + tl.read * float(rng.uniform(0.0, 0.05))
    noise = 0.01 * rng.standard_normal(used.shape)
    return {
        "cpu_some": np.clip(cpu + noise, 0, 1),
        "io_some": np.clip(io + noise + 0.003, 0, 1),
        "io_full": np.clip(io_full + noise / 2, 0, 1),
        "mem_some": np.clip(mem + noise / 2, 0, 1),
        "mem_full": np.clip(mem * float(rng.uniform(0.3, 0.7)) + noise / 4, 0, 1),
    }


def _procs(
    d: Draft, tl: Timeline, used: FloatArray, workers: FloatArray, rng: np.random.Generator
) -> dict[str, FloatArray]:
    """Process-state counts as the sidecar samples them (instantaneous, so Poisson around the mean)."""
    # FUSE readers block in the request (D state) without it being block IO.
    waits_d = STORAGE[d.storage].path in ("block", "nfs", "rdma-fs") or d.io_mode == "fuse"
    readers = d.workers if d.workers else d.k
    rank_share = np.minimum(1.0, (used - workers) / d.k)
    worker_share = workers / max(d.workers, 1)
    running = d.k * rank_share + np.minimum(d.workers, workers * (1.3 if d.workers > d.cores else 1.0))
    dstate = readers * tl.read * float(rng.uniform(0.5, 1.0)) * waits_d + d.k * tl.mem_gpu
    busy = rng.binomial(d.workers, _sigmoid((worker_share - 0.9) / 0.03)) + rng.binomial(
        d.k, _sigmoid((rank_share - 0.9) / 0.03)
    )
    return {
        "sc_procs_running": rng.poisson(np.maximum(running, 0.0)).astype(np.float64),
        "sc_procs_iowait": rng.poisson(np.maximum(dstate, 0.0)).astype(np.float64),
        "sc_procs_busy": busy.astype(np.float64),
    }


def _load(
    d: Draft,
    tl: Timeline,
    sig: dict[str, FloatArray],
    read: FloatArray,
    psi: dict[str, FloatArray],
    rng: np.random.Generator,
) -> PodLoad:
    """The pod's share of its node: CPU, D-state tasks, device reads, network and RDMA bytes."""
    path = STORAGE[d.storage].path
    lr = link_rates(d)
    share = 1.0 / min(d.pods_per_node, d.n_pods)
    net = lr.get("net", 0.0) * tl.comm * share
    rdma = lr.get("rdma", 0.0) * tl.comm * share
    nfs = read * (path == "nfs")
    obj = read * (path == "object")
    fs = read * (path == "rdma-fs")
    used = sig["cpu_cores"]
    return PodLoad(
        cpu=used,
        sys=used * float(rng.uniform(0.06, 0.12)) + (nfs / 2.5e9) + sig["sc_swapin_ps"] * 4e-6,
        d_tasks=sig["sc_procs_iowait"],
        block_bps=sig["fs_read_bps"],
        net_rx=net + nfs * 1.03 + obj * 1.02,
        net_tx=net + nfs * 0.015 + obj * 0.01,
        ib_rx=rdma + fs * 1.02,
        ib_tx=rdma + fs * 0.01,
        majfault=sig["sc_majfault_ps"],
        swapin=sig["sc_swapin_ps"],
        ws=sig["mem_working_set_bytes"],
        psi=psi,
    )
