"""What cAdvisor, kube-state-metrics, node-exporter and the collector sidecar show of one pod.

Sources: the kernel's PSI documentation (``some``: share of time at least one task waited on the
resource; ``full``: all non-idle tasks did; CPU has no meaningful ``full`` for a cgroup's peers),
cgroup v2 (``cpu.stat`` nr_throttled/nr_periods, ``memory.stat`` pswpin/pgmajfault,
``memory.events`` oom_kill, ``io.stat`` counts block devices only), proc(5) (iowait is counted only
on idle CPUs with a task in uninterruptible disk sleep; readers of HTTP object stores wait in S
state), and node-exporter's collectors (netdev never sees RDMA; the infiniband collector does).
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyk.gpu import inter_node_bytes
from bottleneck_operator_dev.familyk.lanes import Arr, PodLanes
from bottleneck_operator_dev.familyk.plan import Plan

GIB = 1024.0**3


def _noisy(rng: np.random.Generator, x: Arr, rel: float = 0.03) -> Arr:
    result: Arr = np.maximum(x * rng.normal(1.0, rel, x.size), 0.0)
    return result


def _frac(rng: np.random.Generator, x: Arr, noise: float = 0.01) -> Arr:
    result: Arr = np.clip(x + rng.normal(0.0, noise, x.size), 0.0, 1.0)
    return result


def pod_cpu(rng: np.random.Generator, plan: Plan, lanes: PodLanes, gpus: int) -> dict[str, Arr]:
    """The pod's CPU use and throttling, and the reader/worker processes' states."""
    c = plan.cluster
    t = lanes.step
    cores_avail = float(min(c.cpu_limit or c.node_cores, c.node_cores / max(1, 1 + c.neighbours // 2)))
    # `decode` is the workers' wall time per step on the cores the pod may use, so they are busy for
    # that share of the step, on at most that many cores.
    usable = max(cores_avail - 0.35 * gpus, 1.0)
    busy_share = np.clip(lanes.decode / t, 0.0, 1.0)
    decode_use = busy_share * min(float(plan.workers), usable)
    read_gb = _read_rate(plan, lanes) / 1e9
    reader_use = read_gb * c.storage.cpu_per_gb
    main_use = gpus * (0.35 + 0.65 * lanes.host / t)  # one trainer process per GPU, spinning in CUDA syncs
    swap_sys = lanes.swap / t * gpus * 0.8  # the kernel's swap and reclaim work, charged to the pod
    want = decode_use + reader_use + main_use + swap_sys
    used = np.minimum(want, cores_avail)
    throttled = np.zeros(t.size)
    if c.cpu_limit is not None and plan.workers + gpus > c.cpu_limit:
        # More runnable workers than the quota: every period in which they all run ends throttled.
        throttled = np.clip(busy_share * 0.97, 0.0, 0.98) + rng.uniform(0, 0.02, t.size)
    # Runnable tasks wait for a CPU when the demand exceeds what the pod may use.
    psi_cpu = np.clip(
        0.02 + throttled * 0.9 + np.clip(busy_share - 0.9, 0.0, 0.1) * 6.0 * (plan.workers > usable), 0, 1
    )
    io_wait_share = np.clip(lanes.io / t, 0.0, 1.0) * (1.0 if c.storage.dstate else 0.0)
    procs_busy = np.round(np.minimum(decode_use, plan.workers) * (lanes.decode / t > 0.9) + gpus)
    return {
        "cpu_cores": _noisy(rng, used),
        "sc_cpu_cores": _noisy(rng, used + 0.02),
        "cpu_throttled_frac": _frac(rng, throttled, 0.005),
        "sc_throttled_frac": _frac(rng, throttled, 0.005),
        "sc_psi_cpu_some": _frac(rng, psi_cpu),
        "sc_procs_running": np.round(_noisy(rng, np.minimum(used, plan.workers + gpus), 0.1)),
        "sc_procs_iowait": np.round(_noisy(rng, io_wait_share * plan.workers * 0.7, 0.2)),
        "sc_procs_busy": procs_busy,
    }


def _read_rate(plan: Plan, lanes: PodLanes) -> Arr:
    """Bytes per second the pod reads: what the storage delivers while the loader is reading."""
    share = 1.0 / max(1, len(plan.cluster.boards)) if plan.cluster.fabric is None else 1.0
    rate: Arr = lanes.io / lanes.step * plan.cluster.storage.gbs * 1e9 * share
    return rate


def pod_io_memory(rng: np.random.Generator, plan: Plan, lanes: PodLanes) -> dict[str, Arr]:
    """The pod's reads, memory, pressure stalls, faults, swap-ins and OOM kills."""
    c = plan.cluster
    t = lanes.step
    n = t.size
    reads = _read_rate(plan, lanes)
    wait = np.clip(lanes.io / t, 0, 1) * (1.0 if c.storage.dstate else 0.0)
    stall = np.clip(lanes.swap / t, 0, 1)
    limit = (c.mem_limit_gib or c.node_ram_gib * 0.8) * GIB
    ws = limit * (rng.uniform(0.9, 0.99) if stall.mean() > 0.02 else rng.uniform(0.2, 0.75))
    swapins = stall * rng.uniform(3e3, 4e4) if c.swap else np.zeros(n)
    mmap = plan.workload in ("llm-pretrain", "recsys") and rng.random() < 0.4  # Arrow/LMDB datasets fault in
    faults = stall * rng.uniform(2e3, 3e4) + (reads / 65536.0 * 0.5 if mmap else 0.0) + rng.uniform(0, 5, n)
    # Under heavy pressure a loader worker is now and then OOM-killed and respawned: one kill per sample.
    ooms = ((rng.random(n) < 0.04) & (stall > 0.1)) / 60.0
    return {
        "fs_read_bps": _noisy(rng, reads) if c.storage.block else rng.uniform(0, 2e4, n),
        "sc_io_read_bps": _noisy(rng, reads) if c.storage.block else rng.uniform(0, 2e4, n),
        "mem_working_set_bytes": _noisy(rng, np.full(n, ws), 0.01),
        "mem_limit_bytes": np.full(n, limit) if c.mem_limit_gib else np.full(n, np.nan),
        "cpu_limit_cores": np.full(n, c.cpu_limit) if c.cpu_limit else np.full(n, np.nan),
        "sc_psi_io_some": _frac(rng, wait * 0.9),
        "sc_psi_io_full": _frac(rng, wait * 0.5, 0.005),
        "sc_psi_mem_some": _frac(rng, stall * 0.95 + 0.001, 0.005),
        "sc_psi_mem_full": _frac(rng, stall * 0.6, 0.003),
        "sc_majfault_ps": _noisy(rng, faults),
        "sc_swapin_ps": _noisy(rng, swapins),
        "sc_oom_kills": ooms,
    }


def node_signals(
    rng: np.random.Generator, plan: Plan, lanes: PodLanes, pod_cpu_use: Arr, pods_here: int
) -> dict[str, Arr]:
    """The pod's node as node-exporter sees it: this job's pods on it plus any neighbours."""
    c = plan.cluster
    t = lanes.step
    n = t.size
    cores = float(c.node_cores)
    neighbour_cpu = c.neighbours * rng.uniform(0.5, 4.0) * np.ones(n) + rng.uniform(0, 1, n)
    busy = np.clip((pod_cpu_use * pods_here + neighbour_cpu) / cores, 0, 1)
    reads = _read_rate(plan, lanes) * pods_here
    waiting_readers = np.clip(lanes.io / t, 0, 1) * plan.workers * 0.7 * pods_here if c.storage.dstate else 0.0
    iowait = np.clip(np.minimum(waiting_readers / cores, 1 - busy), 0, 1)
    neighbour_disk = c.neighbours * rng.uniform(0, 5e7)
    disk = reads if c.storage.block else np.zeros(n)
    stall = np.clip(lanes.swap / t, 0, 1)
    net_read = reads if c.storage.network else np.zeros(n)
    inter = inter_node_bytes(plan, lanes) if c.fabric is not None else np.zeros(n)
    tcp = inter if c.fabric is not None and not c.fabric.rdma else np.zeros(n)
    rdma = inter if c.fabric is not None and c.fabric.rdma else np.zeros(n)
    avail = 0.02 + 0.05 * rng.random() if stall.mean() > 0.02 else rng.uniform(0.25, 0.85)
    io_some = np.clip(iowait * cores / max(plan.workers, 1) + c.neighbours * 0.01, 0, 1)
    return {
        "node_cpus": np.full(n, cores),
        "node_cpu_busy_frac": _frac(rng, busy),
        "node_cpu_iowait_frac": _frac(rng, iowait, 0.003),
        "node_cpu_system_frac": _frac(rng, busy * 0.08 + stall * 0.25, 0.003),
        "node_disk_read_bps": _noisy(rng, disk + neighbour_disk),
        "node_disk_reads_ps": _noisy(rng, (disk + neighbour_disk) / rng.uniform(1.3e5, 1.0e6)),
        "node_disk_busy_frac": _frac(rng, np.clip((disk + neighbour_disk) / (c.storage.gbs * 1e9), 0, 1)),
        "node_mem_avail_frac": _frac(rng, np.full(n, avail), 0.005),
        "node_swap_used_frac": _frac(rng, np.full(n, rng.uniform(0.2, 0.9) if c.swap and avail < 0.1 else 0.0), 0.002),
        "node_majfault_ps": _noisy(rng, stall * rng.uniform(2e3, 4e4) * pods_here + rng.uniform(0, 30, n)),
        "node_net_rx_bps": _noisy(rng, net_read + tcp + rng.uniform(1e5, 3e6) * (1 + c.neighbours)),
        "node_net_tx_bps": _noisy(rng, tcp + rng.uniform(1e5, 2e6) * (1 + c.neighbours)),
        "node_psi_cpu_some": _frac(rng, np.clip((busy - 0.85) * 4, 0, 1) + 0.01),
        "node_psi_io_some": _frac(rng, io_some),
        "node_psi_io_full": _frac(rng, io_some * 0.5, 0.005),
        "node_psi_mem_some": _frac(rng, stall * 0.9, 0.003),
        "node_psi_mem_full": _frac(rng, stall * 0.5, 0.002),
        "ib_rx_bps": _noisy(rng, rdma + 1e4),
        "ib_tx_bps": _noisy(rng, rdma + 1e4),
    }
