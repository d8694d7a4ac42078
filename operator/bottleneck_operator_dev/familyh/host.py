"""What the host-side exporters would see of a pod: its cgroup, its node, the sidecar.

Quantities follow the kernel's definitions (Documentation/accounting/psi.rst,
Documentation/admin-guide/cgroup-v2.rst): a pressure "some" share is the time at least one of the
group's tasks stalled on the resource, "full" the time all its non-idle tasks did; CFS periods
count every 100 ms period in which the group ran, throttled ones those in which it hit its quota.
Readers of object stores wait on sockets (sleeping, no iowait, no io pressure); readers of block
devices, NFS and FUSE wait in D state. Swap-ins are major faults; reclaimed file pages come back
as major faults too, read again from their device.

Rates come back per pod as (pods, T) arrays on the timeline's grid: ``rates`` for what exporters
publish as counters (integrated later), ``gauges`` for the rest.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyh.cluster import Accidents, Cluster
from bottleneck_operator_dev.familyh.draft import Draft
from bottleneck_operator_dev.familyh.timeline import Timeline, ar1

Rng = np.random.Generator
Array = npt.NDArray[np.float64]
PAGE = 4096.0
# one fault's wait: decompressing a page from zram, or reading it back from an NVMe swap device
FAULT_S = {"zram": 15e-6, "disk": 120e-6}


def _loader(d: Draft, tl: Timeline) -> dict[str, Array]:
    """Per-pod loader duty: CPU-seconds per second, and each worker's share of time reading and decoding."""
    s = d.stages
    it = tl.running / tl.step
    workers = max(s.workers, 1)
    # each worker turns out one batch every `workers` iterations; it shares the pod's free cores
    cycle = np.maximum(workers * tl.step, 1e-6)
    slow = max(1.0, workers / max(s.cores, 1e-3))
    read_duty = np.clip(tl.read / cycle, 0.0, 1.0) * tl.running
    decode_duty = np.clip(tl.decode * slow / cycle, 0.0, 1.0) * tl.running
    stall_duty = np.clip(tl.worker_stall / cycle, 0.0, 1.0) * tl.running
    cpu = np.minimum(it * tl.decode, s.cores) * d.gpus
    return {"it": it, "read": read_duty, "decode": decode_duty, "stall": stall_duty, "cpu": cpu}


def _memory(d: Draft, cl: Cluster, tl: Timeline, it: Array) -> dict[str, Array]:
    """Memory stalls as faults per second per pod, and how they reach the counters."""
    # every iteration of every rank pays the trainer's stall and one batch's worth of worker stall
    stall_per_s = np.clip(it * (tl.stall.mean(axis=0) + tl.worker_stall) * d.gpus, 0.0, None)
    latency = FAULT_S.get(cl.swap, max(d.storage.latency_s, 1e-4) if not d.storage.local else 1e-4)
    faults = stall_per_s / latency
    swapins = faults if cl.swap != "none" else np.zeros_like(faults)
    # without swap, reclaim drops file pages that are read again from the local disk
    refault_bytes = faults * PAGE * 4.0 if cl.swap == "none" else np.zeros_like(faults)
    return {
        "faults": faults,
        "swapins": swapins,
        "refault_bytes": refault_bytes,
    }


def _psi(d: Draft, tl: Timeline, ld: dict[str, Array], throttled: Array) -> dict[str, Array]:
    """The pod cgroup's pressure shares (some/full) for cpu, io and memory."""
    n = max(d.stages.workers, 1) * d.gpus
    blocking = 1.0 if d.storage.blocking else 0.0
    it = ld["it"]
    trainer_busy = np.clip(it * (tl.tensor + tl.hbm + tl.comm + tl.h2d + tl.stall + tl.nccl_wait).mean(axis=0), 0, 1)
    waiting = 1.0 - trainer_busy
    io_some = 1.0 - (1.0 - ld["read"] * blocking) ** n
    mem_task = np.clip(it * tl.stall.mean(axis=0), 0.0, 1.0)
    mem_some = 1.0 - (1.0 - mem_task) ** d.gpus * (1.0 - ld["stall"]) ** n
    runnable = ld["decode"] * n / max(d.stages.cores * d.gpus, 1e-3)
    cpu_some = np.clip(np.maximum(throttled * 0.85, np.clip(runnable - 1.0, 0.0, 1.0) * 0.9), 0.0, 1.0)
    return {
        "sc_psi_cpu_some": np.clip(cpu_some + 0.01, 0, 1),
        "sc_psi_io_some": np.clip(io_some, 0, 1),
        "sc_psi_io_full": np.clip(io_some * waiting * ld["read"] ** 0.5, 0, 1),
        "sc_psi_mem_some": np.clip(mem_some, 0, 1),
        "sc_psi_mem_full": np.clip(mem_task * 0.6 + mem_some * waiting * 0.3, 0, 1) * (mem_some > 0),
    }


def pod_signals(
    rng: Rng, d: Draft, cl: Cluster, acc: Accidents, tl: Timeline
) -> tuple[dict[str, Array], dict[str, Array]]:
    """The pod cgroup's counters' rates and gauges (pods, T); see the module."""
    ld = _loader(d, tl)
    it, shape = ld["it"], (d.pods, tl.t.size)
    mem = _memory(d, cl, tl, it)
    ones = np.ones(shape)
    trainer_busy = np.clip(it * (tl.tensor + tl.hbm + tl.comm + tl.nccl_wait), 0.0, 1.0)
    read_rate = it * d.batch_bytes * d.gpus + tl.warmup * d.storage.bw_bps * 0.4
    net_storage = read_rate * (1.0 if d.storage.network else 0.0)
    sys_cpu = net_storage / 1e9 * 0.3 + mem["faults"] * 20e-6
    cpu = ld["cpu"] + d.main_cores * d.gpus * (0.45 + 0.55 * trainer_busy) + sys_cpu + 0.02
    cpu = cpu * ar1(rng, tl.t.size, 0.03, 0.8)
    if d.cpu_limit is not None:
        cpu = np.minimum(cpu, d.cpu_limit * 0.995)
        util = cpu / d.cpu_limit
        # bursty loaders hit the quota inside some periods long before the average reaches it
        throttled = np.clip((util - 0.45) / 0.5, 0.0, 1.0) ** 1.4 * rng.uniform(0.85, 0.99)
    else:
        throttled = np.zeros(shape)
    # pressure shares wander with the scheduler's luck: the smaller of the stalled and unstalled shares takes the noise
    psi = {}
    for name, v in _psi(d, tl, ld, throttled).items():
        f = ar1(rng, tl.t.size, 0.08, 0.6)
        psi[name] = np.clip(np.where(v > 0.5, 1.0 - (1.0 - v) * f, v * f), 0.0, 1.0)
    workers = max(d.stages.workers, 1) * d.gpus
    rates = {
        "cpu_cores": cpu * ones,
        "sc_cpu_cores": (cpu + 0.015) * ones,
        "fs_read_bps": (read_rate * (1.0 if d.storage.local else 0.0) + mem["refault_bytes"]) * ones,
        "cfs_periods": 10.0 * np.clip(0.3 + cpu, 0.0, 1.0) * ones,
        "cfs_throttled": 10.0 * throttled * ones,
        # a memory-mapped dataset is read by faulting its pages in, readahead bringing several at a time
        "sc_majfault_ps": (mem["faults"] + 2.0 + (read_rate / (PAGE * 8.0) if d.mmap_reads else 0.0)) * ones,
        "sc_swapin_ps": mem["swapins"] * ones,
        "sc_oom_kills": np.zeros(shape),
        **{k: v * ones for k, v in psi.items()},
    }
    # io.stat counts block devices only, like cAdvisor: NFS, FUSE and object-store reads never appear
    rates["sc_io_read_bps"] = rates["fs_read_bps"]
    ws = d.host_ws if d.mem_limit is None else min(d.host_ws, d.mem_limit * float(rng.uniform(0.97, 0.995)))
    gauges = {
        "mem_working_set_bytes": ws * (0.93 + 0.06 * trainer_busy) * ones,
        "sc_procs_running": np.round(d.gpus * (0.4 + 0.6 * trainer_busy) + workers * ld["decode"]) * ones,
        "sc_procs_iowait": np.round(workers * ld["read"] * (1.0 if d.storage.blocking else 0.0)) * ones,
        "sc_procs_busy": np.round(d.gpus * (trainer_busy > 0.5) + workers * (ld["decode"] > 0.9)) * ones,
    }
    extra = {
        "read_rate": read_rate * ones,
        "net_storage": net_storage * ones,
        "faults": mem["faults"] * ones,
        "swapins": mem["swapins"] * ones,
        "refault": mem["refault_bytes"] * ones,
        "sys_cpu": sys_cpu * ones,
        "iowait_procs": gauges["sc_procs_iowait"],
    }
    return {**rates, **{f"_{k}": v for k, v in extra.items()}}, gauges
