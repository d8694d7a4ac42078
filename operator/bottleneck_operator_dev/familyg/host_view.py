"""What the host-side exporters show of a design: cAdvisor, kube-state-metrics, node-exporter, the sidecar.

Definitions followed (kernel Documentation/accounting/psi.rst and admin-guide/cgroup-v2.rst;
node_exporter's collectors; proc(5)):

- PSI "some" is the share of time at least one task waited on the resource, "full" the share all
  non-idle tasks did; a trainer process blocked on a queue is idle, so "full" can be high when every
  loader worker waits on a read. Throttling by ``cpu.max`` counts as CPU pressure of the cgroup.
- iowait is CPU time idle while a task waited on block I/O: only readers in D state produce it;
  readers of an HTTP object store wait in a socket (S state) and produce none.
- Reads of NFS and FUSE mounts, and of Lustre over RDMA, are not block I/O: no diskstats, no
  io.stat; they arrive over the NIC (netdev) or the InfiniBand port counters.
- Reads of a memory-mapped dataset are major faults, which is I/O and not memory pressure.
- Under host memory pressure the kernel reclaims: refaults and swap-ins are major faults, the
  reclaim itself is system CPU, and tasks stall in memory pressure; with swap off, OOM kills.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyg.design import Design

Levels = dict[str, np.ndarray]
GIB = 2.0**30
# Bytes one core pushes through a kernel TCP stack per second (NCCL over sockets, NFS): ~1.5 GB/s.
TCP_BYTES_PER_CORE = 1.5e9
# Bytes one core moves for an HTTP object-store reader (TLS, parsing, copying): ~0.6 GB/s.
HTTP_BYTES_PER_CORE = 0.6e9


def _u(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    return rng.uniform(lo, hi, n)


def _reads(d: Design, rng: np.random.Generator) -> float:
    """Bytes per second the pod's loader pulls while it reads (the storage's rate for this job)."""
    s = d.cluster.storage
    if d.label.value == "IO":
        return s.rate_bps * float(rng.uniform(0.15, 1.0) if s.remote else rng.uniform(0.85, 1.0))
    return s.rate_bps * float(rng.uniform(0.2, 0.9))


def cpu_levels(d: Design, rng: np.random.Generator, net_bps: float, read_bps: float) -> Levels:
    """Per-pod CPU use, throttling, processes and CPU pressure (shape (pods,) each)."""
    st, n, g = d.stages, d.pods, d.gpus
    t = st.step
    main = g * (0.55 + 0.45 * (1 - st.gpu_wait)) * _u(rng, 0.95, 1.05, n)
    loader = np.minimum(d.cores_for_loader, st.cpu * d.cores_for_loader / t) * _u(rng, 0.95, 1.05, n)
    http = read_bps / HTTP_BYTES_PER_CORE if not d.cluster.storage.dstate else 0.0
    reclaim = (st.hostmem + st.loader_slow * st.loader) / t * g * 0.5
    use = main + loader + http + reclaim + net_bps / TCP_BYTES_PER_CORE * 0.3
    thr = np.zeros(n)
    if d.cpu_limit is not None:
        use = np.minimum(use, d.cpu_limit * 0.995)
        squeeze = use / d.cpu_limit
        thr = np.where(d.mechanism == "throttled", _u(rng, 0.6, 0.98, n), np.clip((squeeze - 0.6) * 1.2, 0, 0.6))
    worker_util = np.minimum(1.0, loader / max(d.workers, 1))
    cpu_some = {"throttled": _u(rng, 0.5, 0.95, n), "saturated": _u(rng, 0.3, 0.8, n)}.get(
        d.mechanism if d.label.value == "CPU" else "", _u(rng, 0.0, 0.08, n)
    )
    busy_procs = g * (st.gpu_wait < 0.5) + d.workers * (worker_util > 0.9)
    if d.mechanism == "throttled" and d.label.value == "CPU":
        busy_procs = np.zeros(n)  # nobody keeps a core: the quota stops them all
    return {
        "cpu_cores": use,
        "sc_cpu_cores": use + 0.02,
        "cpu_throttled_frac": thr,
        "sc_throttled_frac": thr,
        "sc_psi_cpu_some": np.maximum(cpu_some, 0.8 * thr),
        "sc_procs_running": main / 1.2 + loader + (d.workers * 0.5 if d.mechanism == "saturated" else 0.0),
        "sc_procs_busy": busy_procs.astype(float),
        "cpu_limit_cores": np.full(n, np.nan if d.cpu_limit is None else d.cpu_limit),
    }


def io_levels(d: Design, rng: np.random.Generator, read_rate: float) -> Levels:
    """Per-pod storage reads, I/O pressure and D-state readers, from the read stage."""
    st, n, s = d.stages, d.pods, d.cluster.storage
    share = min(1.0, st.read / st.step)
    avg = read_rate * share * _u(rng, 0.9, 1.1, n)
    dstate = s.dstate or d.workload.mmap
    io_some = share * _u(rng, 0.7, 1.0, n) if dstate else _u(rng, 0.0, 0.02, n)
    waiting = share * (1 - min(1.0, st.cpu / st.step))
    io_size = 32e3 if d.workload.mmap else float(rng.choice([64e3, 128e3, 512e3]))
    fault_reads = avg / 16e3 if d.workload.mmap else 0.0  # readahead brings ~4 pages per fault
    block = avg if s.block else _u(rng, 0.0, 2e5, n)
    return {
        "fs_read_bps": block,
        "sc_io_read_bps": block,
        "read_total": avg,
        "disk_busy": share * (read_rate / s.rate_bps) * _u(rng, 0.9, 1.0, n) if s.block else _u(rng, 0.0, 0.02, n),
        "disk_ops": block / io_size,
        "sc_psi_io_some": io_some,
        "sc_psi_io_full": io_some * (0.3 + 0.6 * waiting),
        "sc_procs_iowait": d.workers * share * (_u(rng, 0.4, 0.9, n) if dstate else 0.02),
        "mmap_faults": np.full(n, 1.0) * np.asarray(fault_reads, dtype=float),
    }


def memory_levels(d: Design, rng: np.random.Generator, mmap_faults: np.ndarray) -> Levels:
    """Per-pod working set, limit, memory pressure, faults, swap-in and OOM kills."""
    st, n = d.stages, d.pods
    stall = min(1.0, (st.hostmem + st.loader_slow * st.loader * 0.5) / st.step)
    ws = _u(rng, *d.workload.host_gib, n) * GIB * d.gpus / 8 + 4 * GIB
    pressured = stall > 0.0  # any stall at all shows, in proportion
    limited = rng.random() < 0.65
    limit = ws / _u(rng, 0.96, 0.995, n) if pressured else ws * _u(rng, 1.3, 3.0, n)
    if pressured and not limited:
        # no cgroup limit: the pod grew until the node itself ran short
        ws = d.cluster.node_mem_bytes * _u(rng, 0.8, 0.93, n)
    latency = float(rng.uniform(80e-6, 600e-6))  # one major fault from swap or disk, seconds
    faults = stall * (d.gpus + d.workers * 0.3) / latency if pressured else _u(rng, 0.0, 5.0, n)
    swap = d.cluster.swap
    return {
        "mem_working_set_bytes": ws,
        "mem_limit_bytes": limit if limited else np.full(n, np.nan),
        "sc_psi_mem_some": np.full(n, stall) * _u(rng, 0.9, 1.1, n) if pressured else _u(rng, 0.0, 0.005, n),
        "sc_psi_mem_full": np.full(n, stall) * _u(rng, 0.3, 0.7, n) if pressured else _u(rng, 0.0, 0.002, n),
        "sc_majfault_ps": faults + mmap_faults,
        "sc_swapin_ps": faults * _u(rng, 0.5, 0.9, n) if (pressured and swap) else np.zeros(n),
        "sc_oom_kills": np.full(n, 1 / 900.0 if (pressured and not swap and rng.random() < 0.4) else 0.0),
        "node_tight": np.full(n, 1.0 if (pressured and not limited) else 0.0),
    }
