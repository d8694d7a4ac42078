"""What the host sees of one pod: cAdvisor, kube-state-metrics, node-exporter and the sidecar.

Each value is what the exporter's source would count (kernel ``Documentation/accounting/psi.rst``
and ``admin-guide/cgroup-v2.rst`` for pressure and cgroup counters; node-exporter's collectors;
cAdvisor's ``container_*`` metrics). Node-level values add the other tenants of a shared node;
the pod's own cgroup values (cAdvisor, sidecar) never do. Reads from NFS and object stores never
reach the block counters: they arrive as network receive bytes, and object-store readers wait on
sockets, not in D state, so they add no iowait and no io pressure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyq.design import Plan
from bottleneck_operator_dev.familyq.gpu import busy_shares
from bottleneck_operator_dev.familyq.stages import DECODE, HOSTMEM, READ
from bottleneck_operator_dev.familyq.timeline import CHECKPOINT, RESTART, WARMUP, Timeline

FloatArray = npt.NDArray[np.float64]
PAGE = 4096.0


@dataclass(frozen=True)
class Truth:
    """One signal's true value per sample: a gauge, a counter's rate, or a ratio of two counters' rates."""

    kind: str  # "gauge", "counter" or "ratio"
    value: FloatArray
    denominator: FloatArray | None = None


def _worker_shares(plan: Plan, tl: Timeline) -> tuple[FloatArray, FloatArray]:
    """Share of each sample the loader workers spend reading and decoding."""
    on = tl.stepping > 0
    step = np.maximum(tl.step, 1e-9)
    read = np.where(on, np.minimum(tl.stages[:, READ] / step, 1.0), 0.0)
    decode = np.where(on, np.minimum(tl.stages[:, DECODE] / step, 1.0), 0.0)
    warm = tl.phase == WARMUP
    return np.where(warm, 0.6, read), np.where(warm, 0.7, decode)


def pod_truths(plan: Plan, tl: Timeline, rng: np.random.Generator) -> dict[str, Truth]:
    """The pod's host-side signals before scraping."""
    n, mech = len(tl.phase), plan.mechanism.name
    read, decode = _worker_shares(plan, tl)
    dead = tl.phase == RESTART
    share_cpus = plan.node_cpus * plan.gpus / plan.node_gpus
    workers = float(plan.cpu_limit * 0.95 if plan.cpu_limit else min(share_cpus * 0.8, plan.gpus * rng.uniform(4, 14)))
    if mech == "cfs-quota-throttling":
        # num_workers sized for the node's cores, the quota far below it: together they ask more than it allows.
        workers = float(plan.cpu_limit or 1.0) * float(rng.uniform(1.5, 4.0))
    stall = np.where(tl.stepping > 0, tl.stages[:, HOSTMEM] / np.maximum(tl.step, 1e-9), 0.0)
    read_bps = plan.storage.bps * float(rng.uniform(0.55, 0.9)) * read
    reader_cpu = 0.35 * workers * read if plan.storage.name == "object-store" else 0.05 * workers * read
    kernel_cpu = stall * float(rng.uniform(1.0, 4.0))
    cores = workers * decode + reader_cpu + plan.gpus * rng.uniform(0.7, 1.1, n) + kernel_cpu
    if plan.cpu_limit:
        cores = np.minimum(cores, plan.cpu_limit)
    cores = np.where(dead, 0.0, cores)
    throttled = _throttled(plan, cores, rng)
    swapins = stall * float(rng.uniform(5e3, 6e4)) if plan.swap and mech != "page-cache-reclaim" else np.zeros(n)
    faults = swapins * float(rng.uniform(1.0, 1.4)) + stall * float(rng.uniform(300, 5e3))
    if mech == "mmap-dataset-faults":
        faults = faults + read_bps / PAGE * float(rng.uniform(0.05, 0.3))
    blocking = plan.storage.blocking_wait
    io_some = np.clip(read * float(rng.uniform(0.6, 0.95)), 0, 1) if blocking else 0.01 * read
    mem_some = np.clip(stall * float(rng.uniform(0.85, 1.0)) + 0.002, 0, 1)
    block_bps = read_bps if plan.storage.local_block else 0.02 * read_bps
    out = {
        "cpu_cores": Truth("counter", cores),
        "sc_cpu_cores": Truth("counter", cores + 0.01),
        "cpu_throttled_frac": Truth("ratio", throttled * 10.0, np.full(n, 10.0)),
        "sc_throttled_frac": Truth("ratio", throttled * 10.0, np.full(n, 10.0)),
        "fs_read_bps": Truth("counter", block_bps + swapins * PAGE),
        "sc_io_read_bps": Truth("counter", block_bps + swapins * PAGE),
        "sc_majfault_ps": Truth("counter", faults),
        "sc_swapin_ps": Truth("counter", swapins),
        "sc_oom_kills": Truth("counter", _oom_kills(plan, tl, rng)),
        "sc_psi_cpu_some": Truth("counter", np.clip(throttled * 0.7 + 0.15 * decode * decode, 0, 1)),
        "sc_psi_io_some": Truth("counter", io_some),
        "sc_psi_io_full": Truth("counter", io_some * float(rng.uniform(0.1, 0.5))),
        "sc_psi_mem_some": Truth("counter", mem_some),
        "sc_psi_mem_full": Truth("counter", mem_some * float(rng.uniform(0.3, 0.7))),
        "sc_procs_running": Truth("gauge", np.round(workers * decode + plan.gpus * 0.8)),
        "sc_procs_iowait": Truth("gauge", np.round(workers * read * 0.8) if blocking else np.zeros(n)),
        "sc_procs_busy": Truth(
            "gauge", np.round(workers * np.clip(2 * decode - 1, 0, 1)) + plan.gpus * (cores > plan.gpus)
        ),
    }
    out.update(_memory(plan, stall, rng, n))
    out.update(_node(plan, tl, rng, cores, read_bps, block_bps, faults, swapins, out))
    return out


def _throttled(plan: Plan, cores: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Share of CFS periods throttled: near every period when demand sits on the quota, a little otherwise."""
    if not plan.cpu_limit:
        return np.zeros_like(cores)
    near = np.clip((cores / plan.cpu_limit - 0.85) / 0.15, 0.0, 1.0)
    return np.clip(near * float(rng.uniform(0.6, 0.97)) + rng.uniform(0.0, 0.05, cores.shape), 0.0, 1.0)


def _memory(plan: Plan, stall: FloatArray, rng: np.random.Generator, n: int) -> dict[str, Truth]:
    limit = plan.mem_limit
    pressed = plan.mechanism.name in ("host-swap-in", "page-cache-reclaim")
    ceiling = limit if limit else plan.node_mem * plan.gpus / plan.node_gpus
    level = float(rng.uniform(0.95, 0.995)) if pressed else float(rng.uniform(0.3, 0.85))
    ws = ceiling * np.clip(level + rng.normal(0, 0.005, n), 0.0, 1.0)
    return {
        "mem_working_set_bytes": Truth("gauge", ws),
        "mem_limit_bytes": Truth("gauge", np.full(n, limit if limit else np.nan)),
        "cpu_limit_cores": Truth("gauge", np.full(n, plan.cpu_limit if plan.cpu_limit else np.nan)),
    }


def _node(
    plan: Plan,
    tl: Timeline,
    rng: np.random.Generator,
    cores: FloatArray,
    read_bps: FloatArray,
    block_bps: FloatArray,
    faults: FloatArray,
    swapins: FloatArray,
    pod: dict[str, Truth],
) -> dict[str, Truth]:
    """Node-exporter on the pod's node: the pod plus other tenants (neighbours) and the kernel's own work."""
    n, cpus = len(tl.phase), float(plan.node_cpus)
    hood = plan.neighbours
    other_cpu = hood * rng.uniform(1.0, 16.0) * rng.lognormal(0, 0.3, n)
    other_disk = hood * rng.uniform(0, 4e8) * rng.lognormal(0, 0.5, n)
    other_net = hood * rng.uniform(0, 2e9) * rng.lognormal(0, 0.5, n)
    iowait_procs = pod["sc_procs_iowait"].value + hood * rng.uniform(0, 2, n)
    stall = pod["sc_psi_mem_some"].value
    system = (0.08 * cores + 3.0 * stall + 0.02 * other_cpu) / cpus
    busy = np.clip((cores + other_cpu) / cpus, 0.0, 1.0)
    iowait = np.clip(iowait_procs * 0.6 / cpus, 0.0, 1.0 - busy)
    inter = _fabric_bytes(plan, tl, rng)
    eth = inter if plan.fabric is not None and not plan.fabric.rdma else np.zeros(n)
    ckpt = np.where(tl.phase == CHECKPOINT, rng.uniform(1e9, 5e9), 0.0)
    net_rx = (read_bps if plan.storage.via_network else 0.0) + eth + other_net + 2e6
    disk = block_bps + other_disk + (swapins * PAGE if plan.swap else 0.0)
    device = 3.5e9 if plan.storage.name == "throttled-pv" else plan.storage.bps
    out = {
        "node_cpus": Truth("gauge", np.full(n, cpus)),
        "node_cpu_busy_frac": Truth("ratio", busy * cpus, np.full(n, cpus)),
        "node_cpu_iowait_frac": Truth("ratio", iowait * cpus, np.full(n, cpus)),
        "node_cpu_system_frac": Truth("ratio", np.minimum(system, busy) * cpus, np.full(n, cpus)),
        "node_disk_read_bps": Truth("counter", disk),
        "node_disk_reads_ps": Truth(
            "counter", disk / (16384.0 if plan.mechanism.name == "mmap-dataset-faults" else 131072.0)
        ),
        "node_disk_busy_frac": Truth("counter", np.clip(disk / device * 1.1, 0.0, 1.0)),
        "node_mem_avail_frac": Truth(
            "gauge", np.clip(1.0 - pod["mem_working_set_bytes"].value / plan.node_mem - 0.05 * hood, 0.01, 1)
        ),
        "node_swap_used_frac": Truth(
            "gauge",
            np.full(n, rng.uniform(0.3, 0.9) if swapins.any() else (rng.uniform(0, 0.05) if plan.swap else 0.0)),
        ),
        "node_majfault_ps": Truth("counter", faults + hood * rng.uniform(0, 200)),
        "node_net_rx_bps": Truth("counter", net_rx),
        "node_net_tx_bps": Truth("counter", eth + ckpt + other_net * 0.5 + 1e6),
    }
    out.update(_node_pressure(pod, busy, hood, rng))
    if plan.fabric is not None and plan.fabric.rdma:
        out["ib_rx_bps"] = Truth("counter", inter)
        out["ib_tx_bps"] = Truth("counter", inter * float(rng.uniform(0.98, 1.02)))
    return out


def _node_pressure(pod: dict[str, Truth], busy: FloatArray, hood: int, rng: np.random.Generator) -> dict[str, Truth]:
    """Node PSI: the pod's own stalls, plus run-queue waits as the node fills and the neighbours' IO."""
    n = len(busy)
    return {
        "node_psi_cpu_some": Truth("counter", np.clip(0.5 * busy**4 + 0.3 * pod["sc_psi_cpu_some"].value, 0, 1)),
        "node_psi_io_some": Truth("counter", np.clip(pod["sc_psi_io_some"].value + 0.05 * hood * rng.random(n), 0, 1)),
        "node_psi_io_full": Truth("counter", pod["sc_psi_io_full"].value),
        "node_psi_mem_some": Truth("counter", pod["sc_psi_mem_some"].value),
        "node_psi_mem_full": Truth("counter", pod["sc_psi_mem_full"].value),
    }


def _fabric_bytes(plan: Plan, tl: Timeline, rng: np.random.Generator) -> FloatArray:
    """Bytes/s the node's share of the job sends across the fabric while its collectives run."""
    if plan.fabric is None:
        return np.zeros(len(tl.phase))
    link = busy_shares(plan, tl)["link"]
    return plan.fabric.node_bps * float(rng.uniform(0.7, 0.85)) * link * plan.gpus / plan.node_gpus


def _oom_kills(plan: Plan, tl: Timeline, rng: np.random.Generator) -> FloatArray:
    """Kills per second: now and then a data-loader worker of a pod squeezed against its memory limit."""
    kills = np.zeros(len(tl.phase))
    stepping = np.flatnonzero(tl.stepping > 0)
    pressed = plan.mechanism.name in ("host-swap-in", "page-cache-reclaim") and plan.mem_limit is not None
    if pressed and stepping.size and rng.random() < 0.3:
        kills[int(rng.choice(stepping))] = 1.0 / float(tl.stepping.max())
    return kills
