"""What the host exporters read, as true values on the base grid: the pod's cgroup and its node.

Counter-typed signals are given as their per-second rates (exporters.py integrates them into
counters); gauges as values. Pod signals see only the Job's own tasks; node signals add the
neighbours' load, which is why a CPU-saturated node need not mean a CPU-bound Job.

Pressure (PSI) is the share of wall time some (or all non-idle) tasks wait on a resource (kernel
Documentation/accounting/psi.rst). Here it is read off the network: the loader's runnable workers
beyond its cores wait for CPU; readers blocked in D state at the storage station wait on I/O (an
object store's readers wait in socket receive, S state, and do not count); tasks faulting pages
back in wait on memory.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .cluster import Setup
from .dynamics import BASE_DT, Timeline
from .hardware import CFS_PERIOD_S, FABRICS, PAGE
from .solve import Flow
from .stations import Demands
from .workload import Workload

FloatArray = npt.NDArray[np.float64]


def _noise(rng: np.random.Generator, x: FloatArray, sigma: float = 0.03) -> FloatArray:
    out: FloatArray = x * np.exp(rng.normal(0.0, sigma, size=x.shape))
    return out


def _cpu(su: Setup, d: Demands, fl: Flow) -> dict[str, FloatArray]:
    """Cores used and wanted by the pod, and the cores it may have."""
    x = fl.x[None, :]
    loader = x * d.core_s
    rank = su.gpus * (0.25 + 0.75 * np.clip(fl.u("launch") + 0.5 * fl.u("gpu"), 0.0, 1.0))
    tcp = 0.0 if FABRICS[su.fabric][1] else 2.0 * x * d.net / 1e9 * 0.5  # NCCL socket threads: ~0.5 core per GB/s
    reclaim = x * d.faults * 15e-6  # direct reclaim runs in the faulting task
    used = loader + rank + tcp + reclaim
    threads, quota, free = d.cpu_caps
    m_cpu = np.minimum(np.minimum(threads, quota), free)
    # runnable workers beyond the cores they get would take the rest, up to one core each
    wanted = rank + tcp + reclaim + np.minimum(loader * threads / np.maximum(m_cpu, 1e-9), threads)
    allowed = np.minimum(quota, free)
    return {"used": np.minimum(used, allowed), "wanted": wanted, "allowed": allowed, "loader": loader, "rank": rank}


def _pressure(su: Setup, wl: Workload, fl: Flow, cpu: dict[str, FloatArray]) -> dict[str, FloatArray]:
    dstate = su.storage.kind != "object" or wl.mmap
    io_some = np.clip(fl.u("storage") * (1.0 if dstate else 0.08), 0.0, 1.0)
    idle_ranks = np.clip(1.0 - fl.u("gpu") - fl.u("launch"), 0.0, 1.0)
    io_full = io_some * idle_ranks * np.sqrt(np.clip(fl.q("storage") / fl.population, 0.0, 1.0))
    mem_some = np.clip(fl.u("host_memory"), 0.0, 1.0)
    mem_full = mem_some * np.sqrt(np.clip(fl.q("host_memory") / fl.population, 0.0, 1.0))
    short = np.clip((cpu["wanted"] - cpu["allowed"]) / np.maximum(cpu["wanted"], 1e-3), 0.0, 1.0)
    return {
        "sc_psi_cpu_some": np.clip(short + 0.01, 0.0, 1.0),
        "sc_psi_io_some": io_some,
        "sc_psi_io_full": io_full,
        "sc_psi_mem_some": mem_some,
        "sc_psi_mem_full": mem_full,
    }


def _procs(
    su: Setup, wl: Workload, fl: Flow, cpu: dict[str, FloatArray], rng: np.random.Generator
) -> dict[str, FloatArray]:
    workers = float(su.gpus * su.workers)
    dstate = su.storage.kind != "object" or wl.mmap
    running = cpu["used"] + np.maximum(cpu["wanted"] - cpu["used"], 0.0)
    iowait = np.minimum(fl.q("storage"), workers) if dstate else np.zeros_like(running)
    per_worker = cpu["loader"] / workers
    busy = su.gpus * (cpu["rank"] / su.gpus >= 0.9) + workers * (per_worker >= 0.9)
    return {
        "sc_procs_running": rng.poisson(np.maximum(running, 0.0)).astype(np.float64),
        "sc_procs_iowait": rng.poisson(np.maximum(iowait, 0.0)).astype(np.float64),
        "sc_procs_busy": busy.astype(np.float64),
    }


def _pod_rates(
    su: Setup, wl: Workload, d: Demands, fl: Flow, cpu: dict[str, FloatArray], rng: np.random.Generator
) -> dict[str, FloatArray]:
    x = fl.x[None, :]
    local = su.storage.kind == "local"
    block = x * d.read if local else np.zeros_like(d.read)
    mmap_faults = x * d.read / 131072.0 if wl.mmap and su.storage.kind != "object" else 0.0  # 128 KiB readahead
    tcp = not FABRICS[su.fabric][1]
    net = x * d.net if tcp else np.zeros_like(d.net)
    obj = x * d.read * 1.04 if su.storage.kind == "object" else 0.0
    rho_over = d.ws_gb / np.maximum(d.limit_gb, 1.0) > 1.02
    oom_rate = np.where(rho_over & (su.swap == "none"), 1.0 / float(rng.uniform(120.0, 600.0)), 0.0)
    periods = np.full(x.shape[1:], 1.0 / CFS_PERIOD_S) * np.ones_like(d.read)
    load = cpu["wanted"] / (su.cpu_limit or np.inf)
    # saturated quota: nearly every period; below it, bursts of collation and launches still hit it now and then
    throttled = 1.0 / (1.0 + np.exp(-(load - 0.92) / 0.04)) + 0.05 * np.clip(load, 0.0, 1.0) ** 3
    return {
        "cpu_cores": _noise(rng, cpu["used"]),
        "sc_cpu_cores": _noise(rng, cpu["used"] + 0.03),
        "fs_read_bps": _noise(rng, block),
        "sc_io_read_bps": _noise(rng, block),
        "sc_majfault_ps": _noise(rng, x * d.faults + mmap_faults),
        "sc_swapin_ps": _noise(rng, x * d.faults * 4.0) if su.swap != "none" else np.zeros_like(d.read),
        "sc_oom_kills": rng.poisson(oom_rate * BASE_DT) / BASE_DT,  # whole events per base step
        "sc_net_rx_bps": _noise(rng, net + obj + 2e4),
        "sc_net_tx_bps": _noise(rng, net + 0.01 * obj + 1e4),
        "cfs_periods": periods,
        "cfs_throttled": periods * np.clip(throttled, 0.0, 1.0),
    }


def pod_readings(
    wl: Workload, su: Setup, d: Demands, fl: Flow, rng: np.random.Generator
) -> tuple[dict[str, FloatArray], dict[str, FloatArray], dict[str, FloatArray]]:
    """(rates, levels, cpu) of the pod's cgroup; cpu carries the cores the node readings need."""
    cpu = _cpu(su, d, fl)
    rates = _pod_rates(su, wl, d, fl, cpu, rng)
    rates.update({k: np.clip(_noise(rng, v, 0.04), 0.0, 1.0) for k, v in _pressure(su, wl, fl, cpu).items()})
    levels = _procs(su, wl, fl, cpu, rng)
    ws = np.minimum(d.ws_gb, 0.995 * d.limit_gb) * 1e9
    levels["mem_working_set_bytes"] = _noise(rng, ws, 0.01)
    limit = np.nan if su.mem_limit_gb is None else su.mem_limit_gb * 1e9
    levels["mem_limit_bytes"] = np.full(ws.shape, limit)
    if su.cpu_limit is not None:
        levels["cpu_limit_cores"] = np.full(ws.shape, su.cpu_limit)
    return rates, levels, cpu


def _node_cpu(
    su: Setup, tl: Timeline, d: Demands, fl: Flow, cpu: dict[str, FloatArray], pod: dict[str, FloatArray]
) -> dict[str, FloatArray]:
    x = fl.x[None, :]
    nb = su.nb_cpu * tl.nb
    tcp_bytes = (0.0 if FABRICS[su.fabric][1] else 2.0 * x * d.net) + (
        x * d.read if su.storage.kind != "local" else 0.0
    )
    softirq = tcp_bytes / 1e9 * 0.6  # kernel network stack: ~0.6 core per GB/s
    kswapd = x * d.faults * 10e-6
    busy = np.minimum(cpu["used"] + nb + 0.01 * su.node_cpus + softirq + kswapd, su.node_cpus)
    waiting = 0.7 * np.maximum(pod["sc_procs_iowait"], 0.0) + 2.0 * su.nb_io * tl.nb
    iowait = np.minimum(su.node_cpus - busy, waiting)
    system = np.minimum(
        0.1 * cpu["loader"] + 0.2 * cpu["rank"] + softirq + kswapd + 0.005 * su.node_cpus + 0.15 * nb, busy
    )
    return {
        "cpu_all": np.full(busy.shape, float(su.node_cpus)),
        "cpu_busy": busy,
        "cpu_iowait": iowait,
        "cpu_system": system,
    }


def _node_io(
    su: Setup, wl: Workload, tl: Timeline, d: Demands, fl: Flow, rng: np.random.Generator
) -> dict[str, FloatArray]:
    x = fl.x[None, :]
    local = su.storage.kind == "local"
    job = x * d.read if local else np.zeros_like(d.read)
    nb = su.nb_io * tl.nb * (su.storage_gbps * 1e9 if local else float(rng.uniform(0.0, 2e7)))
    swap = x * d.faults * 4.0 * PAGE if su.swap == "nvme" else 0.0
    req = 131072.0 if (wl.sample_bytes >= 131072.0 or wl.mmap) else wl.sample_bytes
    reads = job / req + swap / 16384.0 + nb / 65536.0 + 2.0
    svc = su.storage_latency_s if local else 1e-4
    return {
        "node_disk_read_bps": _noise(rng, job + nb + swap + 5e5),
        "node_disk_reads_ps": _noise(rng, reads),
        "node_disk_busy_frac": np.clip(_noise(rng, reads * svc), 0.0, 1.0),
    }


def node_readings(
    wl: Workload, su: Setup, tl: Timeline, d: Demands, fl: Flow, cpu: dict[str, FloatArray],
    pod_rates: dict[str, FloatArray], pod_levels: dict[str, FloatArray], rng: np.random.Generator,
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:  # fmt: skip
    """(rates, levels) of node-exporter on each pod's node, neighbours included."""
    x = fl.x[None, :]
    rates = _node_cpu(su, tl, d, fl, cpu, pod_levels)
    rates.update(_node_io(su, wl, tl, d, fl, rng))
    gbps, rdma = FABRICS[su.fabric]
    nic_bps = su.nics * gbps / 8.0 * 1e9
    nb_net = su.nb_net * tl.nb * nic_bps * 0.5
    fabric = x * d.net
    storage_rx = x * d.read * 1.04 if su.storage.kind != "local" else 0.0
    rates["node_net_rx_bps"] = _noise(rng, (0.0 if rdma else fabric) + storage_rx + nb_net + 3e5)
    rates["node_net_tx_bps"] = _noise(rng, (0.0 if rdma else fabric) + 0.01 * storage_rx + 0.6 * nb_net + 2e5)
    if rdma:
        rates["ib_rx_bps"] = _noise(rng, fabric + 1e3)
        rates["ib_tx_bps"] = _noise(rng, fabric + 1e3)
    rates["node_majfault_ps"] = pod_rates["sc_majfault_ps"] + float(rng.uniform(0.0, 30.0)) * tl.nb + 1.0
    sat = np.clip((rates["cpu_busy"] / su.node_cpus - 0.85) / 0.15, 0.0, 1.0) ** 2
    nb_io = 0.3 * su.nb_io * tl.nb
    psi = {
        "node_psi_cpu_some": 1.0 - (1.0 - sat) * (1.0 - 0.6 * pod_rates["sc_psi_cpu_some"]),
        "node_psi_io_some": 1.0 - (1.0 - pod_rates["sc_psi_io_some"]) * (1.0 - nb_io),
        "node_psi_io_full": 0.6 * pod_rates["sc_psi_io_full"] * (1.0 - 0.5 * tl.nb),
        "node_psi_mem_some": pod_rates["sc_psi_mem_some"],  # a cgroup's stalls count at every ancestor
        "node_psi_mem_full": 0.7 * pod_rates["sc_psi_mem_full"],
    }
    rates.update({k: np.clip(v, 0.0, 1.0) for k, v in psi.items()})
    held = np.minimum(d.ws_gb, d.limit_gb) + su.nb_mem_gb * (0.85 + 0.15 * tl.nb) + 4.0
    swapped = np.maximum(d.ws_gb - d.limit_gb, 0.0)
    swap_size = {"zram": 0.25 * su.node_mem_gb, "nvme": 64.0}.get(su.swap, 0.0)
    levels = {
        "node_cpus": np.full(held.shape, float(su.node_cpus)),
        "node_mem_avail_frac": np.clip(1.0 - held / su.node_mem_gb, 0.005, 1.0),
        "node_swap_used_frac": np.clip(swapped / swap_size, 0.0, 1.0) if swap_size else np.zeros_like(held),
    }
    return rates, levels
