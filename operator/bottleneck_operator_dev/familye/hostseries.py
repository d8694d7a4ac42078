"""The host's view on the fine grid: cAdvisor, kube-state-metrics, the collector and node-exporter.

Counters are kept as per-second rates per bin here and integrated by :mod:`.exporters`. Pod-level
series (cAdvisor, the collector's cgroup reads) see only the job; node-level ones add the
neighbours on a shared node and the node's own daemons, and pods of one job on one node share them.
Facts used: CFS throttling needs a CPU limit (nr_periods/nr_throttled), PSI "some"/"full" are the
shares of time some/all non-idle tasks stall (kernel Documentation/accounting/psi.rst), major
faults are how memory-mapped datasets read and how swapped pages come back, block-only
counters never see NFS, object-store or RDMA reads, and RDMA traffic bypasses netdev counters.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familye.hardware import GIB
from bottleneck_operator_dev.familye.phases import Timeline, wander
from bottleneck_operator_dev.familye.workloads import Plan

FloatArray = npt.NDArray[np.float64]
Rows = dict[str, FloatArray]
CFS_PERIODS_PER_S = 10.0  # the default cpu.max period is 100 ms


def _faults(rng: np.random.Generator, plan: Plan, h: Rows) -> tuple[FloatArray, FloatArray]:
    """Major faults and swap-ins per second while training (per pod)."""
    s, st = plan.step, plan.env.storage
    mmap = h["read_bps"] / rng.uniform(32e3, 128e3) if st.key == "nvme-mmap" else 0.0
    fault_s = rng.uniform(0.0003, 0.002)  # one refault or swap-in served from a local device
    pressure = s.workers * h["stall"] / fault_s + s.main_stall / h["step_s"] / fault_s
    maj = mmap + pressure + rng.uniform(0.0, 5.0)
    swapin = pressure * rng.uniform(0.4, 0.9) if plan.env.swap else np.zeros_like(maj)
    return np.asarray(maj, dtype=np.float64), np.asarray(swapin, dtype=np.float64)


def pod_rows(rng: np.random.Generator, plan: Plan, h: Rows, tl: Timeline) -> dict[str, Rows]:
    """cAdvisor, kube-state-metrics and collector rows per pod: gauges by signal name, counters as rates."""
    env, s, n = plan.env, plan.step, tl.times.size
    act = wander(rng, (env.pods,), n, plan.noise, rng.uniform(4, 30))
    run, other = tl.train, tl.ckpt + tl.init
    cpu = h["cpu"][:, None] * act * run + env.gpus * rng.uniform(0.8, 1.1) * other + 0.02 * tl.down
    if np.isfinite(env.cpu_limit).all():
        cpu = np.minimum(cpu, env.cpu_limit[:, None])
    maj, swapin = _faults(rng, plan, h)
    block = h["read_bps"] if env.storage.block else np.zeros(env.pods)
    blk = (block + swapin * 4096.0)[:, None] * act * run
    base_ws = env.gpus * rng.uniform(6, 30) * GIB + s.workers * plan.worker_rss
    limit = env.mem_limit
    ws = np.where(np.isfinite(limit), np.minimum(base_ws, limit * rng.uniform(0.6, 0.9)), base_ws)
    if plan.mechanism == "host-memory-pressure":
        ws = limit * rng.uniform(0.965, 0.995)
    ws_rows = ws[:, None] * (1 - 0.85 * tl.down) * (1 - 0.4 * tl.init) * rng.normal(1.0, 0.004, (env.pods, n))
    # the kernel holds usage at memory.max: reclaim (or the OOM killer) acts before it is passed
    ws_rows = np.where(
        np.isfinite(limit)[:, None], np.minimum(ws_rows, np.nan_to_num(limit, nan=np.inf)[:, None]), ws_rows
    )
    thr = np.nan_to_num(h["throttled"])[:, None] * np.clip(act, 0, 1.2) * run
    oom = np.zeros((env.pods, n))
    if tl.restart_bin >= 0:
        oom[:, tl.restart_bin] = 1.0 / tl.dt
    periods = np.full((env.pods, n), CFS_PERIODS_PER_S) * (1 - tl.down)
    cad: Rows = {
        "cpu_cores": cpu,
        "fs_read_bps": blk * rng.normal(1, 0.03, blk.shape),
        "mem_working_set_bytes": ws_rows,
        "cpu_throttled_frac:num": periods * np.clip(thr, 0, 1),
        "cpu_throttled_frac:den": periods,
    }
    if np.isfinite(limit).all():
        cad["mem_limit_bytes"] = np.repeat(limit[:, None], n, axis=1)
    ksm: Rows = {}
    if np.isfinite(env.cpu_limit).all():
        ksm["cpu_limit_cores"] = np.repeat(env.cpu_limit[:, None], n, axis=1)
    side = _collector(rng, plan, h, tl, act, cpu, blk, maj, swapin, oom, periods, thr)
    return {"cadvisor": cad, "ksm": ksm, "sidecar": side}


def _collector(
    rng: np.random.Generator,
    plan: Plan,
    h: Rows,
    tl: Timeline,
    act: FloatArray,
    cpu: FloatArray,
    blk: FloatArray,
    maj: FloatArray,
    swapin: FloatArray,
    oom: FloatArray,
    periods: FloatArray,
    thr: FloatArray,
) -> Rows:
    """The collector's pod-cgroup rows: pressure, CPU, I/O, faults, OOM kills and process states."""
    env, s, run = plan.env, plan.step, tl.train
    shape = cpu.shape

    def psi(key: str, floor: float) -> FloatArray:
        v: FloatArray = np.clip(h[key][:, None] * np.clip(act, 0.5, 1.5) * run + floor, 0.0, 0.99)
        return v

    out: Rows = {
        "sc_psi_cpu_some": psi("psi_cpu", 0.003),
        "sc_psi_io_some": psi("psi_io_some", 0.001),
        "sc_psi_io_full": psi("psi_io_full", 0.0),
        "sc_psi_mem_some": psi("psi_mem_some", 0.0) + 0.3 * tl.init * (plan.mechanism == "host-memory-pressure"),
        "sc_psi_mem_full": psi("psi_mem_full", 0.0),
        "sc_cpu_cores": cpu + rng.uniform(0.01, 0.04),
        "sc_io_read_bps": blk * rng.normal(1, 0.03, shape),
        "sc_majfault_ps": maj[:, None] * np.clip(act, 0.3, 2) * run + 2.0,
        "sc_swapin_ps": swapin[:, None] * np.clip(act, 0.3, 2) * run,
        "sc_oom_kills": oom,
    }
    if np.isfinite(env.cpu_limit).all():
        out["sc_throttled_frac:num"] = periods * np.clip(thr, 0, 1)
        out["sc_throttled_frac:den"] = periods
    total = s.workers + env.gpus
    for name, key in (
        ("sc_procs_running", "procs_running"),
        ("sc_procs_iowait", "procs_iowait"),
        ("sc_procs_busy", "procs_busy"),
    ):
        p = np.clip(h[key][:, None] / total * run, 0.0, 1.0)
        out[name] = rng.binomial(total, p).astype(np.float64)
    return out
