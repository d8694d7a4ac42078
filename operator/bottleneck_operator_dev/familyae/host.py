"""A pod's host side: its cgroup's CPU, memory and I/O, what cAdvisor, kube-state-metrics and the
collector sidecar report of it, and what it adds to its node.

Semantics (TELEMETRY.md; kernel cgroup-v2 and PSI documentation): cAdvisor counts the container's
CPU and block reads (NFS and object-store reads are not block reads); CFS periods tick ten times a
second while the cgroup runs under a quota, and a period counts as throttled when the quota ran out
in it, which multi-threaded loaders do even below their limit; PSI "some" is the share of time at
least one task waited, "full" the share all non-idle tasks did. Workers reading a local disk or NFS
wait in D state; object-store readers wait in socket receive (S state, no I/O pressure). Swap-ins
are major faults; without swap, a cgroup at its limit reclaims file pages (refaults) and OOM-kills.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyae.activity import Activity
from bottleneck_operator_dev.familyae.scrape import Level
from bottleneck_operator_dev.familyae.stages import Arr
from bottleneck_operator_dev.familyae.timeline import Timeline
from bottleneck_operator_dev.familyae.workload import JobConfig

PAGE = 4096.0
SWAP_CLUSTER = 4  # pages a disk swap-in brings back with readahead (vm.page-cluster, assumed)


@dataclass(frozen=True)
class PodHost:
    """One pod's host-side figures per slice (see the module for their semantics)."""

    cpu_demand: Arr
    cpu_used: Arr
    kernel_cores: Arr
    throttled: Arr
    periods_ps: Arr
    ws_bytes: Arr
    block_read_bps: Arr
    swapins_ps: Arr
    majfault_ps: Arr
    oom_ps: Arr
    psi: dict[str, Arr]
    procs: dict[str, Arr]
    pod_rx: Arr
    pod_tx: Arr
    node_rx: Arr
    node_tx: Arr
    rdma_bps: Arr
    swapped: Arr
    d_tasks: Arr


def _memory(cfg: JobConfig, act: Activity, rng: np.random.Generator, n: int) -> dict[str, Arr]:
    """Working set, block reads from swap or refaults, swap-ins and major faults of the pod."""
    faults = act.faults_ps  # pages that must come back per second
    swap_reads = {"disk": faults * PAGE, "zram": 0.0 * faults, "none": faults * PAGE}[cfg.swap]
    swapins = faults if cfg.swap != "none" else 0.0 * faults
    # a disk swap-in fault brings a cluster of pages back (readahead): fewer faults than pages
    majfaults = faults / SWAP_CLUSTER if cfg.swap == "disk" else faults
    miss = 1.0 - min(0.95, max(0.0, cfg.mem_limit - cfg.anon_bytes) / cfg.dataset_bytes)
    mmap_faults = act.read_bps / PAGE * miss if cfg.model.family == "lm" else 0.0 * faults
    wander = 1.0 + 0.02 * np.sin(np.linspace(0.0, float(rng.uniform(1, 6)), n) + float(rng.uniform(0, 6)))
    if cfg.cache_bytes > 0:
        ws = np.full(n, cfg.mem_limit * float(rng.uniform(0.965, 0.995)))
        over = max(0.0, cfg.anon_bytes + cfg.cache_bytes - cfg.mem_limit * 0.98)
    else:
        room = max(cfg.mem_limit - cfg.anon_bytes, 0.0)
        ws = cfg.anon_bytes * wander + room * float(rng.uniform(0.05, 0.3))
        over = 0.0
    return {
        "ws": np.minimum(ws, cfg.mem_limit),
        "swap_reads": swap_reads,
        "swapins": swapins,
        "majfaults": majfaults + mmap_faults,
        "swapped": np.full(n, over if cfg.swap != "none" else 0.0),
    }


def _cpu(cfg: JobConfig, act: Activity, tcp: Arr, n: int) -> dict[str, Arr]:
    """Demand, use, kernel share and CFS throttling of the trainer container."""
    g = cfg.gpus_per_pod
    nfs = act.read_bps if cfg.storage.kind == "nfs" else 0.0 * act.read_bps
    obj = act.read_bps if cfg.storage.kind == "object" else 0.0 * act.read_bps
    swap_cost = {"disk": 8e-6, "zram": 5e-6, "none": 5e-6}[cfg.swap]
    kernel = nfs / 1.5e9 + obj / 3e9 + 2.0 * tcp / 3e9 + act.faults_ps * swap_cost  # assumed per-byte costs
    main = g * (0.35 + 0.65 * act.rank_busy) * act.active + g * 1.0 * (1.0 - act.active) + 0.1 * g
    demand = act.loader_cores + main + 2.0 * tcp / 5e9 + kernel
    cap = cfg.cpu_limit if cfg.cpu_limit > 0 else cfg.free_cores
    used = np.minimum(demand, cap)
    if cfg.cpu_limit > 0:
        burst = demand * 1.25 / cfg.cpu_limit  # loaders run in bursts within each 100 ms period
        throttled = np.clip((burst - 0.75) / 0.45, 0.0, 1.0) * 0.97
        periods = np.full(n, 10.0)
    else:
        throttled, periods = np.zeros(n), np.zeros(n)
    return {
        "demand": demand,
        "used": used,
        "kernel": np.minimum(kernel, used),
        "throttled": throttled,
        "periods": periods,
    }


def _pressure(cfg: JobConfig, act: Activity, cpu: dict[str, Arr]) -> dict[str, Arr]:
    """The pod cgroup's PSI shares (assumed: workers stall independently; see the doc)."""
    w = float(act.workers)
    cap = cfg.cpu_limit if cfg.cpu_limit > 0 else cfg.free_cores
    # runnable tasks beyond the cores the pod can get leave some task waiting most of the time
    runnable = cfg.gpus_per_pod * act.rank_busy + w * (act.p_cpu + act.p_cpu_wait)
    over = 1.0 - np.exp(-np.maximum(runnable - cap, 0.0) / 2.0)
    d_state = cfg.storage.kind in ("nfs", "nvme", "sata", "blockvol")
    p_io = act.p_io if d_state else 0.0 * act.p_io
    io_some = 1.0 - (1.0 - np.clip(p_io, 0, 1)) ** w
    p_st = np.clip(act.p_stall, 0.0, 1.0)
    mem_some = 1.0 - (1.0 - p_st) ** w
    idle_main = 1.0 - 0.5 * act.rank_busy
    return {
        "cpu_some": np.clip(0.7 * cpu["throttled"] + 0.9 * over + 0.3 * act.p_cpu_wait + 0.01, 0.0, 1.0),
        "io_some": io_some,
        "io_full": io_some * p_io ** (1.0 + w / 8.0) * idle_main,
        "mem_some": np.clip(mem_some + 0.3 * p_st, 0.0, 1.0),
        "mem_full": mem_some * p_st ** (1.0 + w / 8.0) * idle_main,
    }


def _procs(cfg: JobConfig, act: Activity) -> dict[str, Arr]:
    """Expected trainer processes running, in D state, and at a full core."""
    g, w = cfg.gpus_per_pod, float(act.workers if cfg.workers > 0 else 0)
    d_state = cfg.storage.kind in ("nfs", "nvme", "sata", "blockvol")
    return {
        "running": g * act.rank_busy + w * (act.p_cpu + act.p_cpu_wait),
        "iowait": w * ((act.p_io if d_state else 0.0) + act.p_stall),
        "busy": g * (act.rank_busy >= 0.9) + w * (act.p_cpu >= 0.9),
    }


def oom_events(cfg: JobConfig, tl: Timeline, rng: np.random.Generator) -> Arr:
    """OOM kills per slice as a rate (Poisson events at the fault's rate)."""
    lam = cfg.oom_per_hour / 3600.0 * tl.grid.dt
    return rng.poisson(lam, tl.grid.size).astype(np.float64) / tl.grid.dt


def pod_host(cfg: JobConfig, act: Activity, tl: Timeline, rng: np.random.Generator) -> PodHost:
    """One pod's host-side figures."""
    n = tl.grid.size
    rdma = cfg.fabric.rdma and cfg.pods > 1
    tcp = 0.0 * act.net_bps if rdma else act.net_bps
    mem = _memory(cfg, act, rng, n)
    cpu = _cpu(cfg, act, tcp, n)
    local = act.read_bps if cfg.storage.local else 0.0 * act.read_bps
    remote = act.read_bps if cfg.storage.kind in ("nfs", "object") else 0.0 * act.read_bps
    own_rx = act.read_bps if cfg.storage.kind == "object" else 0.0 * act.read_bps  # NFS mounts live in the host's netns
    control = float(rng.uniform(2e4, 5e5))
    procs = _procs(cfg, act)
    return PodHost(
        cpu_demand=cpu["demand"], cpu_used=cpu["used"], kernel_cores=cpu["kernel"],
        throttled=cpu["throttled"], periods_ps=cpu["periods"], ws_bytes=mem["ws"],
        block_read_bps=local + mem["swap_reads"], swapins_ps=mem["swapins"], majfault_ps=mem["majfaults"],
        oom_ps=oom_events(cfg, tl, rng), psi=_pressure(cfg, act, cpu), procs=procs,
        pod_rx=own_rx + tcp + control, pod_tx=tcp + control * 0.5 + act.read_ops_ps * 400.0 * (own_rx > 0),
        node_rx=remote + tcp + control, node_tx=tcp + control * 0.5 + act.read_ops_ps * 300.0,
        rdma_bps=act.net_bps if rdma else 0.0 * act.net_bps, swapped=mem["swapped"], d_tasks=procs["iowait"],
    )  # fmt: skip


def cadvisor_levels(cfg: JobConfig, ph: PodHost, with_limit_series: bool) -> dict[str, Level]:
    """The trainer container's cAdvisor series (the collector's container is left out, as the signals read)."""
    out = {
        "cpu_cores": Level(ph.cpu_used, counter=True, noise=0.03, cap=float(cfg.node.cpus)),
        "mem_working_set_bytes": Level(ph.ws_bytes, noise=0.004),
        "fs_read_bps": Level(ph.block_read_bps, counter=True, noise=0.05),
    }
    if with_limit_series:
        out["mem_limit_bytes"] = Level(np.full_like(ph.ws_bytes, cfg.mem_limit))
    if cfg.cpu_limit > 0:
        out["cpu_throttled_frac:throttled"] = Level(ph.throttled * ph.periods_ps, counter=True)
        out["cpu_throttled_frac:periods"] = Level(ph.periods_ps, counter=True)
    return out


def ksm_levels(cfg: JobConfig, n: int) -> dict[str, Level]:
    """kube-state-metrics' CPU limit of the workload containers (absent without a limit)."""
    return {"cpu_limit_cores": Level(np.full(n, cfg.cpu_limit))} if cfg.cpu_limit > 0 else {}


def sidecar_levels(cfg: JobConfig, ph: PodHost, with_net: bool) -> dict[str, Level]:
    """The collector's pod-cgroup series."""
    out = {f"sc_psi_{k}": Level(v, counter=True, noise=0.05, cap=1.0) for k, v in ph.psi.items()}
    out |= {
        "sc_cpu_cores": Level(ph.cpu_used + 0.015, counter=True, noise=0.03, cap=float(cfg.node.cpus)),
        "sc_io_read_bps": Level(ph.block_read_bps, counter=True, noise=0.05),
        "sc_majfault_ps": Level(ph.majfault_ps + 0.2, counter=True, noise=0.1),
        "sc_swapin_ps": Level(ph.swapins_ps, counter=True, noise=0.1),
        "sc_oom_kills": Level(ph.oom_ps, counter=True),
        "sc_procs_running": Level(ph.procs["running"], noise=0.15, integer=True, cap=1e6),
        "sc_procs_iowait": Level(ph.procs["iowait"], noise=0.2, integer=True, cap=1e6),
        "sc_procs_busy": Level(ph.procs["busy"], noise=0.1, integer=True, cap=1e6),
    }
    if cfg.cpu_limit > 0:
        out["sc_throttled_frac:throttled"] = Level(ph.throttled * ph.periods_ps, counter=True)
        out["sc_throttled_frac:periods"] = Level(ph.periods_ps, counter=True)
    if with_net:
        out["sc_net_rx_bps"] = Level(ph.pod_rx, counter=True, noise=0.05)
        out["sc_net_tx_bps"] = Level(ph.pod_tx, counter=True, noise=0.05)
    return out
