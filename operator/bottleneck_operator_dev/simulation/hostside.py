"""Host side of the state: the pods' cgroups (CPU, quota, memory, I/O, pressure) and their nodes.

Facts used (TELEMETRY.md): a CFS-throttled container leaves node CPUs partly idle; reads from NFS or an
object-store FUSE mount show as network receive bytes and iowait, never as block reads (node_disk_*,
cAdvisor fs_reads, cgroup io.stat); memory pressure with swap shows as memory pressure stalls, up to
tens of thousands of major faults a second and high system CPU from the kernel's swap work.
RDMA (InfiniBand, RoCE) bypasses the kernel's network stack: its bytes show only on the adapters' port
counters (node-exporter's infiniband collector).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.podnet import (
    NODE_NET_RX_BACKGROUND,
    NODE_NET_TX_BACKGROUND,
    PodNet,
    pod_network,
    pod_network_parts,
)
from bottleneck_operator_dev.simulation.scenario import Scenario
from bottleneck_operator_dev.simulation.state import CFS_PERIODS_PER_S, CPU_MODES, F, JobState, cumulative, rounded

# Kernel CPU per major fault: the page-in path plus direct reclaim charged to the faulting task, and
# kswapd's scanning on the node; under thrashing this adds whole cores of system time.
FAULT_CPU_S = 50e-6
RECLAIM_CPU_S = 100e-6


def node_sum(v: F, pod_node: tuple[int, ...], n_nodes: int) -> F:
    out = np.zeros((n_nodes, v.shape[-1]))
    np.add.at(out, np.asarray(pod_node), v)
    return out


def jitter(rng: np.random.Generator, v: F, sigma: float) -> F:
    return np.asarray(v * np.exp(rng.normal(0.0, sigma, size=np.shape(v))))


@dataclass(frozen=True)
class _Step:
    """The step model's per-sample quantities that the host side is computed from (see ``host_state``)."""

    sc: Scenario
    st: JobState
    rng: np.random.Generator
    x: dict[str, F]
    step: F
    sps: F
    a: F
    evaluation: F
    ckpt: F
    rel: F
    dt: F
    N: int


@dataclass(frozen=True)
class _PodHost:
    """Per-pod host quantities the node side sums up."""

    usage: F  # trainer cores
    sidecar_cpu: F
    faults_ps: F
    ws: F
    read_bps: F  # bytes/s the loader reads, wherever from
    block_bps: F  # of which from local block devices
    req: float  # read request size
    local: float  # 1.0 for local storage, else 0.0
    io_share: F
    io_some: F
    mem_some: F
    workers: float


def host_state(
    sc: Scenario,
    st: JobState,
    rng: np.random.Generator,
    *,
    x: dict[str, F],
    step: F,
    sps: F,
    a: F,
    evaluation: F,
    ckpt: F,
    rel: F,
    dt: F,
    N: int,
) -> None:
    """Fill ``st.pod``, ``st.node`` and ``st.neighbours`` from the step model's per-sample quantities.

    Args:
        sc: the scenario.
        st: the state to fill (GPU part already there).
        rng: the job's generator.
        x: per-pod, per-sample stage times (seconds per step).
        step: per-pod, per-sample step time.
        sps: samples/s per GPU while training.
        a: share of each interval spent in the training loop.
        evaluation / ckpt: share of each interval in evaluation / checkpointing.
        rel: seconds since the job started.
        dt: interval lengths.
        N: number of nodes.
    """
    c = _Step(sc, st, rng, x, step, sps, a, evaluation, ckpt, rel, dt, N)
    # The sections draw from ``rng`` in this order; reordering them changes every job.
    decode, usage, thr, faults_ps, sidecar_cpu = _pod_cpu(c)
    ws = _pod_memory(c, faults_ps)
    read_bps, req, local, block_bps = _pod_reads(c)
    io_share, io_some, mem_some, workers = _pod_pressure(c, usage)
    ph = _PodHost(
        usage, sidecar_cpu, faults_ps, ws, read_bps, block_bps, req, local, io_share, io_some, mem_some, workers
    )
    net = pod_network_parts(sc, read_bps=read_bps, local=local, a=a, evaluation=evaluation, step=step, ckpt=ckpt)
    nb_cpu, node_faults, mem_stall, reclaim, rx = _node_network(c, ph, net)
    oversubscribed = _node_cpu(c, ph, nb_cpu, reclaim, rx)
    _pod_cpu_pressure(c, decode, thr, oversubscribed)
    _node_disks(c, ph)
    _node_memory_psi(c, ph, node_faults, mem_stall, oversubscribed)
    pod_network(sc, st, net, dt)  # the pods' own network bytes, from a generator of their own


def _pod_cpu(c: _Step) -> tuple[F, F, F, F, F]:
    """CPU of the trainer container: (decode cores, usage, throttled share, major faults/s, collector cores)."""
    sc, st, rng, a, dt = c.sc, c.st, c.rng, c.a, c.dt
    P, n = c.step.shape
    gpp = sc.gpus_per_pod
    decode = a * np.minimum(c.x["cpu"], c.step) / c.step * sc.loader_cores
    # The training process: a launch-bound one keeps a core per GPU busy launching. Otherwise it
    # launches, and spins in the CUDA synchronisation while its GPU runs, and sleeps on the loader's
    # queue while the step waits for input (0.03 and 0.06 cores: gpu-io, gpu-objectstore). Every
    # recorded loop whose device was busy held a full core: 1.00 in gpu-compute, gpu-hbm, gpu-launch,
    # gpu-launch-wide, gpu-h2d and gpu-h2d-pinned alike, so it counts among the busy processes.
    spin = rng.uniform(0.9, 1.0)
    x = c.x
    device = np.maximum(np.maximum(x["flops"], np.maximum(x["h2d"], x["comm"])), np.maximum(x["host_mem"], x["dram"]))
    waiting = np.clip((np.maximum(x["io"], x["cpu"]) - device) / c.step, 0.0, 1.0)
    main = gpp * (1.0 if sc.kernel_duty < 1 else np.clip(0.05 + spin * (1.0 - waiting), 0.0, 1.0)) * (0.3 + 0.7 * a)
    startup = (1 - a) * (1 - c.ckpt) * rng.uniform(1.0, 2.5) * (c.rel < sc.env.startup_s * 1.5)
    faults_ps = c.sps * gpp * sc.faults_per_sample + rng.uniform(0.0, 2.0, (P, n))
    if sc.env.mmap_dataset and not sc.env.dataset_cached:  # a major fault per page-cache miss (128 KiB readahead)
        faults_ps = faults_ps + c.sps * gpp * sc.bytes_per_sample / (128 * 1024)
    demand = jitter(rng, decode + main + startup + c.ckpt * 1.0, 0.04) + faults_ps * FAULT_CPU_S
    limit = sc.cpu_limit
    if limit is not None:
        usage = np.minimum(demand, limit * rng.uniform(0.95, 0.99, (P, n)))
        r = demand / limit
        thr = np.where(r > 0.9, 0.55 + 0.4 * np.clip((r - 0.9) / 0.2, 0, 1), 0.25 * np.clip(r, 0, 1) ** 4)
        thr = np.clip(thr + rng.normal(0, 0.03, (P, n)) + rng.uniform(0, 0.06, (P, n)), 0.0, 1.0)
        st.pod["cfs_periods_c"] = cumulative(np.full((P, n), CFS_PERIODS_PER_S), dt)
        st.pod["cfs_throttled_c"] = cumulative(thr * CFS_PERIODS_PER_S, dt)
        st.pod["cfs_throttled_s_c"] = cumulative(np.maximum(demand - usage, 0.0) * 0.8 + thr * 0.05, dt)
    else:
        usage = demand
        thr = np.zeros((P, n))
    sidecar_cpu = rng.uniform(0.002, 0.01, (P, n))
    # A loader that is the slowest stage never waits (its prefetch queue never fills): it is busy all
    # the time, whatever else the step spends; otherwise as far as it keeps up with the slowest stage.
    fill = a * np.clip(c.x["cpu"] / np.maximum(st.pod["slowest_s"], 1e-9), 0.0, 1.0)
    st.pod["procs_busy"] = _busy_processes(sc, fill, main, usage / np.maximum(demand, 1e-9))
    st.pod["cpu_c"] = cumulative(usage, dt)
    st.pod["cpu_sc_c"] = cumulative(sidecar_cpu, dt)
    return decode, usage, thr, faults_ps, sidecar_cpu


def _busy_processes(sc: Scenario, fill: F, main: F, quota: F) -> F:
    """Processes at a full core: loader workers and trainer processes, each at 0.9 of a core or more.

    A worker is pinned when the loader is busy all the time (``fill``, its busy share) and nothing
    shares its core: a CFS quota (``quota``, the share of demand it grants) or more workers than the
    pod's share of the node's cores (they time-slice) leaves each worker less. The pod's CPU pressure
    reads the whole node's oversubscription instead (:func:`_pod_cpu_pressure`), which is known only
    once the node's CPU is.
    """
    workers = max(1.0, round(sc.loader_cores))
    # Workers time-slice only when there are more of them than cores: sixteen workers on sixteen
    # cores kept eleven processes at a full core (tests/data/gpu-saturated, busy_processes).
    contention = np.clip((sc.loader_cores / sc.cpu_share - 1.0) / 0.4, 0, 1)
    share = quota * (1.0 - 0.25 * contention**2)
    gpp = sc.gpus_per_pod
    return np.asarray(np.round(workers * _pinned(fill * share) + gpp * _pinned(main / gpp * share)))


def _pinned(cores: F) -> F:
    """The share of processes using ``cores`` each (on average) that read 0.9 of a core or more."""
    return np.clip((cores - 0.85) / 0.1, 0.0, 1.0)


def _pod_memory(c: _Step, faults_ps: F) -> F:
    """Memory of the trainer container; returns its working set."""
    sc, st, rng, env = c.sc, c.st, c.rng, c.sc.env
    P, n = c.step.shape
    cap_mem = env.mem_limit_bytes or sc.node_mem_bytes / sc.pods_per_node * 0.35
    ramp = np.clip(c.rel / max(env.startup_s, 1.0), 0.3, 1.0)
    ws = cap_mem * env.mem_ws_frac * ramp * np.exp(rng.normal(0, 0.005, (P, n)))
    # The working set is usage minus inactive files: the active page cache of the data read stays in
    # it (HTTP readers keep no page cache).
    if cat.STORAGE_KINDS[sc.storage].iowait_factor > 0:
        ws = np.minimum(ws + cap_mem * env.active_cache_frac * ramp, cap_mem * 0.99)
    if env.mem_limit_bytes:
        ws = np.minimum(ws, env.mem_limit_bytes * 0.998)
    st.pod["ws"] = ws
    st.pod["mem_limit"] = np.full((P, n), env.mem_limit_bytes or 0.0)
    st.pod["mem_current"] = np.minimum(ws * rng.uniform(1.05, 1.4), env.mem_limit_bytes or np.inf)
    st.pod["majfault_c"] = cumulative(faults_ps, c.dt)
    st.pod["oom_c"] = np.zeros((P, n))
    return np.asarray(ws)


def _pod_reads(c: _Step) -> tuple[F, float, float, F]:
    """Storage reads (local block devices only reach fs_reads / io.stat): (read B/s, request, local, block B/s)."""
    sc, st, rng, env = c.sc, c.st, c.rng, c.sc.env
    P, n = c.step.shape
    # Start-up reads the model/checkpoint (weights + optimizer state, ~2x the gradient bytes) once.
    load = (c.rel < env.startup_s) * (1 - c.a) * sc.grad_bytes * 2 / max(env.startup_s, 1.0) / sc.n_pods
    samples = 0.0 if env.dataset_cached else 1.0  # served from the page cache: no device or network reads
    read_bps = c.sps * sc.gpus_per_pod * sc.bytes_per_sample * samples + load
    req = rng.uniform(64e3, 512e3)
    local = 0.0 if cat.STORAGE_KINDS[sc.storage].network else 1.0
    block_bps = read_bps * local + rng.uniform(0, 2e4, (P, n))
    st.pod["fs_read_c"] = cumulative(block_bps, c.dt)
    st.pod["fs_reads_c"] = cumulative(block_bps / req, c.dt)
    return read_bps, float(req), local, block_bps


def _pod_pressure(c: _Step, usage: F) -> tuple[F, F, F, float]:
    """IO and memory pressure and process states of the pod's cgroup: (I/O share, io some, memory
    some, loader workers); its CPU pressure comes once the node's load is known (:func:`_pod_cpu_pressure`)."""
    sc, st, rng, x, step, a = c.sc, c.st, c.rng, c.x, c.step, c.a
    P, n = step.shape
    io_share = np.clip(a * np.minimum(x["io"], step) / step, 0, 1) * (x["io"] / (x["io"] + x["cpu"]))
    io_some = np.clip(1.2 * io_share * cat.STORAGE_KINDS[sc.storage].iowait_factor + rng.normal(0, 0.02, (P, n)), 0, 1)
    mem_some = np.clip(a * np.minimum(x["host_mem"], step) / step * 0.9 + rng.uniform(0, 0.01, (P, n)), 0, 1)
    pod_psi = {"io_some": io_some, "io_full": io_some * rng.uniform(0.2, 0.6), "mem_some": mem_some,
               "mem_full": mem_some * 0.5}  # fmt: skip
    for k, v in pod_psi.items():
        st.pod[f"psi_{k}_c"] = cumulative(np.clip(v, 0, 1), c.dt)
    workers = max(1.0, round(sc.loader_cores))
    st.pod["procs_running"] = rounded(np.maximum(jitter(rng, usage, 0.15), 0.0))
    # Only uninterruptible (D-state) waits count here: HTTP readers sleep on sockets (S state).
    d_state = float(cat.STORAGE_KINDS[sc.storage].iowait_factor > 0)
    st.pod["procs_iowait"] = rounded(np.maximum(workers * io_share * d_state * (1 + rng.normal(0, 0.2, (P, n))), 0.0))
    st.pod["procs_sleeping"] = rounded(rng.uniform(20, 120) + rng.normal(0, 2, (P, n)))
    return io_share, io_some, mem_some, workers


def _node_network(c: _Step, ph: _PodHost, net: PodNet) -> tuple[F, F, F, F, F]:
    """Neighbours and node network: (neighbour cores, node faults/s, memory stall, reclaim cores, receive B/s)."""
    st, rng, env, N, dt, pn = c.st, c.rng, c.sc.env, c.N, c.dt, c.st.pod_node
    n = c.step.shape[1]
    nb_k = max(env.neighbour_pods, 0)
    nb_cpu = env.neighbour_cpu * np.exp(rng.normal(0, 0.15, (N, n)))
    if nb_k:
        split = rng.dirichlet(np.ones(nb_k), size=N)[:, :, None]
        st.neighbours["cpu_c"] = cumulative(nb_cpu[:, None, :] * split, dt)
        st.neighbours["ws"] = np.broadcast_to(rng.uniform(1, 32, (N, nb_k, 1)) * cat.GIB, (N, nb_k, n)).copy()
    node_faults = node_sum(ph.faults_ps, pn, N) + rng.uniform(0, 20, (N, n))
    mem_stall = node_sum(ph.mem_some, pn, N)
    reclaim = node_faults * RECLAIM_CPU_S * (mem_stall > 0.05)
    # the node's interfaces carry its pods' own bytes (RDMA's never), the neighbours' and its own
    comm_node = node_sum(net.comm, pn, N)
    net_storage = node_sum(net.storage, pn, N)
    ckpt_bytes_ps = node_sum(net.ckpt, pn, N)
    rx = net_storage + comm_node + env.neighbour_net_bps * np.exp(rng.normal(0, 0.2, (N, n))) + NODE_NET_RX_BACKGROUND
    tx = comm_node + ckpt_bytes_ps + env.neighbour_net_bps * 0.2 + NODE_NET_TX_BACKGROUND
    st.node["net_rx_c"] = cumulative(jitter(rng, rx, 0.03), dt, rng.uniform(1e12, 1e14, (N, 1)))
    st.node["net_tx_c"] = cumulative(jitter(rng, tx, 0.03), dt, rng.uniform(1e12, 1e14, (N, 1)))
    return nb_cpu, node_faults, mem_stall, reclaim, rx


def _pod_cpu_pressure(c: _Step, decode: F, thr: F, oversubscribed: F) -> None:
    """The pod's CPU pressure: its throttled periods, and without a quota its loader's waits for a core.

    A runnable task waits for a CPU only when the node has more runnable tasks than cores. A busy
    node is not enough: sixteen loader workers on a 16-core node, 14.6 cores busy, read CPU pressure
    0.006 (tests/data/gpu-saturated), and one worker with cores to spare 0.0 (tests/data/gpu-loader).
    """
    sc, st = c.sc, c.st
    contention = oversubscribed[np.asarray(st.pod_node)]
    waits = 0.35 * decode / max(sc.loader_cores, 1e-9) * contention * (sc.cpu_limit is None)
    cpu_some = np.clip(thr * 0.85 + waits, 0, 1)
    st.pod["psi_cpu_some_c"] = cumulative(cpu_some, c.dt)
    st.pod["psi_cpu_full_c"] = cumulative(cpu_some * 0.1, c.dt)


# Runnable work against the node's cores from which tasks wait for a CPU, and the excess at which
# most of them do (the pressure's ramp).
OVERSUBSCRIBED_FROM = 0.95
OVERSUBSCRIBED_SPAN = 0.25


def _node_cpu(c: _Step, ph: _PodHost, nb_cpu: F, reclaim: F, rx: F) -> F:
    """Node CPU time per mode; returns how far runnable work oversubscribes each node's cores (0:
    every runnable task has a core, 1: most wait)."""
    sc, st, rng, env, N, pn = c.sc, c.st, c.rng, c.sc.env, c.N, c.st.pod_node
    n = c.step.shape[1]
    ncpu = float(sc.node_cpus)
    job_cpu = node_sum(ph.usage + ph.sidecar_cpu, pn, N)
    job_user = job_cpu * 0.85
    job_sys = job_cpu * 0.15 + reclaim
    softirq = rx / 1e9 * 0.25
    nb_user = nb_cpu * 0.85
    system = job_sys + nb_cpu * 0.15 + 0.3 + 0.01 * ncpu
    demand = job_user + nb_user + system + softirq
    busy_cores = np.minimum(demand, ncpu * 0.995)
    scale = busy_cores / np.maximum(demand, 1e-9)
    idle_cores = ncpu - busy_cores
    storage = cat.STORAGE_KINDS[sc.storage]
    blocked = node_sum(ph.io_share * ph.workers * storage.iowait_factor, pn, N) + env.neighbour_io_wait * 3
    iowait = np.minimum(idle_cores * 0.9, blocked * rng.uniform(0.5, 1.0))
    cores = {
        "user": (job_user + nb_user) * scale, "nice": np.full((N, n), 0.001 * ncpu), "system": system * scale,
        "iowait": iowait, "irq": np.full((N, n), 0.0005 * ncpu), "softirq": softirq * scale,
        "steal": np.zeros((N, n)),
    }  # fmt: skip
    cores["idle"] = np.maximum(ncpu - sum(cores.values()), 0.0)
    frac = np.stack([cores[m] / ncpu for m in CPU_MODES], axis=1)  # (N, modes, n)
    uptime = rng.uniform(2, 60, (N, 1, 1)) * 86400 * ncpu
    st.node["cpu_c"] = cumulative(frac * ncpu, c.dt, uptime * np.array([0.1, 0, 0.02, 0.86, 0.01, 0, 0.01, 0])[:, None])
    oversubscribed = np.clip((demand / ncpu - OVERSUBSCRIBED_FROM) / OVERSUBSCRIBED_SPAN, 0, 1)
    return np.asarray(oversubscribed)


def _node_disks(c: _Step, ph: _PodHost) -> None:
    """Block devices: the root disk (OS, logs; neighbours without their own volume) and, for local
    storage, the data disk the job reads; each row of the arrays below is one device."""
    sc, st, rng, env, N, dt, pn = c.sc, c.st, c.rng, c.sc.env, c.N, c.dt, c.st.pod_node
    n = c.step.shape[1]
    local = ph.local
    nb_disk = env.neighbour_disk_bps * np.exp(rng.normal(0, 0.1, (N, n)))
    root_bps = rng.uniform(2e4, 2e5, (N, n)) + nb_disk * (1 - local)
    root_busy = rng.uniform(0.003, 0.03, (N, n)) + nb_disk * (1 - local) / 3e9  # root: an NVMe Gen3
    dev_bps = [root_bps]
    dev_busy = [root_busy]
    if local:
        job_disk = node_sum(ph.block_bps, pn, N)
        dev_bps.append(job_disk + nb_disk)
        # io_time counts the time at least one request is in flight. A SATA disk serves about one at a
        # time, so that is its load; an NVMe drive serves thousands in parallel and reads ~100 % busy
        # far below its throughput (docs/telemetry.md, "What the signals mean").
        if cat.STORAGE_KINDS[sc.storage].device.startswith("nvme"):
            in_flight = (node_sum(ph.read_bps, pn, N) + nb_disk) / ph.req * rng.uniform(1e-4, 3e-4)
            dev_busy.append(1.0 - np.exp(-in_flight))
        else:
            dev_busy.append(node_sum(ph.read_bps, pn, N) / sc.storage_bw_bps + nb_disk / sc.storage_cap_bps)
    bps = np.stack(dev_bps, axis=1)  # (N, D, n)
    st.node["disk_read_c"] = cumulative(bps, dt, rng.uniform(1e11, 1e13, (N, len(dev_bps), 1)))
    st.node["disk_reads_c"] = cumulative(bps / ph.req, dt, rng.uniform(1e6, 1e8, (N, len(dev_bps), 1)))
    busy = np.clip(jitter(rng, np.stack(dev_busy, axis=1), 0.05), 0, 1)
    st.node["disk_io_time_c"] = cumulative(busy, dt, rng.uniform(1e4, 1e6, (N, len(dev_bps), 1)))


def _node_memory_psi(c: _Step, ph: _PodHost, node_faults: F, mem_stall: F, oversubscribed: F) -> None:
    """Node memory, swap, major faults and pressure stalls."""
    sc, st, rng, env, N, dt, pn, rel = c.sc, c.st, c.rng, c.sc.env, c.N, c.dt, c.st.pod_node, c.rel
    n = c.step.shape[1]
    node_mem = sc.node_mem_bytes
    job_ws = node_sum(ph.ws, pn, N)
    avail = node_mem * (1 - env.node_mem_used_frac) - job_ws * (env.mem_limit_bytes is not None or 0.2)
    st.node["mem_total"] = np.full((N, n), node_mem)
    st.node["mem_avail"] = np.clip(jitter(rng, avail, 0.01), node_mem * 0.004, node_mem)
    st.node["swap_total"] = np.full((N, n), env.swap_bytes)
    growth = 0.15 * rel / max(rel[-1], 1.0) * (mem_stall > 0.05)
    st.node["swap_free"] = env.swap_bytes * np.clip(1 - env.swap_used_frac - growth, 0.0, 1.0)
    st.node["majfault_c"] = cumulative(node_faults, dt, rng.uniform(1e4, 1e7, (N, 1)))

    node_psi = {
        "cpu_some": oversubscribed * 0.8 + 0.01,
        "io_some": 1 - (1 - np.clip(node_sum(ph.io_some, pn, N), 0, 1)) * (1 - env.neighbour_io_wait),
        "mem_some": np.clip(mem_stall, 0, 1),
    }
    node_psi["io_full"] = node_psi["io_some"] * rng.uniform(0.2, 0.5)
    node_psi["mem_full"] = node_psi["mem_some"] * 0.5
    for k, v in node_psi.items():
        st.node[f"psi_{k}_c"] = cumulative(np.clip(jitter(rng, v, 0.05), 0, 1), dt, rng.uniform(1e3, 1e6, (N, 1)))
