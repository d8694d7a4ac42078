"""What the host-side exporters show of a family-I job: cAdvisor, kube-state-metrics, node-exporter, the sidecar.

The loader's cores come from the decode stage (core-seconds per step over the step), the trainer
keeps about a core per GPU busy, reads come from the read stage at the storage's bandwidth (from the
page cache when the dataset fits it), and host-memory stalls show as the kernel does: memory
pressure (PSI, Documentation/accounting/psi.rst), swap-ins and major faults, reclaim work as system
time, OOM kills at a cgroup limit (cgroup-v2.rst). Reads that block (block devices, NFS) leave
readers in D state and count as iowait and io pressure; object-store readers wait in sockets and
show only as network bytes and their own CPU. Node-level signals add the neighbours' share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyi.plan import Plan
from bottleneck_operator_dev.familyi.scrape import FloatArray
from bottleneck_operator_dev.familyi.series import Levels
from bottleneck_operator_dev.familyi.stages import Stages

GIB = 1024.0**3
PAGE = 4096.0
CFS_PERIODS_PER_S = 10.0  # the default 100 ms CFS period


@dataclass(frozen=True)
class HostMemory:
    """How host memory behaves for the job.

    Attributes:
        limit: the containers' memory limit (B), None without one.
        node_wide: the pressure comes from the node (overcommitted by neighbours), not the pod's limit.
        swap: the node has swap (Kubernetes NodeSwap); without it, pressure shows as refaults only.
    """

    limit: float | None
    node_wide: bool
    swap: bool


def draw_memory(rng: np.random.Generator, plan: Plan, pressured: bool) -> HostMemory:
    """The job's memory set-up; a pressured job either hits its own limit or shares a starved node."""
    limit = float(plan.gpus * rng.uniform(24, 160) * GIB) if rng.random() < 0.6 else None
    node_wide = pressured and (limit is None or rng.random() < 0.3)
    swap = rng.random() < (0.75 if pressured else 0.3)
    return HostMemory(limit, node_wide, swap)


def host_levels(rng: np.random.Generator, plan: Plan, stages: Stages, mem: HostMemory, cores_eff: float) -> Levels:
    """Each host signal's level per pod (one pod of the job per node)."""
    n, t = plan.pods, stages.step()
    lv = Levels(n)
    read_bps = stages.read * plan.storage.bps * rng.uniform(0.75, 0.95) / t
    _cpu(rng, plan, stages, read_bps, cores_eff, lv)
    _io(rng, plan, stages, read_bps, lv)
    _memory(rng, plan, stages, mem, read_bps, lv)
    _network(rng, plan, stages, read_bps, lv)
    return lv


def _cpu(rng: np.random.Generator, plan: Plan, stages: Stages, read_bps: float, cores_eff: float, lv: Levels) -> None:
    n, t, g = plan.pods, stages.step(), plan.gpus
    trainer = g * rng.uniform(0.75, 1.05, n)
    loader = stages.decode * cores_eff / t * rng.uniform(0.97, 1.03, n)
    reader = read_bps / 0.4e9 if not plan.storage.blocks_in_d else read_bps / 4e9  # TLS and HTTP parsing cost cores
    reclaim = stages.host_stall / t * g * rng.uniform(0.3, 1.0)
    demand = trainer + loader + reader + reclaim
    limit = plan.cpu_limit
    used = np.minimum(demand, limit * rng.uniform(0.95, 0.99)) if limit is not None else demand
    lv.add("cpu_cores", used, g * 0.9, 0.05, kind="counter")
    lv.add("sc_cpu_cores", used + 0.03, g * 0.9 + 0.03, 0.05, kind="counter")
    if limit is not None:
        # Throttled in the periods where the workers run against the quota; micro-bursts otherwise.
        active = min(1.0, stages.decode / t)
        at_quota = trainer + cores_eff + reader + reclaim >= 0.9 * limit
        bursts = rng.uniform(0.0, 0.2, n) * demand / limit
        thr = np.where(at_quota, active * rng.uniform(0.8, 1.0, n) + (1 - active) * bursts, bursts)
        periods = CFS_PERIODS_PER_S
        lv.add("cpu_throttled_frac", thr * periods, 0.01 * periods, 0.1, hi=1.0, kind="ratio", denom=periods)
        lv.add("sc_throttled_frac", thr * 0.97 * periods, 0.01 * periods, 0.1, hi=1.0, kind="ratio", denom=periods)
        lv.add("cpu_limit_cores", limit, limit, 0.0)
    else:
        thr = np.zeros(n)
    _node_cpu(rng, plan, used, reclaim, thr, lv)
    per_worker = loader / plan.workers
    workers_busy = np.where(per_worker >= 0.9, plan.workers, 0.0)
    lv.add("sc_procs_running", used, 1.0, 0.0, integer=True)
    lv.add("sc_procs_busy", np.where(trainer / g >= 0.9, g, 0.0) + workers_busy, 1.0, 0.0, integer=True)


def _node_cpu(
    rng: np.random.Generator, plan: Plan, used: FloatArray, reclaim: float, thr: FloatArray, lv: Levels
) -> None:
    """The node's CPU as node-exporter sees it (the neighbours' load included) and CPU pressure."""
    n, g, cpus = plan.pods, plan.gpus, float(plan.node.cpus)
    node_busy = used + plan.neighbour_cpu * rng.uniform(0.9, 1.1, n)
    full = node_busy >= 0.95 * cpus
    lv.add("node_cpus", cpus, cpus, 0.0)
    lv.add(
        "node_cpu_busy_frac",
        np.minimum(node_busy, cpus),
        plan.neighbour_cpu + g,
        0.04,
        hi=1.0,
        kind="ratio",
        denom=cpus,
    )
    system = 0.06 * node_busy + 2.0 * reclaim
    lv.add("node_cpu_system_frac", system, 0.05 * plan.neighbour_cpu, 0.08, hi=1.0, kind="ratio", denom=cpus)
    lv.add(
        "sc_psi_cpu_some", np.clip(0.8 * thr + np.where(full, 0.6, 0.02), 0.0, 1.0), 0.01, 0.1, hi=1.0, kind="counter"
    )
    busy_node = np.clip(node_busy / cpus, 0.0, 1.0)
    lv.add(
        "node_psi_cpu_some",
        np.where(full, rng.uniform(0.5, 0.95, n), busy_node**3 * 0.5),
        0.01,
        0.1,
        hi=1.0,
        kind="counter",
    )


def _io(rng: np.random.Generator, plan: Plan, stages: Stages, read_bps: float, lv: Levels) -> None:
    n, t, st = plan.pods, stages.step(), plan.storage
    miss = 1.0 - plan.cache_hit
    device = read_bps * miss if st.block else 0.0
    neighbour_disk = rng.uniform(0.0, 0.15) * st.bps if plan.neighbours and st.block else rng.uniform(0.0, 5e6)
    local = np.full(n, device) * rng.uniform(0.95, 1.05, n)
    lv.add("fs_read_bps", local, 0.0, 0.12, kind="counter")
    lv.add("sc_io_read_bps", local, 0.0, 0.12, kind="counter")
    node_read = local + neighbour_disk
    lv.add("node_disk_read_bps", node_read, neighbour_disk, 0.1, kind="counter")
    lv.add("node_disk_reads_ps", node_read / st.req_bytes, neighbour_disk / st.req_bytes, 0.15, kind="counter")
    dev_bps = st.bps if st.block else 3.5e9  # without block storage the node's own disk holds only logs
    busy = np.clip(node_read / dev_bps * (rng.uniform(0.8, 1.1) if st.deep_queue else rng.uniform(1.0, 1.3)), 0.0, 1.0)
    lv.add("node_disk_busy_frac", busy, neighbour_disk / dev_bps, 0.08, hi=1.0, kind="counter")
    waits = stages.read / t * miss if st.blocks_in_d else rng.uniform(0.0, 0.02)
    some = np.clip(waits * rng.uniform(0.75, 1.0, n), 0.0, 1.0)
    full = some * rng.uniform(0.2, 0.6, n)
    lv.add("sc_psi_io_some", some, 0.02, 0.1, hi=1.0, kind="counter")
    lv.add("sc_psi_io_full", full, 0.01, 0.1, hi=1.0, kind="counter")
    other = rng.uniform(0.0, 0.15) if plan.neighbours else rng.uniform(0.0, 0.02)
    lv.add("node_psi_io_some", 1.0 - (1.0 - some) * (1.0 - other), other, 0.1, hi=1.0, kind="counter")
    lv.add("node_psi_io_full", full + other * 0.3, other * 0.3, 0.1, hi=1.0, kind="counter")
    d_state = plan.workers * (stages.read / t * miss if st.blocks_in_d else 0.0) * rng.uniform(0.5, 0.9)
    lv.add("sc_procs_iowait", np.full(n, d_state), 0.0, 0.0, integer=True)
    cpus = float(plan.node.cpus)
    lv.add(
        "node_cpu_iowait_frac",
        np.full(n, min(d_state, 0.5 * cpus) + other * 2),
        other,
        0.15,
        hi=1.0,
        kind="ratio",
        denom=cpus,
    )


def _memory(rng: np.random.Generator, plan: Plan, stages: Stages, mem: HostMemory, read_bps: float, lv: Levels) -> None:
    n, h = plan.pods, stages.host_stall / stages.step()
    pressured = h > 0.02
    cap = mem.limit if mem.limit is not None else plan.gpus * 96 * GIB
    ws = cap * (rng.uniform(0.95, 0.995, n) if pressured and not mem.node_wide else rng.uniform(0.2, 0.8, n))
    lv.add("mem_working_set_bytes", ws, ws, 0.01, hi=cap)
    lv.add("mem_limit_bytes", mem.limit if mem.limit is not None else np.nan, mem.limit or np.nan, 0.0)
    squeeze = pressured and mem.node_wide
    avail = rng.uniform(0.005, 0.04, n) if squeeze else rng.uniform(0.2, 0.85, n)
    lv.add("node_mem_avail_frac", avail, avail, 0.05, hi=1.0)
    swap_used = rng.uniform(0.2, 0.95, n) if pressured and mem.swap else rng.uniform(0.0, 0.08, n) * mem.swap
    lv.add("node_swap_used_frac", swap_used, swap_used, 0.02, hi=1.0)
    paging = h * rng.uniform(2e4, 8e4, n)  # pages/s a swap device or refaulting page cache sustains
    swapin = paging if mem.swap else np.zeros(n)
    mmap = read_bps / PAGE * rng.uniform(0.05, 0.3) if plan.mmap_dataset else 0.0
    faults = paging * rng.uniform(1.0, 1.2, n) + mmap + rng.uniform(0.0, 5.0, n)
    lv.add("sc_swapin_ps", swapin, swapin, 0.2, kind="counter")
    lv.add("sc_majfault_ps", faults, paging, 0.2, kind="counter")
    lv.add("node_majfault_ps", faults + rng.uniform(0.0, 50.0) * plan.neighbours, paging, 0.2, kind="counter")
    some = np.clip(h * rng.uniform(1.0, 1.5, n) + rng.uniform(0.0, 0.005, n), 0.0, 1.0)
    lv.add("sc_psi_mem_some", some, some, 0.15, hi=1.0, kind="counter")
    lv.add("sc_psi_mem_full", some * rng.uniform(0.3, 0.7, n), some * 0.3, 0.15, hi=1.0, kind="counter")
    node_some = some * (rng.uniform(0.8, 1.0, n) if squeeze else rng.uniform(0.2, 0.7, n))
    lv.add("node_psi_mem_some", node_some, node_some, 0.15, hi=1.0, kind="counter")
    lv.add("node_psi_mem_full", node_some * rng.uniform(0.2, 0.6, n), node_some * 0.2, 0.15, hi=1.0, kind="counter")
    oom = rng.uniform(1 / 1800, 1 / 300) if pressured and mem.limit is not None and rng.random() < 0.3 else 0.0
    lv.add("sc_oom_kills", oom, oom, 0.0, kind="counter", poisson=True)


def _network(rng: np.random.Generator, plan: Plan, stages: Stages, read_bps: float, lv: Levels) -> None:
    t, fab = stages.step(), plan.fabric
    inter = stages.inter * fab.bps * rng.uniform(0.7, 0.9) / t if plan.pods > 1 else 0.0
    remote = 0.0 if plan.storage.block else read_bps
    tcp = 0.0 if fab.rdma else inter
    daemons = rng.uniform(1e6, 2e7)
    base = daemons + (rng.uniform(1e6, 2e8) if plan.neighbours else 0.0)
    upload = rng.uniform(0.3, 2.0) * 1e9  # the checkpoint written to remote storage
    lv.add("node_net_rx_bps", remote + tcp + base, base, 0.1, kind="counter")
    lv.add("node_net_tx_bps", tcp + base * 0.5, upload, 0.1, kind="counter")
    # the pod's own namespace (the sidecar's count): its remote reads, its collectives over sockets,
    # its checkpoint upload and its own metrics and logs (a twentieth of the node's background);
    # not the neighbours' or the daemons' bytes, nor collectives over RDMA
    own = 0.05 * daemons
    lv.add("sc_net_rx_bps", remote + tcp + own, own, 0.1, kind="counter")
    lv.add("sc_net_tx_bps", tcp + own * 0.5, upload, 0.1, kind="counter")
    if fab.rdma:
        lv.add("ib_rx_bps", inter + 1e4, 1e4, 0.08, kind="counter")
        lv.add("ib_tx_bps", inter + 1e4, 1e4, 0.08, kind="counter")
