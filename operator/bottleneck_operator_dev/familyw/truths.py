"""The true state of a Job's pods, second by second, in the units the exporters count in.

From the fluid trace (what flowed in each second) and the stage rates, :func:`truths` derives
what each exporter would measure if it could see every second: the devices' activity, the pod's
CPU, memory and IO, and the node's, which neighbours share. :mod:`.exporters` then samples it.
"""

from __future__ import annotations

import math

import numpy as np

from bottleneck_operator_dev.familyw.model import CELL, RES, FloatArray, JobPlan, Rates

Arrays = dict[str, FloatArray]


def _ticks(x: FloatArray, n: int) -> FloatArray:
    """Cell values (pods, cells) held over the seconds of each cell: (pods, n)."""
    return np.repeat(x, int(CELL / RES), axis=1)[:, :n]


def truths(p: JobPlan, r: Rates, trace: Arrays, rng: np.random.Generator) -> Arrays:
    """Per-second quantities per pod: rates for counters, levels for gauges (the trace holds per-second sums)."""
    dev = _devices(p, r, trace, rng)
    host = _pod(p, r, trace, dev)
    node = _node(p, trace, dev, host, rng)
    return {k: v for part in (dev, host, node) for k, v in part.items() if not k.startswith("_")}


def _devices(p: JobPlan, r: Rates, trace: Arrays, rng: np.random.Generator) -> Arrays:
    """What DCGM sees: kernels running, tensor and DRAM activity, link bytes, power and clocks."""
    steps, want = trace["steps"], trace["want"]
    n = steps.shape[1]
    tg, ts, ex = _ticks(r.t_gpu, n), _ticks(r.t_step, n), _ticks(r.exposed, n)
    mem_share, launch = _ticks(r.mem_share, n), _ticks(r.launch_share, n)
    clock = _ticks(p.clock, n)
    wl = p.workload
    # the share of time kernels run; launch-bound groups leave gaps between tiny kernels
    busy = np.clip(steps * tg / RES, 0.0, 1.0) * (1.0 - 0.4 * launch)
    comm = np.clip(steps * ex / RES, 0.0, 1.0 - busy)
    sync = np.clip((want - steps) * ts / RES, 0.0, 1.0 - busy - comm)  # NCCL kernels spin while peers lag
    active = busy + comm + sync
    tensor_coef = {"bf16": 0.6, "fp16": 0.6, "tf32": 0.4, "fp32": 0.0}[p.precision]
    if p.gpu.key in ("v100", "t4") and p.precision == "fp32":
        tensor_coef = 0.0
    compute_share = np.clip(1.0 - mem_share - launch, 0.0, 1.0)
    tensor = busy * tensor_coef * compute_share
    bytes_step = (0.93 * wl.flops / wl.intensity + wl.bytes_mem) * p.bytes_scale * p.batch
    dram_coef = np.clip(bytes_step / (p.gpu.hbm * np.maximum(tg, 1e-9)), 0.0, 0.93)
    dram = busy * dram_coef
    sm = np.clip(busy * (0.95 - 0.6 * launch) + comm * 0.15 + sync * 0.08, 0.0, 1.0)
    occ = sm * (0.25 + 0.3 * mem_share)
    fp32 = busy * (0.6 if p.precision == "fp32" else 0.08) * compute_share + busy * 0.05
    fp16 = busy * (0.05 if p.precision in ("bf16", "fp16") else 0.0)
    inter, pcie_rx, pcie_tx, nvl = _links(p, trace)
    power, slowdown = _power(p, rng, active, busy, dram, clock, tensor_coef)

    return {
        "gpu_util": active,
        "gr_engine_active": np.clip(active * 0.98, 0.0, 1.0),
        "mem_copy_util": np.clip(dram * 1.05, 0.0, 1.0),
        "tensor_active": tensor,
        "dram_active": dram,
        "sm_active": sm,
        "sm_occupancy": occ,
        "fp32_active": fp32,
        "fp16_active": fp16,
        "pcie_tx_bps": pcie_tx,
        "pcie_rx_bps": pcie_rx,
        "nvlink_tx_bps": nvl,
        "nvlink_rx_bps": nvl,
        "nvlink_total_bps": 2.0 * nvl,
        "power_w": power,
        "sm_clock_mhz": p.gpu.max_clock * clock,
        "clock_slowdown_frac": slowdown,
        "fb_used_frac": np.clip(p.fb_frac + rng.normal(0.0, 0.003, busy.shape), 0.0, 1.0),
        "power_limit_w": np.full_like(busy, p.power_limit),
        "_busy": busy,
        "_inter": inter,
    }


def _links(p: JobPlan, trace: Arrays) -> tuple[FloatArray, ...]:
    """Bytes per second on each link: the node's NIC, each GPU's PCIe (both ways) and NVLink (each way)."""
    steps, g, nn, wl = trace["steps"], float(p.gpus), float(p.nodes), p.workload
    grad = p.grad_bytes
    inter = steps * 2.0 * (nn - 1) / nn * grad / RES  # bytes/s each node sends (and receives)
    intra = steps * 2.0 * (g - 1) / g * grad / RES if g > 1 else np.zeros_like(steps)  # per GPU, each way
    rdma = p.fabric in ("ib", "roce")
    h2d = trace["copy"] * wl.h2d_bytes / RES / g
    p2p = intra if p.nvl_bw <= 0 else 0.0 * intra
    gdr = inter / g if rdma else 0.0 * inter  # GPUDirect RDMA: through each GPU's PCIe link, both ways
    pcie_rx = h2d + p2p + gdr
    pcie_tx = 0.01 * h2d + p2p + gdr
    nvl = intra if p.nvl_bw > 0 else 0.0 * intra
    return inter, pcie_rx, pcie_tx, nvl


def _power(
    p: JobPlan,
    rng: np.random.Generator,
    active: FloatArray,
    busy: FloatArray,
    dram: FloatArray,
    clock: FloatArray,
    tensor_coef: float,
) -> tuple[FloatArray, FloatArray]:
    """Board power (never above the enforced limit) and the power-cap clock-event flag."""
    act = np.clip(0.2 * active + 0.5 * busy * (0.6 + 0.4 * tensor_coef) + 0.3 * dram, 0.0, 1.0)
    demand = p.gpu.idle + (p.power_full - p.gpu.idle) * act * clock**3
    power = np.minimum(demand * (1.0 + rng.normal(0.0, 0.01, demand.shape)), p.power_limit * 0.998)
    capped = p.power_limit < p.power_full * 0.999
    slowdown = ((busy > 0.3) & capped).astype(np.float64) * (1.0 if capped else 0.0)
    return power, slowdown


def _cpu(p: JobPlan, r: Rates, trace: Arrays, active: FloatArray) -> tuple[FloatArray, ...]:
    """The pod's cores (loader, trainer, reclaim), CFS throttling and runnable-queue contention."""
    n = trace["steps"].shape[1]
    ms, cores, nb_load, g = _ticks(r.ms, n), _ticks(r.cores, n), _ticks(p.nb_load, n), float(p.gpus)
    dec_rate = _ticks(r.dec, n) * RES
    used = np.clip(trace["dec"] / np.maximum(dec_rate, 1e-12), 0.0, 1.0)
    loader = cores * used
    sys_reclaim = (1.0 - ms) * 0.4 * (loader + g)
    main = g * (0.25 + 0.75 * np.clip(active, 0.0, 1.0))
    pod_cores = loader + main + sys_reclaim
    quota_loader = max(p.quota - p.main_cores, 0.25) if math.isfinite(p.quota) else math.inf
    runnable = p.workers + p.main_cores + nb_load
    fair = np.where(runnable > p.node_cores, p.node_cores * p.workers / runnable, p.workers)
    quota_binds = quota_loader <= np.minimum(fair, p.workers) * 1.001
    if math.isfinite(p.quota):
        near = np.clip((pod_cores / p.quota - 0.75) / 0.25, 0.0, 1.0) * 0.3
        throttled = np.where(quota_binds, np.clip(used * 1.05 - 0.05, 0.0, 1.0) * 0.95, near)
    else:
        throttled = np.zeros_like(used)
    contention = np.clip(1.0 - fair / p.workers, 0.0, 1.0) * used
    return used, loader, sys_reclaim, pod_cores, throttled, contention


def _memory_io(p: JobPlan, r: Rates, trace: Arrays) -> tuple[FloatArray, ...]:
    """Bytes read (block devices, or the network for NFS and object stores), swap-ins, faults, OOM kills."""
    n = trace["steps"].shape[1]
    ms, hit, excess = _ticks(r.ms, n), _ticks(r.hit, n), _ticks(r.excess, n)
    miss = p.workload.sample_bytes * np.maximum(1.0 - hit, 0.002)
    read = trace["io"] * miss / RES
    local = read if p.storage.local else 0.0 * read
    remote = 0.0 * read if p.storage.local else read
    pressure = 1.0 - ms
    swapin = pressure * 60000.0 if p.swap else 0.0 * pressure
    majfault = pressure * (8000.0 if p.swap else 40000.0)
    if p.mmap:
        majfault = majfault + local / 4096.0
    oom = np.where((excess > 0.25) & (not p.swap), 1.0 / 900.0, 0.0)
    ws = _ticks(p.ws, n)
    working_set = np.minimum(ws, p.mem_limit * 0.995)
    return local, remote, swapin, majfault, oom, working_set


def _pod(p: JobPlan, r: Rates, trace: Arrays, dev: Arrays) -> Arrays:
    """What the pod's cgroup shows (cAdvisor, the collector): loader CPU, CFS, IO, memory, pressure."""
    n = trace["steps"].shape[1]
    ms, excess, active = _ticks(r.ms, n), _ticks(r.excess, n), dev["gpu_util"]
    used, loader, sys_reclaim, pod_cores, throttled, contention = _cpu(p, r, trace, active)
    io_starve = np.clip(1.0 - trace["dec"] / np.maximum(trace["dec_cap"], 1e-12), 0.0, 1.0)
    io_starve = np.where(trace["dec_cap"] > 1e-9, io_starve, 0.0)

    local, remote, swapin, majfault, oom, working_set = _memory_io(p, r, trace)
    dstate = 1.0 if p.storage.dstate else 0.0
    pressure = 1.0 - ms

    psi_io = np.clip(io_starve * dstate * 0.95 + pressure * (0.5 if p.swap else 0.3), 0.0, 0.99)
    psi_io_full = psi_io * np.clip(1.0 - active, 0.0, 1.0)
    psi_cpu = np.clip(np.maximum(throttled * 0.8, contention * 0.9), 0.0, 0.99)
    psi_mem = np.clip(pressure * 1.3, 0.0, 0.99)
    psi_mem_full = psi_mem * 0.6

    return {
        "mem_working_set_bytes": working_set,
        "mem_limit_bytes": np.full_like(used, p.mem_limit),
        "cpu_limit_cores": np.full_like(used, p.quota),
        "sc_procs_running": np.round(pod_cores),
        "sc_procs_iowait": np.round(p.workers * io_starve * dstate),
        "sc_procs_busy": np.where(loader / p.workers >= 0.9, p.workers, 0.0)
        + np.where(active > 0.8, float(p.gpus), 0.0),
        "cpu_cores": pod_cores,
        "fs_read_bps": local,
        "cfs_throttled": 10.0 * throttled,
        "cfs_periods": np.full_like(used, 10.0),
        "sc_psi_cpu_some": psi_cpu,
        "sc_psi_io_some": psi_io,
        "sc_psi_io_full": psi_io_full,
        "sc_psi_mem_some": psi_mem,
        "sc_psi_mem_full": psi_mem_full,
        "sc_cpu_cores": pod_cores,
        "sc_io_read_bps": local + swapin * 4096.0,
        "sc_majfault_ps": majfault,
        "sc_swapin_ps": swapin,
        "sc_oom_kills": oom,
        "sc_throttled": 10.0 * throttled,
        "sc_periods": np.full_like(used, 10.0),
        "_used": used,
        "_io_starve": io_starve,
        "_local": local,
        "_remote": remote,
        "_sys": sys_reclaim,
        "_psi_cpu": psi_cpu,
        "_psi_io": psi_io,
        "_psi_mem": psi_mem,
        "_psi_mem_full": psi_mem_full,
        "_working_set": working_set,
        "_excess": excess,
    }


def _node(p: JobPlan, trace: Arrays, dev: Arrays, host: Arrays, rng: np.random.Generator) -> Arrays:
    """What node-exporter shows: the Job's pod and its neighbours together."""
    n = trace["steps"].shape[1]
    nb_load = _ticks(p.nb_load, n)
    pod_cores, io_starve, used = host["cpu_cores"], host["_io_starve"], host["_used"]
    local, remote, sys_reclaim = host["_local"], host["_remote"], host["_sys"]
    psi_cpu, psi_io, psi_mem, psi_mem_full = host["_psi_cpu"], host["_psi_io"], host["_psi_mem"], host["_psi_mem_full"]
    working_set, excess, inter = host["_working_set"], host["_excess"], dev["_inter"]
    dstate = 1.0 if p.storage.dstate else 0.0
    rdma = p.fabric in ("ib", "roce")
    nb_busy = np.minimum(nb_load, np.maximum(p.node_cores - pod_cores, 0.0))
    node_busy = np.minimum(pod_cores + nb_busy, p.node_cores)
    waiting = np.minimum(p.workers * io_starve * dstate * used + 0.02 * nb_load, p.node_cores - node_busy)
    node_sys = np.minimum(sys_reclaim + 0.08 * node_busy, node_busy)
    nb_disk = _ticks(p.nb_disk, n)
    disk_read = local + nb_disk
    disk_bw = p.storage.bandwidth if p.storage.local else 3.5e9
    disk_busy = np.clip(disk_read / disk_bw * (2.5 if "nvme" in p.storage.kind else 1.2), 0.0, 1.0)
    net_rx = remote + _ticks(p.nb_net, n) + (0.0 if rdma else 1.0) * inter
    net_tx = 0.05 * remote + 0.1 * _ticks(p.nb_net, n) + (0.0 if rdma else 1.0) * inter
    ib = inter if rdma else 0.0 * inter
    node_used = working_set + p.nb_mem * p.node_mem
    avail = np.clip(1.0 - node_used / p.node_mem - 0.05, 0.01, 1.0)
    swap_used = np.clip(excess * p.mem_limit / (0.1 * p.node_mem), 0.0, 1.0) if p.swap else 0.0 * excess
    nb_pressure = np.clip((nb_load + pod_cores) / p.node_cores - 0.85, 0.0, 1.0) * 2.0
    # node PSI reads all cgroups: the Job's stalls plus its neighbours'
    node_psi_cpu = np.clip(np.maximum(psi_cpu * 0.7, nb_pressure), 0.0, 0.99)
    nb_io = np.clip(nb_disk / disk_bw, 0.0, 0.5)
    node_psi_io = np.clip(np.maximum(psi_io * 0.9, nb_io), 0.0, 0.99)

    def noisy(x: FloatArray, sigma: float) -> FloatArray:
        return np.maximum(x * (1.0 + rng.normal(0.0, sigma, x.shape)), 0.0)

    return {
        "node_cpus": np.full_like(pod_cores, p.node_cores),
        "node_mem_avail_frac": avail,
        "node_swap_used_frac": swap_used,
        "node_busy": node_busy,
        "node_iowait": waiting,
        "node_system": node_sys,
        "node_idle": p.node_cores - node_busy - waiting,
        "node_disk_read_bps": noisy(disk_read, 0.03),
        "node_disk_reads_ps": noisy(disk_read / 262144.0, 0.05),
        "node_disk_busy_frac": disk_busy,
        "node_majfault_ps": host["sc_majfault_ps"] + 30.0,
        "node_net_rx_bps": noisy(net_rx, 0.02),
        "node_net_tx_bps": noisy(net_tx, 0.02),
        "ib_rx_bps": ib,
        "ib_tx_bps": ib,
        "node_psi_cpu_some": node_psi_cpu,
        "node_psi_io_some": node_psi_io,
        "node_psi_io_full": np.clip(node_psi_io * 0.6, 0.0, 0.99),
        "node_psi_mem_some": np.clip(psi_mem * 0.8 + 0.1 * p.nb_mem * nb_pressure, 0.0, 0.99),
        "node_psi_mem_full": np.clip(psi_mem_full * 0.8, 0.0, 0.99),
    }
