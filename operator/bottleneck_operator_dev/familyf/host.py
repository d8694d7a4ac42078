"""What the pod's cgroup, its node and kube-state-metrics would show for a family F job.

Rates are per second on the job's grid, shape (pods, grid); the exporters turn the ones that are
counters into counters. Facts used (TELEMETRY.md, kernel cgroup-v2 and PSI docs): PSI totals
rise by the time tasks stall, so their rate is a share of time; readers of block devices and NFS
wait in D state (iowait, io pressure) while object-store readers wait in socket receive and show
neither; ``container_fs_reads_bytes_total`` and cgroup ``io.stat`` count block devices only; a CFS
quota throttles the cgroup while the node keeps idle cores; swap-in and refaults show as major
faults, memory pressure and kernel CPU time.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyf.design import Design
from bottleneck_operator_dev.familyf.gpu import shares

FloatArray = npt.NDArray[np.float64]


def _cpu(d: Design, sh: dict[str, float], a: FloatArray, rng: np.random.Generator, read_bps: FloatArray) -> FloatArray:
    """The trainer containers' cores: main processes, loader workers, object-store clients, reclaim."""
    main = d.gpus * rng.uniform(0.85, 1.25) * (0.25 + 0.75 * a)
    loader = sh["decode"] * d.loader_cores * a * rng.normal(1.0, 0.03, a.shape)
    client = read_bps / rng.uniform(0.4e9, 1.2e9) if d.storage.name == "object-store" else 0.0 * a
    reclaim = sh["swap"] * rng.uniform(0.3, 1.5) * d.gpus * a
    cores = main + loader + client + reclaim
    if d.cpu_limit is not None:
        cores = np.minimum(cores, d.cpu_limit * rng.uniform(0.97, 0.995))
    return np.asarray(np.clip(cores, 0.05, None), dtype=np.float64)


def _throttle(d: Design, cores: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Share of CFS periods throttled: near 1 at the quota, a little from bursts below it."""
    if d.cpu_limit is None:
        return np.zeros_like(cores)
    use = cores / d.cpu_limit
    burst = rng.uniform(0.0, 0.12) * use**4
    at_quota = np.where(use > 0.95, rng.uniform(0.55, 0.97), 0.0)
    return np.asarray(np.clip(burst + at_quota + rng.normal(0.0, 0.01, cores.shape), 0.0, 1.0), dtype=np.float64)


def _memory(d: Design, sh: dict[str, float], a: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """Working set, swap-in, major faults, memory pressure and OOM kills."""
    pressured = d.mechanism is Mechanism.HOST_MEMORY_PRESSURE
    room = d.mem_limit if d.mem_limit is not None else d.node.mem_bytes * d.gpus / d.node.gpus
    ws = room * (rng.uniform(0.965, 0.995) if pressured else rng.uniform(0.15, 0.7)) * rng.normal(1, 0.003, a.shape)
    stall = sh["swap"] * a * rng.normal(1.0, 0.08, a.shape).clip(0.3)
    threads = d.gpus * rng.uniform(1.0, 4.0)
    latency = {"zram": rng.uniform(1e-5, 4e-5), "disk": rng.uniform(1.5e-4, 6e-4)}.get(d.swap, rng.uniform(1e-4, 3e-4))
    faults = stall * threads / latency
    swapin = faults if d.swap != "none" else 0.0 * a
    # memory-mapped datasets (Arrow, LMDB) read through page faults: IO, not memory pressure
    mmap = rng.random() < 0.3 and d.label is Bottleneck.IO
    base = rng.uniform(0.0, 30.0) * a
    some = np.clip(stall * rng.uniform(0.8, 1.0) + rng.uniform(0.0, 0.004), 0.0, 1.0)
    return {
        "mem_working_set_bytes": np.minimum(ws, room),
        "sc_swapin_ps": swapin,
        "sc_majfault_ps": faults + base + (rng.uniform(50, 400) * sh["read"] * a if mmap else 0.0),
        "sc_psi_mem_some": some,
        "sc_psi_mem_full": some * rng.uniform(0.3, 0.8),
    }


def _io(d: Design, sh: dict[str, float], a: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The job's dataset reads and what waiting on them looks like."""
    capability = rng.uniform(d.storage.low_bps, d.storage.high_bps)
    read = sh["read"] * capability * a * rng.normal(1.0, 0.06, a.shape).clip(0.4)
    waiting = sh["read"] * rng.uniform(0.55, 0.95) * a if d.storage.dstate else rng.uniform(0.0, 0.01) * a
    some = np.clip(waiting * rng.normal(1.0, 0.05, a.shape), 0.0, 1.0)
    block = read if d.storage.block else 0.0 * read
    return {
        "read": read,
        "sc_io_read_bps": block,
        "fs_read_bps": block,
        "sc_psi_io_some": some,
        "sc_psi_io_full": some * rng.uniform(0.2, 0.7),
        "sc_procs_iowait": np.round(waiting * d.workers * rng.uniform(0.2, 0.7)) if d.storage.dstate else 0.0 * a,
    }


def pod_truth(d: Design, rng: np.random.Generator, activity: FloatArray) -> dict[str, FloatArray]:
    """The pods' own signals (cgroup, cAdvisor, kube-state-metrics) on the grid, shape (pods, grid)."""
    sh = shares(d)
    a = activity
    out = _io(d, sh, a, rng)
    out.update(_memory(d, sh, a, rng))
    cores = _cpu(d, sh, a, rng, out["read"])
    throttled = _throttle(d, cores, rng)
    sidecar = rng.uniform(0.005, 0.03)
    runq = {Mechanism.SATURATED: (0.2, 0.6), Mechanism.THROTTLED: (0.4, 0.9)}.get(d.mechanism, (0.0, 0.05))
    busy_workers = d.workers if d.mechanism in (Mechanism.TOO_FEW_WORKERS, Mechanism.SATURATED) else 0
    out.update(
        cpu_cores=cores,
        sc_cpu_cores=cores + sidecar,
        cfs_throttled=throttled,
        sc_throttled=throttled,
        sc_psi_cpu_some=np.clip(rng.uniform(*runq) * sh["decode"] * a + throttled * 0.3, 0.0, 1.0),
        sc_procs_running=np.round(np.minimum(cores, d.workers + d.gpus) * rng.uniform(0.5, 1.0)),
        sc_procs_busy=np.round((busy_workers * sh["decode"] + d.gpus * 0.9) * a),
        sc_oom_kills=0.0 * a,
    )
    return out


def neighbour_load(d: Design, rng: np.random.Generator, grid: int) -> dict[str, FloatArray]:
    """Other pods on each node: cores, disk reads, network bytes, memory and pressure they add."""
    n = np.asarray(d.neighbours, dtype=np.float64)[:, None]
    per = rng.uniform(0.0, 1.0, (len(d.neighbours), 1))
    wobble = rng.normal(1.0, 0.1, (len(d.neighbours), grid)).clip(0.3)
    return {
        "cores": n * per * rng.uniform(1.0, 12.0) * wobble,
        "disk": n * per * rng.uniform(0.0, 3e8) * wobble,
        "net": n * per * rng.uniform(0.0, 1e9) * wobble,
        "mem": n * per * rng.uniform(0.02, 0.1) * d.node.mem_bytes,
        "io_some": n * per * rng.uniform(0.0, 0.05) * wobble,
        "cpu_some": n * per * rng.uniform(0.0, 0.04) * wobble,
    }
