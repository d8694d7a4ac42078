"""What is physically happening on one pod at each instant, in the contract's signal units.

Everything here follows from the step model (steps.py) and the datasheet figures (fleet.py):
per-step seconds of each stage become time shares, bytes per second and cores. How dcgm-exporter,
node-exporter, cAdvisor and the sidecar then sample and publish it is scrape.py's business.

Field meanings follow NVIDIA's DCGM field documentation: GPU_UTIL is the share of time any kernel
ran (NCCL kernels waiting on the network included); SM_ACTIVE counts an SM as active while it holds
a warp, stalled or not, so bandwidth-bound kernels still read high; DRAM_ACTIVE is the share of
cycles the memory interface is busy; MEM_COPY_UTIL is NVML's time share of memory reads/writes.
Pressure follows the kernel's PSI document: "some" is the share of time at least one task stalls.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyr.plan import FINE_S, JobPlan
from bottleneck_operator_dev.familyr.steps import COMM, COMPUTE, H2D, HBM, HOSTMEM, PRE, READ, FloatArray, step_parts

GIB = 2.0**30


def shares(p: JobPlan, pod_factor: float) -> dict[str, FloatArray]:
    """Time shares of one step at each instant (zero during checkpoint pauses)."""
    inp, gpu, exposed = step_parts(p.stages, p.overlap)
    t = np.maximum(inp, gpu) * pod_factor
    running = (p.weight > 0).astype(float)
    return {
        "T": t,
        "compute": running * p.stages[COMPUTE] / t,
        "hbm": running * p.stages[HBM] / t,
        "comm": running * np.minimum(p.stages[COMM], t) / t,
        "exposed": running * exposed / t,
        "h2d": running * p.stages[H2D] / t,
        "hostmem": running * p.stages[HOSTMEM] / t,
        "read": running * np.minimum(p.stages[READ] / t, 1.0),
        "pre": running * np.minimum(p.stages[PRE] / t, 1.0),
        "running": running,
    }


def gpu_truth(p: JobPlan, rng: np.random.Generator, sh: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """The pod's GPU signals, averaged over its GPUs as the contract says (fb_used_frac: max)."""
    tc = {"llm": 0.6, "moe": 0.55, "lon": 0.35, "ten": 0.6, "fsd": 0.55, "dif": 0.45, "rlh": 0.25, "rl-": 0.02}
    tensor_share = tc.get(p.workload[:3], 0.3) * rng.uniform(0.7, 1.2)
    kernels = sh["compute"] + sh["hbm"]
    util = np.clip(kernels + sh["exposed"], 0.0, 1.0)
    nccl_sms = rng.uniform(0.08, 0.2)  # NCCL runs on a few channels' worth of SMs
    sm = np.clip(
        sh["compute"] * rng.uniform(0.85, 0.97) + sh["hbm"] * rng.uniform(0.75, 0.9) + sh["comm"] * nccl_sms, 0, 1
    )
    dram = np.clip(
        sh["compute"] * rng.uniform(0.1, 0.3) + sh["hbm"] * rng.uniform(0.75, 0.92) + sh["comm"] * 0.05, 0, 1
    )
    tensor = np.clip(sh["compute"] * tensor_share, 0.0, 1.0)
    b = p.board
    demand = b.idle_w + (b.tdp_w - b.idle_w) * np.clip(
        0.15 * util + 0.6 * sh["compute"] * (0.6 + tensor_share) + 0.45 * sh["hbm"] + 0.05 * sh["comm"], 0.0, 1.0
    )
    gpus = max(p.gpus, 1)
    spread = rng.uniform(0.94, 1.0, (gpus, 1))  # boards of one model boost differently
    thermal = np.ones((gpus, demand.size))
    for g in range(gpus):
        if rng.random() < 0.15:
            thermal[g, int(rng.integers(demand.size)) :] = rng.choice([0.93, 0.96])
    capped = demand[None, :] * spread > p.power_limit_w
    clock = b.max_clock_mhz * spread * thermal * np.where(capped, np.sqrt(p.power_limit_w / (demand * spread)), 1.0)
    clock = np.round(np.where(sh["running"] > 0, clock, clock * 0.75) / 15.0) * 15.0  # clocks step in 15 MHz bins
    power = np.minimum(demand[None, :] * spread, p.power_limit_w * 0.995).mean(axis=0)
    comm_bps = sh["comm"] * (p.nvlink_bps if p.pods == 1 else min(p.nvlink_bps, 2 * p.net_bps))
    h2d = sh["h2d"] * p.h2d_bps
    if b.nvlink_bps == 0 and gpus > 1:
        h2d = h2d + sh["comm"] * p.h2d_bps * 0.5  # without NVLink, peer traffic crosses PCIe
    offload = 0.8 if p.workload in ("zero-offload-optimizer", "recsys-embedding-offload") else 0.05
    fb = np.clip(rng.uniform(0.55, 0.95) + rng.normal(0.0, 0.005, util.size), 0.05, 0.995)
    return {
        "gpu_util": util,
        "gr_engine_active": np.clip(util * 0.99, 0, 1),
        "sm_active": sm,
        "sm_occupancy": sm * rng.uniform(0.25, 0.6) + sh["hbm"] * 0.2,
        "tensor_active": tensor,
        "fp16_active": np.clip(sh["compute"] * rng.uniform(0.02, 0.1), 0, 1),
        "fp32_active": np.clip(sh["compute"] * rng.uniform(0.03, 0.2) + sh["hbm"] * 0.1, 0, 1),
        "dram_active": dram,
        "mem_copy_util": np.clip(sh["compute"] * 0.45 + sh["hbm"] * 0.95 + sh["comm"] * 0.25, 0, 1),
        "pcie_rx_bps": h2d + 2e7,
        "pcie_tx_bps": h2d * offload + 1e7,
        "nvlink_tx_bps": comm_bps / 2,
        "nvlink_rx_bps": comm_bps / 2,
        "nvlink_total_bps": comm_bps,
        "power_w": power,
        "power_limit_w": np.full(util.size, p.power_limit_w),
        "sm_clock_mhz": clock.mean(axis=0),
        "clock_slowdown_frac": (capped | (thermal < 1.0)).mean(axis=0),
        "fb_used_frac": fb,
    }


def _oom_kills(p: JobPlan, rng: np.random.Generator, pressure: FloatArray) -> FloatArray:
    """Kills per second: without swap, a pressed cgroup sometimes loses a DataLoader worker (restarted)."""
    kills = np.zeros(pressure.size)
    if not p.cluster.swap and pressure.max() > 0.05 and rng.random() < 0.4:
        kills[int(rng.integers(pressure.size))] = 1.0 / FINE_S
    return kills


def _memory(p: JobPlan, rng: np.random.Generator, pressure: FloatArray) -> dict[str, FloatArray]:
    """Host memory: a pressed cgroup sits at its limit, reclaims, faults pages back in (from swap if any)."""
    n = pressure.size
    mem_limit = float(rng.choice([64, 128, 256, 512])) * GIB
    faults = pressure * rng.uniform(2e4, 8e4)
    return {
        "mem_working_set_bytes": mem_limit * np.where(pressure > 0.02, rng.uniform(0.97, 0.995), rng.uniform(0.2, 0.7)),
        "mem_limit_bytes": np.full(n, mem_limit),
        "node_mem_avail_frac": np.where(pressure > 0.02, rng.uniform(0.01, 0.05), rng.uniform(0.25, 0.8)) + np.zeros(n),
        "node_swap_used_frac": np.full(n, rng.uniform(0.3, 0.9) if p.cluster.swap and pressure.max() > 0.02 else 0.0),
        "node_majfault_ps": faults + rng.uniform(0, 5),
        "sc_majfault_ps": faults,
        "sc_swapin_ps": faults * 0.8 if p.cluster.swap else np.zeros(n),
        "sc_oom_kills": _oom_kills(p, rng, pressure),
    }


def host_truth(p: JobPlan, rng: np.random.Generator, sh: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """The pod's cgroup, sidecar and node-exporter signals; node ones include the neighbours."""
    n = sh["T"].size
    cores_avail = float(min(p.workers, p.cpu_limit or p.node_cpus))
    read_bps = sh["read"] * p.storage.read_bps * rng.uniform(0.7, 1.0)
    trainer = 0.3 + 0.9 * np.clip(sh["compute"] + sh["hbm"] + sh["exposed"], 0, 1)
    cpu = sh["pre"] * cores_avail + trainer + read_bps / 2e9
    if p.cpu_limit is not None:
        cpu = np.minimum(cpu, p.cpu_limit)
    limited = p.cpu_limit is not None and p.workers >= p.cpu_limit
    throttled = np.clip((cpu / (p.cpu_limit or 1e9) - 0.85) / 0.15, 0, 1) * rng.uniform(0.4, 0.95) if limited else 0.0
    throttled = np.clip(throttled + np.abs(rng.normal(0, 0.01, n)), 0, 1)
    pressure = sh["hostmem"]
    neighbours = p.cluster.shared_nodes
    nb_cpu = rng.uniform(0.05, 0.5) * p.node_cpus if neighbours else 0.0
    nb_disk = rng.uniform(0.0, 0.4) * p.storage.read_bps if neighbours else 0.0
    local = read_bps if p.storage.local else np.zeros(n)
    waiting_io = sh["read"] * rng.uniform(0.6, 0.95)
    net_comm = sh["comm"] * p.net_bps if p.pods > 1 else np.zeros(n)
    storage_net = np.zeros(n) if p.storage.local else read_bps
    return {
        **_memory(p, rng, pressure),
        "cpu_cores": cpu,
        "sc_cpu_cores": cpu + 0.02,
        "cpu_throttled_frac": throttled,
        "sc_throttled_frac": throttled,
        "cpu_limit_cores": np.full(n, p.cpu_limit if p.cpu_limit is not None else np.nan),
        "fs_read_bps": local,
        "sc_io_read_bps": local,
        "node_cpus": np.full(n, float(p.node_cpus)),
        "node_cpu_busy_frac": np.clip((cpu + nb_cpu) / p.node_cpus, 0, 1),
        "node_cpu_iowait_frac": np.clip(waiting_io * p.workers / p.node_cpus, 0, 0.5),
        "node_cpu_system_frac": np.clip(0.01 + 0.05 * sh["comm"] + 0.2 * pressure + 0.02 * sh["read"], 0, 1),
        "node_disk_read_bps": local + nb_disk,
        "node_disk_reads_ps": (local + nb_disk) / p.storage.request_bytes,
        "node_disk_busy_frac": np.clip((local + nb_disk) / p.storage.read_bps * 1.05, 0, 1),
        "node_net_rx_bps": (np.zeros(n) if p.fabric.rdma else net_comm) + storage_net + rng.uniform(1e5, 5e7),
        "node_net_tx_bps": (np.zeros(n) if p.fabric.rdma else net_comm) + rng.uniform(1e5, 5e7),
        "ib_rx_bps": net_comm + 1e4,
        "ib_tx_bps": net_comm + 1e4,
        "node_psi_cpu_some": np.clip(throttled * 0.8 + (cpu + nb_cpu) / p.node_cpus * 0.1, 0, 1),
        "node_psi_io_some": np.clip(waiting_io + (0.05 if neighbours else 0.0), 0, 1),
        "node_psi_io_full": np.clip(waiting_io * 0.5, 0, 1),
        "node_psi_mem_some": np.clip(pressure * 1.1, 0, 1),
        "node_psi_mem_full": np.clip(pressure * 0.6, 0, 1),
        "sc_psi_cpu_some": np.clip(throttled * 0.9 + sh["pre"] * 0.2, 0, 1),
        "sc_psi_io_some": waiting_io,
        "sc_psi_io_full": waiting_io * 0.5,
        "sc_psi_mem_some": np.clip(pressure, 0, 1),
        "sc_psi_mem_full": np.clip(pressure * 0.6, 0, 1),
        "sc_procs_running": 1.0 + sh["pre"] * p.workers,
        "sc_procs_iowait": waiting_io * p.workers,
        "sc_procs_busy": np.floor(sh["pre"] * p.workers * 1.05 + (1 if sh["compute"].mean() > 0.3 else 0)),
    }
